//! The canonical encoding of recorded payloads.
//!
//! A transfer is written on every hop and read rarely, so the witness writes
//! MessagePack (with field names, and the human-readable forms JSON uses):
//! about twice as fast as JSON. Read back, it is transcoded to exactly the
//! JSON text `serde_json` writes for the same value, which is what the
//! published schemas describe.
//!
//! Two shapes of serde's data model would not read back that way: a unit
//! struct (MessagePack writes `[]`, JSON `null`) and a 128-bit integer
//! (MessagePack has none). The encoder's serializer ([`faithful`]) writes a
//! unit struct as `nil`, and a
//! 128-bit integer as a 64-bit one when it fits. A payload that holds a
//! wider integer, a map key JSON cannot hold, or one of serde_json's own
//! private types (`arbitrary_precision` numbers, `RawValue`) is recorded as
//! JSON instead, by serde_json itself (which refuses a bad key). Nothing is
//! approximated.
//!
//! Both stay within [`MAX_PAYLOAD_DEPTH`](crate::MAX_PAYLOAD_DEPTH) and refuse
//! non-finite numbers; what is read back is checked first without recursing
//! ([`scan`] for MessagePack, [`json`] for JSON text from anywhere).

use serde::Serialize;

use crate::spec::PayloadError;

mod direct;
pub(crate) use direct::OVERWRITE;
mod faithful;
mod fast;
mod json;
mod scan;

use faithful::{Cx, NOT_FAITHFUL, Nested};

pub use direct::{Direct, ViaDirect, ViaSerde, WriteMsgpack, open};
pub use fast::GiveUp;

pub(crate) use json::{check_value_depth, from_json_text, parse_json};

/// How a recorded payload is encoded: the ledger's own type, so records
/// and ledger rows need no conversion.
pub(crate) use crate::spec::PayloadFormat as Format;

/// Appends the canonical encoding of `payload` to `buf`; nothing on error.
///
/// A payload nested deeper than [`MAX_PAYLOAD_DEPTH`](crate::MAX_PAYLOAD_DEPTH) or holding a
/// non-finite number is refused ([`PayloadError::TooDeep`],
/// [`PayloadError::NonFinite`]): the encoder stops at the first level past
/// the limit, so a value built in code however deep never recurses further.
pub(crate) fn encode<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    payload: &P,
) -> Result<Format, PayloadError> {
    encode_with(buf, payload, through_serde)
}

/// The serde path's writer, for a type without a direct one.
#[inline]
pub(crate) fn through_serde<P: Serialize + ?Sized>(buf: &mut Vec<u8>, payload: &P) -> bool {
    fast::write(buf, payload).is_ok()
}

/// A writer of a payload's MessagePack that may give up: the serde path's
/// ([`through_serde`]), or one that writes the type directly ([`direct`]),
/// which writes the same bytes.
pub(crate) use crate::spec::PayloadWriter as Writer;

/// [`encode`], trying `write` first (a type's direct writer, which writes
/// what the serde path would).
#[inline]
pub(crate) fn encode_with<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    payload: &P,
    write: Writer<P>,
) -> Result<Format, PayloadError> {
    let start = buf.len();
    // The common shapes, written directly; anything else (and every
    // refusal) goes through `rmp_serde` and `Faithful`, which write the
    // same bytes for what the fast path covers.
    if write(buf, payload) {
        return Ok(Format::Msgpack);
    }
    buf.truncate(start);
    encode_slow(buf, payload)
}

/// [`encode`] through `rmp_serde` and [`Faithful`](faithful): the reference
/// the fast path is compared with, and the path for every value it gives up
/// on.
fn encode_slow<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    payload: &P,
) -> Result<Format, PayloadError> {
    let start = buf.len();
    let cx = Cx::default();
    let mut ser = rmp_serde::Serializer::new(&mut *buf)
        .with_struct_map()
        .with_human_readable();
    let result = Nested(payload, 0, &cx).serialize(&mut ser);
    let error = match result {
        Ok(()) => return Ok(Format::Msgpack),
        Err(e) => e.to_string(),
    };
    buf.truncate(start);
    if let Some(refused) = cx.refusal() {
        return Err(refused);
    }
    if error != NOT_FAITHFUL {
        return Err(PayloadError::Invalid(error));
    }
    // Written by serde_json itself, still within the limits.
    let cx = Cx::json();
    match serde_json::to_writer(&mut *buf, &Nested(payload, 0, &cx)) {
        Ok(()) => Ok(Format::Json),
        Err(e) => {
            buf.truncate(start);
            Err(cx
                .refusal()
                .unwrap_or_else(|| PayloadError::Invalid(e.to_string())))
        }
    }
}

