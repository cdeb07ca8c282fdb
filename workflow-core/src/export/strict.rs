//! The form of a schema OpenAI's strict structured outputs accept
//! (`response_format: {type: "json_schema", json_schema: {strict: true}}`),
//! made from a published schema, and the way back from a reply in that form
//! to a value of the published one.
//!
//! The documented rules ("Supported schemas" of OpenAI's Structured
//! Outputs guide): the root is an object (not `anyOf`); every object says
//! `additionalProperties: false`; every property is `required` (an optional
//! one is made nullable instead); unions are `anyOf`; a `$ref` has no
//! keywords beside it; only the supported keywords and `format`s appear;
//! at most 10 levels of nesting, 5,000 properties and 1,000 enum values.
//! [`openai_strict_violations`] checks those rules.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// The keywords strict mode supports; any other is dropped (and named in
/// [`StrictSchema::dropped`]).
const SUPPORTED: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "$ref",
    "$defs",
    "description",
    "title",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
];

/// The `format`s strict mode supports.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The property a non-object root is wrapped under.
pub const STRICT_ROOT_PROPERTY: &str = "value";

/// Limits of strict mode.
const MAX_DEPTH: usize = 10;
const MAX_PROPERTIES: usize = 5000;
const MAX_ENUM_VALUES: usize = 1000;

/// A schema in the form OpenAI's strict mode accepts, and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct StrictSchema {
    /// The strict form: what goes out as the response format's `schema`.
    pub schema: Value,
    /// Whether the published root (not an object) was wrapped as the one
    /// property [`STRICT_ROOT_PROPERTY`] of an object root.
    pub wrapped: bool,
    /// Keywords dropped because strict mode does not support them, with
    /// where (`default at /properties/tags`). The reply is still checked
    /// against the published schema, which has them.
    pub dropped: Vec<String>,
    /// The published schema, to restore replies against.
    published: Value,
}

/// A schema that has no strict form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrictError {
    /// A construct strict mode cannot express (a map's
    /// `additionalProperties` schema, a tuple's `prefixItems`, an `allOf`
    /// of several schemas, ...): the schema's meaning would change.
    #[error(
        "`{keyword}` at `{at}` has no form in OpenAI's strict mode; use a struct (or a Vec) there, or ask without strict mode"
    )]
    Unsupported {
        /// The keyword.
        keyword: String,
        /// Where, as a JSON pointer into the published schema.
        at: String,
    },
    /// The schema is not a JSON object (or `true`/`false`).
    #[error("the schema is not an object: {0}")]
    NotASchema(String),
}

/// The strict form of `schema` (a published, draft 2020-12 schema): a
/// non-object root wrapped as `{"value": ...}`; `oneOf` as `anyOf`; every
/// object closed (`additionalProperties: false`) with every property
/// required, an optional property made nullable; a `$ref` with siblings
/// as `{"anyOf": [{"$ref": ..}], "description": ..}`; unsupported keywords
/// and formats dropped. Refused ([`StrictError`]) when strict mode cannot
/// express the schema's meaning.
pub fn openai_strict(schema: &Value) -> Result<StrictSchema, StrictError> {
    let Value::Object(root) = schema else {
        return Err(StrictError::NotASchema(schema.to_string()));
    };
    let mut dropped = Vec::new();
    let mut root = root.clone();
    let defs = root.remove("$defs");
    let is_object_root = root.get("type") == Some(&json!("object"));
    let mut body = Value::Object(root);
    let mut strict_defs = Map::new();
    if let Some(Value::Object(defs)) = defs {
        for (name, def) in defs {
            let at = format!("/$defs/{name}");
            strict_defs.insert(name, strict_node(&def, &at, &mut dropped)?);
        }
    }
    let wrapped = !is_object_root;
    let mut out = if wrapped {
        // A reference to the root (`"#"`) would now name the wrapper: the
        // published root moves into `$defs`.
        if mentions_root_ref(&body) {
            strip_annotations_for_def(&mut body);
            let name = unused_name(&strict_defs, "Root");
            rewrite_root_refs(&mut body, &format!("#/$defs/{name}"));
            for def in strict_defs.values_mut() {
                rewrite_root_refs(def, &format!("#/$defs/{name}"));
            }
            let inner = strict_node(&body, "", &mut dropped)?;
            strict_defs.insert(name.clone(), inner);
            body = json!({ "$ref": format!("#/$defs/{name}") });
        } else {
            body = strict_node(&body, "", &mut dropped)?;
        }
        json!({
            "type": "object",
            "properties": { STRICT_ROOT_PROPERTY: body },
            "required": [STRICT_ROOT_PROPERTY],
            "additionalProperties": false,
        })
    } else {
        strict_node(&body, "", &mut dropped)?
    };
    if !strict_defs.is_empty()
        && let Value::Object(fields) = &mut out
    {
        fields.insert("$defs".to_owned(), Value::Object(strict_defs));
    }
    Ok(StrictSchema {
        schema: out,
        wrapped,
        dropped,
        published: schema.clone(),
    })
}

