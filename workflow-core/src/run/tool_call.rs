//! A tool call from an agent's turn: the scope and budget checks, the
//! journal, retries, fail-fast, the record and the span.

use crate::spec::Expiry;
use crate::spec::{FailFast, Then, ToolCallRecord, ToolOutcome};
use crate::spec::{ToolError, ToolErrorKind};
use std::future::Future;

use crate::run::RunShared;
use crate::spec::{Tool, Workflow};

/// Whether the agent making a call (`at`) of a tool needing `needs` may
/// make it: a turn under a handoff's scope needs that scope to delegate
/// the authority and to be live; a turn under no scope (the workflow input,
/// or a hand-written agent whose contract is `None`) needs the agent to own
/// the authority. A tool that needs nothing is never refused here.
fn check_scope(
    tool: &'static str,
    needs: Option<&'static str>,
    at: &CallSite<'_>,
    shared: &RunShared,
) -> Result<(), ToolError> {
    let Some(needs) = needs else {
        return Ok(());
    };
    let Some((authority, expires)) = at.scope else {
        if at.owns.contains(&needs) {
            return Ok(());
        }
        return Err(ToolError::of(
            tool,
            ToolErrorKind::OutOfScope,
            format!(
                "the tool needs authority `{needs}`, which agent `{}` does not own and no handoff delegates to this turn",
                at.agent
            ),
        ));
    };
    let hop = at.hop;
    if authority != needs {
        return Err(ToolError::of(
            tool,
            ToolErrorKind::OutOfScope,
            format!(
                "the tool needs authority `{needs}`, the handoff this turn works under delegates `{authority}`"
            ),
        ));
    }
    // A renewal granted in this turn replaces the expiry delivered.
    let expires = shared.renewed(at.lease_seq).unwrap_or(expires);
    if expires.expired_at(&crate::spec::Moment::at_hop(hop)) {
        return Err(ToolError::of(
            tool,
            ToolErrorKind::OutOfScope,
            format!("the scope over authority `{needs}` has expired"),
        ));
    }
    let chain_of = |seq| shared.with_transfers(at.transcript, |t| t.lease_chain(seq));
    if let Some(revoked) = shared.void_lease(at.lease_seq, at.turn_seq, chain_of) {
        let message = if revoked == at.lease_seq {
            format!("the lease on authority `{needs}` granted at record {revoked} was revoked")
        } else {
            format!(
                "the lease on authority `{needs}` granted at record {} derives from the lease granted at record {revoked}, which was revoked",
                at.lease_seq
            )
        };
        return Err(ToolError::of(tool, ToolErrorKind::OutOfScope, message));
    }
    Ok(())
}

/// Where a tool call is made: the calling agent, the turn's scope and its
/// place in the run.
pub(crate) struct CallSite<'x> {
    /// The calling agent's name.
    pub(crate) agent: &'static str,
    /// The authorities the calling agent owns (what a turn under no scope
    /// may use).
    pub(crate) owns: &'static [&'static str],
    pub(crate) scope: Option<(&'static str, Expiry)>,
    /// The transfer record that granted the scope.
    pub(crate) lease_seq: u32,
    pub(crate) hop: u32,
    pub(crate) run_id: u64,
    pub(crate) turn_seq: u32,
    pub(crate) journal: Option<crate::run::context::Journal<'x>>,
    /// The run's transcript, when the turn borrows it (a branch's turn
    /// reads the run's transfers from the shared state's copy).
    pub(crate) transcript: Option<&'x crate::run::Transcript>,
    /// Whether a call outside the scope is made and recorded (audit mode).
    pub(crate) mode: crate::spec::Mode,
}

