//! The parts of a handoff contract, ready to use in `#[handoff]` payloads.
//!
//! A handoff carries four parts besides its data (guarantee 1 of the design):
//! the operation and the authority it is asked to exercise ([`Operation`],
//! [`Scope`]), the evidence the sender relied on ([`Evidence`]), what it left
//! unresolved ([`Uncertainty`]) and when the receiver must stop ([`StopWhen`]).
//!
//! None of these types has an optional or defaulted field: a part that goes
//! missing on the wire is a deserialization error, never a silent default.
//!
//! Each part has a trait its type must implement ([`OperationPart`],
//! [`AuthorityScope`], [`EvidenceList`], [`OpenQuestions`],
//! [`StopConditions`]); `#[handoff]` asks for it on the part's type. None is
//! implemented for `Option`, so a part cannot be optional under any
//! spelling (a type alias, a re-export, a full path): an explicit `null`
//! never reads as "nothing", a missing part is serde's `missing field`
//! error (serde reads an absent field as the value its type reads from
//! `null`, and a part type has none), and the published schema lists every
//! part as required and non-null.

use std::borrow::Cow;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

/// An authority: a decision or a side effect that exactly one agent owns.
///
/// `#[workflow]` generates one unit type per authority named in an
/// `owns = [...]` list, in the workflow's `authority` module.
pub trait Authority: Copy + Default + Send + Sync + 'static {
    /// The authority's name as declared and as written on the wire.
    const NAME: &'static str;
    /// Whether a lease on this authority may be open-ended
    /// ([`Expiry::Never`]): declared with `#[workflow(open_ended = [Name])]`,
    /// which also implements [`OpenEnded`]. By default a lease must
    /// expire, and an open-ended one is rejected at the receipt
    /// ([`RejectReason::LeaseUnbounded`](crate::RejectReason)).
    const OPEN_ENDED: bool = false;
}

/// An authority whose leases may be open-ended: what
/// [`Lease::open_ended`] asks of it. Implemented for the authorities a
/// workflow declares `open_ended = [..]`; implement it by hand only beside
/// `const OPEN_ENDED: bool = true`.
#[diagnostic::on_unimplemented(
    message = "a lease on authority `{Self}` cannot be open-ended",
    label = "this lease never expires",
    note = "bound the lease: `.until_hop(n)`, `.until_unix_ms(ms)` or `.for_next_turn()`",
    note = "or, if the authority is meant to be lent for the whole run, declare it: `#[workflow(open_ended = [Name])]`"
)]
pub trait OpenEnded: Authority {}

/// A lease on authority `A` that is not bounded yet: what
/// `cx.lease(authority)` gives. It is not a [`Scope`], so it cannot be put
/// in a handoff until it is given an expiry ([`until_hop`](Self::until_hop),
/// [`until_unix_ms`](Self::until_unix_ms), [`for_next_turn`](Self::for_next_turn)),
/// or declared [`open_ended`](Self::open_ended) for an authority that
/// allows it. The receiver checks the expiry again at the receipt: a lease
/// never outlives the sender's own, nor the run.
#[must_use = "a lease is not a scope until it is bounded: `.until_hop(n)`, `.until_unix_ms(ms)` or `.for_next_turn()`"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease<A: Authority> {
    /// The hop of the turn that grants it.
    hop: u32,
    /// What the granting turn works under: its own scope's expiry, or the
    /// run's hop cap as an expiry when it has none (or an open-ended one).
    mine: Expiry,
    authority: PhantomData<A>,
}

impl<A: Authority> Lease<A> {
    /// A lease on `A` granted by the turn at `hop`, which works under a
    /// scope expiring at `mine` (`None`: no scope) in a run capped at
    /// `max_hops`.
    pub fn granted(_authority: A, hop: u32, mine: Option<Expiry>, max_hops: u32) -> Self {
        let mine = match mine {
            Some(Expiry::Never) | None => Expiry::AtHop(max_hops),
            Some(bounded) => bounded,
        };
        Lease {
            hop,
            mine,
            authority: PhantomData,
        }
    }

