//! Tool calls after a crash: a call whose outcome was journaled in the
//! ledger is not made again when the run resumes; its outcome is served to
//! the turn that runs again, and the run ends with the records of a run
//! that never crashed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use workflow_core::ledger::{JournalEntry, Ledger, LedgerError, LedgerRecord, MemoryLedger};
use workflow_core::prelude::*;
use workflow_core::tool::ToolOutcome;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Order {
    pub customer: String,
    pub amount: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Paid {
    pub charge_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChargeRequest {
    pub customer: String,
    pub amount: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Charged {
    pub charge_id: String,
}
impl FailFast for Charged {}

/// A payment provider that counts the charges it makes; with `hang`, the
/// receipt mail never goes out (the process dies while it waits).
pub struct Provider {
    pub charges: AtomicU32,
    pub mails: AtomicU32,
    pub hang: bool,
    /// The call id of each mail requested.
    pub mail_ids: std::sync::Mutex<Vec<String>>,
}

impl Provider {
    pub fn new(hang: bool) -> Self {
        Provider {
            charges: AtomicU32::new(0),
            mails: AtomicU32::new(0),
            hang,
            mail_ids: std::sync::Mutex::new(Vec::new()),
        }
    }
}

#[workflow(entry = intake, output = Paid, deps = Provider)]
pub mod payment {
    use super::*;

    #[handoff]
    pub struct Bill {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Charge>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub customer: String,
        pub amount: u32,
    }

    /// Charges a card: not to be done twice.
    #[tool(needs = Charge, effect = write)]
    async fn charge(request: ChargeRequest, provider: &Provider) -> Result<Charged, ToolError> {
        let n = provider.charges.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Charged {
            charge_id: format!("ch_{}_{}_{n}", request.customer, request.amount),
        })
    }

    /// Mails the receipt.
    #[tool(needs = Charge, effect = write)]
    async fn mail_receipt(charge: Charged, provider: &Provider) -> Result<Charged, ToolError> {
        let id =
            workflow_core::tool::call_id().ok_or_else(|| ToolError::new("mail", "no call id"))?;
        provider.mail_ids.lock().unwrap().push(id.to_string());
        if provider.hang {
            std::future::pending::<()>().await;
        }
        provider.mails.fetch_add(1, Ordering::SeqCst);
        Ok(charge)
    }

    #[agent(owns = [Intake], to = [cashier])]
    async fn intake(order: Order, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Ok(intake::Next::Cashier(Bill {
            op: Operation::new("charge", "the order"),
            scope: cx.lease(authority::Charge).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            customer: order.customer,
            amount: order.amount,
        }))
    }

    #[agent(owns = [Charge], tools = [charge, mail_receipt], to = [END])]
    async fn cashier(bill: Bill, cx: cashier::Context<'_>) -> Result<cashier::Next, Reject> {
        let charged = cx
            .call(
                tools::charge,
                ChargeRequest {
                    customer: bill.customer,
                    amount: bill.amount,
                },
            )
            .await?;
        let mailed = cx.call(tools::mail_receipt, charged).await?;
        Ok(cashier::Next::End(Paid {
            charge_id: mailed.charge_id,
        }))
    }
}

pub fn order() -> Order {
    Order {
        customer: "acme".into(),
        amount: 40,
    }
}

/// Runs an order until the cashier waits on the mail forever, then drops
/// the run, as a crash would cut it: its id.
pub async fn crashed_run(ledger: Arc<dyn Ledger>) -> u64 {
    let wf = payment::Workflow::new((), Provider::new(true)).with_ledger(ledger.clone());
    let cut = tokio::time::timeout(Duration::from_millis(50), wf.run(order())).await;
    assert!(cut.is_err(), "the run hangs on the mail");
    assert_eq!(wf.deps().charges.load(Ordering::SeqCst), 1, "charged once");
    let runs = ledger.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        *wf.deps().mail_ids.lock().unwrap(),
        [format!("{}-2-1", runs[0])],
        "the mail is call 1 of the turn producing transfer #2"
    );
    runs[0]
}

/// Records without what differs between runs: ids, times, hashes, durations.
fn content(records: &[LedgerRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            let calls: Vec<String> = r
                .turn
                .iter()
                .flat_map(|t| &t.tool_calls)
                .map(|c| {
                    let outcome = match &c.outcome {
                        ToolOutcome::Ok { result, .. } => result.clone(),
                        ToolOutcome::Failed { error } => error.to_string(),
                    };
                    format!("{}#{}({}) -> {outcome}", c.tool, c.index, c.arguments)
                })
                .collect();
            format!(
                "#{} {} -> {} {:?} {} {:?}",
                r.seq,
                r.from,
                r.to,
                r.receipt,
                r.payload_json().unwrap(),
                calls
            )
        })
        .collect()
}

async fn clean_records() -> Vec<String> {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = payment::Workflow::new((), Provider::new(false)).with_ledger(ledger.clone());
    let run = wf
        .run(order())
        .await
        .expect("completes")
        .transcript
        .run_id();
    content(&ledger.records(run).unwrap())
}

