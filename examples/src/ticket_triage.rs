//! A support desk: intake -> classifier -> billing (a refund tool) or tech
//! (a status page), with tech allowed to send a ticket back to the
//! classifier once. Written the short way: every handoff holds its
//! contract in one `#[contract]` field built with `cx.contract(..)`, the
//! customer of every handoff is pinned to the run's tenant by the compiler
//! (`#[pin(tenant)]`), and the status page's honest "no incident" is a
//! valid answer (`EmptyOk`), not a failed tool call.

use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// What a customer writes in.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// Who writes.
    pub customer: String,
    /// What they write.
    pub text: String,
    /// The amount they say was charged, in cents (0: none named).
    pub amount_cents: u64,
}

/// How the desk answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Resolution {
    /// For whom.
    pub customer: String,
    /// What was done.
    pub action: String,
}

/// An incident on the status page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Incident {
    /// The service.
    pub service: String,
    /// What is wrong.
    pub summary: String,
}

/// A refund to make.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RefundRequest {
    /// To whom.
    pub customer: String,
    /// How much, in cents.
    pub amount_cents: u64,
}

/// A refund made.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Refunded {
    /// The payment provider's id.
    pub refund_id: String,
}

/// Every refund made is a usable result.
impl FailFast for Refunded {}

/// The desk's systems: the status page and the refunds made.
#[derive(Debug, Default)]
pub struct Desk {
    /// The open incidents.
    pub incidents: Vec<Incident>,
    /// The refunds made, as `customer: cents`.
    pub refunds: Mutex<Vec<String>>,
}

