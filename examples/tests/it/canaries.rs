//! The main example's canaries through `workflow canary`: replayed from
//! the committed recording (what CI runs), live against an
//! OpenAI-compatible server started here, a wrong call failing its canary,
//! a tool without one reported, and a changed description reported as
//! drift by the canaries and by the publication's drift check.
//!
//! The committed recording is the live run of the offline stand-in model
//! (`deploy_canaries::scripted`); after an intended change re-record it with
//! `UPDATE_CANARIES=1 cargo test -p examples --test it canaries`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use examples::deploy_canaries;
use examples::deploy_workflow::{FakeCloud, VpcPage, VpcQuery, deploy, staging_root};
use serde_json::{Value, json};
use workflow_core::canary::{Canaries, Canary, CanaryMode, CanaryRecording};
use workflow_core::llm::{Model, ModelReply, ScriptedModel, ToolCallRequest};
use workflow_core::prelude::*;

fn recording_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("canaries/staging_deploy.json")
}

fn temp_file(label: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "examples-canaries-{}-{label}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

/// `workflow canary ARGS` for workflow `W` with `executor`: the exit code
/// and what was printed.
fn canary<W: Canaries>(
    args: &[&str],
    executor: impl Fn() -> workflow_core::Executor<W>,
) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut line = vec!["workflow", "canary"];
    line.extend_from_slice(args);
    let code = workflow_cli::run_with_canaries(line, executor, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("text"),
        String::from_utf8(err).expect("text"),
    )
}

fn deploy_with(model: Option<Arc<dyn Model>>) -> impl Fn() -> deploy::Workflow {
    move || {
        let executor = deploy::Workflow::new(staging_root(), FakeCloud::one_page());
        match &model {
            Some(model) => executor.with_model(model.clone()),
            None => executor,
        }
    }
}

/// The row of canary `name` in the table.
fn row<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no row for {name} in:\n{table}"))
}