    /// The scope, expiring when the granting turn's own does (or at the
    /// run's hop cap when it works under no scope): the longest lease the
    /// receipt accepts, and what a chain of handoffs passes down.
    pub fn as_long_as_mine(self) -> Scope<A> {
        Scope::bounded(self.mine)
    }

    /// The scope, valid up to and including `hop` of the run.
    pub fn until_hop(self, hop: u32) -> Scope<A> {
        Scope::bounded(Expiry::AtHop(hop))
    }

    /// The scope, valid until `ms` milliseconds since the Unix epoch.
    pub fn until_unix_ms(self, ms: u64) -> Scope<A> {
        Scope::bounded(Expiry::AtUnixMs(ms))
    }

    /// The scope, valid for the receiver's turn only (until the hop after
    /// the granting turn's). Accepted only when the granting turn's own
    /// scope lasts that long.
    pub fn for_next_turn(self) -> Scope<A> {
        self.until_hop(self.hop.saturating_add(1))
    }

    /// The scope, valid for the rest of the run: only for an authority
    /// declared open-ended (a compile error otherwise).
    pub fn open_ended(self) -> Scope<A>
    where
        A: OpenEnded,
    {
        Scope::bounded(Expiry::Never)
    }
}

/// Marks that agent `Self` owns authority `A`; generated from `owns = [...]`.
#[diagnostic::on_unimplemented(
    message = "agent `{Self}` does not own authority `{A}`",
    label = "this handoff asks the receiver to exercise `{A}`",
    note = "a handoff can only delegate an authority its receiver owns: add it to the receiver's `owns = [...]`, or send the handoff to the agent that owns it"
)]
pub trait Owns<A: Authority> {}

/// What the receiver is asked to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    /// A short, stable name for the operation (`lookup_vpc`, `apply_plan`).
    pub name: Cow<'static, str>,
    /// What exactly is asked, in the sender's words.
    pub detail: Cow<'static, str>,
}

/// The type of an `#[operation]` part: what the receiver is asked to do.
///
/// Implement it for a type of your own only if `null` is not one of its
/// values on the wire (never for a wrapper around an `Option`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the `#[operation]` part of a handoff",
    label = "a contract part is always present and never `null`",
    note = "a part is never an `Option`, under any name (a type alias, a re-export, `std::option::Option`): an explicit `null` would read as \"no operation\"",
    note = "use `workflow_core::Operation`, or implement `OperationPart` for a type of your own that never reads `null`"
)]
pub trait OperationPart {}

impl OperationPart for Operation {}

impl Operation {
    /// An operation with a name and a detail (static strings are not copied).
    pub fn new(name: impl Into<Cow<'static, str>>, detail: impl Into<Cow<'static, str>>) -> Self {
        Operation {
            name: name.into(),
            detail: detail.into(),
        }
    }
}

/// When a delegated authority expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Expiry {
    /// Valid for the rest of the run: `"never"`.
    Never,
    /// Valid up to and including this hop of the run: `{"at_hop": 3}`.
    AtHop(u32),
    /// Valid until this wall-clock time, in ms since the Unix epoch:
    /// `{"at_unix_ms": 1700000000000}`.
    AtUnixMs(u64),
}

impl Expiry {
    /// Whether a lease expiring at `self` ends no later than `bound`: any
    /// lease is within [`Expiry::Never`]; hops compare with hops and times
    /// with times; an open-ended lease under a bound, or a lease counted in
    /// the other unit than its bound, is not within it (it cannot be shown
    /// to end in time).
    pub fn within(self, bound: Expiry) -> bool {
        match (self, bound) {
            (_, Expiry::Never) => true,
            (Expiry::AtHop(lease), Expiry::AtHop(bound)) => lease <= bound,
            (Expiry::AtUnixMs(lease), Expiry::AtUnixMs(bound)) => lease <= bound,
            _ => false,
        }
    }

