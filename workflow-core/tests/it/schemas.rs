//! The published shape of a workflow: its JSON Schemas (draft 2020-12),
//! their export and drift check, the manifest and the Mermaid diagram.
//!
//! The workflow under test has handoffs, a loop with a bound, tools (one
//! needing an authority), invariants, conditions and a timeout, so every
//! kind of schema and every manifest field is exercised.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use workflow_core::prelude::*;
use workflow_core::{Manifest, SchemaSet, TransferRecord};

/// A customer's order: the workflow input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Order {
    /// Who pays.
    pub customer: String,
    /// How much, in cents.
    pub amount: u64,
}

/// What a run ends with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Invoice {
    /// Who paid.
    pub customer: String,
    /// How much was charged, in cents.
    pub charged: u64,
    /// How many audits it took.
    pub audits: u32,
}

/// The `lookup_customer` query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CustomerQuery {
    /// Whom to look up.
    pub customer: String,
}

/// What `lookup_customer` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CustomerRecord {
    /// The customer.
    pub customer: String,
    /// Their tenant.
    pub tenant: String,
}

/// The `charge_card` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChargeRequest {
    /// Who pays.
    pub customer: String,
    /// How much, in cents.
    pub amount: u64,
}

/// What `charge_card` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChargeResult {
    /// How much was charged, in cents.
    pub charged: u64,
}

impl workflow_core::FailFast for CustomerRecord {}
impl workflow_core::FailFast for ChargeResult {}

#[workflow(entry = intake, output = Invoice)]
pub mod billing {
    use super::*;

    /// Pinned for the run.
    #[invariants]
    pub struct Root {
        /// The tenant the run works for.
        pub tenant: String,
        /// The largest charge allowed, in cents.
        pub max_amount: u64,
    }

    /// Intake or auditor -> charger.
    #[handoff]
    #[derive(Debug, Clone, PartialEq)]
    pub struct ChargeTask {
        /// What to charge.
        #[operation]
        pub op: Operation,
        /// The charger's authority.
        #[authority]
        pub scope: Scope<authority::Charge>,
        /// What the sender relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What it left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// Who pays.
        pub customer: String,
        /// How much, in cents.
        pub amount: u64,
        /// Which attempt this is, from 1.
        pub attempt: u32,
    }

    /// Charger -> auditor.
    #[handoff]
    #[derive(Debug, Clone, PartialEq)]
    pub struct AuditTask {
        /// What to audit.
        #[operation]
        pub op: Operation,
        /// The auditor's authority.
        #[authority]
        pub scope: Scope<authority::Audit>,
        /// What the charger relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What it left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// Who paid.
        pub customer: String,
        /// How much was charged.
        pub charged: u64,
        /// Which attempt this was.
        pub attempt: u32,
    }

    /// Looks a customer up.
    #[tool(effect = read)]
    async fn lookup_customer(
        query: CustomerQuery,
        _deps: &(),
    ) -> Result<CustomerRecord, ToolError> {
        Ok(CustomerRecord {
            customer: query.customer,
            tenant: "acme".into(),
        })
    }

    /// Charges a card: a side effect that needs the `Charge` authority.
    #[tool(needs = Charge, effect = write)]
    async fn charge_card(request: ChargeRequest, _deps: &()) -> Result<ChargeResult, ToolError> {
        Ok(ChargeResult {
            charged: request.amount,
        })
    }

    /// The first charge task of an order, its lease valid until `until`.
    pub fn first_task(order: &Order, tenant: &str, until: u32) -> ChargeTask {
        ChargeTask {
            op: Operation::new("charge", format!("charge {}", order.customer)),
            scope: Scope::new(authority::Charge).until_hop(until),
            evidence: vec![Evidence::complete(
                "lookup_customer",
                format!("{} belongs to {tenant}", order.customer),
            )],
            open: vec![Uncertainty::new(
                "is the card still valid?",
                "the charge fails",
            )],
            stop: StopWhen::at_hop(until + 4).or_when("the customer cancels"),
            customer: order.customer.clone(),
            amount: order.amount,
            attempt: 1,
        }
    }

