//! Incident triage written by a model: a triager turns an incident report
//! into a [`Diagnosis`](triage::Diagnosis) handoff, a responder turns the
//! diagnosis into a [`Runbook`]. Both are generated with `cx.generate`:
//! each payload's JSON Schema is the model's response format, and a reply
//! that does not match it (a missing contract part, an unknown field) is
//! repaired or rejected before it crosses the seam.
//!
//! Offline, [`scripted`] plays the model, and its first reply forgets the
//! `evidence` contract part, so that the repair shows in the records.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::llm::{ModelReply, ScriptedModel};
use workflow_core::prelude::*;

/// What someone reported.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Incident {
    /// The report, in the reporter's words.
    pub report: String,
}

/// How bad an incident is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Degraded, no customer impact.
    Low,
    /// Customers are affected.
    High,
    /// Down.
    Outage,
}

/// What to do about it: the run's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Runbook {
    /// The service acted on.
    pub service: String,
    /// The steps, in order (at least one).
    pub steps: Vec<String>,
    /// Whether to page the on-call engineer now.
    pub page_oncall: bool,
}

#[workflow(entry = triager, output = Runbook)]
pub mod triage {
    use super::*;

    /// Triager -> responder: what is wrong, as far as the report says.
    #[handoff(max_bytes = 4096)]
    pub struct Diagnosis {
        /// What the responder is asked to do.
        #[operation]
        pub op: Operation,
        /// The authority to act on the incident.
        #[authority]
        pub scope: Scope<authority::Respond>,
        /// What the diagnosis rests on (quotes from the report).
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What the report does not say.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When the responder must stop.
        #[stop]
        pub stop: StopWhen,
        /// The affected service.
        pub service: String,
        /// How bad it is.
        pub severity: Severity,
        /// The most likely cause.
        pub hypothesis: String,
    }

    /// Reads the report; the model writes the diagnosis.
    #[agent(owns = [Triage], to = [responder])]
    async fn triager(
        incident: Incident,
        cx: triager::Context<'_>,
    ) -> Result<triager::Next, Reject> {
        let prompt = Prompt::new(format!("Incident report:\n{}", incident.report)).system(
            "You are an incident triager. Reply with a JSON diagnosis that matches the schema: \
             op.name is \"respond\"; scope is {\"authority\": \"Respond\", \"expires\": \"never\"}; \
             evidence quotes the report (source \"report\"); open lists what the report does not \
             say; stop is an empty list.",
        );
        let diagnosis: Diagnosis = cx.generate(prompt).await?;
        Ok(triager::Next::Responder(diagnosis))
    }

    /// Acts on the diagnosis; the model writes the runbook.
    #[agent(owns = [Respond], to = [END])]
    async fn responder(
        diagnosis: Diagnosis,
        cx: responder::Context<'_>,
    ) -> Result<responder::Next, Reject> {
        let outage = diagnosis.severity == Severity::Outage;
        let prompt = Prompt::new(format!(
            "Diagnosis of service `{}` ({:?}): {}. Open questions: {}.",
            diagnosis.service,
            diagnosis.severity,
            diagnosis.hypothesis,
            diagnosis.open.len()
        ))
        .system("You are the incident responder. Reply with a JSON runbook.");
        let runbook: Runbook = cx
            .generate(prompt)
            .check(|r: &Runbook| {
                if r.steps.is_empty() {
                    Err("a runbook has at least one step".to_owned())
                } else {
                    Ok(())
                }
            })
            .check(move |r: &Runbook| {
                if outage && !r.page_oncall {
                    Err("an outage pages the on-call engineer: set `page_oncall` to true".into())
                } else {
                    Ok(())
                }
            })
            .await?;
        Ok(responder::Next::End(runbook))
    }
}

/// The incident the example triages.
pub fn incident() -> Incident {
    Incident {
        report: "Checkout returns 502 for every customer since the 14:05 deploy of payments-api."
            .into(),
    }
}

/// The triager's diagnosis, as a well-behaved model writes it.
pub fn diagnosis_reply() -> serde_json::Value {
    serde_json::json!({
        "op": {"name": "respond", "detail": "restore checkout"},
        "scope": {"authority": "Respond", "expires": {"at_hop": 1}},
        "evidence": [{
            "source": "report",
            "claim": "502 for every customer since the 14:05 deploy of payments-api",
            "complete": true
        }],
        "open": [{
            "question": "Was anything else deployed at 14:05?",
            "impact": "a rollback of payments-api alone may not restore checkout"
        }],
        "stop": [{"kind": "hop_reached", "hop": 6}],
        "service": "payments-api",
        "severity": "outage",
        "hypothesis": "the 14:05 deploy of payments-api broke checkout"
    })
}

/// The responder's runbook, as a well-behaved model writes it.
pub fn runbook_reply() -> serde_json::Value {
    serde_json::json!({
        "service": "payments-api",
        "steps": [
            "roll payments-api back to the release before 14:05",
            "watch the checkout 5xx rate for ten minutes"
        ],
        "page_oncall": true
    })
}

/// The offline model: the triager's first reply forgets its `evidence`
/// (repaired on the second attempt), then the responder's runbook. Usage
/// is reported as a real server would.
pub fn scripted() -> ScriptedModel {
    let mut forgetful = diagnosis_reply();
    if let Some(fields) = forgetful.as_object_mut() {
        fields.remove("evidence");
    }
    ScriptedModel::named("scripted-triage")
        .reply_with(ModelReply::text(forgetful.to_string()).with_usage(Usage::tokens(410, 160)))
        .reply_with(
            ModelReply::text(diagnosis_reply().to_string()).with_usage(Usage::tokens(620, 170)),
        )
        .reply_with(
            ModelReply::text(runbook_reply().to_string()).with_usage(Usage::tokens(300, 60)),
        )
}
