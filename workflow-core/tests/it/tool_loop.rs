//! A model in the loop (`cx.tool_loop`): it is offered only the tools the
//! agent hands it, every call it asks for passes the offer, the input
//! schema and then the path of `cx.call` (scope, budget, journal, fail
//! fast, record); its steps are bounded; the whole loop is recorded and
//! replays from the record.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use workflow_core::llm::{
    ModelErrorKind, ModelOutcome, ModelReply, Role, ScriptedModel, ToolCallRequest,
};
use workflow_core::prelude::*;
use workflow_core::{RunError, Transcript, TurnRecord};

/// What the responder is asked.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ticket {
    /// In the user's words.
    pub text: String,
    /// The loop's step limit (0: the agent's declared one).
    pub max_steps: u32,
}

/// The responder's answer: what the model finally says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
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

/// The page sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Paged {
    /// Its id.
    pub id: String,
}
impl FailFast for Paged {}

/// The tools' world: counts what they did; with `hang`, a page never
/// returns (the process dies while it waits).
#[derive(Default)]
pub struct Desk {
    pub lookups: AtomicU32,
    pub owners: AtomicU32,
    pub pages: AtomicU32,
    pub hang: bool,
}

#[workflow(entry = responder, output = Answer, deps = Desk)]
pub mod oncall {
    use super::*;

    /// Responder -> fixer (never taken here: it makes `restart` a tool of
    /// another agent).
    #[handoff]
    pub struct FixTask {
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
    }

    /// Looks up a service's recent errors (none known: an empty list).
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
    async fn page_oncall(page: Page, desk: &Desk) -> Result<Paged, ToolError> {
        if desk.hang {
            std::future::pending::<()>().await;
        }
        let n = desk.pages.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Paged {
            id: format!("page-{}-{n}", page.service),
        })
    }

    /// Restarts a service.
    #[tool(needs = Fix, effect = write)]
    async fn restart(page: Page, _desk: &Desk) -> Result<Paged, ToolError> {
        Ok(Paged { id: page.service })
    }

    #[agent(
        owns = [Page],
        tools = [lookup_service, lookup_owner, page_oncall],
        to = [fixer, END],
        max_steps = 4
    )]
    async fn responder(
        ticket: Ticket,
        cx: responder::Context<'_>,
    ) -> Result<responder::Next, Reject> {
        let prompt = Prompt::new(ticket.text).system("Find the failing service and page it.");
        let mut asked = cx.tool_loop(prompt, (tools::lookup_service, tools::page_oncall));
        // 0: the agent's declared limit.
        if ticket.max_steps > 0 {
            asked = asked.max_steps(ticket.max_steps);
        }
        let answer: Answer = asked.await?;
        Ok(responder::Next::End(answer))
    }

    #[agent(owns = [Fix], tools = [restart], to = [END])]
    async fn fixer(_task: FixTask, _cx: fixer::Context<'_>) -> Result<fixer::Next, Reject> {
        Ok(fixer::Next::End(Answer {
            service: String::new(),
            paged: false,
        }))
    }
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest::new(id, name, arguments.to_string())
}

fn lookup(id: &str, service: &str) -> ToolCallRequest {
    call(id, "lookup_service", json!({"name": service}))
}

fn page(id: &str) -> ToolCallRequest {
    call(id, "page_oncall", json!({"service": "api"}))
}

fn answer() -> String {
    json!({"service": "api", "paged": true}).to_string()
}

fn ticket(max_steps: u32) -> Ticket {
    Ticket {
        text: "the api returns 502".into(),
        max_steps,
    }
}

/// Runs a ticket against `model`: the outcome, and the tools' world.
async fn run(
    model: &Arc<ScriptedModel>,
    max_steps: u32,
) -> (Result<Answer, Aborted>, oncall::Workflow) {
    let wf = oncall::Workflow::new((), Desk::default()).with_model(model.clone());
    let outcome = wf.run(ticket(max_steps)).await.map(|done| done.output);
    (outcome, wf)
}

