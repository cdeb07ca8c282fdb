//! The backend over real HTTP: a chat completions server started inside each
//! test on 127.0.0.1 answers from a script, and keeps every request it got.
//! A workflow whose agent generates a handoff runs against it: valid
//! replies cross, bad ones are repaired with their errors fed back or end
//! the turn with a typed error; transport failures keep their class.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use workflow_core::llm::{ModelError, ModelErrorKind, ModelOutcome};
use workflow_core::prelude::*;
use workflow_core::{RunError, SchemaSet, Transcript, TurnRecord};
use workflow_openai::{ConfigError, OpenAiConfig, OpenAiModel};

// ---------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------

/// What the server answers to one request.
pub(crate) enum Answer {
    /// A status and a JSON body.
    Json(u16, String),
    /// Nothing, until the client hangs up.
    Hang,
}

/// A request as the server read it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) authorization: Option<String>,
    pub(crate) body: Value,
}

pub(crate) struct Server {
    base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// A server answering requests with `answers`, in order (a request past
    /// the script gets a 418, which no test expects).
    pub(crate) async fn start(answers: Vec<Answer>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let base_url = format!("http://{}/v1", listener.local_addr().expect("an address"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(Mutex::new(std::collections::VecDeque::from(answers)));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (log, answers) = (log.clone(), answers.clone());
                tokio::spawn(async move {
                    let _ = connection(stream, log, answers).await;
                });
            }
        });
        Server { base_url, seen }
    }

    pub(crate) fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub(crate) fn model(&self) -> OpenAiModel {
        OpenAiModel::new(self.config()).expect("a plain http URL")
    }

    pub(crate) fn config(&self) -> OpenAiConfig {
        OpenAiConfig::new(&self.base_url, "test-model")
            .api_key("sk-test")
            .transport_retries(0)
    }
}

/// Serves one keep-alive connection: request after request.
async fn connection(
    stream: tokio::net::TcpStream,
    log: Arc<Mutex<Vec<Seen>>>,
    answers: Arc<Mutex<std::collections::VecDeque<Answer>>>,
) -> std::io::Result<()> {
    let mut stream = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if stream.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let path = line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let (mut length, mut authorization) = (0usize, None);
        loop {
            let mut header = String::new();
            stream.read_line(&mut header).await?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "authorization" => authorization = Some(value.trim().to_owned()),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        stream.read_exact(&mut body).await?;
        log.lock().unwrap().push(Seen {
            path,
            authorization,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        });
        let answer = answers.lock().unwrap().pop_front();
        let (status, body) = match answer {
            Some(Answer::Json(status, body)) => (status, body),
            Some(Answer::Hang) => {
                // Until the client gives up and closes the connection.
                let mut rest = Vec::new();
                let _ = stream.read_to_end(&mut rest).await;
                return Ok(());
            }
            None => (
                418,
                r#"{"error":{"message":"no answer scripted"}}"#.to_owned(),
            ),
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        stream.get_mut().write_all(head.as_bytes()).await?;
        stream.get_mut().write_all(body.as_bytes()).await?;
    }
}

/// A chat completion whose message says `content`.
pub(crate) fn completion(content: &str) -> Answer {
    Answer::Json(
        200,
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}
        })
        .to_string(),
    )
}

/// A chat completion whose message is a refusal.
fn refusal(why: &str) -> Answer {
    Answer::Json(
        200,
        json!({
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": null, "refusal": why},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
        })
        .to_string(),
    )
}

// ---------------------------------------------------------------------------
// The workflow
// ---------------------------------------------------------------------------

/// The end of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Fixed {
    /// The service fixed.
    pub service: String,
}

#[workflow(entry = triager, output = Fixed)]
pub mod desk {
    use super::*;

    /// Triager -> fixer: written by the model.
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
    }

    #[agent(owns = [Triage], to = [fixer])]
    async fn triager(ticket: String, cx: triager::Context<'_>) -> Result<triager::Next, Reject> {
        let task: FixTask = cx
            .generate(Prompt::new(ticket).system("Triage tickets into fix tasks."))
            .await?;
        Ok(triager::Next::Fixer(task))
    }

    #[agent(owns = [Fix], to = [END])]
    async fn fixer(task: FixTask, _cx: fixer::Context<'_>) -> Result<fixer::Next, Reject> {
        Ok(fixer::Next::End(Fixed {
            service: task.service,
        }))
    }
}

