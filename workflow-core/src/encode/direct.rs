//! The encoder's direct path: payload types written without serde's data
//! model in between, byte for byte what [`fast`](super::fast) (and so
//! `rmp_serde` through [`Faithful`](super::faithful)) writes for them.
//!
//! A `#[handoff]` struct whose serde form is the derive's plain one (no
//! serde options that change what is written, no generics) gets a
//! [`WriteMsgpack`] impl from the macro: its map header and each field's
//! name as one constant write, each field through its own [`WriteMsgpack`]
//! impl when its type has one (the contract types, numbers, text,
//! `Option`s and `Vec`s of them) and through the serde path otherwise
//! ([`Direct`], chosen where the type is known). Everything else, and every
//! value the direct path gives up on, is written as before; `encode::tests`
//! compares the two byte for byte.
//!
//! Depth is counted as the serde path counts it: a container opened at
//! `depth` holds its elements at `depth + 1`, refused past
//! [`MAX_PAYLOAD_DEPTH`](crate::MAX_PAYLOAD_DEPTH) (the caller then encodes the
//! value again through the serde path, which refuses it with the reason).

use std::borrow::Cow;

use serde::Serialize;

use super::fast::{self, GiveUp};
use crate::spec::{Authority, Expiry, Operation, Scope, StopCondition, StopWhen};

/// A value that writes its own MessagePack, exactly as the serde path
/// writes it (with field names, in the human-readable forms).
///
/// Implemented by the library for the contract types, numbers, text, and
/// `Option`s, `Vec`s and `Box`es of such values, and by `#[handoff]` for
/// its structs; not meant to be implemented by hand.
#[doc(hidden)]
pub trait WriteMsgpack {
    /// Appends the value, `depth` containers deep, to `out`; or gives up
    /// (leaving what it wrote for the caller to truncate).
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp>;
}

/// The part of a value a `#[handoff]` struct's generated writer hands on:
/// written directly when its type implements [`WriteMsgpack`] ([`ViaDirect`]),
/// through the serde path otherwise ([`ViaSerde`]). Generated code calls
/// `(&Direct(&value)).write_part(out, depth)` with both traits in scope.
#[doc(hidden)]
pub struct Direct<'a, T: ?Sized>(pub &'a T);

/// [`Direct`] for a type with a direct writer.
#[doc(hidden)]
pub trait ViaDirect {
    /// Appends the value, `depth` containers deep.
    fn write_part(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp>;
}

impl<T: WriteMsgpack + ?Sized> ViaDirect for Direct<'_, T> {
    #[inline(always)]
    fn write_part(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        self.0.write_msgpack(out, depth)
    }
}

/// [`Direct`] for any other serializable type: the serde path.
#[doc(hidden)]
pub trait ViaSerde {
    /// Appends the value, `depth` containers deep.
    fn write_part(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp>;
}

impl<T: Serialize + ?Sized> ViaSerde for &Direct<'_, T> {
    #[inline]
    fn write_part(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        fast::write_at(out, self.0, depth)
    }
}

/// The depth of a container opened `depth` deep, or gives up past the
/// limit; the caller writes its header itself (as one constant with the
/// first key).
#[doc(hidden)]
#[inline(always)]
pub fn open(depth: u32) -> Result<u32, GiveUp> {
    fast::open(depth, 1)
}

/// Integers, widened to 64 bits as serde's impls widen them.
macro_rules! integers {
    ($write:ident as $wide:ty: $($t:ty),*) => {$(
        impl WriteMsgpack for $t {
            #[inline(always)]
            fn write_msgpack(&self, out: &mut Vec<u8>, _depth: u32) -> Result<(), GiveUp> {
                fast::$write(out, *self as $wide);
                Ok(())
            }
        }
    )*};
}
integers!(uint as u64: u8, u16, u32, u64, usize);
integers!(sint as i64: i8, i16, i32, i64, isize);

impl WriteMsgpack for bool {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, _depth: u32) -> Result<(), GiveUp> {
        out.push(if *self { 0xc3 } else { 0xc2 });
        Ok(())
    }
}

impl WriteMsgpack for str {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, _depth: u32) -> Result<(), GiveUp> {
        fast::str(out, self)
    }
}

impl WriteMsgpack for String {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, _depth: u32) -> Result<(), GiveUp> {
        fast::str(out, self)
    }
}

impl WriteMsgpack for Cow<'_, str> {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, _depth: u32) -> Result<(), GiveUp> {
        fast::str(out, self)
    }
}

impl<T: WriteMsgpack + ?Sized> WriteMsgpack for Box<T> {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        (**self).write_msgpack(out, depth)
    }
}

impl<T: WriteMsgpack> WriteMsgpack for Option<T> {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        match self {
            None => {
                out.push(0xc0);
                Ok(())
            }
            Some(v) => v.write_msgpack(out, depth),
        }
    }
}

/// A sequence `depth` deep: its header, then each element one deeper.
#[inline(always)]
fn seq<T: WriteMsgpack>(out: &mut Vec<u8>, depth: u32, items: &[T]) -> Result<(), GiveUp> {
    let depth = fast::open(depth, 1)?;
    fast::array(out, items.len())?;
    for item in items {
        item.write_msgpack(out, depth)?;
    }
    Ok(())
}

