//! The workflow of the ledger campaign (`examples/ledger_campaign.rs`):
//! three agents, draft -> check -> publish, each making one write whose
//! effect lands in a file outside the ledger. Each write carries its call
//! id as idempotency key, so the effect happens once per call even when a
//! process dies between the write and its journal entry.

use std::io::Write;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workflow_core::prelude::*;

/// A write's request.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Line {
    /// The run writing.
    pub run_id: u64,
    /// The agent writing.
    pub agent: String,
    /// The value written.
    pub value: u32,
}

/// A write made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Stored {
    /// The value written.
    pub value: u32,
}

/// Every write made is a usable result.
impl FailFast for Stored {}

/// The effect store: every request is logged to `requests` (`run key
/// agent`), and an effect to `effects` (same format) only for a key it has
/// not seen, as an API taking an idempotency key would.
pub struct EffectLog {
    /// One line per request.
    pub requests: PathBuf,
    /// One line per effect.
    pub effects: PathBuf,
    /// How long each write takes.
    pub delay: std::time::Duration,
}

/// Appends `line` with one `write`: a killed process leaves it whole or
/// absent.
fn append(path: &Path, line: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
}

impl EffectLog {
    /// Writes `line` under the current tool call's id, once per id.
    pub(crate) async fn write(&self, tool: &'static str, line: &Line) -> Result<Stored, ToolError> {
        tokio::time::sleep(self.delay).await;
        let key = workflow_core::tool::call_id()
            .ok_or_else(|| ToolError::new(tool, "called outside a tool call"))?
            .to_string();
        let entry = format!("{} {key} {}\n", line.run_id, line.agent);
        append(&self.requests, &entry).map_err(|e| ToolError::new(tool, e.to_string()))?;
        let made = std::fs::read_to_string(&self.effects).unwrap_or_default();
        if !made
            .lines()
            .any(|l| l.split(' ').nth(1) == Some(key.as_str()))
        {
            append(&self.effects, &entry).map_err(|e| ToolError::new(tool, e.to_string()))?;
        }
        Ok(Stored {
            value: line.value + 1,
        })
    }
}

#[workflow(entry = draft, output = Stored, deps = EffectLog)]
pub mod relay {
    use super::*;

    /// Draft -> check.
    #[handoff]
    pub struct ToCheck {
        /// Check the draft.
        #[operation]
        pub op: Operation,
        /// Under the checker's authority.
        #[authority]
        pub scope: Scope<authority::Check>,
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

    /// Check -> publish.
    #[handoff]
    pub struct ToPublish {
        /// Publish it.
        #[operation]
        pub op: Operation,
        /// Under the publisher's authority.
        #[authority]
        pub scope: Scope<authority::Publish>,
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

    /// The draft's write.
    #[tool(needs = Draft, effect = write)]
    async fn save_draft(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_draft", &line).await
    }

    /// The check's write.
    #[tool(needs = Check, effect = write)]
    async fn save_check(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_check", &line).await
    }

    /// The publication's write.
    #[tool(needs = Publish, effect = write)]
    async fn save_publication(line: Line, log: &EffectLog) -> Result<Stored, ToolError> {
        log.write("save_publication", &line).await
    }

    fn line(cx_run: u64, agent: &str, value: u32) -> Line {
        Line {
            run_id: cx_run,
            agent: agent.into(),
            value,
        }
    }

    /// Writes the draft, hands it to the checker.
    #[agent(owns = [Draft], tools = [save_draft], to = [check])]
    async fn draft(value: u32, cx: draft::Context<'_>) -> Result<draft::Next, Reject> {
        let stored = cx
            .call(tools::save_draft, line(cx.run_id(), "draft", value))
            .await?;
        Ok(draft::Next::Check(ToCheck {
            op: Operation::new("check", ""),
            scope: cx.lease(authority::Check).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            value: stored.value,
        }))
    }

    /// Writes the check, hands it to the publisher.
    #[agent(owns = [Check], tools = [save_check], to = [publish])]
    async fn check(task: ToCheck, cx: check::Context<'_>) -> Result<check::Next, Reject> {
        let stored = cx
            .call(tools::save_check, line(cx.run_id(), "check", task.value))
            .await?;
        Ok(check::Next::Publish(ToPublish {
            op: Operation::new("publish", ""),
            scope: cx.lease(authority::Publish).as_long_as_mine(),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(cx.hop() + 8),
            value: stored.value,
        }))
    }

    /// Writes the publication, ends.
    #[agent(owns = [Publish], tools = [save_publication], to = [END])]
    async fn publish(task: ToPublish, cx: publish::Context<'_>) -> Result<publish::Next, Reject> {
        let stored = cx
            .call(
                tools::save_publication,
                line(cx.run_id(), "publish", task.value),
            )
            .await?;
        Ok(publish::Next::End(stored))
    }
}
