//! The short form of a handoff contract: the five parts in one field.
//!
//! ```text
//! #[handoff]
//! pub struct TerraformPlan {
//!     #[contract]
//!     pub contract: Contract<authority::Apply>,
//!     pub vpc_id: String,
//! }
//! ```
//!
//! A [`Contract<A>`] holds the operation, the scope over `A`, the evidence,
//! the open questions and the stop conditions; none of them is optional or
//! defaulted on the wire, so a `#[contract]` field gives every guarantee the
//! five marked fields give (each part required and non-null, checked at the
//! receipt, listed in the published schema). On the wire it is one object:
//! `{"contract": {"op": .., "scope": .., "evidence": [..], "open": [..],
//! "stop": [..]}, "vpc_id": ..}`.
//!
//! It is built with [`ContractBuilder`], whose `build()` does not compile
//! until the evidence and the open questions are said (an empty list is a
//! statement: "none"); the scope and the stop conditions have the defaults
//! the runtime knows: `cx.contract(authority, op)` leases the authority
//! for as long as the sender's own scope lasts and stops at the workflow's
//! `MAX_HOPS`.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::{
    Authority, AuthorityScope, Evidence, EvidenceList, Expiry, OpenQuestions, Operation, Scope,
    StopConditions, StopWhen, Uncertainty,
};

/// The five contract parts of a handoff in one field (`#[contract]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, bound(serialize = "", deserialize = ""))]
pub struct Contract<A: Authority> {
    /// The operation the receiver is asked to do.
    pub op: Operation,
    /// The authority the receiver is asked to exercise, and until when.
    pub scope: Scope<A>,
    /// The evidence the sender relied on.
    pub evidence: Vec<Evidence>,
    /// What the sender left unresolved.
    pub open: Vec<Uncertainty>,
    /// When the receiver must stop.
    pub stop: StopWhen,
}

impl<A: Authority> Contract<A> {
    /// A builder for a contract asking for `op` under `scope`, stopping
    /// when `stop` says; the evidence and the open questions must be said
    /// before [`build`](ContractBuilder::build) compiles.
    pub fn builder(op: Operation, scope: Scope<A>, stop: StopWhen) -> ContractBuilder<A> {
        ContractBuilder {
            op,
            scope,
            stop,
            evidence: Unset,
            open: Unset,
        }
    }
}

impl<A: Authority> JsonSchema for Contract<A> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Owned(format!("Contract_{}", A::NAME))
    }

    fn schema_id() -> Cow<'static, str> {
        Cow::Owned(format!("workflow_core::Contract<{}>", A::NAME))
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let op = generator.subschema_for::<Operation>();
        let scope = generator.subschema_for::<Scope<A>>();
        let evidence = generator.subschema_for::<Vec<Evidence>>();
        let open = generator.subschema_for::<Vec<Uncertainty>>();
        let stop = generator.subschema_for::<StopWhen>();
        json_schema!({
            "description": "The handoff's contract: the operation, the delegated authority, the evidence, the open questions and the stop conditions. Every part is required and never null.",
            "type": "object",
            "properties": {
                "op": op,
                "scope": scope,
                "evidence": evidence,
                "open": open,
                "stop": stop,
            },
            "required": ["op", "scope", "evidence", "open", "stop"],
            "additionalProperties": false,
        })
    }
}

/// The type of a `#[contract]` field: the five parts in one value.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the `#[contract]` field of a handoff",
    note = "a contract is never an `Option`, under any name (a type alias, a re-export, `std::option::Option`): an explicit `null` would read as \"no contract\"",
    note = "use `workflow_core::Contract<A>` where `A` is one of the workflow's authorities (`authority::Name`)"
)]
pub trait ContractParts {
    /// The delegated authority.
    type Authority: Authority;
    /// When the delegation expires.
    fn expiry(&self) -> Expiry;
    /// The stop conditions.
    fn stop(&self) -> &dyn StopConditions;
    /// The open questions.
    fn open(&self) -> &dyn OpenQuestions;
    /// The evidence.
    fn evidence(&self) -> &dyn EvidenceList;
}