#[test]
fn the_main_examples_canaries_pass_in_replay() {
    let path = recording_path();
    if std::env::var_os("UPDATE_CANARIES").is_some() {
        let model: Arc<dyn Model> = Arc::new(deploy_canaries::scripted());
        let (code, out, err) = canary(
            &["--live", "--record", path.to_str().expect("utf-8")],
            deploy_with(Some(model)),
        );
        assert_eq!(code, 0, "{out}{err}");
    }
    // No model attached: a replay needs none, and calls no tool.
    let (code, out, err) = canary(&[path.to_str().expect("utf-8")], deploy_with(None));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        row(&out, "finds_the_staging_vpc")
            .starts_with("describe_vpcs  finds_the_staging_vpc  PASS"),
        "{out}"
    );
    assert!(
        row(&out, "finds_the_staging_vpc")
            .ends_with("`describe_vpcs` lists the first page; the answer names vpc-2stag"),
        "{out}"
    );
    assert!(row(&out, "applies_two_routes").contains("PASS"), "{out}");
    assert!(out.ends_with("2 checked: 2 passed, 0 did not\n"), "{out}");
    // The recording covers every tool of the workflow.
    let recording = CanaryRecording::read(&path).expect("the recording reads");
    assert_eq!(recording.workflow, "deploy");
    assert_eq!(recording.canaries.len(), deploy::Spec::canaries().len());
    assert!(workflow_core::canary::uncovered(&deploy::Spec::canaries()).is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn a_replay_calls_no_tool_and_a_live_run_calls_the_live_tools() {
    let recording = CanaryRecording::read(&recording_path()).expect("the recording reads");
    let canaries = deploy::Spec::canaries();
    let executor = deploy::Workflow::new(staging_root(), FakeCloud::one_page());
    let report = workflow_core::canary::run(&executor, &canaries, CanaryMode::Replay(&recording))
        .await
        .expect("runs");
    assert!(report.passed(), "{report}");
    assert!(report.recording.is_none(), "a replay records nothing");
    assert_eq!(executor.deps().applied(), Vec::<String>::new());
    let live = executor.with_model(Arc::new(deploy_canaries::scripted()));
    let report = workflow_core::canary::run(&live, &canaries, CanaryMode::Live { previous: None })
        .await
        .expect("runs");
    assert!(report.passed(), "{report}");
    assert_eq!(live.deps().applied(), ["vpc-2stag: 2 routes"]);
    // What the live run recorded is what the committed recording holds
    // (the same stand-in model made it).
    assert_eq!(report.recording.as_ref(), Some(&recording));
}

#[test]
fn a_wrong_call_fails_its_canary_and_nothing_is_recorded() {
    // The model lists page 1 instead of page 0 (an empty page: the tool
    // fails fast and the loop ends there), then does the second canary well.
    let model = ScriptedModel::named("wrong")
        .reply_with(ModelReply::calls([ToolCallRequest::new(
            "c1",
            "describe_vpcs",
            r#"{"page":1}"#,
        )]))
        .reply_with(ModelReply::calls([ToolCallRequest::new(
            "c2",
            "apply_plan",
            r#"{"vpc_id":"vpc-2stag","routes":2}"#,
        )]))
        .reply(r#"{"answer":"2 routes"}"#);
    let path = temp_file("wrong");
    let (code, out, err) = canary(
        &["--live", "--record", path.to_str().expect("utf-8")],
        deploy_with(Some(Arc::new(model))),
    );
    assert_eq!(code, 1, "{out}{err}");
    let failed = row(&out, "finds_the_staging_vpc");
    assert!(failed.contains(" FAIL "), "{out}");
    assert!(
        failed.ends_with(r#"`describe_vpcs` was called with {"page":1}, which does not hold: lists the first page"#),
        "{out}"
    );
    assert!(row(&out, "applies_two_routes").contains(" PASS "), "{out}");
    assert!(
        out.contains("not recorded: a recording holds passing canaries only"),
        "{out}"
    );
    assert!(!path.exists(), "a failing live run writes no recording");
}

#[test]
fn a_model_that_picks_no_tool_fails_and_live_needs_a_model() {
    let model = ScriptedModel::named("lazy")
        .reply(r#"{"answer":"vpc-2stag"}"#)
        .reply(r#"{"answer":"2"}"#);
    let (code, out, _) = canary(&["--live"], deploy_with(Some(Arc::new(model))));
    assert_eq!(code, 1);
    assert!(
        row(&out, "finds_the_staging_vpc").ends_with(
            r#"the model made no tool call (expected `describe_vpcs`) and answered "vpc-2stag""#
        ),
        "{out}"
    );
    let (code, _, err) = canary(&["--live"], deploy_with(None));
    assert_eq!(code, 2);
    assert!(err.contains("live canaries need a model"), "{err}");
    let (code, _, err) = canary(&[], deploy_with(None));
    assert_eq!(code, 2);
    assert!(
        err.contains("a replay needs the canaries' recording"),
        "{err}"
    );
}

/// The deploy workflow as it was before its `describe_vpcs` description
/// was reworded (to the one the main example has now): same name, same
/// tool, same types, only the doc comment differs.
pub mod before_rewording {
    use super::*;

    #[workflow(entry = network, output = String, deps = FakeCloud)]
    pub mod deploy {
        use super::*;

        /// Lists every VPC of the account.
        #[tool(needs = LookupVpc, effect = read)]
        async fn describe_vpcs(query: VpcQuery, cloud: &FakeCloud) -> Result<VpcPage, ToolError> {
            let vpcs = cloud.vpcs.clone();
            let _ = query;
            Ok(VpcPage {
                vpcs,
                next_page: None,
            })
        }

        #[agent(owns = [LookupVpc], tools = [describe_vpcs], to = [END])]
        async fn network(goal: String, _cx: network::Context<'_>) -> Result<network::Next, Reject> {
            Ok(network::Next::End(goal))
        }
    }

    impl Canaries for deploy::Spec {
        fn canaries() -> Vec<Canary<Self>> {
            // The main example's canary of this tool, word for word.
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
            ]
        }
    }
}

#[test]
fn a_changed_description_whose_recorded_canary_no_longer_matches_is_drift() {
    // Recorded live against the old description.
    let path = temp_file("before-rewording");
    let model: Arc<dyn Model> = Arc::new(
        ScriptedModel::named("old")
            .reply_with(ModelReply::calls([ToolCallRequest::new(
                "c1",
                "describe_vpcs",
                r#"{"page":0}"#,
            )]))
            .reply(r#"{"answer":"vpc-2stag"}"#),
    );
    let (code, out, err) = canary(
        &["--live", "--record", path.to_str().expect("utf-8")],
        move || {
            before_rewording::deploy::Workflow::new((), FakeCloud::one_page())
                .with_model(model.clone())
        },
    );
    assert_eq!(code, 0, "{out}{err}");
    // Replayed with the description of today: the recorded replies answer
    // requests that offered the old description, so none matches.
    let (code, out, _) = canary(&[path.to_str().expect("utf-8")], deploy_with(None));
    assert_eq!(code, 1, "{out}");
    let drift = row(&out, "finds_the_staging_vpc");
    assert!(drift.contains(" DRIFT "), "{out}");
    assert!(
        drift.contains(
            "the description of `describe_vpcs` changed (version 1 then, 1 now) since the recording"
        ),
        "{out}"
    );
    // The other canary was never recorded in that file: a failure, not drift.
    let unrecorded = row(&out, "applies_two_routes");
    assert!(
        unrecorded.contains(" FAIL ") && unrecorded.contains("no recording of this canary"),
        "{out}"
    );

    // And the publication's drift check names the same change: the
    // published manifest holds the old description's digest.
    let dir = temp_dir("published-before");
    workflow_core::Publication::of::<before_rewording::deploy::Spec>()
        .export(&dir)
        .expect("exported");
    let drift = workflow_core::Publication::of::<deploy::Spec>()
        .check(&dir)
        .expect_err("drifted");
    let unversioned: Vec<String> = drift
        .unversioned_tools
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(
        unversioned,
        [
            "tool `describe_vpcs`: description changed without a version bump (version 1 published, 1 now); declare `#[tool(version = 2)]`"
        ]
    );
}

fn temp_dir(label: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("examples-canaries-{}-{label}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

// ---------------------------------------------------------------------------
// Live, against an OpenAI-compatible server started here
// ---------------------------------------------------------------------------

/// A chat completion asking for one tool call.
fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({
        "id": "chatcmpl-t", "object": "chat.completion", "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}]}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50}
    })
}

/// A chat completion whose message says `content`.
fn completion(content: Value) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": content.to_string()}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}
    })
}

/// An HTTP/1.1 server on 127.0.0.1 answering each request with the next of
/// `answers` (a 418 past them), on a thread of its own; the request bodies
/// it read are kept.
struct Server {
    base_url: String,
    seen: Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Server {
    fn start(answers: Vec<Value>) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let base_url = format!("http://{}/v1", listener.local_addr().expect("an address"));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let answers = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from(
            answers,
        )));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, answers) = (log.clone(), answers.clone());
                std::thread::spawn(move || serve(stream, &log, &answers));
            }
        });
        Server { base_url, seen }
    }
}

