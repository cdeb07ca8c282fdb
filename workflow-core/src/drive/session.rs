//! A run driven one turn at a time (`Session::step`).

use crate::drive::{Aborted, Completed};
use crate::run::Transcript;
use crate::spec::RunError;
use crate::spec::{Transition, Workflow};

use crate::run::Runtime;
use crate::spec::agent_name;
#[cfg(feature = "tracing")]
use crate::spec::error_type;

/// What one step of a [`Session`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<O> {
    /// An agent's turn ran; `next` runs after it.
    Continue {
        /// The agent that runs next.
        next: &'static str,
    },
    /// The run ended with this output.
    Finished(O),
}

/// A run driven one turn at a time.
pub struct Session<'x, W: Workflow> {
    pub(crate) run: Runtime<'x, W>,
    pub(crate) state: Result<Option<W::State>, RunError>,
}

impl<'x, W: Workflow> Session<'x, W> {
    /// The agent that runs at the next step, if the run is not over.
    pub fn next_agent(&self) -> Option<&'static str> {
        match &self.state {
            Ok(Some(state)) => Some(agent_name::<W>(W::agent_of(state))),
            _ => None,
        }
    }

    /// Runs one agent turn.
    pub async fn step(&mut self) -> Result<Step<W::Output>, RunError> {
        // Until the turn completes, the session says it was interrupted: a
        // `step` future dropped mid-turn (a timeout, a `select!`) leaves a
        // truthful error behind, not a run that looks finished.
        let state = match std::mem::replace(&mut self.state, Err(RunError::Interrupted)) {
            Ok(Some(state)) => state,
            Ok(None) => {
                self.state = Ok(None);
                return Err(RunError::Finished);
            }
            Err(e) => {
                // A stopped run keeps answering with what stopped it.
                self.state = Err(e.clone());
                return Err(e);
            }
        };
        let turn = match W::turn(state, &mut self.run).await {
            Err(RunError::Rejected { .. }) if self.run.is_returning() => {
                self.run.return_to_sender().map(Transition::To)
            }
            other => other,
        };
        match turn {
            Ok(Transition::To(next)) => {
                let name = agent_name::<W>(W::agent_of(&next));
                self.state = Ok(Some(next));
                Ok(Step::Continue { next: name })
            }
            Ok(Transition::End(output)) => {
                self.state = Ok(None);
                Ok(Step::Finished(output))
            }
            Err(e) => {
                self.state = Err(e.clone());
                Err(e)
            }
        }
    }

    /// Agent turns completed so far.
    pub fn hops(&self) -> u32 {
        self.run.hops
    }

    /// The transfers recorded so far.
    pub fn transcript(&self) -> &Transcript {
        &self.run.transcript
    }

    /// The transcript of the run so far, whatever state it is in (after
    /// [`Step::Finished`], an error, or midway).
    pub fn into_transcript(self) -> Transcript {
        self.run.transcript
    }

    /// Runs the remaining turns to the end.
    pub async fn finish(mut self) -> Result<Completed<W::Output>, Aborted> {
        let ended = self.drive().await;
        self.ended(ended)
    }

    /// The remaining turns, run on the session where it is. An executor
    /// that owns the session awaits this rather than [`finish`](Self::finish):
    /// a future that takes the session by value keeps it twice (its
    /// argument, and the local it is moved into), about 1.1 KB more per
    /// run in flight.
    pub(crate) async fn drive(&mut self) -> Result<W::Output, RunError> {
        let state = match std::mem::replace(&mut self.state, Ok(None)) {
            Ok(Some(state)) => state,
            Ok(None) => return Err(RunError::Finished),
            Err(error) => return Err(error),
        };
        drive_run(state, &mut self.run).await
    }

    /// The run's result with its transcript, once [`drive`](Self::drive)
    /// returned `ended`.
    // The public `finish`'s result, as it was: `Aborted` carries the
    // transcript by value.
    #[allow(clippy::result_large_err)]
    pub(crate) fn ended(
        self,
        ended: Result<W::Output, RunError>,
    ) -> Result<Completed<W::Output>, Aborted> {
        run_ended(self.run.transcript, ended)
    }
}

/// Starts `run` on `input` and runs it to its end or its first stop
/// ([`drive_run`]). The input is held by this future only until the run
/// starts: where the state it becomes is driven, the same bytes.
pub(crate) async fn start_and_drive<W: Workflow>(
    input: W::Input,
    run: &mut Runtime<'_, W>,
) -> Result<W::Output, RunError> {
    let state = W::start(input, run)?;
    drive_run(state, run).await
}

/// Runs `run` from `state` to its end or its first stop
/// ([`Session::drive`]), inside its `invoke_workflow` span.
pub(crate) async fn drive_run<W: Workflow>(
    state: W::State,
    run: &mut Runtime<'_, W>,
) -> Result<W::Output, RunError> {
    let started = crate::observe::telemetry::now();
    #[cfg(feature = "tracing")]
    let span = workflow_span::<W>(run.transcript.run_id);
    #[cfg(feature = "tracing")]
    let ended = tracing::Instrument::instrument(W::run_to_end(state, run), span.clone()).await;
    #[cfg(not(feature = "tracing"))]
    let ended = W::run_to_end(state, run).await;
    #[cfg(feature = "tracing")]
    if let Err(error) = &ended {
        span.record("error.type", error_type(error));
    }
    crate::observe::telemetry::run_ended::<W, _>(started, &ended);
    ended
}

/// The `invoke_workflow` span of run `run_id` (OpenTelemetry GenAI
/// conventions), its `error.type` recorded when the run fails: the same
/// whether the run is driven to its end or streamed.
#[cfg(feature = "tracing")]
pub(crate) fn workflow_span<W: Workflow>(run_id: u64) -> tracing::Span {
    tracing::info_span!(
        "invoke_workflow",
        otel.name = %format_args!("invoke_workflow {}", W::GRAPH.name),
        gen_ai.operation.name = "invoke_workflow",
        gen_ai.conversation.id = run_id,
        workflow.name = W::GRAPH.name,
        "error.type" = tracing::field::Empty,
    )
}

/// A run's result with its `transcript`, once it `ended`
/// ([`Session::ended`]).
#[allow(clippy::result_large_err)]
pub(crate) fn run_ended<O>(
    transcript: Transcript,
    ended: Result<O, RunError>,
) -> Result<Completed<O>, Aborted> {
    match ended {
        Ok(output) => Ok(Completed { output, transcript }),
        Err(RunError::Finished) => Err(Aborted {
            error: RunError::Finished,
            transcript,
        }),
        Err(error) => {
            // A stopped run may be held for long (a suspension waiting
            // for a person): keep only what it recorded.
            let mut transcript = transcript;
            transcript.shrink_to_fit();
            Err(Aborted { error, transcript })
        }
    }
}
