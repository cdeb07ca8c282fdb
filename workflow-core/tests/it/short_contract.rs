//! The short form of a contract: one `#[contract]` field of type
//! `Contract<A>` holds the five parts, built with `cx.contract(..)` whose
//! `build()` only compiles once the evidence and the open questions are
//! said (`ui-tests/tests/ui/fail/contract-builder-unsaid.rs`). Every
//! guarantee of the five marked fields holds: each part required and
//! non-null on the wire and in the schema, read at the receipt (scope,
//! expiry, open questions, stop), seen by a gate.

use std::sync::Arc;

use serde_json::{Value, json};
use workflow_core::prelude::*;

use crate::fixtures::assert_rejected;

/// What the caller asks for: a number, the questions it leaves open, and
/// whether the worker carries them on (or drops them).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Request {
    pub n: u32,
    pub open: Vec<String>,
    pub carry: bool,
    pub op: String,
}

#[workflow(entry = intake, output = u32)]
pub mod short {
    use super::*;

    /// Intake -> worker.
    #[handoff]
    pub struct Job {
        #[contract]
        pub contract: Contract<authority::Work>,
        pub n: u32,
        pub carry: bool,
    }

    /// Worker -> finisher.
    #[handoff]
    pub struct Finish {
        #[contract]
        pub contract: Contract<authority::Close>,
        pub n: u32,
    }

    #[agent(owns = [Plan], to = [worker])]
    async fn intake(req: Request, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        let open = req
            .open
            .iter()
            .map(|q| Uncertainty::new(q.clone(), "unknown"));
        Ok(intake::Next::Worker(Job {
            contract: cx
                .contract(authority::Work, Operation::new(req.op, "double it"))
                .evidence([Evidence::complete("user", format!("n = {}", req.n))])
                .open(open)
                .build(),
            n: req.n,
            carry: req.carry,
        }))
    }

    #[agent(owns = [Work], to = [finisher])]
    async fn worker(job: Job, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        let open = if job.carry {
            job.contract.open.clone()
        } else {
            Vec::new()
        };
        Ok(worker::Next::Finisher(Finish {
            contract: cx
                .contract(authority::Close, Operation::new("close", "hand back"))
                .evidence([])
                .open(open)
                .build(),
            n: job.n * 2,
        }))
    }

    #[agent(owns = [Close], to = [END])]
    async fn finisher(f: Finish, _cx: finisher::Context<'_>) -> Result<finisher::Next, Reject> {
        Ok(finisher::Next::End(f.n))
    }
}

fn request(n: u32) -> Request {
    Request {
        n,
        open: vec![],
        carry: true,
        op: "double".into(),
    }
}

#[tokio::test]
async fn a_short_form_run_records_the_contract_with_the_runtime_defaults() {
    let done = short::Workflow::new((), ())
        .run(request(21))
        .await
        .expect("completes");
    assert_eq!(done.output, 42);
    let job: Value =
        serde_json::from_str(&done.transcript.payload(1).expect("intake -> worker")).unwrap();
    assert_eq!(
        job["contract"],
        json!({
            "op": {"name": "double", "detail": "double it"},
            // Leased by intake, which works under no scope: until the
            // run's hop cap.
            "scope": {"authority": "Work", "expires": {"at_hop": short::MAX_HOPS}},
            "evidence": [{"source": "user", "claim": "n = 21", "complete": true}],
            "open": [],
            // The workflow's bound.
            "stop": [{"kind": "hop_reached", "hop": short::MAX_HOPS}],
        })
    );
    let finish: Value =
        serde_json::from_str(&done.transcript.payload(2).expect("worker -> finisher")).unwrap();
    assert_eq!(
        finish["contract"]["scope"],
        json!({"authority": "Close", "expires": {"at_hop": short::MAX_HOPS}})
    );
}

#[tokio::test]
async fn an_open_question_the_contract_drops_is_rejected_at_the_receipt() {
    let mut req = request(1);
    req.open = vec!["is it prime?".into()];
    // Carried forward: accepted, and handed to the caller with the output.
    let done = short::Workflow::new((), ())
        .run(req.clone())
        .await
        .expect("carried");
    assert_eq!(done.transcript.unresolved(), ["is it prime?"]);
    // Dropped by the worker: the finisher's receipt rejects it.
    req.carry = false;
    let aborted = short::Workflow::new((), ())
        .run(req)
        .await
        .expect_err("dropped");
    assert_rejected(
        &aborted,
        "worker",
        "finisher",
        RejectReason::UncertaintyDropped {
            question: "is it prime?".into(),
        },
    );
}

