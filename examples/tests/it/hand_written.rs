//! The hand-written workflow (`src/hand_written.rs`) against the macro one
//! (`src/loop_bench.rs`): for the same inputs, the same records (payload
//! bytes, sender, receiver, receipts), the same errors, and the same
//! published shape (graph, manifest, schemas, diagram).

use examples::hand_written::{self, counter as by_hand};
use examples::loop_bench::{self, counter as by_macro};
use workflow_core::{Aborted, Completed, Receipt, Step, Transcript, TransferRecord};

/// A record without what legitimately differs between two runs (the run id
/// and the timing).
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    seq: u32,
    hop: u32,
    from: String,
    to: String,
    payload_type: String,
    payload: String,
    receipt: Receipt,
}

fn seen(t: &Transcript) -> Vec<Seen> {
    t.records()
        .expect("the records read back")
        .into_iter()
        .map(|r: TransferRecord| Seen {
            seq: r.seq,
            hop: r.hop,
            from: r.from.to_string(),
            to: r.to.to_string(),
            payload_type: r.payload_type.into_owned(),
            payload: r.payload,
            receipt: r.receipt,
        })
        .collect()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
}

type Outcome = (Result<u32, workflow_core::RunError>, Vec<Seen>);

fn by_hand_outcome(r: Result<Completed<hand_written::Tally>, Aborted>) -> Outcome {
    match r {
        Ok(done) => (Ok(done.output.done), seen(&done.transcript)),
        Err(a) => (Err(a.error), seen(&a.transcript)),
    }
}

fn by_macro_outcome(r: Result<Completed<loop_bench::Tally>, Aborted>) -> Outcome {
    match r {
        Ok(done) => (Ok(done.output.done), seen(&done.transcript)),
        Err(a) => (Err(a.error), seen(&a.transcript)),
    }
}

