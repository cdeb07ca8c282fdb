//! Parallel branches, driven by hand: a `lead` fans out to up to sixteen
//! `worker`s (`Worker<0>` .. `Worker<15>`, one agent per branch), whose
//! outcomes a `judge` receives together, typed as `Branch<View>`.
//!
//! What is checked: the bodies run at the same time (a barrier every branch
//! must reach, and sixteen 10 ms sleeps that take 10 ms of the clock, not
//! 160); each branch has its own receipt and record; the hop cap and the
//! budget are shared by the branches; every outcome (done, rejected,
//! failed, timed out) reaches the join; the record keeps each branch's
//! lineage, verifies, and refuses an edit; a run cut inside a fan-out
//! resumes with the records of an uncut run.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::ledger::{Ledger, MemoryLedger, Tampering, VerifyError};
use workflow_core::parallel::{BranchBody, BranchTurn, ForkRun, run_branches};
use workflow_core::{
    Agent, AgentInfo, Branch, Budget, Condition, Context, EdgeInfo, Executor, Fork, ForkBranch,
    Granted, Graph, Lineage, Node, OnReject, Receipt, Reject, RejectReason, Route, RunError,
    Runtime, SchemaSet, Tool, ToolCallPermit, ToolError, Transition, Usage, Workflow,
};

/// What one branch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Behave {
    /// Waits until every branch told to wait has reached the barrier.
    Barrier,
    /// Sleeps this many milliseconds.
    Sleep(u64),
    /// Returns an error.
    Fail,
    /// Sleeps past the workers' timeout (200 ms).
    Hang,
    /// Refused by the workers' pre-condition: the body never runs.
    Refuse,
    /// Charges this many tokens to the run's budget.
    Spend(u64),
}

/// The lead's input: one behaviour per branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    pub branches: Vec<Behave>,
}

/// A branch's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Job {
    pub branch: u16,
    pub behave: Behave,
}

/// A branch's output: its view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct View {
    pub branch: u16,
    pub said: String,
}

/// The join's input: every branch's outcome, in branch order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Joined {
    pub views: Vec<Branch<View>>,
}

/// The run's output: each branch's outcome as the judge saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    pub outcomes: Vec<String>,
}

/// What the branches share with the test.
pub struct Deps {
    barrier: tokio::sync::Barrier,
    /// Worker bodies that ran.
    ran: AtomicU32,
    /// Charges the budget refused while the branches ran.
    refused_charges: AtomicU32,
}

impl Deps {
    fn new(waiting: usize) -> Arc<Deps> {
        Arc::new(Deps {
            barrier: tokio::sync::Barrier::new(waiting),
            ran: AtomicU32::new(0),
            refused_charges: AtomicU32::new(0),
        })
    }
}

fn name_of<T: JsonSchema>() -> Cow<'static, str> {
    T::schema_name()
}

const MAX: usize = 16;
const LEAD: Node = Node::Agent(0);
const JUDGE: Node = Node::Agent(MAX as u16 + 1);
const fn worker_node(i: usize) -> Node {
    Node::Agent(i as u16 + 1)
}

const fn agent(
    name: &'static str,
    input: &'static str,
    schema: fn() -> Cow<'static, str>,
) -> AgentInfo {
    AgentInfo {
        name,
        input,
        input_schema: schema,
        owns: &[],
        tools: &[],
        timeout_ms: None,
        pre: &[],
        post: &[],
        on_reject: OnReject::Abort,
    }
}

const fn worker(name: &'static str) -> AgentInfo {
    AgentInfo {
        timeout_ms: Some(200),
        pre: &[REFUSE],
        ..agent(name, "Job", name_of::<Job>)
    }
}

const REFUSE: Condition = Condition {
    expr: "job.behave != Behave::Refuse",
    message: "a job this worker refuses",
};

const fn edge(
    from: Node,
    to: Node,
    payload: &'static str,
    schema: fn() -> Cow<'static, str>,
) -> EdgeInfo {
    EdgeInfo {
        from,
        to,
        payload,
        payload_schema: schema,
        bound: None,
    }
}

