//! The serializer the encoder writes through: it passes everything on but
//! the shapes MessagePack would not read back as serde_json writes them,
//! counts the JSON levels (stopping at the first past
//! [`MAX_PAYLOAD_DEPTH`]) and refuses non-finite numbers, noting where on
//! the way out.

use std::cell::RefCell;

use serde::ser::{self, Serialize, Serializer};

use crate::spec::{MAX_PAYLOAD_DEPTH, PayloadError};

/// The message of the error that makes a payload fall back to JSON.
pub(super) const NOT_FAITHFUL: &str =
    "a value MessagePack would not read back as serde_json writes it";

/// The message of the error that stops the encoder on a payload it refuses
/// (the refusal itself is kept in [`Cx`]).
const REFUSED: &str = "a payload the encoder refuses";

/// serde_json's private names (`arbitrary_precision` numbers, `RawValue`):
/// only serde_json itself writes those right.
const SERDE_JSON_PRIVATE: &str = "$serde_json::private::";

/// What one run of the encoder shares across its levels.
#[derive(Default)]
pub(super) struct Cx {
    /// Writing serde_json's fallback: the faithfulness checks are off.
    pub(super) json: bool,
    /// Why the payload was refused, and where (innermost segment first).
    refused: RefCell<Option<(PayloadError, Vec<Segment>)>>,
}

/// One step of the path to a refused value.
enum Segment {
    Key(String),
    Index(usize),
}

impl Cx {
    /// For serde_json's own writer (the faithfulness checks off).
    pub(super) fn json() -> Self {
        Cx {
            json: true,
            ..Cx::default()
        }
    }

    fn refuse<E: ser::Error>(&self, error: PayloadError) -> E {
        *self.refused.borrow_mut() = Some((error, Vec::new()));
        E::custom(REFUSED)
    }

    /// Notes `segment` on the way out of a refused value.
    fn unwind<T, E>(
        &self,
        result: Result<T, E>,
        segment: impl FnOnce() -> Segment,
    ) -> Result<T, E> {
        if result.is_err()
            && let Some((_, path)) = &mut *self.refused.borrow_mut()
        {
            path.push(segment());
        }
        result
    }

    /// The refusal, with its path.
    pub(super) fn refusal(&self) -> Option<PayloadError> {
        let (mut error, segments) = self.refused.borrow_mut().take()?;
        if let PayloadError::NonFinite { path, .. } = &mut error {
            for segment in segments.iter().rev() {
                match segment {
                    Segment::Key(k) if path.is_empty() => path.push_str(k),
                    Segment::Key(k) => {
                        path.push('.');
                        path.push_str(k);
                    }
                    Segment::Index(i) => path.push_str(&format!("[{i}]")),
                }
            }
        }
        Some(error)
    }
}

/// A serializer that passes everything to `S` but the two shapes that would
/// not read back as serde_json writes them (see the module docs), and that
/// refuses a payload too deep or holding a non-finite number.
struct Faithful<'c, S> {
    ser: S,
    /// Arrays and objects around this value (in its JSON form).
    depth: u32,
    cx: &'c Cx,
    /// The next element's index (in a compound).
    index: usize,
}

impl<'c, S> Faithful<'c, S> {
    fn new(ser: S, depth: u32, cx: &'c Cx) -> Self {
        Faithful {
            ser,
            depth,
            cx,
            index: 0,
        }
    }

    /// The depth of a container `levels` deep opened here, or the refusal.
    fn open<E: ser::Error>(&self, levels: u32) -> Result<u32, E> {
        let depth = self.depth.saturating_add(levels);
        if depth > MAX_PAYLOAD_DEPTH {
            return Err(self.cx.refuse(PayloadError::TooDeep {
                limit: MAX_PAYLOAD_DEPTH,
            }));
        }
        Ok(depth)
    }

    fn nested<'v, T: ?Sized>(&self, v: &'v T) -> Nested<'v, 'c, T> {
        Nested(v, self.depth, self.cx)
    }
}

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

