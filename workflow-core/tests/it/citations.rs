//! Evidence tied to the witness: an evidence item cites the tool call or
//! the transfer record that backs it, and the receipt checks each citation
//! against the run's own record. Evidence that names a tool as its source
//! must cite a call of it unless its handoff type is
//! `#[handoff(uncited_evidence)]`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

use crate::fixtures::assert_rejected;

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Out(pub u32);

/// What the sender's evidence says about its witness.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Case {
    /// Calls the tool and cites the call (`cx.evidence_from`).
    Cited,
    /// Cites a call that never happened.
    Fabricated,
    /// Calls the tool, cites the call with another result's digest.
    WrongDigest,
    /// Calls the tool, cites the call under another tool's name.
    WrongTool,
    /// Calls the tool, names it as the source and cites nothing.
    Uncited,
    /// Evidence from the user's request: a source that is not a tool.
    FromUser,
    /// Names the tool, cites nothing, to a handoff that accepts it.
    UncitedAllowed,
    /// The lookup is partial (the turn escalates); once approved, the turn
    /// cites the partial call with evidence marked complete.
    CompleteOnPartial,
    /// As above, with evidence marked partial: the call still failed.
    PartialOnPartial,
    /// Cites the workflow input's record, with its digest.
    Record,
    /// Cites the workflow input's record with a wrong digest.
    RecordWrongDigest,
    /// Cites a record the run has not made.
    RecordNotYet,
    /// Evidence as a model writes it (a source, no citation), cited to the
    /// turn's calls by `cx.cite_calls`.
    ModelSaid,
    /// The same, naming a tool the turn never called.
    ModelSaidNoCall,
}

/// Counts lookups; the first one is partial when asked.
#[derive(Default)]
pub struct Desk {
    pub lookups: AtomicU32,
    pub partial_first: bool,
}

#[workflow(entry = intake, output = Out, deps = Arc<Desk>)]
pub mod cited {
    use super::*;

    /// A handoff held to the rule: tool evidence must cite its call.
    #[handoff]
    pub struct Task {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Work>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    /// A handoff whose type accepts uncited evidence.
    #[handoff(uncited_evidence)]
    pub struct Note {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Read>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    /// Looks a customer up; the first lookup is partial when the desk says
    /// so (escalated, for a person to decide).
    #[tool(then = escalate, effect = read)]
    async fn lookup(customer: String, desk: &Arc<Desk>) -> Result<String, ToolError> {
        let n = desk.lookups.fetch_add(1, Ordering::SeqCst);
        if desk.partial_first && n == 0 {
            return Err(ToolError::partial("lookup", "page 1 of 2"));
        }
        Ok(format!("{customer} is on the gold plan"))
    }

    #[agent(owns = [Intake], tools = [lookup], to = [worker, reader])]
    async fn intake(case: Case, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        let approved = cx.approval().is_some();
        let claim = "ann is on the gold plan";
        let evidence =
            match case {
                Case::Cited => {
                    cx.call(tools::lookup, "ann".into()).await?;
                    cx.evidence_from(tools::lookup, claim)?
                }
                Case::Fabricated => Evidence::complete("lookup", claim).citing(
                    Citation::tool_call("lookup", cx.hop() + 1, 0, "9f86d081884c7d65"),
                ),
                Case::WrongDigest | Case::WrongTool => {
                    cx.call(tools::lookup, "ann".into()).await?;
                    let Citation::ToolCall {
                        turn,
                        index,
                        digest,
                        ..
                    } = cx.citation(tools::lookup)?
                    else {
                        unreachable!("a tool call's citation")
                    };
                    let (tool, digest) = if case == Case::WrongDigest {
                        ("lookup", "0".repeat(64))
                    } else {
                        ("billing", digest)
                    };
                    Evidence::complete("lookup", claim)
                        .citing(Citation::tool_call(tool, turn, index, digest))
                }
                Case::Uncited | Case::UncitedAllowed => {
                    cx.call(tools::lookup, "ann".into()).await?;
                    Evidence::complete("lookup", claim)
                }
                Case::FromUser => Evidence::complete("user", "ann says she is on the gold plan"),
                Case::CompleteOnPartial | Case::PartialOnPartial if !approved => {
                    cx.call(tools::lookup, "ann".into()).await?;
                    unreachable!("the first lookup is partial")
                }
                Case::CompleteOnPartial | Case::PartialOnPartial => {
                    // The partial call is recorded with the escalated record #1.
                    let evidence = if case == Case::CompleteOnPartial {
                        Evidence::complete("lookup", claim)
                    } else {
                        Evidence::partial("lookup", claim)
                    };
                    evidence.citing(Citation::tool_call("lookup", 1, 0, ""))
                }
                Case::Record | Case::RecordWrongDigest => {
                    let citation = if case == Case::Record {
                        Citation::record_of(0, &case).map_err(|e| Reject::because(e.to_string()))?
                    } else {
                        Citation::record(0, "0".repeat(64))
                    };
                    Evidence::complete("intake", "the case as received").citing(citation)
                }
                Case::ModelSaid | Case::ModelSaidNoCall => {
                    if case == Case::ModelSaid {
                        cx.call(tools::lookup, "ann".into()).await?;
                    }
                    let said = [
                        Evidence::complete("lookup", claim),
                        Evidence::complete("user", "ann asked"),
                    ];
                    let mut cited = cx.cite_calls(said);
                    cited.swap_remove(0)
                }
                Case::RecordNotYet => Evidence::complete("intake", "a later record")
                    .citing(Citation::record(cx.hop() + 5, "0".repeat(64))),
            };
        let stop = StopWhen::at_hop(cx.hop() + 3);
        if case == Case::UncitedAllowed {
            return Ok(intake::Next::Reader(Note {
                op: Operation::new("read", ""),
                scope: cx.lease(authority::Read).as_long_as_mine(),
                evidence: vec![evidence],
                open: vec![],
                stop,
            }));
        }
        Ok(intake::Next::Worker(Task {
            op: Operation::new("work", ""),
            scope: cx.lease(authority::Work).as_long_as_mine(),
            evidence: vec![evidence],
            open: vec![],
            stop,
        }))
    }

