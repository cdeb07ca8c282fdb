//! Three reviewers of a change at once, and a judge that keeps their
//! disagreement (issue 13).
//!
//! The lead hands the change to three reviewers in parallel (security,
//! performance, style); each hands the judge a [`Review`] whose `verdict`
//! field is marked `#[verdict]`. The judge receives all three views
//! (`judge::Joined`) and hands the maintainer one ask to merge or not. When
//! the reviewers disagree, the run holds the judge to carrying the
//! disagreement forward: an open question naming every reviewer and its
//! verdict (the house rule `Rules::AskMaintainer`), or evidence that cites
//! every reviewer's outcome record (`Rules::Weigh`: a block wins). A judge
//! that merges by majority and drops the dissent (`Rules::Majority`) is
//! rejected at the maintainer's receipt with `verdict_dropped`.
//!
//! The agents are scripted (no model): each reviewer reads the diff for one
//! thing, and the judge follows the house rule a read-only tool returns.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

use crate::faults::Effects;

/// A change to review: the workflow's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    /// Its title.
    pub title: String,
    /// The diff, as text.
    pub diff: String,
}

/// What a reviewer concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// Merge it.
    Approve,
    /// Do not merge it.
    Block,
}

/// What a reviewer hands the judge: its verdict and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Verdict)]
pub struct Review {
    /// Who reviewed.
    pub reviewer: String,
    /// What it concluded: the branch's verdict, which the join compares.
    #[verdict]
    pub verdict: Call,
    /// What it found.
    pub finding: String,
}

/// How the judge decides when the reviewers disagree (the house rules, read
/// by the judge through a tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Rules {
    /// Hand the disagreement to the maintainer as an open question.
    AskMaintainer,
    /// Weigh every view (a block wins) and cite every reviewer's record.
    Weigh,
    /// Merge by majority, saying nothing of the dissent (the fault).
    Majority,
}

impl FailFast for Rules {}

/// What the run ends with: the maintainer's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// Whether the change was merged.
    pub merged: bool,
    /// Why, in words.
    pub why: String,
}

/// A merge made: the merge tool's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Merged {
    /// The title of the change merged.
    pub title: String,
}

impl FailFast for Merged {}

/// What the tools reach: the house rules, and the log of merges made.
#[derive(Debug)]
pub struct Desk {
    /// The judge's rules.
    pub rules: Rules,
    /// Whether merging this change is allowed: no reviewer blocks it (the
    /// ground truth the fault suite judges a merge by).
    pub may_merge: bool,
    /// Every merge made.
    pub effects: Effects,
}

impl Desk {
    /// A desk with `rules`, for a change that may (or may not) be merged.
    pub fn new(rules: Rules, may_merge: bool) -> Self {
        Desk {
            rules,
            may_merge,
            effects: Effects::default(),
        }
    }
}

/// Each reviewer's reading of a diff: security blocks `unsafe`,
/// performance blocks a `.clone()` inside a loop, style blocks a `TODO`.
pub fn review_of(reviewer: &str, diff: &str) -> Review {
    let (blocks, finding) = match reviewer {
        "security" => (
            diff.contains("unsafe"),
            "an `unsafe` block without a safety comment",
        ),
        "performance" => (
            diff.contains("for ") && diff.contains(".clone()"),
            "a `.clone()` inside a loop",
        ),
        _ => (diff.contains("TODO"), "a `TODO` left in"),
    };
    Review {
        reviewer: reviewer.to_owned(),
        verdict: if blocks { Call::Block } else { Call::Approve },
        finding: if blocks {
            finding.to_owned()
        } else {
            "nothing to object to".to_owned()
        },
    }
}

#[workflow(entry = lead, output = Decision, deps = Desk)]
pub mod review {
    use super::*;

    /// Lead -> security reviewer: the change.
    #[handoff]
    pub struct SecurityAsk {
        /// Review it for security.
        #[contract]
        pub contract: Contract<authority::Security>,
        /// The change.
        pub change: Change,
    }

    /// Lead -> performance reviewer: the change.
    #[handoff]
    pub struct PerformanceAsk {
        /// Review it for performance.
        #[contract]
        pub contract: Contract<authority::Performance>,
        /// The change.
        pub change: Change,
    }

    /// Lead -> style reviewer: the change.
    #[handoff]
    pub struct StyleAsk {
        /// Review it for style.
        #[contract]
        pub contract: Contract<authority::Style>,
        /// The change.
        pub change: Change,
    }

    /// Judge -> maintainer: merge the change, or not, and what is still
    /// open.
    #[handoff]
    pub struct MergeAsk {
        /// Merge it (or not), under the maintainer's authority.
        #[contract]
        pub contract: Contract<authority::Merge>,
        /// The change.
        pub title: String,
        /// What the judge hands on.
        pub call: Call,
    }

    /// The house rules, for the judge.
    #[tool(effect = read)]
    async fn house_rules(_: (), desk: &Desk) -> Result<Rules, ToolError> {
        Ok(desk.rules)
    }

