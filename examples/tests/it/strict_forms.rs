//! Every published schema of the main example (and every tool's input and
//! output schema) has an OpenAI strict form that follows the documented
//! rules of strict structured outputs, and that form still compiles in
//! Ajv's default strict mode. Without the strict form, most of them break
//! those rules.

use serde_json::Map;
use workflow_core::schema::{openai_strict, openai_strict_violations};

use crate::ajv;

#[test]
fn every_published_schema_has_a_strict_form_that_follows_openais_rules() {
    let published = ajv::published();
    let mut broken_as_published = 0;
    let mut strict_forms = Map::new();
    for (name, schema) in &published {
        if !openai_strict_violations(schema).is_empty() {
            broken_as_published += 1;
        }
        let strict = openai_strict(schema).unwrap_or_else(|e| panic!("{name}: {e}"));
        let violations = openai_strict_violations(&strict.schema);
        assert!(violations.is_empty(), "{name}: {violations:#?}");
        strict_forms.insert(name.clone(), strict.schema);
    }
    // As published, strict mode would refuse (nearly) all of them.
    assert!(
        broken_as_published >= published.len() - 2,
        "{broken_as_published} of {}",
        published.len()
    );
    if let Some(verdicts) = ajv::compile_all(&strict_forms) {
        let refused: Vec<String> = verdicts
            .iter()
            .filter(|(_, why)| !why.is_null())
            .map(|(name, why)| format!("{name}: {why}"))
            .collect();
        assert!(refused.is_empty(), "Ajv refuses:\n{}", refused.join("\n"));
    }
}