    /// Whether a delegation with this expiry has expired at `moment` (past
    /// its hop, or at or past its wall-clock time).
    #[inline]
    pub fn expired_at(self, moment: &Moment) -> bool {
        match self {
            Expiry::Never => false,
            Expiry::AtHop(hop) => moment.hop > hop,
            Expiry::AtUnixMs(ms) => moment.unix_ms() >= ms,
        }
    }
}

/// The authority a handoff asks its receiver to exercise, and until when.
///
/// The authority is a type, so the compiler checks that the receiver owns
/// it; on the wire it is its name, and any other name is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope<A: Authority> {
    /// When the delegation expires.
    pub expires: Expiry,
    authority: PhantomData<A>,
}

impl<A: Authority> Scope<A> {
    fn bounded(expires: Expiry) -> Self {
        Scope {
            expires,
            authority: PhantomData,
        }
    }

    /// A scope over `A` that never expires within the run: for a run's
    /// input (its caller lends for the run, which its hop cap bounds) and
    /// for an authority declared open-ended. Between agents an open-ended
    /// lease on any other authority is rejected at the receipt
    /// ([`RejectReason::LeaseUnbounded`](crate::RejectReason)): agents use
    /// `cx.lease(authority)`, which does not compile unbounded.
    pub fn new(_authority: A) -> Self {
        Scope {
            expires: Expiry::Never,
            authority: PhantomData,
        }
    }

    /// The same scope, expiring after `hop`.
    pub fn until_hop(mut self, hop: u32) -> Self {
        self.expires = Expiry::AtHop(hop);
        self
    }

    /// The same scope, expiring at `ms` milliseconds since the Unix epoch.
    pub fn until_unix_ms(mut self, ms: u64) -> Self {
        self.expires = Expiry::AtUnixMs(ms);
        self
    }

    /// The authority's name.
    pub fn authority(&self) -> &'static str {
        A::NAME
    }
}

impl<A: Authority> Serialize for Scope<A> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Scope", 2)?;
        st.serialize_field("authority", A::NAME)?;
        st.serialize_field("expires", &self.expires)?;
        st.end()
    }
}

impl<'de, A: Authority> Deserialize<'de> for Scope<A> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Wire<'a> {
            #[serde(borrow)]
            authority: Cow<'a, str>,
            expires: Expiry,
        }
        let wire = Wire::deserialize(d)?;
        if wire.authority != A::NAME {
            return Err(de::Error::custom(format_args!(
                "scope names authority `{}`, expected `{}`",
                wire.authority,
                A::NAME
            )));
        }
        Ok(Scope {
            expires: wire.expires,
            authority: PhantomData,
        })
    }
}

impl<A: Authority> JsonSchema for Scope<A> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Owned(format!("Scope_{}", A::NAME))
    }

    fn schema_id() -> Cow<'static, str> {
        Cow::Owned(format!("workflow_core::Scope<{}>", A::NAME))
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let expires = generator.subschema_for::<Expiry>();
        json_schema!({
            "description": format!("Delegation of the authority `{}` to the receiver, and until when.", A::NAME),
            "type": "object",
            "properties": {
                "authority": { "const": A::NAME },
                "expires": expires,
            },
            "required": ["authority", "expires"],
            "additionalProperties": false,
        })
    }
}

/// Something the sender relied on, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// Where the evidence came from (a tool name, a document, an agent).
    pub source: Cow<'static, str>,
    /// What it says.
    pub claim: Cow<'static, str>,
    /// Whether the source returned a complete result (no truncated page, no
    /// partial body). Receivers can make `complete` a pre-condition.
    pub complete: bool,
    /// The question of an uncertainty item this evidence resolves (see
    /// [`Evidence::resolving`]); absent for other evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolves: Option<String>,
    /// What backs the claim in this run's record (tool calls, transfer
    /// records), checked at the receipt: each cited witness must exist,
    /// have succeeded and match its digest. Absent when none: uncited
    /// evidence whose `source` names one of the workflow's tools is
    /// rejected unless its handoff is `#[handoff(uncited_evidence)]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cites: Vec<crate::spec::Citation>,
}

