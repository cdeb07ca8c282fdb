//! The parallel workflow of the ledger campaign (`examples::campaign`):
//! a lead fans out to three branches at once, each making one write and
//! taking a few milliseconds (each a different time, so that they finish in
//! another order than they started), the middle branch fanning out again (a
//! recheck and an audit at once, each writing, joined inside the branch by a
//! settle that writes and hands the branch's part on: a fan-out inside a
//! branch), and a join that makes the last write.
//! The campaign kills its child in the middle of this fan-out too; every
//! resumed run must end with the records and the writes of a run never
//! killed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

use crate::relay::{EffectLog, Line, Stored};

/// What a branch hands the join.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Part {
    /// The branch's value.
    pub value: u32,
}

/// How long each branch waits before its write (milliseconds): the first
/// started finishes last.
pub const BRANCH_MS: [u64; 3] = [6, 2, 4];

#[workflow(entry = lead, output = Stored, deps = EffectLog)]
pub mod fanout_relay {
    use super::*;

    /// Lead -> the left branch.
    #[handoff]
    pub struct AskLeft {
        /// Do the branch's part.
        #[operation]
        pub op: Operation,
        /// Under the branch's authority.
        #[authority]
        pub scope: Scope<authority::Left>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition.
        #[stop]
        pub stop: StopWhen,
        /// The value so far.
        pub value: u32,
    }

    /// Lead -> the middle branch.
    #[handoff]
    pub struct AskMiddle {
        /// Do the branch's part.
        #[operation]
        pub op: Operation,
        /// Under the branch's authority.
        #[authority]
        pub scope: Scope<authority::Middle>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition.
        #[stop]
        pub stop: StopWhen,
        /// The value so far.
        pub value: u32,
    }

    /// Lead -> the right branch.
    #[handoff]
    pub struct AskRight {
        /// Do the branch's part.
        #[operation]
        pub op: Operation,
        /// Under the branch's authority.
        #[authority]
        pub scope: Scope<authority::Right>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition.
        #[stop]
        pub stop: StopWhen,
        /// The value so far.
        pub value: u32,
    }

    /// The middle branch -> its recheck (beside the audit).
    #[handoff]
    pub struct AskRecheck {
        /// Check the branch's part again.
        #[operation]
        pub op: Operation,
        /// Under the recheck's authority.
        #[authority]
        pub scope: Scope<authority::Recheck>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition.
        #[stop]
        pub stop: StopWhen,
        /// The value so far.
        pub value: u32,
    }

    /// The middle branch -> its audit (beside the recheck).
    #[handoff]
    pub struct AskAudit {
        /// Audit the branch's part.
        #[operation]
        pub op: Operation,
        /// Under the audit's authority.
        #[authority]
        pub scope: Scope<authority::Audit>,
        /// None needed.
        #[evidence]
        pub evidence: Vec<Evidence>,
        /// None left open.
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        /// No stop condition.
        #[stop]
        pub stop: StopWhen,
        /// The value so far.
        pub value: u32,
    }

    /// The audit's write.
    #[tool(needs = Audit, effect = write)]
    async fn save_audit(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_audit", &line).await
    }

    /// The settle's write.
    #[tool(needs = Settle, effect = write)]
    async fn save_settle(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_settle", &line).await
    }

    /// The recheck's write.
    #[tool(needs = Recheck, effect = write)]
    async fn save_recheck(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_recheck", &line).await
    }

    /// The lead's write.
    #[tool(needs = Lead, effect = write)]
    async fn save_lead(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_lead", &line).await
    }

    /// The left branch's write.
    #[tool(needs = Left, effect = write)]
    async fn save_left(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_left", &line).await
    }

    /// The middle branch's write.
    #[tool(needs = Middle, effect = write)]
    async fn save_middle(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_middle", &line).await
    }

    /// The right branch's write.
    #[tool(needs = Right, effect = write)]
    async fn save_right(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_right", &line).await
    }

    /// The join's write.
    #[tool(needs = Join, effect = write)]
    async fn save_join(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_join", &line).await
    }

    fn line(run_id: u64, agent: &str, value: u32) -> Line {
        Line {
            run_id,
            agent: agent.into(),
            value,
        }
    }

