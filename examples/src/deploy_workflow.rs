//! The reference incident as a workflow: planner -> network -> terraform.
//!
//! The network agent looks up the staging VPC through a paginated cloud
//! API, and when it does not find it, it does what the agent in the
//! incident did: it takes the first VPC listed. Two checks stop that:
//!
//! - the lookup tool fails fast: a page that says more pages follow is a
//!   typed `partial result` error, never half a listing for the agent to
//!   guess around (`FailFast for VpcPage`);
//! - when the listing is complete but the staging VPC is not in it (its tag
//!   drifted), the plan for a `production` VPC breaks the root invariant
//!   `env_pinned` at terraform's receipt; terraform escalates rejections,
//!   so the run is suspended for a person, who can edit the plan.

use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// A deployment environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Env {
    /// Where changes are tried.
    Staging,
    /// Where customers are.
    Production,
}

/// A VPC as the cloud API lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Vpc {
    /// Its id.
    pub id: String,
    /// Its `env` tag.
    pub env: Env,
}

/// A fake cloud API: VPCs listed page by page, and a route table log.
pub struct FakeCloud {
    /// All VPCs, in listing order.
    pub vpcs: Vec<Vpc>,
    /// How many VPCs one page holds.
    pub page_size: usize,
    /// Every route change applied, as `vpc: change`.
    pub applied: Mutex<Vec<String>>,
}

impl FakeCloud {
    /// The cloud of the incident: the production VPC is listed first and the
    /// staging VPC only on the second page.
    pub fn incident() -> Self {
        FakeCloud {
            vpcs: vec![
                Vpc {
                    id: "vpc-0prod".into(),
                    env: Env::Production,
                },
                Vpc {
                    id: "vpc-1shared".into(),
                    env: Env::Production,
                },
                Vpc {
                    id: "vpc-2stag".into(),
                    env: Env::Staging,
                },
            ],
            page_size: 2,
            applied: Mutex::new(Vec::new()),
        }
    }

    /// The same cloud with pages large enough to list every VPC at once.
    pub fn one_page() -> Self {
        FakeCloud {
            page_size: 100,
            ..FakeCloud::incident()
        }
    }

    /// A cloud where the staging VPC's tag drifted: every VPC is listed on
    /// one page, none is tagged `staging`.
    pub fn drifted() -> Self {
        let mut cloud = FakeCloud::one_page();
        for vpc in &mut cloud.vpcs {
            vpc.env = Env::Production;
        }
        cloud
    }

    /// The route changes applied so far.
    pub fn applied(&self) -> Vec<String> {
        self.applied.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// What the user asks for.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Goal {
    /// The service to deploy.
    pub service: String,
    /// Where to deploy it.
    pub env: Env,
}

/// The `describe_vpcs` query.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VpcQuery {
    /// Which page (0-based).
    pub page: usize,
}

/// One page of VPCs.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VpcPage {
    /// The VPCs on this page.
    pub vpcs: Vec<Vpc>,
    /// Set when more pages follow.
    pub next_page: Option<usize>,
}

/// A page that says more pages follow is a partial result: `describe_vpcs`
/// fails fast with it instead of handing half a listing to the agent.
impl FailFast for VpcPage {
    fn fail_fast(&self) -> Result<(), Unusable> {
        if let Some(next) = self.next_page {
            return Err(Unusable::Partial(format!(
                "{} VPCs listed, more on page {next}",
                self.vpcs.len()
            )));
        }
        self.vpcs.fail_fast()
    }
}

/// The `apply_plan` request.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ApplyRequest {
    /// The VPC whose route table changes.
    pub vpc_id: String,
    /// How many routes change.
    pub routes: u32,
}

/// What `apply_plan` did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Applied {
    /// How many routes changed.
    pub changed_routes: u32,
}

/// Every `Applied` is a usable result (zero changed routes included).
impl FailFast for Applied {}

/// The workflow output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeployReport {
    /// The VPC deployed into.
    pub vpc_id: String,
    /// How many routes changed.
    pub changed_routes: u32,
}

#[workflow(entry = planner, output = DeployReport, deps = FakeCloud)]
pub mod deploy {
    use super::*;

    /// Pinned once per run, visible read-only to every agent, checked on
    /// every transfer: no payload may carry a card number, and every
    /// environment a payload names must be the pinned one.
    #[invariants(forbid = ["card_number"], check = [env_pinned])]
    pub struct Root {
        /// The tenant the run works for.
        pub tenant: String,
        /// The only environment this run may touch.
        pub allowed_env: Env,
        /// At most this many route changes per run.
        pub max_changed_routes: u32,
    }

    /// Planner -> network: find the VPC to deploy into.
    #[handoff]
    pub struct NetworkTask {
        /// What the network agent is asked to do.
        #[operation]
        pub op: Operation,
        /// The authority it exercises.
        #[authority]
        pub scope: Scope<authority::LookupVpc>,
        /// What the planner relied on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What the planner did not resolve.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// The environment to find a VPC in.
        pub target_env: Env,
    }

    /// Network -> terraform: change the route table of this VPC.
    #[handoff]
    pub struct TerraformPlan {
        /// What terraform is asked to do.
        #[operation]
        pub op: Operation,
        /// The authority it exercises.
        #[authority]
        pub scope: Scope<authority::Apply>,
        /// The lookup results the plan rests on.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// What the network agent did not resolve.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// When to stop.
        #[stop]
        pub stop: StopWhen,
        /// The VPC to change.
        pub vpc_id: String,
        /// The VPC's `env` tag, as the lookup returned it.
        pub vpc_env: Env,
        /// How many routes the plan changes.
        pub routes: u32,
    }

