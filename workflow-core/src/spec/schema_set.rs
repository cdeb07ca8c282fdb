//! A set of named root JSON Schemas (draft 2020-12): what a workflow's
//! [`Workflow::schemas`](crate::Workflow::schemas) fills in. Writing
//! it to files and checking it for drift is the export layer's.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::Value;

/// The root JSON Schema (draft 2020-12) of `T`: the schema a [`SchemaSet`]
/// publishes for it, and the response format a model is asked to follow
/// (`workflow_core::llm`).
pub fn root_schema<T: JsonSchema + ?Sized>() -> Value {
    root_schema_doc::<T>().to_value()
}

/// [`root_schema`] as schemars' document (what the static graph holds): the
/// one place the settings are chosen.
pub(crate) fn root_schema_doc<T: JsonSchema + ?Sized>() -> schemars::Schema {
    SchemaSettings::draft2020_12()
        .with_transform(crate::spec::standard_format::StandardFormats)
        .into_generator()
        .into_root_schema_for::<T>()
}

/// The name the schema `schema` of one of workflow `workflow`'s own types
/// (its input, output, payloads, tool inputs and outputs, invariants) is
/// published under: `<workflow>.<schema>`. Two workflows of one crate may
/// both declare an `Order`; their schemas are `a.Order` and `b.Order`, and
/// exported into one folder neither overwrites the other. The types every
/// workflow shares (the contract parts, `Receipt`, the records, the
/// manifest) keep their bare names.
pub fn published_name(workflow: &str, schema: &str) -> String {
    format!("{workflow}.{schema}")
}

/// The name `T`'s schema is published under in a workflow: its own name
/// (`Order`), or `role` when it has none of its own, that is when schemars
/// inlines it (`String`, `Vec<String>`, `u32`): a tool's input of type
/// `String` is `lookup.input`, not a `string` shared with every other
/// string. Roles: `input` and `output` for the workflow's, `<tool>.input`
/// and `<tool>.output` for a tool's, `invariants`.
pub fn schema_name_or<T: JsonSchema + ?Sized>(role: &'static str) -> Cow<'static, str> {
    if T::inline_schema() {
        Cow::Borrowed(role)
    } else {
        T::schema_name()
    }
}

/// The file a schema named `name` is exported to, `<name>.schema.json`,
/// which is also the schema's `$id`.
pub fn schema_file(name: &str) -> String {
    format!("{name}{SCHEMA_FILE_SUFFIX}")
}

/// How the line of a published schema's `$comment` that names the Rust
/// type it was generated from begins.
const RUST_TYPE_PREFIX: &str = "Rust type: ";

/// The Rust type (module path and name) a published schema says it was
/// generated from: the `Rust type: ` line of its `$comment`, or, in a
/// schema published before that, its `x-rust-type` (an unknown keyword,
/// which strict validators such as Ajv refuse).
pub fn rust_type_of(schema: &Value) -> Option<&str> {
    schema
        .get("$comment")
        .and_then(Value::as_str)
        .and_then(|c| c.lines().find_map(|l| l.strip_prefix(RUST_TYPE_PREFIX)))
        .or_else(|| schema.get("x-rust-type").and_then(Value::as_str))
}

/// How every schema file's name ends.
pub(crate) const SCHEMA_FILE_SUFFIX: &str = ".schema.json";

/// A set of named root schemas, ordered by name. Exported, each file
/// also carries an `$id`, its file name ([`schema_file`]), so that it says
/// which schema it holds wherever it is copied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaSet {
    pub(crate) schemas: BTreeMap<String, Value>,
    /// Names under which two different schemas were added.
    pub(crate) conflicts: Vec<String>,
    /// The workflow whose own types are being added (`SchemaSet::of`):
    /// their names are qualified with it ([`published_name`]).
    pub(crate) workflow: Option<&'static str>,
    /// The Rust type (module path and name, schemars' `schema_id`) of each
    /// workflow-scoped schema, published in its `$comment`
    /// ([`rust_type_of`]): two workflows
    /// with the same name in different modules publish the same file names,
    /// and this is what tells their schemas apart.
    pub(crate) types: BTreeMap<String, String>,
}

impl SchemaSet {
    /// An empty set.
    pub fn new() -> Self {
        SchemaSet::default()
    }

    /// Adds the root schema of `T` under its schema name (qualified with
    /// the workflow's name, `<workflow>.<Type>`, inside
    /// [`Workflow::schemas`](crate::Workflow::schemas)).
    pub fn add<T: JsonSchema + ?Sized>(&mut self) -> &mut Self {
        self.add_named::<T>(T::schema_name())
    }

    /// Adds the root schema of `T` under the name it takes in its workflow,
    /// [`schema_name_or`]`::<T>(role)`: its own, or `role` for a type
    /// without one (`String`, `Vec<String>`).
    pub fn add_or<T: JsonSchema + ?Sized>(&mut self, role: &'static str) -> &mut Self {
        self.add_named::<T>(schema_name_or::<T>(role))
    }

    fn add_named<T: JsonSchema + ?Sized>(&mut self, schema: Cow<'static, str>) -> &mut Self {
        let name = match self.workflow {
            Some(workflow) => published_name(workflow, &schema),
            None => schema.into_owned(),
        };
        let value = root_schema::<T>();
        match self.schemas.get(&name) {
            Some(existing) if *existing != value => {
                if !self.conflicts.contains(&name) {
                    self.conflicts.push(name);
                }
            }
            Some(_) => {}
            None => {
                if self.workflow.is_some() {
                    self.types.insert(name.clone(), T::schema_id().into_owned());
                }
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

    /// The schema named `name` (a workflow's own types under
    /// `<workflow>.<Type>`), as a model is asked
    /// to follow it: the published file adds its `$id`
    /// ([`published`](Self::published)).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.schemas.get(name)
    }

    /// The schema named `name` as it is published: with its `$id`, the file
    /// it is exported to ([`schema_file`]).
    pub fn published(&self, name: &str) -> Option<Value> {
        let mut schema = self.schemas.get(name)?.clone();
        if let Value::Object(fields) = &mut schema {
            fields.insert("$id".to_owned(), Value::String(schema_file(name)));
            if let Some(rust_type) = self.types.get(name) {
                // In `$comment`, the one keyword for notes that every
                // validator, strict ones included, accepts and ignores.
                let line = format!("{RUST_TYPE_PREFIX}{rust_type}");
                let comment = match fields.get("$comment").and_then(Value::as_str) {
                    Some(theirs) => format!("{theirs}\n{line}"),
                    None => line,
                };
                fields.insert("$comment".to_owned(), Value::String(comment));
            }
        }
        Some(schema)
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
