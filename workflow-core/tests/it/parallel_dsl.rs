//! A fan-out declared with the macros: `to = [parallel(..)]` on the lead,
//! `join = [..]` on the judge, whose input `judge::Joined` has one typed
//! `Branch<Review>` per branch.

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// What a reviewer hands the judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Review {
    pub reviewer: String,
    pub approve: bool,
}

/// What the run ends with: each reviewer's outcome as the judge saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ruling {
    pub seen: Vec<String>,
}

#[workflow(entry = lead, output = Ruling)]
pub mod review {
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
        pub change: String,
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
        pub change: String,
    }

    #[agent(owns = [Lead], to = [parallel(security, style)])]
    async fn lead(change: String, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        Ok(lead::Next::Parallel(lead::Parallel {
            security: SecurityAsk {
                op: Operation::new("review", "security"),
                scope: cx.lease(authority::Security).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 4),
                change: change.clone(),
            },
            style: StyleAsk {
                op: Operation::new("review", "style"),
                scope: cx.lease(authority::Style).until_hop(cx.hop() + 3),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 4),
                change,
            },
        }))
    }

    #[agent(owns = [Security], to = [judge])]
    async fn security(
        ask: SecurityAsk,
        _cx: security::Context<'_>,
    ) -> Result<security::Next, Reject> {
        if ask.change.contains("panic") {
            return Err(Reject::because("cannot review a panic"));
        }
        Ok(security::Next::Judge(Review {
            reviewer: "security".into(),
            approve: !ask.change.contains("unsafe"),
        }))
    }

    #[agent(owns = [Style], to = [judge])]
    async fn style(ask: StyleAsk, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        Ok(style::Next::Judge(Review {
            reviewer: "style".into(),
            approve: ask.change.len() < 40,
        }))
    }

    #[agent(owns = [Judge], join = [style: Review, security: Review], to = [END])]
    async fn judge(views: judge::Joined, _cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        let seen = [("security", &views.security), ("style", &views.style)]
            .into_iter()
            .map(|(name, view)| match view {
                Branch::Done(review) => format!("{name}: approve={}", review.approve),
                other => format!("{name}: {other}"),
            })
            .collect();
        Ok(judge::Next::End(Ruling { seen }))
    }
}

#[tokio::test]
async fn the_judge_receives_every_reviewers_outcome_typed() {
    let wf = review::Workflow::new((), ());
    let done = wf.run("an unsafe block".to_owned()).await.unwrap();
    assert_eq!(
        done.output.seen,
        ["security: approve=false", "style: approve=true"]
    );
    // lead, both branches and the judge: every branch's turn counts.
    assert_eq!(review::MAX_HOPS, 4);
    let lineage: Vec<_> = done
        .transcript
        .records()
        .unwrap()
        .into_iter()
        .map(|r| (r.from.to_string(), r.to.to_string(), r.lineage.is_some()))
        .collect();
    let want = [
        ("START", "lead", false),
        ("lead", "security", true),
        ("lead", "style", true),
        ("security", "judge", true),
        ("style", "judge", true),
        ("lead", "judge", true),
        ("judge", "END", false),
    ];
    let want: Vec<_> = want
        .into_iter()
        .map(|(f, t, l)| (f.to_owned(), t.to_owned(), l))
        .collect();
    assert_eq!(lineage, want);
}

#[tokio::test]
async fn a_failed_reviewer_reaches_the_judge_as_failed() {
    let wf = review::Workflow::new((), ());
    let done = wf.run("a panic".to_owned()).await.unwrap();
    assert_eq!(
        done.output.seen,
        [
            "security: failed: agent `security` failed: cannot review a panic",
            "style: approve=true"
        ]
    );
}