    #[agent(owns = [Intake], tools = [lookup_customer], to = [charger])]
    #[pre(order.amount > 0, "an order charges something")]
    async fn intake(order: Order, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        let query = CustomerQuery {
            customer: order.customer.clone(),
        };
        let record = cx.call(tools::lookup_customer, query).await?;
        let mut task = first_task(
            &order,
            &record.tenant,
            // The run's hop cap: as long as a lease from this turn may be.
            cx.hop() + cx.hops_left() + 1,
        );
        let cited = cx.citation(tools::lookup_customer)?;
        task.evidence = task
            .evidence
            .into_iter()
            .map(|e| e.citing(cited.clone()))
            .collect();
        Ok(intake::Next::Charger(task))
    }

    #[agent(owns = [Charge], tools = [charge_card], to = [auditor], timeout_ms = 1000)]
    #[pre(task.amount <= cx.root().max_amount, "the amount is within the tenant's limit")]
    async fn charger(task: ChargeTask, cx: charger::Context<'_>) -> Result<charger::Next, Reject> {
        let request = ChargeRequest {
            customer: task.customer.clone(),
            amount: task.amount,
        };
        let result = cx.call(tools::charge_card, request).await?;
        Ok(charger::Next::Auditor(AuditTask {
            op: Operation::new("audit", "check the charge"),
            scope: cx.lease(authority::Audit).as_long_as_mine(),
            // The charge going through answers whether the card is valid.
            evidence: vec![
                cx.evidence_from(tools::charge_card, "charged")?
                    .resolving("is the card still valid?"),
            ],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            customer: task.customer,
            charged: result.charged,
            attempt: task.attempt,
        }))
    }

    #[agent(owns = [Audit], to = [charger(max = 2), END])]
    #[post(!matches!(out, auditor::Next::End(i) if i.charged == 0), "an invoice charges something")]
    async fn auditor(task: AuditTask, cx: auditor::Context<'_>) -> Result<auditor::Next, Reject> {
        if task.attempt < 2 {
            return Ok(auditor::Next::Charger(ChargeTask {
                op: Operation::new("charge", "charge again"),
                scope: cx.lease(authority::Charge).as_long_as_mine(),
                evidence: vec![Evidence::partial("auditor", "the receipt was unreadable")],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 8),
                customer: task.customer,
                amount: task.charged,
                attempt: task.attempt + 1,
            }));
        }
        Ok(auditor::Next::End(Invoice {
            customer: task.customer,
            charged: task.charged,
            audits: task.attempt,
        }))
    }
}

const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

fn root() -> billing::Root {
    billing::Root {
        tenant: "acme".into(),
        max_amount: 10_000,
    }
}

fn order(amount: u64) -> Order {
    Order {
        customer: "ada".into(),
        amount,
    }
}

fn schemas() -> SchemaSet {
    billing::Workflow::schemas()
}

/// A validator for the schema named `name`.
fn validator(set: &SchemaSet, name: &str) -> jsonschema::Validator {
    let schema = set
        .get(name)
        .unwrap_or_else(|| panic!("no schema `{name}`"));
    jsonschema::draft202012::new(schema)
        .unwrap_or_else(|e| panic!("schema `{name}` does not compile: {e}"))
}

/// Asserts that the schema and serde agree on `value`: both accept it or
/// both reject it; returns whether it was accepted.
fn agree<T: DeserializeOwned>(v: &jsonschema::Validator, value: &Value) -> bool {
    let by_schema = v.is_valid(value);
    let by_serde = serde_json::from_value::<T>(value.clone()).is_ok();
    let by_text = serde_json::from_str::<T>(&value.to_string()).is_ok();
    assert_eq!(
        by_schema,
        by_serde,
        "schema and serde disagree on {value}: {:?}",
        v.validate(value).err().map(|e| e.to_string())
    );
    assert_eq!(
        by_serde, by_text,
        "from_value and from_str disagree on {value}"
    );
    by_schema
}