    /// (The loop, never taken, leaves the hop cap room for an escalated
    /// turn and its approval.)
    #[agent(owns = [Work], to = [END, worker(max = 2)])]
    async fn worker(_task: Task, _cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        Ok(worker::Next::End(Out(1)))
    }

    #[agent(owns = [Read], to = [END])]
    async fn reader(_note: Note, _cx: reader::Context<'_>) -> Result<reader::Next, Reject> {
        Ok(reader::Next::End(Out(2)))
    }
}

fn desk() -> Arc<Desk> {
    Arc::new(Desk::default())
}

/// The run for `case`, its output or how it stopped.
async fn run(case: Case) -> Result<Completed<Out>, Aborted> {
    cited::Workflow::new((), desk()).run(case).await
}

/// The rejection of `case` at the worker's receipt: the worker never ran.
async fn rejected(case: Case) -> RejectReason {
    let aborted = run(case).await.expect_err("rejected at the receipt");
    let workflow_core::RunError::Rejected { reason, .. } = &aborted.error else {
        panic!("expected a rejection, got {}", aborted.error);
    };
    assert_rejected(&aborted, "intake", "worker", reason.clone());
    reason.clone()
}

#[tokio::test]
async fn evidence_citing_the_call_the_turn_made_is_accepted() {
    let done = run(Case::Cited).await.unwrap();
    assert_eq!(done.output.0, 1);
    let task: serde_json::Value =
        serde_json::from_str(&done.transcript.payload(1).unwrap()).unwrap();
    let cited = &task["evidence"][0]["cites"][0];
    assert_eq!(cited["kind"], "tool_call");
    assert_eq!(cited["tool"], "lookup");
    assert_eq!(
        (cited["turn"].as_u64(), cited["index"].as_u64()),
        (Some(1), Some(0))
    );
    let call = done.transcript.tool_call(1, 0).expect("the cited call");
    let workflow_core::tool::ToolOutcome::Ok { digest, .. } = &call.outcome else {
        panic!("the call succeeded");
    };
    assert_eq!(cited["digest"], digest.as_str());
}

#[tokio::test]
async fn fabricated_evidence_citing_a_call_that_never_happened_is_rejected() {
    assert_eq!(
        rejected(Case::Fabricated).await,
        RejectReason::CitationNotFound {
            citation: "tool call `lookup` (turn #1, call 0)".into()
        }
    );
}

#[tokio::test]
async fn a_citation_whose_digest_is_not_the_recorded_result_is_rejected() {
    let RejectReason::CitationMismatch {
        citation,
        field,
        recorded,
    } = rejected(Case::WrongDigest).await
    else {
        panic!("a citation mismatch");
    };
    assert_eq!(citation, "tool call `lookup` (turn #1, call 0)");
    assert_eq!(field, "digest");
    assert_eq!(recorded.len(), 64);
    assert_ne!(recorded, "0".repeat(64));
}

#[tokio::test]
async fn a_citation_naming_another_tool_than_the_call_is_rejected() {
    let RejectReason::CitationMismatch {
        citation,
        field,
        recorded,
    } = rejected(Case::WrongTool).await
    else {
        panic!("a citation mismatch");
    };
    assert_eq!(citation, "tool call `billing` (turn #1, call 0)");
    assert_eq!((&*field, &*recorded), ("tool", "lookup"));
}

#[tokio::test]
async fn uncited_evidence_naming_a_tool_is_rejected() {
    assert_eq!(
        rejected(Case::Uncited).await,
        RejectReason::UncitedEvidence {
            source: "lookup".into(),
            claim: "ann is on the gold plan".into(),
        }
    );
}

#[tokio::test]
async fn uncited_evidence_from_the_request_is_accepted() {
    assert_eq!(run(Case::FromUser).await.unwrap().output.0, 1);
}

#[tokio::test]
async fn a_handoff_type_that_accepts_uncited_evidence_accepts_it() {
    let done = run(Case::UncitedAllowed).await.unwrap();
    assert_eq!(done.output.0, 2);
    assert_eq!(done.transcript.receipt(1), Some(Receipt::Accepted));
}

/// The run of `case` whose first lookup is partial, escalated, then
/// approved: the approved turn cites the partial call.
async fn after_partial(case: Case) -> Aborted {
    let desk = Arc::new(Desk {
        partial_first: true,
        ..Desk::default()
    });
    let wf = cited::Workflow::new((), desk);
    let suspended = wf
        .run(case)
        .await
        .expect_err("the partial lookup escalates");
    let suspension = suspended.suspension().expect("suspended");
    wf.decide(&suspension, Decision::Approve { by: "ann".into() })
        .await
        .expect_err("rejected at the worker's receipt")
}

#[tokio::test]
async fn evidence_marked_complete_citing_a_partial_result_is_rejected() {
    let aborted = after_partial(Case::CompleteOnPartial).await;
    let workflow_core::RunError::Rejected { to, reason, .. } = &aborted.error else {
        panic!("expected a rejection, got {}", aborted.error);
    };
    assert_eq!(*to, "worker");
    let RejectReason::CompleteOnPartial { citation, error } = reason else {
        panic!("complete on partial, got {reason}");
    };
    assert_eq!(citation, "tool call `lookup` (turn #1, call 0)");
    assert!(error.contains("page 1 of 2"), "{error}");
}

#[tokio::test]
async fn evidence_citing_a_failed_call_is_rejected_even_marked_partial() {
    let aborted = after_partial(Case::PartialOnPartial).await;
    let workflow_core::RunError::Rejected { reason, .. } = &aborted.error else {
        panic!("expected a rejection, got {}", aborted.error);
    };
    assert!(
        matches!(reason, RejectReason::CitationFailed { .. }),
        "{reason}"
    );
}

#[tokio::test]
async fn evidence_citing_a_record_of_the_run_by_its_digest_is_accepted() {
    assert_eq!(run(Case::Record).await.unwrap().output.0, 1);
    assert!(matches!(
        rejected(Case::RecordWrongDigest).await,
        RejectReason::CitationMismatch { field, .. } if field == "digest"
    ));
    assert_eq!(
        rejected(Case::RecordNotYet).await,
        RejectReason::CitationNotFound {
            citation: "record #5".into()
        }
    );
}

#[test]
fn a_citation_reads_as_tagged_json() {
    let json = serde_json::to_value(Citation::tool_call("lookup", 3, 0, "ab")).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"kind": "tool_call", "tool": "lookup", "turn": 3, "index": 0, "digest": "ab"})
    );
    let evidence: Evidence = serde_json::from_value(serde_json::json!({
        "source": "lookup", "claim": "c", "complete": true,
        "cites": [{"kind": "record", "seq": 2, "digest": "cd"}]
    }))
    .unwrap();
    assert_eq!(evidence.cites, vec![Citation::record(2, "cd")]);
    let json = serde_json::to_value(RejectReason::CitationNotFound {
        citation: "record #2".into(),
    })
    .unwrap();
    assert_eq!(json["code"], "citation_not_found");
}

#[tokio::test]
async fn evidence_a_model_wrote_is_cited_to_the_calls_of_the_turn() {
    let done = run(Case::ModelSaid).await.unwrap();
    assert_eq!(done.output.0, 1);
    let task: serde_json::Value =
        serde_json::from_str(&done.transcript.payload(1).unwrap()).unwrap();
    assert_eq!(task["evidence"][0]["cites"][0]["tool"], "lookup");
    // A tool the turn never called is not cited: the receipt rejects it.
    assert!(matches!(
        rejected(Case::ModelSaidNoCall).await,
        RejectReason::UncitedEvidence { .. }
    ));
}
