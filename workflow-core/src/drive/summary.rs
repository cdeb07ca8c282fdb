//! What a person reads after a run: the path taken, the outcome, and per
//! agent turns, tool calls, failures, tokens and time (`RunSummary`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::run::{Status, Transcript};
use crate::spec::{Endpoint, Receipt};
/// A readable account of one run: the path taken, how it ended, and per
/// agent its turns, tool calls, tokens and time. `Display` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunSummary {
    /// The run.
    pub run_id: u64,
    /// The agents in the order their turns ran.
    pub path: Vec<String>,
    /// How the run ended (or where it stands).
    pub outcome: String,
    /// Per agent, in the order they first ran.
    pub agents: Vec<AgentSummary>,
    /// Audit mode: every check that failed and was let through, one line
    /// each (`#seq from -> to: would reject: <reason>`, or a tool call's
    /// `would refuse`), in record order. Empty for a run without verdicts
    /// (absent from the JSON then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audit: Vec<String>,
}

/// One agent's share of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSummary {
    /// The agent.
    pub name: String,
    /// Turns it ran.
    pub turns: u32,
    /// Tool calls it made.
    pub tool_calls: u32,
    /// Of those, the ones that failed.
    pub failed_tool_calls: u32,
    /// Tokens it charged (prompt and completion).
    pub tokens: u64,
    /// Microseconds from its receipts to what its turns produced.
    pub time_us: u64,
}

impl Transcript {
    /// A readable account of the run so far.
    pub fn summary(&self) -> RunSummary {
        let mut path = Vec::new();
        let mut agents: Vec<AgentSummary> = Vec::new();
        let by_name = |name: &str, agents: &mut Vec<AgentSummary>| -> usize {
            match agents.iter().position(|a| a.name == name) {
                Some(i) => i,
                None => {
                    agents.push(AgentSummary {
                        name: name.to_owned(),
                        ..AgentSummary::default()
                    });
                    agents.len() - 1
                }
            }
        };
        for (i, e) in self.entries.iter().enumerate() {
            let Some(edge) = self.graph.edges.get(e.edge as usize) else {
                continue;
            };
            // A handoff returned to its sender: the sender's turn ran again
            // (on its earlier input), producing the next entry.
            let returned_to = match (e.status, edge.from, self.entries.get(i + 1)) {
                (Status::Rejected, crate::spec::Node::Agent(_), Some(next))
                    if self.graph.edges.get(next.edge as usize).map(|n| n.from)
                        == Some(edge.from) =>
                {
                    Some(edge.from)
                }
                _ => None,
            };
            if let Some(sender) = returned_to {
                let name = self.graph.node_name(sender);
                path.push(name.to_owned());
                let a = by_name(name, &mut agents);
                agents[a].turns = agents[a].turns.saturating_add(1);
                if let Some(next) = self.entries.get(i + 1) {
                    // Times read back from a ledger may be anything: the
                    // account saturates, never wraps or panics.
                    let took = next.at_us.saturating_sub(e.at_us);
                    agents[a].time_us = agents[a].time_us.saturating_add(took);
                }
            }
            if e.status.ran()
                && let crate::spec::Node::Agent(_) = edge.to
            {
                let name = self.graph.node_name(edge.to);
                path.push(name.to_owned());
                let a = by_name(name, &mut agents);
                agents[a].turns = agents[a].turns.saturating_add(1);
                if let Some(next) = self.entries.get(i + 1) {
                    // Times read back from a ledger may be anything: the
                    // account saturates, never wraps or panics.
                    let took = next.at_us.saturating_sub(e.at_us);
                    agents[a].time_us = agents[a].time_us.saturating_add(took);
                }
            }
        }
        for (_, turn) in &self.turns {
            let a = by_name(&turn.agent, &mut agents);
            let calls = u32::try_from(turn.tool_calls.len()).unwrap_or(u32::MAX);
            let failed = turn
                .tool_calls
                .iter()
                .filter(|c| matches!(c.outcome, crate::spec::ToolOutcome::Failed { .. }))
                .count();
            let failed = u32::try_from(failed).unwrap_or(u32::MAX);
            let agent = &mut agents[a];
            agent.tool_calls = agent.tool_calls.saturating_add(calls);
            agent.failed_tool_calls = agent.failed_tool_calls.saturating_add(failed);
            agent.tokens = agent.tokens.saturating_add(turn.usage.total_tokens());
        }
        let last = self.len().checked_sub(1);
        let outcome = match last.and_then(|i| Some((self.record(i).ok()?, i))) {
            None => "no transfer recorded".to_owned(),
            Some((r, _)) => match (&r.receipt, &r.to) {
                (Receipt::Accepted | Receipt::Audited { .. }, Endpoint::End) => {
                    "completed".to_owned()
                }
                (Receipt::Rejected { reason }, _) => {
                    format!("rejected at {} -> {}: {reason}", r.from, r.to)
                }
                (Receipt::Escalated { reason }, _) => {
                    format!(
                        "suspended at {} -> {}, waiting for a decision: {reason}",
                        r.from, r.to
                    )
                }
                (Receipt::TurnFailed { error }, _) => format!("failed in {}: {error}", r.to),
                _ => format!("in progress: {} is next", r.to),
            },
        };
        RunSummary {
            run_id: self.run_id,
            path,
            outcome,
            agents,
            audit: self.audit_lines(),
        }
    }

