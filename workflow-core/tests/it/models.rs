//! Agents that call models: the payload's schema is the response format,
//! a bad reply never crosses the seam (repaired with its errors fed back,
//! or the turn fails with a typed error), usage is charged to the budget,
//! every call is recorded with its turn, and a recorded run replays without
//! the model.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use workflow_core::llm::{
    Model, ModelErrorKind, ModelFuture, ModelOutcome, ModelReply, ModelRequest, RecordedModel,
    Role, ScriptedModel,
};
use workflow_core::prelude::*;
use workflow_core::{RunError, SchemaSet, Transcript, TurnRecord};

/// What a user reports.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ticket {
    /// In their words.
    pub text: String,
    /// What the triager does besides generating (`check`: a rule on the
    /// value; `explicit`: asks a model passed in).
    pub mode: String,
}

/// The end of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Fixed {
    /// The service fixed.
    pub service: String,
    /// How bad it was.
    pub severity: u8,
}

#[workflow(entry = triager, output = Fixed)]
pub mod desk {
    use super::*;

    /// Triager -> fixer: what to fix; written by a model.
    #[handoff]
    pub struct FixTask {
        /// Fix.
        #[operation]
        pub op: Operation,
        /// Under the fixer's authority.
        #[authority]
        pub scope: Scope<authority::Fix>,
        /// What the triager relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What it left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// The service to fix.
        pub service: String,
        /// 1 (low) to 4 (outage).
        pub severity: u8,
    }

    #[agent(owns = [Triage], to = [fixer], timeout_ms = 300)]
    async fn triager(ticket: Ticket, cx: triager::Context<'_>) -> Result<triager::Next, Reject> {
        let prompt = Prompt::new(format!("Triage this ticket: {}", ticket.text))
            .system("You triage tickets into fix tasks.");
        let task: FixTask = match ticket.mode.as_str() {
            "check" => {
                cx.generate(prompt)
                    .check(|t: &FixTask| {
                        (1..=4)
                            .contains(&t.severity)
                            .then_some(())
                            .ok_or_else(|| format!("severity {} is not within 1..=4", t.severity))
                    })
                    .await?
            }
            "explicit" => {
                let model = ScriptedModel::named("local").reply(valid_task());
                cx.generate_with(&model, prompt).await?
            }
            "no-repairs" => cx.generate(prompt).repairs(0).await?,
            _ => cx.generate(prompt).await?,
        };
        Ok(triager::Next::Fixer(task))
    }

    #[agent(owns = [Fix], to = [END])]
    async fn fixer(task: FixTask, _cx: fixer::Context<'_>) -> Result<fixer::Next, Reject> {
        Ok(fixer::Next::End(Fixed {
            service: task.service,
            severity: task.severity,
        }))
    }
}

fn valid() -> serde_json::Value {
    json!({
        "op": {"name": "restart", "detail": "restart the api"},
        "scope": {"authority": "Fix", "expires": {"at_hop": 2}},
        "evidence": [],
        "open": [],
        "stop": [{"kind": "hop_reached", "hop": 10}],
        "service": "api",
        "severity": 3
    })
}

fn valid_task() -> String {
    valid().to_string()
}

fn without(field: &str) -> String {
    let mut v = valid();
    v.as_object_mut().unwrap().remove(field);
    v.to_string()
}

fn with(field: &str, value: serde_json::Value) -> String {
    let mut v = valid();
    v[field] = value;
    v.to_string()
}

fn ticket(mode: &str) -> Ticket {
    Ticket {
        text: "the api returns 502".into(),
        mode: mode.into(),
    }
}

fn desk(model: &Arc<ScriptedModel>) -> desk::Workflow {
    desk::Workflow::new((), ()).with_model(model.clone())
}

/// The triager's turn: recorded with the transfer it produced (or the
/// failed turn's record).
fn triager_turn(t: &Transcript) -> &TurnRecord {
    t.turns()
        .map(|(_, turn)| turn)
        .find(|turn| turn.agent == "triager")
        .expect("the triager's turn is recorded")
}

fn fixed() -> Fixed {
    Fixed {
        service: "api".into(),
        severity: 3,
    }
}