impl Evidence {
    /// Evidence from a complete result.
    pub fn complete(
        source: impl Into<Cow<'static, str>>,
        claim: impl Into<Cow<'static, str>>,
    ) -> Self {
        Evidence {
            source: source.into(),
            claim: claim.into(),
            complete: true,
            resolves: None,
            cites: Vec::new(),
        }
    }

    /// Evidence from a partial result (a truncated page, a partial body).
    pub fn partial(
        source: impl Into<Cow<'static, str>>,
        claim: impl Into<Cow<'static, str>>,
    ) -> Self {
        Evidence {
            source: source.into(),
            claim: claim.into(),
            complete: false,
            resolves: None,
            cites: Vec::new(),
        }
    }
}

impl Evidence {
    /// The same evidence, marked as resolving the uncertainty item whose
    /// question is `question`: how a receiver acknowledges an item it does
    /// not carry forward.
    pub fn resolving(mut self, question: impl Into<String>) -> Self {
        self.resolves = Some(question.into());
        self
    }

    /// The same evidence, citing `citation` as what backs it (see
    /// [`Context::citation`](crate::Context::citation) for the citation of
    /// a tool call of the turn).
    pub fn citing(mut self, citation: crate::spec::Citation) -> Self {
        self.cites.push(citation);
        self
    }

    /// Whether its `source` claims a tool: it names one of `tools`.
    pub fn claims_tool(&self, tools: &[crate::spec::ToolInfo]) -> bool {
        tools.iter().any(|t| t.name == self.source)
    }
}

/// A question the sender did not resolve and the receiver must not ignore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Uncertainty {
    /// What is not known.
    pub question: String,
    /// What could go wrong because of it.
    pub impact: String,
}

impl Uncertainty {
    /// An open question and its impact.
    pub fn new(question: impl Into<String>, impact: impl Into<String>) -> Self {
        Uncertainty {
            question: question.into(),
            impact: impact.into(),
        }
    }
}

/// One explicit condition under which the receiver must stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum StopCondition {
    /// Stop once the run has reached this hop (checked by the executor).
    HopReached {
        /// The hop at which the task is over.
        hop: u32,
    },
    /// Stop at this wall-clock time, in ms since the Unix epoch (checked by the executor).
    DeadlineUnixMs {
        /// The deadline.
        ms: u64,
    },
    /// Stop once the run has used this many tokens (prompt and completion,
    /// as charged to its budget; checked by the executor): the subtask's
    /// own budget.
    TokensSpent {
        /// The tokens at which the task is over.
        tokens: u64,
    },
    /// A condition the receiver itself must watch for, stated in words.
    Described {
        /// The condition.
        text: String,
    },
}

impl StopCondition {
    /// Whether the executor checks this condition itself (a hop, a
    /// deadline, a token budget), as opposed to one stated in words that
    /// only the receiver can watch for.
    pub fn is_checkable(&self) -> bool {
        !matches!(self, StopCondition::Described { .. })
    }

    /// Whether the condition is met at `moment` (one stated in words
    /// never is: only the receiver can watch for it).
    fn is_met(&self, moment: &Moment) -> bool {
        match self {
            StopCondition::HopReached { hop } => moment.hop >= *hop,
            StopCondition::DeadlineUnixMs { ms } => moment.unix_ms() >= *ms,
            StopCondition::TokensSpent { tokens } => moment.tokens_spent >= *tokens,
            StopCondition::Described { .. } => false,
        }
    }

    /// How a receipt says the condition was met.
    fn described_met(&self) -> String {
        match self {
            StopCondition::HopReached { hop } => format!("hop {hop} reached"),
            StopCondition::DeadlineUnixMs { ms } => format!("deadline {ms} ms passed"),
            StopCondition::TokensSpent { tokens } => format!("{tokens} tokens spent"),
            StopCondition::Described { text } => text.clone(),
        }
    }
}

