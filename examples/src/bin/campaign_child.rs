//! Runs the ledger campaign's workflow over and over against an SQLite
//! ledger until it is killed (`tests/it/campaign.rs` kills it).
//!
//! Usage: `campaign_child LEDGER_FILE REQUESTS_FILE EFFECTS_FILE`

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    examples::campaign::child_main(&args)
}
