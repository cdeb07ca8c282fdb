//! Replay: a recorded run runs again with its tool responses served from
//! the record; a changed workflow's first divergence is reported at its
//! transition.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use workflow_core::ledger::{Ledger, LedgerRecord, MemoryLedger};
use workflow_core::prelude::*;
use workflow_core::{Difference, ReplayError};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Question {
    pub customer: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Answer {
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccountQuery {
    pub customer: String,
    pub with_invoices: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Account {
    pub customer: String,
    pub plan: String,
    pub open_invoices: u32,
}

impl FailFast for Account {}

/// The tools' backend: counts the lookups it answers.
#[derive(Default)]
pub struct Crm {
    pub lookups: AtomicU32,
}

fn query_v1(customer: &str) -> AccountQuery {
    AccountQuery {
        customer: customer.to_owned(),
        with_invoices: true,
    }
}

/// Version 3 asks the tool something else.
fn query_v3(customer: &str) -> AccountQuery {
    AccountQuery {
        customer: customer.to_owned(),
        with_invoices: false,
    }
}

fn summary_v1(account: &Account) -> String {
    format!("{} on {}", account.customer, account.plan)
}

/// Version 2 hands over a different summary at hop 2.
fn summary_v2(account: &Account) -> String {
    format!(
        "{} on {}, {} open invoices",
        account.customer, account.plan, account.open_invoices
    )
}

/// The same workflow (`ticket`) in several versions: triage -> lookup (one
/// tool call) -> responder -> END.
macro_rules! ticket_version {
    ($version:ident, query = $query:path, summary = $summary:path) => {
        pub mod $version {
            use super::*;

            #[workflow(entry = triage, output = Answer, deps = Crm)]
            pub mod ticket {
                use super::*;

                #[handoff]
                pub struct Lookup {
                    #[operation]
                    pub op: Operation,
                    #[authority]
                    pub scope: Scope<authority::ReadAccount>,
                    #[evidence]
                    pub evidence: Vec<Evidence>,
                    #[uncertainty]
                    pub open: Vec<Uncertainty>,
                    #[stop]
                    pub stop: StopWhen,
                    pub customer: String,
                }

                #[handoff]
                pub struct Draft {
                    #[operation]
                    pub op: Operation,
                    #[authority]
                    pub scope: Scope<authority::Reply>,
                    #[evidence]
                    pub evidence: Vec<Evidence>,
                    #[uncertainty]
                    pub open: Vec<Uncertainty>,
                    #[stop]
                    pub stop: StopWhen,
                    pub summary: String,
                }

                /// Looks an account up.
                #[tool(needs = ReadAccount, effect = read)]
                async fn find_account(
                    query: AccountQuery,
                    crm: &Crm,
                ) -> Result<Account, ToolError> {
                    crm.lookups.fetch_add(1, Ordering::SeqCst);
                    Ok(Account {
                        customer: query.customer,
                        plan: "team".into(),
                        open_invoices: if query.with_invoices { 2 } else { 0 },
                    })
                }

                #[agent(owns = [Triage], to = [lookup])]
                async fn triage(
                    q: Question,
                    cx: triage::Context<'_>,
                ) -> Result<triage::Next, Reject> {
                    Ok(triage::Next::Lookup(Lookup {
                        op: Operation::new("lookup", q.text),
                        // Until the responder's turn, the same under the
                        // lower hop cap of a replay below.
                        scope: cx.lease(authority::ReadAccount).until_hop(2),
                        evidence: vec![],
                        open: vec![],
                        stop: StopWhen::at_hop(cx.hop() + 8),
                        customer: q.customer,
                    }))
                }

                #[agent(owns = [ReadAccount], tools = [find_account], to = [responder])]
                async fn lookup(
                    task: Lookup,
                    cx: lookup::Context<'_>,
                ) -> Result<lookup::Next, Reject> {
                    let account = cx.call(tools::find_account, $query(&task.customer)).await?;
                    Ok(lookup::Next::Responder(Draft {
                        op: Operation::new("reply", ""),
                        scope: cx.lease(authority::Reply).as_long_as_mine(),
                        evidence: vec![
                            cx.evidence_from(tools::find_account, account.plan.clone())?,
                        ],
                        open: vec![],
                        stop: StopWhen::at_hop(cx.hop() + 8),
                        summary: $summary(&account),
                    }))
                }

                #[agent(owns = [Reply], to = [END])]
                async fn responder(
                    draft: Draft,
                    _cx: responder::Context<'_>,
                ) -> Result<responder::Next, Reject> {
                    Ok(responder::Next::End(Answer {
                        text: format!("hello {}", draft.summary),
                    }))
                }
            }
        }
    };
}

ticket_version!(v1, query = query_v1, summary = summary_v1);
ticket_version!(v2, query = query_v1, summary = summary_v2);
ticket_version!(v3, query = query_v3, summary = summary_v1);

fn question() -> Question {
    Question {
        customer: "acme".into(),
        text: "why was I charged twice?".into(),
    }
}

/// A run of version 1, recorded.
async fn recorded() -> Vec<LedgerRecord> {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = v1::ticket::Workflow::new((), Crm::default()).with_ledger(ledger.clone());
    let done = wf.run(question()).await.expect("version 1 completes");
    assert_eq!(wf.deps().lookups.load(Ordering::SeqCst), 1);
    ledger.records(done.transcript.run_id()).unwrap()
}

#[tokio::test]
async fn a_recorded_run_replays_identically_without_calling_its_tools() {
    let records = recorded().await;
    assert_eq!(records.len(), 4);
    let wf = v1::ticket::Workflow::new((), Crm::default());
    let report = wf.replay(&records).await.expect("replays");
    assert!(report.is_identical(), "{report}");
    assert_eq!(report.run_id, records[0].run_id);
    assert_eq!(report.transitions, 4);
    assert!(!report.unfinished);
    assert_eq!(
        wf.deps().lookups.load(Ordering::SeqCst),
        0,
        "the tool's response came from the record"
    );
    assert_eq!(
        report.to_string(),
        format!(
            "run {} replays identically (4 transitions)",
            records[0].run_id
        )
    );
}

#[tokio::test]
async fn a_changed_payload_is_reported_at_its_transition() {
    let records = recorded().await;
    let report = v2::ticket::Workflow::new((), Crm::default())
        .replay(&records)
        .await
        .expect("replays");
    let d = report.divergence.expect("version 2 diverges");
    assert_eq!(d.seq, 2, "the handoff of hop 2: {d}");
    assert_eq!(records[2].hop, 2);
    assert_eq!(d.difference, Difference::Payload);
    let recorded: serde_json::Value = serde_json::from_str(d.recorded.as_deref().unwrap()).unwrap();
    let replayed: serde_json::Value = serde_json::from_str(d.replayed.as_deref().unwrap()).unwrap();
    assert_eq!(recorded["summary"], "acme on team");
    assert_eq!(replayed["summary"], "acme on team, 2 open invoices");
    let text = format!("{d}");
    assert!(
        text.starts_with("transition #2: the payload differs\n  recorded: {"),
        "{text}"
    );
}

#[tokio::test]
async fn other_tool_arguments_are_a_divergence_not_a_live_call() {
    let records = recorded().await;
    let wf = v3::ticket::Workflow::new((), Crm::default());
    let report = wf.replay(&records).await.expect("replays");
    let d = report.divergence.expect("version 3 diverges");
    assert_eq!(d.seq, 2, "{d}");
    assert_eq!(d.difference, Difference::ToolCall { index: 0 });
    let recorded: serde_json::Value = serde_json::from_str(d.recorded.as_deref().unwrap()).unwrap();
    let replayed: serde_json::Value = serde_json::from_str(d.replayed.as_deref().unwrap()).unwrap();
    assert_eq!(recorded["tool"], "find_account");
    assert_eq!(recorded["arguments"]["with_invoices"], true);
    assert_eq!(replayed["arguments"]["with_invoices"], false);
    assert_eq!(
        wf.deps().lookups.load(Ordering::SeqCst),
        0,
        "no live call in a replay"
    );
}

#[tokio::test]
async fn a_changed_receipt_is_reported_at_its_transition() {
    // The same workflow under a lower hop cap: the responder's receipt
    // rejects the transfer the recording shows accepted.
    let records = recorded().await;
    let report = v1::ticket::Workflow::new((), Crm::default())
        .with_max_hops(2)
        .replay(&records)
        .await
        .expect("replays");
    let d = report.divergence.expect("diverges");
    assert_eq!((d.seq, &d.difference), (2, &Difference::Receipt), "{d}");
    assert_eq!(d.recorded.as_deref(), Some(r#"{"status":"accepted"}"#));
    assert!(
        d.replayed.as_deref().unwrap().contains("hop_cap"),
        "{:?}",
        d.replayed
    );
}

#[tokio::test]
async fn a_recording_cut_mid_run_replays_up_to_its_end() {
    let records = recorded().await;
    // Cut after the accepted handoff to lookup (its turn never recorded),
    // and after the accepted handoff to responder.
    for cut in [2, 3] {
        let report = v1::ticket::Workflow::new((), Crm::default())
            .replay(&records[..cut])
            .await
            .expect("replays");
        assert!(report.is_identical(), "cut at {cut}: {report}");
        assert!(report.unfinished);
        assert_eq!(report.transitions, cut as u32);
    }
    // A cut recording still finds a changed payload before its end.
    let report = v2::ticket::Workflow::new((), Crm::default())
        .replay(&records[..3])
        .await
        .expect("replays");
    assert_eq!(report.divergence.map(|d| d.seq), Some(2));
}

#[tokio::test]
async fn records_that_do_not_verify_or_belong_to_another_workflow_are_refused() {
    let records = recorded().await;
    let wf = v1::ticket::Workflow::new((), Crm::default());

    let mut edited = records.clone();
    edited[1].payload.replace_range(0..2, "00");
    match wf.replay(&edited).await {
        Err(ReplayError::Tampered { tampering, .. }) => {
            assert_eq!(
                tampering,
                workflow_core::ledger::Tampering::Edited { seq: 1 }
            )
        }
        other => panic!("an edited record was replayed: {other:?}"),
    }

    let mut other = records.clone();
    other[0].workflow = "billing".into();
    assert!(matches!(
        wf.replay(&other).await,
        Err(ReplayError::OtherWorkflow { .. })
    ));
    assert_eq!(wf.replay(&[]).await, Err(ReplayError::NoRecords));
}

#[tokio::test]
async fn replay_run_reads_the_attached_ledger() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = v1::ticket::Workflow::new((), Crm::default()).with_ledger(ledger.clone());
    let run_id = wf.run(question()).await.expect("runs").transcript.run_id();
    let report = wf.replay_run(run_id).await.expect("replays");
    assert!(report.is_identical(), "{report}");
    assert_eq!(
        ledger.records(run_id).unwrap().len(),
        4,
        "a replay writes nothing to the ledger"
    );
    assert_eq!(
        v1::ticket::Workflow::new((), Crm::default())
            .replay_run(run_id)
            .await,
        Err(ReplayError::NoLedger)
    );
}
