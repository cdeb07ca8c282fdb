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
//! (MessagePack has none). [`Faithful`] writes a unit struct as `nil`, and a
//! 128-bit integer as a 64-bit one when it fits. A payload that holds a
//! wider integer, a map key JSON cannot hold, or one of serde_json's own
//! private types (`arbitrary_precision` numbers, `RawValue`) is recorded as
//! JSON instead, by serde_json itself (which refuses a bad key). Nothing is
//! approximated.

use serde::ser::{self, Serialize, Serializer};

/// How a recorded payload is encoded: the ledger's own type, so records
/// and ledger rows need no conversion.
pub(crate) use crate::spec::PayloadFormat as Format;

/// The message of the error that makes a payload fall back to JSON.
const NOT_FAITHFUL: &str = "a value MessagePack would not read back as serde_json writes it";

/// serde_json's private names (`arbitrary_precision` numbers, `RawValue`):
/// only serde_json itself writes those right.
const SERDE_JSON_PRIVATE: &str = "$serde_json::private::";

/// Appends the canonical encoding of `payload` to `buf`.
pub(crate) fn encode<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    payload: &P,
) -> Result<Format, String> {
    let start = buf.len();
    let mut ser = rmp_serde::Serializer::new(&mut *buf)
        .with_struct_map()
        .with_human_readable();
    match payload.serialize(Faithful(&mut ser)) {
        Ok(()) => Ok(Format::Msgpack),
        Err(e) if e.to_string() == NOT_FAITHFUL => {
            buf.truncate(start);
            match serde_json::to_writer(&mut *buf, payload) {
                Ok(()) => Ok(Format::Json),
                Err(e) => {
                    buf.truncate(start);
                    Err(e.to_string())
                }
            }
        }
        Err(e) => {
            buf.truncate(start);
            Err(e.to_string())
        }
    }
}

/// The JSON text of a payload recorded by [`encode`].
pub(crate) fn to_json(format: Format, bytes: &[u8]) -> Result<String, String> {
    match format {
        Format::Json => String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string()),
        Format::Msgpack => {
            let mut de = rmp_serde::Deserializer::from_read_ref(bytes).with_human_readable();
            // The decoder's default nesting limit (1,024) is lower than what
            // the encoder writes; raise it to its maximum.
            de.set_max_depth(usize::MAX);
            let mut out = Vec::with_capacity(bytes.len() * 2);
            let mut ser = serde_json::Serializer::new(&mut out);
            serde_transcode::transcode(&mut de, &mut ser).map_err(|e| e.to_string())?;
            String::from_utf8(out).map_err(|e| e.to_string())
        }
    }
}

/// The value recorded as `bytes` (for resuming a run from its records).
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    format: Format,
    bytes: &[u8],
) -> Result<T, String> {
    match format {
        Format::Json => serde_json::from_slice(bytes).map_err(|e| e.to_string()),
        Format::Msgpack => {
            let mut de = rmp_serde::Deserializer::from_read_ref(bytes).with_human_readable();
            de.set_max_depth(usize::MAX);
            T::deserialize(&mut de).map_err(|e| e.to_string())
        }
    }
}

/// A serializer that passes everything to `S` but the two shapes that would
/// not read back as serde_json writes them (see the module docs).
struct Faithful<S>(S);

/// A one-entry map with key `k`, to ask serde_json whether it takes the key.
struct KeyProbe<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for KeyProbe<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.0, &())?;
        map.end()
    }
}

/// A value whose serialization goes through [`Faithful`] too.
struct Nested<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for Nested<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Faithful(s))
    }
}

macro_rules! forward {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            #[inline]
            fn $method(self, v: $ty) -> Result<S::Ok, S::Error> {
                self.0.$method(v)
            }
        )*
    };
}