/// A fresh, empty folder under the system's temp dir.
fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "workflow-core-tests-{}-{label}",
        std::process::id()
    ));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("an old test folder can be removed");
    }
    dir
}

fn schema_name_of(file: &str) -> &str {
    file.strip_suffix(".schema.json")
        .unwrap_or_else(|| panic!("`{file}` is not a schema file name"))
}

#[test]
fn the_set_has_every_payload_tool_invariant_and_record() {
    let set = schemas();
    let mut names: Vec<&str> = set.names().collect();
    names.sort_unstable();
    let mut expected = vec![
        // The contract parts, receipts, records and the manifest.
        "Operation",
        "Expiry",
        "Evidence",
        "Uncertainty",
        "StopWhen",
        "Receipt",
        "TransferRecord",
        "Manifest",
        // Input, output, handoffs.
        "billing.Order",
        "billing.Invoice",
        "LedgerRecord",
        "billing.ChargeTask",
        "billing.AuditTask",
        // Tool inputs and outputs.
        "billing.CustomerQuery",
        "billing.CustomerRecord",
        "billing.ChargeRequest",
        "billing.ChargeResult",
        // Invariants.
        "billing.Root",
    ];
    expected.sort_unstable();
    assert_eq!(names, expected);
    assert!(set.conflicts().is_empty(), "{:?}", set.conflicts());
    assert_eq!(set.len(), expected.len());
}

#[test]
fn every_schema_is_valid_draft_2020_12() {
    let set = schemas();
    assert!(!set.is_empty());
    for (name, schema) in set.iter() {
        assert_eq!(
            schema["$schema"], DRAFT_2020_12,
            "schema `{name}` does not declare draft 2020-12"
        );
        if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
            panic!("schema `{name}` is not a valid draft 2020-12 schema: {e}");
        }
        // The draft detected from `$schema` is the same.
        assert!(jsonschema::meta::is_valid(schema), "{name}");
        // And it compiles (every `$ref` resolves inside the document).
        validator(&set, name);
        // Titled with the type's name; a workflow's own types are
        // published under `billing.<Type>`.
        let title = name.strip_prefix("billing.").unwrap_or(name);
        assert_eq!(
            schema["title"], title,
            "schema `{name}` is titled otherwise"
        );
    }
    // The metaschema check is not vacuous.
    let broken = json!({"$schema": DRAFT_2020_12, "type": "object", "required": "op"});
    assert!(jsonschema::draft202012::meta::validate(&broken).is_err());
}

