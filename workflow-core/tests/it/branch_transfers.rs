//! A fan-out branch's context reads the run's transfers from the copy the
//! run shares with its branches (its context is kept while the runtime
//! records its siblings, so it cannot borrow the transcript): its agent's
//! earlier turns, who granted a lease (a revocation's check) and what the
//! grantor worked under (a renewal's check) are the same as a sequential
//! turn's would be.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;
use workflow_core::{LeaseId, RenewalRefused};

/// What `security`'s branch turns saw, one line a turn. One test runs this
/// workflow.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// What a reviewer hands the judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Review {
    pub fixes: u32,
}

#[workflow(entry = lead, output = Vec<String>)]
pub mod looped {
    use super::*;

    #[handoff]
    pub struct SecurityAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Security>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub fixes: u32,
    }

    #[handoff]
    pub struct FixAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Fix>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub fixes: u32,
    }

    #[handoff]
    pub struct StyleAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Style>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Lead], to = [parallel(security, style)])]
    async fn lead(_nothing: (), cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Parallel(lead::Parallel {
            security: SecurityAsk {
                op: Operation::new("review", "security"),
                scope: cx.lease(authority::Security).until_hop(cx.hop() + 7),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 8),
                fixes: 0,
            },
            style: StyleAsk {
                op: Operation::new("review", "style"),
                scope: cx.lease(authority::Style).until_hop(cx.hop() + 7),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 8),
            },
        }))
    }

    /// Sends the change to the fixer twice, noting on each turn what its
    /// context reads of the run's transfers.
    #[agent(owns = [Security], to = [fixer, judge])]
    async fn security(
        ask: SecurityAsk,
        cx: security::Context<'_>,
    ) -> Result<security::Next, Reject> {
        let lease = cx.lease_id().expect("a branch works under a lease");
        let earlier: Vec<(usize, usize, &str)> = cx
            .earlier_turns()
            .iter()
            .map(|t| (t.input_seq(), t.output_seq(), t.receiver()))
            .collect();
        // Granted by the fixer (or by `lead`): not ours to revoke.
        let revoke = cx.revoke(lease).map_err(|e| e.to_string());
        // Past what the fixer (or `lead`) worked under: refused.
        let renew = if ask.fixes > 0 {
            match cx.request_renewal(Expiry::AtHop(40)) {
                Err(RenewalRefused::OutlivesGrantor { grantor, .. }) => {
                    format!("refused: the grantor's {grantor:?}")
                }
                other => format!("{other:?}"),
            }
        } else {
            "not asked".to_owned()
        };
        SEEN.lock().unwrap().push(format!(
            "lease #{}: earlier {earlier:?}; revoke: {}; renew: {renew}",
            lease.seq,
            revoke.err().unwrap_or_else(|| "done".into()),
        ));
        if ask.fixes < 2 {
            return Ok(security::Next::Fixer(FixAsk {
                op: Operation::new("fix", "unsafe"),
                scope: cx.lease(authority::Fix).as_long_as_mine(),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 7),
                fixes: ask.fixes,
            }));
        }
        Ok(security::Next::Judge(Review { fixes: ask.fixes }))
    }

    #[agent(owns = [Fix], to = [security(max = 2)])]
    async fn fixer(ask: FixAsk, cx: fixer::Context<'_>) -> Result<fixer::Next, Reject> {
        Ok(fixer::Next::Security(SecurityAsk {
            op: Operation::new("review", "security"),
            scope: cx.lease(authority::Security).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 7),
            fixes: ask.fixes + 1,
        }))
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(_ask: StyleAsk, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        Ok(style::Next::Judge(Review { fixes: 0 }))
    }

    #[agent(owns = [Judge], join = [security: Review, style: Review], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        let seen = [("security", &views.security), ("style", &views.style)]
            .into_iter()
            .map(|(name, view)| match view {
                Branch::Done(r) => format!("{name}: fixes={}", r.fixes),
                other => format!("{name}: {other}"),
            })
            .collect();
        Ok(judge::Next::End(seen))
    }
}