#[tokio::test]
async fn a_valid_reply_crosses_with_the_published_schema_as_response_format() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply_with(ModelReply::text(valid_task()).with_usage(Usage::tokens(120, 40))),
    );
    let done = desk(&model).run(ticket("plain")).await.expect("completes");
    assert_eq!(done.output, fixed());

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let format = requests[0].response_format.as_ref().expect("a format");
    assert_eq!(format.name, "FixTask");
    assert!(!format.strict);
    // Exactly the schema the workflow publishes for the handoff.
    assert_eq!(
        Some(&format.schema),
        SchemaSet::of::<desk::Spec>().get("desk.FixTask")
    );
    assert_eq!(
        requests[0]
            .messages
            .iter()
            .map(|m| m.role)
            .collect::<Vec<_>>(),
        [Role::System, Role::User]
    );

    let turn = triager_turn(&done.transcript);
    assert_eq!(turn.usage, Usage::tokens(120, 40), "charged to the turn");
    let call = &turn.model_calls[0];
    assert_eq!(call.model, "scripted");
    assert_eq!(call.schema.as_deref(), Some("FixTask"));
    assert_eq!(call.request_digest, requests[0].digest());
    assert_eq!(call.attempts.len(), 1);
    assert_eq!(
        call.attempts[0].reply.as_deref(),
        Some(valid_task().as_str())
    );
    assert!(call.attempts[0].error.is_none());
    assert_eq!(call.usage, Usage::tokens(120, 40));
    assert!(matches!(call.outcome, ModelOutcome::Ok { .. }));
}

#[tokio::test]
async fn a_reply_missing_a_contract_part_is_repaired_with_the_errors_fed_back() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(without("evidence"))
            .reply(valid_task()),
    );
    let done = desk(&model).run(ticket("plain")).await.expect("repaired");
    assert_eq!(done.output, fixed());

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let repair = &requests[1].messages;
    assert_eq!(repair.len(), 4, "the prompt, the bad reply, the errors");
    assert_eq!(repair[2].role, Role::Assistant);
    assert_eq!(repair[2].content, without("evidence"));
    assert_eq!(repair[3].role, Role::User);
    assert!(
        repair[3].content.contains("schema mismatch")
            && repair[3]
                .content
                .contains("\"evidence\" is a required property"),
        "{}",
        repair[3].content
    );

    let call = &triager_turn(&done.transcript).model_calls[0];
    assert_eq!(call.attempts.len(), 2);
    let first = call.attempts[0].error.as_ref().expect("rejected");
    assert_eq!(first.kind, ModelErrorKind::SchemaMismatch);
    assert_eq!(call.attempts[1].request_digest, requests[1].digest());
    // Both attempts are charged.
    let both = call.attempts[0].usage.total_tokens() + call.attempts[1].usage.total_tokens();
    assert!(both > 0);
    assert_eq!(triager_turn(&done.transcript).usage.total_tokens(), both);
}

