//! The ablation: every scenario run `runs` times (seeded) with its fault,
//! in enforce mode and in audit mode, and as many times without it (the
//! clean variant) in both modes; counted per scenario and in total.

use std::fmt;

use workflow_core::Mode;

use super::{Ending, InAudit, Observed, SLOTS, Scenario, Trial, scenarios};

/// What a set of runs of one scenario, one variant, one mode did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Runs made.
    pub runs: u32,
    /// Runs in which at least one unauthorized side effect happened.
    pub unauthorized: u32,
    /// Runs that reached `END` with a wrong or unverified result.
    pub wrong_at_end: u32,
    /// Runs that reached `END` with the correct result.
    pub correct_at_end: u32,
    /// Runs a check stopped.
    pub stopped: u32,
    /// Runs waiting for a person's decision.
    pub escalated: u32,
    /// Runs with at least one audit verdict recorded.
    pub recorded: u32,
}

impl Counts {
    fn add(&mut self, o: &Observed) {
        self.runs += 1;
        self.unauthorized += u32::from(o.unauthorized > 0);
        self.recorded += u32::from(o.verdicts > 0);
        match o.ending {
            Ending::Completed { correct: true } => self.correct_at_end += 1,
            Ending::Completed { correct: false } => self.wrong_at_end += 1,
            Ending::Stopped(_) => self.stopped += 1,
            Ending::Escalated(_) => self.escalated += 1,
        }
    }

    fn sum(&mut self, o: &Counts) {
        self.runs += o.runs;
        self.unauthorized += o.unauthorized;
        self.wrong_at_end += o.wrong_at_end;
        self.correct_at_end += o.correct_at_end;
        self.stopped += o.stopped;
        self.escalated += o.escalated;
        self.recorded += o.recorded;
    }

    /// Clean runs that did not reach `END` with the correct result: false
    /// rejections (or, in audit mode, runs with a verdict: false alarms).
    pub fn not_correct(&self) -> u32 {
        self.runs - self.correct_at_end
    }
}

/// One scenario's figures.
#[derive(Debug, Clone)]
pub struct Row {
    /// The scenario.
    pub scenario: Scenario,
    /// With the fault, enforce mode.
    pub enforce: Counts,
    /// With the fault, audit mode.
    pub audit: Counts,
    /// Without the fault, enforce mode.
    pub clean_enforce: Counts,
    /// Without the fault, audit mode.
    pub clean_audit: Counts,
    /// Every clean run that did not end correct, or drew a verdict: its
    /// seed, mode and ending (the exceptions the table counts).
    pub exceptions: Vec<String>,
}

/// The whole table.
#[derive(Debug, Clone)]
pub struct Table {
    /// Runs per scenario, variant and mode.
    pub runs: u32,
    /// The first seed (run `i` uses `seed + i`).
    pub seed: u64,
    /// One row per scenario.
    pub rows: Vec<Row>,
}

impl Table {
    /// The totals over every scenario, as a row without a scenario.
    pub fn totals(&self) -> [Counts; 4] {
        let mut t = [Counts::default(); 4];
        for r in &self.rows {
            t[0].sum(&r.enforce);
            t[1].sum(&r.audit);
            t[2].sum(&r.clean_enforce);
            t[3].sum(&r.clean_audit);
        }
        t
    }
}

/// Runs one trial of `scenario`.
pub async fn trial(scenario: &Scenario, seed: u64, mode: Mode, fault: bool) -> Observed {
    (scenario.run)(Trial { seed, mode, fault }).await
}

/// Runs every scenario `runs` times per variant and mode, seeds `seed`,
/// `seed + 1`, ...
pub async fn ablate(runs: u32, seed: u64) -> Table {
    let mut rows = Vec::new();
    for scenario in scenarios() {
        let mut row = Row {
            scenario,
            enforce: Counts::default(),
            audit: Counts::default(),
            clean_enforce: Counts::default(),
            clean_audit: Counts::default(),
            exceptions: Vec::new(),
        };
        for i in 0..u64::from(runs) {
            let s = seed.wrapping_add(i);
            row.enforce
                .add(&trial(&scenario, s, Mode::Enforce, true).await);
            row.audit.add(&trial(&scenario, s, Mode::Audit, true).await);
            for (mode, counts) in [
                (Mode::Enforce, &mut row.clean_enforce),
                (Mode::Audit, &mut row.clean_audit),
            ] {
                let o = trial(&scenario, s, mode, false).await;
                if !o.correct_at_end() || o.verdicts > 0 {
                    row.exceptions
                        .push(format!("seed {s}, {mode:?}: {:?}", o.ending));
                }
                counts.add(&o);
            }
        }
        rows.push(row);
    }
    Table { runs, seed, rows }
}

fn cells(f: &mut fmt::Formatter<'_>, name: &str, c: [&Counts; 4]) -> fmt::Result {
    let [e, a, ce, ca] = c;
    writeln!(
        f,
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        e.unauthorized,
        e.wrong_at_end,
        e.stopped,
        e.escalated,
        e.correct_at_end,
        a.unauthorized,
        a.wrong_at_end,
        a.stopped,
        a.escalated,
        a.recorded,
        ce.not_correct(),
        ca.recorded,
    )
}

/// A Markdown table: per scenario, with the fault, in enforce mode then
/// audit mode: runs with an unauthorized side effect, runs at `END` with a
/// wrong or unverified result, runs stopped, runs escalated (in enforce
/// mode also runs at `END` with the correct result, a fault repaired; in
/// audit mode runs with a verdict recorded); without it: false rejections
/// in enforce mode, runs with a verdict in audit mode.
impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} runs per scenario, variant and mode; seeds {}..{}",
            self.runs,
            self.seed,
            self.seed.wrapping_add(u64::from(self.runs))
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "| scenario | enforce: unauthorized | wrong at END | stopped | escalated | correct at END | audit: unauthorized | wrong at END | stopped | escalated | recorded | clean: false rejections | clean audit: verdicts |"
        )?;
        writeln!(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")?;
        for r in &self.rows {
            cells(
                f,
                r.scenario.name,
                [&r.enforce, &r.audit, &r.clean_enforce, &r.clean_audit],
            )?;
        }
        let t = self.totals();
        cells(f, "**total**", [&t[0], &t[1], &t[2], &t[3]])?;
        writeln!(f)?;
        for r in &self.rows {
            if let InAudit::StillStops(why) = r.scenario.in_audit {
                writeln!(f, "- {}: stopped in audit mode too: {why}", r.scenario.name)?;
            }
        }
        for r in &self.rows {
            for e in &r.exceptions {
                writeln!(f, "- {}: clean run not correct: {e}", r.scenario.name)?;
            }
        }
        for slot in SLOTS {
            writeln!(
                f,
                "- {} (not run): {}; waits for {}",
                slot.name, slot.fault, slot.waits_for
            )?;
        }
        Ok(())
    }
}