#[test]
fn a_real_handoff_validates_and_broken_ones_do_not() {
    let set = schemas();
    let v = validator(&set, "billing.ChargeTask");
    let task = billing::first_task(&order(1_200), "acme", 1);
    let good = serde_json::to_value(&task).unwrap();
    assert!(agree::<billing::ChargeTask>(&v, &good), "{good}");
    let back: billing::ChargeTask = serde_json::from_value(good.clone()).unwrap();
    assert_eq!(back, task);

    // Each contract part missing: rejected by the schema and by serde.
    for (part, field) in <billing::ChargeTask as Handoff>::PARTS {
        let mut bad = good.clone();
        assert!(
            bad.as_object_mut().unwrap().remove(*field).is_some(),
            "no field `{field}`"
        );
        assert!(
            !agree::<billing::ChargeTask>(&v, &bad),
            "a task without its `{part}` part (`{field}`) is accepted"
        );
        let err = serde_json::from_str::<billing::ChargeTask>(&bad.to_string())
            .expect_err("a missing part is an error");
        assert!(err.to_string().contains(field), "{err}");
    }
    assert_eq!(
        <billing::ChargeTask as Handoff>::PARTS.len(),
        5,
        "operation, authority, evidence, uncertainty, stop"
    );

    // A data field missing.
    let mut bad = good.clone();
    bad.as_object_mut().unwrap().remove("amount");
    assert!(!agree::<billing::ChargeTask>(&v, &bad));

    // An unknown field, at the top and inside a contract part.
    let mut bad = good.clone();
    bad["priority"] = json!("high");
    assert!(!agree::<billing::ChargeTask>(&v, &bad));
    let err = serde_json::from_str::<billing::ChargeTask>(&bad.to_string()).unwrap_err();
    assert!(err.to_string().contains("priority"), "{err}");
    let mut bad = good.clone();
    bad["evidence"][0]["weight"] = json!(3);
    assert!(!agree::<billing::ChargeTask>(&v, &bad));
    let mut bad = good.clone();
    bad["scope"]["until"] = json!("later");
    assert!(!agree::<billing::ChargeTask>(&v, &bad));

    // A scope over another authority, an unknown expiry, a wrong type.
    let mut bad = good.clone();
    bad["scope"]["authority"] = json!("Audit");
    assert!(!agree::<billing::ChargeTask>(&v, &bad));
    let mut bad = good.clone();
    bad["scope"]["expires"] = json!({"at_noon": 1});
    assert!(!agree::<billing::ChargeTask>(&v, &bad));
    let mut bad = good.clone();
    bad["amount"] = json!("twelve hundred");
    assert!(!agree::<billing::ChargeTask>(&v, &bad));
    let mut bad = good.clone();
    bad["stop"] = json!([{"kind": "hop_reached"}]);
    assert!(!agree::<billing::ChargeTask>(&v, &bad));

    // Other well-formed variants are accepted by both.
    let mut other = good.clone();
    other["scope"]["expires"] = json!("never");
    other["stop"] = json!([{"kind": "deadline_unix_ms", "ms": 1}]);
    other["open"] = json!([]);
    assert!(agree::<billing::ChargeTask>(&v, &other));
}

#[test]
fn the_contract_parts_have_schemas_that_match_serde() {
    let set = schemas();
    let cases: [(&str, Value, bool); 11] = [
        (
            "Operation",
            json!({"name": "charge", "detail": "all of it"}),
            true,
        ),
        ("Operation", json!({"name": "charge"}), false),
        ("Expiry", json!({"at_hop": 3}), true),
        ("Expiry", json!("sometime"), false),
        ("Expiry", json!({"at_hop": 3, "at_unix_ms": 4}), false),
        (
            "Evidence",
            json!({"source": "s", "claim": "c", "complete": false}),
            true,
        ),
        ("Evidence", json!({"source": "s", "claim": "c"}), false),
        ("Uncertainty", json!({"question": "q", "impact": "i"}), true),
        (
            "StopWhen",
            json!([{"kind": "described", "text": "done"}, {"kind": "hop_reached", "hop": 2}]),
            true,
        ),
        ("StopWhen", json!({"any": []}), false),
        (
            "StopWhen",
            json!([{"kind": "described", "text": "t", "x": 1}]),
            false,
        ),
    ];
    for (name, value, valid) in cases {
        let v = validator(&set, name);
        let accepted = match name {
            "Operation" => agree::<workflow_core::Operation>(&v, &value),
            "Expiry" => agree::<workflow_core::Expiry>(&v, &value),
            "Evidence" => agree::<workflow_core::Evidence>(&v, &value),
            "Uncertainty" => agree::<workflow_core::Uncertainty>(&v, &value),
            "StopWhen" => agree::<workflow_core::StopWhen>(&v, &value),
            _ => unreachable!(),
        };
        assert_eq!(accepted, valid, "{name}: {value}");
    }
}

