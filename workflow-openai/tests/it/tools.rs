//! A model in the tool loop over real HTTP: the chat completions server
//! started inside each test replies with tool calls; the loop offers the
//! agent's tools as function tools, refuses what it must (a tool not
//! offered, bad arguments, a step past the limit), fails fast, answers two
//! calls of one reply, and a loop killed mid-turn resumes without repeating
//! a journaled call and replays identically.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use workflow_core::llm::{ModelError, ModelErrorKind, ModelOutcome};
use workflow_core::prelude::*;
use workflow_core::{RunError, Transcript, TurnRecord};

use crate::http::{Answer, Server, completion};

/// What the responder is asked.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ticket {
    /// In the user's words.
    pub text: String,
    /// The loop's step limit.
    pub max_steps: u32,
}

/// What the model finally says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// The service at fault.
    pub service: String,
    /// Whether its on-call was paged.
    pub paged: bool,
}

/// A service lookup's argument.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceQuery {
    /// The service's name.
    pub name: String,
}

/// A page.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Page {
    /// The service whose on-call is paged.
    pub service: String,
}

/// The tools' world.
#[derive(Default)]
pub struct Desk {
    pub lookups: AtomicU32,
    pub owners: AtomicU32,
    pub pages: AtomicU32,
    /// A page never returns (the process dies while it waits).
    pub hang: bool,
}

#[workflow(entry = responder, output = Verdict, deps = Desk)]
pub mod oncall {
    use super::*;

    /// Looks up a service's recent errors.
    #[tool(effect = read)]
    async fn lookup_service(query: ServiceQuery, desk: &Desk) -> Result<Vec<String>, ToolError> {
        desk.lookups.fetch_add(1, Ordering::SeqCst);
        Ok(match query.name.as_str() {
            "api" => vec!["502 from upstream".to_owned()],
            _ => vec![],
        })
    }

    /// Looks up who owns a service.
    #[tool(effect = read)]
    async fn lookup_owner(query: ServiceQuery, desk: &Desk) -> Result<String, ToolError> {
        desk.owners.fetch_add(1, Ordering::SeqCst);
        Ok(format!("team-{}", query.name))
    }

    /// Pages a service's on-call.
    #[tool(needs = Page, effect = write)]
    async fn page_oncall(page: Page, desk: &Desk) -> Result<String, ToolError> {
        if desk.hang {
            std::future::pending::<()>().await;
        }
        let n = desk.pages.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(format!("page-{}-{n}", page.service))
    }

    #[agent(owns = [Page], tools = [lookup_service, lookup_owner, page_oncall], to = [END])]
    async fn responder(
        ticket: Ticket,
        cx: responder::Context<'_>,
    ) -> Result<responder::Next, Reject> {
        let prompt = Prompt::new(ticket.text).system("Find the failing service and page it.");
        let verdict: Verdict = cx
            .tool_loop(prompt, (tools::lookup_service, tools::page_oncall))
            .max_steps(ticket.max_steps)
            .await?;
        Ok(responder::Next::End(verdict))
    }
}

/// A chat completion whose message asks for `calls` (id, name, arguments).
fn tool_calls(calls: &[(&str, &str, &str)]) -> Answer {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": arguments}
            })
        })
        .collect();
    Answer::Json(
        200,
        json!({
            "id": "chatcmpl-t",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": null, "tool_calls": calls},
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50}
        })
        .to_string(),
    )
}

