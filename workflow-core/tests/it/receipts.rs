//! Receipts and run-time checks: every transfer gets a recorded receipt
//! before the receiver's body runs, and each check (pre- and
//! post-conditions, agent failures, loop bounds, the hop cap, scope expiry,
//! stop conditions, timeouts) stops the run with its own typed error.
//!
//! Each test would fail if the check it covers were removed: rejections are
//! asserted by their exact reason and record, and "the body never ran" by a
//! counter that only the body's tool call increments.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use workflow_core::prelude::*;
use workflow_core::{Expiry, RunError};

use crate::fixtures::{assert_rejected, hop, rejected, rejection, route};

/// How many times each agent's body ran (each body calls `tick` first).
#[derive(Debug, Default)]
pub struct Counters {
    planner: AtomicU32,
    worker: AtomicU32,
    checker: AtomicU32,
}

impl Counters {
    /// `[planner, worker, checker]`.
    pub(crate) fn runs(&self) -> [u32; 3] {
        [
            self.planner.load(Ordering::SeqCst),
            self.worker.load(Ordering::SeqCst),
            self.checker.load(Ordering::SeqCst),
        ]
    }
}

/// The workflow input: what the run should do, scenario by scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Job {
    /// How many times the checker sends the work back.
    pub rounds: u32,
    /// Must not be negative (the worker's pre-condition).
    pub amount: i64,
    /// The expiry of the scope the planner delegates to the worker.
    pub expires: Expiry,
    /// The stop conditions the planner hands the worker.
    pub stop: StopWhen,
    /// The worker's body fails.
    pub fail: bool,
    /// The worker does no work (the checker's post-condition catches it).
    pub lazy: bool,
    /// The worker sleeps this long (its timeout is 50 ms).
    pub sleep_ms: u64,
}

impl Job {
    pub(crate) fn rounds(rounds: u32) -> Job {
        Job {
            rounds,
            amount: 10,
            expires: Expiry::AtHop(flow::MAX_HOPS),
            stop: StopWhen::at_hop(flow::MAX_HOPS),
            fail: false,
            lazy: false,
            sleep_ms: 0,
        }
    }
}

/// What a run ends with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tally {
    /// Rounds done.
    pub done: u32,
}

#[workflow(entry = planner, output = Tally, deps = Arc<Counters>)]
pub mod flow {
    use super::*;

    /// Planner or checker -> worker.
    #[handoff]
    #[derive(Debug, Clone, PartialEq)]
    pub struct Task {
        /// What to do.
        #[operation]
        pub op: Operation,
        /// Under the worker's authority.
        #[authority]
        pub scope: Scope<authority::Work>,
        /// What the sender relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What it left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// Must not be negative.
        pub amount: i64,
        /// Send-backs left.
        pub remaining: u32,
        /// Rounds done.
        pub done: u32,
        /// Fail the body.
        pub fail: bool,
        /// Do no work.
        pub lazy: bool,
        /// Sleep this long.
        pub sleep_ms: u64,
    }

    /// Worker -> checker.
    #[handoff]
    #[derive(Debug, Clone, PartialEq)]
    pub struct Check {
        /// What to do.
        #[operation]
        pub op: Operation,
        /// Under the checker's authority.
        #[authority]
        pub scope: Scope<authority::Judge>,
        /// What the sender relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What it left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// Send-backs left.
        pub remaining: u32,
        /// Rounds done.
        pub done: u32,
        /// Do no work.
        pub lazy: bool,
    }