    /// Every `target_env` or `vpc_env` a payload carries is the pinned
    /// environment.
    fn env_pinned(root: &Root, transfer: &TransferView<'_>) -> Result<(), String> {
        let pinned = serde_json::to_value(root.allowed_env).map_err(|e| e.to_string())?;
        for field in ["target_env", "vpc_env"] {
            if let Some(env) = transfer.payload.get(field)
                && *env != pinned
            {
                return Err(format!(
                    "{} carries {field} = {env}, the run is pinned to {pinned}",
                    transfer.payload_type
                ));
            }
        }
        Ok(())
    }

    /// Lists one page of VPCs.
    #[tool(needs = LookupVpc, effect = read)]
    async fn describe_vpcs(query: VpcQuery, cloud: &FakeCloud) -> Result<VpcPage, ToolError> {
        let start = query.page * cloud.page_size;
        let end = (start + cloud.page_size).min(cloud.vpcs.len());
        let vpcs = cloud.vpcs.get(start..end).unwrap_or_default().to_vec();
        let next_page = (end < cloud.vpcs.len()).then_some(query.page + 1);
        Ok(VpcPage { vpcs, next_page })
    }

    /// Refuses a route change over the run's limit before any route is
    /// applied (the guard of `apply_plan`).
    fn within_route_limit(request: &ApplyRequest, root: &Root) -> Result<(), String> {
        if request.routes > root.max_changed_routes {
            return Err(format!(
                "the plan changes {} routes, over the limit of {}",
                request.routes, root.max_changed_routes
            ));
        }
        Ok(())
    }

    /// Changes a VPC's route table. Its guard refuses a change over the
    /// run's route limit before anything is applied.
    #[tool(needs = Apply, effect = write, guard = within_route_limit)]
    async fn apply_plan(request: ApplyRequest, cloud: &FakeCloud) -> Result<Applied, ToolError> {
        let mut applied = cloud
            .applied
            .lock()
            .map_err(|_| ToolError::new("apply_plan", "route log poisoned"))?;
        applied.push(format!("{}: {} routes", request.vpc_id, request.routes));
        Ok(Applied {
            changed_routes: request.routes,
        })
    }

    /// Turns the goal into a network task.
    #[agent(owns = [Plan], to = [network])]
    async fn planner(goal: Goal, cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
        Ok(planner::Next::Network(NetworkTask {
            op: Operation::new(
                "lookup_vpc",
                format!("find the {:?} VPC for {}", goal.env, goal.service),
            ),
            scope: cx.lease(authority::LookupVpc).as_long_as_mine(),
            evidence: vec![Evidence::complete(
                "user",
                format!("deploy {} to {:?}", goal.service, goal.env),
            )],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 3).or_when("no VPC carries the target tag"),
            target_env: goal.env,
        }))
    }

    /// Looks up the VPC; when the target is not listed it falls back to the
    /// first VPC listed, as the agent in the incident did. (On an
    /// incomplete page it never gets that far: the tool fails fast.)
    #[agent(owns = [LookupVpc], tools = [describe_vpcs], to = [terraform], timeout_ms = 2000)]
    #[pre(task.target_env == cx.root().allowed_env, "the target must be the pinned environment")]
    async fn network(task: NetworkTask, cx: network::Context<'_>) -> Result<network::Next, Reject> {
        let page = cx.call(tools::describe_vpcs, VpcQuery { page: 0 }).await?;
        let complete = page.next_page.is_none();
        let vpc = page
            .vpcs
            .iter()
            .find(|v| v.env == task.target_env)
            .or(page.vpcs.first())
            .cloned()
            .ok_or_else(|| Reject::because("the cloud listed no VPC"))?;
        let claim = format!("{} is tagged env={:?}", vpc.id, vpc.env);
        let evidence = if complete {
            Evidence::complete("describe_vpcs", claim)
        } else {
            Evidence::partial("describe_vpcs", format!("{claim} (page 0 of more)"))
        };
        // Cites the listing it relied on: the receiver checks the call is in
        // the run's record, with this result.
        let evidence = evidence.citing(cx.citation(tools::describe_vpcs)?);
        Ok(network::Next::Terraform(TerraformPlan {
            op: Operation::new(
                "apply_routes",
                format!("add the {} routes to {}", "2", vpc.id),
            ),
            scope: cx.lease(authority::Apply).as_long_as_mine(),
            evidence: vec![evidence],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 2),
            vpc_id: vpc.id,
            vpc_env: vpc.env,
            routes: 2,
        }))
    }

    /// Applies the plan. A plan it rejects goes to a person.
    #[agent(owns = [Apply], tools = [apply_plan], to = [END], on_reject = escalate)]
    #[pre(plan.evidence.iter().all(|e| e.complete), "the plan must rest on complete lookups, not a truncated page")]
    #[post(matches!(out, terraform::Next::End(r) if r.changed_routes <= cx.root().max_changed_routes), "at most `max_changed_routes` route changes")]
    async fn terraform(
        plan: TerraformPlan,
        cx: terraform::Context<'_>,
    ) -> Result<terraform::Next, Reject> {
        let applied = cx
            .call(
                tools::apply_plan,
                ApplyRequest {
                    vpc_id: plan.vpc_id.clone(),
                    routes: plan.routes,
                },
            )
            .await?;
        Ok(terraform::Next::End(DeployReport {
            vpc_id: plan.vpc_id,
            changed_routes: applied.changed_routes,
        }))
    }
}

/// The invariants of the example runs: tenant `acme`, staging only.
pub fn staging_root() -> deploy::Root {
    deploy::Root {
        tenant: "acme".into(),
        allowed_env: Env::Staging,
        max_changed_routes: 5,
    }
}

/// The goal of the example runs.
pub fn staging_goal() -> Goal {
    Goal {
        service: "checkout".into(),
        env: Env::Staging,
    }
}
