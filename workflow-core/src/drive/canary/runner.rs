//! Running canaries: each through its agent's tool loop, its model and its
//! tools either replayed from a recording or live, then judged.

use std::sync::Arc;

use super::{Canary, CanaryAnswer, CanaryRecording, CanaryReport, CanaryRow, Harness};
use super::{RecordedCanary, RecordedTool, Verdict};
use crate::drive::Executor;
use crate::export::ToolDigests;
use crate::llm::{Model, ModelError, Prompt, RecordedModel, Role};
use crate::run::RunShared;
use crate::spec::{ToolCallRecord, Workflow};

/// Where the canaries' model replies and tool responses come from.
#[derive(Debug, Clone, Copy)]
pub enum CanaryMode<'r> {
    /// From `recording`: each model reply served to the request it was
    /// recorded for (matched by the request's digest, so that a request
    /// that changed, a tool description included, gets none), each tool
    /// response to the call it was recorded for; no tool runs, no network
    /// is used. Deterministic: for CI.
    Replay(&'r CanaryRecording),
    /// From the executor's model ([`Executor::with_model`]) and its
    /// dependencies (the live tool implementations). `previous`, the
    /// recording so far, is only read to tell a drift from a failure.
    Live {
        /// The committed recording, if any.
        previous: Option<&'r CanaryRecording>,
    },
}

/// Runs `canaries` of workflow `W` with `executor`'s root invariants (and,
/// live, its model and dependencies), and reports each, then each tool that
/// no canary expects a call of (a failure).
///
/// `Err` when the run cannot start: live without a model, a recording of
/// another workflow, two canaries of one name.
pub async fn run<W: Workflow>(
    executor: &Executor<W>,
    canaries: &[Canary<W>],
    mode: CanaryMode<'_>,
) -> Result<CanaryReport, String> {
    let recording = match mode {
        CanaryMode::Replay(recording) => Some(recording),
        CanaryMode::Live { previous } => previous,
    };
    if let Some(recording) = recording
        && recording.workflow != W::GRAPH.name
    {
        return Err(format!(
            "the canary recording is of workflow `{}`, not `{}`",
            recording.workflow,
            W::GRAPH.name
        ));
    }
    for (i, c) in canaries.iter().enumerate() {
        if canaries[..i].iter().any(|earlier| earlier.name == c.name) {
            return Err(format!(
                "two canaries are named `{}`: a recording finds each by its name, rename one",
                c.name
            ));
        }
    }
    let live_model = match mode {
        CanaryMode::Live { .. } => Some(executor.model().cloned().ok_or_else(|| {
            "live canaries need a model: attach one to the executor with `Executor::with_model` \
             (for an OpenAI-compatible server, `workflow_openai::OpenAiModel::from_env()` with \
             `OPENAI_BASE_URL` set)"
                .to_owned()
        })?),
        CanaryMode::Replay(_) => None,
    };
    let mut rows = Vec::with_capacity(canaries.len());
    let mut recorded = live_model.as_ref().map(|_| CanaryRecording::of::<W>());
    for canary in canaries {
        let tools: Vec<String> = canary.tools().iter().map(|t| (*t).to_owned()).collect();
        let row = |verdict, why: String| CanaryRow {
            tools: tools.clone(),
            canary: canary.name.to_owned(),
            verdict,
            why,
        };
        if let Some(problem) = canary.problem() {
            rows.push(row(
                Verdict::Fail,
                format!("the canary cannot run: {problem}"),
            ));
            continue;
        }
        let before = recording.and_then(|r| r.get(canary.name));
        let (model, calls) = match (&live_model, before) {
            (Some(model), _) => (model.clone(), None),
            (None, Some(before)) => {
                let replayed: Arc<dyn Model> =
                    Arc::new(RecordedModel::from_calls([&before.model_call]));
                let calls = crate::ledger::RecordedCalls::canary(before.tool_calls.clone());
                (replayed, Some(calls))
            }
            (None, None) => {
                rows.push(row(
                    Verdict::Fail,
                    "no recording of this canary: run it live and record it (`workflow canary --live --record FILE`)".into(),
                ));
                continue;
            }
        };
        let outcome = exercise(executor, canary, model, calls).await;
        let current = digests::<W>(&canary.offered);
        let changed = before
            .map(|b| changes(&b.tools, &current))
            .unwrap_or_default();
        match judge(canary, &outcome.answer, &outcome.calls) {
            Ok(passed) => {
                if let (Some(recorded), Some(mut model_call)) = (&mut recorded, outcome.model_call)
                {
                    // Durations are not recorded: the same behaviour
                    // recorded twice is the same file.
                    model_call.duration_us = 0;
                    let mut tool_calls = outcome.calls;
                    for call in &mut tool_calls {
                        call.duration_us = 0;
                    }
                    recorded.canaries.push(RecordedCanary {
                        canary: canary.name.to_owned(),
                        tools: current
                            .iter()
                            .map(|(name, d)| RecordedTool::new(name, d.clone()))
                            .collect(),
                        model_call,
                        tool_calls,
                    });
                }
                rows.push(row(Verdict::Pass, passed));
            }
            Err(why) if changed.is_empty() => rows.push(row(Verdict::Fail, why)),
            Err(why) => rows.push(row(
                Verdict::Drift,
                format!(
                    "{} since the recording, and {why}; re-run it live (`workflow canary --live`) and record it again once it passes",
                    changed.join("; ")
                ),
            )),
        }
    }
    for tool in super::uncovered(canaries) {
        rows.push(CanaryRow {
            tools: vec![tool.to_owned()],
            canary: "-".into(),
            verdict: Verdict::Fail,
            why: "no canary expects a call of this tool: declare one in the workflow's `Canaries`"
                .into(),
        });
    }
    Ok(CanaryReport {
        rows,
        recording: recorded,
    })
}

