//! The model triage example, offline: the scripted model's forgetful first
//! reply is repaired, both handoffs cross, the usage is on the record, and
//! the recorded run replays without the model.

use std::sync::Arc;

use examples::model_triage::{Runbook, incident, runbook_reply, scripted, triage};
use workflow_core::llm::{ModelErrorKind, RecordedModel};
use workflow_core::prelude::*;

fn runbook() -> Runbook {
    serde_json::from_value(runbook_reply()).expect("the scripted runbook reads")
}

#[tokio::test]
async fn the_example_runs_offline_and_repairs_the_forgetful_reply() {
    let model = Arc::new(scripted());
    let done = triage::Workflow::new((), ())
        .with_model(model.clone())
        .with_budget(Budget::default().max_tokens(20_000))
        .run(incident())
        .await
        .expect("completes");
    assert_eq!(done.output, runbook());
    assert_eq!(model.remaining(), 0, "every scripted reply was used");

    let turns: Vec<_> = done.transcript.turns().map(|(_, t)| t).collect();
    assert_eq!(turns.len(), 2);
    let triager = &turns[0].model_calls[0];
    assert_eq!(triager.schema.as_deref(), Some("Diagnosis"));
    assert_eq!(triager.attempts.len(), 2);
    let sent_back = triager.attempts[0].error.as_ref().expect("sent back");
    assert_eq!(sent_back.kind, ModelErrorKind::SchemaMismatch);
    assert!(sent_back.errors.iter().any(|e| e.contains("evidence")));
    assert_eq!(turns[0].usage, Usage::tokens(1_030, 330));
    assert_eq!(turns[1].usage, Usage::tokens(300, 60));

    // The repair request carried the error back to the model.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1]
            .messages
            .last()
            .is_some_and(|m| m.content.contains("\"evidence\" is a required property"))
    );

    // The records replay without the model.
    let replay = triage::Workflow::new((), ())
        .with_model(Arc::new(RecordedModel::from_transcript(&done.transcript)))
        .run(incident())
        .await
        .expect("replays");
    assert_eq!(replay.output, done.output);

    // `Executor::replay` serves the recorded replies by itself (no model
    // attached), transition for transition.
    let ledger = Arc::new(workflow_core::ledger::MemoryLedger::new());
    let recorded = triage::Workflow::new((), ())
        .with_model(Arc::new(
            workflow_core::llm::ScriptedModel::new()
                .reply(examples::model_triage::diagnosis_reply().to_string())
                .reply(runbook_reply().to_string()),
        ))
        .with_ledger(ledger.clone())
        .run(incident())
        .await
        .expect("completes");
    let records = workflow_core::ledger::Ledger::records(&*ledger, recorded.transcript.run_id())
        .expect("recorded");
    let report = triage::Workflow::new((), ())
        .replay(&records)
        .await
        .expect("replays");
    assert!(report.divergence.is_none(), "{report:?}");
}

#[tokio::test]
async fn a_runbook_that_does_not_page_for_an_outage_is_sent_back() {
    let mut quiet = runbook_reply();
    quiet["page_oncall"] = false.into();
    let model = Arc::new(
        workflow_core::llm::ScriptedModel::new()
            .reply(examples::model_triage::diagnosis_reply().to_string())
            .reply(quiet.to_string())
            .reply(runbook_reply().to_string()),
    );
    let done = triage::Workflow::new((), ())
        .with_model(model.clone())
        .run(incident())
        .await
        .expect("repaired");
    assert!(done.output.page_oncall);
    let requests = model.requests();
    let feedback = &requests[2].messages.last().expect("feedback").content;
    assert!(
        feedback.contains("an outage pages the on-call engineer"),
        "{feedback}"
    );
}
