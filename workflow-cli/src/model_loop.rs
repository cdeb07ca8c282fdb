//! `show --tools` for a model's tool loop (`cx.tool_loop`): the tools it
//! was offered, each model step with the calls it asked for and what each
//! got (the tool call made, or the refusal fed back), and its outcome.

use workflow_core::llm::{ModelCallRecord, ModelOutcome};

/// The lines of one model call of a turn: for a tool loop, a header and a
/// line per step; for a plain generation, nothing (its line says enough).
pub(crate) fn lines(call: &ModelCallRecord) -> Vec<String> {
    if call.tools.is_empty() {
        return Vec::new();
    }
    let outcome = match &call.outcome {
        ModelOutcome::Ok { .. } => "ok".to_owned(),
        ModelOutcome::Failed { error } => format!("FAILED ({}): {}", error.kind, error.message),
    };
    let mut out = vec![format!(
        "    model #{} {} offered [{}] -> {outcome} in {} step{}",
        call.index,
        call.model,
        call.tools.join(", "),
        call.attempts.len(),
        if call.attempts.len() == 1 { "" } else { "s" }
    )];
    for (n, step) in call.attempts.iter().enumerate() {
        let n = n + 1;
        if step.tool_calls.is_empty() {
            let said = match (&step.reply, &step.refusal) {
                (_, Some(why)) => format!("refuses: {why}"),
                (Some(text), None) => format!("answers {text}"),
                (None, None) => "no reply".to_owned(),
            };
            let verdict = match &step.error {
                Some(e) => format!(" -> REJECTED ({}): {}", e.kind, e.message),
                None => String::new(),
            };
            out.push(format!("      step {n}: {said}{verdict}"));
            continue;
        }
        for (i, asked) in step.tool_calls.iter().enumerate() {
            let got = match step.answers.get(i) {
                Some(a) => match (a.call, &a.error) {
                    (Some(index), None) => format!("tool #{index}"),
                    (Some(index), Some(e)) => format!("tool #{index} FAILED ({})", e.kind),
                    (None, Some(e)) => format!("REFUSED ({}): {}", e.kind, e.message),
                    (None, None) => "not answered".to_owned(),
                },
                // Asked at the step that ended the loop: never made.
                None => match &step.error {
                    Some(e) => format!("not made ({})", e.kind),
                    None => "not made".to_owned(),
                },
            };
            out.push(format!(
                "      step {n}: asks {}({}) -> {got}",
                asked.name, asked.arguments
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use workflow_core::Usage;
    use workflow_core::llm::{
        ModelAttempt, ModelError, ModelErrorKind, ToolAnswer, ToolCallRequest,
    };

    fn step(calls: Vec<ToolCallRequest>, answers: Vec<ToolAnswer>) -> ModelAttempt {
        ModelAttempt {
            request_digest: String::new(),
            reply: Some(String::new()),
            refusal: None,
            usage: Usage::default(),
            error: None,
            tool_calls: calls,
            answers,
        }
    }

    #[test]
    fn a_loop_shows_what_was_offered_each_step_and_what_each_call_got() {
        let refused = ModelError::new(
            ModelErrorKind::ToolNotOffered,
            "tool `restart` is not offered to you",
        );
        let call = ModelCallRecord {
            index: 0,
            model: "scripted".into(),
            schema: Some("Answer".into()),
            tools: vec!["lookup".into(), "page".into()],
            request_digest: String::new(),
            attempts: vec![
                step(
                    vec![
                        ToolCallRequest::new("a", "lookup", r#"{"name":"api"}"#),
                        ToolCallRequest::new("b", "restart", "{}"),
                    ],
                    vec![
                        ToolAnswer {
                            id: "a".into(),
                            call: Some(0),
                            error: None,
                        },
                        ToolAnswer {
                            id: "b".into(),
                            call: None,
                            error: Some(refused),
                        },
                    ],
                ),
                ModelAttempt {
                    reply: Some(r#"{"service":"api"}"#.into()),
                    ..step(vec![], vec![])
                },
            ],
            usage: Usage::default(),
            outcome: ModelOutcome::Ok {
                digest: String::new(),
            },
            duration_us: 0,
        };
        assert_eq!(
            lines(&call),
            [
                "    model #0 scripted offered [lookup, page] -> ok in 2 steps",
                r#"      step 1: asks lookup({"name":"api"}) -> tool #0"#,
                "      step 1: asks restart({}) -> REFUSED (tool not offered): tool `restart` is not offered to you",
                r#"      step 2: answers {"service":"api"}"#,
            ]
        );
        let plain = ModelCallRecord {
            tools: vec![],
            ..call
        };
        assert!(lines(&plain).is_empty(), "a generation has no loop to show");
    }
}