const LOOKUP_API: (&str, &str, &str) = ("c1", "lookup_service", r#"{"name":"api"}"#);
const PAGE_API: (&str, &str, &str) = ("c2", "page_oncall", r#"{"service":"api"}"#);

fn verdict() -> Answer {
    completion(r#"{"service":"api","paged":true}"#)
}

fn ticket(max_steps: u32) -> Ticket {
    Ticket {
        text: "the api returns 502".into(),
        max_steps,
    }
}

async fn run(server: &Server, max_steps: u32) -> (Result<Verdict, Aborted>, oncall::Workflow) {
    let wf = oncall::Workflow::new((), Desk::default()).with_model(Arc::new(server.model()));
    let outcome = wf.run(ticket(max_steps)).await.map(|done| done.output);
    (outcome, wf)
}

fn responder_turn(t: &Transcript) -> &TurnRecord {
    t.turns()
        .map(|(_, turn)| turn)
        .find(|turn| turn.agent == "responder")
        .expect("the responder's turn is recorded")
}

fn loop_error(aborted: &Aborted) -> ModelError {
    match &responder_turn(&aborted.transcript).model_calls[0].outcome {
        ModelOutcome::Failed { error } => error.clone(),
        other => panic!("expected a failed loop, got {other:?}"),
    }
}

/// The messages of request `n` the server got.
fn messages(server: &Server, n: usize) -> Vec<Value> {
    server.requests()[n].body["messages"]
        .as_array()
        .expect("messages")
        .clone()
}

#[tokio::test]
async fn a_correct_loop_offers_function_tools_and_feeds_back_each_result() {
    let server = Server::start(vec![
        tool_calls(&[LOOKUP_API]),
        tool_calls(&[PAGE_API]),
        verdict(),
    ])
    .await;
    let (outcome, wf) = run(&server, 6).await;
    assert_eq!(
        outcome.expect("completes"),
        Verdict {
            service: "api".into(),
            paged: true
        }
    );
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 1);
    assert_eq!(wf.deps().pages.load(Ordering::SeqCst), 1);

    let first = &server.requests()[0].body;
    let tools = first["tools"].as_array().expect("tools are offered");
    assert_eq!(tools.len(), 2, "only the tools handed to the loop");
    let published = oncall::Workflow::mcp_tools();
    for (tool, name) in tools.iter().zip(["lookup_service", "page_oncall"]) {
        let mcp = published.iter().find(|t| t.name == name).unwrap();
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["function"]["name"], name);
        assert_eq!(tool["function"]["description"], mcp.description.as_str());
        assert_eq!(tool["function"]["parameters"], mcp.input_schema);
    }
    assert_eq!(first["response_format"]["json_schema"]["name"], "Verdict");

    let second = messages(&server, 1);
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(second[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(
        second[2]["tool_calls"][0]["function"]["name"],
        "lookup_service"
    );
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "c1");
    assert_eq!(second[3]["content"], r#"["502 from upstream"]"#);
    let third = messages(&server, 2);
    assert_eq!(third[5]["content"], r#""page-api-1""#);
}

#[tokio::test]
async fn a_call_to_a_tool_not_offered_is_refused_and_recorded_and_never_made() {
    let server = Server::start(vec![
        tool_calls(&[("x", "lookup_owner", r#"{"name":"api"}"#)]),
        verdict(),
    ])
    .await;
    let (outcome, wf) = run(&server, 6).await;
    outcome.expect("the model recovers");
    assert_eq!(wf.deps().owners.load(Ordering::SeqCst), 0, "never called");
    let refusal = &messages(&server, 1)[3];
    assert_eq!(refusal["role"], "tool");
    assert_eq!(refusal["tool_call_id"], "x");
    assert!(
        refusal["content"]
            .as_str()
            .unwrap()
            .starts_with("Refused (tool not offered)"),
        "{refusal}"
    );
}

#[tokio::test]
async fn malformed_arguments_are_refused_with_the_errors_fed_back() {
    let server = Server::start(vec![
        tool_calls(&[("x", "lookup_service", "{name: api")]),
        tool_calls(&[("y", "lookup_service", r#"{"name": 7}"#)]),
        tool_calls(&[("z", "lookup_service", r#"{"service": "api"}"#)]),
    ])
    .await;
    let (outcome, wf) = run(&server, 6).await;
    let aborted = outcome.unwrap_err();
    assert!(
        matches!(aborted.error, RunError::AgentFailed { .. }),
        "{}",
        aborted.error
    );
    assert_eq!(loop_error(&aborted).kind, ModelErrorKind::RetriesExhausted);
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 0, "never called");
    let fed = messages(&server, 1)[3]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(fed.contains("are not JSON"), "{fed}");
    let fed = messages(&server, 2)[5]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(fed.contains("do not match its input schema"), "{fed}");
    let steps = &responder_turn(&aborted.transcript).model_calls[0].attempts;
    assert_eq!(steps.len(), 3);
    assert!(steps.iter().all(|s| s.answers[0].call.is_none()));
}

#[tokio::test]
async fn a_call_past_the_step_limit_is_not_made_and_the_loop_ends_typed() {
    let server = Server::start(vec![
        tool_calls(&[LOOKUP_API]),
        tool_calls(&[("c3", "lookup_service", r#"{"name":"db"}"#)]),
    ])
    .await;
    let (outcome, wf) = run(&server, 2).await;
    let aborted = outcome.unwrap_err();
    assert_eq!(loop_error(&aborted).kind, ModelErrorKind::StepLimit);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        wf.deps().lookups.load(Ordering::SeqCst),
        1,
        "the call asked at the last step was not made"
    );
}

#[tokio::test]
async fn a_tool_that_fails_fast_ends_the_loop_and_the_model_is_not_asked_again() {
    let server = Server::start(vec![
        tool_calls(&[("g", "lookup_service", r#"{"name":"ghost"}"#), PAGE_API]),
        verdict(),
    ])
    .await;
    let (outcome, wf) = run(&server, 6).await;
    let aborted = outcome.unwrap_err();
    assert!(
        matches!(aborted.error, RunError::ToolFailed { .. }),
        "{}",
        aborted.error
    );
    assert_eq!(loop_error(&aborted).kind, ModelErrorKind::ToolFailed);
    assert_eq!(server.requests().len(), 1);
    assert_eq!(wf.deps().pages.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn two_calls_in_one_reply_are_both_made_and_answered_in_order() {
    let server = Server::start(vec![tool_calls(&[LOOKUP_API, PAGE_API]), verdict()]).await;
    let (outcome, wf) = run(&server, 6).await;
    outcome.expect("completes");
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 1);
    assert_eq!(wf.deps().pages.load(Ordering::SeqCst), 1);
    let second = messages(&server, 1);
    assert_eq!(second[2]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(second[3]["tool_call_id"], "c1");
    assert_eq!(second[4]["tool_call_id"], "c2");
}

#[tokio::test]
async fn a_loop_killed_mid_turn_resumes_without_repeating_a_journaled_call_and_replays() {
    use workflow_core::ledger::{Ledger, MemoryLedger};
    let ledger = Arc::new(MemoryLedger::new());
    let first = Server::start(vec![tool_calls(&[LOOKUP_API]), tool_calls(&[PAGE_API])]).await;
    let hanging = Desk {
        hang: true,
        ..Desk::default()
    };
    let wf = oncall::Workflow::new((), hanging)
        .with_ledger(ledger.clone())
        .with_model(Arc::new(first.model()));
    let cut = tokio::time::timeout(Duration::from_millis(300), wf.run(ticket(6))).await;
    assert!(cut.is_err(), "the run hangs on the page");
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 1);
    let run = ledger.runs().unwrap()[0];

    let again = Server::start(vec![
        tool_calls(&[LOOKUP_API]),
        tool_calls(&[PAGE_API]),
        verdict(),
    ])
    .await;
    let wf = oncall::Workflow::new((), Desk::default())
        .with_ledger(ledger.clone())
        .with_model(Arc::new(again.model()));
    let done = wf.resume(run).await.expect("resumes");
    assert!(done.output.paged);
    assert_eq!(
        wf.deps().lookups.load(Ordering::SeqCst),
        0,
        "the journaled lookup is served, not made again"
    );
    assert_eq!(wf.deps().pages.load(Ordering::SeqCst), 1);

    let records = ledger.records(run).unwrap();
    let wf = oncall::Workflow::new((), Desk::default());
    let report = wf.replay(&records).await.expect("replays");
    assert!(report.is_identical(), "{report}");
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 0);
    assert_eq!(wf.deps().pages.load(Ordering::SeqCst), 0);
}
