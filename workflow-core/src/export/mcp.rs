//! Tool definitions in the Model Context Protocol's shape, from the graph.

use serde::{Deserialize, Serialize};

use crate::spec::Effect;
/// A tool definition in the shape MCP (`tools/list`) uses: name,
/// description, input and output schema, effect annotations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    /// The tool's name.
    pub name: String,
    /// What it does (its doc comment).
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
    /// The JSON Schema of its result.
    pub output_schema: serde_json::Value,
    /// Effect hints.
    pub annotations: McpAnnotations,
}

/// MCP tool annotations derived from the declared [`Effect`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAnnotations {
    /// `effect = read`.
    pub read_only_hint: bool,
    /// `effect = destructive`.
    pub destructive_hint: bool,
    /// The authority the tool needs (not an MCP hint: ours, namespaced).
    #[serde(rename = "x-workflow-needs", skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
}

/// The MCP-style definitions of every tool of `graph`.
pub fn mcp_tools(graph: &crate::spec::Graph) -> Vec<McpTool> {
    graph
        .tools
        .iter()
        .map(|t| McpTool {
            name: t.name.to_owned(),
            description: t.description.to_owned(),
            input_schema: (t.input_schema_doc)().to_value(),
            output_schema: (t.output_schema_doc)().to_value(),
            annotations: McpAnnotations {
                read_only_hint: t.effect == Effect::Read,
                destructive_hint: t.effect == Effect::Destructive,
                needs: t.needs.map(str::to_owned),
            },
        })
        .collect()
}
