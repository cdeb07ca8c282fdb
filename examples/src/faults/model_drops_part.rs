//! A contract part dropped by a model's reply: the triager's model leaves
//! a part out of its diagnosis in its first 1-3 replies (seeded: which
//! part, how many replies); `cx.generate` sends each back with the errors,
//! two repairs at most.

use std::sync::Arc;

use workflow_core::llm::{ModelReply, ScriptedModel};
use workflow_core::prelude::Usage;

use crate::model_triage::{Runbook, diagnosis_reply, incident, runbook_reply, triage};

use super::{Effects, InAudit, Observed, Scenario, Trial};

/// The scenario.
pub const SCENARIO: Scenario = Scenario {
    name: "model_drops_part",
    mast: "2.4 Information withholding (a contract part lost in a model's reply)",
    fault: "the model's first 1-3 diagnoses lack one part (op, scope, evidence, open or stop, seeded)",
    unauthorized: "none (no tools); the harm would be a runbook built on a diagnosis without the part",
    correct: "the runbook of the complete diagnosis (repaired), or stopped after the repairs",
    mechanism: "`cx.generate`: the reply must deserialize as the handoff (contract parts required)",
    in_audit: InAudit::StillStops("a reply without the part is not a value of the handoff's type"),
    run: |t| Box::pin(run(t)),
};

async fn run(trial: Trial) -> Observed {
    let mut rng = trial.rng();
    let part = rng
        .pick(&["op", "scope", "evidence", "open", "stop"])
        .copied()
        .unwrap_or("evidence");
    let broken = if trial.fault { rng.between(1, 3) } else { 0 };
    let mut model = ScriptedModel::named("scripted-triage");
    for _ in 0..broken {
        let mut reply = diagnosis_reply();
        if let Some(fields) = reply.as_object_mut() {
            fields.remove(part);
        }
        model = model
            .reply_with(ModelReply::text(reply.to_string()).with_usage(Usage::tokens(400, 150)));
    }
    let model = model
        .reply_with(
            ModelReply::text(diagnosis_reply().to_string()).with_usage(Usage::tokens(600, 170)),
        )
        .reply_with(
            ModelReply::text(runbook_reply().to_string()).with_usage(Usage::tokens(300, 60)),
        );
    let wf = triage::Workflow::new((), ())
        .with_model(Arc::new(model))
        .with_mode(trial.mode);
    let result = wf.run(incident()).await;
    let expected: Runbook = match serde_json::from_value(runbook_reply()) {
        Ok(r) => r,
        Err(_) => return Observed::of(&result, &Effects::default(), |_| false),
    };
    Observed::of(&result, &Effects::default(), |r: &Runbook| *r == expected)
}