#[tokio::test]
async fn records_receipts_and_payloads_of_real_runs_validate() {
    let set = schemas();
    let (records_v, receipt_v) = (
        validator(&set, "TransferRecord"),
        validator(&set, "Receipt"),
    );
    let wf = billing::Workflow::new(root(), ());
    let done = wf.run(order(1_200)).await.expect("the run completes");
    assert_eq!(
        done.output,
        Invoice {
            customer: "ada".into(),
            charged: 1_200,
            audits: 2,
        }
    );
    // Rejected runs: a pre-condition (over the tenant's limit), the hop cap.
    let over = wf.run(order(20_000)).await.expect_err("over the limit");
    let capped = billing::Workflow::new(root(), ())
        .with_max_hops(2)
        .run(order(1))
        .await
        .expect_err("capped");
    // A pending receipt: a run started, not stepped.
    let session = wf.start(order(5));

    let transcripts = [
        &done.transcript,
        &over.transcript,
        &capped.transcript,
        session.transcript(),
    ];
    let mut receipts = Vec::new();
    let manifest = billing::Workflow::manifest();
    let mut validated_payloads = 0;
    for t in transcripts {
        for record in t.records().expect("the records read back") {
            let value = serde_json::to_value(&record).unwrap();
            assert!(agree::<TransferRecord>(&records_v, &value), "{value}");
            let receipt = serde_json::to_value(&record.receipt).unwrap();
            assert!(agree::<Receipt>(&receipt_v, &receipt), "{receipt}");
            receipts.push(record.receipt.clone());

            // The payload validates against its edge's published schema.
            let (from, to) = (record.from.to_string(), record.to.to_string());
            let edge = manifest
                .edges
                .iter()
                .find(|e| e.from == from && e.to == to)
                .unwrap_or_else(|| panic!("no edge {from} -> {to} in the manifest"));
            let schema = validator(&set, schema_name_of(&edge.payload_schema));
            let payload: Value = serde_json::from_str(&record.payload).unwrap();
            if let Err(e) = schema.validate(&payload) {
                panic!("payload {from} -> {to} does not match its schema: {e}\n{payload}");
            }
            validated_payloads += 1;
        }
    }
    assert_eq!(validated_payloads, 6 + 2 + 3 + 1);
    let statuses: Vec<String> = receipts
        .iter()
        .map(|r| serde_json::to_value(r).unwrap()["status"].to_string())
        .collect();
    for status in ["\"accepted\"", "\"rejected\"", "\"pending\""] {
        assert!(statuses.iter().any(|s| s == status), "no {status} receipt");
    }
    let reasons: Vec<Value> = receipts
        .iter()
        .filter_map(|r| match r {
            Receipt::Rejected { reason } => Some(serde_json::to_value(reason).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons[0]["code"], "pre_condition");
    assert_eq!(
        reasons[0]["message"],
        "the amount is within the tenant's limit"
    );
    assert_eq!(reasons[1], json!({"code": "hop_cap", "max_hops": 2}));

    // Every reason the executor can give validates.
    for reason in [
        RejectReason::LoopBound { bound: 2 },
        RejectReason::ScopeExpired {
            authority: "Charge".into(),
        },
        RejectReason::StopConditionMet {
            condition: "hop 5 reached".into(),
        },
    ] {
        let value = serde_json::to_value(Receipt::Rejected { reason }).unwrap();
        assert!(agree::<Receipt>(&receipt_v, &value), "{value}");
    }

    // Broken records and receipts fail the schema and serde alike.
    let good = serde_json::to_value(done.transcript.record(1).unwrap()).unwrap();
    for field in ["payload", "receipt", "from", "run_id"] {
        let mut bad = good.clone();
        bad.as_object_mut().unwrap().remove(field);
        assert!(
            !agree::<TransferRecord>(&records_v, &bad),
            "without {field}"
        );
    }
    let mut bad = good.clone();
    bad["signature"] = json!("none");
    assert!(!agree::<TransferRecord>(&records_v, &bad));
    for bad in [
        json!({"status": "rejected"}),
        json!({"status": "rejected", "reason": {"code": "bored"}}),
        json!({"status": "maybe"}),
    ] {
        assert!(!agree::<Receipt>(&receipt_v, &bad), "{bad}");
    }
}

#[test]
fn the_manifest_validates_against_its_schema() {
    let set = schemas();
    let v = validator(&set, "Manifest");
    let manifest = serde_json::to_value(billing::Workflow::manifest()).unwrap();
    assert!(agree::<Manifest>(&v, &manifest));
    let back: Manifest = serde_json::from_value(manifest.clone()).unwrap();
    assert_eq!(back, billing::Workflow::manifest());

    let mut bad = manifest.clone();
    bad["owner"] = json!("nobody");
    assert!(!agree::<Manifest>(&v, &bad));
    let mut bad = manifest.clone();
    bad.as_object_mut().unwrap().remove("max_hops");
    assert!(!agree::<Manifest>(&v, &bad));
    let mut bad = manifest;
    bad["edges"][0]["bound"] = json!("two");
    assert!(!agree::<Manifest>(&v, &bad));
}

#[test]
fn export_then_check_is_clean_and_each_drift_is_named() {
    let set = schemas();
    let dir = temp_dir("drift");
    let written = set.export(&dir).expect("the schemas can be written");
    assert_eq!(written.len(), set.len());
    for (path, name) in written.iter().zip(set.names()) {
        assert_eq!(path, &dir.join(format!("{name}.schema.json")));
        let published: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(Some(published), set.published(name), "{name}");
    }
    assert_eq!(set.check(&dir), Ok(()));
    // Exporting again over a published copy changes nothing.
    set.export(&dir).unwrap();
    assert_eq!(set.check(&dir), Ok(()));

    let file = |name: &str| dir.join(format!("{name}.schema.json"));

    // A schema edited by hand: exactly that one is reported changed.
    let edited = file("billing.ChargeTask");
    let mut schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&edited).unwrap()).unwrap();
    schema["properties"]["amount"]["minimum"] = json!(1);
    std::fs::write(&edited, serde_json::to_string_pretty(&schema).unwrap()).unwrap();
    let drift = set.check(&dir).expect_err("ChargeTask changed");
    assert_eq!(drift.changed, ["billing.ChargeTask"]);
    assert!(drift.unpublished.is_empty() && drift.removed.is_empty());
    assert!(drift.unreadable.is_empty() && drift.conflicts.is_empty());
    assert!(
        drift.to_string().contains("billing.ChargeTask.schema.json"),
        "{drift}"
    );
    // A file that is no longer JSON is changed too.
    std::fs::write(&edited, "{ not json").unwrap();
    assert_eq!(set.check(&dir).unwrap_err().changed, ["billing.ChargeTask"]);
    set.export(&dir).unwrap();
    assert_eq!(set.check(&dir), Ok(()));

    // The same schema laid out differently is not a change.
    let compact = file("billing.Order");
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&compact).unwrap()).unwrap();
    std::fs::write(&compact, value.to_string()).unwrap();
    assert_eq!(set.check(&dir), Ok(()));

    // A schema deleted: reported unpublished.
    std::fs::remove_file(file("Receipt")).unwrap();
    let drift = set.check(&dir).expect_err("Receipt missing");
    assert_eq!(drift.unpublished, ["Receipt"]);
    assert!(drift.changed.is_empty() && drift.removed.is_empty());
    set.export(&dir).unwrap();
    assert_eq!(set.check(&dir), Ok(()));

    // An extra schema file: reported removed. Other files are not schemas.
    std::fs::write(file("Stale"), "{}").unwrap();
    std::fs::write(dir.join("README.md"), "published schemas").unwrap();
    let drift = set.check(&dir).expect_err("Stale is extra");
    assert_eq!(drift.removed, ["Stale"]);
    assert!(drift.changed.is_empty() && drift.unpublished.is_empty());
    std::fs::remove_file(file("Stale")).unwrap();
    assert_eq!(set.check(&dir), Ok(()));

    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn checking_a_missing_folder_reports_everything_unpublished() {
    let set = schemas();
    let dir = temp_dir("missing");
    let drift = set.check(&dir).expect_err("nothing is published");
    let mut names: Vec<&str> = set.names().collect();
    names.sort_unstable();
    let mut unpublished: Vec<&str> = drift.unpublished.iter().map(String::as_str).collect();
    unpublished.sort_unstable();
    assert_eq!(unpublished, names);
    assert_eq!(drift.unreadable.len(), 1);
}

