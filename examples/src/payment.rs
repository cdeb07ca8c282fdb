//! A payment: a card is charged, then the receipt is mailed. The charge
//! must happen once, even when the process dies after it and the run is
//! resumed: the crash test of tool calls (`tests/crash_tools.rs`) kills a
//! process running it.

use std::io::Write;
use std::path::PathBuf;
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

/// A fake payment provider: each charge is appended to a file, one line per
/// charge (`run_id customer amount`), so that a test can count them across
/// processes; mailing a receipt takes a while.
pub struct Provider {
    /// The file charges are logged to.
    pub charges: PathBuf,
    /// How long mailing a receipt takes.
    pub mail_delay: Duration,
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

    /// Charges the customer's card.
    #[tool(needs = Charge, effect = write)]
    async fn charge(request: ChargeRequest, provider: &Provider) -> Result<Charged, ToolError> {
        let line = format!(
            "{} {} {}\n",
            request.run_id, request.customer, request.amount
        );
        // One `write` of one line: a killed process leaves it whole or absent.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&provider.charges)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .map_err(|e| ToolError::new("charge", e.to_string()))?;
        Ok(Charged {
            charge_id: format!("ch_{}_{}", request.customer, request.amount),
        })
    }

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
            scope: cx.delegate(authority::Charge),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::any([]),
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