    /// Writes, then starts the three branches.
    #[agent(owns = [Lead], tools = [save_lead], to = [parallel(left, middle, right)])]
    async fn lead(value: u32, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
        let stored = cx
            .call(tools::save_lead, line(cx.run_id(), "lead", value))
            .await?;
        // A lease that covers the fan-out: its three branches, the
        // middle one's recheck, audit and settle, and the join.
        let until = cx.hop() + 8;
        Ok(lead::Next::Parallel(lead::Parallel {
            left: AskLeft {
                op: Operation::new("part", "left"),
                scope: cx.lease(authority::Left).until_hop(until),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 8),
                value: stored.value,
            },
            middle: AskMiddle {
                op: Operation::new("part", "middle"),
                scope: cx.lease(authority::Middle).until_hop(until),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 8),
                value: stored.value + 10,
            },
            right: AskRight {
                op: Operation::new("part", "right"),
                scope: cx.lease(authority::Right).until_hop(until),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 8),
                value: stored.value + 20,
            },
        }))
    }

    /// Waits, writes, hands its part to the join.
    #[agent(owns = [Left], tools = [save_left], to = [join])]
    async fn left(ask: AskLeft, cx: left::Context<'_>) -> Result<left::Next, Reject> {
        tokio::time::sleep(std::time::Duration::from_millis(BRANCH_MS[0])).await;
        let stored = cx
            .call(tools::save_left, line(cx.run_id(), "left", ask.value))
            .await?;
        Ok(left::Next::Join(Part {
            value: stored.value,
        }))
    }

    /// Waits, writes, hands its part to the recheck and the audit at once.
    #[agent(owns = [Middle], tools = [save_middle], to = [parallel(recheck, audit)])]
    async fn middle(ask: AskMiddle, cx: middle::Context<'_>) -> Result<middle::Next, Reject> {
        tokio::time::sleep(std::time::Duration::from_millis(BRANCH_MS[1])).await;
        let stored = cx
            .call(tools::save_middle, line(cx.run_id(), "middle", ask.value))
            .await?;
        Ok(middle::Next::Parallel(middle::Parallel {
            recheck: AskRecheck {
                op: Operation::new("recheck", "middle"),
                scope: cx.lease(authority::Recheck).as_long_as_mine(),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 8),
                value: stored.value,
            },
            audit: AskAudit {
                op: Operation::new("audit", "middle"),
                scope: cx.lease(authority::Audit).as_long_as_mine(),
                evidence: vec![],
                open: vec![],
                stop: StopWhen::at_hop(cx.hop() + 8),
                value: stored.value,
            },
        }))
    }

    /// Inside the middle branch: writes, hands its part to the settle.
    #[agent(owns = [Recheck], tools = [save_recheck], to = [settle])]
    async fn recheck(ask: AskRecheck, cx: recheck::Context<'_>) -> Result<recheck::Next, Reject> {
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        let stored = cx
            .call(tools::save_recheck, line(cx.run_id(), "recheck", ask.value))
            .await?;
        Ok(recheck::Next::Settle(Part {
            value: stored.value,
        }))
    }

    /// Inside the middle branch, beside the recheck: writes, hands its part
    /// to the settle.
    #[agent(owns = [Audit], tools = [save_audit], to = [settle])]
    async fn audit(ask: AskAudit, cx: audit::Context<'_>) -> Result<audit::Next, Reject> {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        let stored = cx
            .call(tools::save_audit, line(cx.run_id(), "audit", ask.value))
            .await?;
        Ok(audit::Next::Settle(Part {
            value: stored.value,
        }))
    }

    /// The middle branch's nested join: adds the recheck's and the audit's
    /// parts, writes, hands the branch's part to the join.
    #[agent(owns = [Settle], tools = [save_settle], join = [recheck: Part, audit: Part], to = [join])]
    async fn settle(
        parts: settle::Joined,
        cx: settle::Context<'_>,
    ) -> Result<settle::Next, Reject> {
        let mut total = 0;
        for (name, part) in [("recheck", &parts.recheck), ("audit", &parts.audit)] {
            match part {
                Branch::Done(part) => total += part.value,
                other => return Err(Reject::because(format!("branch {name}: {other}"))),
            }
        }
        let stored = cx
            .call(tools::save_settle, line(cx.run_id(), "settle", total))
            .await?;
        Ok(settle::Next::Join(Part {
            value: stored.value,
        }))
    }

    /// Waits, writes, hands its part to the join; within a second (a write
    /// slower than that times the branch out: `workflow-cli`'s tests show
    /// such a branch).
    #[agent(owns = [Right], tools = [save_right], to = [join], timeout_ms = 1000)]
    async fn right(ask: AskRight, cx: right::Context<'_>) -> Result<right::Next, Reject> {
        tokio::time::sleep(std::time::Duration::from_millis(BRANCH_MS[2])).await;
        let stored = cx
            .call(tools::save_right, line(cx.run_id(), "right", ask.value))
            .await?;
        Ok(right::Next::Join(Part {
            value: stored.value,
        }))
    }

    /// Adds the three parts (a branch that did not end with its part fails
    /// the run: the campaign's branches always do), writes, ends.
    #[agent(owns = [Join], tools = [save_join], join = [left: Part, middle: Part, right: Part], to = [END])]
    async fn join(parts: join::Joined, cx: join::Context<'_>) -> Result<join::Next, Reject> {
        let mut total = 0;
        for (name, part) in [
            ("left", &parts.left),
            ("middle", &parts.middle),
            ("right", &parts.right),
        ] {
            match part {
                Branch::Done(part) => total += part.value,
                other => return Err(Reject::because(format!("branch {name}: {other}"))),
            }
        }
        let stored = cx
            .call(tools::save_join, line(cx.run_id(), "join", total))
            .await?;
        Ok(join::Next::End(stored))
    }
}