fn responder_turn(t: &Transcript) -> &TurnRecord {
    t.turns()
        .map(|(_, turn)| turn)
        .find(|turn| turn.agent == "responder")
        .expect("the responder's turn is recorded")
}

/// The failed loop's error, from the record of the failed turn.
fn loop_error(aborted: &Aborted) -> workflow_core::llm::ModelError {
    assert!(
        matches!(
            aborted.error,
            RunError::AgentFailed {
                agent: "responder",
                ..
            } | RunError::ToolFailed { .. }
        ),
        "{}",
        aborted.error
    );
    match &responder_turn(&aborted.transcript).model_calls[0].outcome {
        ModelOutcome::Failed { error } => error.clone(),
        other => panic!("expected a failed loop, got {other:?}"),
    }
}

#[tokio::test]
async fn the_model_looks_up_then_pages_then_answers_and_the_whole_loop_is_recorded() {
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([lookup("c1", "api")])
            .call_tools([page("c2")])
            .reply(answer()),
    );
    let (outcome, desk) = run(&model, 6).await;
    let done = outcome.expect("completes");
    assert_eq!(
        done,
        Answer {
            service: "api".into(),
            paged: true
        }
    );
    assert_eq!(desk.deps().lookups.load(Ordering::SeqCst), 1);
    assert_eq!(desk.deps().pages.load(Ordering::SeqCst), 1);

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    // Offered: exactly the two tools handed over, as published.
    let published = oncall::Workflow::mcp_tools();
    let offered: Vec<_> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["lookup_service", "page_oncall"]);
    for tool in &requests[0].tools {
        let mcp = published.iter().find(|m| m.name == tool.name).unwrap();
        assert_eq!(tool.description, mcp.description);
        assert_eq!(tool.input_schema, mcp.input_schema);
    }
    assert_eq!(
        requests[0].tools[0].description,
        "Looks up a service's recent errors (none known: an empty list)."
    );
    // The second step carries the call and its result.
    let second = &requests[1].messages;
    let roles: Vec<_> = second.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::System, Role::User, Role::Assistant, Role::Tool]
    );
    assert_eq!(second[2].tool_calls, [lookup("c1", "api")]);
    assert_eq!(second[3].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(second[3].content, r#"["502 from upstream"]"#);
}

#[tokio::test]
async fn the_record_holds_the_tools_offered_every_step_and_every_call() {
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([lookup("c1", "api")])
            .call_tools([page("c2")])
            .reply(answer()),
    );
    let wf = oncall::Workflow::new((), Desk::default()).with_model(model.clone());
    let done = wf.run(ticket(6)).await.expect("completes");
    let turn = responder_turn(&done.transcript);
    assert_eq!(turn.model_calls.len(), 1, "one loop, one record");
    let record = &turn.model_calls[0];
    assert_eq!(record.tools, ["lookup_service", "page_oncall"]);
    assert_eq!(record.schema.as_deref(), Some("Answer"));
    assert_eq!(record.attempts.len(), 3, "three model steps");
    let requests = model.requests();
    for (step, request) in record.attempts.iter().zip(&requests) {
        assert_eq!(step.request_digest, request.digest());
    }
    assert_eq!(record.attempts[0].tool_calls, [lookup("c1", "api")]);
    assert_eq!(record.attempts[0].answers[0].call, Some(0));
    assert_eq!(record.attempts[1].answers[0].call, Some(1));
    assert!(record.attempts[2].tool_calls.is_empty());
    assert!(matches!(record.outcome, ModelOutcome::Ok { .. }));
    // The calls themselves, with arguments and results, as `cx.call` records them.
    let calls: Vec<_> = turn
        .tool_calls
        .iter()
        .map(|c| (c.index, c.tool.to_string(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            (0, "lookup_service".into(), r#"{"name":"api"}"#.into()),
            (1, "page_oncall".into(), r#"{"service":"api"}"#.into()),
        ]
    );
    let usage: u64 = record.attempts.iter().map(|a| a.usage.total_tokens()).sum();
    assert_eq!(record.usage.total_tokens(), usage);
    assert!(turn.usage.total_tokens() >= usage, "every step is charged");
}

#[tokio::test]
async fn a_tool_not_offered_or_unknown_is_refused_fed_back_and_never_called() {
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([
                call("c1", "lookup_owner", json!({"name": "api"})),
                call("c2", "restart", json!({"service": "api"})),
                call("c3", "drop_database", json!({})),
            ])
            .reply(answer()),
    );
    let wf = oncall::Workflow::new((), Desk::default()).with_model(model.clone());
    let done = wf.run(ticket(6)).await;
    // Three refusals in one step are three rejected requests: past the two
    // repairs allowed.
    let aborted = done.unwrap_err();
    let error = loop_error(&aborted);
    assert_eq!(error.kind, ModelErrorKind::RetriesExhausted, "{error}");
    assert_eq!(
        wf.deps().owners.load(Ordering::SeqCst),
        0,
        "granted, not offered: not called"
    );
    let turn = responder_turn(&aborted.transcript);
    assert!(turn.tool_calls.is_empty(), "no call was made");
    let answers = &turn.model_calls[0].attempts[0].answers;
    let kinds: Vec<_> = answers
        .iter()
        .map(|a| a.error.as_ref().unwrap().kind)
        .collect();
    assert_eq!(kinds, [ModelErrorKind::ToolNotOffered; 3]);
    let messages: Vec<_> = answers
        .iter()
        .map(|a| a.error.as_ref().unwrap().message.clone())
        .collect();
    assert!(
        messages[0].contains("`lookup_owner` is not offered"),
        "{}",
        messages[0]
    );
    assert!(
        messages[1].contains("`restart` is not offered"),
        "{}",
        messages[1]
    );
    assert!(
        messages[2].contains("there is no tool `drop_database`"),
        "{}",
        messages[2]
    );
}

#[tokio::test]
async fn a_refused_request_is_fed_back_and_the_model_can_recover() {
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([call("c1", "lookup_owner", json!({"name": "api"}))])
            .call_tools([lookup("c2", "api")])
            .reply(answer()),
    );
    let (outcome, desk) = run(&model, 6).await;
    outcome.expect("completes");
    assert_eq!(desk.deps().owners.load(Ordering::SeqCst), 0);
    assert_eq!(desk.deps().lookups.load(Ordering::SeqCst), 1);
    let second = &model.requests()[1].messages;
    let refusal = second.last().unwrap();
    assert_eq!(refusal.role, Role::Tool);
    assert_eq!(refusal.tool_call_id.as_deref(), Some("c1"));
    assert!(
        refusal.content.starts_with("Refused (tool not offered): tool `lookup_owner` is not offered to you; the tools offered: `lookup_service`, `page_oncall`"),
        "{}",
        refusal.content
    );
}

#[tokio::test]
async fn arguments_that_are_not_json_or_miss_the_schema_are_refused_with_the_errors() {
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([
                ToolCallRequest::new("c1", "lookup_service", "{name: api"),
                call("c2", "lookup_service", json!({"name": 7})),
            ])
            .call_tools([call(
                "c3",
                "lookup_service",
                json!({"name": "api", "extra": 1}),
            )])
            .reply(answer()),
    );
    let (outcome, desk) = run(&model, 6).await;
    let aborted = outcome.unwrap_err();
    let error = loop_error(&aborted);
    assert_eq!(error.kind, ModelErrorKind::RetriesExhausted, "{error}");
    assert_eq!(
        desk.deps().lookups.load(Ordering::SeqCst),
        0,
        "the tool never ran"
    );
    let second = &model.requests()[1].messages;
    let n = second.len();
    assert!(
        second[n - 2].content.contains("are not JSON"),
        "{}",
        second[n - 2].content
    );
    assert!(
        second[n - 1]
            .content
            .contains("do not match its input schema")
            && second[n - 1].content.contains("\n- "),
        "{}",
        second[n - 1].content
    );
    let steps = &responder_turn(&aborted.transcript).model_calls[0].attempts;
    assert_eq!(
        steps[1].answers[0].error.as_ref().unwrap().kind,
        ModelErrorKind::ToolArguments
    );
}

