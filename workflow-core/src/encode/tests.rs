//! The canonical encoding reads back as exactly the JSON serde_json writes.

use super::{Format, decode, encode, from_json_text, parse_json, to_json};
use crate::spec::{MAX_PAYLOAD_DEPTH, PayloadError};

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
    assert!(
        error.to_string().contains("key must be a string"),
        "{error}"
    );
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

/// `depth` arrays around `null`.
fn nested(depth: u32) -> serde_json::Value {
    let mut value = serde_json::Value::Null;
    for _ in 0..depth {
        value = serde_json::Value::Array(vec![value]);
    }
    value
}

/// `depth` one-element MessagePack arrays around `nil`, written by hand.
fn nested_msgpack(depth: usize) -> Vec<u8> {
    let mut bytes = vec![0x91; depth];
    bytes.push(0xc0);
    bytes
}

/// Runs `check` on a thread with a small stack (256 KiB): a check that
/// recursed once per level of a deep value would overflow it.
fn on_small_stack(check: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(check)
        .expect("a thread")
        .join()
        .expect("the check passes");
}

/// A payload exactly at the limit is recorded and reads back as the JSON
/// serde_json writes (which serde_json itself parses again).
#[test]
fn a_payload_at_the_depth_limit_reads_back() {
    let value = nested(MAX_PAYLOAD_DEPTH);
    let mut buf = Vec::new();
    let format = encode(&mut buf, &value).expect("at the limit");
    let text = to_json(format, &buf).expect("reads back");
    assert_eq!(text, serde_json::to_string(&value).expect("serializes"));
    assert_eq!(parse_json(&text).expect("parses"), value);
    assert_eq!(
        decode::<serde_json::Value>(format, &buf).expect("decodes"),
        value
    );
}

/// One level more is refused with the limit, before anything is written;
/// a few thousand levels built in code are refused without recursing
/// through them.
#[test]
fn a_payload_past_the_depth_limit_is_refused_without_recursing() {
    let too_deep = PayloadError::TooDeep {
        limit: MAX_PAYLOAD_DEPTH,
    };
    let mut buf = vec![7];
    let error = encode(&mut buf, &nested(MAX_PAYLOAD_DEPTH + 1)).expect_err("too deep");
    assert_eq!(error, too_deep);
    assert_eq!(buf, [7], "nothing half-written is left");

    let value = nested(5_000);
    let check = move || {
        let mut buf = Vec::new();
        let error = encode(&mut buf, &value).expect_err("too deep");
        assert_eq!(error, PayloadError::TooDeep { limit: 64 });
        assert!(buf.is_empty());
        // Dropping a serde_json value recurses once per level, as every
        // serde_json value does: not what is checked here.
        std::mem::forget(value);
    };
    on_small_stack(check);
}

