//! The diagram of a workflow whose payloads are generic types: Mermaid
//! reads `<...>` in a label as HTML, so `Vec<Finding>` must be escaped or
//! it renders as `Vec`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// What.
    pub title: String,
}

#[workflow(entry = finder, output = Vec<Finding>)]
pub mod audit {
    use super::*;

    #[agent(owns = [Find], to = [END])]
    async fn finder(scope: String, _cx: finder::Context<'_>) -> Result<finder::Next, Reject> {
        Ok(finder::Next::End(vec![Finding { title: scope }]))
    }
}

#[test]
fn a_generic_payload_type_is_escaped_in_the_diagram() {
    let diagram = audit::Workflow::mermaid();
    assert!(
        diagram.contains(r#"agent_finder -->|"Vec#lt;Finding#gt;"| end__"#),
        "{diagram}"
    );
    assert!(!diagram.contains('<'), "{diagram}");
}
