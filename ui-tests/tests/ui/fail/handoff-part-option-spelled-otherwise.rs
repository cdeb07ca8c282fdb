//! Contract parts that are an `Option` under another spelling: a type alias,
//! a re-export under another name, a full path, a wrapper that reads `null`
//! as "absent". The rule is type-level (each part's trait is implemented for
//! the ready types, never for `Option`), so no spelling escapes it.

use workflow_core::prelude::*;

/// An alias the macro cannot see through.
pub type Maybe<T> = Option<T>;

/// A re-export under another name.
pub mod reexport {
    pub use std::option::Option as Perhaps;
}

/// A wrapper that deserializes `null` to "absent".
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Nullable<T>(pub Option<T>);

#[workflow(entry = lead, output = String)]
mod wf {
    use super::*;

    #[agent(owns = [Act], to = [END])]
    async fn lead(_input: String, _cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        todo!()
    }

    #[handoff]
    pub struct Aliased {
        #[operation]
        pub op: super::Maybe<Operation>,
        #[authority]
        pub scope: super::Maybe<Scope<authority::Act>>,
        #[evidence]
        pub evidence: super::Maybe<Vec<Evidence>>,
        #[uncertainty]
        pub open: super::Maybe<Vec<Uncertainty>>,
        #[stop]
        pub stop: super::Maybe<StopWhen>,
    }

    #[handoff]
    pub struct Reexported {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: super::reexport::Perhaps<Vec<Uncertainty>>,
        #[stop]
        pub stop: StopWhen,
    }

    #[handoff]
    pub struct FullPath {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        pub evidence: ::std::option::Option<Vec<Evidence>>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: core::option::Option<StopWhen>,
    }

    #[handoff]
    pub struct Wrapped {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Act>,
        #[evidence]
        pub evidence: super::Nullable<Vec<Evidence>>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }
}

fn main() {}
