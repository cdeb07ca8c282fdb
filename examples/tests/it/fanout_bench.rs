//! The fan-out workload of the benchmarks (`examples/bench_fanout.rs`):
//! every round's three views reach the join, each branch's transfers are
//! recorded with its lineage, and the branches of a round overlap.

use examples::fanout_bench::{Job, fanout3};

#[tokio::test]
async fn every_round_joins_three_views_and_records_each_branch() {
    let wf = fanout3::Workflow::new((), ());
    let done = wf
        .run(Job {
            rounds: 2,
            sleep_ms: 0,
        })
        .await
        .unwrap();
    assert_eq!((done.output.done, done.output.views), (2, 6));
    let records = done.transcript.records().unwrap();
    let shape: Vec<String> = records
        .iter()
        .map(|r| {
            let kind = match &r.lineage {
                None => "",
                Some(workflow_core::Lineage::Start { .. }) => " start",
                Some(workflow_core::Lineage::Step { .. }) => " step",
                Some(workflow_core::Lineage::Outcome { .. }) => " outcome",
                Some(workflow_core::Lineage::Join { .. }) => " join",
            };
            format!("{}->{}{kind}", r.from, r.to)
        })
        .collect();
    let round = [
        "dispatch->view0 start",
        "dispatch->view1 start",
        "dispatch->view2 start",
        "view0->join outcome",
        "view1->join outcome",
        "view2->join outcome",
        "dispatch->join join",
    ];
    let mut want = vec!["START->begin".to_owned(), "begin->dispatch".to_owned()];
    for end in ["join->dispatch", "join->END"] {
        want.extend(round.iter().map(|s| s.to_string()));
        want.push(end.to_owned());
    }
    assert_eq!(shape, want);
}

#[tokio::test(start_paused = true)]
async fn the_branches_of_a_round_sleep_at_the_same_time() {
    let wf = fanout3::Workflow::new((), ());
    let start = tokio::time::Instant::now();
    let done = wf
        .run(Job {
            rounds: 4,
            sleep_ms: 10,
        })
        .await
        .unwrap();
    assert_eq!(done.output.views, 12);
    // Four rounds of three 10 ms branches: 40 ms when each round's branches
    // overlap, 120 ms when they run one after the other.
    assert_eq!(start.elapsed(), std::time::Duration::from_millis(40));
}

#[tokio::test(start_paused = true)]
async fn the_map_form_joins_sixteen_views_a_round_in_list_order_at_once() {
    use examples::fanout_bench::fanout_map;
    let wf = fanout_map::Workflow::new((), ());
    let start = tokio::time::Instant::now();
    let done = wf
        .run(fanout_map::MapJob {
            width: 16,
            job: Job {
                rounds: 3,
                sleep_ms: 10,
            },
        })
        .await
        .unwrap();
    assert_eq!((done.output.done, done.output.views), (3, 48));
    // START -> begin -> dispatch, then per round 16 starts, 16 outcomes,
    // the join and its handoff.
    assert_eq!(done.transcript.len(), 2 + 3 * 34);
    // Three rounds of sixteen 10 ms branches, each round's at once.
    assert_eq!(start.elapsed(), std::time::Duration::from_millis(30));
}
