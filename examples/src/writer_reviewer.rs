//! A writer/reviewer loop with a declared bound: the reviewer may send the
//! draft back to the writer at most three times (`writer(max = 3)`). A
//! reviewer that is never satisfied does not loop forever: the fourth send
//! back is rejected at the receipt.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// What the reviewer accepts after how many drafts (scripted model).
#[derive(Debug, Clone, Copy)]
pub struct ScriptedReviewer {
    /// The draft number the reviewer accepts; `None`: never satisfied.
    pub accepts_draft: Option<u32>,
}

/// The final text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Article {
    /// The text.
    pub text: String,
    /// How many drafts it took.
    pub drafts: u32,
}

#[workflow(entry = writer, output = Article, deps = ScriptedReviewer)]
pub mod review {
    use super::*;

    /// Writer -> reviewer: a draft to review.
    #[handoff]
    pub struct Draft {
        /// Review it, under the reviewer's authority to approve.
        #[contract]
        pub contract: Contract<authority::Approve>,
        /// The text.
        pub text: String,
        /// Which draft this is, from 1.
        pub number: u32,
    }

    /// Reviewer -> writer: what to change.
    #[handoff]
    pub struct Revision {
        /// Revise the draft, under the writer's authority over the text.
        #[contract]
        pub contract: Contract<authority::Write>,
        /// The draft being revised.
        pub previous: String,
        /// Its number.
        pub number: u32,
    }

    /// Writes a draft, or revises one. The first input is the topic.
    #[agent(owns = [Write], to = [reviewer])]
    async fn writer(topic: Revision, cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        let number = topic.number + 1;
        Ok(writer::Next::Reviewer(Draft {
            contract: cx
                .contract(
                    authority::Approve,
                    Operation::new("review", "review this draft"),
                )
                .evidence([])
                .open([])
                .build(),
            text: format!("{} (draft {number})", topic.previous),
            number,
        }))
    }

    /// The reviewing model (scripted): does it accept draft `number`?
    #[tool(effect = read)]
    async fn judge(number: u32, script: &ScriptedReviewer) -> Result<bool, ToolError> {
        Ok(script.accepts_draft == Some(number))
    }

    /// Approves, or sends the draft back.
    #[agent(owns = [Approve], tools = [judge], to = [writer(max = 3), END])]
    async fn reviewer(draft: Draft, cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
        if cx.call(tools::judge, draft.number).await? {
            return Ok(reviewer::Next::End(Article {
                text: draft.text,
                drafts: draft.number,
            }));
        }
        Ok(reviewer::Next::Writer(Revision {
            contract: cx
                .contract(
                    authority::Write,
                    Operation::new("revise", "tighten the introduction"),
                )
                .evidence([Evidence::complete(
                    "reviewer",
                    "the introduction is too long",
                )])
                .open([])
                .build(),
            previous: draft.text,
            number: draft.number,
        }))
    }
}

/// The first input: a topic, as a revision of nothing.
pub fn topic(text: &str) -> review::Revision {
    let contract = Contract::builder(
        Operation::new("write", "write an article"),
        Scope::new(review::authority::Write),
        StopWhen::at_hop(review::MAX_HOPS),
    );
    review::Revision {
        contract: contract.evidence([]).open([]).build(),
        previous: text.to_owned(),
        number: 0,
    }
}
