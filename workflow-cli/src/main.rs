//! `workflow`: read the runs an SQLite ledger recorded (list, show, verify,
//! export, diff). `replay` and `schema` need a workflow's own types: build
//! a binary that calls [`workflow_cli::main_for`] for them.

fn main() -> std::process::ExitCode {
    workflow_cli::main()
}
