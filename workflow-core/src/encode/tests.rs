//! The canonical encoding reads back as exactly the JSON serde_json writes.

use super::{Format, encode, to_json};

use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
struct Unit;

#[derive(Serialize)]
struct Newtype(u8);

#[derive(Serialize)]
enum External {
    A,
    B(i64),
    C(u8, String),
    D { x: f64 },
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Internal {
    One,
    Two { n: u32 },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Untagged {
    N(u64),
    S(String),
}

#[derive(Serialize)]
struct Everything {
    unit: Unit,
    newtype: Newtype,
    external: Vec<External>,
    internal: Vec<Internal>,
    untagged: Vec<Untagged>,
    ip: std::net::IpAddr,
    socket: std::net::SocketAddr,
    duration: std::time::Duration,
    floats: (f32, f64, f64),
    ints: (i8, i64, u64, i128, u128),
    chars: (char, String, &'static str),
    escapes: String,
    bytes: Vec<u8>,
    none: Option<u8>,
    some: Option<Option<bool>>,
    int_keys: BTreeMap<u32, &'static str>,
    empty: (Vec<u8>, BTreeMap<String, u8>, ()),
}

/// The canonical bytes read back as exactly the JSON serde_json writes,
/// for every shape serde has (the published schemas describe that JSON).
#[test]
fn canonical_bytes_read_back_as_serde_json_text() {
    let value = Everything {
        unit: Unit,
        newtype: Newtype(7),
        external: vec![
            External::A,
            External::B(-3),
            External::C(1, "c".into()),
            External::D { x: 0.5 },
        ],
        internal: vec![Internal::One, Internal::Two { n: 2 }],
        untagged: vec![Untagged::N(u64::MAX), Untagged::S("s".into())],
        ip: "10.0.0.1".parse().expect("an IP"),
        socket: "[::1]:8080".parse().expect("a socket address"),
        duration: std::time::Duration::from_millis(1500),
        floats: (1.1, -2.5e-300, f64::MAX),
        ints: (i8::MIN, i64::MIN, u64::MAX, -1, 1),
        chars: ('é', "日本".into(), "tab\there"),
        escapes: "quote \" backslash \\ newline \n nul \u{0}".into(),
        bytes: vec![0, 1, 255],
        none: None,
        some: Some(None),
        int_keys: BTreeMap::from([(1, "one"), (20, "twenty")]),
        empty: (Vec::new(), BTreeMap::new(), ()),
    };
    let mut buf = Vec::new();
    let format = encode(&mut buf, &value).expect("encodes");
    assert_eq!(format, Format::Msgpack);
    let expected = serde_json::to_string(&value).expect("serializes");
    assert_eq!(to_json(format, &buf).expect("decodes"), expected);
}

/// A 128-bit integer beyond 64 bits has no MessagePack form: that payload
/// is recorded as JSON, whole and exact.
#[test]
fn a_wide_integer_falls_back_to_json() {
    #[derive(Serialize)]
    struct Wide {
        before: u8,
        n: u128,
    }
    let value = Wide {
        before: 1,
        n: u128::MAX,
    };
    let mut buf = vec![9, 9];
    let format = encode(&mut buf, &value).expect("encodes");
    assert_eq!(format, Format::Json);
    assert_eq!(&buf[..2], &[9, 9], "what was there before is kept");
    assert_eq!(
        to_json(format, &buf[2..]).expect("decodes"),
        serde_json::to_string(&value).expect("serializes")
    );
}

/// A map key JSON cannot hold is refused, as serde_json refuses it, instead
/// of being recorded in a form that cannot be read back.
#[test]
fn a_map_key_json_cannot_hold_is_refused() {
    let value = BTreeMap::from([((1u8, 2u8), 3u8)]);
    let mut buf = vec![7];
    let error = encode(&mut buf, &value).expect_err("serde_json refuses tuple keys");
    assert!(error.contains("key must be a string"), "{error}");
    assert_eq!(buf, [7], "nothing half-written is left");
}

/// serde_json's own `RawValue` is recorded as JSON, exactly.
#[test]
fn serde_json_private_types_are_recorded_as_json() {
    #[derive(Serialize)]
    struct WithRaw<'a> {
        raw: &'a serde_json::value::RawValue,
    }
    let raw =
        serde_json::value::RawValue::from_string(r#"{"k": 7}"#.to_owned()).expect("valid JSON");
    let value = WithRaw { raw: &raw };
    let mut buf = Vec::new();
    let format = encode(&mut buf, &value).expect("encodes");
    assert_eq!(format, Format::Json);
    assert_eq!(
        to_json(format, &buf).expect("decodes"),
        serde_json::to_string(&value).expect("serializes")
    );
}

/// A payload nested deeper than the decoder's default limit (1,024) reads
/// back. (Run on a large stack: serde recurses once per level.)
#[test]
fn deep_nesting_reads_back() {
    let check = || {
        let mut value = serde_json::Value::Null;
        for _ in 0..1100 {
            value = serde_json::Value::Array(vec![value]);
        }
        let mut buf = Vec::new();
        let format = encode(&mut buf, &value).expect("encodes");
        assert_eq!(
            to_json(format, &buf).expect("decodes"),
            serde_json::to_string(&value).expect("serializes")
        );
    };
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(check)
        .expect("a thread")
        .join()
        .expect("the check passes");
}