#[test]
fn three_rounds_give_the_same_records() {
    let rt = rt();
    let hand = rt
        .block_on(by_hand::Workflow::new((), ()).run(3))
        .expect("the hand-written run completes");
    let mac = rt
        .block_on(by_macro::Workflow::new((), ()).run(3))
        .expect("the macro run completes");
    assert_eq!(hand.output.done, 3);
    assert_eq!(mac.output.done, 3);
    // The outputs' bytes, too.
    assert_eq!(
        serde_json::to_string(&hand.output).unwrap(),
        serde_json::to_string(&mac.output).unwrap()
    );

    let (h, m) = (seen(&hand.transcript), seen(&mac.transcript));
    // 1 + 2 * rounds turns, one record each, plus the transfer to END.
    assert_eq!(h.len(), 8);
    assert_eq!(h, m);
    for (i, r) in h.iter().enumerate() {
        assert_eq!(r.receipt, Receipt::Accepted, "record {i}");
        // The exact bytes, read through the other accessor.
        assert_eq!(hand.transcript.payload(i), mac.transcript.payload(i));
    }
    let route: Vec<(&str, &str)> = h.iter().map(|r| (r.from.as_str(), r.to.as_str())).collect();
    assert_eq!(
        route,
        [
            ("START", "planner"),
            ("planner", "worker"),
            ("worker", "reviewer"),
            ("reviewer", "worker"),
            ("worker", "reviewer"),
            ("reviewer", "worker"),
            ("worker", "reviewer"),
            ("reviewer", "END"),
        ]
    );
    assert_eq!(h[0].payload, "3");
    assert_eq!(h[7].payload, r#"{"done":3}"#);
    assert_eq!(
        h[1].payload,
        r#"{"op":{"name":"round","detail":""},"scope":{"authority":"Count","expires":{"at_hop":2003}},"evidence":[],"open":[],"stop":[{"kind":"hop_reached","hop":2003}],"remaining":3,"done":0}"#
    );
    // The rendered transcripts differ only in the run id (not printed) and
    // nothing else: the display has no timing.
    assert_eq!(hand.transcript.to_string(), mac.transcript.to_string());
}

#[test]
fn every_input_gives_the_same_outcome() {
    let rt = rt();
    let (hand, mac) = (
        by_hand::Workflow::new((), ()),
        by_macro::Workflow::new((), ()),
    );
    // 0: the worker's pre-condition rejects; MAX_ROUNDS + 1: the planner's.
    for rounds in [
        0,
        1,
        2,
        5,
        17,
        hand_written::MAX_ROUNDS,
        hand_written::MAX_ROUNDS + 1,
    ] {
        let h = by_hand_outcome(rt.block_on(hand.run(rounds)));
        let m = by_macro_outcome(rt.block_on(mac.run(rounds)));
        assert_eq!(h, m, "rounds = {rounds}");
    }
    let rejected = by_hand_outcome(rt.block_on(hand.run(0)));
    assert!(
        matches!(
            &rejected.1[1].receipt,
            Receipt::Rejected { reason: workflow_core::RejectReason::PreCondition { message, .. } }
                if message == "there is a round left to do"
        ),
        "{:?}",
        rejected.1
    );
}

#[test]
fn a_lowered_hop_cap_stops_both_at_the_same_record() {
    let rt = rt();
    let hand = by_hand::Workflow::new((), ()).with_max_hops(4);
    let mac = by_macro::Workflow::new((), ()).with_max_hops(4);
    let h = by_hand_outcome(rt.block_on(hand.run(10)));
    let m = by_macro_outcome(rt.block_on(mac.run(10)));
    assert_eq!(h, m);
    assert!(matches!(
        h.0,
        Err(workflow_core::RunError::Rejected {
            reason: workflow_core::RejectReason::HopCap { max_hops: 4 },
            ..
        })
    ));
}

#[test]
fn stepping_visits_the_same_agents() {
    let rt = rt();
    let (hand, mac) = (
        by_hand::Workflow::new((), ()),
        by_macro::Workflow::new((), ()),
    );
    let (mut h, mut m) = (hand.start(2), mac.start(2));
    let mut visited = Vec::new();
    loop {
        assert_eq!(h.next_agent(), m.next_agent());
        assert_eq!(h.hops(), m.hops());
        visited.extend(h.next_agent());
        let (hs, ms) = (rt.block_on(h.step()), rt.block_on(m.step()));
        assert_eq!(seen(h.transcript()), seen(m.transcript()));
        match (hs.expect("hand step"), ms.expect("macro step")) {
            (Step::Continue { next: a }, Step::Continue { next: b }) => assert_eq!(a, b),
            (Step::Finished(a), Step::Finished(b)) => {
                assert_eq!(a.done, b.done);
                break;
            }
            (a, b) => panic!("diverged: {a:?} vs {b:?}"),
        }
    }
    assert_eq!(
        visited,
        ["planner", "worker", "reviewer", "worker", "reviewer"]
    );
}

#[test]
fn the_published_shape_is_the_same() {
    assert_eq!(by_hand::MAX_HOPS, by_macro::MAX_HOPS);
    assert_eq!(by_hand::MAX_HOPS, by_hand::GRAPH.max_hops);
    assert_eq!(hand_written::MAX_ROUNDS, loop_bench::MAX_ROUNDS);
    assert_eq!(
        by_hand::Workflow::manifest(),
        by_macro::Workflow::manifest()
    );
    assert_eq!(by_hand::Workflow::mermaid(), by_macro::Workflow::mermaid());
    let (hs, ms) = (by_hand::Workflow::schemas(), by_macro::Workflow::schemas());
    assert_eq!(
        hs.names().collect::<Vec<_>>(),
        ms.names().collect::<Vec<_>>()
    );
    for (name, schema) in hs.iter() {
        assert_eq!(
            serde_json::to_string_pretty(schema).unwrap(),
            serde_json::to_string_pretty(ms.get(name).unwrap()).unwrap(),
            "schema {name}"
        );
    }
    // As published, they differ only in the Rust types they were made from
    // (the twin's types live in another module), in their `$comment`.
    let strip = |mut v: serde_json::Value| {
        if let Some(o) = v.as_object_mut() {
            o.remove("$comment");
        }
        v
    };
    for name in hs.names() {
        assert_eq!(
            strip(hs.published(name).unwrap()),
            strip(ms.published(name).unwrap()),
            "published {name}"
        );
    }

    let (h, m) = (&by_hand::GRAPH, by_macro::GRAPH);
    assert_eq!((h.name, h.input, h.output), (m.name, m.input, m.output));
    assert_eq!(h.agents.len(), m.agents.len());
    for (a, b) in h.agents.iter().zip(m.agents) {
        assert_eq!(
            (a.name, a.input, a.owns, a.tools, a.timeout_ms),
            (b.name, b.input, b.owns, b.tools, b.timeout_ms)
        );
        assert_eq!((a.input_schema)(), (b.input_schema)());
        assert_eq!(a.pre, b.pre, "pre-conditions of {}", a.name);
        assert_eq!(a.post, b.post, "post-conditions of {}", a.name);
    }
    assert_eq!(h.edges.len(), m.edges.len());
    for (a, b) in h.edges.iter().zip(m.edges) {
        assert_eq!(
            (a.from, a.to, a.payload, a.bound),
            (b.from, b.to, b.payload, b.bound)
        );
        assert_eq!((a.payload_schema)(), (b.payload_schema)());
    }
    assert_eq!(
        <by_hand::Work as workflow_core::Handoff>::PARTS,
        <by_macro::Work as workflow_core::Handoff>::PARTS
    );
    assert_eq!(
        <by_hand::Review as workflow_core::Handoff>::PARTS,
        <by_macro::Review as workflow_core::Handoff>::PARTS
    );
}

#[test]
fn payloads_cross_between_the_two() {
    // What one serializes, the other deserializes, and unknown fields are
    // denied by both.
    let rt = rt();
    let done = rt
        .block_on(by_macro::Workflow::new((), ()).run(1))
        .expect("runs");
    let work = done.transcript.payload(1).expect("planner -> worker");
    let parsed: by_hand::Work = serde_json::from_str(&work).expect("the macro's bytes parse");
    assert_eq!(serde_json::to_string(&parsed).unwrap(), work);
    let extra = work.replacen('{', r#"{"extra":1,"#, 1);
    assert!(serde_json::from_str::<by_hand::Work>(&extra).is_err());
    assert!(serde_json::from_str::<by_macro::Work>(&extra).is_err());
}
