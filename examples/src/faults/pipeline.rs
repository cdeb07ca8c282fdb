//! The bench most scenarios share: intake -> worker -> applier, the
//! shape of most pipelines (a request, a lookup, a write). The agents are
//! scripted: the run's [`Script`] (pinned with the root, so every agent
//! reads the same one and the record shows it) says which fault a
//! scenario injects; the tools' faults are in the [`Bench`] they run
//! against. The one write, `apply`, logs its effect to [`Effects`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

use super::Effects;

/// What the scripted agents do wrong in this run (all off: the clean run).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Script {
    /// The worker copies the customer's card number into the change's
    /// notes, at this path (`"card_number"`, `"customer.card_number"`).
    pub leak_at: Option<String>,
    /// The worker drops the intake's open question instead of resolving it.
    pub drop_question: bool,
    /// The worker delegates the applier's scope already expired: this many
    /// hops before the applier's hop, or (`expired_ms`) this many ms ago.
    pub expired_hops: Option<u32>,
    /// See `expired_hops`.
    pub expired_ms: Option<u64>,
    /// Tokens the worker's model spends (charged to the run's budget).
    pub tokens: u64,
    /// Bytes of context the worker hands on.
    pub context_bytes: u64,
    /// The worker's stop part holds only conditions stated in words.
    pub stop_in_words: bool,
    /// Rows the worker's plan changes (`None`: as many as asked).
    pub plan_rows: Option<u32>,
    /// The worker skips the lookup and claims its evidence anyway:
    /// uncited (`Some(false)`) or citing a call that was never made
    /// (`Some(true)`).
    pub skip_lookup: Option<bool>,
}

/// What the tools run against.
#[derive(Debug, Default)]
pub struct Bench {
    /// The side-effect log.
    pub effects: Effects,
    /// Whether an effect of `apply` in this run is authorized (the
    /// scenario decides: in a faulty run, none is).
    pub authorized: bool,
    /// The lookup's backend fails, and the tool masks the failure as an
    /// empty listing.
    pub masked_failure: bool,
    /// How long the lookup takes, in ms.
    pub lookup_ms: u64,
}

/// The workflow input.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// The account to change.
    pub account: String,
    /// How many rows the change touches.
    pub rows: u32,
}

/// A row the lookup lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Row {
    /// Its id.
    pub id: u32,
}

/// The `apply` request.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ApplyRequest {
    /// The account.
    pub account: String,
    /// How many rows change.
    pub rows: u32,
    /// Notes stored with the change.
    pub notes: serde_json::Value,
}

/// What `apply` did: the run's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Done {
    /// The account.
    pub account: String,
    /// How many rows changed.
    pub rows: u32,
}

/// Every change made is a usable result.
impl FailFast for Done {}

/// The question the intake always leaves open.
pub const QUESTION: &str = "which of the account's rows are live?";

#[workflow(entry = intake, output = Done, deps = Bench)]
pub mod pipeline {
    use super::*;

    /// Pinned for the run: the tenant, the row limit, no card numbers in
    /// any payload; and the agents' script.
    #[invariants(forbid = ["card_number"])]
    pub struct Root {
        /// The tenant.
        pub tenant: String,
        /// At most this many rows change in one run.
        pub max_rows: u32,
        /// The scripted agents' faults.
        pub script: Script,
    }

    /// Intake -> worker: look the account up.
    #[handoff]
    pub struct Task {
        /// The request, under the worker's authority.
        #[contract]
        pub contract: Contract<authority::Work>,
        /// The account.
        pub account: String,
        /// How many rows to change.
        pub rows: u32,
    }

    /// Worker -> applier: the change to make.
    #[handoff(max_bytes = 4096)]
    pub struct Change {
        /// What the applier is asked to do.
        #[operation]
        pub op: Operation,
        /// Under the applier's authority.
        #[authority]
        pub scope: Scope<authority::Apply>,
        /// What the worker found.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What it did not resolve.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When the applier stops.
        #[stop]
        pub stop: StopWhen,
        /// The account.
        pub account: String,
        /// How many rows change.
        pub rows: u32,
        /// Notes for the change's record.
        pub notes: serde_json::Value,
        /// What the worker read, handed on.
        pub context: String,
    }

