//! Every contract part is required and non-null, on the wire and in the
//! published schema: a part missing or written `null` is a deserialization
//! error, and the schema says so (every part in `required`, none accepting
//! `null`), so schema and deserializer agree. An `Option` part, under any
//! spelling, does not compile (`ui-tests/tests/ui/fail/handoff-part-option*`).

use serde_json::{Value, json};
use workflow_core::prelude::*;

#[workflow(entry = only, output = u32)]
pub mod flow {
    use super::*;

    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Go>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub n: u32,
    }

    #[agent(owns = [Go], to = [END])]
    async fn only(task: Task, _cx: only::Context<'_>) -> Result<only::Next, Reject> {
        Ok(only::Next::End(task.n))
    }
}

/// The part fields of `flow::Task`.
const PARTS: [&str; 5] = ["op", "scope", "evidence", "open", "stop"];

fn complete() -> Value {
    json!({
        "op": {"name": "go", "detail": ""},
        "scope": {"authority": "Go", "expires": "never"},
        "evidence": [],
        "open": [],
        "stop": [],
        "n": 1,
    })
}

fn validator() -> jsonschema::Validator {
    let schema = workflow_core::schema::root_schema::<flow::Task>();
    jsonschema::draft202012::new(&schema).expect("the handoff's schema compiles")
}

#[test]
fn a_complete_payload_reads_and_validates() {
    let task: flow::Task = serde_json::from_value(complete()).expect("a complete payload reads");
    assert_eq!(task.evidence, vec![]);
    assert!(validator().is_valid(&complete()));
}

#[test]
fn a_missing_part_is_refused_by_serde_and_by_the_schema() {
    let v = validator();
    for part in PARTS.into_iter().chain(["n"]) {
        let mut payload = complete();
        payload.as_object_mut().unwrap().remove(part);
        let error = serde_json::from_value::<flow::Task>(payload.clone())
            .err()
            .unwrap_or_else(|| panic!("`{part}` missing must not default"));
        assert!(
            error
                .to_string()
                .contains(&format!("missing field `{part}`")),
            "{error}"
        );
        assert!(!v.is_valid(&payload), "the schema accepts `{part}` missing");
    }
}

#[test]
fn a_null_part_is_refused_by_serde_and_by_the_schema() {
    let v = validator();
    for part in PARTS {
        let mut payload = complete();
        payload[part] = Value::Null;
        assert!(
            serde_json::from_value::<flow::Task>(payload.clone()).is_err(),
            "`{part}: null` must not read as nothing"
        );
        assert!(!v.is_valid(&payload), "the schema accepts `{part}: null`");
    }
}

#[test]
fn the_published_schema_lists_every_part_as_required() {
    let schema = workflow_core::schema::root_schema::<flow::Task>();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .expect("the handoff's schema has `required`")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for part in PARTS {
        assert!(required.contains(&part), "`{part}` not required: {schema}");
    }
}