/// The explicit stop conditions of a handoff; on the wire, a list.
///
/// At least one condition must be machine-checkable: a list that is empty
/// or holds only [`StopCondition::Described`] conditions is rejected at the
/// receipt unless the handoff type opts out with
/// `#[handoff(unbounded_stop)]`. Described conditions stay as documentation
/// beside checkable ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct StopWhen {
    /// Any one of these ends the task. One condition is held inline (a
    /// handoff's usual `StopWhen::at_hop(..)` allocates nothing); more
    /// spill to the heap, as a `Vec`'s would.
    pub any: StopList,
}

/// The list behind [`StopWhen::any`]: a vector holding its first condition
/// inline (`smallvec::SmallVec`; `.into()` turns a `Vec` into one).
pub type StopList = smallvec::SmallVec<[StopCondition; 1]>;

impl StopWhen {
    /// No stop condition at all, usable in a `static`: rejected at the
    /// receipt unless the handoff type opts out with
    /// `#[handoff(unbounded_stop)]`.
    pub const NONE: StopWhen = StopWhen {
        any: smallvec::SmallVec::new_const(),
    };

    /// Stop conditions from a list.
    pub fn any(conditions: impl IntoIterator<Item = StopCondition>) -> Self {
        StopWhen {
            any: conditions.into_iter().collect(),
        }
    }

    /// Stop once the run reaches `hop`.
    pub fn at_hop(hop: u32) -> Self {
        StopWhen {
            any: smallvec::SmallVec::from_buf([StopCondition::HopReached { hop }]),
        }
    }

    /// Adds a budget for the subtask: stop once the run has used `tokens`.
    pub fn or_tokens(mut self, tokens: u64) -> Self {
        self.any.push(StopCondition::TokensSpent { tokens });
        self
    }

    /// Adds a condition stated in words.
    pub fn or_when(mut self, text: impl Into<String>) -> Self {
        self.any
            .push(StopCondition::Described { text: text.into() });
        self
    }

    /// The first machine-checkable condition that is met at `moment`.
    pub fn met(&self, moment: &Moment) -> Option<&StopCondition> {
        self.any.iter().find(|c| c.is_met(moment))
    }
}

/// The point of a run at which a receipt is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    /// Agent turns completed so far in the run.
    pub hop: u32,
    /// Tokens the run has used so far.
    pub tokens_spent: u64,
}

impl Moment {
    /// The moment after `hop` agent turns, nothing spent.
    pub fn at_hop(hop: u32) -> Self {
        Moment {
            hop,
            tokens_spent: 0,
        }
    }

    /// Wall-clock milliseconds since the Unix epoch, read only when a
    /// condition needs it.
    pub fn unix_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

/// The type of an `#[authority]` part: names the delegated authority and its expiry.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the `#[authority]` part of a handoff",
    note = "a part is never an `Option`, under any name (a type alias, a re-export, `std::option::Option`): an explicit `null` would read as \"no authority\"",
    note = "use `workflow_core::Scope<A>` where `A` is one of the workflow's authorities (`authority::Name`)"
)]
pub trait AuthorityScope {
    /// The delegated authority.
    type Authority: Authority;
    /// When the delegation expires.
    fn expiry(&self) -> Expiry;
}

impl<A: Authority> AuthorityScope for Scope<A> {
    type Authority = A;
    fn expiry(&self) -> Expiry {
        self.expires
    }
}