    /// The audit verdicts of the run, one line each, in record order: the
    /// failed checks of each audited receipt, then those of the tool calls
    /// of the turn that produced the record.
    pub(crate) fn audit_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for i in 0..self.len() {
            let Ok((e, edge)) = self.entry(i) else {
                continue;
            };
            let (from, to) = (
                self.graph.node_name(edge.from),
                self.graph.node_name(edge.to),
            );
            if let Some(turn) = self.turn(i) {
                for call in &turn.tool_calls {
                    if let Some(why) = &call.audit {
                        lines.push(format!(
                            "#{i} {}: tool `{}` would refuse: {why}",
                            turn.agent, call.tool
                        ));
                    }
                }
            }
            if e.status == Status::Audited
                && let Some(Receipt::Audited { reasons }) = self.receipt(i)
            {
                for reason in reasons {
                    lines.push(format!("#{i} {from} -> {to}: would reject: {reason}"));
                }
            }
        }
        lines
    }
}

impl fmt::Display for RunSummary {
    /// `run N: a -> b -> c, completed`, then one line per agent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "run {}: {} ({} turns), {}",
            self.run_id,
            if self.path.is_empty() {
                "no agent ran".to_owned()
            } else {
                self.path.join(" -> ")
            },
            self.path.len(),
            self.outcome
        )?;
        for a in &self.agents {
            write!(
                f,
                "  {:<16} {} turn{}, {} tool call{}",
                a.name,
                a.turns,
                if a.turns == 1 { "" } else { "s" },
                a.tool_calls,
                if a.tool_calls == 1 { "" } else { "s" },
            )?;
            if a.failed_tool_calls > 0 {
                write!(f, " ({} failed)", a.failed_tool_calls)?;
            }
            if a.tokens > 0 {
                write!(f, ", {} tokens", a.tokens)?;
            }
            writeln!(f, ", {:.3} ms", a.time_us as f64 / 1000.0)?;
        }
        if !self.audit.is_empty() {
            writeln!(
                f,
                "AUDIT MODE: {} check{} failed and {} let through (enforcement would have stopped the run):",
                self.audit.len(),
                if self.audit.len() == 1 { "" } else { "s" },
                if self.audit.len() == 1 { "was" } else { "were" },
            )?;
            for line in &self.audit {
                writeln!(f, "  AUDIT: {line}")?;
            }
        }
        Ok(())
    }
}