#[tokio::test]
async fn a_model_that_keeps_calling_stops_at_its_step_limit_with_a_typed_error() {
    let mut script = ScriptedModel::new();
    for i in 0..10 {
        script = script.call_tools([lookup(&format!("c{i}"), "api")]);
    }
    let model = Arc::new(script);
    let (outcome, desk) = run(&model, 3).await;
    let aborted = outcome.unwrap_err();
    let error = loop_error(&aborted);
    assert_eq!(error.kind, ModelErrorKind::StepLimit, "{error}");
    assert_eq!(model.requests().len(), 3, "three steps, no more");
    assert_eq!(
        desk.deps().lookups.load(Ordering::SeqCst),
        2,
        "the calls asked at the last step are not made"
    );
    let record = &responder_turn(&aborted.transcript).model_calls[0];
    assert_eq!(record.attempts.len(), 3);
    assert_eq!(
        record.attempts[2].error.as_ref().map(|e| e.kind),
        Some(ModelErrorKind::StepLimit)
    );
}

#[tokio::test]
async fn without_a_limit_on_the_call_the_agents_declared_max_steps_holds() {
    let mut script = ScriptedModel::new();
    for i in 0..10 {
        script = script.call_tools([lookup(&format!("c{i}"), "api")]);
    }
    let model = Arc::new(script);
    let (outcome, desk) = run(&model, 0).await;
    let aborted = outcome.unwrap_err();
    assert_eq!(loop_error(&aborted).kind, ModelErrorKind::StepLimit);
    assert_eq!(model.requests().len(), 4, "`#[agent(max_steps = 4)]`");
    assert_eq!(desk.deps().lookups.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn an_empty_result_fails_fast_and_ends_the_loop_whatever_the_model_would_say() {
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([lookup("c1", "ghost"), page("c2")])
            .reply(answer()),
    );
    let (outcome, desk) = run(&model, 6).await;
    let aborted = outcome.unwrap_err();
    assert!(
        matches!(aborted.error, RunError::ToolFailed { .. }),
        "{}",
        aborted.error
    );
    let error = loop_error(&aborted);
    assert_eq!(error.kind, ModelErrorKind::ToolFailed, "{error}");
    assert_eq!(model.requests().len(), 1, "the model is not asked again");
    assert_eq!(
        desk.deps().pages.load(Ordering::SeqCst),
        0,
        "nothing acts after the failure"
    );
    let turn = responder_turn(&aborted.transcript);
    assert_eq!(turn.tool_calls.len(), 1, "the failed call is recorded");
    let step = &turn.model_calls[0].attempts[0];
    assert_eq!(step.answers.len(), 1);
    assert_eq!(step.answers[0].call, Some(0));
    assert_eq!(
        step.answers[0].error.as_ref().unwrap().kind,
        ModelErrorKind::ToolFailed
    );
}

#[tokio::test]
async fn two_calls_in_one_reply_are_both_made_in_order_and_both_answered() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply_with(ModelReply::calls([lookup("a", "api"), page("b")]))
            .reply(answer()),
    );
    let (outcome, desk) = run(&model, 6).await;
    outcome.expect("completes");
    assert_eq!(desk.deps().lookups.load(Ordering::SeqCst), 1);
    assert_eq!(desk.deps().pages.load(Ordering::SeqCst), 1);
    let second = &model.requests()[1].messages;
    let ids: Vec<_> = second
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(second.last().unwrap().content, r#"{"id":"page-api-1"}"#);
}

