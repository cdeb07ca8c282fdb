//! Validation of payloads that crossed a serialization boundary (a person's
//! edit, storage, a model) against their published JSON Schema.

use crate::spec::Workflow;

/// Validates `payload` against the input schema of agent `agent` of `W`:
/// every error the validator finds, or `Ok`.
pub(crate) fn agent_input<W: Workflow>(
    agent: u16,
    payload: &serde_json::Value,
) -> Result<(), Vec<String>> {
    let Some(info) = W::GRAPH.agents.get(agent as usize) else {
        return Err(vec![format!(
            "no agent {agent} in workflow `{}`",
            W::GRAPH.name
        )]);
    };
    let set = crate::spec::SchemaSet::of::<W>();
    let name = crate::spec::published_name(W::GRAPH.name, &(info.input_schema)());
    let Some(schema) = set.get(&name) else {
        return Err(vec![format!("no schema named `{name}`")]);
    };
    against(schema, payload)
}

/// Validates `payload` against `schema` (draft 2020-12).
pub(crate) fn against(
    schema: &serde_json::Value,
    payload: &serde_json::Value,
) -> Result<(), Vec<String>> {
    let validator =
        jsonschema::validator_for(schema).map_err(|e| vec![format!("invalid schema: {e}")])?;
    let errors: Vec<String> = validator
        .iter_errors(payload)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