/// What one canary's tool loop left.
struct Exercised {
    answer: Result<CanaryAnswer, ModelError>,
    calls: Vec<ToolCallRecord>,
    model_call: Option<crate::spec::ModelCallRecord>,
}

/// Runs `canary`'s tool loop against `model`, its tools served from
/// `calls` when given (a replay), live otherwise.
async fn exercise<W: Workflow>(
    executor: &Executor<W>,
    canary: &Canary<W>,
    model: Arc<dyn Model>,
    calls: Option<crate::ledger::RecordedCalls>,
) -> Exercised {
    let shared = Arc::new(RunShared {
        model: Some(model),
        recorded: calls,
        ..RunShared::default()
    });
    let harness = Harness {
        root: executor.root(),
        deps: executor.deps(),
        shared: shared.clone(),
    };
    let answer = match &canary.drive {
        Some(drive) => drive(harness, with_system(canary.prompt.clone())).await,
        None => Err(ModelError::new(
            crate::llm::ModelErrorKind::NoModel,
            "the canary offers no tool",
        )),
    };
    let log = shared.lock();
    Exercised {
        answer,
        calls: log.calls.clone(),
        model_call: log.model_calls.last().cloned(),
    }
}

/// `prompt` with the canaries' system message first, unless it has one.
fn with_system(prompt: Prompt) -> Prompt {
    if prompt.messages().first().map(|m| m.role) == Some(Role::System) {
        prompt
    } else {
        prompt.system(super::SYSTEM)
    }
}

/// The version and digests of each tool of `names` that `W`'s graph lists.
fn digests<W: Workflow>(names: &[&'static str]) -> Vec<(String, ToolDigests)> {
    names
        .iter()
        .filter_map(|name| W::GRAPH.tools.iter().find(|t| t.name == *name))
        .map(|t| (t.name.to_owned(), ToolDigests::of(t)))
        .collect()
}

/// What changed about each tool since `recorded`, one phrase per tool.
fn changes(recorded: &[RecordedTool], current: &[(String, ToolDigests)]) -> Vec<String> {
    current
        .iter()
        .filter_map(|(name, now)| {
            let then = recorded.iter().find(|t| t.name == *name)?.digests();
            let parts = now.changed_since(&then);
            (!parts.is_empty()).then(|| {
                format!(
                    "the {} of `{name}` changed (version {} then, {} now)",
                    parts
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    then.version,
                    now.version
                )
            })
        })
        .collect()
}

/// Whether the loop's calls and answer meet the canary: `Ok` with what
/// passed, or `Err` with the first thing that did not.
fn judge<W: Workflow>(
    canary: &Canary<W>,
    answer: &Result<CanaryAnswer, ModelError>,
    calls: &[ToolCallRecord],
) -> Result<String, String> {
    let Some(first) = canary.expectations.first() else {
        return Err("it expects no call".into());
    };
    let made: Vec<String> = calls
        .iter()
        .map(|c| format!("{}({})", c.tool, c.arguments))
        .collect();
    match calls.first() {
        None => {
            let ended = match answer {
                Ok(a) => format!("answered {:?}", a.answer),
                Err(e) => format!("ended: {} ({})", e.message, e.kind),
            };
            return Err(format!(
                "the model made no tool call (expected `{}`) and {ended}",
                first.tool
            ));
        }
        Some(call) if call.tool != first.tool => {
            return Err(format!(
                "the model chose `{}` first, not `{}` (calls made: {})",
                call.tool,
                first.tool,
                made.join(", ")
            ));
        }
        Some(_) => {}
    }
    // Each expectation is met by a call made after the one that met the
    // one before.
    let mut next = 0;
    let mut met = Vec::with_capacity(canary.expectations.len());
    for e in &canary.expectations {
        let mut why_not = None;
        let mut found = None;
        for (i, call) in calls.iter().enumerate().skip(next) {
            if call.tool != e.tool {
                continue;
            }
            match (e.check)(&call.arguments) {
                Ok(true) => {
                    found = Some(i);
                    break;
                }
                Ok(false) => {
                    why_not.get_or_insert(format!(
                        "`{}` was called with {}, which does not hold: {}",
                        e.tool, call.arguments, e.what
                    ));
                }
                Err(error) => {
                    why_not.get_or_insert(error);
                }
            }
        }
        match found {
            Some(i) => {
                next = i + 1;
                met.push(format!("`{}` {}", e.tool, e.what));
            }
            None => {
                return Err(why_not.unwrap_or_else(|| {
                    format!(
                        "the model made no call of `{}` that {} (calls made: {})",
                        e.tool,
                        e.what,
                        made.join(", ")
                    )
                }));
            }
        }
    }
    let answer = match answer {
        Ok(a) => &a.answer,
        Err(e) => {
            return Err(format!(
                "the loop ended without an answer: {} ({})",
                e.message, e.kind
            ));
        }
    };
    for check in &canary.answers {
        if !(check.check)(answer) {
            return Err(format!(
                "the answer {answer:?} does not hold: {}",
                check.what
            ));
        }
    }
    let answered = canary
        .answers
        .iter()
        .map(|a| a.what)
        .collect::<Vec<_>>()
        .join(", ");
    Ok(if answered.is_empty() {
        met.join(", ")
    } else {
        format!("{}; the answer {answered}", met.join(", "))
    })
}
