//! The work queue: claims with `FOR UPDATE SKIP LOCKED`, leases and
//! fencing tokens (core's rules) checked in every write's transaction.

use std::sync::Arc;
use std::time::Duration;

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use examples::payment::{Provider, order, payment};
use workflow_core::RunError;
use workflow_core::ledger::{Ledger, LedgerError};
use workflow_postgres::{PostgresLedger, Settle};

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
                    while let Some(claimed) = worker.claim_next(&["deploy"], name, LONG).unwrap() {
                        assert_eq!(claimed.lease.holder, name);
                        assert_eq!(claimed.input, "{}");
                        mine.push((claimed.lease.run_id, claimed.lease.token));
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
    assert!(
        ledger.claim_next(&["deploy"], "c", LONG).unwrap().is_none(),
        "nothing left"
    );
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

    assert!(
        ledger.claim_next(&["other"], "a", LONG).unwrap().is_none(),
        "only the workflows asked for"
    );
    let a = ledger
        .claim_next(&["deploy"], "a", Duration::ZERO)
        .unwrap()
        .expect("claims")
        .lease;
    assert_eq!((a.run_id, a.token), (run, 1));
    ledger
        .append_leased(&records[0], &a)
        .expect("a holds the run");

    // a's lease has expired: b takes the run over.
    let b = ledger
        .claim_next(&["deploy"], "b", LONG)
        .unwrap()
        .expect("takes over")
        .lease;
    assert_eq!((b.run_id, b.token), (run, 2));
    assert!(
        ledger.claim_next(&["deploy"], "c", LONG).unwrap().is_none(),
        "b's lease holds"
    );
    // One meaning of a lease: resuming the run by hand is refused too.
    assert!(matches!(
        ledger.claim(run, "by hand", LONG),
        Err(LedgerError::Claimed { holder, .. }) if holder == "b"
    ));

    let fenced = LedgerError::Fenced {
        run_id: run,
        token: 1,
        current: 2,
    };
    assert_eq!(ledger.append_leased(&records[1], &a), Err(fenced.clone()));
    let call = records
        .iter()
        .find_map(|r| r.turn.as_ref()?.tool_calls.first().cloned())
        .expect("the run called a tool");
    assert_eq!(
        ledger.append_tool_call_leased(
            run,
            1,
            &workflow_core::ledger::JournalEntry::bind(run, 1, "", call.clone()),
            &a
        ),
        Err(fenced.clone())
    );
    assert_eq!(ledger.renew(&a), Err(fenced.clone()));
    assert_eq!(ledger.settle(&a, Settle::Done, "done"), Err(fenced));
    ledger
        .release(&a)
        .expect("a lease taken over is left alone");
    assert_eq!(ledger.lease(run).unwrap().map(|row| row.token), Some(2));
    assert_eq!(
        ledger.records(run).unwrap().len(),
        1,
        "nothing of a's landed"
    );
    assert_eq!(ledger.tool_calls(run, 1).unwrap(), []);

    // b writes the rest, renews, and finishes; the run is never claimed again.
    for record in &records[1..] {
        ledger.append_leased(record, &b).expect("b holds the run");
    }
    ledger.verify_run(run).expect("verifies");
    ledger.renew(&b).expect("b renews");
    ledger
        .settle(&b, Settle::Done, "completed")
        .expect("b finishes");
    assert!(
        ledger
            .claim_next(&["deploy"], "c", Duration::ZERO)
            .unwrap()
            .is_none()
    );
    assert_eq!(ledger.outcome(run).unwrap().as_deref(), Some("completed"));
    // A lease covers only its own run.
    assert!(matches!(
        ledger.append_leased(
            &{
                let mut other = records[0].clone();
                other.run_id = run ^ 1;
                other
            },
            &b
        ),
        Err(LedgerError::Storage(_))
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
    let a = ledger
        .claim_next(&["deploy"], "a", LONG)
        .unwrap()
        .expect("claims")
        .lease;
    assert_eq!(a.run_id, u64::MAX, "run ids are u64 throughout");
    ledger
        .settle(&a, Settle::Queued, "handed back")
        .expect("hands it back");
    let b = ledger
        .claim_next(&["deploy"], "b", LONG)
        .unwrap()
        .expect("claims again")
        .lease;
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
        .claim_next(&["payment"], "a", Duration::ZERO)
        .unwrap()
        .expect("a claims")
        .lease;

    // Worker b takes the expired lease over.
    let b = ledger
        .claim_next(&["payment"], "b", LONG)
        .unwrap()
        .expect("b takes over")
        .lease;
    let before = ledger.records(run).unwrap();

    // Worker a wakes up and carries on with its stale lease: its first
    // commit is refused, and nothing of it lands.
    let stale = payment::Workflow::new((), provider(Duration::ZERO)).with_ledger(ledger.clone());
    let refused = stale.resume_leased(a).await.expect_err("a is fenced off");
    assert!(
        matches!(
            refused.error,
            // The cut run held token 1 from its first record: a took 2.
            RunError::Ledger(LedgerError::Fenced {
                token: 2,
                current: 3,
                ..
            })
        ),
        "{:?}",
        refused.error
    );
    assert_eq!(ledger.records(run).unwrap(), before, "a changed nothing");

    // b resumes the run to its end, the charge served from the journal.
    let resumed = payment::Workflow::new((), provider(Duration::ZERO)).with_ledger(ledger.clone());
    resumed.resume_leased(b.clone()).await.expect("b resumes");
    ledger.settle(&b, Settle::Done, "completed").unwrap();
    let requested = std::fs::read_to_string(dir.join("requests.log")).unwrap();
    assert_eq!(requested.lines().count(), 1, "charged once");
    ledger.verify_run(run).expect("verifies");
    assert!(ledger.records(run).unwrap().len() > before.len());
}
