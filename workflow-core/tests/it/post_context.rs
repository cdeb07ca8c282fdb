//! Post-conditions with and without the agent's context: a condition that
//! names the context sees the turn's own (its hop, the run's limits), one
//! that does not is checked without one being built (issue 18), and both
//! fail the turn the same way.

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;
use workflow_core::{Agent, RunError};

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Out(pub u32);

#[workflow(entry = first, output = Out)]
pub mod reads {
    use super::*;

    /// The run's invariants: the most the output may be.
    #[invariants]
    #[derive(Debug, Clone)]
    pub struct Root {
        /// The most the output may be.
        pub most: u32,
    }

    /// Reads the context (under its own name) in its post-condition.
    #[agent(to = [END])]
    #[post(matches!(out, first::Next::End(Out(n)) if *n <= ctx.root().most), "at most the root's most")]
    async fn first(n: u32, ctx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::End(Out(n + ctx.hop())))
    }
}

#[workflow(entry = only, output = Out)]
pub mod output_only {
    use super::*;

    /// Reads only its output.
    #[agent(to = [END])]
    #[post(!matches!(out, only::Next::End(Out(n)) if *n > 10), "at most 10")]
    async fn only(n: u32, _cx: only::Context<'_>) -> Result<only::Next, Reject> {
        Ok(only::Next::End(Out(n)))
    }
}

/// An agent that asks its own `Agent::post` (the trait's, as a
/// hand-written caller with a context does) about an output before it
/// returns one.
#[workflow(entry = asks, output = Out)]
pub mod self_check {
    use super::*;

    /// Answers `n` when its post-condition would let `n` through, else 0.
    #[agent(to = [END])]
    #[post(!matches!(out, asks::Next::End(Out(n)) if *n > 10), "at most 10")]
    async fn asks(n: u32, cx: asks::Context<'_>) -> Result<asks::Next, Reject> {
        let probe = asks::Next::End(Out(n));
        let passes = <asks::Agent as workflow_core::Agent<Spec>>::post(&probe, &cx).is_ok();
        Ok(asks::Next::End(Out(if passes { n } else { 0 })))
    }
}

/// A fan-out whose two branches have post-conditions: `near` reads the
/// context, `far` only its output.
#[workflow(entry = lead, output = Seen)]
pub mod fan {
    use super::*;

    /// The most a branch may answer.
    #[invariants]
    #[derive(Debug, Clone)]
    pub struct Root {
        /// The most a branch may answer.
        pub most: u32,
    }

    #[handoff]
    pub struct Ask {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Answer>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub n: u32,
    }

    #[handoff]
    pub struct FarAsk {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Far>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub n: u32,
    }

    #[agent(owns = [Lead], to = [parallel(near, far)])]
    async fn lead(n: u32, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Parallel(lead::Parallel {
            near: Ask {
                op: Operation::new("answer", ""),
                scope: cx.lease(authority::Answer).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 4),
                n,
            },
            far: FarAsk {
                op: Operation::new("answer", ""),
                scope: cx.lease(authority::Far).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 4),
                n,
            },
        }))
    }

    #[agent(owns = [Answer], to = [judge])]
    #[post(matches!(out, near::Next::Judge(Out(n)) if *n <= cx.root().most), "near: at most the root's most")]
    async fn near(ask: Ask, cx: near::Context<'_>) -> Result<near::Next, Reject> {
        let _ = cx.hop();
        Ok(near::Next::Judge(Out(ask.n)))
    }

    #[agent(owns = [Far], to = [judge])]
    #[post(!matches!(out, far::Next::Judge(Out(n)) if *n > 10), "far: at most 10")]
    async fn far(ask: FarAsk, _cx: far::Context<'_>) -> Result<far::Next, Reject> {
        Ok(far::Next::Judge(Out(ask.n)))
    }

    #[agent(owns = [Judge], join = [near: Out, far: Out], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        let seen = [("near", &views.near), ("far", &views.far)]
            .into_iter()
            .map(|(name, view)| match view {
                Branch::Done(out) => format!("{name}: {}", out.0),
                other => format!("{name}: {other}"),
            })
            .collect();
        Ok(judge::Next::End(Seen(seen)))
    }
}

