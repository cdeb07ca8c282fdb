//! The response format in each backend's form, over real HTTP: the
//! published schema by default; its OpenAI strict form when strict mode is
//! asked for, the reply restored to the published form; `json_object` with
//! the schema for llama.cpp's server; a schema strict mode cannot express
//! refused before anything is sent.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use workflow_core::SchemaSet;
use workflow_core::llm::{
    Message, Model, ModelErrorKind, ModelRequest, ResponseFormat, ToolDefinition,
};
use workflow_core::schema::{openai_strict_violations, root_schema};
use workflow_openai::{OpenAiModel, SchemaForm};

use crate::http::{Server, completion, desk, valid};

/// A finding, with optional parts.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// What.
    pub title: String,
    /// How many, when counted.
    #[serde(default)]
    pub count: u32,
    /// A note.
    pub note: Option<String>,
}

fn request<T: JsonSchema>(strict: bool) -> ModelRequest {
    ModelRequest {
        model: None,
        messages: vec![Message::user("find")],
        response_format: Some(ResponseFormat {
            name: "Findings".to_owned(),
            schema: root_schema::<T>(),
            strict,
        }),
        tools: Vec::new(),
    }
}

#[tokio::test]
async fn strict_mode_sends_the_strict_form_and_restores_the_reply() {
    // The model answers in the strict form: wrapped, every property set.
    let strict_reply = json!({"value": [{"title": "t", "count": null, "note": null}]});
    let server = Server::start(vec![completion(&strict_reply.to_string())]).await;
    let reply = server
        .model()
        .complete(&request::<Vec<Finding>>(true))
        .await
        .expect("a reply");
    let format = &server.requests()[0].body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["strict"], true);
    let sent = &format["json_schema"]["schema"];
    assert_eq!(openai_strict_violations(sent), Vec::<String>::new());
    assert!(!openai_strict_violations(&root_schema::<Vec<Finding>>()).is_empty());
    // Restored: unwrapped, the `null` for `count` (not nullable) gone.
    let value: Value = serde_json::from_str(&reply.text).expect("JSON");
    assert_eq!(value, json!([{"title": "t", "note": null}]));
    let findings: Vec<Finding> = serde_json::from_value(value).expect("the type reads it");
    assert_eq!(findings[0].count, 0);
}

#[tokio::test]
async fn without_strict_mode_the_published_schema_goes_out_unchanged() {
    let server = Server::start(vec![completion("[]")]).await;
    let reply = server
        .model()
        .complete(&request::<Vec<Finding>>(false))
        .await
        .expect("a reply");
    assert_eq!(reply.text, "[]");
    let format = &server.requests()[0].body["response_format"];
    assert_eq!(format["json_schema"]["strict"], false);
    assert_eq!(
        format["json_schema"]["schema"],
        root_schema::<Vec<Finding>>()
    );
}

#[tokio::test]
async fn a_map_in_strict_mode_is_refused_before_anything_is_sent() {
    let server = Server::start(vec![]).await;
    let error = server
        .model()
        .complete(&request::<BTreeMap<String, u32>>(true))
        .await
        .expect_err("no strict form");
    assert_eq!(error.kind, ModelErrorKind::UnsupportedSchema);
    assert!(error.message.contains("additionalProperties"), "{error}");
    assert!(server.requests().is_empty(), "nothing sent");
}

#[tokio::test]
async fn the_json_object_form_carries_the_published_schema_for_llama_cpp() {
    let server = Server::start(vec![completion(&valid().to_string())]).await;
    let model = OpenAiModel::new(server.config().schema_form(SchemaForm::JsonObject))
        .expect("a plain http URL");
    let done = desk::Workflow::new((), ())
        .with_model(Arc::new(model))
        .run("the api returns 502".to_owned())
        .await
        .expect("completes");
    assert_eq!(done.output.service, "api");
    let format = &server.requests()[0].body["response_format"];
    assert_eq!(format["type"], "json_object");
    assert_eq!(
        Some(&format["schema"]),
        SchemaSet::of::<desk::Spec>().get("desk.FixTask"),
        "the published schema, `$ref`s and `$defs` included"
    );
    assert!(format.get("json_schema").is_none());
}

#[test]
fn the_form_is_named_in_the_environment_as_in_the_api() {
    assert_eq!(
        SchemaForm::parse("json_object"),
        Some(SchemaForm::JsonObject)
    );
    assert_eq!(
        SchemaForm::parse("json_schema"),
        Some(SchemaForm::JsonSchema)
    );
    assert_eq!(SchemaForm::parse("yaml"), None);
}

/// A request that offers one tool and asks for `Vec<Finding>` as the answer.
fn request_with_a_tool() -> ModelRequest {
    let mut request = request::<Vec<Finding>>(false);
    request.tools = vec![ToolDefinition {
        name: "lookup".to_owned(),
        description: "Looks a service up.".to_owned(),
        input_schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
    }];
    request
}

#[tokio::test]
async fn the_json_object_form_with_tools_offered_sends_no_grammar_but_the_schema_in_words() {
    // llama.cpp would hold every reply to a `json_object` schema, so a model
    // offered tools could never call one: the schema goes into a system
    // message instead, and the answer is still checked at the seam.
    let server = Server::start(vec![completion("[]")]).await;
    let model = OpenAiModel::new(server.config().schema_form(SchemaForm::JsonObject))
        .expect("a plain http URL");
    model
        .complete(&request_with_a_tool())
        .await
        .expect("a reply");
    let body = &server.requests()[0].body;
    assert!(body.get("response_format").is_none(), "{body}");
    assert_eq!(body["tools"][0]["function"]["name"], "lookup");
    let messages = body["messages"].as_array().expect("messages");
    let last = messages.last().expect("a message");
    assert_eq!(last["role"], "system");
    let text = last["content"].as_str().expect("text");
    assert!(text.contains("Findings"), "{text}");
    assert!(
        text.contains(&root_schema::<Vec<Finding>>().to_string()),
        "{text}"
    );
}

#[tokio::test]
async fn the_json_schema_form_keeps_the_response_format_beside_tools() {
    let server = Server::start(vec![completion("[]")]).await;
    server
        .model()
        .complete(&request_with_a_tool())
        .await
        .expect("a reply");
    let body = &server.requests()[0].body;
    assert_eq!(body["response_format"]["type"], "json_schema");
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1, "nothing added: {messages:?}");
}
