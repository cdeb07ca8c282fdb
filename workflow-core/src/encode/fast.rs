//! The encoder's fast path: MessagePack written straight into the record's
//! byte buffer, byte for byte what `rmp_serde` (with field names and the
//! human-readable forms) writes through [`Faithful`](super::faithful) for
//! the same value.
//!
//! It covers the shapes payloads are made of (structs, sequences, maps with
//! text keys, enums, options, numbers, text) and gives up on everything
//! else: a value past [`MAX_PAYLOAD_DEPTH`], a non-finite number, a 128-bit
//! integer that does not fit 64 bits, a map key that is not text, a length
//! not known up front, serde_json's private types, `rmp_serde`'s extension
//! type, or an error of the value's own `Serialize`. Giving up is never an
//! answer: the caller truncates what was written and encodes the value again
//! through `rmp_serde` and [`Faithful`](super::faithful), which decide
//! (refuse, fall back to JSON, or write it). So this path changes how fast
//! a payload is written, never what is written; `encode::tests` compares
//! the two byte for byte.

use serde::ser::{self, Serialize};

use crate::spec::MAX_PAYLOAD_DEPTH;

/// serde_json's private names (`arbitrary_precision` numbers, `RawValue`).
const SERDE_JSON_PRIVATE: &str = "$serde_json::private::";

/// The newtype name `rmp_serde` writes as a MessagePack extension.
const RMP_EXT: &str = "_ExtStruct";

/// The fast path gave up on the value (see the module docs); nothing in it
/// says why, because the slow path will.
#[derive(Debug)]
#[doc(hidden)]
pub struct GiveUp;

impl std::fmt::Display for GiveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the fast encoder gave up on this value")
    }
}

impl std::error::Error for GiveUp {}

impl ser::Error for GiveUp {
    fn custom<T: std::fmt::Display>(_msg: T) -> Self {
        GiveUp
    }
}

/// Appends `payload`'s MessagePack to `out`, or gives up (leaving whatever
/// it wrote for the caller to truncate).
#[inline]
pub(super) fn write<P: Serialize + ?Sized>(out: &mut Vec<u8>, payload: &P) -> Result<(), GiveUp> {
    write_at(out, payload, 0)
}

/// [`write`] for a value `depth` containers deep (a part of a value the
/// [`direct`](super::direct) path writes).
#[inline]
pub(super) fn write_at<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    payload: &P,
    depth: u32,
) -> Result<(), GiveUp> {
    payload.serialize(Fast { out, depth })
}

/// Writes one value `depth` JSON levels deep.
struct Fast<'a> {
    out: &'a mut Vec<u8>,
    /// Arrays and objects around this value (in its JSON form).
    depth: u32,
}

/// The elements of an array or the entries of a map or struct, one level
/// deeper than the container's own value.
struct Compound<'a> {
    out: &'a mut Vec<u8>,
    /// The depth of the elements.
    depth: u32,
}

/// The depth of a container `levels` deep opened at `depth`, or give up.
#[inline]
pub(super) fn open(depth: u32, levels: u32) -> Result<u32, GiveUp> {
    let depth = depth + levels;
    if depth > MAX_PAYLOAD_DEPTH {
        return Err(GiveUp);
    }
    Ok(depth)
}

