//! How a request's structured output goes out to the server, chosen per
//! backend: the schemas a server takes differ, and a schema it refuses
//! fails the call before the model says a word.

use serde_json::{Value, json};
use workflow_core::llm::{ModelError, ResponseFormat};
use workflow_core::schema::{StrictSchema, openai_strict};

/// The form of the `response_format` a backend sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaForm {
    /// `{"type": "json_schema", "json_schema": {name, schema, strict}}`
    /// (OpenAI, vLLM, Ollama, LM Studio). The published schema as it is;
    /// when the request asks for strict mode, its OpenAI strict form
    /// ([`openai_strict`]) instead, and the reply is restored to the
    /// published form ([`StrictSchema::restore`]) before it is checked.
    #[default]
    JsonSchema,
    /// `{"type": "json_object", "schema": ...}`: what llama.cpp's server
    /// takes (it answers 500 to `json_schema`), `$ref` and `$defs`
    /// included. The published schema as it is; strict mode is not asked
    /// for (the server has none).
    JsonObject,
}

impl SchemaForm {
    /// The form named `name`: `json_schema` or `json_object`
    /// (`OPENAI_SCHEMA_FORM`).
    pub fn parse(name: &str) -> Option<SchemaForm> {
        match name.trim() {
            "json_schema" => Some(SchemaForm::JsonSchema),
            "json_object" => Some(SchemaForm::JsonObject),
            _ => None,
        }
    }
}

/// The `response_format` for `format` in form `form`, and the strict form
/// the reply must be restored from, if one was sent.
pub(crate) fn response_format(
    form: SchemaForm,
    format: &ResponseFormat,
) -> Result<(Value, Option<StrictSchema>), ModelError> {
    match form {
        SchemaForm::JsonObject => Ok((
            json!({ "type": "json_object", "schema": format.schema }),
            None,
        )),
        SchemaForm::JsonSchema if format.strict => {
            let strict = openai_strict(&format.schema).map_err(|e| {
                ModelError::new(
                    workflow_core::llm::ModelErrorKind::UnsupportedSchema,
                    format!("`{}` has no strict form: {e}", format.name),
                )
            })?;
            let value = json!({
                "type": "json_schema",
                "json_schema": { "name": format.name, "schema": strict.schema, "strict": true },
            });
            Ok((value, Some(strict)))
        }
        SchemaForm::JsonSchema => Ok((
            json!({
                "type": "json_schema",
                "json_schema": { "name": format.name, "schema": format.schema, "strict": false },
            }),
            None,
        )),
    }
}

/// The reply's text in the published form: a strict reply restored; text
/// that is not JSON is left for the caller's check to report.
pub(crate) fn restore(strict: Option<&StrictSchema>, text: String) -> String {
    let Some(strict) = strict else {
        return text;
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value) => serde_json::to_string(&strict.restore(value)).unwrap_or(text),
        Err(_) => text,
    }
}
