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

#[test]
fn only_a_condition_naming_the_context_is_checked_with_one() {
    let reads_context = [
        <reads::first::Agent as Agent<reads::Spec>>::POST_READS_CONTEXT,
        <output_only::only::Agent as Agent<output_only::Spec>>::POST_READS_CONTEXT,
    ];
    assert_eq!(reads_context, [true, false]);
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
