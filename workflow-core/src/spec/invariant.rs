//! What every transition is checked against besides the receiver's own
//! contract: the pinned root invariants (declared predicates and forbidden
//! fields), an executor-wide gate (a policy, an acceptance hook), and the
//! size limits of handoffs.

use std::borrow::Cow;

/// One transfer as invariant checks and gates see it.
#[derive(Debug, Clone, Copy)]
pub struct TransferView<'a> {
    /// The workflow's name.
    pub workflow: &'static str,
    /// The run.
    pub run_id: u64,
    /// Agent turns completed before the transfer.
    pub hop: u32,
    /// The sender (`START` for the workflow input).
    pub sender: &'static str,
    /// The receiver (`END` for the workflow output).
    pub receiver: &'static str,
    /// The payload's Rust type.
    pub payload_type: &'static str,
    /// The payload, as JSON (exactly what `serde_json` makes of it).
    pub payload: &'a serde_json::Value,
}

/// The root invariants of a workflow: pinned once per run, immutable,
/// visible read-only in every agent's context, and checked on every
/// transfer. `#[invariants(forbid = [..], check = [..])]` implements it;
/// `()` has none.
pub trait Invariants: Send + Sync + 'static {
    /// Paths of fields that must never appear in any payload: a name at
    /// any depth (`ssn`), a dotted path from the top (`card.number`), `*`
    /// for any field; arrays are looked through.
    const FORBIDDEN: &'static [&'static str] = &[];
    /// Whether [`check`](Self::check) checks anything.
    const CHECKS: bool = false;

    /// The declared predicates, in order: the first that fails, as
    /// `(its name, its message)`.
    fn check(&self, transfer: &TransferView<'_>) -> Result<(), (&'static str, String)> {
        let _ = transfer;
        Ok(())
    }

    /// The invariants as JSON (for gates and policies).
    fn to_json(&self) -> Result<serde_json::Value, String> {
        Ok(serde_json::Value::Null)
    }
}

impl Invariants for () {}

/// The root invariants as a run records them on its first record: their
/// JSON text, `None` when there is nothing to record (`()`, or a root whose
/// `to_json` gives `null`), the serializer's message when they do not
/// serialize.
pub(crate) fn pinned_root<R: Invariants + ?Sized>(root: &R) -> Result<Option<String>, String> {
    match root.to_json()? {
        serde_json::Value::Null => Ok(None),
        value => serde_json::to_string(&value)
            .map(Some)
            .map_err(|e| e.to_string()),
    }
}

/// Whether two recorded roots are the same invariants: compared as JSON
/// values (key order and spacing do not count), as text when one does not
/// parse.
pub(crate) fn same_root(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<serde_json::Value>(a),
        serde_json::from_str::<serde_json::Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A check the executor runs on every transfer, after the receiver's own
/// receipt checks: a Rego policy (`workflow_rego::Policy`), or your own hook.
///
/// `input` is the JSON document described in the book's "Enforcement at
/// run time" chapter: `workflow`, `run_id`, `hop`, `sender`, `receiver`,
/// `payload_type`, `contract`, `payload`, `root`.
pub trait Gate: Send + Sync {
    /// The gate's name, as rejections show it.
    fn name(&self) -> Cow<'static, str>;
    /// `Err(messages)` denies the transfer; it becomes a rejection carrying
    /// them. A gate that cannot decide must deny, never allow.
    fn check(&self, input: &serde_json::Value) -> Result<(), Vec<String>>;
}

/// Counts the tokens of a payload's JSON text, for handoffs that declare
/// `max_tokens`.
pub trait TokenCounter: Send + Sync {
    /// The number of tokens of `text`.
    fn count(&self, text: &str) -> u64;
}

/// The default token counter: one token per four bytes of JSON, rounded
/// up (the usual estimate for English text and JSON with BPE tokenizers).
/// Plug the model's own tokenizer in with `Executor::with_token_counter`
/// when the limit must be exact.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproxTokens;

impl TokenCounter for ApproxTokens {
    fn count(&self, text: &str) -> u64 {
        (text.len() as u64).div_ceil(4)
    }
}

/// The first of `paths` that `value` carries, if any.
///
/// A path without a dot (`ssn`) names a field at any depth. A dotted path
/// (`customer.email`) is followed from the top, `*` standing for any one
/// field; arrays are looked through at every step (`orders.card` finds the
/// `card` of every order).
///
/// A field whose value is `null` is not carried: null holds no data, and it
/// is what an `Option` field set to `None` is written as. So an `Option`
/// field of a forbidden name may travel empty, never filled.
pub(crate) fn find_forbidden<'p>(value: &serde_json::Value, paths: &[&'p str]) -> Option<&'p str> {
    paths.iter().copied().find(|path| {
        if path.contains('.') {
            let steps: Vec<&str> = path.split('.').collect();
            follows(value, &steps)
        } else {
            anywhere(value, path)
        }
    })
}