impl<A: Authority> ContractParts for Contract<A> {
    type Authority = A;
    fn expiry(&self) -> Expiry {
        AuthorityScope::expiry(&self.scope)
    }
    fn stop(&self) -> &dyn StopConditions {
        &self.stop
    }
    fn open(&self) -> &dyn OpenQuestions {
        &self.open
    }
    fn evidence(&self) -> &dyn EvidenceList {
        &self.evidence
    }
}

/// A part of a [`ContractBuilder`] not said yet.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unset;

/// Builds a [`Contract`]: the operation, the scope and the stop conditions
/// are given (or defaulted by `cx.contract`), the evidence and the open
/// questions must be said, each once, before `build()` compiles.
#[must_use = "a contract builder does nothing until `build()`"]
#[derive(Debug, Clone)]
pub struct ContractBuilder<A: Authority, E = Unset, O = Unset> {
    op: Operation,
    scope: Scope<A>,
    stop: StopWhen,
    evidence: E,
    open: O,
}

impl<A: Authority, O> ContractBuilder<A, Unset, O> {
    /// The evidence the sender relied on (an empty list says "none").
    pub fn evidence(
        self,
        evidence: impl IntoIterator<Item = Evidence>,
    ) -> ContractBuilder<A, Vec<Evidence>, O> {
        ContractBuilder {
            op: self.op,
            scope: self.scope,
            stop: self.stop,
            evidence: evidence.into_iter().collect(),
            open: self.open,
        }
    }
}

impl<A: Authority, E> ContractBuilder<A, E, Unset> {
    /// What the sender left unresolved (an empty list says "nothing").
    /// The receiver's open questions it does not resolve must be carried
    /// forward here: a handoff that drops one is rejected at the receipt.
    pub fn open(
        self,
        open: impl IntoIterator<Item = Uncertainty>,
    ) -> ContractBuilder<A, E, Vec<Uncertainty>> {
        ContractBuilder {
            op: self.op,
            scope: self.scope,
            stop: self.stop,
            evidence: self.evidence,
            open: open.into_iter().collect(),
        }
    }
}

impl<A: Authority, E, O> ContractBuilder<A, E, O> {
    /// Replaces the scope (for example a lease ending at a wall-clock time).
    pub fn scope(mut self, scope: Scope<A>) -> Self {
        self.scope = scope;
        self
    }

    /// Replaces the stop conditions.
    pub fn stop(mut self, stop: StopWhen) -> Self {
        self.stop = stop;
        self
    }

    /// The contract. Compiles once the evidence and the open questions are
    /// said.
    pub fn build(self) -> Contract<A>
    where
        E: EvidenceSaid,
        O: OpenSaid,
    {
        Contract {
            op: self.op,
            scope: self.scope,
            evidence: self.evidence.said(),
            open: self.open.said(),
            stop: self.stop,
        }
    }
}

/// The evidence of a [`ContractBuilder`] has been said.
#[diagnostic::on_unimplemented(
    message = "the contract's evidence is not said",
    label = "call `.evidence([...])` before `.build()`",
    note = "the sender states what it relied on; an empty list (`.evidence([])`) says it relied on nothing"
)]
pub trait EvidenceSaid {
    /// The evidence.
    fn said(self) -> Vec<Evidence>;
}

impl EvidenceSaid for Vec<Evidence> {
    fn said(self) -> Vec<Evidence> {
        self
    }
}

/// The open questions of a [`ContractBuilder`] have been said.
#[diagnostic::on_unimplemented(
    message = "the contract's open questions are not said",
    label = "call `.open([...])` before `.build()`",
    note = "the sender states what it left unresolved, carrying forward what it received; an empty list (`.open([])`) says nothing is open"
)]
pub trait OpenSaid {
    /// The open questions.
    fn said(self) -> Vec<Uncertainty>;
}

impl OpenSaid for Vec<Uncertainty> {
    fn said(self) -> Vec<Uncertainty> {
        self
    }
}

/// A builder for the contract with the defaults the runtime knows: the
/// scope is the lease `scope` (as long as the sender's own), the stop is at
/// `max_hops` (the workflow's bound).
pub(crate) fn contract_at<A: Authority>(
    op: Operation,
    scope: Scope<A>,
    max_hops: u32,
) -> ContractBuilder<A> {
    Contract::builder(op, scope, StopWhen::at_hop(max_hops))
}
