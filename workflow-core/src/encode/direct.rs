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

    /// Appends `key` (constant bytes: a struct's field name, after the
    /// map's header for its first field) then the value. A value whose
    /// written form starts with constant bytes, or is short, writes them
    /// with the key at once (one capacity check less a field).
    #[inline(always)]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        out.extend_from_slice(key);
        self.write_msgpack(out, depth)
    }
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

    /// Appends `key` (constant bytes) then the value, `depth` containers
    /// deep ([`WriteMsgpack::write_keyed`]).
    fn write_keyed_part<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp>;
}

impl<T: WriteMsgpack + ?Sized> ViaDirect for Direct<'_, T> {
    #[inline(always)]
    fn write_part(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        self.0.write_msgpack(out, depth)
    }

    #[inline(always)]
    fn write_keyed_part<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        self.0.write_keyed(key, out, depth)
    }
}

/// [`Direct`] for any other serializable type: the serde path.
#[doc(hidden)]
pub trait ViaSerde {
    /// Appends the value, `depth` containers deep.
    fn write_part(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp>;

    /// Appends `key` (constant bytes) then the value, `depth` containers
    /// deep.
    fn write_keyed_part<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp>;
}

impl<T: Serialize + ?Sized> ViaSerde for &Direct<'_, T> {
    #[inline]
    fn write_part(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        fast::write_at(out, self.0, depth)
    }

    #[inline]
    fn write_keyed_part<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        out.extend_from_slice(key);
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

/// Integers, widened to 64 bits as serde's impls widen them; an unsigned
/// one up to 65,535 written with its key at once.
macro_rules! integers {
    (uint as $wide:ty: $($t:ty),*) => {$(
        impl WriteMsgpack for $t {
            #[inline(always)]
            fn write_msgpack(&self, out: &mut Vec<u8>, _depth: u32) -> Result<(), GiveUp> {
                fast::uint(out, *self as $wide);
                Ok(())
            }

            #[inline(always)]
            fn write_keyed<const N: usize>(
                &self,
                key: &[u8; N],
                out: &mut Vec<u8>,
                _depth: u32,
            ) -> Result<(), GiveUp> {
                keyed_uint(out, key, &[], *self as $wide);
                Ok(())
            }
        }
    )*};
    (sint as $wide:ty: $($t:ty),*) => {$(
        impl WriteMsgpack for $t {
            #[inline(always)]
            fn write_msgpack(&self, out: &mut Vec<u8>, _depth: u32) -> Result<(), GiveUp> {
                fast::sint(out, *self as $wide);
                Ok(())
            }
        }
    )*};
}
integers!(uint as u64: u8, u16, u32, u64, usize);
integers!(sint as i64: i8, i16, i32, i64, isize);

impl WriteMsgpack for bool {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        self.write_keyed(&[], out, depth)
    }

    #[inline(always)]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        _depth: u32,
    ) -> Result<(), GiveUp> {
        keyed_bytes(out, key, &[if *self { 0xc3 } else { 0xc2 }]);
        Ok(())
    }
}

/// Text: its header written with the key at once when under 32 bytes.
macro_rules! text {
    ($($t:ty),*) => {$(
        impl WriteMsgpack for $t {
            #[inline(always)]
            fn write_msgpack(&self, out: &mut Vec<u8>, _depth: u32) -> Result<(), GiveUp> {
                fast::str(out, self)
            }

            #[inline(always)]
            fn write_keyed<const N: usize>(
                &self,
                key: &[u8; N],
                out: &mut Vec<u8>,
                _depth: u32,
            ) -> Result<(), GiveUp> {
                keyed_str(out, key, &[], self)
            }
        }
    )*};
}
text!(str, String, Cow<'_, str>);

impl<T: WriteMsgpack + ?Sized> WriteMsgpack for Box<T> {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        (**self).write_msgpack(out, depth)
    }

    #[inline(always)]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        (**self).write_keyed(key, out, depth)
    }
}

impl<T: WriteMsgpack> WriteMsgpack for Option<T> {
    #[inline(always)]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        self.write_keyed(&[], out, depth)
    }

    #[inline(always)]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        match self {
            None => {
                keyed_bytes(out, key, b"\xc0");
                Ok(())
            }
            Some(v) => v.write_keyed(key, out, depth),
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

    /// An empty list (a handoff's usual evidence and open questions): its
    /// one byte with the key.
    #[inline(always)]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        if self.is_empty() {
            open(depth)?;
            keyed_bytes(out, key, b"\x90");
            Ok(())
        } else {
            out.extend_from_slice(key);
            seq(out, depth, self)
        }
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
        self.write_keyed(&[], out, depth)
    }

    // Always inlined into the handoff's writer, long texts written by a
    // call (measured: the call cost a transfer about 15 instructions).
    #[inline(always)]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        open(depth)?;
        keyed_str(out, key, b"\x82\xa4name", &self.name)?;
        keyed_str(out, b"\xa6detail", &[], &self.detail)
    }
}

