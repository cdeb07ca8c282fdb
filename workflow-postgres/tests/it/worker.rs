//! Workers: claim queued runs, drive them under their leases, settle them
//! in the queue; suspended runs wait there and a decision wakes a worker;
//! a stopping worker hands back what it holds.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use examples::deploy_workflow::{FakeCloud, deploy, staging_goal, staging_root};
use examples::payment::{Provider, order, payment};
use workflow_core::ledger::Ledger;
use workflow_postgres::{PostgresLedger, QueueCounts, Settle, Worker, WorkerEvent};

use crate::cluster::cluster_or_skip;

/// The records of a run, without what differs between two clean runs of
/// the same input (run id, timing, hashes chained over them).
pub fn shape(records: &[workflow_core::ledger::LedgerRecord]) -> Vec<(String, String, String)> {
    records
        .iter()
        .map(|r| (r.from.to_string(), r.to.to_string(), r.payload.clone()))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn a_worker_drains_the_queue_and_every_run_is_a_clean_runs_twin() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("drain");
    let ledger = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let clean = {
        let memory = Arc::new(workflow_core::ledger::MemoryLedger::new());
        let run = deploy::Workflow::new(staging_root(), FakeCloud::one_page())
            .with_ledger(memory.clone())
            .run(staging_goal())
            .await
            .expect("completes")
            .transcript
            .run_id();
        shape(&memory.records(run).unwrap())
    };
    let input = serde_json::to_string(&staging_goal()).unwrap();
    const RUNS: u64 = 12;
    for run in 1..=RUNS {
        assert!(ledger.submit(run, deploy::GRAPH.name, &input).unwrap());
    }
    // A run of another workflow is left alone; a bad input fails typed.
    ledger.submit(100, "another", "{}").unwrap();
    ledger
        .submit(101, deploy::GRAPH.name, "{\"nope\":1}")
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let summary = Worker::new(
        deploy::Workflow::new(staging_root(), FakeCloud::one_page()),
        ledger.clone(),
        &url,
    )
    .concurrency(4)
    .until_drained()
    .on_event(move |e| seen.lock().unwrap().push(e.clone()))
    .run()
    .await
    .expect("runs");
    assert_eq!(
        (
            summary.claimed,
            summary.started,
            summary.completed,
            summary.failed
        ),
        (RUNS + 1, RUNS + 1, RUNS, 1),
        "{summary}"
    );
    for run in 1..=RUNS {
        ledger.verify_run(run).expect("verifies");
        assert_eq!(shape(&ledger.records(run).unwrap()), clean, "run {run}");
        assert_eq!(ledger.outcome(run).unwrap().as_deref(), Some("completed"));
    }
    assert!(
        ledger
            .outcome(101)
            .unwrap()
            .is_some_and(|o| o.starts_with("the submitted input does not decode")),
        "{:?}",
        ledger.outcome(101)
    );
    assert_eq!(ledger.records(101).unwrap(), [], "nothing ran");
    assert_eq!(
        ledger.queue_counts().unwrap(),
        QueueCounts {
            queued: 1,
            claimed: 0,
            suspended: 0,
            done: RUNS + 1
        },
        "the other workflow's run waits"
    );
    let settled = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, WorkerEvent::Settled { .. }))
        .count();
    assert_eq!(settled as u64, RUNS + 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_suspended_run_waits_in_the_queue_and_a_decision_from_elsewhere_wakes_a_worker() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("wake");
    let ledger = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let input = serde_json::to_string(&staging_goal()).unwrap();
    ledger.submit(7, deploy::GRAPH.name, &input).unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    // Polling once an hour: only a notification can wake it in time.
    let worker = Worker::new(
        deploy::Workflow::new(staging_root(), FakeCloud::drifted()),
        ledger.clone(),
        &url,
    )
    .poll(Duration::from_secs(3600))
    .run_until(async {
        stop_rx.await.ok();
    });
    let decider = async {
        let other = PostgresLedger::connect(&url).expect("connects");
        let wait = |want: fn(&QueueCounts) -> bool| {
            let other = &other;
            async move {
                let start = Instant::now();
                while !want(&other.queue_counts().unwrap()) {
                    assert!(start.elapsed() < Duration::from_secs(60), "never settled");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        wait(|c| c.suspended == 1).await;
        assert!(
            other
                .outcome(7)
                .unwrap()
                .is_some_and(|o| o.starts_with("waiting for a decision")),
        );
        let suspension = deploy::Workflow::new(staging_root(), FakeCloud::drifted())
            .with_ledger(Arc::new(PostgresLedger::connect(&url).unwrap()))
            .suspension(7)
            .expect("waits in the database");
        let mut plan: serde_json::Value =
            serde_json::from_str(&suspension.payload_json().unwrap()).unwrap();
        plan["vpc_id"] = "vpc-2stag".into();
        plan["vpc_env"] = "staging".into();
        let edit = workflow_core::Decision::Edit {
            by: "ops@acme".into(),
            payload: plan,
        };
        let decided = Instant::now();
        assert!(other.decide(7, &edit).unwrap(), "queued");
        assert!(!other.decide(7, &edit).unwrap(), "one decision at a time");
        wait(|c| c.done == 1).await;
        let woke = decided.elapsed();
        stop_tx.send(()).unwrap();
        woke
    };
    let (summary, woke) = tokio::join!(worker, decider);
    let summary = summary.expect("runs");
    assert!(woke < Duration::from_secs(30), "woken by NOTIFY: {woke:?}");
    assert_eq!(
        (
            summary.started,
            summary.decided,
            summary.suspended,
            summary.completed
        ),
        (1, 1, 1, 1),
        "{summary}"
    );
    ledger.verify_run(7).expect("verifies");
    assert!(ledger.records(7).unwrap().iter().any(|r| matches!(
        r.receipt,
        workflow_core::Receipt::Approved { edited: true, .. }
    )));
}

#[tokio::test(flavor = "current_thread")]
async fn a_stopping_worker_hands_its_run_back_and_the_next_serves_the_journaled_charge() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("handback");
    let ledger = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let dir = cluster.dir().join("effects");
    std::fs::create_dir_all(&dir).unwrap();
    let provider = |mail_delay| Provider {
        requests: dir.join("requests.log"),
        charges: dir.join("charges.log"),
        mail_delay,
    };
    let input = serde_json::to_string(&order()).unwrap();
    ledger.submit(9, payment::GRAPH.name, &input).unwrap();

    // The mail never comes: stopped once the charge is journaled, with no
    // grace, the worker hands the run back.
    let stop = {
        let ledger = ledger.clone();
        async move {
            while ledger.tool_calls(9, 2).unwrap().is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let summary = Worker::new(
        payment::Workflow::new((), provider(Duration::from_secs(3600))),
        ledger.clone(),
        &url,
    )
    .grace(Duration::ZERO)
    .run_until(stop)
    .await
    .expect("runs");
    assert_eq!((summary.claimed, summary.handed_back), (1, 1), "{summary}");
    assert_eq!(ledger.queue_counts().unwrap().queued, 1);
    assert_eq!(
        ledger.lease(9).unwrap().map(|row| row.expires_at_ms),
        Some(0),
        "released: claimable at once"
    );

    let summary = Worker::new(
        payment::Workflow::new((), provider(Duration::ZERO)),
        ledger.clone(),
        &url,
    )
    .until_drained()
    .run()
    .await
    .expect("runs");
    assert_eq!((summary.resumed, summary.completed), (1, 1), "{summary}");
    let requested = std::fs::read_to_string(dir.join("requests.log")).unwrap();
    assert_eq!(requested.lines().count(), 1, "charged once");
    ledger.verify_run(9).expect("verifies");
    let _ = Settle::Done;
}

/// A turn longer than the lease: the worker's heartbeat keeps the run its
/// own (nobody can claim it meanwhile); once the lease is taken from it,
/// the next heartbeat finds out, the run is dropped, and nothing more of it
/// is committed.
#[tokio::test(flavor = "current_thread")]
async fn the_heartbeat_holds_a_long_turn_and_a_lost_lease_stops_the_run() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("heartbeat");
    let ledger = Arc::new(PostgresLedger::connect(&url).expect("connects"));
    let dir = cluster.dir().join("effects");
    std::fs::create_dir_all(&dir).unwrap();
    let provider = |mail_delay| Provider {
        requests: dir.join("requests.log"),
        charges: dir.join("charges.log"),
        mail_delay,
    };
    let input = serde_json::to_string(&order()).unwrap();
    let ttl = Duration::from_millis(300);

    // Held through a 1.5 s turn with a 300 ms lease.
    ledger.submit(1, payment::GRAPH.name, &input).unwrap();
    let rival = async {
        let other = PostgresLedger::connect(&url).unwrap();
        let mut stolen = 0;
        while other.pending(&[payment::GRAPH.name]).unwrap() > 0 {
            stolen += other
                .claim_next(&[payment::GRAPH.name], "rival", ttl)
                .unwrap()
                .is_some() as u32;
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        stolen
    };
    let worker = Worker::new(
        payment::Workflow::new((), provider(Duration::from_millis(1500))),
        ledger.clone(),
        &url,
    )
    .lease_ttl(ttl)
    .until_drained()
    .run();
    let (summary, stolen) = tokio::join!(worker, rival);
    let summary = summary.expect("runs");
    assert_eq!(stolen, 0, "never claimable while held");
    assert_eq!((summary.completed, summary.fenced), (1, 0), "{summary}");

    // The lease is taken from it during the same long turn.
    ledger.submit(2, payment::GRAPH.name, &input).unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let worker = Worker::new(
        payment::Workflow::new((), provider(Duration::from_millis(1500))),
        ledger.clone(),
        &url,
    )
    .lease_ttl(ttl)
    .on_event(move |e| seen.lock().unwrap().push(e.clone()))
    .run_until(async {
        stop_rx.await.ok();
    });
    let thief = async {
        while ledger.tool_calls(2, 2).unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Another holder's claim, for an hour.
        cluster.sql(
            "heartbeat",
            "UPDATE workflow_leases SET token = token + 1, holder = 'thief',
                 expires_at_ms = expires_at_ms + 3600000 WHERE run_id = 2",
        );
        let before = ledger.records(2).unwrap().len();
        while !events
            .lock()
            .unwrap()
            .contains(&WorkerEvent::Fenced { run_id: 2 })
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(1600)).await;
        stop_tx.send(()).unwrap();
        before
    };
    let (summary, before) = tokio::join!(worker, thief);
    let summary = summary.expect("runs");
    assert_eq!((summary.fenced, summary.completed), (1, 0), "{summary}");
    assert_eq!(
        ledger.records(2).unwrap().len(),
        before,
        "nothing more committed"
    );
}