/// Whether `"$ref": "#"` occurs in `schema`.
pub(crate) fn mentions_root_ref(schema: &Value) -> bool {
    match schema {
        Value::Object(fields) => fields
            .iter()
            .any(|(k, v)| (k == "$ref" && v == "#") || mentions_root_ref(v)),
        Value::Array(items) => items.iter().any(mentions_root_ref),
        _ => false,
    }
}

pub(crate) fn rewrite_root_refs(schema: &mut Value, to: &str) {
    match schema {
        Value::Object(fields) => {
            for (k, v) in fields.iter_mut() {
                if k == "$ref" && v == "#" {
                    *v = Value::String(to.to_owned());
                } else {
                    rewrite_root_refs(v, to);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_root_refs(v, to)),
        _ => {}
    }
}

/// The root's document keywords have no place in a definition.
fn strip_annotations_for_def(schema: &mut Value) {
    if let Value::Object(fields) = schema {
        for k in ["$schema", "$id", "$comment"] {
            fields.remove(k);
        }
    }
}

pub(crate) fn unused_name(defs: &Map<String, Value>, base: &str) -> String {
    let mut name = base.to_owned();
    while defs.contains_key(&name) {
        name.push('_');
    }
    name
}

/// The strict form of one (sub)schema at `at`.
fn strict_node(schema: &Value, at: &str, dropped: &mut Vec<String>) -> Result<Value, StrictError> {
    let fields = match schema {
        Value::Object(fields) => fields,
        // `true` (anything) has no strict form; `false` cannot occur where
        // a value is expected.
        other => {
            return Err(StrictError::Unsupported {
                keyword: other.to_string(),
                at: at.to_owned(),
            });
        }
    };
    // Constructs whose meaning strict mode cannot keep.
    for keyword in ["prefixItems", "patternProperties", "if", "not"] {
        if fields.contains_key(keyword) {
            return Err(StrictError::Unsupported {
                keyword: keyword.to_owned(),
                at: at.to_owned(),
            });
        }
    }
    // A map (`additionalProperties` a schema): a closed object would
    // refuse every key.
    if matches!(fields.get("additionalProperties"), Some(Value::Object(_))) {
        return Err(StrictError::Unsupported {
            keyword: "additionalProperties".to_owned(),
            at: at.to_owned(),
        });
    }
    // A single `allOf` is its one schema, merged in.
    let mut fields = fields.clone();
    if let Some(Value::Array(all)) = fields.remove("allOf") {
        match <[Value; 1]>::try_from(all) {
            Ok([Value::Object(only)]) => {
                for (k, v) in only {
                    fields.entry(k).or_insert(v);
                }
            }
            _ => {
                return Err(StrictError::Unsupported {
                    keyword: "allOf".to_owned(),
                    at: at.to_owned(),
                });
            }
        }
    }
    if let Some(one_of) = fields.remove("oneOf") {
        fields.insert("anyOf".to_owned(), one_of);
    }
    let mut out = Map::new();
    for (key, value) in fields {
        if !SUPPORTED.contains(&key.as_str()) || key == "$defs" {
            dropped.push(format!("{key} at {}", pointer_or_root(at)));
            continue;
        }
        if key == "format" && !value.as_str().is_some_and(|f| FORMATS.contains(&f)) {
            dropped.push(format!("format {value} at {}", pointer_or_root(at)));
            continue;
        }
        let value = match key.as_str() {
            "properties" => {
                let Value::Object(props) = value else {
                    continue;
                };
                let mut strict = Map::new();
                for (name, sub) in props {
                    let sub_at = format!("{at}/properties/{}", escape(&name));
                    strict.insert(name, strict_node(&sub, &sub_at, dropped)?);
                }
                Value::Object(strict)
            }
            "items" => strict_node(&value, &format!("{at}/items"), dropped)?,
            "anyOf" => {
                let Value::Array(branches) = value else {
                    continue;
                };
                let mut strict = Vec::with_capacity(branches.len());
                for (i, b) in branches.iter().enumerate() {
                    strict.push(strict_node(b, &format!("{at}/anyOf/{i}"), dropped)?);
                }
                Value::Array(strict)
            }
            _ => value,
        };
        out.insert(key, value);
    }
    // Objects: closed, every property required, the optional nullable.
    let is_object = out.get("type") == Some(&json!("object")) || out.contains_key("properties");
    if is_object {
        out.entry("type").or_insert(json!("object"));
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
        let required: BTreeSet<String> = out
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let mut all = Vec::new();
        if let Some(Value::Object(props)) = out.get_mut("properties") {
            for (name, sub) in props.iter_mut() {
                if !required.contains(name) && !accepts_null_shallow(sub) {
                    *sub = nullable(std::mem::take(sub));
                }
                all.push(Value::String(name.clone()));
            }
        }
        out.insert("required".to_owned(), Value::Array(all));
    }
    // A `$ref` stands alone: its annotations move to an `anyOf` around it.
    if out.contains_key("$ref") && out.len() > 1 {
        let reference = out.remove("$ref").unwrap_or_default();
        out.insert("anyOf".to_owned(), json!([{ "$ref": reference }]));
    }
    Ok(Value::Object(out))
}

fn pointer_or_root(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}

/// A JSON pointer token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Whether a strict subschema visibly accepts `null` (without resolving
/// references: a `$ref` to a nullable definition is made nullable again,
/// which changes nothing).
fn accepts_null_shallow(schema: &Value) -> bool {
    let null = Value::String("null".to_owned());
    match schema.get("type") {
        Some(Value::String(t)) if t == "null" => return true,
        Some(Value::Array(ts)) if ts.contains(&null) => return true,
        _ => {}
    }
    if schema.get("const") == Some(&Value::Null)
        || schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
    {
        return true;
    }
    schema
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|bs| bs.iter().any(accepts_null_shallow))
}

/// `schema` or `null`: a plain `type` gains `"null"`; anything else
/// (an enum, a const, a reference, a union) becomes `anyOf [schema, null]`.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut fields) = schema else {
        return json!({ "anyOf": [schema, { "type": "null" }] });
    };
    let plain = !["enum", "const", "$ref", "anyOf"]
        .iter()
        .any(|k| fields.contains_key(*k));
    match fields.get_mut("type") {
        Some(Value::String(t)) if plain => {
            let t = std::mem::take(t);
            fields.insert("type".to_owned(), json!([t, "null"]));
            Value::Object(fields)
        }
        Some(Value::Array(ts)) if plain => {
            ts.push(json!("null"));
            Value::Object(fields)
        }
        _ => {
            // Annotations stay outside, on the union.
            let mut outer = Map::new();
            for k in ["description", "title"] {
                if let Some(v) = fields.remove(k) {
                    outer.insert(k.to_owned(), v);
                }
            }
            outer.insert(
                "anyOf".to_owned(),
                json!([Value::Object(fields), { "type": "null" }]),
            );
            Value::Object(outer)
        }
    }
}