    /// Counts a body run.
    #[tool(effect = read)]
    async fn tick(agent: String, counters: &Arc<Counters>) -> Result<u32, ToolError> {
        let counter = match agent.as_str() {
            "planner" => &counters.planner,
            "worker" => &counters.worker,
            "checker" => &counters.checker,
            other => return Err(ToolError::new("tick", format!("no agent `{other}`"))),
        };
        Ok(counter.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// The first task, from the job.
    pub fn first_task(job: &Job) -> Task {
        let mut scope = Scope::new(authority::Work);
        scope.expires = job.expires;
        Task {
            op: Operation::new("work", "do one round"),
            scope,
            evidence: vec![Evidence::complete("job", "the job as given")],
            open: vec![],
            stop: job.stop.clone(),
            amount: job.amount,
            remaining: job.rounds,
            done: 0,
            fail: job.fail,
            lazy: job.lazy,
            sleep_ms: job.sleep_ms,
        }
    }

    #[agent(owns = [Plan], tools = [tick], to = [worker])]
    async fn planner(job: Job, cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        cx.call(tools::tick, "planner".to_owned()).await?;
        Ok(planner::Next::Worker(first_task(&job)))
    }

    #[agent(owns = [Work], tools = [tick], to = [checker], timeout_ms = 50)]
    #[pre(task.amount >= 0, "the amount must not be negative")]
    async fn worker(task: Task, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        cx.call(tools::tick, "worker".to_owned()).await?;
        if task.sleep_ms > 0 {
            tokio::time::sleep(Duration::from_millis(task.sleep_ms)).await;
        }
        if task.fail {
            return Err(Reject::because("the worker gave up"));
        }
        Ok(worker::Next::Checker(Check {
            op: Operation::new("check", "check the round"),
            scope: cx.lease(authority::Judge).as_long_as_mine(),
            // Every open question it received is answered by this round.
            evidence: std::iter::once(Evidence::complete("worker", "round done"))
                .chain(task.open.iter().map(|u| {
                    Evidence::complete("worker", "the round was redone").resolving(&u.question)
                }))
                .collect(),
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            remaining: task.remaining,
            done: if task.lazy { task.done } else { task.done + 1 },
            lazy: task.lazy,
        }))
    }

    #[agent(owns = [Judge], tools = [tick], to = [worker(max = 2), END])]
    #[post(!matches!(out, checker::Next::End(t) if t.done == 0), "a run ends with work done")]
    async fn checker(check: Check, cx: checker::Context<'_>) -> Result<checker::Next, Reject> {
        cx.call(tools::tick, "checker".to_owned()).await?;
        if check.remaining == 0 {
            return Ok(checker::Next::End(Tally { done: check.done }));
        }
        Ok(checker::Next::Worker(Task {
            op: Operation::new("work", "once more"),
            scope: cx.lease(authority::Work).as_long_as_mine(),
            evidence: vec![],
            open: vec![Uncertainty::new("is it right now?", "another round")],
            stop: StopWhen::at_hop(cx.hop() + 8),
            amount: 0,
            remaining: check.remaining - 1,
            done: check.done,
            fail: false,
            lazy: check.lazy,
            sleep_ms: 0,
        }))
    }
}

/// A two-agent loop whose back edge is bounded by 4: the smallest case of
/// the `MAX_HOPS` computation.
#[workflow(entry = ping, output = u32)]
pub mod pingpong {
    use super::*;

    /// Pong -> ping (and the workflow input).
    #[handoff]
    pub struct Serve {
        /// Hit it.
        #[operation]
        pub op: Operation,
        /// Ping's authority.
        #[authority]
        pub scope: Scope<authority::Hit>,
        /// None.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// None.
        #[stop]
        pub stop: StopWhen,
        /// Hits so far.
        pub hits: u32,
        /// Pong ends the run at this many hits.
        pub goal: u32,
    }

    /// Ping -> pong.
    #[handoff]
    pub struct Return {
        /// Return it.
        #[operation]
        pub op: Operation,
        /// Pong's authority.
        #[authority]
        pub scope: Scope<authority::Block>,
        /// None.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// None.
        #[stop]
        pub stop: StopWhen,
        /// Hits so far.
        pub hits: u32,
        /// Pong ends the run at this many hits.
        pub goal: u32,
    }

    /// A serve aiming for `goal` hits.
    pub fn serve(hits: u32, goal: u32) -> Serve {
        Serve {
            op: Operation::new("hit", ""),
            scope: Scope::new(authority::Hit).until_hop(MAX_HOPS),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
            hits,
            goal,
        }
    }

    #[agent(owns = [Hit], to = [pong])]
    async fn ping(ball: Serve, cx: ping::Context<'_>) -> Result<ping::Next, Reject> {
        Ok(ping::Next::Pong(Return {
            op: Operation::new("return", ""),
            scope: cx.lease(authority::Block).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            hits: ball.hits + 1,
            goal: ball.goal,
        }))
    }

    #[agent(owns = [Block], to = [ping(max = 4), END])]
    async fn pong(ball: Return, _cx: pong::Context<'_>) -> Result<pong::Next, Reject> {
        if ball.hits >= ball.goal {
            Ok(pong::Next::End(ball.hits))
        } else {
            Ok(pong::Next::Ping(serve(ball.hits, ball.goal)))
        }
    }
}

/// A declared `max_hops` lower than the computed bound becomes the cap.
#[workflow(entry = first, output = u32, max_hops = 1)]
pub mod capped {
    use super::*;

    /// First -> second.
    #[handoff]
    pub struct Baton {
        /// Carry it.
        #[operation]
        pub op: Operation,
        /// Second's authority.
        #[authority]
        pub scope: Scope<authority::Finish>,
        /// None.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// None.
        #[stop]
        pub stop: StopWhen,
        /// The value carried.
        pub value: u32,
    }

    // `END` too: a cap below the shortest run (here 1 turn) does not compile.
    #[agent(owns = [Start], to = [second, END])]
    async fn first(value: u32, cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::Second(Baton {
            op: Operation::new("carry", ""),
            scope: cx.lease(authority::Finish).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            value,
        }))
    }

    #[agent(owns = [Finish], to = [END])]
    async fn second(baton: Baton, _cx: second::Context<'_>) -> Result<second::Next, Reject> {
        Ok(second::Next::End(baton.value))
    }
}

pub(crate) fn new_flow() -> (flow::Workflow, Arc<Counters>) {
    let counters = Arc::new(Counters::default());
    (flow::Workflow::new((), counters.clone()), counters)
}

fn json(payload: &str) -> Value {
    serde_json::from_str(payload).expect("a recorded payload is JSON")
}

#[tokio::test]
async fn a_run_records_every_transfer_accepted() {
    let (wf, counters) = new_flow();
    let job = Job::rounds(2);
    let done = wf.run(job.clone()).await.expect("the run completes");
    assert_eq!(done.output, Tally { done: 3 });
    assert_eq!(counters.runs(), [1, 3, 3]);

    let t = &done.transcript;
    use Receipt::Accepted;
    assert_eq!(
        route(t),
        [
            hop("START", "planner", Accepted),
            hop("planner", "worker", Accepted),
            hop("worker", "checker", Accepted),
            hop("checker", "worker", Accepted),
            hop("worker", "checker", Accepted),
            hop("checker", "worker", Accepted),
            hop("worker", "checker", Accepted),
            hop("checker", "END", Accepted),
        ]
    );
    let records = t.records().expect("the records read back");
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.seq as usize, i);
        // Each transfer happens after exactly `i` turns.
        assert_eq!(r.hop as usize, i, "record {i}");
        assert_eq!(r.run_id, t.run_id());
        assert_eq!(Ok(r.payload.clone()), t.payload(i));
        assert_eq!(t.receipt(i), Some(Accepted));
    }
    let types: Vec<&str> = records.iter().map(|r| &*r.payload_type).collect();
    assert_eq!(
        types,
        [
            "Job", "Task", "Check", "Task", "Check", "Task", "Check", "Tally"
        ]
    );

    // The exact bytes: what serde_json writes for the values sent.
    assert_eq!(records[0].payload, serde_json::to_string(&job).unwrap());
    assert_eq!(
        records[1].payload,
        serde_json::to_string(&flow::first_task(&job)).unwrap()
    );
    assert_eq!(records[7].payload, r#"{"done":3}"#);
    // And what they say, transfer by transfer.
    let fields: Vec<(u64, u64)> = records[1..7]
        .iter()
        .map(|r| {
            let v = json(&r.payload);
            (
                v["remaining"].as_u64().unwrap(),
                v["done"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(fields, [(2, 0), (2, 1), (1, 1), (1, 2), (0, 2), (0, 3)]);
    let task: flow::Task = serde_json::from_str(&records[3].payload).unwrap();
    assert_eq!(task.scope.authority(), "Work");
    assert_eq!(
        json(&records[2].payload)["scope"],
        serde_json::json!({"authority": "Judge", "expires": {"at_hop": flow::MAX_HOPS}})
    );
    // Every record is its own JSON document too.
    for r in &records {
        let back: workflow_core::TransferRecord =
            serde_json::from_value(serde_json::to_value(r).unwrap()).unwrap();
        assert_eq!(&back, r);
    }
}

#[tokio::test]
async fn a_failing_pre_condition_rejects_before_the_body_runs() {
    let (wf, counters) = new_flow();
    let job = Job {
        amount: -1,
        ..Job::rounds(2)
    };
    let aborted = wf.run(job).await.expect_err("the worker rejects the task");
    let RunError::Rejected {
        from: "planner",
        to: "worker",
        reason: RejectReason::PreCondition { condition, message },
    } = &aborted.error
    else {
        panic!("unexpected error: {:?}", aborted.error)
    };
    assert_eq!(condition.replace(' ', ""), "task.amount>=0");
    assert_eq!(message, "the amount must not be negative");
    // The condition named is the one declared in the graph.
    let declared = flow::GRAPH.agents[1].pre[0];
    assert_eq!(
        (&**condition, &**message),
        (declared.expr, declared.message)
    );

    let reason = RejectReason::PreCondition {
        condition: condition.clone(),
        message: message.clone(),
    };
    assert_eq!(
        route(&aborted.transcript),
        [
            hop("START", "planner", Receipt::Accepted),
            hop("planner", "worker", rejected(reason)),
        ]
    );
    // The worker's body never ran; the planner's did.
    assert_eq!(counters.runs(), [1, 0, 0]);
    assert!(
        aborted
            .to_string()
            .contains("the amount must not be negative")
    );
}

#[tokio::test]
async fn a_passing_pre_condition_lets_the_body_run() {
    // The boundary of the same condition: 0 is allowed.
    let (wf, counters) = new_flow();
    let done = wf
        .run(Job {
            amount: 0,
            ..Job::rounds(0)
        })
        .await
        .expect("amount 0 passes");
    assert_eq!(done.output.done, 1);
    assert_eq!(counters.runs(), [1, 1, 1]);
}

#[tokio::test]
async fn a_failing_post_condition_aborts_the_run() {
    let (wf, counters) = new_flow();
    let aborted = wf
        .run(Job {
            lazy: true,
            ..Job::rounds(1)
        })
        .await
        .expect_err("the checker's output breaks its post-condition");
    match &aborted.error {
        RunError::PostCondition {
            agent,
            condition,
            message,
        } => {
            assert_eq!(*agent, "checker");
            assert_eq!(*message, "a run ends with work done");
            assert_eq!(*condition, flow::GRAPH.agents[2].post[0].expr);
            assert!(condition.contains("matches!"), "{condition}");
        }
        other => panic!("unexpected error: {other:?}"),
    }
    // The checker ran twice; its last output was never routed: no `END`.
    // The failed turn is recorded on its input, with what stopped the run.
    assert_eq!(counters.runs(), [1, 2, 2]);
    let r = route(&aborted.transcript);
    assert_eq!(r.len(), 6);
    assert_eq!(r[4], hop("worker", "checker", Receipt::Accepted));
    assert_eq!(
        r[5],
        hop(
            "worker",
            "checker",
            Receipt::TurnFailed {
                error: aborted.error.to_string()
            }
        )
    );
    assert!(r.iter().all(|(_, to, _)| to != "END"));
}

#[tokio::test]
async fn an_agent_body_error_aborts_the_run() {
    let (wf, counters) = new_flow();
    let aborted = wf
        .run(Job {
            fail: true,
            ..Job::rounds(1)
        })
        .await
        .expect_err("the worker fails");
    assert_eq!(
        aborted.error,
        RunError::AgentFailed {
            agent: "worker",
            error: Reject::because("the worker gave up"),
        }
    );
    // It was accepted (its body ran) and handed nothing on; the failed
    // turn is recorded.
    assert_eq!(
        route(&aborted.transcript),
        [
            hop("START", "planner", Receipt::Accepted),
            hop("planner", "worker", Receipt::Accepted),
            hop(
                "planner",
                "worker",
                Receipt::TurnFailed {
                    error: "agent `worker` failed: the worker gave up".into()
                }
            ),
        ]
    );
    assert_eq!(counters.runs(), [1, 1, 0]);
}

#[tokio::test]
async fn a_used_up_loop_bound_rejects_the_transfer() {
    let (wf, counters) = new_flow();
    // Two send-backs are allowed (`worker(max = 2)`), the third is not.
    assert!(wf.run(Job::rounds(2)).await.is_ok());
    let (wf, counters_3) = new_flow();
    let aborted = wf.run(Job::rounds(3)).await.expect_err("bound of 2");
    let bound = RejectReason::LoopBound { bound: 2 };
    assert_rejected(&aborted, "checker", "worker", bound);
    let r = route(&aborted.transcript);
    assert_eq!(r.len(), 8);
    assert!(r[..7].iter().all(|(_, _, rc)| *rc == Receipt::Accepted));
    // The worker did not run a fourth time.
    assert_eq!(counters.runs(), [1, 3, 3]);
    assert_eq!(counters_3.runs(), [1, 3, 3]);
    // The rejected payload is recorded anyway: the witness keeps what was sent.
    let last = aborted.transcript.payload(7).unwrap();
    assert_eq!(json(&last)["remaining"], 0);
}

#[tokio::test]
async fn the_hop_cap_rejects_the_transfer_past_it() {
    let counters = Arc::new(Counters::default());
    let wf = flow::Workflow::new((), counters.clone()).with_max_hops(2);
    assert_eq!(wf.max_hops(), 2);
    let job = Job {
        expires: Expiry::AtHop(2),
        ..Job::rounds(2)
    };
    let aborted = wf.run(job).await.expect_err("cap of 2 turns");
    assert_eq!(
        aborted.error,
        RunError::Rejected {
            from: "worker",
            to: "checker",
            reason: RejectReason::HopCap { max_hops: 2 },
        }
    );
    assert_eq!(
        route(&aborted.transcript),
        [
            hop("START", "planner", Receipt::Accepted),
            hop("planner", "worker", Receipt::Accepted),
            hop(
                "worker",
                "checker",
                rejected(RejectReason::HopCap { max_hops: 2 })
            ),
        ]
    );
    assert_eq!(counters.runs(), [1, 1, 0]);

    // A cap of 0 rejects the workflow input itself.
    let wf = flow::Workflow::new((), counters.clone()).with_max_hops(0);
    let aborted = wf.run(Job::rounds(0)).await.expect_err("cap of 0");
    assert_eq!(
        route(&aborted.transcript),
        [hop(
            "START",
            "planner",
            rejected(RejectReason::HopCap { max_hops: 0 })
        )]
    );
    assert_eq!(counters.runs(), [1, 1, 0]);

    // The cap can be lowered, never raised past the computed bound.
    let wf = flow::Workflow::new((), counters).with_max_hops(1_000);
    assert_eq!(wf.max_hops(), flow::MAX_HOPS);
}

#[tokio::test]
async fn an_expired_scope_rejects_the_transfer() {
    // Valid up to and including hop 0: the worker receives at hop 1.
    let (wf, counters) = new_flow();
    let aborted = wf
        .run(Job {
            expires: Expiry::AtHop(0),
            ..Job::rounds(0)
        })
        .await
        .expect_err("the scope expired at hop 0");
    let reason = RejectReason::ScopeExpired {
        authority: "Work".into(),
    };
    assert_rejected(&aborted, "planner", "worker", reason);
    assert_eq!(counters.runs(), [1, 0, 0]);

    // Built with `Scope::until_hop`, and checked on the wire form too.
    let mut task = flow::first_task(&Job::rounds(0));
    task.scope = task.scope.until_hop(0);
    assert_eq!(task.scope.expires, Expiry::AtHop(0));
    assert!(
        serde_json::to_string(&task)
            .unwrap()
            .contains(r#""scope":{"authority":"Work","expires":{"at_hop":0}}"#)
    );

    // Valid up to and including hop 1: accepted, and the worker's turn
    // runs; its lease to the checker lasts as long as its own, so the
    // checker's receipt at hop 2 finds it expired.
    let (wf, counters) = new_flow();
    let aborted = wf
        .run(Job {
            expires: Expiry::AtHop(1),
            ..Job::rounds(0)
        })
        .await
        .expect_err("the worker's lease ends at hop 1");
    assert_rejected(
        &aborted,
        "worker",
        "checker",
        RejectReason::ScopeExpired {
            authority: "Judge".into(),
        },
    );
    assert_eq!(counters.runs(), [1, 1, 0]);

    // A wall-clock expiry in the past: rejected too.
    let (wf, counters) = new_flow();
    let aborted = wf
        .run(Job {
            expires: Expiry::AtUnixMs(1),
            ..Job::rounds(0)
        })
        .await
        .expect_err("the scope expired in 1970");
    assert!(matches!(
        rejection(&aborted.error).2,
        RejectReason::ScopeExpired { .. }
    ));
    assert_eq!(counters.runs(), [1, 0, 0]);
}

#[tokio::test]
async fn a_stop_condition_already_met_rejects_the_transfer() {
    // Stop once the run reaches hop 1: the worker would start at hop 1.
    let (wf, counters) = new_flow();
    let aborted = wf
        .run(Job {
            stop: StopWhen::at_hop(1).or_when("the customer cancels"),
            ..Job::rounds(0)
        })
        .await
        .expect_err("hop 1 is reached");
    let reason = RejectReason::StopConditionMet {
        condition: "hop 1 reached".into(),
    };
    assert_rejected(&aborted, "planner", "worker", reason);
    assert_eq!(counters.runs(), [1, 0, 0]);

    // Not met yet at hop 1: accepted. A condition in words is never met by
    // the executor.
    let (wf, counters) = new_flow();
    wf.run(Job {
        stop: StopWhen::at_hop(2).or_when("the customer cancels"),
        ..Job::rounds(0)
    })
    .await
    .expect("hop 2 is not reached at the receipt");
    assert_eq!(counters.runs(), [1, 1, 1]);

    // A deadline in the past.
    let (wf, counters) = new_flow();
    let aborted = wf
        .run(Job {
            stop: StopWhen::any([workflow_core::StopCondition::DeadlineUnixMs { ms: 1 }]),
            ..Job::rounds(0)
        })
        .await
        .expect_err("the deadline passed");
    assert!(matches!(
        rejection(&aborted.error).2,
        RejectReason::StopConditionMet { .. }
    ));
    assert_eq!(counters.runs(), [1, 0, 0]);
}

#[tokio::test(start_paused = true)]
async fn an_agent_past_its_timeout_aborts_the_run() {
    let (wf, counters) = new_flow();
    let started = tokio::time::Instant::now();
    let aborted = wf
        .run(Job {
            sleep_ms: 1_000,
            ..Job::rounds(0)
        })
        .await
        .expect_err("the worker sleeps past 50 ms");
    assert_eq!(
        aborted.error,
        RunError::Timeout {
            agent: "worker",
            after_ms: 50,
        }
    );
    // Cut at the timeout, not after the body's sleep.
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(50) && waited < Duration::from_millis(1_000),
        "{waited:?}"
    );
    // The body had started (accepted, counted), and handed nothing on.
    assert_eq!(counters.runs(), [1, 1, 0]);
    assert_eq!(
        route(&aborted.transcript),
        [
            hop("START", "planner", Receipt::Accepted),
            hop("planner", "worker", Receipt::Accepted),
            hop(
                "planner",
                "worker",
                Receipt::TurnFailed {
                    error: aborted.error.to_string()
                }
            ),
        ]
    );
    assert_eq!(
        <flow::worker::Agent as workflow_core::Agent<flow::Spec>>::TIMEOUT,
        Some(Duration::from_millis(50))
    );

    // Under the timeout: the run completes.
    let (wf, counters) = new_flow();
    let done = wf
        .run(Job {
            sleep_ms: 40,
            ..Job::rounds(0)
        })
        .await
        .expect("40 ms is within 50 ms");
    assert_eq!(done.output.done, 1);
    assert_eq!(counters.runs(), [1, 1, 1]);
}

#[tokio::test]
async fn a_session_walks_the_run_turn_by_turn() {
    let (wf, counters) = new_flow();
    let mut session = wf.start(Job::rounds(1));
    // Before any step: the input is recorded, its receipt pending.
    assert_eq!(session.next_agent(), Some("planner"));
    assert_eq!(session.hops(), 0);
    assert_eq!(session.transcript().len(), 1);
    assert_eq!(session.transcript().receipt(0), Some(Receipt::Pending));
    assert_eq!(counters.runs(), [0, 0, 0]);

    let expected = [
        ("planner", "worker", [1, 0, 0]),
        ("worker", "checker", [1, 1, 0]),
        ("checker", "worker", [1, 1, 1]),
        ("worker", "checker", [1, 2, 1]),
    ];
    for (i, (agent, next, runs)) in expected.into_iter().enumerate() {
        assert_eq!(session.next_agent(), Some(agent));
        let step = session.step().await.expect("a turn");
        assert_eq!(step, Step::Continue { next });
        assert_eq!(session.next_agent(), Some(next));
        assert_eq!(session.hops() as usize, i + 1);
        assert_eq!(counters.runs(), runs, "after {agent}");
        let t = session.transcript();
        assert_eq!(t.len(), i + 2);
        assert_eq!(t.receipt(i), Some(Receipt::Accepted));
        // The transfer just made waits for its receiver's receipt.
        assert_eq!(t.receipt(i + 1), Some(Receipt::Pending));
        let last = t.record(i + 1).unwrap();
        assert_eq!(
            (last.from.to_string(), last.to.to_string()),
            (agent.to_owned(), next.to_owned())
        );
    }
    assert_eq!(session.next_agent(), Some("checker"));
    let last = session.step().await.expect("the last turn");
    assert_eq!(last, Step::Finished(Tally { done: 2 }));
    assert_eq!(session.next_agent(), None);
    assert_eq!(session.hops(), 5);
    let t = session.transcript();
    assert_eq!(t.len(), 6);
    assert_eq!(
        route(t).last().unwrap(),
        &hop("checker", "END", Receipt::Accepted)
    );
    // After the end.
    assert_eq!(session.step().await, Err(RunError::Finished));
    assert_eq!(session.step().await, Err(RunError::Finished));
    assert_eq!(counters.runs(), [1, 2, 2]);
    let finished = session.finish().await.expect_err("nothing left to run");
    assert_eq!(finished.error, RunError::Finished);
    assert_eq!(finished.transcript.len(), 6);
}

#[tokio::test]
async fn a_session_can_step_then_finish() {
    let (wf, counters) = new_flow();
    let mut session = wf.start(Job::rounds(2));
    session.step().await.unwrap();
    session.step().await.unwrap();
    assert_eq!(counters.runs(), [1, 1, 0]);
    let done = session.finish().await.expect("the rest runs");
    assert_eq!(done.output.done, 3);
    assert_eq!(done.transcript.len(), 8);
    assert_eq!(counters.runs(), [1, 3, 3]);
}

#[tokio::test]
async fn a_session_stops_at_a_rejection() {
    let (wf, counters) = new_flow();
    let mut session = wf.start(Job {
        amount: -5,
        ..Job::rounds(0)
    });
    assert_eq!(session.step().await, Ok(Step::Continue { next: "worker" }));
    let err = session.step().await.expect_err("the worker rejects");
    assert!(matches!(
        rejection(&err).2,
        RejectReason::PreCondition { .. }
    ));
    assert_eq!(session.next_agent(), None);
    assert_eq!(session.hops(), 1);
    assert!(matches!(
        session.transcript().receipt(1),
        Some(Receipt::Rejected { .. })
    ));
    assert_eq!(counters.runs(), [1, 0, 0]);
}

#[tokio::test]
async fn max_hops_is_the_bound_of_the_loops() {
    // The longest run: planner -> worker -> checker, then worker -> checker
    // again for each of the 2 uses of the loop back.
    assert_eq!(flow::MAX_HOPS, 3 + 2 * 2);
    // ping -> pong, then ping -> pong again for each of the 4 uses.
    assert_eq!(pingpong::MAX_HOPS, 2 + 2 * 4);
    assert_eq!(flow::GRAPH.max_hops, flow::MAX_HOPS);
    assert_eq!(pingpong::GRAPH.max_hops, pingpong::MAX_HOPS);
    assert_eq!(
        flow::Workflow::new((), Arc::default()).max_hops(),
        flow::MAX_HOPS
    );

    // The bound is reached: a pong that is never satisfied uses every
    // allowed turn, then its fifth send-back is rejected by the loop bound.
    let wf = pingpong::Workflow::new((), ());
    let aborted = wf
        .run(pingpong::serve(0, u32::MAX))
        .await
        .expect_err("never satisfied");
    let bound = RejectReason::LoopBound { bound: 4 };
    assert_rejected(&aborted, "pong", "ping", bound);
    let last = aborted.transcript.records().unwrap().pop().unwrap();
    assert_eq!(last.hop, pingpong::MAX_HOPS);
    // A run that needs every allowed turn ends within the bound.
    let done = wf.run(pingpong::serve(0, 5)).await.expect("five hits");
    assert_eq!(done.output, 5);
    assert_eq!(done.transcript.records().unwrap().last().unwrap().hop, 10);

    // A declared `max_hops` lower than the computed bound (2) is the cap.
    assert_eq!(capped::MAX_HOPS, 1);
    let aborted = capped::Workflow::new((), ())
        .run(7)
        .await
        .expect_err("a cap of 1 turn");
    let cap = RejectReason::HopCap { max_hops: 1 };
    assert_rejected(&aborted, "first", "second", cap);
}

/// A delegation that expires on the wall clock while its receiver works.
#[workflow(entry = boss, output = u32, deps = Arc<Counters>)]
pub mod scoped {
    use super::*;

    /// Boss -> clerk: spend, within the time given.
    #[handoff]
    pub struct Errand {
        /// Spend.
        #[operation]
        pub op: Operation,
        /// The clerk's authority to spend, until a wall-clock time.
        #[authority]
        pub scope: Scope<authority::Spend>,
        /// None.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// None.
        #[stop]
        pub stop: StopWhen,
        /// How long the clerk dawdles before spending.
        pub dawdle_ms: u64,
    }

    /// The side effect that needs the `Spend` authority (counted as a
    /// worker run).
    #[tool(needs = Spend, effect = write)]
    async fn spend(amount: u32, counters: &Arc<Counters>) -> Result<u32, ToolError> {
        Ok(counters.worker.fetch_add(amount, Ordering::SeqCst) + amount)
    }

    /// Delegates `Spend` for `valid_ms` from now; the clerk dawdles 3x that
    /// when `valid_ms` is below 1 s.
    #[agent(owns = [Delegate], to = [clerk])]
    async fn boss(valid_ms: u64, cx: boss::Context<'_>) -> Result<boss::Next, Reject> {
        let now = workflow_core::Moment::at_hop(cx.hop()).unix_ms();
        Ok(boss::Next::Clerk(Errand {
            op: Operation::new("spend", "spend 1"),
            scope: cx.lease(authority::Spend).until_unix_ms(now + valid_ms),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            dawdle_ms: if valid_ms < 1_000 { valid_ms * 3 } else { 0 },
        }))
    }

    #[agent(owns = [Spend], tools = [spend], to = [END])]
    async fn clerk(errand: Errand, cx: clerk::Context<'_>) -> Result<clerk::Next, Reject> {
        tokio::time::sleep(Duration::from_millis(errand.dawdle_ms)).await;
        Ok(clerk::Next::End(cx.call(tools::spend, 1).await?))
    }
}

#[tokio::test]
async fn a_tool_call_within_the_scope_runs() {
    let counters = Arc::new(Counters::default());
    let wf = scoped::Workflow::new((), counters.clone());
    let done = wf.run(60_000).await.expect("a minute is plenty");
    assert_eq!(done.output, 1);
    assert_eq!(counters.runs(), [0, 1, 0]);
}

/// DESIGN.md section 4: the scope of a handoff is "checked at the receipt
/// and on every tool call". `Context::call` checks nothing: a tool that
/// `needs` an authority still runs after the scope delegating that
/// authority has expired mid-turn (the `Context` does not even know the
/// incoming scope).
#[tokio::test]
async fn a_tool_call_after_the_scope_expired_is_refused() {
    let counters = Arc::new(Counters::default());
    let wf = scoped::Workflow::new((), counters.clone());
    // Valid for 100 ms at the receipt; the clerk calls the tool at ~300 ms.
    let run = wf.run(100).await;
    assert_eq!(
        counters.runs(),
        [0, 0, 0],
        "the `Spend` side effect ran after the `Spend` scope expired"
    );
    let aborted = run.expect_err("the run completed on an expired scope");
    match &aborted.error {
        RunError::ToolFailed { agent, error } => {
            assert_eq!(*agent, "clerk");
            assert_eq!(error.kind, workflow_core::ToolErrorKind::OutOfScope);
        }
        other => panic!("unexpected error: {other}"),
    }
    // The refused call is recorded with the turn that made it.
    let (_, turn) = aborted
        .transcript
        .turns()
        .next()
        .expect("the clerk's turn is recorded");
    assert_eq!(turn.tool_calls.len(), 1);
    assert!(matches!(
        &turn.tool_calls[0].outcome,
        workflow_core::tool::ToolOutcome::Failed { error } if error.kind == workflow_core::ToolErrorKind::OutOfScope
    ));
    // Within the scope, the same call goes through.
    let counters = Arc::new(Counters::default());
    let wf = scoped::Workflow::new((), counters.clone());
    assert!(wf.run(60_000).await.is_ok());
    assert_eq!(counters.runs(), [0, 1, 0]);
}