macro_rules! table {
    ($($i:literal)*) => {
        static GRAPH: Graph = Graph {
            name: "panel",
            agents: &[
                agent("lead", "Plan", name_of::<Plan>),
                $(worker(concat!("worker", $i)),)*
                agent("judge", "Joined", name_of::<Joined>),
            ],
            edges: &[
                edge(Node::Start, LEAD, "Plan", name_of::<Plan>),
                $(edge(LEAD, worker_node($i), "Job", name_of::<Job>),)*
                $(edge(worker_node($i), JUDGE, "View", name_of::<View>),)*
                edge(LEAD, JUDGE, "Joined", name_of::<Joined>),
                edge(JUDGE, Node::End, "Verdict", name_of::<Verdict>),
            ],
            tools: &[],
            input: "Plan",
            output: "Verdict",
            max_hops: MAX as u32 + 2,
        };
        static BRANCHES: [ForkBranch; MAX] = [$(ForkBranch {
            start: 1 + $i,
            outcome: 1 + MAX as u16 + $i,
        }),*];

        /// Starts branch `i` with the worker of that branch.
        fn start<'x>(
            run: &mut Runtime<'x, Panel>,
            fork: &mut ForkRun,
            i: u16,
            job: Job,
        ) -> Result<Box<dyn Lane<'x> + 'x>, RunError> {
            match i {
                $($i => Ok(Box::new(run.branch::<Worker<$i>>(fork, i, job)?)),)*
                _ => Err(RunError::Protocol(format!("no branch {i}"))),
            }
        }
    };
}
table!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);

const JOIN_EDGE: u16 = 1 + 2 * MAX as u16;
const JUDGE_TO_END: u16 = JOIN_EDGE + 1;

/// The fan-out to every branch the plan names.
static FORK: Fork = Fork {
    from: 0,
    branches: &BRANCHES,
    join: JOIN_EDGE,
};

/// One fan-out per number of branches (the first `n` of the table).
fn fork_of(n: usize) -> &'static Fork {
    static FORKS: std::sync::OnceLock<Vec<Fork>> = std::sync::OnceLock::new();
    &FORKS.get_or_init(|| {
        (0..=MAX)
            .map(|n| Fork {
                branches: &BRANCHES[..n],
                ..FORK
            })
            .collect()
    })[n]
}

pub struct Panel;

pub enum State {
    Lead(Plan),
    Fork(Vec<Job>),
    Judge(Joined),
}

pub struct Lead;
pub struct Worker<const N: u16>;
pub struct Judge;

/// Where the lead goes: every branch at once.
pub struct LeadNext(Vec<Job>);
/// Where a worker goes: its view, to the join.
pub struct WorkerNext(View);
/// Where the judge goes: the end.
pub struct JudgeNext(Verdict);

impl Route<Panel> for LeadNext {
    fn route(self, _run: &mut Runtime<'_, Panel>) -> Result<Transition<Panel>, RunError> {
        // Nothing recorded yet: the fork's turn records each branch.
        Ok(Transition::To(State::Fork(self.0)))
    }
}

impl Route<Panel> for WorkerNext {
    fn route(self, _run: &mut Runtime<'_, Panel>) -> Result<Transition<Panel>, RunError> {
        Err(RunError::Protocol(
            "a branch's output is settled, not routed".into(),
        ))
    }
}

impl Route<Panel> for JudgeNext {
    fn route(self, run: &mut Runtime<'_, Panel>) -> Result<Transition<Panel>, RunError> {
        run.end(JUDGE_TO_END, &self.0, None)?;
        Ok(Transition::End(self.0))
    }
}

impl Agent<Panel> for Lead {
    const INDEX: u16 = 0;
    type Input = Plan;
    type Next = LeadNext;
    async fn run(plan: Plan, _cx: Context<'_, Panel, Self>) -> Result<LeadNext, Reject> {
        let jobs = plan.branches.iter().enumerate();
        Ok(LeadNext(
            jobs.map(|(i, &behave)| Job {
                branch: i as u16,
                behave,
            })
            .collect(),
        ))
    }
}