/// The type of a `#[stop]` part: machine-checkable stop conditions.
///
/// Implement it for a type of your own only if `null` is not one of its
/// values on the wire (never for a wrapper around an `Option`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the `#[stop]` part of a handoff",
    note = "a part is never an `Option`, under any name (a type alias, a re-export, `std::option::Option`): an explicit `null` would read as \"no stop conditions\"",
    note = "use `workflow_core::StopWhen` (an empty list for none), or implement `StopConditions` for a type of your own that never reads `null`"
)]
pub trait StopConditions {
    /// A description of the first condition met at `moment`, if any.
    fn met_at(&self, moment: &Moment) -> Option<String>;
    /// Whether at least one condition is machine-checkable (a hop, a
    /// deadline, a token budget): a stop part without one is rejected at
    /// the receipt ([`RejectReason::StopUnchecked`](crate::RejectReason))
    /// unless its handoff is `#[handoff(unbounded_stop)]`.
    fn checkable(&self) -> bool;
    /// The receipt's two checks on the stop part at once, in their order:
    /// `Err(None)` when no condition is machine-checkable (and
    /// `unbounded`, the handoff's `#[handoff(unbounded_stop)]`, is not
    /// set), `Err(Some(description))` when a condition is met at `moment`.
    /// The default asks [`checkable`](Self::checkable), then
    /// [`met_at`](Self::met_at); an implementation may answer both in one
    /// pass (one call through the contract view, not two).
    fn receipt_check(&self, moment: &Moment, unbounded: bool) -> Result<(), Option<String>> {
        if !unbounded && !self.checkable() {
            return Err(None);
        }
        match self.met_at(moment) {
            Some(met) => Err(Some(met)),
            None => Ok(()),
        }
    }
}

impl StopConditions for StopWhen {
    fn receipt_check(&self, moment: &Moment, unbounded: bool) -> Result<(), Option<String>> {
        // A handoff's usual `StopWhen::at_hop(..)` not yet reached, answered
        // here, without the registers the rest needs saved (measured:
        // about 15 instructions a receipt less).
        if let [StopCondition::HopReached { hop }] = self.any.as_slice()
            && moment.hop < *hop
        {
            return Ok(());
        }
        self.receipt_check_all(moment, unbounded)
    }

    fn met_at(&self, moment: &Moment) -> Option<String> {
        self.met(moment).map(StopCondition::described_met)
    }

    fn checkable(&self) -> bool {
        self.any.iter().any(StopCondition::is_checkable)
    }
}

impl StopWhen {
    /// [`StopConditions::receipt_check`] of any list.
    #[inline(never)]
    fn receipt_check_all(&self, moment: &Moment, unbounded: bool) -> Result<(), Option<String>> {
        // One pass for both checks: a condition that is met is checkable,
        // so a list with one met answers both; a list with none met is
        // refused when nothing in it was checkable.
        let mut checkable = unbounded;
        for condition in &self.any {
            if condition.is_met(moment) {
                return Err(Some(condition.described_met()));
            }
            checkable |= condition.is_checkable();
        }
        if checkable { Ok(()) } else { Err(None) }
    }
}

/// The contract view of a handoff that the executor checks at the receipt.
#[derive(Clone, Copy)]
pub struct ContractView<'a> {
    /// The contract parts and the fields holding them, as `(part, field)`;
    /// a part held in a `#[contract]` field is named by its path
    /// (`contract.op`).
    pub parts: &'static [(&'static str, &'static str)],
    /// The name of the authority the receiver is asked to exercise.
    pub authority: &'static str,
    /// When that delegation expires.
    pub expires: Expiry,
    /// The stop conditions.
    pub stop: &'a dyn StopConditions,
    /// The open questions (the `#[uncertainty]` part).
    pub open: &'a dyn OpenQuestions,
    /// The evidence (the `#[evidence]` part).
    pub evidence: &'a dyn EvidenceList,
    /// The largest payload the handoff allows, in bytes of JSON
    /// (`#[handoff(max_bytes = N)]`).
    pub max_bytes: Option<u64>,
    /// The largest payload the handoff allows, in tokens of JSON counted by
    /// the executor's token counter (`#[handoff(max_tokens = N)]`).
    pub max_tokens: Option<u64>,
    /// Whether the handoff accepts a stop part with no machine-checkable
    /// condition (`#[handoff(unbounded_stop)]`).
    pub unbounded_stop: bool,
    /// Whether the handoff accepts uncited evidence whose source names a
    /// tool (`#[handoff(uncited_evidence)]`: evidence from the user's
    /// request, say). Citations that are given are checked either way.
    pub uncited_evidence: bool,
    /// Whether the authority allows open-ended leases
    /// ([`Authority::OPEN_ENDED`]).
    pub open_ended: bool,
}

