//! The strict form against the documented rules, the checker of those
//! rules against each violation, and the way back from a strict reply.

use super::*;
use crate::spec::root_schema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Finding {
    /// What was found.
    title: String,
    /// How bad, when known.
    severity: Option<Severity>,
    /// Where, when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    /// A count.
    #[serde(default)]
    count: u32,
}

/// How bad.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Severity {
    /// Low.
    Low,
    /// High, with a reason.
    High { reason: String },
}

fn valid(schema: &Value, value: &Value) -> bool {
    jsonschema::validator_for(schema).is_ok_and(|v| v.is_valid(value))
}

#[test]
fn an_objects_strict_form_follows_every_documented_rule() {
    let published = root_schema::<Finding>();
    assert!(!openai_strict_violations(&published).is_empty());
    let strict = openai_strict(&published).expect("a strict form");
    assert_eq!(
        openai_strict_violations(&strict.schema),
        Vec::<String>::new()
    );
    assert!(!strict.wrapped);
    let s = &strict.schema;
    assert_eq!(s["additionalProperties"], false);
    assert_eq!(s["required"], json!(["count", "severity", "tags", "title"]));
    // Optional ones nullable; a `$ref` alone, its annotations outside.
    assert_eq!(s["properties"]["tags"]["type"], json!(["array", "null"]));
    assert_eq!(s["properties"]["count"]["type"], json!(["integer", "null"]));
    assert!(
        strict.dropped.iter().any(|d| d.starts_with("default ")),
        "{:?}",
        strict.dropped
    );
    assert!(s["$defs"]["Severity"].get("oneOf").is_none());
    assert!(s["$defs"]["Severity"]["anyOf"].is_array());
}

#[test]
fn a_non_object_root_is_wrapped_and_unwrapped() {
    let published = root_schema::<Vec<Finding>>();
    let strict = openai_strict(&published).expect("a strict form");
    assert!(strict.wrapped);
    assert_eq!(
        openai_strict_violations(&strict.schema),
        Vec::<String>::new()
    );
    let reply = json!({"value": [{"title": "t", "severity": null, "tags": null, "count": null}]});
    assert!(valid(&strict.schema, &reply), "the strict form takes it");
    let restored = strict.restore(reply);
    assert_eq!(restored, json!([{"title": "t", "severity": null}]));
    assert!(valid(&published, &restored));
    let back: Vec<Finding> = serde_json::from_value(restored).expect("the Rust type reads it");
    assert_eq!(back[0].count, 0);
}

#[test]
fn an_enum_root_is_wrapped_and_its_branch_restored() {
    let published = root_schema::<Severity>();
    let strict = openai_strict(&published).expect("a strict form");
    assert!(strict.wrapped);
    assert_eq!(
        openai_strict_violations(&strict.schema),
        Vec::<String>::new()
    );
    let reply = json!({"value": {"high": {"reason": "r"}}});
    assert!(valid(&strict.schema, &reply));
    assert_eq!(strict.restore(reply), json!({"high": {"reason": "r"}}));
}

#[test]
fn a_null_the_published_schema_allows_is_kept() {
    let strict = openai_strict(&root_schema::<Finding>()).expect("a strict form");
    let reply = json!({"title": "t", "severity": null, "tags": ["a"], "count": 3});
    assert_eq!(
        strict.restore(reply),
        json!({"title": "t", "severity": null, "tags": ["a"], "count": 3})
    );
}

#[test]
fn a_root_reference_survives_the_wrapping() {
    let published = json!({
        "type": "array",
        "items": {"anyOf": [{"type": "string"}, {"$ref": "#"}]}
    });
    let strict = openai_strict(&published).expect("a strict form");
    assert_eq!(
        openai_strict_violations(&strict.schema),
        Vec::<String>::new()
    );
    assert!(valid(&strict.schema, &json!({"value": ["a", ["b", []]]})));
}

#[test]
fn a_map_has_no_strict_form() {
    let published = root_schema::<std::collections::BTreeMap<String, u32>>();
    let err = openai_strict(&published).expect_err("a map cannot be closed");
    assert!(
        matches!(&err, StrictError::Unsupported { keyword, .. } if keyword == "additionalProperties"),
        "{err}"
    );
    assert!(
        openai_strict(&json!({"prefixItems": [{"type": "string"}]})).is_err(),
        "a tuple"
    );
    assert!(openai_strict(&json!(true)).is_err());
}

/// Each documented rule, broken once by an otherwise strict schema.
#[test]
fn the_checker_rejects_each_violation() {
    let ok = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": false
    });
    assert_eq!(openai_strict_violations(&ok), Vec::<String>::new());
    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut s = ok.clone();
        edit(&mut s);
        openai_strict_violations(&s)
    };
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "the root is not an object",
            openai_strict_violations(&json!({"type": "string"})),
        ),
        (
            "the root is an `anyOf`",
            broken(&|s| s["anyOf"] = json!([{"type": "object"}])),
        ),
        (
            "without `additionalProperties: false`",
            broken(&|s| {
                s.as_object_mut().unwrap().remove("additionalProperties");
            }),
        ),
        ("is not required", broken(&|s| s["required"] = json!([]))),
        (
            "unsupported keyword `oneOf`",
            broken(&|s| s["properties"]["a"] = json!({"oneOf": [{"type": "string"}]})),
        ),
        (
            "`$ref` has keywords beside it",
            broken(&|s| {
                s["$defs"] = json!({"A": {"type": "string"}});
                s["properties"]["a"] = json!({"$ref": "#/$defs/A", "description": "d"});
            }),
        ),
        (
            "names no definition",
            broken(&|s| s["properties"]["a"] = json!({"$ref": "#/$defs/Nope"})),
        ),
        (
            "unsupported format \"uint32\"",
            broken(&|s| s["properties"]["a"] = json!({"type": "integer", "format": "uint32"})),
        ),
        (
            "unsupported keyword `default`",
            broken(&|s| s["properties"]["a"]["default"] = json!("x")),
        ),
        (
            "unsupported keyword `$schema`",
            broken(&|s| s["$schema"] = json!("https://json-schema.org/draft/2020-12/schema")),
        ),
        (
            "nested deeper than 10 levels",
            broken(&|s| {
                let mut inner = json!({"type": "string"});
                for _ in 0..12 {
                    inner = json!({"type": "array", "items": inner});
                }
                s["properties"]["a"] = inner;
            }),
        ),
        (
            "enum values, over the 1000 allowed",
            broken(&|s| {
                let values: Vec<Value> = (0..1001).map(|i| json!(i.to_string())).collect();
                s["properties"]["a"] = json!({"type": "string", "enum": values});
            }),
        ),
        (
            "properties, over the 5000 allowed",
            broken(&|s| {
                let names: Vec<String> = (0..5001).map(|i| format!("p{i}")).collect();
                let props: Map<String, Value> = names
                    .iter()
                    .map(|n| (n.clone(), json!({"type": "string"})))
                    .collect();
                s["properties"] = Value::Object(props);
                s["required"] = json!(names);
            }),
        ),
        (
            "a boolean schema",
            broken(&|s| s["properties"]["a"] = json!(true)),
        ),
    ];
    for (rule, found) in cases {
        assert!(
            found.iter().any(|f| f.contains(rule)),
            "`{rule}` not reported: {found:?}"
        );
    }
}
