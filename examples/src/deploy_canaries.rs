//! The canaries of the deploy workflow's tools: for each tool, a prompt
//! run through the model's tool loop as the agent granted the tool would
//! run it, the call a model should make (the tool, predicates over its
//! typed input) and a predicate over the final answer.
//!
//! `workflow_deploy canary examples/canaries/staging_deploy.json` replays
//! them (CI); `--live` runs them against the model server `OPENAI_BASE_URL`
//! names, with the fake cloud as the tools' backend; `--live --record FILE`
//! writes the recording. [`scripted`] plays a well-behaved model offline:
//! the committed recording is its live run (`UPDATE_CANARIES=1 cargo test
//! -p examples --test it canaries`).

use workflow_core::canary::{Canaries, Canary};
use workflow_core::llm::{ModelReply, ScriptedModel, ToolCallRequest};
use workflow_core::prelude::*;

use crate::deploy_workflow::{ApplyRequest, VpcQuery, deploy};

// ANCHOR: canaries
impl Canaries for deploy::Spec {
    fn canaries() -> Vec<Canary<Self>> {
        vec![
            Canary::new(
                "finds_the_staging_vpc",
                "Which VPC is tagged env=staging? List the VPCs, starting at page 0, \
                 and answer with its id.",
            )
            .offering::<deploy::network::Agent, _>((deploy::tools::describe_vpcs,))
            .expects(
                deploy::tools::describe_vpcs,
                "lists the first page",
                |query: &VpcQuery| query.page == 0,
            )
            .answer("names vpc-2stag", |answer| answer.contains("vpc-2stag")),
            Canary::new(
                "applies_two_routes",
                "Add 2 routes to the route table of VPC vpc-2stag, then answer with how many \
                 routes changed.",
            )
            .offering::<deploy::terraform::Agent, _>((deploy::tools::apply_plan,))
            .expects(
                deploy::tools::apply_plan,
                "changes 2 routes of vpc-2stag",
                |request: &ApplyRequest| request.vpc_id == "vpc-2stag" && request.routes == 2,
            )
            .answer("says 2 routes changed", |answer| answer.contains('2')),
        ]
    }
}
// ANCHOR_END: canaries

fn call(id: &str, tool: &str, arguments: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest::new(id, tool, arguments.to_string())
}

fn answer(text: &str) -> ModelReply {
    ModelReply::text(serde_json::json!({ "answer": text }).to_string())
}

/// A well-behaved model for the canaries above, in their order: it lists
/// page 0 and names the staging VPC, then applies two routes and says so.
/// Usage is reported as a server would.
pub fn scripted() -> ScriptedModel {
    ScriptedModel::named("scripted-canary")
        .reply_with(
            ModelReply::calls([call(
                "call_1",
                "describe_vpcs",
                serde_json::json!({"page": 0}),
            )])
            .with_usage(Usage::tokens(310, 18)),
        )
        .reply_with(
            answer("vpc-2stag is the VPC tagged env=staging").with_usage(Usage::tokens(420, 16)),
        )
        .reply_with(
            ModelReply::calls([call(
                "call_2",
                "apply_plan",
                serde_json::json!({"vpc_id": "vpc-2stag", "routes": 2}),
            )])
            .with_usage(Usage::tokens(300, 24)),
        )
        .reply_with(answer("2 routes changed on vpc-2stag").with_usage(Usage::tokens(390, 12)))
}
