//! A `#[handoff]` struct in serde's plain form gets a direct MessagePack
//! writer (`WriteMsgpack`, generated): it must write exactly the bytes the
//! serde path writes, whatever its fields' types, names and count, and a
//! struct whose serde options change what serde writes gets none. A run's
//! records are written through it; they read back as the payload's JSON.

use std::marker::PhantomData;

use serde::Serialize;
use serde_json::json;
use workflow_core::__private::WriteMsgpack;
use workflow_core::prelude::*;

/// A field type of the user's own, written through serde.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Inner {
    pub x: f64,
    pub tags: std::collections::BTreeMap<String, i8>,
}

#[workflow(entry = first, output = u32)]
pub mod flow {
    use super::*;

    /// Every kind of field: direct ones, serde ones, a raw name, a long one.
    #[handoff]
    pub struct Plain {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Go>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub r#type: String,
        pub maybe: Option<u64>,
        pub list: Vec<i32>,
        pub inner: Inner,
        pub boxed: Box<String>,
        pub a_field_name_longer_than_thirty_one_bytes: bool,
        pub extra: serde_json::Value,
    }

    /// Seventeen fields: a map too long for MessagePack's one-byte header.
    #[handoff]
    pub struct Wide {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Go>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub f1: u8,
        pub f2: u8,
        pub f3: u8,
        pub f4: u8,
        pub f5: u8,
        pub f6: u8,
        pub f7: u8,
        pub f8: u8,
        pub f9: u8,
        pub f10: u8,
        pub f11: u8,
        pub f12: i64,
    }

    /// Renamed fields: serde's own form, so no direct writer.
    #[handoff]
    #[serde(rename_all = "camelCase")]
    pub struct Renamed {
        #[operation]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Go>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
        pub last_step: u32,
    }

    /// A renamed part: no direct writer either.
    #[handoff]
    pub struct PartRenamed {
        #[operation]
        #[serde(rename = "operation")]
        pub op: Operation,
        #[authority]
        pub scope: Scope<authority::Go>,
        #[evidence]
        pub evidence: Vec<Evidence>,
        #[uncertainty]
        pub open: Vec<Uncertainty>,
        #[stop]
        pub stop: StopWhen,
    }

    #[agent(owns = [Plan], to = [second])]
    async fn first(n: u32, cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::Second(super::plain(
            cx.lease(authority::Go).for_next_turn(),
            n,
        )))
    }

    #[agent(owns = [Go], to = [END])]
    async fn second(task: Plain, _cx: second::Context<'_>) -> Result<second::Next, Reject> {
        Ok(second::Next::End(task.list.len() as u32))
    }
}

fn plain(scope: Scope<flow::authority::Go>, n: u32) -> flow::Plain {
    flow::Plain {
        op: Operation::new("go", "with every kind of field"),
        scope,
        evidence: vec![Evidence::complete("a tool", "a claim")],
        open: vec![Uncertainty::new("which?", "a wrong one")],
        stop: StopWhen::at_hop(9).or_when("done"),
        r#type: "kind".into(),
        maybe: Some(u64::MAX),
        list: (0..n as i32).map(|i| i.wrapping_mul(-70_000)).collect(),
        inner: Inner {
            x: 1.5,
            tags: [("a".to_owned(), -3), ("b".to_owned(), 100)].into(),
        },
        boxed: Box::new("é".repeat(40)),
        a_field_name_longer_than_thirty_one_bytes: true,
        extra: json!({"k": [1, "two", null]}),
    }
}

fn contract() -> (
    Operation,
    Scope<flow::authority::Go>,
    Vec<Evidence>,
    Vec<Uncertainty>,
    StopWhen,
) {
    (
        Operation::new("go", ""),
        Scope::new(flow::authority::Go).until_hop(4),
        Vec::new(),
        Vec::new(),
        StopWhen::at_hop(4),
    )
}

/// Whether `T` has a direct writer (autoref specialisation).
struct Probe<T>(PhantomData<T>);
// Chosen for a type with a writer, which none of the probed types has.
#[allow(dead_code)]
trait HasDirect {
    fn direct(&self) -> bool {
        true
    }
}
impl<T: WriteMsgpack> HasDirect for Probe<T> {}
trait NoDirect {
    fn direct(&self) -> bool {
        false
    }
}
impl<T> NoDirect for &Probe<T> {}

