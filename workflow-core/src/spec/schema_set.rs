//! A set of named root JSON Schemas (draft 2020-12): what a workflow's
//! [`Workflow::schemas`](crate::Workflow::schemas) fills in. Writing
//! it to files and checking it for drift is the export layer's.

use std::collections::BTreeMap;

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::Value;

/// The root JSON Schema (draft 2020-12) of `T`: the schema a [`SchemaSet`]
/// publishes for it, and the response format a model is asked to follow
/// (`workflow_core::llm`).
pub fn root_schema<T: JsonSchema + ?Sized>() -> Value {
    SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// A set of named root schemas, ordered by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaSet {
    pub(crate) schemas: BTreeMap<String, Value>,
    /// Names under which two different schemas were added.
    pub(crate) conflicts: Vec<String>,
}

impl SchemaSet {
    /// An empty set.
    pub fn new() -> Self {
        SchemaSet::default()
    }

    /// Adds the root schema of `T` under its schema name.
    pub fn add<T: JsonSchema + ?Sized>(&mut self) -> &mut Self {
        let name = T::schema_name().into_owned();
        let value = root_schema::<T>();
        match self.schemas.get(&name) {
            Some(existing) if *existing != value => {
                if !self.conflicts.contains(&name) {
                    self.conflicts.push(name);
                }
            }
            Some(_) => {}
            None => {
                self.schemas.insert(name, value);
            }
        }
        self
    }

    /// Names under which two different types were added: their files would
    /// overwrite each other, so `export` and `check` refuse such a set.
    /// Rename one type (or give it `#[schemars(rename = "..")]`).
    pub fn conflicts(&self) -> &[String] {
        &self.conflicts
    }

    /// The schema named `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.schemas.get(name)
    }

    /// The schema names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.schemas.keys().map(String::as_str)
    }

    /// `(name, schema)` pairs, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.schemas.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// How many schemas there are.
    pub fn len(&self) -> usize {
        self.schemas.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.schemas.is_empty()
    }
}