impl Desk {
    /// The refunds made so far.
    pub fn refunds(&self) -> Vec<String> {
        self.refunds.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

#[workflow(entry = intake, output = Resolution, deps = Desk)]
pub mod triage {
    use super::*;

    /// Pinned for the run: whom the desk works for, and the largest refund.
    #[invariants(forbid = ["card_number"])]
    pub struct Root {
        /// The run's customer.
        pub tenant: String,
        /// The largest refund an agent may make, in cents.
        pub max_refund_cents: u64,
    }

    /// Intake or tech -> classifier: a ticket to route.
    #[handoff]
    pub struct Ticket {
        /// Route it.
        #[contract]
        pub contract: Contract<authority::Route>,
        /// Whose ticket: the run's tenant, checked at every receipt.
        #[pin(tenant)]
        pub customer: String,
        /// What the customer wrote (and what tech found).
        pub text: String,
        /// The amount named, in cents.
        pub amount_cents: u64,
    }

    /// Classifier -> billing: a charge to look at.
    #[handoff]
    pub struct BillingCase {
        /// Refund it if it is owed.
        #[contract]
        pub contract: Contract<authority::Refund>,
        /// Whose charge.
        #[pin(tenant)]
        pub customer: String,
        /// The amount, in cents.
        pub amount_cents: u64,
    }

    /// Classifier -> tech: a problem to diagnose.
    #[handoff]
    pub struct TechCase {
        /// Diagnose it.
        #[contract]
        pub contract: Contract<authority::Diagnose>,
        /// Whose problem.
        #[pin(tenant)]
        pub customer: String,
        /// What the customer wrote.
        pub text: String,
        /// The amount named, in cents.
        pub amount_cents: u64,
    }

    /// The open incidents of a service: none is an answer, not a failure.
    #[tool(needs = Diagnose, effect = read)]
    async fn status_page(
        service: String,
        desk: &Desk,
    ) -> Result<EmptyOk<Vec<Incident>>, ToolError> {
        let open = desk.incidents.iter().filter(|i| i.service == service);
        Ok(EmptyOk(open.cloned().collect()))
    }

    /// Refunds a charge.
    #[tool(needs = Refund, effect = write)]
    async fn refund(request: RefundRequest, desk: &Desk) -> Result<Refunded, ToolError> {
        let mut refunds = desk
            .refunds
            .lock()
            .map_err(|_| ToolError::new("refund", "the refund log is poisoned"))?;
        refunds.push(format!("{}: {}", request.customer, request.amount_cents));
        Ok(Refunded {
            refund_id: format!("re_{}", refunds.len()),
        })
    }

    /// Takes the request in as a ticket.
    #[agent(owns = [Intake], to = [classifier])]
    async fn intake(request: Request, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        let said = format!("{} wrote: {}", request.customer, request.text);
        Ok(intake::Next::Classifier(Ticket {
            contract: cx
                .contract(
                    authority::Route,
                    Operation::new("route", "route the ticket"),
                )
                .evidence([Evidence::complete("customer", said)])
                .open([])
                .build(),
            customer: request.customer,
            text: request.text,
            amount_cents: request.amount_cents,
        }))
    }

    /// Routes a ticket: money to billing, the rest to tech.
    #[agent(owns = [Route], to = [billing, tech])]
    async fn classifier(
        ticket: Ticket,
        cx: classifier::Context<'_>,
    ) -> Result<classifier::Next, Reject> {
        let evidence = ticket.contract.evidence.clone();
        if ticket.text.contains("charged") && ticket.amount_cents > 0 {
            let op = Operation::new("refund", "refund the charge if it is owed");
            return Ok(classifier::Next::Billing(BillingCase {
                contract: cx
                    .contract(authority::Refund, op)
                    .evidence(evidence)
                    .open([])
                    .build(),
                customer: ticket.customer,
                amount_cents: ticket.amount_cents,
            }));
        }
        let op = Operation::new("diagnose", "find what is wrong");
        Ok(classifier::Next::Tech(TechCase {
            contract: cx
                .contract(authority::Diagnose, op)
                .evidence(evidence)
                .open([])
                .build(),
            customer: ticket.customer,
            text: ticket.text,
            amount_cents: ticket.amount_cents,
        }))
    }

    /// Refunds a charge within the run's limit.
    #[agent(owns = [Refund], tools = [refund], to = [END])]
    #[pre(case.amount_cents <= cx.root().max_refund_cents, "a refund stays within `max_refund_cents`")]
    async fn billing(case: BillingCase, cx: billing::Context<'_>) -> Result<billing::Next, Reject> {
        let request = RefundRequest {
            customer: case.customer.clone(),
            amount_cents: case.amount_cents,
        };
        let refunded = cx.call(tools::refund, request).await?;
        Ok(billing::Next::End(Resolution {
            customer: case.customer,
            action: format!(
                "refunded {} cents ({})",
                case.amount_cents, refunded.refund_id
            ),
        }))
    }

    /// Looks at the status page. With an incident it answers; with none and
    /// a charge named, the ticket is about money after all: it goes back to
    /// the classifier (once: `classifier(max = 1)`).
    #[agent(owns = [Diagnose], tools = [status_page], to = [classifier(max = 1), END])]
    async fn tech(case: TechCase, cx: tech::Context<'_>) -> Result<tech::Next, Reject> {
        let service = if case.text.contains("login") {
            "login"
        } else {
            "checkout"
        };
        let incidents = cx.call(tools::status_page, service.to_owned()).await?;
        if let Some(incident) = incidents.first() {
            return Ok(tech::Next::End(Resolution {
                customer: case.customer,
                action: format!("known incident: {}", incident.summary),
            }));
        }
        let can_return = cx.uses_left::<classifier::Agent>().unwrap_or(0) > 0;
        if case.amount_cents > 0 && can_return {
            // Cites the status page call the turn made: the receiver
            // checks it is in the run's record, with this result.
            let found = cx.evidence_from(tools::status_page, "no open incident on checkout")?;
            return Ok(tech::Next::Classifier(Ticket {
                contract: cx
                    .contract(
                        authority::Route,
                        Operation::new("route", "no incident: a charge to look at"),
                    )
                    .evidence([found])
                    .open([])
                    .build(),
                customer: case.customer,
                text: format!("charged {} cents, no incident found", case.amount_cents),
                amount_cents: case.amount_cents,
            }));
        }
        Ok(tech::Next::End(Resolution {
            customer: case.customer,
            action: "no incident found; asked the customer for details".into(),
        }))
    }
}

/// The run's root: works for `tenant`, refunds up to 50 units.
pub fn root(tenant: &str) -> triage::Root {
    triage::Root {
        tenant: tenant.into(),
        max_refund_cents: 5_000,
    }
}

/// A request from `customer`.
pub fn request(customer: &str, text: &str, amount_cents: u64) -> Request {
    Request {
        customer: customer.into(),
        text: text.into(),
        amount_cents,
    }
}