/// What `value`'s generated direct writer writes, checked against the
/// serde path's bytes. (Called on the type itself: a function generic over
/// `Serialize` alone would never see the direct writer.)
fn same_bytes<T: WriteMsgpack + Serialize>(value: &T) -> Vec<u8> {
    let mut direct = Vec::new();
    value.write_msgpack(&mut direct, 0).expect("written");
    assert_eq!(
        direct,
        serde_bytes(value),
        "the direct writer writes serde's bytes"
    );
    direct
}

/// What the serde path writes for `value`.
fn serde_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    let mut serde = Vec::new();
    let format = workflow_core::__private::encode(&mut serde, value).expect("encoded");
    assert_eq!(format, workflow_core::__private::PayloadFormat::Msgpack);
    serde
}

#[test]
fn a_plain_handoff_is_written_directly_as_serde_writes_it() {
    fn has_direct_writer<T: WriteMsgpack>() {}
    has_direct_writer::<flow::Plain>();
    has_direct_writer::<flow::Wide>();
    for n in [0, 1, 15, 16, 70_000] {
        let scope = Scope::new(flow::authority::Go).until_hop(n);
        let bytes = same_bytes(&plain(scope, n));
        assert_eq!(bytes[0], 0x80 | 12, "a map of twelve fields");
        let name = b"a_field_name_longer_than_thirty_one_bytes";
        let at = bytes
            .windows(name.len())
            .position(|w| w == name)
            .expect("the long name");
        assert_eq!(bytes[at - 2..at], [0xd9, name.len() as u8], "a str8 header");
    }
    let (op, scope, evidence, open, stop) = contract();
    let wide = flow::Wide {
        op,
        scope,
        evidence,
        open,
        stop,
        f1: 1,
        f2: 2,
        f3: 3,
        f4: 4,
        f5: 5,
        f6: 6,
        f7: 7,
        f8: 8,
        f9: 9,
        f10: 10,
        f11: 255,
        f12: i64::MIN,
    };
    let bytes = same_bytes(&wide);
    assert_eq!(bytes[..3], [0xde, 0, 17], "a map16 header");
}

#[test]
fn a_handoff_whose_serde_options_change_its_form_has_no_direct_writer() {
    assert!(!(&Probe::<flow::Renamed>(PhantomData)).direct());
    assert!(!(&Probe::<flow::PartRenamed>(PhantomData)).direct());
    let (op, scope, evidence, open, stop) = contract();
    let renamed = flow::Renamed {
        op,
        scope,
        evidence,
        open,
        stop,
        last_step: 3,
    };
    let bytes = serde_bytes(&renamed);
    let name = b"lastStep";
    assert!(bytes.windows(name.len()).any(|w| w == name), "serde's name");
}

/// A value nested past the depth limit inside a directly written handoff:
/// the direct writer gives up where serde does, and the encoder refuses it
/// with the reason.
#[test]
fn a_too_deep_field_gives_up_and_is_refused_with_the_reason() {
    let nest = |depth: u32| (0..depth).fold(json!(null), |v, _| json!([v]));
    let scope = Scope::new(flow::authority::Go).until_hop(1);
    let mut value = plain(scope, 1);
    // The struct's map is the first level, its field's arrays the next.
    value.extra = nest(workflow_core::MAX_PAYLOAD_DEPTH - 1);
    same_bytes(&value);
    value.extra = nest(workflow_core::MAX_PAYLOAD_DEPTH);
    let mut out = Vec::new();
    assert!(
        value.write_msgpack(&mut out, 0).is_err(),
        "one level past the limit: given up"
    );
    let error = workflow_core::__private::encode(&mut Vec::new(), &value).expect_err("refused");
    assert!(error.contains("deep"), "{error}");
}

/// A run records its handoff through the direct writer: the record reads
/// back as exactly the payload's JSON.
#[tokio::test]
async fn a_run_records_the_direct_bytes_as_the_payloads_json() {
    let done = flow::Workflow::new((), ()).run(3).await.expect("completes");
    let t = &done.transcript;
    let recorded: serde_json::Value = serde_json::from_str(&t.payload(1).expect("reads")).unwrap();
    let scope = Scope::new(flow::authority::Go).until_hop(2);
    let mut sent = serde_json::to_value(plain(scope, 3)).unwrap();
    sent["scope"] = recorded["scope"].clone();
    assert_eq!(recorded, sent);
    assert_eq!(recorded["type"], json!("kind"));
    assert_eq!(recorded["list"], json!([0, -70_000, -140_000]));
    assert_eq!(done.output, 3);
    // The recorded bytes are serde's for the value handed over.
    let handed: flow::Plain = serde_json::from_value(recorded).expect("reads back");
    assert_eq!(t.payload_bytes(1).expect("the bytes"), serde_bytes(&handed));
}
