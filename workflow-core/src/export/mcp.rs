//! Tool definitions in the Model Context Protocol's shape (`tools/list`,
//! the `Tool` of the 2025-11-25 specification), from the graph.
//!
//! Only fields the specification declares are published, so that the
//! official SDKs, which read a `Tool` into typed models, drop nothing: our
//! own metadata (the authority a tool needs, its declared effect) goes
//! under `_meta`, the one place the specification keeps for it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::spec::Effect;

/// A tool definition in the shape MCP (`tools/list`) uses: name,
/// description, input and output schema, effect annotations, and our
/// metadata under `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    /// The tool's name.
    pub name: String,
    /// What it does (its doc comment).
    pub description: String,
    /// The JSON Schema of its arguments: an object at the root, as MCP
    /// requires ([`mcp_object_schema`]).
    pub input_schema: Value,
    /// The JSON Schema of its result (its `structuredContent`): an object
    /// at the root, as MCP requires.
    pub output_schema: Value,
    /// Effect hints.
    pub annotations: McpAnnotations,
    /// What MCP has no field for: the authority the tool needs and its
    /// declared effect.
    #[serde(rename = "_meta")]
    pub meta: McpMeta,
}

/// MCP tool annotations derived from the declared [`Effect`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAnnotations {
    /// `effect = read`.
    pub read_only_hint: bool,
    /// MCP: "if false, the tool performs only additive updates". Set for
    /// every tool that changes state (`effect = write` or `destructive`):
    /// a write is not known to be purely additive.
    pub destructive_hint: bool,
}

/// Our metadata of a tool, under its `_meta` (keys prefixed `workflow/`,
/// as MCP asks of custom `_meta` keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpMeta {
    /// The authority the tool needs, if any.
    #[serde(rename = "workflow/needs", skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
    /// Its declared effect (`read`, `write`, `destructive`), which the two
    /// hints only approximate.
    #[serde(rename = "workflow/effect")]
    pub effect: Effect,
}

/// The MCP-style definitions of every tool of `graph`.
pub fn mcp_tools(graph: &crate::spec::Graph) -> Vec<McpTool> {
    graph
        .tools
        .iter()
        .map(|t| McpTool {
            name: t.name.to_owned(),
            description: t.description.to_owned(),
            input_schema: mcp_object_schema((t.input_schema_doc)().to_value()),
            output_schema: mcp_object_schema((t.output_schema_doc)().to_value()),
            annotations: McpAnnotations {
                read_only_hint: t.effect == Effect::Read,
                destructive_hint: t.effect != Effect::Read,
            },
            meta: McpMeta {
                needs: t.needs.map(str::to_owned),
                effect: t.effect,
            },
        })
        .collect()
}

/// Whether [`mcp_object_schema`] wraps `schema` (a schema object whose
/// root is not an object type): a value of it then travels as the property
/// [`STRICT_ROOT_PROPERTY`](crate::schema::STRICT_ROOT_PROPERTY).
pub(crate) fn mcp_wraps(schema: &Value) -> bool {
    matches!(schema, Value::Object(fields) if fields.get("type") != Some(&json!("object")))
}

/// `schema` with an object at its root, as MCP requires of a tool's input
/// and output schema: an object schema as it is; any other (a `String`
/// input, a `Vec<T>` output) as the one required property
/// [`STRICT_ROOT_PROPERTY`](crate::schema::STRICT_ROOT_PROPERTY) (`value`)
/// of an object, its `$schema` and `$defs` kept at the root.
pub fn mcp_object_schema(schema: Value) -> Value {
    if !mcp_wraps(&schema) {
        return schema;
    }
    let Value::Object(mut fields) = schema else {
        return schema;
    };
    let dialect = fields.remove("$schema");
    let mut defs = match fields.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => serde_json::Map::new(),
    };
    let mut inner = Value::Object(fields);
    // A reference to the root would now name the wrapper: the root moves
    // into `$defs`.
    if crate::export::strict::mentions_root_ref(&inner) {
        let name = crate::export::strict::unused_name(&defs, "Root");
        let to = format!("#/$defs/{name}");
        crate::export::strict::rewrite_root_refs(&mut inner, &to);
        for def in defs.values_mut() {
            crate::export::strict::rewrite_root_refs(def, &to);
        }
        defs.insert(name, inner);
        inner = json!({ "$ref": to });
    }
    let property = crate::export::STRICT_ROOT_PROPERTY;
    let mut root = serde_json::Map::new();
    if let Some(dialect) = dialect {
        root.insert("$schema".to_owned(), dialect);
    }
    root.insert("type".to_owned(), json!("object"));
    root.insert("properties".to_owned(), json!({ property: inner }));
    root.insert("required".to_owned(), json!([property]));
    if !defs.is_empty() {
        root.insert("$defs".to_owned(), Value::Object(defs));
    }
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_object_root_is_wrapped_and_its_references_kept() {
        let wrapped = mcp_object_schema(crate::spec::root_schema::<Vec<Effect>>());
        assert_eq!(wrapped["type"], "object");
        assert_eq!(wrapped["required"], json!(["value"]));
        assert_eq!(wrapped["properties"]["value"]["type"], "array");
        assert!(wrapped["$defs"]["Effect"].is_object());
        assert_eq!(
            wrapped["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        let recursive = mcp_object_schema(json!({"type": "array", "items": {"$ref": "#"}}));
        assert_eq!(
            recursive["properties"]["value"],
            json!({"$ref": "#/$defs/Root"})
        );
        assert_eq!(recursive["$defs"]["Root"]["items"]["$ref"], "#/$defs/Root");
        let object = json!({"type": "object", "properties": {}});
        assert_eq!(mcp_object_schema(object.clone()), object);
    }
}
