use super::*;
use crate::llm::*;
use crate::spec::*;

#[test]
fn format_names_are_what_openai_accepts() {
    assert_eq!(format_name("NetworkTask"), "NetworkTask");
    assert_eq!(format_name("Scope_Pick"), "Scope_Pick");
    assert_eq!(format_name("Vec<String>"), "Vec_String_");
    assert_eq!(format_name(""), "payload");
    assert_eq!(format_name(&"x".repeat(80)).len(), 64);
}

#[test]
fn the_request_digest_covers_messages_schema_and_model() {
    let request = ModelRequest {
        model: None,
        messages: vec![Message::user("hello")],
        response_format: None,
        tools: Vec::new(),
    };
    let digest = request.digest();
    assert_eq!(digest.len(), 64);
    assert_eq!(digest, request.clone().digest());
    let mut other = request.clone();
    other.messages.push(Message::user("again"));
    assert_ne!(other.digest(), digest);
    let mut other = request.clone();
    other.model = Some("m".into());
    assert_ne!(other.digest(), digest);
    let mut other = request;
    other.response_format = Some(ResponseFormat {
        name: "X".into(),
        schema: serde_json::json!({"type": "object"}),
        strict: false,
    });
    assert_ne!(other.digest(), digest);
}

#[test]
fn only_bad_replies_are_repaired() {
    use ModelErrorKind::*;
    let repairable: Vec<ModelErrorKind> = [
        Transport,
        Status(500),
        Timeout,
        Refusal,
        MalformedJson,
        SchemaMismatch,
        ContractRule,
        RetriesExhausted,
        Budget,
        NoReply,
        NoModel,
        Cancelled,
        UnsupportedSchema,
    ]
    .into_iter()
    .filter(|k| k.is_repairable())
    .collect();
    assert_eq!(repairable, [MalformedJson, SchemaMismatch, ContractRule]);
    assert!(Status(503).is_transient() && Status(429).is_transient());
    assert!(!Status(400).is_transient() && !Refusal.is_transient());
}

#[test]
fn errors_display_their_class_and_list() {
    let e = ModelError::new(ModelErrorKind::SchemaMismatch, "the reply does not match")
        .with_errors(vec!["/op: missing".into(), "/n: not a number".into()]);
    assert_eq!(
        e.to_string(),
        "model call failed (schema mismatch): the reply does not match: /op: missing; /n: not a number"
    );
    let reject: crate::spec::Reject = e.into();
    assert!(reject.reason().contains("/op: missing"));
    let json = serde_json::to_value(ModelError::status(503, "busy")).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"kind": {"status": 503}, "message": "busy"})
    );
}

#[test]
fn a_system_message_goes_first_once() {
    let p = Prompt::new("do it").system("a").system("b");
    assert_eq!(p.messages(), [Message::system("b"), Message::user("do it")]);
}

#[test]
fn a_scripted_reply_estimates_its_usage() {
    let model = ScriptedModel::new().reply("12345678");
    let request = ModelRequest {
        model: None,
        messages: vec![Message::user("abcdefghi")],
        response_format: None,
        tools: Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let reply = rt.block_on(model.complete(&request)).unwrap();
    assert_eq!(reply.usage, Usage::tokens(3, 2));
    let over = rt.block_on(model.complete(&request)).unwrap_err();
    assert_eq!(over.kind, ModelErrorKind::NoReply);
}
