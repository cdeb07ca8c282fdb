//! A contract part missing on the wire is an error whatever its type: even
//! an `Option` behind a type alias (which the macro cannot see through) is
//! read as required.

use workflow_core::prelude::*;

/// An alias the macro's `Option` check cannot see through.
pub type Maybe<T> = Option<T>;

#[workflow(entry = only, output = u32)]
pub mod flow {
    use super::*;

    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Go>,
        #[evidence]
        pub evidence: Maybe<Vec<Evidence>>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub n: u32,
    }

    #[agent(owns = [Go], to = [END])]
    async fn only(task: Task, _cx: only::Context<'_>) -> Result<only::Next, Reject> {
        Ok(only::Next::End(task.n))
    }
}

const WITH_EVIDENCE: &str = r#"{"op":{"name":"go","detail":""},"scope":{"authority":"Go","expires":"never"},"evidence":[],"open":[],"stop":[],"n":1}"#;
const WITHOUT_EVIDENCE: &str = r#"{"op":{"name":"go","detail":""},"scope":{"authority":"Go","expires":"never"},"open":[],"stop":[],"n":1}"#;

#[test]
fn a_present_part_reads() {
    let task: flow::Task = serde_json::from_str(WITH_EVIDENCE).expect("a complete payload reads");
    assert_eq!(task.evidence, Some(vec![]));
}

#[test]
fn a_missing_part_is_an_error_even_behind_an_option_alias() {
    let error = serde_json::from_str::<flow::Task>(WITHOUT_EVIDENCE)
        .err()
        .expect("must not default");
    assert!(
        error.to_string().contains("missing field `evidence`"),
        "{error}"
    );
}

#[test]
fn a_missing_ordinary_field_is_an_error_too() {
    let without_n = WITH_EVIDENCE.replace(r#","n":1"#, "");
    let error = serde_json::from_str::<flow::Task>(&without_n)
        .err()
        .expect("must not default");
    assert!(error.to_string().contains("missing field `n`"), "{error}");
}