/// Denies a transfer whose contract asks for the operation `forbidden`:
/// the gate sees the parts of a `#[contract]` field under `contract`.
struct DenyOperation;

impl workflow_core::Gate for DenyOperation {
    fn name(&self) -> std::borrow::Cow<'static, str> {
        "deny-operation".into()
    }
    fn check(&self, input: &Value) -> Result<(), Vec<String>> {
        // `null` for the payloads that are not handoffs (the request, the
        // output); every part of a handoff's contract otherwise.
        let contract = &input["contract"];
        if contract.is_object() {
            for part in ["operation", "authority", "evidence", "uncertainty", "stop"] {
                if contract.get(part).is_none() {
                    return Err(vec![format!("the gate does not see part `{part}`")]);
                }
            }
        }
        if contract["operation"]["name"] == "forbidden" {
            return Err(vec!["operation `forbidden`".into()]);
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_gate_sees_every_part_of_the_contract_field() {
    let wf = short::Workflow::new((), ()).with_gate(Arc::new(DenyOperation));
    wf.run(request(2)).await.expect("every part is seen");
    let mut req = request(2);
    req.op = "forbidden".into();
    let aborted = wf.run(req).await.expect_err("denied");
    assert_rejected(
        &aborted,
        "intake",
        "worker",
        RejectReason::Denied {
            gate: "deny-operation".into(),
            messages: vec!["operation `forbidden`".into()],
        },
    );
}

fn job() -> Value {
    json!({
        "contract": {
            "op": {"name": "double", "detail": ""},
            "scope": {"authority": "Work", "expires": "never"},
            "evidence": [],
            "open": [],
            "stop": [],
        },
        "n": 1,
        "carry": true,
    })
}

#[test]
fn every_part_of_the_contract_field_is_required_and_non_null() {
    let schema = workflow_core::schema::root_schema::<short::Job>();
    let validator = jsonschema::draft202012::new(&schema).expect("the schema compiles");
    serde_json::from_value::<short::Job>(job()).expect("a complete payload reads");
    assert!(validator.is_valid(&job()));
    let mut broken = Vec::new();
    let mut no_contract = job();
    no_contract.as_object_mut().unwrap().remove("contract");
    broken.push(("no contract".to_owned(), no_contract));
    let mut null_contract = job();
    null_contract["contract"] = Value::Null;
    broken.push(("null contract".to_owned(), null_contract));
    for part in ["op", "scope", "evidence", "open", "stop"] {
        let mut missing = job();
        missing["contract"].as_object_mut().unwrap().remove(part);
        broken.push((format!("no {part}"), missing));
        let mut null = job();
        null["contract"][part] = Value::Null;
        broken.push((format!("null {part}"), null));
    }
    let mut unknown = job();
    unknown["contract"]["extra"] = json!(1);
    broken.push(("an unknown part".to_owned(), unknown));
    for (what, payload) in broken {
        assert!(
            serde_json::from_value::<short::Job>(payload.clone()).is_err(),
            "serde reads a payload with {what}"
        );
        assert!(
            !validator.is_valid(&payload),
            "the schema accepts a payload with {what}"
        );
    }
}

#[test]
fn the_builder_says_every_part_and_replaces_the_defaults_on_request() {
    let contract = Contract::builder(
        Operation::new("go", ""),
        Scope::new(short::authority::Work),
        StopWhen::at_hop(3),
    )
    .open([])
    .evidence([Evidence::partial("lookup", "page 1 of 2")])
    .stop(StopWhen::at_hop(2))
    .scope(Scope::new(short::authority::Work).until_hop(1))
    .build();
    assert_eq!(contract.stop, StopWhen::at_hop(2));
    assert_eq!(contract.scope.expires, Expiry::AtHop(1));
    assert_eq!(contract.evidence.len(), 1);
    assert!(contract.open.is_empty());
}