impl<const N: u16> Agent<Panel> for Worker<N> {
    const INDEX: u16 = N + 1;
    const TIMEOUT: Option<Duration> = Some(Duration::from_millis(200));
    type Input = Job;
    type Next = WorkerNext;
    fn pre(job: &Job, _cx: &Context<'_, Panel, Self>) -> Result<(), &'static Condition> {
        if job.behave == Behave::Refuse {
            return Err(&REFUSE);
        }
        Ok(())
    }
    const HAS_POST: bool = false;
    async fn run(job: Job, cx: Context<'_, Panel, Self>) -> Result<WorkerNext, Reject> {
        cx.call(Act, job.behave).await?;
        let said = match job.behave {
            Behave::Barrier => "met the others".to_owned(),
            Behave::Sleep(ms) => format!("slept {ms} ms"),
            Behave::Fail => return Err(Reject::because("this branch fails")),
            Behave::Hang | Behave::Refuse => "never".to_owned(),
            Behave::Spend(tokens) => {
                // Charged after every branch has started (`act` waited).
                if cx.charge(Usage::tokens(tokens, 0)).is_err() {
                    cx.call(Tally, ()).await?;
                }
                format!("spent {tokens}")
            }
        };
        Ok(WorkerNext(View {
            branch: job.branch,
            said,
        }))
    }
}

/// Does what a branch was told (waits, sleeps), counting the bodies that ran.
#[derive(Clone, Copy)]
pub struct Act;
/// Counts a charge the budget refused.
#[derive(Clone, Copy)]
pub struct Tally;

impl Tool<Panel> for Act {
    const NAME: &'static str = "act";
    type Input = Behave;
    type Output = u32;
    async fn call(
        self,
        behave: Behave,
        deps: &Arc<Deps>,
        _: ToolCallPermit<Self>,
    ) -> Result<u32, ToolError> {
        deps.ran.fetch_add(1, Ordering::SeqCst);
        match behave {
            Behave::Barrier | Behave::Spend(_) => {
                deps.barrier.wait().await;
            }
            Behave::Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            Behave::Hang => tokio::time::sleep(Duration::from_secs(60)).await,
            Behave::Fail | Behave::Refuse => {}
        }
        Ok(1)
    }
}

impl Tool<Panel> for Tally {
    const NAME: &'static str = "tally";
    type Input = ();
    type Output = u32;
    async fn call(
        self,
        (): (),
        deps: &Arc<Deps>,
        _: ToolCallPermit<Self>,
    ) -> Result<u32, ToolError> {
        Ok(deps.refused_charges.fetch_add(1, Ordering::SeqCst) + 1)
    }
}

impl<const N: u16> Granted<Act> for Worker<N> {}
impl<const N: u16> Granted<Tally> for Worker<N> {}

impl Agent<Panel> for Judge {
    const INDEX: u16 = MAX as u16 + 1;
    type Input = Joined;
    type Next = JudgeNext;
    async fn run(joined: Joined, _cx: Context<'_, Panel, Self>) -> Result<JudgeNext, Reject> {
        let outcomes = joined
            .views
            .iter()
            .map(|b| match b {
                Branch::Done(view) => format!("done: {}", view.said),
                other => other.to_string(),
            })
            .collect();
        Ok(JudgeNext(Verdict { outcomes }))
    }
}

/// A started branch, whatever its worker: run, then settled.
pub trait Lane<'x>: Send {
    fn body(&mut self) -> &mut dyn BranchBody;
    fn settle(
        self: Box<Self>,
        run: &mut Runtime<'x, Panel>,
        fork: &mut ForkRun,
    ) -> Result<Branch<View>, RunError>;
}