/// What the fan-out's judge saw of each branch.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Seen(pub Vec<String>);

#[test]
fn only_a_condition_naming_the_context_is_checked_with_one() {
    let reads_context = [
        <reads::first::Agent as Agent<reads::Spec>>::POST_READS_CONTEXT,
        <output_only::only::Agent as Agent<output_only::Spec>>::POST_READS_CONTEXT,
    ];
    assert_eq!(reads_context, [true, false]);
    let branches = [
        <fan::near::Agent as Agent<fan::Spec>>::POST_READS_CONTEXT,
        <fan::far::Agent as Agent<fan::Spec>>::POST_READS_CONTEXT,
    ];
    assert_eq!(branches, [true, false]);
}

#[test]
fn an_impl_that_claims_no_context_without_the_check_fails_closed() {
    // `first` reads its context: it keeps the default
    // `post_without_context`, which the runtime never calls for it, and
    // which refuses rather than pass.
    let out = reads::first::Next::End(Out(0));
    let refused = <reads::first::Agent as Agent<reads::Spec>>::post_without_context(&out)
        .expect_err("the default refuses");
    assert_eq!(refused.expr, "POST_READS_CONTEXT = false");
}

#[tokio::test]
async fn the_traits_post_checks_the_conditions_that_need_no_context() {
    // The conditions do not name the context, so the generated code has
    // only `post_without_context`; `post` reaches it through the trait.
    assert_eq!(
        [<self_check::asks::Agent as Agent<self_check::Spec>>::POST_READS_CONTEXT],
        [false]
    );
    let wf = self_check::Workflow::new((), ());
    assert_eq!(wf.run(5).await.expect("passes").output.0, 5);
    assert_eq!(wf.run(11).await.expect("answers 0").output.0, 0);
}

#[tokio::test]
async fn in_a_fan_out_each_branch_is_checked_its_own_way() {
    let done = fan::Workflow::new(fan::Root { most: 20 }, ())
        .run(5)
        .await
        .expect("both hold");
    assert_eq!(done.output.0, ["near: 5", "far: 5"]);
    // Over `far`'s 10, within the root's 20: only `far` fails.
    let done = fan::Workflow::new(fan::Root { most: 20 }, ())
        .run(15)
        .await
        .expect("the judge runs");
    assert_eq!(done.output.0[0], "near: 15");
    assert!(
        done.output.0[1].contains("far: at most 10"),
        "{:?}",
        done.output.0
    );
    // Over the root's 12 too: `near`, reading its context, fails as well.
    let done = fan::Workflow::new(fan::Root { most: 12 }, ())
        .run(15)
        .await
        .expect("the judge runs");
    assert!(
        done.output.0[0].contains("near: at most the root's most"),
        "{:?}",
        done.output.0
    );
    assert!(
        done.output.0[1].contains("far: at most 10"),
        "{:?}",
        done.output.0
    );
}

#[tokio::test]
async fn both_kinds_pass_when_they_hold() {
    let done = reads::Workflow::new(reads::Root { most: 3 }, ())
        .run(3)
        .await
        .expect("within the root's most");
    assert_eq!(done.output.0, 3);
    let done = output_only::Workflow::new((), ())
        .run(10)
        .await
        .expect("ends");
    assert_eq!(done.output.0, 10);
}

#[tokio::test]
async fn a_condition_reading_the_context_sees_the_runs_invariants() {
    let aborted = reads::Workflow::new(reads::Root { most: 3 }, ())
        .run(4)
        .await
        .expect_err("over the root's most");
    match &aborted.error {
        RunError::PostCondition {
            agent: "first",
            condition,
            ..
        } => assert!(condition.contains("ctx.root().most"), "{condition}"),
        other => panic!("unexpected error: {other}"),
    }
}

#[tokio::test]
async fn a_condition_on_the_output_alone_still_fails_the_turn() {
    let aborted = output_only::Workflow::new((), ())
        .run(11)
        .await
        .expect_err("over 10");
    match &aborted.error {
        RunError::PostCondition {
            agent: "only",
            message,
            ..
        } => assert_eq!(*message, "at most 10"),
        other => panic!("unexpected error: {other}"),
    }
}
