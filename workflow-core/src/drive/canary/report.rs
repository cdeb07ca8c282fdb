//! What a canary run reports: one row per canary (and per tool no canary
//! covers), as a table.

use std::fmt;

use serde::Serialize;

use super::CanaryRecording;

/// How a canary ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The model made the expected calls and its answer passed.
    Pass,
    /// It did not (or the canary cannot run: no recording, a bad
    /// declaration, a tool without a canary).
    Fail,
    /// It did not, and an offered tool's description or schemas changed
    /// since the recording: the change is the likely cause. Re-run the
    /// canary live; record it again once it passes.
    Drift,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Drift => "DRIFT",
        })
    }
}

/// One row of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CanaryRow {
    /// The tools the canary expects calls of (the one tool no canary
    /// covers, for such a row).
    pub tools: Vec<String>,
    /// The canary's name (`-` for a tool no canary covers).
    pub canary: String,
    /// How it ended.
    pub verdict: Verdict,
    /// Why (what passed, or what did not).
    pub why: String,
}

/// What [`run`](super::run) reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanaryReport {
    /// One row per canary, then one per tool no canary covers.
    pub rows: Vec<CanaryRow>,
    /// In live mode: the recording of this run, for `--record`.
    pub recording: Option<CanaryRecording>,
}

impl CanaryReport {
    /// Whether every row passed.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.verdict == Verdict::Pass)
    }

    /// The rows that did not pass.
    pub fn failures(&self) -> impl Iterator<Item = &CanaryRow> {
        self.rows.iter().filter(|r| r.verdict != Verdict::Pass)
    }
}

impl fmt::Display for CanaryReport {
    /// The table: tool, canary, verdict, why; one row per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: Vec<String> = self.rows.iter().map(|r| r.tools.join(", ")).collect();
        let width = |header: &str, cells: &mut dyn Iterator<Item = usize>| {
            cells.fold(header.len(), usize::max)
        };
        let tool_w = width("TOOL", &mut tools.iter().map(String::len));
        let canary_w = width("CANARY", &mut self.rows.iter().map(|r| r.canary.len()));
        writeln!(
            f,
            "{:tool_w$}  {:canary_w$}  {:6} WHY",
            "TOOL", "CANARY", "RESULT"
        )?;
        for (row, tools) in self.rows.iter().zip(&tools) {
            writeln!(
                f,
                "{tools:tool_w$}  {:canary_w$}  {:6} {}",
                row.canary,
                row.verdict.to_string(),
                row.why
            )?;
        }
        let failed = self.failures().count();
        write!(
            f,
            "{} checked: {} passed, {failed} did not",
            self.rows.len(),
            self.rows.len() - failed
        )
    }
}
