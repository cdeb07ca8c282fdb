//! A check of recorded MessagePack bytes before anything decodes them:
//! one pass, no recursion, so that bytes however deep (written by another
//! version, or by hand) give a typed error instead of a stack overflow.

use std::collections::HashSet;

use rmp::Marker;

use crate::spec::{MAX_PAYLOAD_DEPTH, PayloadError};

/// One open array or map: the items still to read (a map's keys and values
/// both count) and, for a map, the string keys seen.
struct Level {
    left: u64,
    keys: Option<HashSet<Vec<u8>>>,
}

/// Refuses `bytes` that nest deeper than [`MAX_PAYLOAD_DEPTH`], hold a
/// non-finite number or a key twice in one map, are cut short or run on
/// after the value.
pub(super) fn check_msgpack(bytes: &[u8]) -> Result<(), PayloadError> {
    let mut rd = Reader { bytes, at: 0 };
    let mut stack = vec![Level {
        left: 1,
        keys: None,
    }];
    while let Some(top) = stack.last_mut() {
        if top.left == 0 {
            stack.pop();
            continue;
        }
        let is_key = top.keys.is_some() && top.left % 2 == 0;
        top.left -= 1;
        let at = rd.at;
        let marker = Marker::from_u8(rd.take(1)?[0]);
        let open = match marker {
            Marker::FixPos(_) | Marker::FixNeg(_) | Marker::Null | Marker::True | Marker::False => {
                None
            }
            Marker::U8 | Marker::I8 => rd.skip(1).map(|()| None)?,
            Marker::U16 | Marker::I16 => rd.skip(2).map(|()| None)?,
            Marker::U32 | Marker::I32 => rd.skip(4).map(|()| None)?,
            Marker::U64 | Marker::I64 => rd.skip(8).map(|()| None)?,
            Marker::F32 => {
                let v = f32::from_be_bytes(rd.array()?);
                finite(f64::from(v), at)?;
                None
            }
            Marker::F64 => {
                finite(f64::from_be_bytes(rd.array()?), at)?;
                None
            }
            Marker::FixStr(n) => rd.string(u64::from(n), is_key, &mut stack)?,
            Marker::Str8 => {
                let n = rd.len(1)?;
                rd.string(n, is_key, &mut stack)?
            }
            Marker::Str16 => {
                let n = rd.len(2)?;
                rd.string(n, is_key, &mut stack)?
            }
            Marker::Str32 => {
                let n = rd.len(4)?;
                rd.string(n, is_key, &mut stack)?
            }
            Marker::Bin8 => rd.len(1).and_then(|n| rd.skip(n)).map(|()| None)?,
            Marker::Bin16 => rd.len(2).and_then(|n| rd.skip(n)).map(|()| None)?,
            Marker::Bin32 => rd.len(4).and_then(|n| rd.skip(n)).map(|()| None)?,
            Marker::FixExt1 => rd.skip(2).map(|()| None)?,
            Marker::FixExt2 => rd.skip(3).map(|()| None)?,
            Marker::FixExt4 => rd.skip(5).map(|()| None)?,
            Marker::FixExt8 => rd.skip(9).map(|()| None)?,
            Marker::FixExt16 => rd.skip(17).map(|()| None)?,
            Marker::Ext8 => rd.len(1).and_then(|n| rd.skip(n + 1)).map(|()| None)?,
            Marker::Ext16 => rd.len(2).and_then(|n| rd.skip(n + 1)).map(|()| None)?,
            Marker::Ext32 => rd.len(4).and_then(|n| rd.skip(n + 1)).map(|()| None)?,
            Marker::FixArray(n) => Some((u64::from(n), false)),
            Marker::Array16 => Some((rd.len(2)?, false)),
            Marker::Array32 => Some((rd.len(4)?, false)),
            Marker::FixMap(n) => Some((u64::from(n) * 2, true)),
            Marker::Map16 => Some((rd.len(2)? * 2, true)),
            Marker::Map32 => Some((rd.len(4)? * 2, true)),
            Marker::Reserved => {
                return Err(PayloadError::Invalid(format!(
                    "byte {at} is not a MessagePack marker"
                )));
            }
        };
        if let Some((left, map)) = open {
            // The base level holds the value itself and is not a container.
            if stack.len() > MAX_PAYLOAD_DEPTH as usize {
                return Err(PayloadError::TooDeep {
                    limit: MAX_PAYLOAD_DEPTH,
                });
            }
            stack.push(Level {
                left,
                keys: map.then(HashSet::new),
            });
        }
    }
    if rd.at != bytes.len() {
        return Err(PayloadError::Invalid(format!(
            "{} bytes follow the recorded value",
            bytes.len() - rd.at
        )));
    }
    Ok(())
}

/// Refuses a non-finite number found at byte `at`.
fn finite(v: f64, at: usize) -> Result<(), PayloadError> {
    if v.is_finite() {
        return Ok(());
    }
    Err(PayloadError::NonFinite {
        path: format!("byte {at}"),
        value: v.to_string(),
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], PayloadError> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| PayloadError::Invalid("the recorded value is cut short".into()))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn skip(&mut self, n: u64) -> Result<(), PayloadError> {
        self.take(n).map(|_| ())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], PayloadError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N as u64)?);
        Ok(out)
    }

    /// A big-endian length of `width` bytes.
    fn len(&mut self, width: u64) -> Result<u64, PayloadError> {
        Ok(self
            .take(width)?
            .iter()
            .fold(0u64, |n, b| (n << 8) | u64::from(*b)))
    }

    /// A string of `n` bytes; a map key is checked not to repeat.
    fn string(
        &mut self,
        n: u64,
        is_key: bool,
        stack: &mut [Level],
    ) -> Result<Option<(u64, bool)>, PayloadError> {
        let text = self.take(n)?;
        if is_key
            && let Some(Level {
                keys: Some(keys), ..
            }) = stack.last_mut()
            && !keys.insert(text.to_vec())
        {
            return Err(PayloadError::DuplicateKey {
                key: String::from_utf8_lossy(text).into_owned(),
            });
        }
        Ok(None)
    }
}