#[test]
fn the_manifest_lists_the_whole_workflow() {
    let m = billing::Workflow::manifest();
    assert_eq!(m.workflow, "billing");
    assert_eq!(m.entry, "intake");
    assert_eq!(m.input_schema, "billing.Order.schema.json");
    assert_eq!(m.output_schema, "billing.Invoice.schema.json");
    // The longest run: intake -> charger -> auditor, then charger ->
    // auditor again for each of the 2 uses of the loop back.
    assert_eq!(billing::MAX_HOPS, 3 + 2 * 2);
    assert_eq!(m.max_hops, billing::MAX_HOPS);

    /// `(name, input schema, owns, tools, timeout)`.
    type AgentRow<'a> = (&'a str, &'a str, Vec<&'a str>, Vec<&'a str>, Option<u64>);
    let agents: Vec<AgentRow> = m
        .agents
        .iter()
        .map(|a| {
            (
                a.name.as_str(),
                a.input_schema.as_str(),
                a.owns.iter().map(String::as_str).collect(),
                a.tools.iter().map(String::as_str).collect(),
                a.timeout_ms,
            )
        })
        .collect();
    assert_eq!(
        agents,
        [
            (
                "intake",
                "billing.Order.schema.json",
                vec!["Intake"],
                vec!["lookup_customer"],
                None
            ),
            (
                "charger",
                "billing.ChargeTask.schema.json",
                vec!["Charge"],
                vec!["charge_card"],
                Some(1000)
            ),
            (
                "auditor",
                "billing.AuditTask.schema.json",
                vec!["Audit"],
                vec![],
                None
            ),
        ]
    );
    // Conditions, as `expr: message`.
    assert_eq!(
        m.agents[0].pre,
        ["order.amount > 0: an order charges something"]
    );
    assert_eq!(m.agents[1].pre.len(), 1);
    assert!(
        m.agents[1].pre[0].ends_with(": the amount is within the tenant's limit"),
        "{:?}",
        m.agents[1].pre
    );
    assert!(m.agents[1].pre[0].contains("max_amount"));
    assert!(m.agents[2].pre.is_empty());
    assert_eq!(m.agents[2].post.len(), 1);
    assert!(m.agents[2].post[0].ends_with(": an invoice charges something"));

    // Each authority with its one owner.
    let authorities: Vec<(&str, &str)> = m
        .authorities
        .iter()
        .map(|a| (a.name.as_str(), a.owner.as_str()))
        .collect();
    assert_eq!(
        authorities,
        [
            ("Intake", "intake"),
            ("Charge", "charger"),
            ("Audit", "auditor")
        ]
    );

    let tools: Vec<(&str, &str, &str, Option<&str>)> = m
        .tools
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.input_schema.as_str(),
                t.output_schema.as_str(),
                t.needs.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            (
                "lookup_customer",
                "billing.CustomerQuery.schema.json",
                "billing.CustomerRecord.schema.json",
                None
            ),
            (
                "charge_card",
                "billing.ChargeRequest.schema.json",
                "billing.ChargeResult.schema.json",
                Some("Charge")
            ),
        ]
    );

    let edges: Vec<(&str, &str, &str, Option<u32>)> = m
        .edges
        .iter()
        .map(|e| {
            (
                e.from.as_str(),
                e.to.as_str(),
                e.payload_schema.as_str(),
                e.bound,
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            ("START", "intake", "billing.Order.schema.json", None),
            ("intake", "charger", "billing.ChargeTask.schema.json", None),
            ("charger", "auditor", "billing.AuditTask.schema.json", None),
            (
                "auditor",
                "charger",
                "billing.ChargeTask.schema.json",
                Some(2)
            ),
            ("auditor", "END", "billing.Invoice.schema.json", None),
        ]
    );

    // Every schema file the manifest names is in the published set.
    let set = schemas();
    let named = std::iter::once(&m.input_schema)
        .chain([&m.output_schema])
        .chain(m.agents.iter().map(|a| &a.input_schema))
        .chain(
            m.tools
                .iter()
                .flat_map(|t| [&t.input_schema, &t.output_schema]),
        )
        .chain(m.edges.iter().map(|e| &e.payload_schema));
    for file in named {
        assert!(
            set.get(schema_name_of(file)).is_some(),
            "the manifest names {file}, which is not in the set"
        );
    }
}