impl<'x, const N: u16> Lane<'x> for BranchTurn<'x, Panel, Worker<N>> {
    fn body(&mut self) -> &mut dyn BranchBody {
        self
    }
    fn settle(
        self: Box<Self>,
        run: &mut Runtime<'x, Panel>,
        fork: &mut ForkRun,
    ) -> Result<Branch<View>, RunError> {
        run.settle::<Worker<N>, View>(fork, *self, |WorkerNext(view)| view, |_| None)
    }
}

impl Workflow for Panel {
    type Input = Plan;
    type Output = Verdict;
    type Root = ();
    type Deps = Arc<Deps>;
    type State = State;
    const GRAPH: &'static Graph = &GRAPH;

    fn start(plan: Plan, run: &mut Runtime<'_, Self>) -> Result<State, RunError> {
        run.handoff(0, &plan, None)?;
        Ok(State::Lead(plan))
    }

    async fn turn<'a, 'x>(
        state: State,
        run: &'a mut Runtime<'x, Self>,
    ) -> Result<Transition<Self>, RunError> {
        match state {
            State::Lead(plan) => run.turn::<Lead>(plan).await,
            State::Judge(joined) => run.turn::<Judge>(joined).await,
            State::Fork(jobs) => {
                let mut fork = run.fork(fork_of(jobs.len()))?;
                let mut lanes = Vec::with_capacity(jobs.len());
                for job in jobs {
                    lanes.push(start(run, &mut fork, job.branch, job)?);
                }
                let mut bodies: Vec<&mut dyn BranchBody> =
                    lanes.iter_mut().map(|lane| lane.body()).collect();
                run_branches(&mut bodies).await;
                let mut views = Vec::with_capacity(lanes.len());
                for lane in lanes {
                    views.push(lane.settle(run, &mut fork)?);
                }
                let joined = Joined { views };
                run.join::<Judge>(fork, &joined)?;
                Ok(Transition::To(State::Judge(joined)))
            }
        }
    }

    fn restore(agent: u16, payload: &workflow_core::RecordedPayload<'_>) -> Result<State, String> {
        match agent {
            0 => payload.decode().map(State::Lead),
            _ => Err(format!("agent {agent} is not resumed in these tests")),
        }
    }

