//! `show` and `diff` on runs of a fan-out (`examples::fanout_relay`): each
//! record of a fan-out says its fork, its branch, its parent and the
//! branch's outcome, and the join says every branch's.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use examples::fanout_relay::fanout_relay;
use examples::relay::EffectLog;
use workflow_core::ledger::SqliteLedger;

use crate::fixtures::scratch;

fn workflow(ledger: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_workflow"))
        .arg("--ledger")
        .arg(ledger)
        .args(args)
        .output()
        .expect("the command runs")
}

/// The lines `show` adds for the fan-out (indented, naming a fork).
fn branch_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("fork #"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn show_and_diff_display_each_branch_with_its_fork_parent_and_outcome() {
    let dir = scratch("branches");
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let log = |delay_ms| EffectLog {
        requests: dir.join("requests.log"),
        effects: dir.join("effects.log"),
        delay: Duration::from_millis(delay_ms),
    };
    // Every branch ends with its part.
    let done = fanout_relay::Workflow::new((), log(0))
        .with_ledger(ledger.clone())
        .run(10)
        .await
        .expect("completes")
        .transcript
        .run_id();
    // Every write takes 1.5 s: the right branch (1 s timeout) times out,
    // the others end, and the join refuses to add a missing part.
    let slow = fanout_relay::Workflow::new((), log(1500))
        .with_ledger(ledger.clone())
        .run(10)
        .await
        .expect_err("the join fails")
        .transcript
        .run_id();

    let out = workflow(&path, &["show", &done.to_string()]);
    assert!(out.status.success());
    assert_eq!(
        branch_lines(&out),
        [
            "    fork #0 branch 0 (parent #0): start",
            "    fork #0 branch 1 (parent #0): start",
            "    fork #0 branch 2 (parent #0): start",
            "    fork #0 branch 0 (parent #1): outcome done",
            "    fork #2 branch 0 (parent #2): start",
            "    fork #0 branch 2 (parent #3): outcome done",
            "    fork #2 branch 1 (parent #2): start",
            "    fork #2 branch 0 (parent #5): outcome done",
            "    fork #2 branch 1 (parent #7): outcome done",
            "    fork #2 join: branch 0 done (#8), branch 1 done (#9)",
            "    fork #0 branch 1 (parent #10): outcome done",
            "    fork #0 join: branch 0 done (#4), branch 1 done (#11), branch 2 done (#6)",
        ]
    );
    // Each under its record.
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let under = |branch: &str| {
        let i = lines.iter().position(|l| *l == branch).expect("shown");
        lines[i - 1]
            .split(" [")
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        under("    fork #0 branch 2 (parent #0): start"),
        "#3 hop 3 lead -> right"
    );
    assert_eq!(
        under("    fork #0 branch 2 (parent #3): outcome done"),
        "#6 hop 4 right -> join"
    );
    // The middle branch's fan-out: its starts, its join, its join's
    // outcome.
    assert_eq!(
        under("    fork #2 branch 0 (parent #2): start"),
        "#5 hop 4 middle -> recheck"
    );
    assert_eq!(
        under("    fork #2 branch 1 (parent #2): start"),
        "#7 hop 4 middle -> audit"
    );
    assert_eq!(
        under("    fork #2 join: branch 0 done (#8), branch 1 done (#9)"),
        "#10 hop 6 middle -> settle"
    );
    assert_eq!(
        under("    fork #0 branch 1 (parent #10): outcome done"),
        "#11 hop 7 settle -> join"
    );
    assert_eq!(
        under("    fork #0 join: branch 0 done (#4), branch 1 done (#11), branch 2 done (#6)"),
        "#12 hop 7 lead -> join"
    );

    let out = workflow(&path, &["show", &slow.to_string()]);
    assert!(out.status.success());
    assert_eq!(
        branch_lines(&out),
        [
            "    fork #0 branch 0 (parent #0): start",
            "    fork #0 branch 1 (parent #0): start",
            "    fork #0 branch 2 (parent #0): start",
            "    fork #0 branch 0 (parent #1): outcome done",
            "    fork #2 branch 0 (parent #2): start",
            "    fork #0 branch 2 (parent #3): outcome timed_out",
            "    fork #2 branch 1 (parent #2): start",
            "    fork #2 branch 0 (parent #5): outcome done",
            "    fork #2 branch 1 (parent #7): outcome done",
            "    fork #2 join: branch 0 done (#8), branch 1 done (#9)",
            "    fork #0 branch 1 (parent #10): outcome done",
            "    fork #0 join: branch 0 done (#4), branch 1 done (#11), branch 2 timed_out (#6)",
        ]
    );

    // The runs agree up to the right branch's outcome.
    let out = workflow(&path, &["diff", &done.to_string(), &slow.to_string()]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "runs differ at transition #6:");
    assert!(
        lines[1].starts_with(&format!("  {done}: #6 hop 4 right -> join [accepted] Part")),
        "{text}"
    );
    assert_eq!(lines[2], "      fork #0 branch 2 (parent #3): outcome done");
    assert!(
        lines[3].starts_with(&format!(
            "  {slow}: #6 hop 4 lead -> right [TURN FAILED: agent `right` timed out after 1000 ms] AskRight"
        )),
        "{text}"
    );
    assert_eq!(
        lines[4],
        "      fork #0 branch 2 (parent #3): outcome timed_out"
    );
    assert_eq!(lines.len(), 5, "{text}");
}
