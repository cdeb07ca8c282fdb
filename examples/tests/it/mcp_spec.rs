//! The published tool definitions (`tools.json`) against the shape the Model
//! Context Protocol specification gives a `Tool` (revision 2025-11-25;
//! `fixtures/mcp-tool-shape.schema.json`, written for this project from the
//! specification's text, not copied from its schema file): valid as the
//! specification describes it, and valid once every object it declares is
//! closed, which is how the official SDKs read a `Tool` (typed models that
//! drop any field they do not declare). Only `_meta` stays open.

use std::path::Path;

use serde_json::{Value, json};

fn spec() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/mcp-tool-shape.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the fixture")).expect("JSON")
}

/// The shape with a tool and its annotations closed: a field they do not
/// declare is one an SDK would drop.
fn closed() -> Value {
    let mut spec = spec();
    spec["additionalProperties"] = json!(false);
    spec["properties"]["annotations"]["additionalProperties"] = json!(false);
    spec
}

fn published_tools() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/deploy/tools.json");
    let tools: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("tools.json")).expect("JSON");
    tools.as_array().expect("a list").clone()
}

fn errors(schema: &Value, tool: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the spec's schema compiles");
    validator
        .iter_errors(tool)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn every_published_tool_is_a_valid_mcp_tool_that_sdks_read_without_loss() {
    let tools = published_tools();
    assert_eq!(tools.len(), 2);
    for tool in &tools {
        assert_eq!(errors(&spec(), tool), Vec::<String>::new(), "{tool:#}");
        assert_eq!(errors(&closed(), tool), Vec::<String>::new(), "{tool:#}");
    }
}

#[test]
fn custom_metadata_outside_meta_is_what_an_sdk_would_drop() {
    // The shape published before: `x-workflow-needs` inside `annotations`.
    let mut tool = published_tools()[1].clone();
    tool["annotations"]["x-workflow-needs"] = json!("Apply");
    assert!(
        errors(&spec(), &tool).is_empty(),
        "the open spec accepts it"
    );
    assert!(
        errors(&closed(), &tool)
            .iter()
            .any(|e| e.contains("x-workflow-needs")),
        "the closed reading refuses it"
    );
    // A non-object input schema breaks the spec itself.
    let mut tool = published_tools()[0].clone();
    tool["inputSchema"] = json!({"type": "string"});
    assert!(!errors(&spec(), &tool).is_empty());
}

#[test]
fn the_write_tool_says_it_is_not_purely_additive_and_keeps_its_metadata_under_meta() {
    let tools = published_tools();
    let apply = &tools[1];
    assert_eq!(apply["name"], "apply_plan");
    assert_eq!(apply["annotations"]["readOnlyHint"], false);
    assert_eq!(apply["annotations"]["destructiveHint"], true);
    assert_eq!(apply["_meta"]["workflow/needs"], "Apply");
    assert_eq!(apply["_meta"]["workflow/effect"], "write");
    let lookup = &tools[0];
    assert_eq!(lookup["annotations"]["readOnlyHint"], true);
    assert_eq!(lookup["_meta"]["workflow/effect"], "read");
}
