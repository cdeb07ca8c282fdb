//! The work queue: claims with `FOR UPDATE SKIP LOCKED`, leases and
//! fencing tokens checked in every write's transaction.

use std::sync::Arc;
use std::time::Duration;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use examples::payment::{Provider, order, payment};
use workflow_core::RunError;
use workflow_core::ledger::{Ledger, LedgerError};
use workflow_postgres::PostgresLedger;

use crate::cluster::cluster_or_skip;

const LONG: Duration = Duration::from_secs(3600);

/// Two claimers on their own connections, racing over the same queue: each
/// run is claimed exactly once, and all are claimed.
#[test]
fn two_claimers_never_claim_the_same_run() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("claimers");
    let ledger = PostgresLedger::connect(&url).expect("connects");
    const RUNS: u64 = 200;
    for run in 0..RUNS {
        assert!(ledger.submit(run, "deploy", "{}").unwrap());
    }
    assert!(
        !ledger.submit(7, "deploy", "{\"again\":1}").unwrap(),
        "submitted once"
    );

    let claimed: Vec<Vec<(u64, u64)>> = std::thread::scope(|s| {
        let workers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|name| {
                let url = url.clone();
                s.spawn(move || {
                    let worker = PostgresLedger::connect(&url).expect("connects");
                    let mut mine = Vec::new();
                    while let Some(lease) = worker.claim(name, LONG).unwrap() {
                        assert_eq!(lease.holder, name);
                        assert_eq!(lease.input, "{}");
                        mine.push((lease.run_id, lease.token));
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut all: Vec<u64> = claimed.iter().flatten().map(|(run, _)| *run).collect();
    all.sort_unstable();
    assert_eq!(all, (0..RUNS).collect::<Vec<_>>(), "every run claimed once");
    assert!(claimed.iter().flatten().all(|(_, token)| *token == 1));
    assert!(ledger.claim("c", LONG).unwrap().is_none(), "nothing left");
}

/// A lease that expired is taken over with a newer token; every write of
/// the old holder is then refused, its heartbeat and its finish too.
#[test]
fn a_stale_holder_is_fenced_off_after_a_takeover() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("fencing");
    let ledger = PostgresLedger::connect(&url).expect("connects");
    // A run's records to write again under the leases.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let scratch = Arc::new(workflow_core::ledger::MemoryLedger::new());
    let run = runtime.block_on(async {
        deploy::Workflow::new(staging_root(), FakeCloud::one_page())
            .with_ledger(scratch.clone())
            .run(staging_goal())
            .await
            .expect("completes")
            .transcript
            .run_id()
    });
    let records = scratch.records(run).unwrap();
    ledger.submit(run, "deploy", "{}").unwrap();

    let a = ledger.claim("a", Duration::ZERO).unwrap().expect("claims");
    assert_eq!((a.run_id, a.token), (run, 1));
    let a_writes = ledger.fenced(a.clone());
    a_writes.append(&records[0]).expect("a holds the run");

    // a's lease has expired: b takes the run over.
    let b = ledger.claim("b", LONG).unwrap().expect("takes over");
    assert_eq!((b.run_id, b.token), (run, 2));
    assert!(
        ledger.claim("c", LONG).unwrap().is_none(),
        "b's lease holds"
    );

    let fenced = LedgerError::Fenced {
        run_id: run,
        token: 1,
        current: 2,
    };
    assert_eq!(a_writes.append(&records[1]), Err(fenced.clone()));
    let call = records
        .iter()
        .find_map(|r| r.turn.as_ref()?.tool_calls.first().cloned())
        .expect("the run called a tool");
    assert_eq!(
        a_writes.append_tool_call(
            run,
            1,
            &workflow_core::ledger::JournalEntry::bind(run, 1, "", call.clone())
        ),
        Err(fenced.clone())
    );
    assert_eq!(ledger.heartbeat(&a, LONG), Err(fenced.clone()));
    assert_eq!(ledger.finish(&a), Err(fenced.clone()));
    assert_eq!(ledger.release(&a), Err(fenced));
    assert_eq!(
        ledger.records(run).unwrap().len(),
        1,
        "nothing of a's landed"
    );
    assert_eq!(ledger.tool_calls(run, 1).unwrap(), []);

    // b writes the rest, renews, and finishes; the run is never claimed again.
    let b_writes = ledger.fenced(b.clone());
    for record in &records[1..] {
        b_writes.append(record).expect("b holds the run");
    }
    ledger.verify_run(run).expect("verifies");
    ledger.heartbeat(&b, LONG).expect("b renews");
    ledger.finish(&b).expect("b finishes");
    assert!(ledger.claim("c", Duration::ZERO).unwrap().is_none());
    // A lease fences only its own run.
    assert!(matches!(
        b_writes.append(&{
            let mut other = records[0].clone();
            other.run_id = run ^ 1;
            other
        }),
        Err(LedgerError::Fenced { .. })
    ));
}

/// A released run goes back to the queue and is claimed again with the
/// next token.
#[test]
fn a_released_run_is_claimed_again_with_the_next_token() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("release");
    let ledger = PostgresLedger::connect(&url).expect("connects");
    ledger.submit(u64::MAX, "deploy", "{}").unwrap();
    let a = ledger.claim("a", LONG).unwrap().expect("claims");
    assert_eq!(a.run_id, u64::MAX, "run ids are u64 throughout");
    ledger.release(&a).expect("hands it back");
    let b = ledger.claim("b", LONG).unwrap().expect("claims again");
    assert_eq!((b.run_id, b.token), (u64::MAX, 2));
}

/// A payment cut after its charge was journaled is taken over by a second
/// worker once the first one's lease expires: the takeover resumes it with
/// the charge served (not made again); the first worker, coming back,
/// cannot commit anything to it.
#[tokio::test(flavor = "current_thread")]
async fn a_cut_run_is_taken_over_and_the_old_worker_is_fenced() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("takeover");
    let ledger = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let dir = cluster.dir().join("effects");
    std::fs::create_dir_all(&dir).unwrap();
    let provider = |mail_delay| Provider {
        requests: dir.join("requests.log"),
        charges: dir.join("charges.log"),
        mail_delay,
    };

    // Worker a runs a payment until the charge is journaled, then dies.
    let cut = payment::Workflow::new((), provider(LONG)).with_ledger(ledger.clone());
    let mut session = Box::pin(cut.run(order()));
    let run = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            tokio::select! {
                _ = &mut session => panic!("the mail never comes"),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            if let Some(&run) = ledger.runs().unwrap().first()
                && !ledger.tool_calls(run, 2).unwrap().is_empty()
            {
                break run;
            }
        }
    })
    .await
    .expect("the charge is journaled");
    drop(session);
    ledger.submit(run, "payment", "{}").unwrap();
    let a = ledger
        .claim("a", Duration::ZERO)
        .unwrap()
        .expect("a claims");

    // Worker b takes the expired lease over.
    let b = ledger.claim("b", LONG).unwrap().expect("b takes over");
    let before = ledger.records(run).unwrap();

    // Worker a wakes up and carries on with its stale lease: its first
    // commit is refused, and nothing of it lands.
    let stale = payment::Workflow::new((), provider(Duration::ZERO))
        .with_ledger(Arc::new(ledger.fenced(a)));
    let refused = stale.resume(run).await.expect_err("a is fenced off");
    assert!(
        matches!(
            refused.error,
            RunError::Ledger(LedgerError::Fenced {
                token: 1,
                current: 2,
                ..
            })
        ),
        "{:?}",
        refused.error
    );
    assert_eq!(ledger.records(run).unwrap(), before, "a changed nothing");

    // b resumes the run to its end, the charge served from the journal.
    let b_ledger = Arc::new(ledger.fenced(b.clone()));
    let resumed = payment::Workflow::new((), provider(Duration::ZERO)).with_ledger(b_ledger);
    resumed.resume(run).await.expect("b resumes");
    ledger.finish(&b).unwrap();
    let requested = std::fs::read_to_string(dir.join("requests.log")).unwrap();
    assert_eq!(requested.lines().count(), 1, "charged once");
    ledger.verify_run(run).expect("verifies");
    assert!(ledger.records(run).unwrap().len() > before.len());
}