pub(crate) fn valid() -> Value {
    json!({
        "op": {"name": "restart", "detail": "restart the api"},
        "scope": {"authority": "Fix", "expires": {"at_hop": 1}},
        "evidence": [],
        "open": [],
        "stop": [{"kind": "hop_reached", "hop": 10}],
        "service": "api"
    })
}

fn edited(edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> String {
    let mut v = valid();
    edit(v.as_object_mut().unwrap());
    v.to_string()
}

async fn run(server: &Server) -> Result<Completed<Fixed>, Aborted> {
    desk::Workflow::new((), ())
        .with_model(Arc::new(server.model()))
        .run("the api returns 502".to_owned())
        .await
}

fn triager_turn(t: &Transcript) -> &TurnRecord {
    t.turns()
        .map(|(_, turn)| turn)
        .find(|turn| turn.agent == "triager")
        .expect("the triager's turn is recorded")
}

/// The error the triager's model call ended with.
fn model_error(aborted: &Aborted) -> ModelError {
    assert!(
        matches!(
            aborted.error,
            RunError::AgentFailed {
                agent: "triager",
                ..
            }
        ),
        "{}",
        aborted.error
    );
    match &triager_turn(&aborted.transcript).model_calls[0].outcome {
        ModelOutcome::Failed { error } => error.clone(),
        other => panic!("expected a failed model call, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_valid_reply_crosses_and_its_usage_is_charged_and_recorded() {
    let server = Server::start(vec![completion(&valid().to_string())]).await;
    let done = run(&server).await.expect("completes");
    assert_eq!(done.output.service, "api");

    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer sk-test"));
    let body = &seen[0].body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["messages"][1]["content"], "the api returns 502");
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "FixTask");
    assert_eq!(format["json_schema"]["strict"], false);
    // The schema on the wire is the one the workflow publishes.
    assert_eq!(
        Some(&format["json_schema"]["schema"]),
        SchemaSet::of::<desk::Spec>().get("desk.FixTask")
    );

    let turn = triager_turn(&done.transcript);
    assert_eq!(turn.usage, Usage::tokens(50, 20));
    let call = &turn.model_calls[0];
    assert_eq!(call.model, "test-model");
    assert_eq!(call.usage, Usage::tokens(50, 20));
    assert_eq!(
        call.attempts[0].reply.as_deref(),
        Some(valid().to_string().as_str())
    );
}

#[tokio::test]
async fn a_reply_missing_a_contract_part_is_repaired_with_the_errors_in_the_second_request() {
    let server = Server::start(vec![
        completion(&edited(|v| {
            v.remove("stop");
        })),
        completion(&valid().to_string()),
    ])
    .await;
    let done = run(&server).await.expect("repaired");
    assert_eq!(done.output.service, "api");

    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    let messages = seen[1].body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[3]["role"], "user");
    let feedback = messages[3]["content"].as_str().expect("text");
    assert!(
        feedback.contains("schema mismatch")
            && feedback.contains("\"stop\" is a required property"),
        "{feedback}"
    );
    // The format goes out again with the repair.
    assert_eq!(
        seen[1].body["response_format"],
        seen[0].body["response_format"]
    );
    let turn = triager_turn(&done.transcript);
    assert_eq!(turn.usage, Usage::tokens(100, 40), "both attempts charged");
    assert_eq!(turn.model_calls[0].attempts.len(), 2);
}

#[tokio::test]
async fn an_unknown_field_in_every_reply_is_rejected_and_the_run_stops() {
    let bad = edited(|v| {
        v.insert("priority".into(), json!("p1"));
    });
    let server = Server::start(vec![completion(&bad), completion(&bad), completion(&bad)]).await;
    let aborted = run(&server).await.expect_err("rejected");
    assert_eq!(server.requests().len(), 3);
    let error = model_error(&aborted);
    assert_eq!(error.kind, ModelErrorKind::RetriesExhausted);
    assert!(
        error.errors.iter().any(|e| e.contains("priority")),
        "{error}"
    );
    // The fixer never got it: the last record is the triager's failed turn.
    let t = &aborted.transcript;
    assert!(matches!(
        t.receipt(t.len() - 1),
        Some(Receipt::TurnFailed { .. })
    ));
    assert_eq!(triager_turn(t).usage, Usage::tokens(150, 60));
}

#[tokio::test]
async fn malformed_json_is_repaired() {
    let server = Server::start(vec![
        completion("Sure! Here is the task: {\"op\":"),
        completion(&valid().to_string()),
    ])
    .await;
    let done = run(&server).await.expect("repaired");
    assert_eq!(done.output.service, "api");
    let feedback = server.requests()[1].body["messages"][3]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(feedback.contains("malformed JSON"), "{feedback}");
}