    /// Merges the change: the side effect.
    #[tool(needs = Merge, effect = write)]
    async fn merge(title: String, desk: &Desk) -> Result<Merged, ToolError> {
        desk.effects.push("merge", title.clone(), desk.may_merge);
        Ok(Merged { title })
    }

    /// Hands the change to the three reviewers at once.
    #[agent(owns = [Lead], to = [parallel(security, performance, style)])]
    async fn lead(change: Change, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        // Leases that cover the fan-out: three branches, then the judge.
        let (until, stop) = (cx.hop() + 4, StopWhen::at_hop(cx.hop() + 6));
        let op = |what: &str| Operation::new("review", what.to_owned());
        Ok(lead::Next::Parallel(lead::Parallel {
            security: SecurityAsk {
                contract: Contract::builder(
                    op("security"),
                    cx.lease(authority::Security).until_hop(until),
                    stop.clone(),
                )
                .evidence([])
                .open([])
                .build(),
                change: change.clone(),
            },
            performance: PerformanceAsk {
                contract: Contract::builder(
                    op("performance"),
                    cx.lease(authority::Performance).until_hop(until),
                    stop.clone(),
                )
                .evidence([])
                .open([])
                .build(),
                change: change.clone(),
            },
            style: StyleAsk {
                contract: Contract::builder(
                    op("style"),
                    cx.lease(authority::Style).until_hop(until),
                    stop,
                )
                .evidence([])
                .open([])
                .build(),
                change,
            },
        }))
    }

    /// Reviews for security.
    #[agent(owns = [Security], to = [judge])]
    async fn security(
        ask: SecurityAsk,
        _cx: security::Context<'_>,
    ) -> Result<security::Next, Reject> {
        Ok(security::Next::Judge(review_of(
            "security",
            &ask.change.diff,
        )))
    }

    /// Reviews for performance.
    #[agent(owns = [Performance], to = [judge])]
    async fn performance(
        ask: PerformanceAsk,
        _cx: performance::Context<'_>,
    ) -> Result<performance::Next, Reject> {
        Ok(performance::Next::Judge(review_of(
            "performance",
            &ask.change.diff,
        )))
    }

    /// Reviews for style.
    #[agent(owns = [Style], to = [judge])]
    async fn style(ask: StyleAsk, _cx: style::Context<'_>) -> Result<style::Next, Reject> {
        Ok(style::Next::Judge(review_of("style", &ask.change.diff)))
    }

    /// Receives every reviewer's view and hands the maintainer one ask,
    /// under the house rules.
    #[agent(
        owns = [Judge],
        tools = [house_rules],
        join = [security: Review, performance: Review, style: Review],
        to = [maintainer]
    )]
    async fn judge(views: judge::Joined, cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
        let rules = cx.call(tools::house_rules, ()).await?;
        let reviews: Vec<&Review> = [&views.security, &views.performance, &views.style]
            .into_iter()
            .filter_map(|v| match v {
                Branch::Done(review) => Some(review),
                _ => None,
            })
            .collect();
        let blocks = reviews.iter().filter(|r| r.verdict == Call::Block).count();
        let (call, evidence, open) = match (rules, cx.disagreement()) {
            (Rules::AskMaintainer, Some(dissent)) => (
                Call::Block,
                vec![],
                vec![dissent.uncertainty("merging overrides a reviewer; a person decides")],
            ),
            (Rules::Weigh, Some(dissent)) => (
                Call::Block,
                vec![dissent.resolution("judge", "a block outweighs any number of approvals")],
                vec![],
            ),
            // By majority, the dissent unsaid (the fault), or no dissent.
            _ => (
                if blocks * 2 > reviews.len() {
                    Call::Block
                } else {
                    Call::Approve
                },
                vec![],
                vec![],
            ),
        };
        Ok(judge::Next::Maintainer(MergeAsk {
            contract: Contract::builder(
                Operation::new("merge", "the change"),
                cx.lease(authority::Merge).for_next_turn(),
                StopWhen::at_hop(cx.hop() + 2),
            )
            .evidence(evidence)
            .open(open)
            .build(),
            title: "the change".to_owned(),
            call,
        }))
    }

    /// Merges what the judge approves with nothing left open; holds
    /// anything else for a person.
    #[agent(owns = [Merge], tools = [merge], to = [END])]
    async fn maintainer(
        ask: MergeAsk,
        cx: maintainer::Context<'_>,
    ) -> Result<maintainer::Next, Reject> {
        if let Some(open) = ask.contract.open.first() {
            return Ok(maintainer::Next::End(Decision {
                merged: false,
                why: format!("held for a person: {}", open.question),
            }));
        }
        if ask.call == Call::Block {
            let why = ask
                .contract
                .evidence
                .first()
                .map_or("blocked".to_owned(), |e| format!("blocked: {}", e.claim));
            return Ok(maintainer::Next::End(Decision { merged: false, why }));
        }
        let merged = cx.call(tools::merge, ask.title).await?;
        Ok(maintainer::Next::End(Decision {
            merged: true,
            why: format!("merged {}", merged.title),
        }))
    }
}
