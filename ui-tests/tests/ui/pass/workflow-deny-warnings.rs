//! Generated code compiles without warnings in a crate that denies them:
//! public and private items, docs on everything, tools, invariants,
//! conditions, a loop bound and a timeout; a public and a private module.

#![deny(warnings, missing_docs, unused, nonstandard_style, rust_2018_idioms)]

//! A crate under `#![deny(warnings)]`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// The final answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Answer {
    /// The text.
    pub text: String,
}

/// The workflow.
#[workflow(entry = asker, output = Answer, max_hops = 20)]
pub mod ask {
    use super::*;

    /// Pinned for the run.
    #[invariants]
    pub struct Root {
        /// The longest answer accepted.
        pub max_len: usize,
    }

    /// Asker -> answerer.
    #[handoff]
    pub struct Question {
        /// What to do.
        #[operation]
        pub op: Operation,
        /// Under which authority.
        #[authority]
        pub scope: Scope<authority::Answer>,
        /// What the asker relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What it left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// The question.
        pub text: String,
    }

    /// Answerer -> asker.
    #[handoff]
    pub struct FollowUp {
        /// What to do.
        #[operation]
        pub op: Operation,
        /// Under which authority.
        #[authority]
        pub scope: Scope<authority::Ask>,
        /// What the answerer relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What it left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// The question so far.
        pub text: String,
    }

    /// Looks a word up.
    #[tool(needs = Answer, effect = read)]
    async fn lookup(word: String, _deps: &()) -> Result<String, ToolError> {
        Ok(word.to_uppercase())
    }

    /// Asks.
    #[agent(owns = [Ask], to = [answerer])]
    #[pre(!q.text.is_empty(), "the question is not empty")]
    async fn asker(q: FollowUp, cx: asker::Context<'_>) -> Result<asker::Next, Reject> {
        Ok(asker::Next::Answerer(Question {
            op: Operation::new("answer", "answer it"),
            scope: cx.lease(authority::Answer).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            text: q.text,
        }))
    }

    /// Answers, or asks back at most twice.
    #[agent(owns = [Answer], tools = [lookup], to = [asker(max = 2), END], timeout_ms = 500)]
    #[post(true, "always holds")]
    async fn answerer(q: Question, cx: answerer::Context<'_>) -> Result<answerer::Next, Reject> {
        let text = cx.call(tools::lookup, q.text).await?;
        if text.len() <= cx.root().max_len {
            return Ok(answerer::Next::End(Answer { text }));
        }
        Ok(answerer::Next::Asker(FollowUp {
            op: Operation::new("shorten", "ask a shorter question"),
            scope: cx.lease(authority::Ask).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            text: text[..cx.root().max_len].to_owned(),
        }))
    }
}

// A private workflow: its generated items fall under `dead_code` too.
#[workflow(entry = only, output = String)]
mod quiet {
    use super::*;

    #[agent(to = [END])]
    async fn only(text: String, _cx: only::Context<'_>) -> Result<only::Next, Reject> {
        Ok(only::Next::End(text))
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let wf = ask::Workflow::new(ask::Root { max_len: 2 }, ());
    let first = ask::FollowUp {
        op: Operation::new("ask", "ask"),
        scope: Scope::new(ask::authority::Ask),
        evidence: vec![],
        open: vec![],
        stop: StopWhen::at_hop(10),
        text: "why".to_owned(),
    };
    let done = rt.block_on(wf.run(first)).unwrap();
    assert_eq!(done.output.text, "WH");
    let done = rt
        .block_on(quiet::Workflow::new((), ()).run("hi".to_owned()))
        .unwrap();
    assert_eq!(done.output, "hi");
}