fn anywhere(value: &serde_json::Value, key: &str) -> bool {
    match value {
        serde_json::Value::Object(map) => map
            .iter()
            .any(|(k, v)| (k == key && !v.is_null()) || anywhere(v, key)),
        serde_json::Value::Array(items) => items.iter().any(|v| anywhere(v, key)),
        _ => false,
    }
}

fn follows(value: &serde_json::Value, steps: &[&str]) -> bool {
    let Some((step, rest)) = steps.split_first() else {
        return !value.is_null();
    };
    match value {
        serde_json::Value::Object(map) => map
            .iter()
            .filter(|(k, _)| *step == "*" || k == step)
            .any(|(_, v)| follows(v, rest)),
        serde_json::Value::Array(items) => items.iter().any(|v| follows(v, steps)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn forbidden_paths_are_found_where_they_are_and_only_there() {
        let v = json!({"customer": {"name": "a", "email": "x"}, "orders": [{"card": 1}], "note": "ssn"});
        assert_eq!(find_forbidden(&v, &["ssn"]), None, "a value is not a field");
        assert_eq!(find_forbidden(&v, &["email"]), Some("email"));
        assert_eq!(
            find_forbidden(&v, &["customer.email"]),
            Some("customer.email")
        );
        assert_eq!(find_forbidden(&v, &["email.customer"]), None);
        assert_eq!(find_forbidden(&v, &["orders.card"]), Some("orders.card"));
        assert_eq!(find_forbidden(&v, &["*.email"]), Some("*.email"));
        assert_eq!(find_forbidden(&v, &["*.card"]), Some("*.card"));
        assert_eq!(
            find_forbidden(&v, &["name.x", "customer.name"]),
            Some("customer.name")
        );
    }

    #[test]
    fn a_forbidden_field_that_is_null_is_not_carried() {
        let v = json!({"ssn": null, "customer": {"email": null}, "orders": [{"card": null}, {"card": 4}]});
        assert_eq!(find_forbidden(&v, &["ssn"]), None);
        assert_eq!(find_forbidden(&v, &["email"]), None);
        assert_eq!(find_forbidden(&v, &["customer.email"]), None);
        assert_eq!(find_forbidden(&v, &["*.email"]), None);
        assert_eq!(
            find_forbidden(&v, &["orders.card"]),
            Some("orders.card"),
            "one order fills it"
        );
        assert_eq!(
            find_forbidden(&json!({"ssn": 0}), &["ssn"]),
            Some("ssn"),
            "zero is data"
        );
        assert_eq!(
            find_forbidden(&json!({"ssn": ""}), &["ssn"]),
            Some("ssn"),
            "empty is data"
        );
    }

    #[test]
    fn approximate_tokens_round_up() {
        assert_eq!(ApproxTokens.count(""), 0);
        assert_eq!(ApproxTokens.count("abcde"), 2);
    }
}