/// A reply that gives a key twice is not taken with either value: it is
/// refused as malformed and repaired, the key named in the feedback.
#[tokio::test]
async fn a_reply_with_a_key_twice_is_refused_and_repaired() {
    let twice = valid()
        .to_string()
        .replace(r#""service":"api""#, r#""service":"db","service":"api""#);
    assert!(
        twice.contains(r#""service":"db","service":"api""#),
        "{twice}"
    );
    let server = Server::start(vec![
        completion(&twice),
        completion(&edited(|m| {
            m.insert("service".into(), json!("db"));
        })),
    ])
    .await;
    let done = run(&server).await.expect("repaired");
    assert_eq!(done.output.service, "db", "the repaired reply, not a guess");
    let feedback = server.requests()[1].body["messages"][3]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(feedback.contains("`service` twice"), "{feedback}");
}

#[tokio::test]
async fn a_refusal_is_a_typed_error_without_a_repair() {
    let server = Server::start(vec![refusal("I can't help with that.")]).await;
    let aborted = run(&server).await.expect_err("refused");
    assert_eq!(server.requests().len(), 1);
    let error = model_error(&aborted);
    assert_eq!(error.kind, ModelErrorKind::Refusal);
    assert!(error.message.contains("I can't help with that."));
    // A refusal costs tokens too.
    assert_eq!(
        triager_turn(&aborted.transcript).usage,
        Usage::tokens(50, 5)
    );
}

#[tokio::test]
async fn a_reply_slower_than_the_timeout_is_a_timeout() {
    let server = Server::start(vec![Answer::Hang]).await;
    let model = OpenAiModel::new(server.config().timeout(Duration::from_millis(300))).unwrap();
    let started = std::time::Instant::now();
    let aborted = desk::Workflow::new((), ())
        .with_model(Arc::new(model))
        .run("the api returns 502".to_owned())
        .await
        .expect_err("timed out");
    assert!(started.elapsed() < Duration::from_secs(20));
    let error = model_error(&aborted);
    assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
    assert_eq!(server.requests().len(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn a_500_is_a_status_error() {
    let server = Server::start(vec![Answer::Json(500, "upstream model crashed".to_owned())]).await;
    let aborted = run(&server).await.expect_err("a 500");
    let error = model_error(&aborted);
    assert_eq!(error.kind, ModelErrorKind::Status(500));
    assert!(error.message.contains("upstream model crashed"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_500_is_retried_by_the_transport_when_configured() {
    let server = Server::start(vec![
        Answer::Json(503, "busy".to_owned()),
        completion(&valid().to_string()),
    ])
    .await;
    let model = OpenAiModel::new(server.config().transport_retries(1)).unwrap();
    let done = desk::Workflow::new((), ())
        .with_model(Arc::new(model))
        .run("the api returns 502".to_owned())
        .await
        .expect("the retry gets the reply");
    assert_eq!(done.output.service, "api");
    assert_eq!(server.requests().len(), 2);
    // One model attempt: the transport's retry is below the seam.
    assert_eq!(
        triager_turn(&done.transcript).model_calls[0].attempts.len(),
        1
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    // A port nothing listens on: bind one, then free it.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAiModel::new(OpenAiConfig::new(url, "m").transport_retries(0)).unwrap();
    let aborted = desk::Workflow::new((), ())
        .with_model(Arc::new(model))
        .run("x".to_owned())
        .await
        .expect_err("no server");
    assert_eq!(model_error(&aborted).kind, ModelErrorKind::Transport);
}

#[test]
fn a_url_the_build_cannot_reach_is_refused_with_the_fix() {
    let error = OpenAiModel::new(OpenAiConfig::new("ftp://host/v1", "m")).unwrap_err();
    assert!(matches!(error, ConfigError::Scheme(_)));
    let https = OpenAiModel::new(OpenAiConfig::new("https://api.openai.com/v1", "m"));
    if cfg!(feature = "rustls") {
        assert!(https.is_ok());
    } else {
        let error = https.unwrap_err();
        assert!(
            error.to_string().contains("enable the `rustls` feature"),
            "{error}"
        );
    }
}

#[test]
fn the_key_never_shows_in_debug_output() {
    let config = OpenAiConfig::new("http://localhost:11434/v1", "m").api_key("sk-secret");
    assert!(!format!("{config:?}").contains("sk-secret"));
    let model = OpenAiModel::new(config).unwrap();
    assert!(!format!("{model:?}").contains("sk-secret"));
}
