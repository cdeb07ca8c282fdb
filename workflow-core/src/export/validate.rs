//! Validation of payloads that crossed a serialization boundary (a person's
//! edit, storage, a model) against their published JSON Schema.
//!
//! Compiling a schema into a validator costs far more than validating one
//! payload with it (tens of microseconds for a workflow's payload type), so
//! the schemas the model loop checks on every reply and every tool call are
//! compiled once per process and type ([`compiled`]).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

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

/// Validates `payload` against `schema` (draft 2020-12), compiling the
/// schema for this one call (see [`compiled`] for schemas checked often).
pub(crate) fn against(
    schema: &serde_json::Value,
    payload: &serde_json::Value,
) -> Result<(), Vec<String>> {
    Compiled::new(schema.clone()).check(payload)
}

/// A schema and its validator, compiled once.
pub(crate) struct Compiled {
    /// The schema as published (what a model request carries).
    pub(crate) schema: serde_json::Value,
    /// Its validator, or why the schema does not compile.
    validator: Result<jsonschema::Validator, String>,
}

impl Compiled {
    /// Compiles `schema` (draft 2020-12); a schema that does not compile is
    /// kept with its error, reported by every [`check`](Self::check).
    fn new(schema: serde_json::Value) -> Self {
        let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string());
        Compiled { schema, validator }
    }

    /// Validates `payload`: every error the validator finds, or `Ok`.
    pub(crate) fn check(&self, payload: &serde_json::Value) -> Result<(), Vec<String>> {
        let validator = match &self.validator {
            Ok(v) => v,
            Err(e) => return Err(vec![format!("invalid schema: {e}")]),
        };
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
}

/// The schema `make` builds, compiled once per process for the key type `K`
/// (a payload type, or a workflow and tool pair): the first call builds and
/// compiles it, the others share it. `make` must give the same schema for
/// the same `K` every time (a type's schema does).
pub(crate) fn compiled<K: 'static>(make: impl FnOnce() -> serde_json::Value) -> Arc<Compiled> {
    type Cache = RwLock<HashMap<TypeId, Arc<Compiled>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = TypeId::of::<K>();
    // A poisoned lock held only a map of finished entries: still whole.
    if let Some(found) = cache.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return found.clone();
    }
    // Compiled outside the lock; two threads racing on a first call both
    // compile, and the first one stored is kept.
    let fresh = Arc::new(Compiled::new(make()));
    cache
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_insert(fresh)
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_is_compiled_once_per_key_and_checks_as_before() {
        struct Key;
        let schema = serde_json::json!({"type": "object", "required": ["a"]});
        let mut built = 0;
        let first = compiled::<Key>(|| {
            built += 1;
            schema.clone()
        });
        let again = compiled::<Key>(|| {
            built += 1;
            serde_json::json!(true)
        });
        assert_eq!(built, 1);
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(again.schema, schema);
        assert_eq!(first.check(&serde_json::json!({"a": 1})), Ok(()));
        let errors = first.check(&serde_json::json!({})).unwrap_err();
        assert_eq!(
            errors,
            against(&schema, &serde_json::json!({})).unwrap_err()
        );
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].contains("\"a\" is a required property"),
            "{errors:?}"
        );
    }

    #[test]
    fn a_schema_that_does_not_compile_is_reported_by_every_check() {
        struct Bad;
        let bad = compiled::<Bad>(|| serde_json::json!({"type": 12}));
        for _ in 0..2 {
            let errors = bad.check(&serde_json::json!(1)).unwrap_err();
            assert!(errors[0].starts_with("invalid schema: "), "{errors:?}");
        }
    }
}