/// The type of an `#[uncertainty]` part: lists the open questions.
///
/// Implement it for a type of your own only if `null` is not one of its
/// values on the wire (never for a wrapper around an `Option`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an `#[uncertainty]` part",
    note = "a part is never an `Option`, under any name (a type alias, a re-export, `std::option::Option`): an explicit `null` would read as \"nothing unresolved\"",
    note = "use `Vec<workflow_core::Uncertainty>` (an empty list for none), or implement `OpenQuestions` for a type of your own that never reads `null`"
)]
pub trait OpenQuestions {
    /// Each open item's question.
    fn questions(&self) -> Vec<&str>;
    /// Whether there are none (cheap: checked on every transfer).
    fn is_empty(&self) -> bool;
}

impl OpenQuestions for Vec<Uncertainty> {
    fn questions(&self) -> Vec<&str> {
        self.iter().map(|u| u.question.as_str()).collect()
    }
    fn is_empty(&self) -> bool {
        <[Uncertainty]>::is_empty(self)
    }
}

/// The type of an `#[evidence]` part: says which questions it resolves.
///
/// Implement it for a type of your own only if `null` is not one of its
/// values on the wire (never for a wrapper around an `Option`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an `#[evidence]` part",
    note = "a part is never an `Option`, under any name (a type alias, a re-export, `std::option::Option`): an explicit `null` would read as \"no evidence\"",
    note = "use `Vec<workflow_core::Evidence>` (an empty list for none), or implement `EvidenceList` for a type of your own that never reads `null`"
)]
pub trait EvidenceList {
    /// Whether some evidence resolves `question`.
    fn resolves(&self, question: &str) -> bool;
    /// Every evidence item, for the receipt to check their citations (a
    /// type that hides its items would hide them from that check, so this
    /// has no default).
    fn items(&self) -> &[Evidence];
}

impl EvidenceList for Vec<Evidence> {
    fn resolves(&self, question: &str) -> bool {
        self.iter().any(|e| e.resolves.as_deref() == Some(question))
    }
    fn items(&self) -> &[Evidence] {
        self
    }
}

/// A payload that crosses a seam: serializable, with a published schema.
pub trait Payload:
    Serialize + for<'de> Deserialize<'de> + JsonSchema + Send + Sync + 'static
{
}

impl<T> Payload for T where
    T: Serialize + for<'de> Deserialize<'de> + JsonSchema + Send + Sync + 'static
{
}

/// A handoff payload with all four contract parts; implemented by `#[handoff]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handoff payload",
    label = "an agent that receives handoffs must take a `#[handoff]` type",
    note = "mark the type `#[handoff]` and give it the four contract parts: `#[operation]`/`#[authority]`, `#[evidence]`, `#[uncertainty]`, `#[stop]`"
)]
pub trait Handoff: Payload {
    /// The authority the handoff delegates to its receiver.
    type Authority: Authority;
    /// The fields holding each contract part, as `(part, field)` (`(part,
    /// "contract.op")` for a part held in a `#[contract]` field).
    const PARTS: &'static [(&'static str, &'static str)];
    /// The largest payload allowed, in bytes of JSON.
    const MAX_BYTES: Option<u64> = None;
    /// The largest payload allowed, in tokens.
    const MAX_TOKENS: Option<u64> = None;
    /// Whether a stop part with no machine-checkable condition is accepted
    /// (`#[handoff(unbounded_stop)]`); by default it is rejected.
    const UNBOUNDED_STOP: bool = false;
    /// Whether uncited evidence whose source names a tool is accepted
    /// (`#[handoff(uncited_evidence)]`); by default it is rejected.
    const UNCITED_EVIDENCE: bool = false;
    /// The parts the executor checks at the receipt.
    fn contract(&self) -> ContractView<'_>;
}

