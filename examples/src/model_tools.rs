//! Incident response where the model picks the tools: a responder hands
//! its model three granted lookups and one write tool (a rollback) with
//! `cx.tool_loop`, and the model calls them, step after step, until it
//! answers with a [`Resolution`]. Every call it asks for is held to the
//! agent's grant, the tool's input schema, the rollback's authority and
//! guard, fail-fast, the journal and the record; its steps are bounded.
//!
//! Offline, [`scripted`] plays the model: it looks at the error rate and
//! the recent deploys in one reply (two calls), asks for a tool that does
//! not exist (refused, and told so), rolls back, and answers.

use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::llm::{ModelReply, ScriptedModel, ToolCallRequest};
use workflow_core::prelude::*;

/// What someone reported.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Alert {
    /// The report, in the reporter's words.
    pub report: String,
}

/// What the responder did: the run's output, written by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resolution {
    /// The service acted on.
    pub service: String,
    /// The cause, as the lookups show it.
    pub cause: String,
    /// The release rolled back to, if a rollback was made.
    pub rolled_back_to: Option<String>,
    /// Whether the on-call engineer should still be paged.
    pub page_oncall: bool,
}

/// A service, by name.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceName {
    /// The service's name, e.g. `payments-api`.
    pub service: String,
}

/// One deploy of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Deploy {
    /// The release deployed.
    pub release: String,
    /// When (HH:MM, UTC).
    pub at: String,
}

/// A service's error rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorRate {
    /// 5xx responses per hundred requests, over the last ten minutes.
    pub percent_5xx: f64,
}
impl FailFast for ErrorRate {}

/// A rollback to ask for.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackRequest {
    /// The service to roll back.
    pub service: String,
    /// The release to roll back to (one of its recent deploys).
    pub to_release: String,
}

/// A rollback made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RolledBack {
    /// The service.
    pub service: String,
    /// The release it runs now.
    pub release: String,
}
impl FailFast for RolledBack {}

/// The operations platform the tools talk to (a fake here): what it
/// knows, and the rollbacks it made.
#[derive(Debug, Default)]
pub struct Ops {
    /// The rollbacks made, in order.
    pub rollbacks: Mutex<Vec<RollbackRequest>>,
}

impl Ops {
    fn deploys(service: &str) -> Vec<Deploy> {
        match service {
            "payments-api" => vec![
                Deploy {
                    release: "r42".into(),
                    at: "14:05".into(),
                },
                Deploy {
                    release: "r41".into(),
                    at: "09:30".into(),
                },
            ],
            _ => vec![],
        }
    }
}

#[workflow(entry = responder, output = Resolution, deps = Ops)]
pub mod incident {
    use super::*;

    /// A rollback only goes to a release the service actually ran.
    fn known_release(request: &RollbackRequest, _root: &()) -> Result<(), String> {
        if Ops::deploys(&request.service)
            .iter()
            .any(|d| d.release == request.to_release)
        {
            Ok(())
        } else {
            Err(format!(
                "`{}` is not a recent release of `{}`",
                request.to_release, request.service
            ))
        }
    }

    /// The deploys of a service in the last 24 hours, newest first.
    #[tool(effect = read)]
    async fn recent_deploys(query: ServiceName, _ops: &Ops) -> Result<Vec<Deploy>, ToolError> {
        Ok(Ops::deploys(&query.service))
    }

    /// A service's 5xx rate over the last ten minutes.
    #[tool(effect = read)]
    async fn error_rate(query: ServiceName, _ops: &Ops) -> Result<ErrorRate, ToolError> {
        Ok(ErrorRate {
            percent_5xx: if query.service == "payments-api" {
                97.5
            } else {
                0.1
            },
        })
    }

    /// The team that owns a service.
    #[tool(effect = read)]
    async fn service_owner(query: ServiceName, _ops: &Ops) -> Result<String, ToolError> {
        Ok(format!("team-{}", query.service))
    }

    /// Rolls a service back to one of its recent releases.
    #[tool(needs = Respond, effect = write, guard = known_release)]
    async fn rollback(request: RollbackRequest, ops: &Ops) -> Result<RolledBack, ToolError> {
        let done = RolledBack {
            service: request.service.clone(),
            release: request.to_release.clone(),
        };
        ops.rollbacks
            .lock()
            .map_err(|_| ToolError::new("rollback", "the platform is poisoned"))?
            .push(request);
        Ok(done)
    }

    // ANCHOR: responder
    /// Hands its model the alert and the tools; the model decides which to
    /// call, the loop checks each call.
    #[agent(
        owns = [Respond],
        tools = [recent_deploys, error_rate, service_owner, rollback],
        to = [END]
    )]
    async fn responder(
        alert: Alert,
        cx: responder::Context<'_>,
    ) -> Result<responder::Next, Reject> {
        let prompt = Prompt::new(format!("Alert:\n{}", alert.report)).system(
            "You are the incident responder. Use the tools to find the cause; roll back only to \
             a release the service ran before the incident. Then reply with the JSON resolution.",
        );
        let resolution: Resolution = cx
            .tool_loop(
                prompt,
                (
                    tools::recent_deploys,
                    tools::error_rate,
                    tools::service_owner,
                    tools::rollback,
                ),
            )
            .max_steps(6)
            .await?;
        Ok(responder::Next::End(resolution))
    }
    // ANCHOR_END: responder
}

/// The alert the example handles.
pub fn alert() -> Alert {
    Alert {
        report: "Checkout returns 502 for every customer since about 14:05 (payments-api).".into(),
    }
}

/// The resolution a well-behaved model gives.
pub fn resolution() -> Resolution {
    Resolution {
        service: "payments-api".into(),
        cause: "release r42, deployed at 14:05, fails 97.5% of requests".into(),
        rolled_back_to: Some("r41".into()),
        page_oncall: false,
    }
}

fn call(id: &str, tool: &str, arguments: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest::new(id, tool, arguments.to_string())
}

/// The replies of the offline model, in order: two lookups in one reply, a
/// call to a tool that does not exist (refused and fed back), the
/// rollback, the answer. Usage is reported as a real server would.
pub fn script() -> Vec<ModelReply> {
    let service = serde_json::json!({"service": "payments-api"});
    let answer = serde_json::to_string(&resolution()).unwrap_or_default();
    vec![
        ModelReply::calls([
            call("call_1", "error_rate", service.clone()),
            call("call_2", "recent_deploys", service.clone()),
        ])
        .with_usage(Usage::tokens(520, 40)),
        ModelReply::calls([call("call_3", "restart_database", service)])
            .with_usage(Usage::tokens(640, 20)),
        ModelReply::calls([call(
            "call_4",
            "rollback",
            serde_json::json!({"service": "payments-api", "to_release": "r41"}),
        )])
        .with_usage(Usage::tokens(700, 30)),
        ModelReply::text(answer).with_usage(Usage::tokens(760, 60)),
    ]
}

/// The offline model: [`script`]'s replies, once.
pub fn scripted() -> ScriptedModel {
    script().into_iter().fold(
        ScriptedModel::named("scripted-responder"),
        |model, reply| model.reply_with(reply),
    )
}