impl StrictSchema {
    /// The value a reply in the strict form stands for in the published
    /// form: unwrapped from [`STRICT_ROOT_PROPERTY`] when the root was
    /// wrapped, and without the `null`s strict mode made the model write
    /// for optional properties the published schema does not let be
    /// `null`. Anything else is left as it is: the published schema's
    /// validation judges the result.
    pub fn restore(&self, reply: Value) -> Value {
        let value = if self.wrapped {
            match reply {
                Value::Object(mut fields)
                    if fields.len() == 1 && fields.contains_key(STRICT_ROOT_PROPERTY) =>
                {
                    fields.remove(STRICT_ROOT_PROPERTY).unwrap_or_default()
                }
                other => return other,
            }
        } else {
            reply
        };
        let restorer = Restorer {
            root: &self.published,
        };
        restorer.restore(value, &self.published, 0)
    }
}

struct Restorer<'a> {
    root: &'a Value,
}

impl Restorer<'_> {
    /// The schema a local `$ref` names.
    fn resolve<'s>(&'s self, schema: &'s Value, depth: usize) -> &'s Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) if depth < 64 => {
                let target = r
                    .strip_prefix('#')
                    .and_then(|p| self.root.pointer(p))
                    .unwrap_or(schema);
                if std::ptr::eq(target, schema) {
                    schema
                } else {
                    self.resolve(target, depth + 1)
                }
            }
            _ => schema,
        }
    }

    fn accepts_null(&self, schema: &Value, depth: usize) -> bool {
        let schema = self.resolve(schema, depth);
        accepts_null_shallow(schema)
            || ["oneOf", "anyOf"].iter().any(|k| {
                schema
                    .get(*k)
                    .and_then(Value::as_array)
                    .is_some_and(|bs| bs.iter().any(|b| self.accepts_null(b, depth + 1)))
            })
    }

    fn restore(&self, value: Value, schema: &Value, depth: usize) -> Value {
        if depth > 64 {
            return value;
        }
        let schema = self.resolve(schema, depth);
        // A union: the first branch the restored value is valid against.
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = schema.get(key) {
                for branch in branches {
                    let candidate = self.restore(value.clone(), branch, depth + 1);
                    if self.valid(&candidate, branch) {
                        return candidate;
                    }
                }
            }
        }
        match value {
            Value::Object(mut fields) => {
                let Some(Value::Object(props)) = schema.get("properties") else {
                    return Value::Object(fields);
                };
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for (name, sub) in props {
                    match fields.remove(name) {
                        Some(Value::Null)
                            if !required.contains(&name.as_str())
                                && !self.accepts_null(sub, depth + 1) => {}
                        Some(v) => {
                            let v = self.restore(v, sub, depth + 1);
                            fields.insert(name.clone(), v);
                        }
                        None => {}
                    }
                }
                Value::Object(fields)
            }
            Value::Array(items) => match schema.get("items") {
                Some(item) => Value::Array(
                    items
                        .into_iter()
                        .map(|v| self.restore(v, item, depth + 1))
                        .collect(),
                ),
                None => Value::Array(items),
            },
            other => other,
        }
    }

    /// Whether `value` is valid against `branch` (with the root's `$defs`).
    fn valid(&self, value: &Value, branch: &Value) -> bool {
        let mut schema = branch.clone();
        if let (Value::Object(fields), Some(defs)) = (&mut schema, self.root.get("$defs")) {
            fields.insert("$defs".to_owned(), defs.clone());
        }
        jsonschema::validator_for(&schema).is_ok_and(|v| v.is_valid(value))
    }
}

