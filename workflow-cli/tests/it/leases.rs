//! `workflow show` on a run whose agents renewed and revoked leases, and
//! whose operator revoked one: each act is shown with the turn that made
//! it, and the operator's revocation after the records.

use std::process::Command;
use std::sync::Arc;

use workflow_core::LeaseId;
use workflow_core::ledger::SqliteLedger;
use workflow_core::prelude::*;

use crate::fixtures::scratch;

#[workflow(entry = first, output = u32, deps = ())]
pub mod pair {
    use super::*;

    /// A handoff to `second`.
    #[handoff]
    pub struct ToSecond {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Finish>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Start], to = [second])]
    async fn first(_input: u32, cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::Second(ToSecond {
            op: Operation::new("finish", ""),
            scope: cx.lease(authority::Finish).until_hop(1),
            evidence: vec![],
            open: vec![],
            stop: StopWhen::at_hop(MAX_HOPS),
        }))
    }

    #[agent(owns = [Finish], to = [END])]
    async fn second(_task: ToSecond, cx: second::Context<'_>) -> Result<second::Next, Reject> {
        // Within the run's hop cap: granted; with no end: refused.
        let _granted = cx.request_renewal(Expiry::AtHop(2));
        let _refused = cx.request_renewal(Expiry::Never);
        Ok(second::Next::End(7))
    }
}

#[tokio::test]
async fn show_prints_each_lease_act_and_the_operators_revocations() {
    let dir = scratch("leases");
    let path = dir.join("runs.db");
    let ledger = Arc::new(SqliteLedger::open(&path).expect("opens"));
    let wf = pair::Workflow::new((), ()).with_ledger(ledger.clone());
    let run = wf.run(1).await.expect("completes").transcript.run_id();
    wf.revoke(LeaseId {
        run_id: run,
        seq: 1,
    })
    .expect("kept");
    let out = Command::new(env!("CARGO_BIN_EXE_workflow"))
        .arg("--ledger")
        .arg(&path)
        .args(["show", &run.to_string()])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(
            "    lease: renewal of the lease on `Finish` (#1) from AtHop(1) to AtHop(2): granted"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("    lease: renewal of the lease on `Finish` (#1) from AtHop(2) to Never: refused: a renewal must say when it ends"),
        "{shown}"
    );
    assert!(
        shown.contains("the lease granted at #1 (after #2)"),
        "{shown}"
    );
}