/// A value whose serialization goes through [`Faithful`] too, at a depth.
pub(super) struct Nested<'v, 'c, T: ?Sized>(pub(super) &'v T, pub(super) u32, pub(super) &'c Cx);

impl<T: Serialize + ?Sized> Serialize for Nested<'_, '_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Faithful::new(s, self.1, self.2))
    }
}

macro_rules! forward {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            #[inline]
            fn $method(self, v: $ty) -> Result<S::Ok, S::Error> {
                self.ser.$method(v)
            }
        )*
    };
}

impl<'c, S: Serializer> Serializer for Faithful<'c, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Faithful<'c, S::SerializeSeq>;
    type SerializeTuple = Faithful<'c, S::SerializeTuple>;
    type SerializeTupleStruct = Faithful<'c, S::SerializeTupleStruct>;
    type SerializeTupleVariant = Faithful<'c, S::SerializeTupleVariant>;
    type SerializeMap = Faithful<'c, S::SerializeMap>;
    type SerializeStruct = Faithful<'c, S::SerializeStruct>;
    type SerializeStructVariant = Faithful<'c, S::SerializeStructVariant>;

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
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
    );

    fn serialize_f32(self, v: f32) -> Result<S::Ok, S::Error> {
        if !v.is_finite() {
            return Err(self.cx.refuse(non_finite(f64::from(v))));
        }
        self.ser.serialize_f32(v)
    }

    fn serialize_f64(self, v: f64) -> Result<S::Ok, S::Error> {
        if !v.is_finite() {
            return Err(self.cx.refuse(non_finite(v)));
        }
        self.ser.serialize_f64(v)
    }

    fn serialize_i128(self, v: i128) -> Result<S::Ok, S::Error> {
        if self.cx.json {
            return self.ser.serialize_i128(v);
        }
        match i64::try_from(v) {
            Ok(v) => self.ser.serialize_i64(v),
            Err(_) => Err(ser::Error::custom(NOT_FAITHFUL)),
        }
    }

    fn serialize_u128(self, v: u128) -> Result<S::Ok, S::Error> {
        if self.cx.json {
            return self.ser.serialize_u128(v);
        }
        match u64::try_from(v) {
            Ok(v) => self.ser.serialize_u64(v),
            Err(_) => Err(ser::Error::custom(NOT_FAITHFUL)),
        }
    }

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.ser.serialize_none()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<S::Ok, S::Error> {
        let v = self.nested(v);
        self.ser.serialize_some(&v)
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.ser.serialize_unit()
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<S::Ok, S::Error> {
        if self.cx.json {
            return self.ser.serialize_unit_struct(name);
        }
        // JSON writes a unit struct as `null`, MessagePack as `[]`.
        self.ser.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.ser.serialize_unit_variant(name, index, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        if name.starts_with(SERDE_JSON_PRIVATE) {
            if self.cx.json {
                // serde_json's own value (a number, raw JSON): it takes
                // care of it, unwrapped.
                return self.ser.serialize_newtype_struct(name, v);
            }
            return Err(ser::Error::custom(NOT_FAITHFUL));
        }
        let v = self.nested(v);
        self.ser.serialize_newtype_struct(name, &v)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        // `{"variant": v}`: one object around the value.
        let depth = self.open(1)?;
        let cx = self.cx;
        let result =
            self.ser
                .serialize_newtype_variant(name, index, variant, &Nested(v, depth, cx));
        cx.unwind(result, || Segment::Key(variant.to_owned()))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let depth = self.open(1)?;
        Ok(Faithful::new(self.ser.serialize_seq(len)?, depth, self.cx))
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        let depth = self.open(1)?;
        Ok(Faithful::new(
            self.ser.serialize_tuple(len)?,
            depth,
            self.cx,
        ))
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        let depth = self.open(1)?;
        Ok(Faithful::new(
            self.ser.serialize_tuple_struct(name, len)?,
            depth,
            self.cx,
        ))
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        // `{"variant": [..]}`: an object and an array.
        let depth = self.open(2)?;
        Ok(Faithful::new(
            self.ser
                .serialize_tuple_variant(name, index, variant, len)?,
            depth,
            self.cx,
        ))
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        let depth = self.open(1)?;
        Ok(Faithful::new(self.ser.serialize_map(len)?, depth, self.cx))
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        if name.starts_with(SERDE_JSON_PRIVATE) {
            if self.cx.json {
                return Ok(Faithful::new(
                    self.ser.serialize_struct(name, len)?,
                    self.depth,
                    self.cx,
                ));
            }
            return Err(ser::Error::custom(NOT_FAITHFUL));
        }
        let depth = self.open(1)?;
        Ok(Faithful::new(
            self.ser.serialize_struct(name, len)?,
            depth,
            self.cx,
        ))
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        // `{"variant": {..}}`: two objects.
        let depth = self.open(2)?;
        Ok(Faithful::new(
            self.ser
                .serialize_struct_variant(name, index, variant, len)?,
            depth,
            self.cx,
        ))
    }

    fn is_human_readable(&self) -> bool {
        self.ser.is_human_readable()
    }
}

/// The refusal of a non-finite number (its place is noted on the way out).
fn non_finite(v: f64) -> PayloadError {
    PayloadError::NonFinite {
        path: String::new(),
        value: v.to_string(),
    }
}

macro_rules! compound {
    ($trait:ident, $method:ident) => {
        impl<S: ser::$trait> ser::$trait for Faithful<'_, S> {
            type Ok = S::Ok;
            type Error = S::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), S::Error> {
                let index = self.index;
                self.index += 1;
                let result = self.ser.$method(&Nested(v, self.depth, self.cx));
                self.cx.unwind(result, || Segment::Index(index))
            }
            fn end(self) -> Result<S::Ok, S::Error> {
                self.ser.end()
            }
        }
    };
}

