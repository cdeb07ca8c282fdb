//! A small ledger campaign (`examples::campaign`; the full one is
//! `cargo run --release -p examples --example ledger_campaign`): kills of a
//! three-agent workflow with a write per turn, two concurrent resumers per
//! run, tampering with a copy of the ledger. Every check must hold.

use examples::campaign::{Config, run};

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
    assert_eq!(
        report
            .tampering
            .values()
            .map(|(tried, _)| tried)
            .sum::<usize>(),
        config.tampers
    );
}