#[test]
fn the_diagram_has_an_arrow_per_edge() {
    let diagram = billing::Workflow::mermaid();
    assert!(diagram.starts_with("flowchart"), "{diagram}");
    let arrows: Vec<&str> = diagram.lines().filter(|l| l.contains("-->")).collect();
    let manifest = billing::Workflow::manifest();
    assert_eq!(arrows.len(), manifest.edges.len(), "{diagram}");
    let graph = billing::GRAPH;
    for (edge, info) in manifest.edges.iter().zip(graph.edges) {
        let (from, to) = (edge.from.to_lowercase(), edge.to.to_lowercase());
        let found = arrows.iter().any(|line| {
            let (left, right) = line.split_once("-->").unwrap();
            let target = right.rsplit(['|', ' ']).next().unwrap_or("");
            left.to_lowercase().contains(&from)
                && target.to_lowercase().contains(&to)
                && right.contains(info.payload)
                && info
                    .bound
                    .is_none_or(|b| right.contains(&format!("max {b}")))
        });
        assert!(
            found,
            "no arrow {} -> {} ({}) in\n{diagram}",
            edge.from, edge.to, info.payload
        );
    }
    // Every agent is a node.
    for agent in graph.agents {
        assert!(
            diagram
                .lines()
                .any(|l| !l.contains("-->") && l.contains(agent.name)),
            "no node for {}",
            agent.name
        );
    }
}