/// `value` as JSON text, as serde_json writes it, within the same limits as
/// [`encode`]: refused past [`MAX_PAYLOAD_DEPTH`](crate::MAX_PAYLOAD_DEPTH) (without recursing
/// further) or with a non-finite number (serde_json would write `null`,
/// which would not read back as what was sent). For tool arguments and
/// results.
pub(crate) fn to_json_text<P: Serialize + ?Sized>(value: &P) -> Result<String, PayloadError> {
    let cx = Cx::json();
    let mut out = Vec::new();
    match serde_json::to_writer(&mut out, &Nested(value, 0, &cx)) {
        Ok(()) => String::from_utf8(out).map_err(|e| PayloadError::Invalid(e.to_string())),
        Err(e) => Err(cx
            .refusal()
            .unwrap_or_else(|| PayloadError::Invalid(e.to_string()))),
    }
}

/// The JSON text of a payload recorded by [`encode`]: refused (never
/// recursing past the limit) when it nests deeper than
/// [`MAX_PAYLOAD_DEPTH`](crate::MAX_PAYLOAD_DEPTH), holds a non-finite number or a key twice.
pub(crate) fn to_json(format: Format, bytes: &[u8]) -> Result<String, PayloadError> {
    match format {
        Format::Json => {
            let text =
                std::str::from_utf8(bytes).map_err(|e| PayloadError::Invalid(e.to_string()))?;
            parse_json(text)?;
            Ok(text.to_owned())
        }
        Format::Msgpack => {
            scan::check_msgpack(bytes)?;
            let mut de = rmp_serde::Deserializer::from_read_ref(bytes).with_human_readable();
            let mut out = Vec::with_capacity(bytes.len() * 2);
            let mut ser = serde_json::Serializer::new(&mut out);
            serde_transcode::transcode(&mut de, &mut ser)
                .map_err(|e| PayloadError::Invalid(e.to_string()))?;
            String::from_utf8(out).map_err(|e| PayloadError::Invalid(e.to_string()))
        }
    }
}

/// The value recorded as `bytes` (for resuming a run from its records),
/// checked as [`to_json`] checks it.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    format: Format,
    bytes: &[u8],
) -> Result<T, PayloadError> {
    match format {
        Format::Json => {
            let text =
                std::str::from_utf8(bytes).map_err(|e| PayloadError::Invalid(e.to_string()))?;
            from_json_text(text)
        }
        Format::Msgpack => {
            scan::check_msgpack(bytes)?;
            let mut de = rmp_serde::Deserializer::from_read_ref(bytes).with_human_readable();
            T::deserialize(&mut de).map_err(|e| PayloadError::Invalid(e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests;

/// The SHA-256 of `text`, hex-encoded.
pub(crate) fn digest(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

// Defined here, with the strict parser, for the decision type of the spec
// layer.
impl crate::spec::Decision {
    /// A person's decision from JSON text (a form, a file, a request
    /// body): refused when the text repeats a key in one object (which of
    /// the two was meant would be a guess) or nests deeper than
    /// [`MAX_PAYLOAD_DEPTH`](crate::MAX_PAYLOAD_DEPTH), as well as when it is not a decision.
    pub fn from_json(text: &str) -> Result<Self, PayloadError> {
        from_json_text(text)
    }
}

// Defined here, with the decoder, for the record type of the spec layer.
impl crate::spec::RecordedPayload<'_> {
    /// The recorded value, decoded as `T`; refused (with the reason a
    /// [`PayloadError`] gives) when it nests deeper than
    /// [`MAX_PAYLOAD_DEPTH`](crate::MAX_PAYLOAD_DEPTH), holds a non-finite number or a key twice.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        decode(self.format, self.bytes).map_err(|e| e.to_string())
    }
}