    /// Lists the account's rows; a failing backend is masked as an empty
    /// listing when the bench says so (the fault), and an empty listing
    /// fails fast.
    #[tool(needs = Work, effect = read)]
    async fn lookup(account: String, bench: &Bench) -> Result<Vec<Row>, ToolError> {
        if bench.lookup_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(bench.lookup_ms)).await;
        }
        if bench.masked_failure {
            return Ok(Vec::new());
        }
        Ok((1..=account.len() as u32).map(|id| Row { id }).collect())
    }

    /// Refuses a change over the run's row limit before it is made.
    fn within_row_limit(request: &ApplyRequest, root: &Root) -> Result<(), String> {
        if request.rows > root.max_rows {
            return Err(format!(
                "the change touches {} rows, over the limit of {}",
                request.rows, root.max_rows
            ));
        }
        Ok(())
    }

    /// Makes the change: the one side effect of the pipeline.
    #[tool(needs = Apply, effect = write, guard = within_row_limit)]
    async fn apply(request: ApplyRequest, bench: &Bench) -> Result<Done, ToolError> {
        bench.effects.push(
            "apply",
            format!(
                "{} rows of {} (notes {})",
                request.rows, request.account, request.notes
            ),
            bench.authorized,
        );
        Ok(Done {
            account: request.account,
            rows: request.rows,
        })
    }

    /// Hands the request on, with the question it cannot answer.
    #[agent(owns = [Intake], to = [worker])]
    async fn intake(request: Request, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
        Ok(intake::Next::Worker(Task {
            contract: cx
                .contract(authority::Work, Operation::new("plan", "plan the change"))
                .evidence([Evidence::complete("customer", "asked for the change")])
                .open([Uncertainty::new(QUESTION, "changing a dead row loses data")])
                .build(),
            account: request.account,
            rows: request.rows,
        }))
    }

    /// Looks the rows up and plans the change, as scripted.
    #[agent(owns = [Work], tools = [lookup], to = [applier])]
    async fn worker(task: Task, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
        let script = &cx.root().script;
        let rows = match script.skip_lookup {
            None => cx.call(tools::lookup, task.account.clone()).await?,
            // The fault: no lookup, the rows taken from the task as if
            // listed.
            Some(_) => (1..=task.rows).map(|id| Row { id }).collect(),
        };
        cx.charge(Usage::tokens(script.tokens, 0))?;
        let mut evidence = vec![Evidence::complete(
            "lookup",
            format!("{} rows listed", rows.len()),
        )];
        // The question is resolved below (or, the fault, dropped): nothing
        // is left open.
        let open = Vec::new();
        if !script.drop_question {
            evidence
                .push(Evidence::complete("lookup", "every listed row is live").resolving(QUESTION));
        }
        let mut notes = serde_json::json!({"customer": {"account": task.account}});
        if let Some(path) = &script.leak_at {
            let (parent, key) = match path.split_once('.') {
                Some((parent, key)) => (Some(parent), key),
                None => (None, path.as_str()),
            };
            let target = match parent {
                Some(p) => &mut notes[p],
                None => &mut notes,
            };
            target[key] = serde_json::json!("4111 1111 1111 1111");
        }
        let mut scope = cx.lease(authority::Apply).until_hop(cx.hop() + 1);
        if let Some(back) = script.expired_hops {
            scope = scope.until_hop(cx.hop().saturating_sub(back));
        }
        if let Some(ms) = script.expired_ms {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            scope = scope.until_unix_ms(now.saturating_sub(ms));
        }
        let stop = if script.stop_in_words {
            StopWhen::any([]).or_when("the change looks done")
        } else {
            StopWhen::at_hop(cx.hop() + 2)
        };
        // Every claim cites the lookup this turn made (the fault: none was
        // made; the claims go uncited, or cite a call that never happened).
        let evidence = match script.skip_lookup {
            None => cx.cite_calls(evidence),
            Some(false) => evidence,
            Some(true) => {
                // "The lookup of the intake's turn": it made no call.
                let made_up = Citation::tool_call("lookup", 1, 0, "0".repeat(64));
                evidence
                    .into_iter()
                    .map(|e| e.citing(made_up.clone()))
                    .collect()
            }
        };
        Ok(worker::Next::Applier(Change {
            op: Operation::new("apply", "change the rows"),
            scope,
            evidence,
            open,
            stop,
            account: task.account,
            rows: script.plan_rows.unwrap_or(task.rows),
            notes,
            context: "r".repeat(script.context_bytes as usize),
        }))
    }

    /// Applies the change.
    #[agent(owns = [Apply], tools = [apply], to = [END])]
    async fn applier(change: Change, cx: applier::Context<'_>) -> Result<applier::Next, Reject> {
        let done = cx
            .call(
                tools::apply,
                ApplyRequest {
                    account: change.account,
                    rows: change.rows,
                    notes: change.notes,
                },
            )
            .await?;
        Ok(applier::Next::End(done))
    }
}

/// The request of every pipeline run: `rows` rows of account `acct-<n>`.
pub fn request(n: u64, rows: u32) -> Request {
    Request {
        account: format!("acct-{n}"),
        rows,
    }
}

/// The root of a pipeline run with `script`: at most 10 rows.
pub fn root(script: Script) -> pipeline::Root {
    pipeline::Root {
        tenant: "acme".into(),
        max_rows: 10,
        script,
    }
}

/// Runs the pipeline once on `executor`'s settings (`configure`), and
/// observes it: a completed run is correct when it changed the rows asked.
pub async fn observe(
    trial: super::Trial,
    script: Script,
    bench: Bench,
    configure: impl FnOnce(pipeline::Workflow) -> pipeline::Workflow,
) -> super::Observed {
    let mut rng = trial.stream(1);
    let rows = rng.between(1, 10) as u32;
    let input = request(rng.between(1, 999), rows);
    let account = input.account.clone();
    let wf = configure(pipeline::Workflow::new(root(script), bench).with_mode(trial.mode));
    let result = wf.run(input).await;
    super::Observed::of(&result, &wf.deps().effects, |done: &Done| {
        *done
            == Done {
                account: account.clone(),
                rows,
            }
            && trial_clean(&trial)
    })
}

/// Whether a trial runs the clean variant: a faulty run never ends
/// correct, whatever it returns (it acted on a faulty handoff).
fn trial_clean(trial: &super::Trial) -> bool {
    !trial.fault
}