/// Serves one keep-alive connection, request after request.
fn serve(
    stream: std::net::TcpStream,
    log: &std::sync::Mutex<Vec<Value>>,
    answers: &std::sync::Mutex<std::collections::VecDeque<Value>>,
) {
    let mut writer = stream.try_clone().expect("a stream");
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        log.lock()
            .unwrap()
            .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
        let (status, body) = match answers.lock().unwrap().pop_front() {
            Some(answer) => (200, answer.to_string()),
            None => (
                418,
                r#"{"error":{"message":"no answer scripted"}}"#.to_owned(),
            ),
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(body.as_bytes()).is_err()
        {
            return;
        }
    }
}

#[test]
fn live_canaries_run_against_an_openai_compatible_server_and_are_recorded() {
    let server = Server::start(vec![
        tool_call("c1", "describe_vpcs", json!({"page": 0})),
        completion(json!({"answer": "vpc-2stag"})),
        tool_call(
            "c2",
            "apply_plan",
            json!({"vpc_id": "vpc-2stag", "routes": 2}),
        ),
        completion(json!({"answer": "2 routes changed"})),
    ]);
    let model = workflow_openai::OpenAiModel::new(
        workflow_openai::OpenAiConfig::new(&server.base_url, "test-model").transport_retries(0),
    )
    .expect("a plain http URL");
    let model: Arc<dyn Model> = Arc::new(model);
    let path = temp_file("live");
    let (code, out, err) = canary(
        &["--live", "--record", path.to_str().expect("utf-8")],
        deploy_with(Some(model)),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        row(&out, "finds_the_staging_vpc").contains(" PASS "),
        "{out}"
    );
    assert!(row(&out, "applies_two_routes").contains(" PASS "), "{out}");
    assert!(out.contains("recorded 2 canaries of `deploy` to"), "{out}");
    // The server was offered the tool as published: its description.
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    assert_eq!(
        seen[0]["tools"][0]["function"]["description"],
        "Lists one page of VPCs."
    );
    // The recording replays without the server.
    let (code, out, _) = canary(&[path.to_str().expect("utf-8")], deploy_with(None));
    assert_eq!(code, 0, "{out}");
}