/// serde does not enforce `deny_unknown_fields` on the unit variants of an
/// internally tagged enum (serde-rs/serde#2123, #2294), so `Receipt` reads
/// itself by hand: `{"status": "accepted", "reason": {..}}` must be refused,
/// as the published schema (`additionalProperties: false`) refuses it.
#[test]
fn a_receipt_with_an_unknown_field_is_refused_by_serde_too() {
    let set = schemas();
    let v = validator(&set, "Receipt");
    for bad in [
        json!({"status": "accepted", "reason": {"code": "hop_cap", "max_hops": 1}}),
        json!({"status": "pending", "note": "dropped"}),
    ] {
        assert!(!v.is_valid(&bad), "the schema accepts {bad}");
        assert!(
            serde_json::from_value::<Receipt>(bad.clone()).is_err(),
            "serde accepts {bad} and drops its extra field"
        );
    }
    // Inside a transfer record, too.
    let mut record = serde_json::to_value(TransferRecord {
        run_id: 1,
        seq: 0,
        hop: 0,
        from: workflow_core::Endpoint::Start,
        to: workflow_core::Endpoint::Agent("intake".into()),
        payload_type: "Order".into(),
        payload: "{}".into(),
        receipt: Receipt::Accepted,
        at_us: 0,
        redelivery: false,
        turn: None,
        lineage: None,
    })
    .unwrap();
    record["receipt"]["reason"] = json!({"code": "hop_cap", "max_hops": 1});
    assert!(!validator(&set, "TransferRecord").is_valid(&record));
    assert!(serde_json::from_value::<TransferRecord>(record).is_err());
}
