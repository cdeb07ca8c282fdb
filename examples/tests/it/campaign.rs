//! A small ledger campaign (`examples::campaign`; the full one is
//! `cargo run --release -p examples --example ledger_campaign`): kills of a
//! three-agent workflow and of a parallel one (three branches at once), a
//! write per turn, two concurrent resumers per run, tampering with a copy
//! of the ledger. Every check must hold, and some kills must have cut a
//! fan-out.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use examples::campaign::{Config, INPUT, run};
use examples::relay::{EffectLog, relay};
use workflow_core::ledger::{Ledger, SqliteLedger};

use crate::fixtures::scratch;

#[test]
fn a_small_campaign_loses_nothing_repeats_no_effect_and_detects_every_tampering() {
    let dir = scratch("campaign");
    let config = Config {
        kills: 25,
        tampers: 150,
        dir: dir.join("campaign"),
        child: (env!("CARGO_BIN_EXE_campaign_child").into(), Vec::new()),
        seed: 0xc0ffee,
    };
    let report = run(&config).expect("the campaign runs");
    eprintln!("{report}");
    assert!(report.passed(), "{report}");
    assert!(report.runs >= config.kills / 2, "{report}");
    assert!(report.fanout_runs > 0, "{report}");
    assert!(report.cut_in_fan_out > 0, "{report}");
    assert_eq!(
        report
            .tampering
            .values()
            .map(|(tried, _)| tried)
            .sum::<usize>(),
        config.tampers
    );
}

#[tokio::test(flavor = "current_thread")]
async fn two_processes_resuming_one_cut_run_make_its_write_once_and_one_is_told_it_is_claimed() {
    let dir = scratch("two-resumers");
    let path = dir.join("runs.db");
    let (requests, effects) = (dir.join("requests.log"), dir.join("effects.log"));
    // A run cut in its first write (the writes hang): dropped, as a crash
    // in this process would leave it.
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let log = EffectLog {
        requests: requests.clone(),
        effects: effects.clone(),
        delay: Duration::from_secs(3600),
    };
    let wf = relay::Workflow::new((), log).with_ledger(ledger.clone());
    let cut = tokio::time::timeout(Duration::from_millis(50), wf.run(INPUT)).await;
    assert!(cut.is_err(), "the run waits in its write");
    let run = ledger.runs().expect("lists")[0];
    assert_eq!(ledger.records(run).expect("reads").len(), 1);

    // Two processes resume it at once; each write takes 500 ms.
    let child = env!("CARGO_BIN_EXE_campaign_child");
    let spawn = || {
        Command::new(child)
            .arg("--resume")
            .args([&path, &requests, &effects])
            .args([run.to_string(), "500".into()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts")
    };
    let (a, b) = (spawn(), spawn());
    let outputs: Vec<String> = [a, b]
        .into_iter()
        .map(|p| {
            let out = p.wait_with_output().expect("reaped");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        })
        .collect();
    let completed = outputs.iter().filter(|o| *o == "completed").count();
    let claimed = outputs
        .iter()
        .filter(|o| o.starts_with("claimed by "))
        .count();
    assert_eq!((completed, claimed), (1, 1), "{outputs:?}");
    // The cut turn's write (the cut run never got to make it) is made once,
    // by the resumer that worked, and so is each later one.
    let text = std::fs::read_to_string(&requests).expect("requests were logged");
    let drafts = text.lines().filter(|l| l.ends_with(" draft")).count();
    assert_eq!(drafts, 1, "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
    assert_eq!(ledger.records(run).expect("reads").len(), 4);
    ledger.verify_run(run).expect("verifies");
}