#[tokio::test]
async fn the_tool_call_budget_holds_for_calls_the_model_asks_for() {
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([lookup("a", "api"), page("b")])
            .reply(answer()),
    );
    let wf = oncall::Workflow::new((), Desk::default())
        .with_model(model.clone())
        .with_budget(Budget {
            tool_calls: Some(1),
            ..Budget::default()
        });
    let aborted = wf.run(ticket(6)).await.unwrap_err();
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 1);
    assert_eq!(
        wf.deps().pages.load(Ordering::SeqCst),
        0,
        "over budget: not made"
    );
    assert_eq!(loop_error(&aborted).kind, ModelErrorKind::ToolFailed);
}

#[tokio::test]
async fn a_loop_killed_mid_turn_resumes_without_repeating_a_journaled_call_and_replays_identically()
{
    use workflow_core::ledger::{Ledger, MemoryLedger};
    let script = || {
        Arc::new(
            ScriptedModel::new()
                .call_tools([lookup("c1", "api")])
                .call_tools([page("c2")])
                .reply(answer()),
        )
    };
    let ledger = Arc::new(MemoryLedger::new());
    let hanging = Desk {
        hang: true,
        ..Desk::default()
    };
    let wf = oncall::Workflow::new((), hanging)
        .with_ledger(ledger.clone())
        .with_model(script());
    let cut = tokio::time::timeout(Duration::from_millis(100), wf.run(ticket(6))).await;
    assert!(cut.is_err(), "the run hangs on the page");
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 1);
    let run = ledger.runs().unwrap()[0];

    // Another process resumes it; the model is asked again.
    let wf = oncall::Workflow::new((), Desk::default())
        .with_ledger(ledger.clone())
        .with_model(script());
    let done = wf.resume(run).await.expect("resumes");
    assert_eq!(
        done.output,
        Answer {
            service: "api".into(),
            paged: true
        }
    );
    assert_eq!(
        wf.deps().lookups.load(Ordering::SeqCst),
        0,
        "the journaled lookup was served, not made again"
    );
    assert_eq!(wf.deps().pages.load(Ordering::SeqCst), 1);

    // The record replays: model replies and tool results from the record.
    let records = ledger.records(run).unwrap();
    let wf = oncall::Workflow::new((), Desk::default());
    let report = wf.replay(&records).await.expect("replays");
    assert!(report.is_identical(), "{report}");
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 0);
    assert_eq!(wf.deps().pages.load(Ordering::SeqCst), 0);
}