impl<S: Serializer> Serializer for Faithful<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Faithful<S::SerializeSeq>;
    type SerializeTuple = Faithful<S::SerializeTuple>;
    type SerializeTupleStruct = Faithful<S::SerializeTupleStruct>;
    type SerializeTupleVariant = Faithful<S::SerializeTupleVariant>;
    type SerializeMap = Faithful<S::SerializeMap>;
    type SerializeStruct = Faithful<S::SerializeStruct>;
    type SerializeStructVariant = Faithful<S::SerializeStructVariant>;

    forward!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
    );

    fn serialize_i128(self, v: i128) -> Result<S::Ok, S::Error> {
        match i64::try_from(v) {
            Ok(v) => self.0.serialize_i64(v),
            Err(_) => Err(ser::Error::custom(NOT_FAITHFUL)),
        }
    }

    fn serialize_u128(self, v: u128) -> Result<S::Ok, S::Error> {
        match u64::try_from(v) {
            Ok(v) => self.0.serialize_u64(v),
            Err(_) => Err(ser::Error::custom(NOT_FAITHFUL)),
        }
    }

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_none()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&Nested(v))
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit()
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<S::Ok, S::Error> {
        // JSON writes a unit struct as `null`, MessagePack as `[]`.
        self.0.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_variant(name, index, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        if name.starts_with(SERDE_JSON_PRIVATE) {
            return Err(ser::Error::custom(NOT_FAITHFUL));
        }
        self.0.serialize_newtype_struct(name, &Nested(v))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0
            .serialize_newtype_variant(name, index, variant, &Nested(v))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(Faithful)
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(Faithful)
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(name, len).map(Faithful)
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0
            .serialize_tuple_variant(name, index, variant, len)
            .map(Faithful)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(Faithful)
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        if name.starts_with(SERDE_JSON_PRIVATE) {
            return Err(ser::Error::custom(NOT_FAITHFUL));
        }
        self.0.serialize_struct(name, len).map(Faithful)
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        self.0
            .serialize_struct_variant(name, index, variant, len)
            .map(Faithful)
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! compound {
    ($trait:ident, $method:ident) => {
        impl<S: ser::$trait> ser::$trait for Faithful<S> {
            type Ok = S::Ok;
            type Error = S::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), S::Error> {
                self.0.$method(&Nested(v))
            }
            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        }
    };
}

compound!(SerializeSeq, serialize_element);
compound!(SerializeTuple, serialize_element);
compound!(SerializeTupleStruct, serialize_field);
compound!(SerializeTupleVariant, serialize_field);

impl<S: ser::SerializeMap> ser::SerializeMap for Faithful<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), S::Error> {
        // A key JSON cannot hold (a tuple, a struct) is kept by MessagePack
        // but could not be read back as JSON: let serde_json decide.
        if serde_json::to_writer(std::io::sink(), &KeyProbe(k)).is_err() {
            return Err(ser::Error::custom(NOT_FAITHFUL));
        }
        self.0.serialize_key(&Nested(k))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), S::Error> {
        self.0.serialize_value(&Nested(v))
    }
    fn end(self) -> Result<S::Ok, S::Error> {
        self.0.end()
    }
}

macro_rules! struct_compound {
    ($trait:ident) => {
        impl<S: ser::$trait> ser::$trait for Faithful<S> {
            type Ok = S::Ok;
            type Error = S::Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), S::Error> {
                self.0.serialize_field(key, &Nested(v))
            }
            fn skip_field(&mut self, key: &'static str) -> Result<(), S::Error> {
                self.0.skip_field(key)
            }
            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        }
    };
}

struct_compound!(SerializeStruct);
struct_compound!(SerializeStructVariant);

#[cfg(test)]
mod tests;

/// The SHA-256 of `text`, hex-encoded.
pub(crate) fn digest(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

// Defined here, with the decoder, for the record type of the spec layer.
impl crate::spec::RecordedPayload<'_> {
    /// The recorded value, decoded as `T`.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        decode(self.format, self.bytes)
    }
}