/// The authority of a handoff whose `#[authority]` part is missing (a
/// compile error already): every agent "owns" it, so nothing follows
/// from that error.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct UnknownAuthority;
impl Authority for UnknownAuthority {
    const NAME: &'static str = "<missing #[authority] part>";
}
impl<A> Owns<UnknownAuthority> for A {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stop part answering with the trait's defaults: what `StopWhen`'s
    /// own one-pass `receipt_check` must agree with.
    struct ByDefault<'a>(&'a StopWhen);

    impl StopConditions for ByDefault<'_> {
        fn met_at(&self, moment: &Moment) -> Option<String> {
            self.0.met_at(moment)
        }
        fn checkable(&self) -> bool {
            self.0.checkable()
        }
    }

    #[test]
    fn the_receipts_one_pass_stop_check_answers_as_its_two_checks() {
        let parts = [
            StopWhen::NONE,
            StopWhen::at_hop(0),
            StopWhen::at_hop(3),
            StopWhen::at_hop(u32::MAX),
            StopWhen::any([StopCondition::TokensSpent { tokens: 10 }]),
            StopWhen::NONE.or_when("the user cancels"),
            StopWhen::NONE.or_when("the user cancels").or_tokens(5),
            StopWhen::at_hop(3).or_tokens(100),
            StopWhen::any([StopCondition::DeadlineUnixMs { ms: 0 }]),
        ];
        let mut answers = std::collections::BTreeSet::new();
        for part in &parts {
            for hop in [0, 2, 3, 4, u32::MAX] {
                for tokens_spent in [0, 5, 10, 200] {
                    let moment = Moment { hop, tokens_spent };
                    for unbounded in [false, true] {
                        let fast = part.receipt_check(&moment, unbounded);
                        let slow = ByDefault(part).receipt_check(&moment, unbounded);
                        assert_eq!(fast, slow, "{part:?} at {moment:?}, unbounded {unbounded}");
                        answers.insert(format!("{fast:?}"));
                    }
                }
            }
        }
        // Each answer comes up: passed, nothing checkable, and a condition
        // met (the hop's, the tokens', the deadline's).
        assert!(answers.contains("Ok(())"));
        assert!(answers.contains("Err(None)"));
        assert!(answers.contains("Err(Some(\"hop 3 reached\"))"));
        assert!(answers.contains("Err(Some(\"10 tokens spent\"))"));
        assert!(answers.contains("Err(Some(\"deadline 0 ms passed\"))"));
    }

    #[test]
    fn one_stop_condition_is_held_inline_and_the_list_reads_as_a_vecs() {
        let one = StopWhen::at_hop(3);
        assert!(!one.any.spilled(), "one condition allocates nothing");
        let more = StopWhen::at_hop(3)
            .or_tokens(100)
            .or_when("the user cancels");
        assert!(more.any.spilled());
        // On the wire and in the schema, the list is a plain array, as the
        // `Vec` it replaced.
        let json = serde_json::to_value(&more).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"kind": "hop_reached", "hop": 3},
                {"kind": "tokens_spent", "tokens": 100},
                {"kind": "described", "text": "the user cancels"},
            ])
        );
        let back: StopWhen = serde_json::from_value(json).unwrap();
        assert_eq!(back, more);
        // The schema is the `Vec`'s but for the struct's own title and
        // description.
        let without_names = |mut v: serde_json::Value| {
            let map = v.as_object_mut().unwrap();
            map.remove("title");
            map.remove("description");
            v
        };
        let schema = serde_json::to_value(schemars::schema_for!(StopWhen)).unwrap();
        let vec_schema = serde_json::to_value(schemars::schema_for!(Vec<StopCondition>)).unwrap();
        assert_eq!(schema["type"], "array");
        assert_eq!(without_names(schema), without_names(vec_schema));
        assert!(StopWhen::NONE.any.is_empty());
    }
}