compound!(SerializeSeq, serialize_element);
compound!(SerializeTuple, serialize_element);
compound!(SerializeTupleStruct, serialize_field);
compound!(SerializeTupleVariant, serialize_field);

impl<S: ser::SerializeMap> ser::SerializeMap for Faithful<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), S::Error> {
        // A key JSON cannot hold (a tuple, a struct) is kept by MessagePack
        // but could not be read back as JSON: let serde_json decide.
        if !self.cx.json && serde_json::to_writer(std::io::sink(), &KeyProbe(k)).is_err() {
            return Err(ser::Error::custom(NOT_FAITHFUL));
        }
        self.ser.serialize_key(&Nested(k, self.depth, self.cx))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), S::Error> {
        let index = self.index;
        self.index += 1;
        let result = self.ser.serialize_value(&Nested(v, self.depth, self.cx));
        self.cx.unwind(result, || Segment::Index(index))
    }
    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        k: &K,
        v: &V,
    ) -> Result<(), S::Error> {
        ser::SerializeMap::serialize_key(self, k)?;
        self.index += 1;
        let result = self.ser.serialize_value(&Nested(v, self.depth, self.cx));
        self.cx
            .unwind(result, || match serde_json::to_value(KeyProbe(k)) {
                Ok(serde_json::Value::Object(m)) => {
                    Segment::Key(m.keys().next().cloned().unwrap_or_default())
                }
                _ => Segment::Key(String::from("?")),
            })
    }
    fn end(self) -> Result<S::Ok, S::Error> {
        self.ser.end()
    }
}

macro_rules! struct_compound {
    ($trait:ident) => {
        impl<S: ser::$trait> ser::$trait for Faithful<'_, S> {
            type Ok = S::Ok;
            type Error = S::Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), S::Error> {
                let result = self
                    .ser
                    .serialize_field(key, &Nested(v, self.depth, self.cx));
                self.cx.unwind(result, || Segment::Key(key.to_owned()))
            }
            fn skip_field(&mut self, key: &'static str) -> Result<(), S::Error> {
                self.ser.skip_field(key)
            }
            fn end(self) -> Result<S::Ok, S::Error> {
                self.ser.end()
            }
        }
    };
}

struct_compound!(SerializeStruct);
struct_compound!(SerializeStructVariant);