/// The same workflow, changed: its responder offers one tool less.
pub mod changed {
    use super::*;

    #[workflow(entry = responder, output = Answer, deps = Desk)]
    pub mod oncall {
        use super::*;

        /// Looks up a service's recent errors (none known: an empty list).
        #[tool(effect = read)]
        async fn lookup_service(
            query: ServiceQuery,
            desk: &Desk,
        ) -> Result<Vec<String>, ToolError> {
            desk.lookups.fetch_add(1, Ordering::SeqCst);
            Ok(vec![query.name])
        }

        #[agent(tools = [lookup_service], to = [END])]
        async fn responder(
            ticket: Ticket,
            cx: responder::Context<'_>,
        ) -> Result<responder::Next, Reject> {
            let prompt = Prompt::new(ticket.text).system("Find the failing service and page it.");
            let answer: Answer = cx
                .tool_loop(prompt, (tools::lookup_service,))
                .max_steps(ticket.max_steps)
                .await?;
            Ok(responder::Next::End(answer))
        }
    }
}

#[tokio::test]
async fn a_replay_whose_loop_offers_other_tools_reports_the_divergence_and_calls_nothing() {
    use workflow_core::ledger::{Ledger, MemoryLedger};
    let ledger = Arc::new(MemoryLedger::new());
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([lookup("c1", "api")])
            .reply(answer()),
    );
    let wf = oncall::Workflow::new((), Desk::default())
        .with_ledger(ledger.clone())
        .with_model(model);
    let done = wf.run(ticket(6)).await.expect("completes");
    let records = ledger.records(done.transcript.run_id()).unwrap();

    let wf = changed::oncall::Workflow::new((), Desk::default());
    let report = wf.replay(&records).await.expect("replays");
    let divergence = report.divergence.as_ref().expect("it diverges");
    assert_eq!(divergence.seq, 1, "at the responder's transfer: {report}");
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 0, "no tool ran");
}