/// One tool call, in its steps: the scope, the budget, a recorded outcome
/// served instead of calling (a replay, or a turn resumed after a crash),
/// the call with its retries and the fail-fast rule, the record, the journal.
/// The span around it is the caller's (`Context::call`).
pub(crate) async fn call_tool<W: Workflow, T: Tool<W>>(
    tool: T,
    input: T::Input,
    deps: &W::Deps,
    root: &W::Root,
    shared: &RunShared,
    at: CallSite<'_>,
) -> Result<T::Output, ToolError> {
    let started = std::time::Instant::now();
    let index = shared.next_call_index();
    let arguments = crate::encode::to_json_text(&input);
    let mut attempts = 0;
    // Set when the outcome comes from a record, not from the tool.
    let mut served: Option<ToolCallRecord> = None;
    // Audit mode: the scope check's refusal, recorded with the call made.
    let mut audit: Option<String> = None;
    let outcome: Result<(T::Output, String), ToolError> = async {
        let arguments = arguments
            .as_ref()
            .map_err(|e| ToolError::new(T::NAME, format!("the arguments do not serialize: {e}")))?;
        match check_scope(T::NAME, T::NEEDS, &at, shared) {
            Err(refused) if at.mode == crate::spec::Mode::Audit => {
                crate::observe::telemetry::audit_tool_call::<W, T>();
                audit = Some(refused.message.clone());
            }
            checked => checked?,
        }
        charge_call::<W, T>(shared)?;
        if let Some(recorded) = &shared.recorded {
            match recorded.serve(at.turn_seq, index, T::NAME, arguments) {
                crate::ledger::Served::Call(call) => {
                    let outcome = recorded.outcome::<T::Output>(T::NAME, at.turn_seq, &call);
                    attempts = call.attempts;
                    served = Some(call);
                    return outcome;
                }
                crate::ledger::Served::Diverged(error) => return Err(error),
                crate::ledger::Served::Live => {}
            }
        }
        check_guard::<W, T>(&input, root)?;
        let id = crate::run::CallId {
            run_id: at.run_id,
            turn_seq: at.turn_seq,
            index,
        };
        call_with_retries::<W, T>(tool, input, arguments, deps, id, &mut attempts).await
    }
    .await;
    let duration_us = started.elapsed().as_micros() as u64;
    if let Some(call) = served {
        // The recorded call again, as it was recorded.
        shared.log_call(call, outcome.as_ref().err(), T::FALLBACK.then);
        return outcome.map(|(out, _)| out);
    }
    let (outcome, mut record) = record_of::<W, T>(index, arguments, outcome, attempts, duration_us);
    record.audit = audit;
    journal_and_log::<W, T>(shared, &at, record, outcome)
}

/// The tool's guard over its input, before its body runs: a refusal is a
/// [`ToolErrorKind::Refused`] error, recorded like any failed call, and the
/// body is never called. A recorded call (a replay, a resumed turn) is
/// served as recorded instead, refusals included.
fn check_guard<W: Workflow, T: Tool<W>>(input: &T::Input, root: &W::Root) -> Result<(), ToolError> {
    let Some(guard) = T::GUARD else {
        return Ok(());
    };
    T::guard(input, root).map_err(|why| {
        ToolError::of(
            T::NAME,
            ToolErrorKind::Refused,
            format!("guard `{guard}` refused the call before the tool ran: {why}"),
        )
    })
}

/// Counts the call against the run's tool-call budget.
fn charge_call<W: Workflow, T: Tool<W>>(shared: &RunShared) -> Result<(), ToolError> {
    let mut log = shared.lock();
    log.add(&crate::spec::Usage {
        tool_calls: 1,
        ..Default::default()
    });
    let spent = log.spent();
    if let Some(budget) = shared.budget
        && let Some(limit) = budget.tool_calls
        && spent.tool_calls > limit
    {
        return Err(ToolError::of(
            T::NAME,
            ToolErrorKind::Budget,
            format!("the run's budget of {limit} tool calls is used up"),
        ));
    }
    Ok(())
}

