//! A payment: a card is charged, then the receipt is mailed. The charge
//! must happen once, even when the process dies after it and the run is
//! resumed: the ledger journals the charge's outcome before the agent uses
//! it (a resumed turn is served it), and the charge carries its call id as
//! idempotency key (for the process that dies between the charge and its
//! journal entry). The crash test of tool calls (`tests/it/crash_tools.rs`)
//! kills a process running it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// What the customer ordered.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Order {
    /// Who pays.
    pub customer: String,
    /// How much, in cents.
    pub amount: u32,
}

/// What a run ends with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Paid {
    /// The charge made.
    pub charge_id: String,
}

/// The `charge` request.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChargeRequest {
    /// The run charging (the provider logs it with the charge).
    pub run_id: u64,
    /// Who pays.
    pub customer: String,
    /// How much, in cents.
    pub amount: u32,
}

/// A charge made.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Charged {
    /// Its id.
    pub charge_id: String,
}

/// Every charge made is a usable result.
impl FailFast for Charged {}

/// A fake payment provider that deduplicates requests by key, as card APIs
/// do (an `Idempotency-Key` header): every request is logged to
/// `requests`, and a charge is made (logged to `charges`, one line `run_id
/// key customer amount`) only for a key it has not seen. Files, so that a
/// test can count across processes.
pub struct Provider {
    /// The file requests are logged to, one line `run_id key`.
    pub requests: PathBuf,
    /// The file charges are logged to.
    pub charges: PathBuf,
    /// How long mailing a receipt takes.
    pub mail_delay: Duration,
}

/// Appends `line` to `path` with one `write`: a killed process leaves it
/// whole or absent.
fn append(path: &Path, line: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
}

impl Provider {
    /// Charges `request` under idempotency key `key`, once per key.
    fn charge(&self, key: &str, request: &ChargeRequest) -> std::io::Result<Charged> {
        append(&self.requests, &format!("{} {key}\n", request.run_id))?;
        let made = std::fs::read_to_string(&self.charges).unwrap_or_default();
        let seen = made.lines().any(|l| l.split(' ').nth(1) == Some(key));
        if !seen {
            let line = format!(
                "{} {key} {} {}\n",
                request.run_id, request.customer, request.amount
            );
            append(&self.charges, &line)?;
        }
        Ok(Charged {
            charge_id: format!("ch_{}_{}", request.customer, request.amount),
        })
    }
}

#[workflow(entry = intake, output = Paid, deps = Provider)]
pub mod payment {
    use super::*;

    /// Intake -> cashier: charge this.
    #[handoff]
    pub struct Bill {
        /// What the cashier is asked to do.
        #[operation]
        pub op: Operation,
        /// The authority it exercises.
        #[authority]
        pub scope: Scope<authority::Charge>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition.
        #[stop]
        pub stop: StopWhen,
        /// Who pays.
        pub customer: String,
        /// How much, in cents.
        pub amount: u32,
    }

    // ANCHOR: charge
    /// Charges the customer's card, under the call's id as idempotency key:
    /// a call made again after a crash does not charge twice.
    #[tool(needs = Charge, effect = write)]
    async fn charge(request: ChargeRequest, provider: &Provider) -> Result<Charged, ToolError> {
        let key = workflow_core::tool::call_id()
            .ok_or_else(|| ToolError::new("charge", "called outside a tool call"))?;
        provider
            .charge(&key.to_string(), &request)
            .map_err(|e| ToolError::new("charge", e.to_string()))
    }
    // ANCHOR_END: charge

    /// Mails the receipt of a charge.
    #[tool(needs = Charge, effect = write)]
    async fn mail_receipt(charge: Charged, provider: &Provider) -> Result<Charged, ToolError> {
        tokio::time::sleep(provider.mail_delay).await;
        Ok(charge)
    }

    /// Turns the order into a bill.
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

    /// Charges the card, then mails the receipt.
    #[agent(owns = [Charge], tools = [charge, mail_receipt], to = [END])]
    async fn cashier(bill: Bill, cx: cashier::Context<'_>) -> Result<cashier::Next, Reject> {
        let request = ChargeRequest {
            run_id: cx.run_id(),
            customer: bill.customer,
            amount: bill.amount,
        };
        let charged = cx.call(tools::charge, request).await?;
        let mailed = cx.call(tools::mail_receipt, charged).await?;
        Ok(cashier::Next::End(Paid {
            charge_id: mailed.charge_id,
        }))
    }
}

/// The order of the crash test's runs.
pub fn order() -> Order {
    Order {
        customer: "acme".into(),
        amount: 4000,
    }
}