impl<T: WriteMsgpack> WriteMsgpack for Vec<T> {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        seq(out, depth, self)
    }
}

/// Evidence and open questions are written through the serde path (their
/// optional fields make the direct form longer than it saves); a list of
/// them is direct, so an empty one costs one byte.
macro_rules! through_serde {
    ($($t:ty),*) => {$(
        impl WriteMsgpack for $t {
            #[inline]
            fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
                fast::write_at(out, self, depth)
            }
        }
    )*};
}
through_serde!(crate::spec::Evidence, crate::spec::Uncertainty);

impl WriteMsgpack for Operation {
    #[inline]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        open(depth)?;
        keyed_str(out, *b"\x82\xa4name\0", &self.name)?;
        keyed_str(out, *b"\xa6detail\0", &self.detail)
    }
}

impl WriteMsgpack for Expiry {
    #[inline]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        match *self {
            Expiry::Never => out.extend_from_slice(b"\xa5never"),
            Expiry::AtHop(hop) => {
                open(depth)?;
                keyed_uint(out, *b"\x81\xa6at_hop\0\0\0", hop.into());
            }
            Expiry::AtUnixMs(ms) => {
                open(depth)?;
                keyed_uint(out, *b"\x81\xaaat_unix_ms\0\0\0", ms);
            }
        }
        Ok(())
    }
}

impl<A: Authority> WriteMsgpack for Scope<A> {
    #[inline]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        let depth = open(depth)?;
        keyed_str(out, *b"\x82\xa9authority\0", A::NAME)?;
        match self.expires {
            // A lease's usual expiry, written with its key at once.
            Expiry::AtHop(hop) => {
                open(depth)?;
                keyed_uint(out, *b"\xa7expires\x81\xa6at_hop\0\0\0", hop.into());
                Ok(())
            }
            expires => {
                out.extend_from_slice(b"\xa7expires");
                expires.write_msgpack(out, depth)
            }
        }
    }
}

impl WriteMsgpack for StopCondition {
    #[inline]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        open(depth)?;
        match self {
            StopCondition::HopReached { hop } => {
                keyed_uint(
                    out,
                    *b"\x82\xa4kind\xabhop_reached\xa3hop\0\0\0",
                    (*hop).into(),
                );
            }
            StopCondition::DeadlineUnixMs { ms } => {
                keyed_uint(out, *b"\x82\xa4kind\xb0deadline_unix_ms\xa2ms\0\0\0", *ms);
            }
            StopCondition::TokensSpent { tokens } => {
                keyed_uint(
                    out,
                    *b"\x82\xa4kind\xactokens_spent\xa6tokens\0\0\0",
                    *tokens,
                );
            }
            StopCondition::Described { text } => {
                keyed_str(out, *b"\x82\xa4kind\xa9described\xa4text\0", text)?;
            }
        }
        Ok(())
    }
}

impl WriteMsgpack for StopWhen {
    #[inline]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        // `#[serde(transparent)]`: the list itself.
        match self.any.as_slice() {
            // A handoff's usual `StopWhen::at_hop(..)`: the list's header
            // and its one condition's keys at once.
            [StopCondition::HopReached { hop }] => {
                let depth = fast::open(depth, 1)?;
                open(depth)?;
                keyed_uint(
                    out,
                    *b"\x91\x82\xa4kind\xabhop_reached\xa3hop\0\0\0",
                    (*hop).into(),
                );
                Ok(())
            }
            any => seq(out, depth, any),
        }
    }
}

/// `key` (constant bytes ending in a placeholder byte) then the text `v`:
/// for a text under 32 bytes, its one-byte header written in the
/// placeholder's place, with the key, in one write (one capacity check
/// less); a longer one after the key, as [`fast::str`] writes it.
#[inline(always)]
fn keyed_str<const N: usize>(out: &mut Vec<u8>, mut key: [u8; N], v: &str) -> Result<(), GiveUp> {
    if v.len() < 32 {
        key[N - 1] = 0xa0 | v.len() as u8;
        out.extend_from_slice(&key);
        if !v.is_empty() {
            out.extend_from_slice(v.as_bytes());
        }
        Ok(())
    } else {
        out.extend_from_slice(&key[..N - 1]);
        fast::str(out, v)
    }
}

/// `key` (constant bytes ending in three placeholder bytes) then the
/// number `v`: up to 65,535 (a hop, nearly always) written in the
/// placeholders' place, with the key, in one write of a length known where
/// it is inlined; a larger one after the key, as [`fast::uint`] writes it.
#[inline(always)]
fn keyed_uint<const N: usize>(out: &mut Vec<u8>, mut key: [u8; N], v: u64) {
    let at = N - 3;
    if v < 128 {
        key[at] = v as u8;
        out.extend_from_slice(&key[..at + 1]);
    } else if v < 256 {
        key[at] = 0xcc;
        key[at + 1] = v as u8;
        out.extend_from_slice(&key[..at + 2]);
    } else if v < 65_536 {
        key[at] = 0xcd;
        key[at + 1..].copy_from_slice(&(v as u16).to_be_bytes());
        out.extend_from_slice(&key);
    } else {
        out.extend_from_slice(&key[..at]);
        fast::uint(out, v);
    }
}