/// Calls the tool, retrying a transient failure as it declares (doubling
/// the backoff); the output passes the fail-fast rule and is returned with
/// its JSON text.
async fn call_with_retries<W: Workflow, T: Tool<W>>(
    tool: T,
    input: T::Input,
    arguments: &str,
    deps: &W::Deps,
    id: crate::run::CallId,
    attempts: &mut u32,
) -> Result<(T::Output, String), ToolError> {
    let mut input = Some(input);
    let mut backoff = T::FALLBACK.backoff_ms;
    loop {
        *attempts += 1;
        let this = match input.take() {
            Some(first) => first,
            // A retry: the arguments again, from their recorded text.
            None => crate::encode::from_json_text(arguments).map_err(|e| {
                ToolError::new(T::NAME, format!("the arguments do not read back: {e}"))
            })?,
        };
        let result = match crate::run::with_call_id(
            id,
            tool.call(this, deps, crate::spec::ToolCallPermit::<T>::new()),
        )
        .await
        {
            Ok(out) => fail_fast::<W, T>(out),
            Err(e) => Err(e),
        };
        match result {
            Err(e) if e.kind.is_transient() && *attempts <= T::FALLBACK.retries => {
                tokio::time::sleep(std::time::Duration::from_millis(backoff)).await;
                backoff = backoff.saturating_mul(2);
            }
            other => return other,
        }
    }
}

/// The tool's output, if it is usable (not empty, partial or a failure
/// status, and serializable), with its JSON text.
fn fail_fast<W: Workflow, T: Tool<W>>(out: T::Output) -> Result<(T::Output, String), ToolError> {
    if let Err(unusable) = out.fail_fast() {
        return Err(unusable.into_error(T::NAME));
    }
    match crate::encode::to_json_text(&out) {
        Ok(text) => Ok((out, text)),
        Err(e) => Err(ToolError::of(
            T::NAME,
            ToolErrorKind::Schema,
            format!("the result does not serialize: {e}"),
        )),
    }
}

/// The record of a call made: its arguments, its result and the result's
/// digest (or its error), attempts and duration.
fn record_of<W: Workflow, T: Tool<W>>(
    index: u32,
    arguments: Result<String, crate::spec::PayloadError>,
    outcome: Result<(T::Output, String), ToolError>,
    attempts: u32,
    duration_us: u64,
) -> (Result<T::Output, ToolError>, ToolCallRecord) {
    let (outcome, recorded) = match outcome {
        Ok((out, text)) => {
            let digest = crate::encode::digest(&text);
            (
                Ok(out),
                ToolOutcome::Ok {
                    result: text,
                    digest,
                },
            )
        }
        Err(error) => (Err(error.clone()), ToolOutcome::Failed { error }),
    };
    let record = ToolCallRecord {
        tool: std::borrow::Cow::Borrowed(T::NAME),
        index,
        arguments: arguments.unwrap_or_default(),
        outcome: recorded,
        attempts,
        duration_us,
        audit: None,
    };
    (outcome, record)
}

/// Journals the call's record before the agent sees the outcome (a turn
/// resumed after a crash is served it instead of calling the tool again),
/// then logs it with the turn. An outcome that is not durable is not used:
/// the run stops.
fn journal_and_log<W: Workflow, T: Tool<W>>(
    shared: &RunShared,
    at: &CallSite<'_>,
    record: ToolCallRecord,
    mut outcome: Result<T::Output, ToolError>,
) -> Result<T::Output, ToolError> {
    let mut then = T::FALLBACK.then;
    let journaled = at.journal.as_ref().map(|journal| {
        let entry = crate::ledger::JournalEntry::bind(
            at.run_id,
            at.turn_seq,
            &journal.anchor,
            record.clone(),
        );
        match &shared.lease {
            Some(lease) => {
                journal
                    .ledger
                    .append_tool_call_leased(at.run_id, at.turn_seq, &entry, lease)
            }
            None => journal
                .ledger
                .append_tool_call(at.run_id, at.turn_seq, &entry),
        }
    });
    if let Some(Err(e)) = journaled {
        outcome = Err(ToolError::new(
            T::NAME,
            format!("the ledger could not record the call: {e}"),
        ));
        then = Then::Abort;
    }
    shared.log_call(record, outcome.as_ref().err(), then);
    outcome
}