/// A loop whose tool escalates its failures.
pub mod escalating {
    use super::*;

    #[workflow(entry = responder, output = Answer, deps = Desk)]
    pub mod desk {
        use super::*;

        /// The status page (down: a 503, for a person to look at).
        #[tool(effect = read, then = escalate)]
        async fn status_page(query: ServiceQuery, desk: &Desk) -> Result<String, ToolError> {
            desk.lookups.fetch_add(1, Ordering::SeqCst);
            Err(ToolError::status("status_page", 503, query.name))
        }

        #[agent(tools = [status_page], to = [END])]
        async fn responder(
            ticket: Ticket,
            cx: responder::Context<'_>,
        ) -> Result<responder::Next, Reject> {
            let answer: Answer = cx
                .tool_loop(Prompt::new(ticket.text), (tools::status_page,))
                .await?;
            Ok(responder::Next::End(answer))
        }
    }
}

#[tokio::test]
async fn a_failure_under_escalate_is_fed_back_the_loop_goes_on_and_the_run_is_suspended() {
    use workflow_core::{Escalation, RunError};
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([call("s", "status_page", json!({"name": "api"}))])
            .reply(answer()),
    );
    let wf = escalating::desk::Workflow::new((), Desk::default()).with_model(model.clone());
    let aborted = wf.run(ticket(0)).await.unwrap_err();
    assert!(
        matches!(
            &aborted.error,
            RunError::Suspended {
                reason: Escalation::ToolFailed { .. },
                ..
            }
        ),
        "{}",
        aborted.error
    );
    assert_eq!(model.requests().len(), 2, "the model was told and answered");
    let told = model.requests()[1].messages.last().unwrap().content.clone();
    assert!(
        told.starts_with("Refused (tool failed): the call failed"),
        "{told}"
    );
}

/// A loop whose tool takes a number: offered wrapped as MCP publishes a
/// non-object input (`{"value": n}`), its arguments unwrapped before the
/// checks of `cx.call`.
pub mod scalar {
    use super::*;

    #[workflow(entry = responder, output = Answer, deps = Desk)]
    pub mod desk {
        use super::*;

        /// The error count of the last `minutes` minutes.
        #[tool(effect = read)]
        async fn errors_in(minutes: u32, desk: &Desk) -> Result<u32, ToolError> {
            desk.lookups.fetch_add(1, Ordering::SeqCst);
            Ok(minutes * 2)
        }

        #[agent(tools = [errors_in], to = [END])]
        async fn responder(
            ticket: Ticket,
            cx: responder::Context<'_>,
        ) -> Result<responder::Next, Reject> {
            let answer: Answer = cx
                .tool_loop(Prompt::new(ticket.text), (tools::errors_in,))
                .await?;
            Ok(responder::Next::End(answer))
        }
    }
}

#[tokio::test]
async fn a_tool_with_a_non_object_input_is_offered_wrapped_and_its_arguments_unwrapped() {
    let model = Arc::new(
        ScriptedModel::new()
            .call_tools([call("bare", "errors_in", json!(5))])
            .call_tools([call("w", "errors_in", json!({"value": 5}))])
            .reply(answer()),
    );
    let wf = scalar::desk::Workflow::new((), Desk::default()).with_model(model.clone());
    let done = wf.run(ticket(0)).await.expect("completes");
    assert_eq!(done.output.service, "api");
    // Offered as an object with the one property `value`.
    let offered = &model.requests()[0].tools[0];
    assert_eq!(offered.input_schema["type"], "object");
    assert!(offered.input_schema["properties"]["value"].is_object());
    // The bare number was refused and the model told; the wrapped one ran.
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 1);
    let told = model.requests()[1].messages.last().unwrap().content.clone();
    assert!(told.contains("`value`"), "{told}");
    let result = model.requests()[2].messages.last().unwrap().content.clone();
    assert!(result.contains("10"), "{result}");
}