#[inline(always)]
pub(super) fn uint(out: &mut Vec<u8>, v: u64) {
    if v < 128 {
        out.push(v as u8);
    } else if v < 256 {
        out.extend_from_slice(&[0xcc, v as u8]);
    } else if v < 65_536 {
        out.push(0xcd);
        out.extend_from_slice(&(v as u16).to_be_bytes());
    } else if v < 4_294_967_296 {
        out.push(0xce);
        out.extend_from_slice(&(v as u32).to_be_bytes());
    } else {
        out.push(0xcf);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

#[inline]
pub(super) fn sint(out: &mut Vec<u8>, v: i64) {
    if v >= 0 {
        return uint(out, v as u64);
    }
    if v >= -32 {
        out.push(v as i8 as u8);
    } else if v >= -128 {
        out.extend_from_slice(&[0xd0, v as i8 as u8]);
    } else if v >= -32_768 {
        out.push(0xd1);
        out.extend_from_slice(&(v as i16).to_be_bytes());
    } else if v >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(v as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// A length as `rmp` writes it: `fix` (the fix marker's base, when
/// `fix_below` is above the length), then the 8- (if `m8` is nonzero), 16-
/// or 32-bit form.
#[inline(always)]
fn len_header(
    out: &mut Vec<u8>,
    len: usize,
    fix: u8,
    fix_below: usize,
    m8: u8,
    m16: u8,
) -> Result<(), GiveUp> {
    if len < fix_below {
        out.push(fix | len as u8);
    } else if m8 != 0 && len < 256 {
        out.extend_from_slice(&[m8, len as u8]);
    } else if len < 65_536 {
        out.push(m16);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        let len = u32::try_from(len).map_err(|_| GiveUp)?;
        out.push(m16 + 1);
        out.extend_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

#[inline(always)]
pub(super) fn str(out: &mut Vec<u8>, v: &str) -> Result<(), GiveUp> {
    len_header(out, v.len(), 0xa0, 32, 0xd9, 0xda)?;
    out.extend_from_slice(v.as_bytes());
    Ok(())
}

#[inline]
pub(super) fn array(out: &mut Vec<u8>, len: usize) -> Result<(), GiveUp> {
    len_header(out, len, 0x90, 16, 0, 0xdc)
}

#[inline]
pub(super) fn map(out: &mut Vec<u8>, len: usize) -> Result<(), GiveUp> {
    len_header(out, len, 0x80, 16, 0, 0xde)
}

impl<'a> ser::Serializer for Fast<'a> {
    type Ok = ();
    type Error = GiveUp;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), GiveUp> {
        self.out.push(if v { 0xc3 } else { 0xc2 });
        Ok(())
    }
    #[inline]
    fn serialize_i8(self, v: i8) -> Result<(), GiveUp> {
        sint(self.out, v.into());
        Ok(())
    }
    #[inline]
    fn serialize_i16(self, v: i16) -> Result<(), GiveUp> {
        sint(self.out, v.into());
        Ok(())
    }
    #[inline]
    fn serialize_i32(self, v: i32) -> Result<(), GiveUp> {
        sint(self.out, v.into());
        Ok(())
    }
    #[inline]
    fn serialize_i64(self, v: i64) -> Result<(), GiveUp> {
        sint(self.out, v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), GiveUp> {
        sint(self.out, i64::try_from(v).map_err(|_| GiveUp)?);
        Ok(())
    }
    #[inline]
    fn serialize_u8(self, v: u8) -> Result<(), GiveUp> {
        uint(self.out, v.into());
        Ok(())
    }
    #[inline]
    fn serialize_u16(self, v: u16) -> Result<(), GiveUp> {
        uint(self.out, v.into());
        Ok(())
    }
    #[inline]
    fn serialize_u32(self, v: u32) -> Result<(), GiveUp> {
        uint(self.out, v.into());
        Ok(())
    }
    #[inline]
    fn serialize_u64(self, v: u64) -> Result<(), GiveUp> {
        uint(self.out, v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), GiveUp> {
        uint(self.out, u64::try_from(v).map_err(|_| GiveUp)?);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), GiveUp> {
        if !v.is_finite() {
            return Err(GiveUp);
        }
        self.out.push(0xca);
        self.out.extend_from_slice(&v.to_bits().to_be_bytes());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<(), GiveUp> {
        if !v.is_finite() {
            return Err(GiveUp);
        }
        self.out.push(0xcb);
        self.out.extend_from_slice(&v.to_bits().to_be_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), GiveUp> {
        str(self.out, v.encode_utf8(&mut [0; 4]))
    }
    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), GiveUp> {
        str(self.out, v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), GiveUp> {
        len_header(self.out, v.len(), 0, 0, 0xc4, 0xc5)?;
        self.out.extend_from_slice(v);
        Ok(())
    }
    #[inline]
    fn serialize_none(self) -> Result<(), GiveUp> {
        self.out.push(0xc0);
        Ok(())
    }
    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), GiveUp> {
        v.serialize(self)
    }
    #[inline]
    fn serialize_unit(self) -> Result<(), GiveUp> {
        self.out.push(0xc0);
        Ok(())
    }
    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), GiveUp> {
        // As `Faithful` writes it: `nil`, as JSON's `null`.
        self.out.push(0xc0);
        Ok(())
    }
    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), GiveUp> {
        str(self.out, variant)
    }
    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<(), GiveUp> {
        if name == RMP_EXT || name.starts_with(SERDE_JSON_PRIVATE) {
            return Err(GiveUp);
        }
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), GiveUp> {
        let depth = open(self.depth, 1)?;
        self.out.push(0x81);
        str(self.out, variant)?;
        v.serialize(Fast {
            out: self.out,
            depth,
        })
    }
    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'a>, GiveUp> {
        let depth = open(self.depth, 1)?;
        array(self.out, len.ok_or(GiveUp)?)?;
        Ok(Compound {
            out: self.out,
            depth,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, GiveUp> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, GiveUp> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, GiveUp> {
        let depth = open(self.depth, 2)?;
        self.out.push(0x81);
        str(self.out, variant)?;
        array(self.out, len)?;
        Ok(Compound {
            out: self.out,
            depth,
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'a>, GiveUp> {
        let depth = open(self.depth, 1)?;
        map(self.out, len.ok_or(GiveUp)?)?;
        Ok(Compound {
            out: self.out,
            depth,
        })
    }
    #[inline]
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Compound<'a>, GiveUp> {
        if name.starts_with(SERDE_JSON_PRIVATE) {
            return Err(GiveUp);
        }
        let depth = open(self.depth, 1)?;
        map(self.out, len)?;
        Ok(Compound {
            out: self.out,
            depth,
        })
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, GiveUp> {
        let depth = open(self.depth, 2)?;
        self.out.push(0x81);
        str(self.out, variant)?;
        map(self.out, len)?;
        Ok(Compound {
            out: self.out,
            depth,
        })
    }
    fn is_human_readable(&self) -> bool {
        true
    }
}

impl Compound<'_> {
    #[inline]
    fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), GiveUp> {
        v.serialize(Fast {
            out: self.out,
            depth: self.depth,
        })
    }
}

macro_rules! elements {
    ($($trait:ident :: $method:ident),* $(,)?) => {
        $(
            impl ser::$trait for Compound<'_> {
                type Ok = ();
                type Error = GiveUp;
                #[inline]
                fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), GiveUp> {
                    self.value(v)
                }
                #[inline]
                fn end(self) -> Result<(), GiveUp> {
                    Ok(())
                }
            }
        )*
    };
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

macro_rules! fields {
    ($($trait:ident),* $(,)?) => {
        $(
            impl ser::$trait for Compound<'_> {
                type Ok = ();
                type Error = GiveUp;
                #[inline(always)]
                fn serialize_field<T: Serialize + ?Sized>(
                    &mut self,
                    key: &'static str,
                    v: &T,
                ) -> Result<(), GiveUp> {
                    str(self.out, key)?;
                    self.value(v)
                }
                #[inline]
                fn end(self) -> Result<(), GiveUp> {
                    Ok(())
                }
            }
        )*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = GiveUp;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), GiveUp> {
        k.serialize(Key { out: self.out })
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), GiveUp> {
        self.value(v)
    }
    fn end(self) -> Result<(), GiveUp> {
        Ok(())
    }
}

/// A map key: text only (a string, a char, a unit variant, a newtype around
/// one), which JSON holds as it is; anything else is left to the slow path,
/// which asks serde_json.
struct Key<'a> {
    out: &'a mut Vec<u8>,
}

/// Gives up on every key shape but text.
macro_rules! not_text {
    ($($method:ident($($ty:ty),*)),* $(,)?) => {
        $(
            fn $method(self, $(_: $ty),*) -> Result<(), GiveUp> {
                Err(GiveUp)
            }
        )*
    };
}

impl ser::Serializer for Key<'_> {
    type Ok = ();
    type Error = GiveUp;
    type SerializeSeq = ser::Impossible<(), GiveUp>;
    type SerializeTuple = ser::Impossible<(), GiveUp>;
    type SerializeTupleStruct = ser::Impossible<(), GiveUp>;
    type SerializeTupleVariant = ser::Impossible<(), GiveUp>;
    type SerializeMap = ser::Impossible<(), GiveUp>;
    type SerializeStruct = ser::Impossible<(), GiveUp>;
    type SerializeStructVariant = ser::Impossible<(), GiveUp>;

    not_text!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
    );

    fn serialize_char(self, v: char) -> Result<(), GiveUp> {
        str(self.out, v.encode_utf8(&mut [0; 4]))
    }
    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), GiveUp> {
        str(self.out, v)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _v: &T) -> Result<(), GiveUp> {
        Err(GiveUp)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), GiveUp> {
        str(self.out, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<(), GiveUp> {
        if name == RMP_EXT || name.starts_with(SERDE_JSON_PRIVATE) {
            return Err(GiveUp);
        }
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _v: &T,
    ) -> Result<(), GiveUp> {
        Err(GiveUp)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, GiveUp> {
        Err(GiveUp)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, GiveUp> {
        Err(GiveUp)
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, GiveUp> {
        Err(GiveUp)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, GiveUp> {
        Err(GiveUp)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, GiveUp> {
        Err(GiveUp)
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, GiveUp> {
        Err(GiveUp)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, GiveUp> {
        Err(GiveUp)
    }
    fn is_human_readable(&self) -> bool {
        true
    }
}