impl RunShared {
    /// The index the next tool call of the turn takes.
    fn next_call_index(&self) -> u32 {
        let index = {
            let mut log = self.lock();
            log.next_call += 1;
            log.next_call - 1
        };
        self.mark();
        index
    }

    /// Logs a call with the turn; the turn's first failure is kept with
    /// what its fallback does.
    fn log_call(&self, record: ToolCallRecord, error: Option<&ToolError>, then: Then) {
        let mut log = self.lock();
        if let (Some(error), None) = (error, &log.failure) {
            log.failure = Some(Box::new((error.clone(), then)));
        }
        log.calls.push(record);
    }
}

/// A tool call under way: `cx.call(tool, input).await`.
///
/// A named future (not `impl Future`), so that an ungranted tool is reported
/// once, at the call, and not again at the `.await`.
#[must_use = "a tool call does nothing until it is awaited"]
pub struct ToolCall<'x, O> {
    pub(crate) call: std::pin::Pin<Box<dyn Future<Output = Result<O, ToolError>> + Send + 'x>>,
    #[cfg(feature = "tracing")]
    pub(crate) span: tracing::Span,
}

impl<O> Future for ToolCall<'_, O> {
    type Output = Result<O, ToolError>;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let poll = self.call.as_mut().poll(cx);
        #[cfg(feature = "tracing")]
        if let std::task::Poll::Ready(Err(e)) = &poll {
            self.span.record("error.type", tool_error_type(e.kind));
        }
        poll
    }
}

/// The `error.type` of a tool error (a stable, low-cardinality name).
#[cfg(feature = "tracing")]
fn tool_error_type(kind: ToolErrorKind) -> &'static str {
    match kind {
        ToolErrorKind::Failed => "tool_error",
        ToolErrorKind::Status(_) => "status",
        ToolErrorKind::Empty => "empty_result",
        ToolErrorKind::Partial => "partial_result",
        ToolErrorKind::Schema => "schema_mismatch",
        ToolErrorKind::OutOfScope => "out_of_scope",
        ToolErrorKind::Budget => "budget_exhausted",
        ToolErrorKind::Timeout => "timeout",
        ToolErrorKind::Refused => "refused",
    }
}

/// What identifies a tool call among all runs: the run, the turn (the
/// sequence number the record of its outcome takes) and the call's index in
/// the turn. A turn that runs again after a crash makes its calls under the
/// same ids, so a tool can hand its id to an API as an idempotency key
/// ([`call_id`]). Displayed as `run-turn-index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallId {
    /// The run.
    pub run_id: u64,
    /// The sequence number the record of the turn's outcome takes.
    pub turn_seq: u32,
    /// The call's position in its turn, from 0.
    pub index: u32,
}

impl std::fmt::Display for CallId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}-{}", self.run_id, self.turn_seq, self.index)
    }
}

tokio::task_local! {
    static CALL_ID: CallId;
}

/// The id of the tool call being made, inside a tool's body (`None`
/// elsewhere, and in tasks the tool spawns).
///
/// A call whose outcome the ledger journaled is not made again when its run
/// resumes; a process that dies after the tool acted and before its outcome
/// was journaled makes the call again, under the same id. Pass the id to an
/// API that deduplicates requests by key, and the call takes effect once.
pub fn call_id() -> Option<CallId> {
    CALL_ID.try_with(|id| *id).ok()
}

/// Runs `call` (a tool's body) with `id` as its [`call_id`].
pub(crate) async fn with_call_id<F: std::future::Future>(id: CallId, call: F) -> F::Output {
    CALL_ID.scope(id, call).await
}