/// Every way `schema` breaks the documented rules of OpenAI's strict
/// structured outputs, each with where (a JSON pointer); empty when it
/// follows them all.
pub fn openai_strict_violations(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    if schema.get("type") != Some(&json!("object")) {
        found.push("/: the root is not an object (`type: object`)".to_owned());
    }
    if schema.get("anyOf").is_some() {
        found.push("/: the root is an `anyOf`".to_owned());
    }
    let mut counts = Counts::default();
    check_node(schema, "", 0, schema, &mut counts, &mut found);
    if let Some(Value::Object(defs)) = schema.get("$defs") {
        for (name, def) in defs {
            let at = format!("/$defs/{}", escape(name));
            check_node(def, &at, 0, schema, &mut counts, &mut found);
        }
    }
    if counts.properties > MAX_PROPERTIES {
        found.push(format!(
            "/: {} properties, over the {MAX_PROPERTIES} allowed",
            counts.properties
        ));
    }
    if counts.enum_values > MAX_ENUM_VALUES {
        found.push(format!(
            "/: {} enum values, over the {MAX_ENUM_VALUES} allowed",
            counts.enum_values
        ));
    }
    found
}

#[derive(Default)]
struct Counts {
    properties: usize,
    enum_values: usize,
}

fn check_node(
    schema: &Value,
    at: &str,
    depth: usize,
    root: &Value,
    counts: &mut Counts,
    found: &mut Vec<String>,
) {
    let here = pointer_or_root(at);
    let Value::Object(fields) = schema else {
        found.push(format!("{here}: a boolean schema"));
        return;
    };
    if depth > MAX_DEPTH {
        found.push(format!("{here}: nested deeper than {MAX_DEPTH} levels"));
    }
    for key in fields.keys() {
        let allowed = SUPPORTED.contains(&key.as_str()) && (key != "$defs" || at.is_empty());
        if !allowed {
            found.push(format!("{here}: unsupported keyword `{key}`"));
        }
    }
    if let Some(format) = fields.get("format")
        && !format.as_str().is_some_and(|f| FORMATS.contains(&f))
    {
        found.push(format!("{here}: unsupported format {format}"));
    }
    if let Some(reference) = fields.get("$ref") {
        if fields.len() > 1 {
            let others: Vec<&str> = fields
                .keys()
                .filter(|k| *k != "$ref")
                .map(String::as_str)
                .collect();
            found.push(format!(
                "{here}: `$ref` has keywords beside it: {}",
                others.join(", ")
            ));
        }
        let resolves = reference
            .as_str()
            .and_then(|r| r.strip_prefix('#'))
            .is_some_and(|p| root.pointer(p).is_some());
        if !resolves {
            found.push(format!("{here}: `$ref` {reference} names no definition"));
        }
    }
    if let Some(values) = fields.get("enum").and_then(Value::as_array) {
        counts.enum_values += values.len();
    }
    let is_object = fields.get("type") == Some(&json!("object"))
        || fields
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|t| t.contains(&json!("object")))
        || fields.contains_key("properties");
    if is_object {
        if fields.get("additionalProperties") != Some(&Value::Bool(false)) {
            found.push(format!(
                "{here}: an object without `additionalProperties: false`"
            ));
        }
        let required: Vec<&Value> = fields
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().collect())
            .unwrap_or_default();
        if let Some(Value::Object(props)) = fields.get("properties") {
            counts.properties += props.len();
            for (name, sub) in props {
                if !required.contains(&&Value::String(name.clone())) {
                    found.push(format!("{here}: property `{name}` is not required"));
                }
                let sub_at = format!("{at}/properties/{}", escape(name));
                check_node(sub, &sub_at, depth + 1, root, counts, found);
            }
        }
    }
    if let Some(items) = fields.get("items") {
        check_node(
            items,
            &format!("{at}/items"),
            depth + 1,
            root,
            counts,
            found,
        );
    }
    if let Some(Value::Array(branches)) = fields.get("anyOf") {
        for (i, b) in branches.iter().enumerate() {
            check_node(
                b,
                &format!("{at}/anyOf/{i}"),
                depth + 1,
                root,
                counts,
                found,
            );
        }
    }
}

#[cfg(test)]
#[path = "strict_tests.rs"]
mod tests;
