//! The ablation of the fault-injection suite (issue 14):
//!
//! ```text
//! cargo run --release -p examples --example ablation -- --runs 100 [--seed S]
//! ```
//!
//! runs every scenario of `examples/src/faults/` N times with its fault and
//! N times without, in enforce mode and in audit mode, and prints the
//! table of `book/src/mast.md`.

use std::process::ExitCode;

use examples::faults::ablation::ablate;

fn main() -> ExitCode {
    let mut runs: u32 = 100;
    let mut seed: u64 = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        let parsed = match (arg.as_str(), value.as_deref()) {
            ("--runs", Some(v)) => v.parse().map(|n| runs = n).is_ok(),
            ("--seed", Some(v)) => v.parse().map(|s| seed = s).is_ok(),
            _ => false,
        };
        if !parsed {
            eprintln!("usage: ablation [--runs N] [--seed S] (got `{arg}`)");
            return ExitCode::from(2);
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let table = runtime.block_on(ablate(runs, seed));
    print!("{table}");
    ExitCode::SUCCESS
}
