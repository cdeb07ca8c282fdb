//! The ledger campaign: a kill loop of a three-agent workflow with a write
//! per turn, two concurrent resumers per run, and tampering with copies of
//! the ledger; prints a table of what was found (`examples::campaign`).
//!
//! Run: `cargo run --release -p examples --example ledger_campaign -- --kills 200 --tampers 1000`
//! (options: `--dir DIR`, default a folder in the temporary directory;
//! `--seed N`). Exit code 0 when every check held, 1 otherwise.

use std::process::ExitCode;

use examples::campaign::{Config, child_main, run};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child_main(&args[1..]);
    }
    let mut config = Config {
        kills: 200,
        tampers: 1000,
        dir: std::env::temp_dir().join(format!("ledger_campaign-{}", std::process::id())),
        child: match std::env::current_exe() {
            Ok(exe) => (exe, vec!["--child".to_owned()]),
            Err(e) => {
                eprintln!("cannot find this program to run it as the child: {e}");
                return ExitCode::from(2);
            }
        },
        seed: 0x5eed,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next();
        let number = value.and_then(|v| v.parse::<u64>().ok());
        match (flag.as_str(), value, number) {
            ("--kills", _, Some(n)) => config.kills = n as usize,
            ("--tampers", _, Some(n)) => config.tampers = n as usize,
            ("--seed", _, Some(n)) => config.seed = n,
            ("--dir", Some(dir), _) => config.dir = dir.into(),
            _ => {
                eprintln!(
                    "usage: ledger_campaign [--kills N] [--tampers N] [--seed N] [--dir DIR], got `{flag}`"
                );
                return ExitCode::from(2);
            }
        }
    }
    eprintln!(
        "{} kills, {} tamperings, in {}",
        config.kills,
        config.tampers,
        config.dir.display()
    );
    match run(&config) {
        Ok(report) => {
            println!("{report}");
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                eprintln!("some checks failed");
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("the campaign could not run: {e}");
            ExitCode::from(2)
        }
    }
}