impl WriteMsgpack for Expiry {
    #[inline]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        self.write_keyed(&[], out, depth)
    }

    // Always inlined into the scope's writer (measured: 4 instructions a
    // transition less than a call).
    #[inline(always)]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        match *self {
            Expiry::Never => keyed_bytes(out, key, b"\xa5never"),
            Expiry::AtHop(hop) => {
                open(depth)?;
                keyed_uint(out, key, b"\x81\xa6at_hop", hop.into());
            }
            Expiry::AtUnixMs(ms) => {
                open(depth)?;
                keyed_uint(out, key, b"\x81\xaaat_unix_ms", ms);
            }
        }
        Ok(())
    }
}

impl<A: Authority> WriteMsgpack for Scope<A> {
    #[inline]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        self.write_keyed(&[], out, depth)
    }

    #[inline]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        let depth = open(depth)?;
        keyed_known_str(out, key, b"\x82\xa9authority", A::NAME)?;
        self.expires.write_keyed(b"\xa7expires", out, depth)
    }
}

impl WriteMsgpack for StopCondition {
    #[inline]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        self.write_keyed(&[], out, depth)
    }

    #[inline]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        open(depth)?;
        match self {
            StopCondition::HopReached { hop } => {
                keyed_uint(
                    out,
                    key,
                    b"\x82\xa4kind\xabhop_reached\xa3hop",
                    (*hop).into(),
                );
            }
            StopCondition::DeadlineUnixMs { ms } => {
                keyed_uint(out, key, b"\x82\xa4kind\xb0deadline_unix_ms\xa2ms", *ms);
            }
            StopCondition::TokensSpent { tokens } => {
                keyed_uint(out, key, b"\x82\xa4kind\xactokens_spent\xa6tokens", *tokens);
            }
            StopCondition::Described { text } => {
                keyed_str(out, key, b"\x82\xa4kind\xa9described\xa4text", text)?;
            }
        }
        Ok(())
    }
}

impl WriteMsgpack for StopWhen {
    #[inline]
    fn write_msgpack(&self, out: &mut Vec<u8>, depth: u32) -> Result<(), GiveUp> {
        self.write_keyed(&[], out, depth)
    }

    // Always inlined into the handoff's writer, the list of any other
    // shape written by a call (measured: the call for the usual one cost
    // a transfer about 15 instructions).
    #[inline(always)]
    fn write_keyed<const N: usize>(
        &self,
        key: &[u8; N],
        out: &mut Vec<u8>,
        depth: u32,
    ) -> Result<(), GiveUp> {
        // `#[serde(transparent)]`: the list itself.
        match self.any.as_slice() {
            // A handoff's usual `StopWhen::at_hop(..)`: the list's header
            // and its one condition's keys at once.
            [StopCondition::HopReached { hop }] => {
                let depth = fast::open(depth, 1)?;
                open(depth)?;
                keyed_uint(
                    out,
                    key,
                    b"\x91\x82\xa4kind\xabhop_reached\xa3hop",
                    (*hop).into(),
                );
                Ok(())
            }
            any => keyed_stop_list(out, key, depth, any),
        }
    }
}

/// [`StopWhen`]'s writer for a list other than one hop condition.
#[inline(never)]
fn keyed_stop_list<const N: usize>(
    out: &mut Vec<u8>,
    key: &[u8; N],
    depth: u32,
    any: &[StopCondition],
) -> Result<(), GiveUp> {
    out.extend_from_slice(key);
    seq(out, depth, any)
}

/// The most bytes a joined write ([`joined`]) puts together on the stack.
const JOINED: usize = 64;

/// `key` then `prefix` (constants where inlined) at the start of a buffer,
/// with room for 9 bytes more after them (a number's or a text's header);
/// `None` when they are too long for it. What is put after them is written
/// with them in one write of a length known where it is inlined: one
/// capacity check, not one for each.
#[inline(always)]
fn joined<const N: usize, const M: usize>(key: &[u8; N], prefix: &[u8; M]) -> Option<[u8; JOINED]> {
    if N + M + 9 > JOINED {
        return None;
    }
    let mut buf = [0u8; JOINED];
    buf[..N].copy_from_slice(key);
    buf[N..N + M].copy_from_slice(prefix);
    Some(buf)
}

/// `key` then `bytes` (constants where inlined), in one write.
#[inline(always)]
fn keyed_bytes<const N: usize, const M: usize>(out: &mut Vec<u8>, key: &[u8; N], bytes: &[u8; M]) {
    match joined(key, bytes) {
        Some(buf) => out.extend_from_slice(&buf[..N + M]),
        None => {
            out.extend_from_slice(key);
            out.extend_from_slice(bytes);
        }
    }
}