    /// The jobs alone do not say how many branches the plan had: the
    /// lead's turn runs again, its recorded branches checked against it.
    fn restore_fork(
        _agent: u16,
        _inputs: &[workflow_core::RecordedPayload<'_>],
    ) -> Result<Option<State>, String> {
        Ok(None)
    }

    fn agent_of(state: &State) -> u16 {
        match state {
            State::Lead(_) => 0,
            State::Fork(_) => 1,
            State::Judge(_) => MAX as u16 + 1,
        }
    }

    fn schemas(set: &mut SchemaSet) {
        set.add::<Plan>();
    }
}

fn plan(branches: &[Behave]) -> Plan {
    Plan {
        branches: branches.to_vec(),
    }
}

/// Runs `plan`, failing the test rather than hanging when the branches do
/// not run at the same time (a barrier no branch passes alone).
async fn run(
    wf: &Executor<Panel>,
    plan: Plan,
) -> Result<workflow_core::Completed<Verdict>, workflow_core::Aborted> {
    tokio::time::timeout(Duration::from_secs(30), wf.run(plan))
        .await
        .expect("the branches did not all run at the same time")
}

/// `(from, to, receipt)` of each record, with its lineage.
fn records(t: &workflow_core::Transcript) -> Vec<(String, String, Receipt, Option<Lineage>)> {
    t.records()
        .unwrap()
        .into_iter()
        .map(|r| (r.from.to_string(), r.to.to_string(), r.receipt, r.lineage))
        .collect()
}

#[tokio::test]
async fn sixteen_branches_each_waiting_for_all_the_others_all_finish() {
    let deps = Deps::new(MAX);
    let wf = Executor::<Panel>::new((), deps.clone());
    let done = run(&wf, plan(&[Behave::Barrier; MAX])).await.unwrap();
    assert_eq!(deps.ran.load(Ordering::SeqCst), MAX as u32);
    assert_eq!(
        done.output.outcomes,
        vec!["done: met the others".to_owned(); MAX]
    );
    // START -> lead, 16 branch starts, 16 outcomes, the join, judge -> END.
    assert_eq!(done.transcript.len(), 1 + MAX + MAX + 1 + 1);
}

#[tokio::test(start_paused = true)]
async fn sixteen_branches_sleeping_10_ms_take_10_ms_not_160() {
    let wf = Executor::<Panel>::new((), Deps::new(1));
    let started = tokio::time::Instant::now();
    let done = run(&wf, plan(&[Behave::Sleep(10); MAX])).await.unwrap();
    // The paused clock advances only when every task waits: it moved by the
    // longest sleep, once, since all sixteen slept at the same time.
    assert_eq!(started.elapsed(), Duration::from_millis(10));
    assert_eq!(
        done.output.outcomes,
        vec!["done: slept 10 ms".to_owned(); MAX]
    );
}

#[tokio::test(start_paused = true)]
async fn every_branch_outcome_reaches_the_join_typed_and_recorded() {
    let wf = Executor::<Panel>::new((), Deps::new(1));
    let branches = [Behave::Sleep(1), Behave::Fail, Behave::Hang, Behave::Refuse];
    let done = run(&wf, plan(&branches)).await.unwrap();
    assert_eq!(
        done.output.outcomes,
        [
            "done: slept 1 ms",
            "failed: agent `worker1` failed: this branch fails",
            "timed out after 200 ms",
            "rejected: pre-condition `job.behave != Behave::Refuse` failed: a job this worker refuses",
        ]
    );
    let accepted = Receipt::Accepted;
    let start = |branch| Some(Lineage::Start { fork: 0, branch });
    let outcome = |branch, parent| {
        Some(Lineage::Outcome {
            fork: 0,
            branch,
            parent,
        })
    };
    let failed = |error: &str| Receipt::TurnFailed {
        error: error.into(),
    };
    let got = records(&done.transcript);
    let want = vec![
        ("START", "lead", accepted.clone(), None),
        ("lead", "worker0", accepted.clone(), start(0)),
        ("lead", "worker1", accepted.clone(), start(1)),
        ("lead", "worker2", accepted.clone(), start(2)),
        (
            "lead",
            "worker3",
            Receipt::Rejected {
                reason: RejectReason::PreCondition {
                    condition: "job.behave != Behave::Refuse".into(),
                    message: "a job this worker refuses".into(),
                },
            },
            start(3),
        ),
        ("worker0", "judge", accepted.clone(), outcome(0, 1)),
        (
            "lead",
            "worker1",
            failed("agent `worker1` failed: this branch fails"),
            outcome(1, 2),
        ),
        (
            "lead",
            "worker2",
            failed("agent `worker2` timed out after 200 ms"),
            outcome(2, 3),
        ),
        (
            "lead",
            "judge",
            accepted.clone(),
            Some(Lineage::Join {
                fork: 0,
                heads: vec![5, 6, 7, 4],
            }),
        ),
        ("judge", "END", accepted, None),
    ];
    let want: Vec<_> = want
        .into_iter()
        .map(|(f, t, r, l)| (f.to_owned(), t.to_owned(), r, l))
        .collect();
    assert_eq!(got, want);
    // The join's payload holds every outcome, tagged with its kind.
    let joined: serde_json::Value =
        serde_json::from_str(&done.transcript.payload(8).unwrap()).unwrap();
    let kinds: Vec<&str> = joined["views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["done", "failed", "timed_out", "rejected"]);
}

#[tokio::test]
async fn the_hop_cap_is_shared_by_the_branches_and_stops_the_run_at_the_join() {
    let deps = Deps::new(1);
    // The lead's turn and 9 branches fit under a cap of 10.
    let wf = Executor::<Panel>::new((), deps.clone()).with_max_hops(10);
    let aborted = run(&wf, plan(&[Behave::Sleep(0); MAX])).await.unwrap_err();
    assert_eq!(deps.ran.load(Ordering::SeqCst), 9);
    let capped = RejectReason::HopCap { max_hops: 10 };
    assert!(
        matches!(&aborted.error, RunError::Rejected { to: "judge", reason, .. } if *reason == capped),
        "{}",
        aborted.error
    );
    let refused = records(&aborted.transcript)
        .into_iter()
        .filter(|(_, _, r, l)| {
            matches!(l, Some(Lineage::Start { .. }))
                && *r
                    == Receipt::Rejected {
                        reason: capped.clone(),
                    }
        })
        .count();
    assert_eq!(refused, MAX - 9);
}

#[tokio::test]
async fn the_budget_is_shared_by_branches_running_at_the_same_time() {
    let deps = Deps::new(3);
    let wf = Executor::<Panel>::new((), deps.clone()).with_budget(Budget {
        tokens: Some(100),
        ..Budget::default()
    });
    // 40 tokens each: under the budget alone, over it together.
    let aborted = run(&wf, plan(&[Behave::Spend(40); 3])).await.unwrap_err();
    // Whichever charged last was refused, while all three were running.
    assert_eq!(deps.refused_charges.load(Ordering::SeqCst), 1);
    // The branch that took the run over its budget failed (by branch order:
    // the third), and the join's receipt stopped the run.
    let outcome = records(&aborted.transcript)
        .into_iter()
        .find(|(_, _, _, l)| matches!(l, Some(Lineage::Outcome { branch: 2, .. })))
        .unwrap();
    assert!(
        matches!(&outcome.2, Receipt::TurnFailed { error } if error.contains("budget")),
        "{:?}",
        outcome.2
    );
    assert!(
        matches!(
            &aborted.error,
            RunError::Rejected {
                to: "judge",
                reason: RejectReason::BudgetExhausted { .. },
                ..
            }
        ),
        "{}",
        aborted.error
    );
}

#[tokio::test]
async fn a_fan_out_record_verifies_and_an_edited_lineage_does_not() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = Executor::<Panel>::new((), Deps::new(1)).with_ledger(ledger.clone());
    let done = run(
        &wf,
        plan(&[Behave::Sleep(0), Behave::Fail, Behave::Sleep(0)]),
    )
    .await
    .unwrap();
    let run_id = done.transcript.run_id();
    ledger.verify_run(run_id).unwrap();
    let stored = ledger.records(run_id).unwrap();
    let lineage: Vec<_> = stored.iter().map(|r| r.lineage.clone()).collect();
    assert_eq!(
        lineage,
        done.transcript
            .records()
            .unwrap()
            .into_iter()
            .map(|r| r.lineage)
            .collect::<Vec<_>>()
    );
    // A branch's parent moved to another record: the hash says so.
    let mut edited = stored.clone();
    edited[5].lineage = Some(Lineage::Outcome {
        fork: 0,
        branch: 0,
        parent: 2,
    });
    ledger.replace(run_id, edited);
    assert_eq!(
        ledger.verify_run(run_id),
        Err(VerifyError::Tampered(Tampering::Edited { seq: 5 }))
    );
    // A branch's outcome removed: a gap.
    let mut removed = stored.clone();
    removed.remove(6);
    ledger.replace(run_id, removed);
    assert_eq!(
        ledger.verify_run(run_id),
        Err(VerifyError::Tampered(Tampering::Gap {
            expected: 6,
            found: 7
        }))
    );
    // Cut after the branches: the head says more.
    let mut cut = stored;
    cut.truncate(8);
    ledger.replace(run_id, cut);
    assert!(matches!(
        ledger.verify_run(run_id),
        Err(VerifyError::Tampered(Tampering::Truncated { last: 7, .. }))
    ));
}

#[tokio::test]
async fn a_run_cut_inside_a_fan_out_resumes_with_the_records_of_an_uncut_run() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = Executor::<Panel>::new((), Deps::new(1)).with_ledger(ledger.clone());
    let done = run(&wf, plan(&[Behave::Sleep(0), Behave::Sleep(0)]))
        .await
        .unwrap();
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    // #0 the plan, #1 #2 the starts, #3 #4 the outcomes, #5 the join.
    assert_eq!(whole.len(), 7);
    // Cut after each record inside the fan-out: after the first start,
    // after both, after the first outcome, after both. The tool calls are
    // journaled as the crash left them: none before every start is
    // recorded (the bodies run after), then each branch's under the outcome
    // it was to take, bound to its start.
    for cut in 2..=5 {
        let crashed = Arc::new(MemoryLedger::new());
        for r in whole.iter().take(cut) {
            crashed.append(r).unwrap();
        }
        for turn_seq in (1..8).filter(|_| cut >= 3) {
            for entry in ledger.tool_calls(run_id, turn_seq).unwrap() {
                crashed.append_tool_call(run_id, turn_seq, &entry).unwrap();
            }
        }
        // Not tampering: the journal of a branch cut mid-fan-out is bound
        // to its start.
        crashed.verify_run(run_id).unwrap();
        let deps = Deps::new(1);
        let wf = Executor::<Panel>::new((), deps.clone()).with_ledger(crashed.clone());
        let resumed = wf
            .resume(run_id)
            .await
            .unwrap_or_else(|e| panic!("cut after {cut} records: {}", e.error));
        assert_eq!(resumed.output, done.output, "cut after {cut} records");
        // The same records as the uncut run's, in the same order: the kept
        // branches are not recorded again, the cut ones once.
        let again = crashed.records(run_id).unwrap();
        let view = |r: &workflow_core::ledger::LedgerRecord| {
            (
                r.seq,
                r.from.to_string(),
                r.to.to_string(),
                r.receipt.clone(),
                r.lineage.clone(),
                r.payload.clone(),
            )
        };
        assert_eq!(
            again.iter().map(view).collect::<Vec<_>>(),
            whole.iter().map(view).collect::<Vec<_>>(),
            "cut after {cut} records"
        );
        crashed.verify_run(run_id).unwrap();
        // Every branch's tool call journaled before the crash is served,
        // never made again; before the starts were all recorded no body
        // had run, and both run now.
        let ran = if cut == 2 { 2 } else { 0 };
        assert_eq!(
            deps.ran.load(Ordering::SeqCst),
            ran,
            "cut after {cut} records"
        );
    }
}