#[tokio::test]
async fn a_branch_reads_its_earlier_turns_and_its_leases_grantors_from_the_shared_copy() {
    let done = looped::Workflow::new((), ())
        .run(())
        .await
        .expect("completes");
    assert_eq!(done.output, ["security: fixes=2", "style: fixes=0"]);
    // #0 START -> lead, #1 lead -> security, #2 lead -> style, #3 security
    // -> fixer, #4 style -> judge, #5 fixer -> security, #6 security ->
    // fixer, #7 fixer -> security, #8 security -> judge.
    let seen = SEEN.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "lease #1: earlier []; revoke: the lease granted at record 1 was granted by `lead`, not by this agent; renew: not asked",
            "lease #5: earlier [(1, 3, \"fixer\")]; revoke: the lease granted at record 5 was granted by `fixer`, not by this agent; renew: refused: the grantor's AtHop(7)",
            "lease #7: earlier [(1, 3, \"fixer\"), (5, 6, \"fixer\")]; revoke: the lease granted at record 7 was granted by `fixer`, not by this agent; renew: refused: the grantor's AtHop(7)",
        ]
    );
}

/// What `a`'s branch turn answered when it named its sibling's lease. One
/// test runs this workflow.
static SIBLING: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// What a branch hands the judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Done {
    pub n: u32,
}

/// A fan-out whose second branch is refused at its receipt (its scope
/// expired long ago) while the first runs and names the second's lease.
#[workflow(entry = lead, output = Vec<String>)]
pub mod refused {
    use super::*;

    #[handoff]
    pub struct AAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Security>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct BAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Style>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Lead], to = [parallel(a, b)])]
    async fn lead(_nothing: (), cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Parallel(lead::Parallel {
            a: AAsk {
                op: Operation::new("review", "security"),
                scope: cx.lease(authority::Security).until_hop(cx.hop() + 2),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 3),
            },
            b: BAsk {
                op: Operation::new("review", "style"),
                // Already expired: refused at its receipt.
                scope: cx.lease(authority::Style).until_unix_ms(1),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 3),
            },
        }))
    }

    #[agent(owns = [Security], to = [judge])]
    async fn a(_ask: AAsk, cx: a::Context<'_>) -> Result<a::Next, Reject> {
        let me = cx.lease_id().expect("a lease");
        let sibling = LeaseId {
            run_id: me.run_id,
            seq: me.seq + 1,
        };
        let r = cx.revoke(sibling).map_err(|e| e.to_string());
        SIBLING.lock().unwrap().push(format!(
            "me #{} sibling #{}: {}",
            me.seq,
            sibling.seq,
            r.err().unwrap_or_else(|| "done".into())
        ));
        Ok(a::Next::Judge(Done { n: 0 }))
    }

    #[agent(owns = [Style], to = [judge])]
    async fn b(_ask: BAsk, _cx: b::Context<'_>) -> Result<b::Next, Reject> {
        Ok(b::Next::Judge(Done { n: 0 }))
    }

    #[agent(owns = [Judge], join = [a: Done, b: Done], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        let seen = [("a", &views.a), ("b", &views.b)]
            .into_iter()
            .map(|(name, view)| match view {
                Branch::Done(r) => format!("{name}: n={}", r.n),
                other => format!("{name}: {other}"),
            })
            .collect();
        Ok(judge::Next::End(seen))
    }
}

#[tokio::test]
async fn a_branch_reads_a_siblings_start_recorded_after_its_own_view_was_made() {
    let done = refused::Workflow::new((), ())
        .run(())
        .await
        .expect("completes");
    assert_eq!(done.output[0], "a: n=0");
    assert!(
        done.output[1].starts_with("b: rejected"),
        "{:?}",
        done.output
    );
    // Record 2 (lead -> b) was recorded after `a`'s view was made, and `b`
    // never got a context: the copy the branches read holds it all the
    // same, as the transcript would.
    assert_eq!(
        *SIBLING.lock().unwrap(),
        [
            "me #1 sibling #2: the lease granted at record 2 was granted by `lead`, not by this agent"
        ]
    );
}