/// The limit counts levels as JSON does: an enum variant's object counts
/// (`{"B": [..]}` is two levels), a struct is one, an `Option` none.
#[test]
fn the_depth_counts_the_json_levels() {
    #[derive(Serialize)]
    struct Wrap {
        inner: Option<External>,
    }
    // {"inner": {"C": [1, "c"]}}: three levels.
    let value = Wrap {
        inner: Some(External::C(1, "c".into())),
    };
    let mut buf = Vec::new();
    encode(&mut buf, &value).expect("encodes");
    let json = serde_json::to_string(&value).expect("serializes");
    assert_eq!(json, r#"{"inner":{"C":[1,"c"]}}"#);
    // The same value under 61 more arrays is at the limit, under 62 past it.
    let at_limit = (0..MAX_PAYLOAD_DEPTH - 3)
        .fold(serde_json::to_value(&value).unwrap(), |v, _| {
            serde_json::Value::Array(vec![v])
        });
    buf.clear();
    encode(&mut buf, &at_limit).expect("at the limit");
    to_json(Format::Msgpack, &buf).expect("reads back at the limit");
    let past = serde_json::Value::Array(vec![at_limit]);
    assert!(matches!(
        encode(&mut Vec::new(), &past),
        Err(PayloadError::TooDeep { .. })
    ));
}

/// Recorded bytes deeper than the limit (written by hand or another
/// version) give a typed error on read-back, never a stack overflow; so
/// does JSON text.
#[test]
fn stored_bytes_past_the_depth_limit_are_refused_on_read_back() {
    on_small_stack(|| {
        let too_deep = PayloadError::TooDeep {
            limit: MAX_PAYLOAD_DEPTH,
        };
        let bytes = nested_msgpack(5_000);
        assert_eq!(to_json(Format::Msgpack, &bytes), Err(too_deep.clone()));
        assert_eq!(
            decode::<serde_json::Value>(Format::Msgpack, &bytes),
            Err(too_deep.clone())
        );
        let text = "[".repeat(5_000) + &"]".repeat(5_000);
        assert_eq!(
            to_json(Format::Json, text.as_bytes()),
            Err(too_deep.clone())
        );
        assert_eq!(parse_json(&text), Err(too_deep.clone()));
        // Exactly at the limit, both read back.
        let at = nested_msgpack(MAX_PAYLOAD_DEPTH as usize);
        to_json(Format::Msgpack, &at).expect("at the limit");
        let text = "[".repeat(64) + &"]".repeat(64);
        to_json(Format::Json, text.as_bytes()).expect("at the limit");
        // Brackets inside strings do not count.
        parse_json(&format!("[{:?}]", "[".repeat(500))).expect("a string");
    });
}

/// NaN and the infinities are refused with where they are: JSON cannot
/// hold them (serde_json would write `null`).
#[test]
fn non_finite_numbers_are_refused_with_their_place() {
    #[derive(Serialize)]
    struct Prices {
        name: &'static str,
        prices: Vec<f64>,
        by_key: BTreeMap<&'static str, f32>,
    }
    let cases = [
        (vec![1.0, f64::NAN], 1.0, "prices[1]", "NaN"),
        (vec![f64::INFINITY], 1.0, "prices[0]", "inf"),
        (vec![], f32::NEG_INFINITY, "by_key.k", "-inf"),
    ];
    for (prices, k, path, value) in cases {
        let payload = Prices {
            name: "p",
            prices,
            by_key: BTreeMap::from([("k", k)]),
        };
        let mut buf = Vec::new();
        assert_eq!(
            encode(&mut buf, &payload),
            Err(PayloadError::NonFinite {
                path: path.into(),
                value: value.into()
            })
        );
        assert!(buf.is_empty());
    }
    // Recorded bytes holding one (written before this check) are refused.
    let mut bytes = vec![0x91, 0xcb];
    bytes.extend_from_slice(&f64::NAN.to_be_bytes());
    assert!(matches!(
        to_json(Format::Msgpack, &bytes),
        Err(PayloadError::NonFinite { .. })
    ));
}

/// A key twice in one object is refused, at any depth, in JSON text and
/// in recorded MessagePack; the error names the key.
#[test]
fn a_key_twice_is_refused_everywhere() {
    let dup = PayloadError::DuplicateKey {
        key: "amount".into(),
    };
    assert_eq!(
        parse_json(r#"{"amount":1,"amount":1000000}"#),
        Err(dup.clone())
    );
    assert_eq!(
        parse_json(r#"{"a":[{"b":{"amount":1,"x":2,"amount":3}}]}"#),
        Err(dup.clone())
    );
    assert_eq!(
        from_json_text::<BTreeMap<String, u32>>(r#"{"amount":1,"amount":1000000}"#),
        Err(dup.clone())
    );
    // The same key in two objects is fine.
    parse_json(r#"[{"amount":1},{"amount":2}]"#).expect("two objects");
    // {"amount": 1, "amount": 2} in MessagePack.
    let bytes = [
        0x82, 0xa6, b'a', b'm', b'o', b'u', b'n', b't', 0x01, 0xa6, b'a', b'm', b'o', b'u', b'n',
        b't', 0x02,
    ];
    assert_eq!(to_json(Format::Msgpack, &bytes), Err(dup.clone()));
    assert_eq!(
        decode::<serde_json::Value>(Format::Msgpack, &bytes),
        Err(dup)
    );
}

/// Bytes cut short or running on after the value are refused as invalid.
#[test]
fn cut_or_trailing_msgpack_is_refused() {
    assert!(matches!(
        to_json(Format::Msgpack, &[0x92, 0x01]),
        Err(PayloadError::Invalid(_))
    ));
    assert!(matches!(
        to_json(Format::Msgpack, &[0x01, 0x02]),
        Err(PayloadError::Invalid(_))
    ));
}

/// Tool arguments and results are written as serde_json writes them, within
/// the same limits as payloads: too deep or non-finite is refused (serde_json
/// would recurse through it, or write `null`).
#[test]
fn tool_json_text_is_serde_json_text_within_the_limits() {
    use super::to_json_text;
    #[derive(Serialize)]
    struct Out {
        n: u128,
        unit: Unit,
        x: f64,
    }
    let out = Out {
        n: u128::MAX,
        unit: Unit,
        x: 0.5,
    };
    assert_eq!(
        to_json_text(&out).expect("writes"),
        serde_json::to_string(&out).expect("writes")
    );
    let raw = serde_json::value::RawValue::from_string(r#"{"k": 7}"#.to_owned()).unwrap();
    assert_eq!(to_json_text(&raw).expect("writes"), r#"{"k": 7}"#);
    assert_eq!(
        to_json_text(&Out { x: f64::NAN, ..out }),
        Err(PayloadError::NonFinite {
            path: "x".into(),
            value: "NaN".into()
        })
    );
    on_small_stack(|| {
        let value = nested(5_000);
        assert_eq!(
            to_json_text(&value),
            Err(PayloadError::TooDeep {
                limit: MAX_PAYLOAD_DEPTH
            })
        );
        std::mem::forget(value);
    });
}

/// What the fast path writes for `value`, or `None` when it gives up;
/// checked against what `rmp_serde` and `Faithful` write for it, and that
/// [`encode`] writes the slow path's bytes whichever path it takes.
fn fast_and_slow<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    let mut slow = vec![1, 2];
    let slow_result = super::encode_slow(&mut slow, value);
    let mut both = vec![1, 2];
    let result = encode(&mut both, value);
    assert_eq!(
        format!("{result:?}"),
        format!("{slow_result:?}"),
        "encode answers as the slow path"
    );
    assert_eq!(both, slow, "encode writes the slow path's bytes");
    let mut fast = vec![1, 2];
    match super::fast::write(&mut fast, value) {
        Ok(()) => {
            assert_eq!(slow_result.ok(), Some(Format::Msgpack));
            assert_eq!(fast, slow, "the fast path writes rmp_serde's bytes");
            Some(fast)
        }
        Err(_) => None,
    }
}

/// The fast path writes exactly the slow path's bytes for every shape it
/// covers, at every length and integer boundary MessagePack has.
#[test]
fn the_fast_path_writes_the_slow_paths_bytes() {
    use std::collections::HashMap;
    #[derive(Serialize)]
    struct Fields {
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
        bytes: Vec<u8>,
        byte_buf: serde_bytes_like::Bytes,
        none: Option<u8>,
        some: Option<Option<bool>>,
        text_keys: BTreeMap<String, u8>,
        enum_keys: BTreeMap<Key, u8>,
        empty: (Vec<u8>, BTreeMap<String, u8>, ()),
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
    }
    #[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
    enum Key {
        Left,
        Right,
    }
    mod serde_bytes_like {
        /// Serialized with `serialize_bytes`.
        pub struct Bytes(pub Vec<u8>);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }
    let value = Fields {
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
        bytes: vec![0, 1, 255],
        byte_buf: serde_bytes_like::Bytes(vec![7; 300]),
        none: None,
        some: Some(None),
        text_keys: BTreeMap::from([("a".into(), 1), ("b".into(), 2)]),
        enum_keys: BTreeMap::from([(Key::Left, 1), (Key::Right, 2)]),
        empty: (Vec::new(), BTreeMap::new(), ()),
        skipped: None,
    };
    assert!(
        fast_and_slow(&value).is_some(),
        "a common payload takes the fast path"
    );

    // Every integer boundary of MessagePack, both signs.
    let mut ints: Vec<i64> = Vec::new();
    for edge in [
        0i64, 31, 32, 127, 128, 255, 256, 32_767, 32_768, 65_535, 65_536,
    ] {
        ints.extend([edge - 1, edge, edge + 1, -edge - 1, -edge, -edge + 1]);
    }
    ints.extend([
        i64::from(i32::MIN) - 1,
        i64::from(i32::MIN),
        i64::from(u32::MAX),
        i64::from(u32::MAX) + 1,
        i64::MIN,
        i64::MAX,
    ]);
    for &n in &ints {
        assert!(fast_and_slow(&n).is_some(), "{n}");
        if let Ok(u) = u64::try_from(n) {
            assert!(fast_and_slow(&u).is_some(), "{u}");
        }
        if let Ok(v) = i8::try_from(n) {
            assert!(fast_and_slow(&v).is_some(), "{v}");
        }
        if let Ok(v) = i16::try_from(n) {
            assert!(fast_and_slow(&v).is_some(), "{v}");
        }
        if let Ok(v) = u16::try_from(n) {
            assert!(fast_and_slow(&v).is_some(), "{v}");
        }
        assert!(fast_and_slow(&i128::from(n)).is_some(), "{n}");
    }
    assert!(fast_and_slow(&u64::MAX).is_some());
    assert!(fast_and_slow(&u128::from(u64::MAX)).is_some());
    assert!(fast_and_slow(&f32::MIN_POSITIVE).is_some());

    // Every length boundary of text, bytes, arrays and maps.
    for len in [0usize, 15, 16, 31, 32, 255, 256, 65_535, 65_536, 70_000] {
        assert!(fast_and_slow(&"x".repeat(len)).is_some(), "text of {len}");
        let bytes = serde_bytes_like::Bytes(vec![1; len]);
        assert!(fast_and_slow(&bytes).is_some(), "bytes of {len}");
        assert!(fast_and_slow(&vec![true; len]).is_some(), "array of {len}");
        let map: HashMap<String, u8> = (0..len).map(|i| (i.to_string(), 1)).collect();
        let map: BTreeMap<_, _> = map.into_iter().collect();
        assert!(fast_and_slow(&map).is_some(), "map of {len}");
    }

    // The contract parts of a handoff, as a workflow sends them.
    let parts = (
        crate::spec::Operation::new("round", "detail"),
        crate::spec::Expiry::AtHop(4),
        crate::spec::Expiry::Never,
        crate::spec::StopWhen::at_hop(9)
            .or_tokens(100)
            .or_when("done"),
        vec![
            crate::spec::Evidence::complete("tool", "claim").resolving("q"),
            crate::spec::Evidence::partial("doc", "half"),
        ],
        vec![crate::spec::Uncertainty::new("q", "i")],
    );
    assert!(
        fast_and_slow(&parts).is_some(),
        "the contract parts take the fast path"
    );
    let json = serde_json::json!({"a": [1, -2, 3.5, null, true, "s"], "b": {"c": {}}});
    assert!(
        fast_and_slow(&json).is_some(),
        "a JSON value takes the fast path"
    );
}

/// Everything the fast path does not cover goes through the slow path,
/// which answers as before: the JSON fallback, the refusals with their
/// place, a length not known up front.
#[test]
fn the_fast_path_gives_up_on_what_the_slow_path_decides() {
    #[derive(Serialize)]
    struct Flat {
        a: u8,
        #[serde(flatten)]
        rest: BTreeMap<String, u8>,
    }
    #[derive(Serialize)]
    struct Wide {
        n: u128,
    }
    #[derive(Serialize)]
    struct NotFinite {
        x: Vec<f64>,
    }
    let flat = Flat {
        a: 1,
        rest: BTreeMap::from([("b".into(), 2)]),
    };
    assert_eq!(fast_and_slow(&flat), None, "a length not known up front");
    assert_eq!(fast_and_slow(&Wide { n: u128::MAX }), None);
    assert_eq!(
        fast_and_slow(&NotFinite {
            x: vec![1.0, f64::NAN]
        }),
        None
    );
    assert_eq!(fast_and_slow(&BTreeMap::from([(1u32, "one")])), None);
    assert_eq!(fast_and_slow(&BTreeMap::from([((1u8, 2u8), 3u8)])), None);
    assert!(fast_and_slow(&nested(MAX_PAYLOAD_DEPTH)).is_some());
    assert_eq!(fast_and_slow(&nested(MAX_PAYLOAD_DEPTH + 1)), None);
    let raw = serde_json::value::RawValue::from_string("[1]".to_owned()).expect("valid JSON");
    assert_eq!(fast_and_slow(&raw), None);
}

/// What a direct writer writes for `value` `depth` deep, checked against
/// what the serde path writes at that depth (both give up, or both write
/// the same bytes) and, at depth 0, against `rmp_serde` and `Faithful`.
fn direct_and_serde<T: super::WriteMsgpack + Serialize + ?Sized>(
    value: &T,
    depth: u32,
) -> Option<Vec<u8>> {
    let mut direct = vec![7];
    let direct_result = value.write_msgpack(&mut direct, depth);
    let mut serde = vec![7];
    let serde_result = super::fast::write_at(&mut serde, value, depth);
    assert_eq!(
        direct_result.is_ok(),
        serde_result.is_ok(),
        "the direct writer gives up where the serde path does, {depth} deep"
    );
    // After a struct's field name (`write_keyed`): the name, then the same
    // bytes; the same with a name too long to be joined with the value's
    // first bytes (written before them instead).
    // A middle one: joined with the value's constant bytes, but with no
    // room left for a short text after them (an authority's name, 27
    // bytes for `UnknownAuthority`, `keyed_known_str`).
    let short = keyed(value, b"\xa3key", depth);
    let middle = keyed(value, &[b'k'; 30], depth);
    let long = keyed(value, &[b'k'; 60], depth);
    assert_eq!(short.is_ok(), direct_result.is_ok(), "keyed, {depth} deep");
    assert_eq!(
        middle.is_ok(),
        direct_result.is_ok(),
        "middle key, {depth} deep"
    );
    assert_eq!(
        long.is_ok(),
        direct_result.is_ok(),
        "long key, {depth} deep"
    );
    direct_result.ok()?;
    assert_eq!(
        direct, serde,
        "the direct writer writes the serde path's bytes"
    );
    let expect = |key: &[u8]| [&[7], key, &direct[1..]].concat();
    assert_eq!(short.ok(), Some(expect(b"\xa3key")), "keyed");
    assert_eq!(middle.ok(), Some(expect(&[b'k'; 30])), "middle key");
    assert_eq!(long.ok(), Some(expect(&[b'k'; 60])), "long key");
    if depth == 0 {
        assert_eq!(
            fast_and_slow(value).as_ref().map(|slow| &slow[2..]),
            Some(&direct[1..]),
            "and rmp_serde's"
        );
    }
    Some(direct)
}

/// What `value` writes after `key` (`write_keyed`), after a first byte 7.
fn keyed<T: super::WriteMsgpack + ?Sized, const N: usize>(
    value: &T,
    key: &[u8; N],
    depth: u32,
) -> Result<Vec<u8>, super::fast::GiveUp> {
    let mut out = vec![7];
    value.write_keyed(key, &mut out, depth)?;
    Ok(out)
}

/// Every direct writer of the library writes exactly what the serde path
/// writes, at MessagePack's length and integer boundaries, and gives up
/// exactly where it does past the depth limit.
#[test]
fn the_direct_writers_write_the_serde_paths_bytes() {
    use crate::spec::{
        Authority, Evidence, Expiry, Operation, Scope, StopCondition, StopWhen, Uncertainty,
        UnknownAuthority,
    };
    use std::borrow::Cow;
    let lengths = [0usize, 1, 15, 16, 31, 32, 255, 256, 65_535, 65_536];
    let texts: Vec<String> = lengths
        .iter()
        .map(|&n| "é".repeat(n / 2) + &"x".repeat(n % 2))
        .collect();
    let uints = [
        0u64,
        127,
        128,
        255,
        256,
        65_535,
        65_536,
        u32::MAX as u64,
        u32::MAX as u64 + 1,
        u64::MAX,
    ];
    let ints = [
        i64::MIN,
        -2_147_483_649,
        -2_147_483_648,
        -32_769,
        -32_768,
        -129,
        -128,
        -33,
        -32,
        -1,
        0,
        127,
        i64::MAX,
    ];
    let mut written = 0;
    let mut check = |bytes: Option<Vec<u8>>| {
        assert!(bytes.is_some(), "written at depth 0");
        written += 1;
    };
    for &n in &uints {
        check(direct_and_serde(&n, 0));
        check(direct_and_serde(&(n as u32), 0));
        check(direct_and_serde(&(n as u16), 0));
        check(direct_and_serde(&(n as u8), 0));
        check(direct_and_serde(&(n as usize), 0));
        check(direct_and_serde(&Expiry::AtUnixMs(n), 0));
        check(direct_and_serde(&Expiry::AtHop(n as u32), 0));
        check(direct_and_serde(
            &StopCondition::DeadlineUnixMs { ms: n },
            0,
        ));
        check(direct_and_serde(
            &StopCondition::TokensSpent { tokens: n },
            0,
        ));
        check(direct_and_serde(
            &StopCondition::HopReached { hop: n as u32 },
            0,
        ));
        // The one-condition list and the lease's hop, each written with
        // its keys at once.
        check(direct_and_serde(&StopWhen::at_hop(n as u32), 0));
        check(direct_and_serde(
            &Scope::new(UnknownAuthority).until_hop(n as u32),
            0,
        ));
    }
    for &n in &ints {
        check(direct_and_serde(&n, 0));
        check(direct_and_serde(&(n as i32), 0));
        check(direct_and_serde(&(n as i16), 0));
        check(direct_and_serde(&(n as i8), 0));
        check(direct_and_serde(&(n as isize), 0));
    }
    for text in &texts {
        check(direct_and_serde(text, 0));
        check(direct_and_serde(text.as_str(), 0));
        check(direct_and_serde(&Cow::<str>::Owned(text.clone()), 0));
        check(direct_and_serde(&Box::new(text.clone()), 0));
        check(direct_and_serde(&Operation::new(text.clone(), "d"), 0));
        check(direct_and_serde(&Operation::new("n", text.clone()), 0));
        check(direct_and_serde(
            &StopCondition::Described { text: text.clone() },
            0,
        ));
    }
    check(direct_and_serde(&true, 0));
    check(direct_and_serde(&false, 0));
    check(direct_and_serde(&Option::<u8>::None, 0));
    check(direct_and_serde(&Some(Some(3u8)), 0));
    check(direct_and_serde(&Expiry::Never, 0));
    for len in [0usize, 1, 15, 16, 65_535, 65_536] {
        check(direct_and_serde(&vec![1u8; len], 0));
        let conditions = (0..len.min(300)).map(|hop| StopCondition::HopReached { hop: hop as u32 });
        check(direct_and_serde(&StopWhen::any(conditions), 0));
    }
    check(direct_and_serde(
        &StopWhen::at_hop(4).or_tokens(9).or_when("done"),
        0,
    ));
    check(direct_and_serde(
        &vec![Evidence::complete("src", "claim").resolving("q")],
        0,
    ));
    check(direct_and_serde(&vec![Uncertainty::new("q", "i")], 0));
    #[derive(Clone, Copy, Default)]
    struct Named;
    impl Authority for Named {
        const NAME: &'static str = "a name thirty-two bytes long ...";
    }
    assert_eq!(Named::NAME.len(), 32);
    for expires in [Expiry::Never, Expiry::AtHop(3), Expiry::AtUnixMs(1 << 40)] {
        let mut scope = Scope::new(UnknownAuthority);
        scope.expires = expires;
        check(direct_and_serde(&scope, 0));
        let mut scope = Scope::new(Named);
        scope.expires = expires;
        check(direct_and_serde(&scope, 0));
    }
    assert_eq!(written, 10 * 12 + 13 * 5 + 10 * 7 + 5 + 6 * 2 + 3 + 6);
    // Past the depth limit: each container gives up where serde does (the
    // encoder then refuses the payload through the slow path, with the
    // reason), and a scalar is written at any depth.
    let mut scope = Scope::new(UnknownAuthority);
    scope.expires = Expiry::AtHop(1);
    for depth in MAX_PAYLOAD_DEPTH - 2..=MAX_PAYLOAD_DEPTH + 1 {
        direct_and_serde(&Operation::new("n", "d"), depth);
        direct_and_serde(&scope, depth);
        direct_and_serde(&Expiry::AtHop(1), depth);
        direct_and_serde(&Expiry::AtUnixMs(1), depth);
        direct_and_serde(&Scope::new(Named).until_unix_ms(1), depth);
        direct_and_serde(&StopCondition::Described { text: "t".into() }, depth);
        direct_and_serde(&Expiry::Never, depth);
        direct_and_serde(&StopWhen::at_hop(1), depth);
        direct_and_serde(&Vec::<u8>::new(), depth);
        direct_and_serde(&vec![Evidence::complete("s", "c")], depth);
        assert!(direct_and_serde(&7u8, depth).is_some());
    }
    assert!(direct_and_serde(&scope, MAX_PAYLOAD_DEPTH - 2).is_some());
    assert!(direct_and_serde(&scope, MAX_PAYLOAD_DEPTH - 1).is_none());
    assert!(direct_and_serde(&StopWhen::at_hop(1), MAX_PAYLOAD_DEPTH - 1).is_none());
    assert!(direct_and_serde(&Operation::new("n", "d"), MAX_PAYLOAD_DEPTH - 1).is_some());
    assert!(direct_and_serde(&Operation::new("n", "d"), MAX_PAYLOAD_DEPTH).is_none());
}