/// `key`, `prefix` (constants where inlined), then the text `v`: for a
/// text under 32 bytes, its one-byte header written with them in one write;
/// a longer one after them, as [`fast::str`] writes it.
#[inline(always)]
fn keyed_str<const N: usize, const M: usize>(
    out: &mut Vec<u8>,
    key: &[u8; N],
    prefix: &[u8; M],
    v: &str,
) -> Result<(), GiveUp> {
    match joined(key, prefix) {
        Some(mut buf) if v.len() < 32 => {
            buf[N + M] = 0xa0 | v.len() as u8;
            out.extend_from_slice(&buf[..N + M + 1]);
            if !v.is_empty() {
                out.extend_from_slice(v.as_bytes());
            }
            Ok(())
        }
        _ => keyed_long_str(out, key, prefix, v),
    }
}

/// [`keyed_str`] of a text that is a constant where it is inlined (an
/// authority's `NAME`): the text joined with the key and the prefix, all of
/// it one write of constants (measured: a write and its capacity check a
/// transfer less). A runtime text would be copied twice this way; those go
/// through [`keyed_str`].
#[inline(always)]
fn keyed_known_str<const N: usize, const M: usize>(
    out: &mut Vec<u8>,
    key: &[u8; N],
    prefix: &[u8; M],
    v: &'static str,
) -> Result<(), GiveUp> {
    let at = N + M;
    match joined(key, prefix) {
        Some(mut buf) if v.len() < 32 && at + 1 + v.len() <= JOINED => {
            buf[at] = 0xa0 | v.len() as u8;
            buf[at + 1..at + 1 + v.len()].copy_from_slice(v.as_bytes());
            out.extend_from_slice(&buf[..at + 1 + v.len()]);
            Ok(())
        }
        _ => keyed_str(out, key, prefix, v),
    }
}

/// [`keyed_str`] of a text of 32 bytes or more (or a key and prefix too
/// long to join): out of the way of the short ones.
#[inline(never)]
fn keyed_long_str<const N: usize, const M: usize>(
    out: &mut Vec<u8>,
    key: &[u8; N],
    prefix: &[u8; M],
    v: &str,
) -> Result<(), GiveUp> {
    out.extend_from_slice(key);
    out.extend_from_slice(prefix);
    fast::str(out, v)
}

/// `key`, `prefix` (constants where inlined), then the number `v`: up to
/// 65,535 (a hop, nearly always) written with them in one write of a
/// length known where it is inlined; a larger one after them, as
/// [`fast::uint`] writes it.
///
/// The number's one to three bytes go in as one 4-byte value at the same
/// place whatever their count, and the bytes past them are cut off again
/// ([`OVERWRITE`]): one write of one length, which the compiler turns into
/// stores of the constants and of that value. With a length for each size
/// (measured: 2026-12-04) the three writes were merged into one of a
/// length known only at run time, a `memcpy` call, which then read the
/// buffer just written byte by byte on the stack, a stall of the store
/// buffer at every transfer's hop condition.
#[inline(always)]
fn keyed_uint<const N: usize, const M: usize>(
    out: &mut Vec<u8>,
    key: &[u8; N],
    prefix: &[u8; M],
    v: u64,
) {
    let at = N + M;
    match joined(key, prefix) {
        Some(mut buf) if v < 65_536 => {
            // The MessagePack form of `v`, its first byte lowest.
            let (word, len) = if v < 128 {
                (v as u32, 1)
            } else if v < 256 {
                (0xcc | (v as u32) << 8, 2)
            } else {
                (0xcd | u32::from((v as u16).swap_bytes()) << 8, 3)
            };
            // In bounds: `joined` leaves 9 bytes after `at`.
            buf[at..at + 4].copy_from_slice(&word.to_le_bytes());
            let end = out.len() + at + len;
            out.extend_from_slice(&buf[..at + 4]);
            out.truncate(end);
        }
        _ => keyed_large_uint(out, key, prefix, v),
    }
}

/// How many bytes past its end a writer of this module may put in its
/// buffer before it cuts them off again ([`keyed_uint`]): the room a
/// buffer reserved for a payload keeps beyond it, so as not to grow for
/// bytes it does not keep (`run/payloads.rs`).
pub(crate) const OVERWRITE: usize = 3;

/// [`keyed_uint`] of a number above 65,535 (or a key and prefix too long
/// to join): out of the way of the small ones.
#[inline(never)]
fn keyed_large_uint<const N: usize, const M: usize>(
    out: &mut Vec<u8>,
    key: &[u8; N],
    prefix: &[u8; M],
    v: u64,
) {
    out.extend_from_slice(key);
    out.extend_from_slice(prefix);
    fast::uint(out, v);
}