// The SQLite journal: `examples/tests/it/crash_tools.rs` (killed processes).
#[tokio::test]
async fn a_journaled_call_is_not_made_again() {
    let ledger = Arc::new(MemoryLedger::new());
    let run = crashed_run(ledger.clone()).await;
    // The cashier's turn produces transfer #2: its charge is journaled there.
    assert_eq!(ledger.records(run).unwrap().len(), 2);
    let journaled = ledger.tool_calls(run, 2).unwrap();
    assert_eq!(journaled.len(), 1, "{journaled:?}");
    assert_eq!(journaled[0].call.tool, "charge");

    // A new process resumes the run.
    let wf = payment::Workflow::new((), Provider::new(false)).with_ledger(ledger.clone());
    let done = wf.resume(run).await.expect("resumes");
    assert_eq!(
        wf.deps().charges.load(Ordering::SeqCst),
        0,
        "the charge was served from the journal, not made again"
    );
    assert_eq!(
        wf.deps().mails.load(Ordering::SeqCst),
        1,
        "the mail went out"
    );
    assert_eq!(
        done.output.charge_id, "ch_acme_40_1",
        "the first charge's id"
    );
    let records = ledger.records(run).unwrap();
    assert_eq!(content(&records), clean_records().await);
    assert_eq!(ledger.verify_run(run), Ok(()));
}

/// A ledger that keeps records but no journal (the trait's defaults).
struct RecordsOnly(MemoryLedger);

impl Ledger for RecordsOnly {
    fn append(&self, record: &LedgerRecord) -> Result<(), LedgerError> {
        self.0.append(record)
    }
    fn records(&self, run_id: u64) -> Result<Vec<LedgerRecord>, LedgerError> {
        self.0.records(run_id)
    }
    fn runs(&self) -> Result<Vec<u64>, LedgerError> {
        self.0.runs()
    }
    fn head(&self, run_id: u64) -> Result<Option<(u32, String)>, LedgerError> {
        self.0.head(run_id)
    }
}

#[tokio::test]
async fn without_a_journal_the_cut_turn_calls_its_tools_again() {
    let ledger = Arc::new(RecordsOnly(MemoryLedger::new()));
    let run = crashed_run(ledger.clone()).await;
    let wf = payment::Workflow::new((), Provider::new(false)).with_ledger(ledger.clone());
    let done = wf.resume(run).await.expect("resumes");
    assert_eq!(
        wf.deps().charges.load(Ordering::SeqCst),
        1,
        "at least once: charged again"
    );
    assert_eq!(done.output.charge_id, "ch_acme_40_1");
}

#[tokio::test]
async fn a_call_that_differs_from_the_journaled_one_is_made() {
    // The journal holds a charge of another amount at the cashier's first
    // call (the agent asks something else after the restart): it is made.
    let ledger = Arc::new(MemoryLedger::new());
    let run = crashed_run(ledger.clone()).await;
    let mut call = ledger.tool_calls(run, 2).unwrap().remove(0).call;
    call.arguments = call.arguments.replace("40", "41");
    // Journaled at its place, bound to the record the turn works on.
    let anchor = ledger.records(run).unwrap()[1].hash.clone();
    let entry = JournalEntry::bind(run, 2, &anchor, call);
    ledger.append_tool_call(run, 2, &entry).unwrap();
    let wf = payment::Workflow::new((), Provider::new(false)).with_ledger(ledger.clone());
    wf.resume(run).await.expect("resumes");
    assert_eq!(wf.deps().charges.load(Ordering::SeqCst), 1);
    assert_eq!(
        ledger.tool_calls(run, 2).unwrap()[0].call.arguments,
        r#"{"customer":"acme","amount":40}"#,
        "the call made replaces the journaled one"
    );
}

/// A journaled result that gives a key twice (its digest made to match)
/// is not served with either value: the resumed turn gets a typed error
/// naming the key.
#[tokio::test]
async fn a_journaled_result_with_a_key_twice_is_refused() {
    use sha2::Digest;
    let ledger = Arc::new(MemoryLedger::new());
    let run = crashed_run(ledger.clone()).await;
    let mut call = ledger.tool_calls(run, 2).unwrap().remove(0).call;
    let forged = r#"{"charge_id":"ch_forged","charge_id":"ch_acme_40_1"}"#.to_owned();
    call.outcome = ToolOutcome::Ok {
        digest: hex::encode(sha2::Sha256::digest(forged.as_bytes())),
        result: forged,
    };
    // Bound again as the journal binds its entries (by someone who knows
    // the format): only the duplicate key is left to find.
    let anchor = ledger.records(run).unwrap()[1].hash.clone();
    let entry = workflow_core::ledger::JournalEntry::bind(run, 2, &anchor, call);
    ledger.append_tool_call(run, 2, &entry).unwrap();
    let wf = payment::Workflow::new((), Provider::new(false)).with_ledger(ledger.clone());
    let aborted = wf.resume(run).await.expect_err("refused");
    assert!(
        aborted.error.to_string().contains("`charge_id` twice"),
        "{}",
        aborted.error
    );
    assert_eq!(wf.deps().mails.load(Ordering::SeqCst), 0, "nothing went on");
}