#[tokio::test]
async fn an_unknown_field_every_time_fails_the_turn_and_the_run_records_it() {
    let bad = with("priority", json!("p1"));
    let model = Arc::new(
        ScriptedModel::new()
            .reply(bad.clone())
            .reply(bad.clone())
            .reply(bad.clone())
            .reply(valid_task()),
    );
    let aborted = desk(&model).run(ticket("plain")).await.unwrap_err();
    assert_eq!(model.requests().len(), 3, "1 + DEFAULT_REPAIRS attempts");
    assert_eq!(model.remaining(), 1, "no fourth attempt");
    match &aborted.error {
        RunError::AgentFailed { agent, error } => {
            assert_eq!(*agent, "triager");
            assert!(error.reason().contains("retries exhausted"), "{error}");
            assert!(error.reason().contains("priority"), "{error}");
        }
        other => panic!("expected the triager's failure, got {other}"),
    }
    // Nothing reached the fixer: the last record is the failed turn.
    let t = &aborted.transcript;
    assert!(matches!(
        t.receipt(t.len() - 1),
        Some(Receipt::TurnFailed { .. })
    ));
    let call = &triager_turn(t).model_calls[0];
    assert_eq!(call.attempts.len(), 3);
    match &call.outcome {
        ModelOutcome::Failed { error } => {
            assert_eq!(error.kind, ModelErrorKind::RetriesExhausted);
            assert!(error.errors.iter().any(|e| e.contains("priority")));
        }
        other => panic!("expected a failed outcome, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_json_is_repaired() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply("```json\n{\"op\": ")
            .reply(valid_task()),
    );
    let done = desk(&model).run(ticket("plain")).await.expect("repaired");
    assert_eq!(done.output, fixed());
    let repair = &model.requests()[1].messages[3].content;
    assert!(repair.contains("malformed JSON"), "{repair}");
}

/// `{"severity":1,"severity":3}` is not taken with its last value: the
/// reply is refused as malformed, the key named for the repair; a key
/// twice deeper down, or nesting past the limit, likewise.
#[tokio::test]
async fn a_reply_with_a_key_twice_or_too_deep_is_repaired() {
    let twice = valid_task().replace(r#""severity":3"#, r#""severity":1,"severity":3"#);
    assert!(twice.contains(r#""severity":1,"severity":3"#), "{twice}");
    let deep_twice = valid_task().replace(
        r#""detail":"restart the api""#,
        r#""detail":"restart the api","detail":"x""#,
    );
    let too_deep = with("severity", json!(3)).replace(
        r#""severity":3"#,
        &format!(r#""severity":3,"x":{}{}"#, "[".repeat(100), "]".repeat(100)),
    );
    let cases = [
        (twice, "`severity` twice"),
        (deep_twice, "`detail` twice"),
        (too_deep, "limit of 64 levels"),
    ];
    for (reply, named) in cases {
        let model = Arc::new(ScriptedModel::new().reply(reply).reply(valid_task()));
        let done = desk(&model).run(ticket("plain")).await.expect("repaired");
        assert_eq!(done.output, fixed());
        let repair = &model.requests()[1].messages[3].content;
        assert!(repair.contains(named), "{repair}");
    }
}

#[tokio::test]
async fn a_refusal_ends_the_turn_without_a_repair() {
    let model = Arc::new(
        ScriptedModel::new()
            .refuse("I cannot help with that")
            .reply(valid_task()),
    );
    let aborted = desk(&model).run(ticket("plain")).await.unwrap_err();
    assert_eq!(model.requests().len(), 1);
    assert!(
        aborted.error.to_string().contains("refusal"),
        "{}",
        aborted.error
    );
    let call = &triager_turn(&aborted.transcript).model_calls[0];
    assert_eq!(
        call.attempts[0].refusal.as_deref(),
        Some("I cannot help with that")
    );
}

#[tokio::test]
async fn a_contract_rule_of_the_caller_is_fed_back_like_a_schema_error() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(with("severity", json!(9)))
            .reply(valid_task()),
    );
    let done = desk(&model).run(ticket("check")).await.expect("repaired");
    assert_eq!(done.output.severity, 3);
    let repair = &model.requests()[1].messages[3].content;
    assert!(
        repair.contains("contract rule") && repair.contains("severity 9 is not within 1..=4"),
        "{repair}"
    );
}

#[tokio::test]
async fn without_repairs_the_first_bad_reply_ends_the_call() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(without("stop"))
            .reply(valid_task()),
    );
    let aborted = desk(&model).run(ticket("no-repairs")).await.unwrap_err();
    assert_eq!(model.requests().len(), 1);
    assert!(
        aborted.error.to_string().contains("in 1 attempt;"),
        "{}",
        aborted.error
    );
}

#[tokio::test]
async fn a_budget_used_up_stops_the_repairs_and_the_run() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply_with(ModelReply::text(without("open")).with_usage(Usage::tokens(80, 40)))
            .reply(valid_task()),
    );
    let aborted = desk(&model)
        .with_budget(Budget::default().max_tokens(100))
        .run(ticket("plain"))
        .await
        .unwrap_err();
    assert_eq!(model.requests().len(), 1, "no repair past the budget");
    match &aborted.error {
        // The agent's `?` on the budget error ends the turn: the run stops
        // with the agent's error naming the budget, or (once an overspent
        // turn stops the run whatever its body returned) with the budget's
        // own error. Either way nothing crossed and no repair was asked.
        RunError::AgentFailed { error, .. } => {
            assert!(error.reason().contains("budget exhausted"), "{error}")
        }
        RunError::BudgetExhausted { budget, spent, .. } => {
            assert_eq!((budget.as_ref(), *spent), ("tokens", 120))
        }
        other => panic!("expected the budget to stop the run, got {other}"),
    }
    assert_eq!(
        triager_turn(&aborted.transcript).usage,
        Usage::tokens(80, 40)
    );
}

#[tokio::test]
async fn a_model_passed_in_is_asked_instead_of_the_runs() {
    let run_model = Arc::new(ScriptedModel::new());
    let done = desk(&run_model)
        .run(ticket("explicit"))
        .await
        .expect("completes");
    assert_eq!(done.output, fixed());
    assert!(run_model.requests().is_empty());
    assert_eq!(triager_turn(&done.transcript).model_calls[0].model, "local");
}

#[tokio::test]
async fn without_a_model_the_turn_fails_and_says_how_to_attach_one() {
    let aborted = desk::Workflow::new((), ())
        .run(ticket("plain"))
        .await
        .unwrap_err();
    let message = aborted.error.to_string();
    assert!(
        message.contains("no model") && message.contains("Executor::with_model"),
        "{message}"
    );
}

#[tokio::test]
async fn a_recorded_run_replays_without_the_model() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(with("evidence", json!("none")))
            .reply(valid_task()),
    );
    let first = desk(&model).run(ticket("plain")).await.expect("completes");
    let recorded = Arc::new(RecordedModel::from_transcript(&first.transcript));
    assert_eq!(recorded.remaining(), 2);

    let replay = desk::Workflow::new((), ())
        .with_model(recorded.clone())
        .run(ticket("plain"))
        .await
        .expect("replays");
    assert_eq!(replay.output, first.output);
    assert_eq!(recorded.remaining(), 0);
    let strip = |t: &TurnRecord| {
        let mut t = t.clone();
        for c in &mut t.model_calls {
            c.duration_us = 0;
        }
        t
    };
    assert_eq!(
        strip(triager_turn(&replay.transcript)),
        strip(triager_turn(&first.transcript))
    );

    // A run that asks something else is not served from the record.
    let diverged = desk::Workflow::new((), ())
        .with_model(Arc::new(RecordedModel::from_transcript(&first.transcript)))
        .run(Ticket {
            text: "another ticket".into(),
            mode: "plain".into(),
        })
        .await
        .unwrap_err();
    assert!(
        diverged.error.to_string().contains("diverged"),
        "{}",
        diverged.error
    );
}

/// Replies once with a reply missing a contract part, then never again.
#[derive(Default)]
struct BadThenSilent(AtomicU32);

impl Model for BadThenSilent {
    fn name(&self) -> &str {
        "silent"
    }

    fn complete<'a>(&'a self, _request: &'a ModelRequest) -> ModelFuture<'a> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            let reply = ModelReply::text(without("open")).with_usage(Usage::tokens(30, 10));
            Box::pin(std::future::ready(Ok(reply)))
        } else {
            Box::pin(std::future::pending())
        }
    }
}

#[tokio::test]
async fn a_call_cut_off_by_the_turns_timeout_is_still_recorded_and_charged() {
    let model = Arc::new(BadThenSilent::default());
    let aborted = desk::Workflow::new((), ())
        .with_model(model.clone())
        .run(ticket("plain"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            aborted.error,
            RunError::Timeout {
                agent: "triager",
                ..
            }
        ),
        "{}",
        aborted.error
    );
    assert_eq!(model.0.load(Ordering::SeqCst), 2, "the repair was asked");
    let turn = triager_turn(&aborted.transcript);
    assert_eq!(turn.usage, Usage::tokens(30, 10));
    let call = &turn.model_calls[0];
    assert_eq!(call.attempts.len(), 1, "the attempt that came back");
    assert_eq!(call.usage, Usage::tokens(30, 10));
    match &call.outcome {
        ModelOutcome::Failed { error } => assert_eq!(error.kind, ModelErrorKind::Cancelled),
        other => panic!("expected a cancelled call, got {other:?}"),
    }
}

#[test]
fn a_turn_without_model_calls_serializes_as_before() {
    let turn = TurnRecord {
        agent: "a".into(),
        input_seq: 0,
        tool_calls: vec![],
        model_calls: vec![],
        usage: Usage::tokens(1, 2),
        unresolved: vec![],
        leases: vec![],
    };
    assert_eq!(
        serde_json::to_value(&turn).unwrap(),
        json!({
            "agent": "a",
            "input_seq": 0,
            "tool_calls": [],
            "usage": {"input_tokens": 1, "output_tokens": 2, "cost_micros": 0, "tool_calls": 0}
        })
    );
    let back: TurnRecord = serde_json::from_value(serde_json::to_value(&turn).unwrap()).unwrap();
    assert_eq!(back, turn);
}

use crate::fixtures::in_memory;

#[test]
fn model_token_usage_is_recorded_as_the_gen_ai_token_usage_metric() {
    let sdk = in_memory::sdk();
    let _turn = sdk.lock();
    // A model of its own name: the meter provider is global, and the other
    // tests of the binary run models at the same time; their points are
    // told apart by `gen_ai.request.model`.
    let model = Arc::new(
        ScriptedModel::named("token-usage-metric")
            .reply_with(ModelReply::text(valid_task()).with_usage(Usage::tokens(120, 40))),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(desk(&model).run(ticket("plain")))
        .expect("completes");
    let points = sdk.points();
    let usage = workflow_core::metrics::TOKEN_USAGE;
    let mine = ("gen_ai.request.model", "token-usage-metric");
    let of = |kind: &str| -> f64 {
        in_memory::find(&points, usage, &[("gen_ai.token.type", kind), mine])
            .iter()
            .map(|p| p.value)
            .sum()
    };
    assert_eq!((of("input"), of("output")), (120.0, 40.0), "{points:#?}");
    let input = in_memory::find(&points, usage, &[("gen_ai.token.type", "input"), mine]);
    assert_eq!(input[0].attributes["gen_ai.operation.name"], "chat");
    assert_eq!(input.len(), 1, "{points:#?}");
    assert_eq!(input[0].attributes["gen_ai.provider.name"], "unknown");
}