#[tokio::test]
async fn a_resumed_fan_out_runs_only_the_branches_without_a_recorded_outcome() {
    let ledger = Arc::new(MemoryLedger::new());
    let wf = Executor::<Panel>::new((), Deps::new(1)).with_ledger(ledger.clone());
    let done = run(
        &wf,
        plan(&[Behave::Sleep(0), Behave::Fail, Behave::Refuse, Behave::Hang]),
    )
    .await
    .unwrap();
    let run_id = done.transcript.run_id();
    let whole = ledger.records(run_id).unwrap();
    // #0 plan, #1-#4 starts (#3 refused), #5 #6 #7 outcomes (done, failed,
    // timed out), #8 join, #9 END. Cut after the first outcome, the
    // journal gone: branch 0 is kept, branches 1 and 3 run again, branch
    // 2 stays refused.
    assert_eq!(whole.len(), 10);
    let crashed = Arc::new(MemoryLedger::new());
    for r in whole.iter().take(6) {
        crashed.append(r).unwrap();
    }
    let deps = Deps::new(1);
    let wf = Executor::<Panel>::new((), deps.clone()).with_ledger(crashed.clone());
    let resumed = wf.resume(run_id).await.unwrap();
    assert_eq!(resumed.output, done.output);
    assert_eq!(
        resumed.output.outcomes,
        [
            "done: slept 0 ms",
            "failed: agent `worker1` failed: this branch fails",
            "rejected: pre-condition `job.behave != Behave::Refuse` failed: a job this worker refuses",
            "timed out after 200 ms",
        ]
    );
    // Branches 1 and 3 ran again; branch 0's outcome was read back.
    assert_eq!(deps.ran.load(Ordering::SeqCst), 2);
    crashed.verify_run(run_id).unwrap();
    assert_eq!(crashed.records(run_id).unwrap().len(), 10);
}
