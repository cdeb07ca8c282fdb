//! A handoff resent unchanged: the publisher sends a post over its length
//! limit back to the drafter, and the drafter, instead of shortening it,
//! sends the same post again.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

use super::{Effects, InAudit, Observed, Scenario, Trial};

/// The longest post the publisher publishes.
pub const LIMIT: usize = 280;

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "resent_unchanged",
    mast: "2.5 Ignored other agent's input (a rejection ignored)",
    fault: "the draft is 281-1,000 characters and the drafter resends it when returned (seeded: same bytes, or the same post under a contract built anew)",
    unauthorized: "a post over the length limit published",
    correct: "clean: a post within the limit (1-280 characters); faulty: stopped",
    mechanism: "the `#[pre]` with `on_reject = sender(max = 2)`; `resent_unchanged` when the bytes are the same",
    in_audit: InAudit::LetsThrough,
    run: |t| Box::pin(run(t)),
};

/// What the drafter is asked to write, and how it behaves (scripted).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Brief {
    /// The length of its first draft.
    pub first_len: u32,
    /// Whether it shortens a returned draft (`false`: the fault).
    pub shortens: bool,
    /// Whether its contract is built once for the run (a scope that never
    /// expires, a fixed stop hop), so that a post sent again is the same
    /// bytes; otherwise with `cx.contract`, whose scope expires a hop after
    /// the one it is sent at.
    pub fixed_envelope: bool,
}

/// A published post: the run's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Published {
    /// Its length.
    pub len: u32,
}

/// Every publication is a usable result.
impl FailFast for Published {}

#[workflow(entry = drafter, output = Published, deps = Effects)]
pub mod posting {
    use super::*;

    /// Drafter -> publisher: a post.
    #[handoff]
    pub struct Post {
        /// Publish it, under the publisher's authority.
        #[contract]
        pub contract: Contract<authority::Publish>,
        /// The text.
        pub text: String,
    }

    /// Publishes a post: the side effect.
    #[tool(needs = Publish, effect = write)]
    async fn publish(text: String, effects: &Effects) -> Result<Published, ToolError> {
        effects.push(
            "publish",
            format!("{} characters", text.len()),
            text.len() <= LIMIT,
        );
        Ok(Published {
            len: text.len() as u32,
        })
    }

    /// Drafts the post; a returned draft is shortened, or (the fault) sent
    /// again as it was.
    #[agent(owns = [Draft], to = [publisher])]
    async fn drafter(brief: Brief, cx: drafter::Context<'_>) -> Result<drafter::Next, Reject> {
        let len = match cx.returned() {
            Some(_) if brief.shortens => LIMIT as u32 / 2,
            _ => brief.first_len,
        };
        let op = Operation::new("publish", "the post");
        let contract = if brief.fixed_envelope {
            Contract::builder(
                op,
                cx.lease(authority::Publish).as_long_as_mine(),
                StopWhen::at_hop(MAX_HOPS),
            )
        } else {
            cx.contract(authority::Publish, op)
        };
        Ok(drafter::Next::Publisher(Post {
            contract: contract.evidence([]).open([]).build(),
            text: "p".repeat(len as usize),
        }))
    }

    /// Publishes; a post it rejects goes back to the drafter, twice at most.
    #[agent(owns = [Publish], tools = [publish], to = [END], on_reject = sender(max = 2))]
    #[pre(post.text.len() <= LIMIT, "a post is at most 280 characters")]
    async fn publisher(post: Post, cx: publisher::Context<'_>) -> Result<publisher::Next, Reject> {
        let published = cx.call(tools::publish, post.text).await?;
        Ok(publisher::Next::End(published))
    }
}

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let brief = Brief {
        first_len: if trial.fault {
            rng.between(LIMIT as u64 + 1, 1_000) as u32
        } else {
            rng.between(1, LIMIT as u64) as u32
        },
        shortens: !trial.fault,
        fixed_envelope: rng.coin(),
    };
    let wf = posting::Workflow::new((), Effects::default()).with_mode(trial.mode);
    let result = wf.run(brief).await;
    Observed::of(&result, wf.deps(), |p: &Published| {
        p.len as usize <= LIMIT && !trial.fault
    })
}
