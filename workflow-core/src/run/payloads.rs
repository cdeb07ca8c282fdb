//! The payload bytes of a run's transfers, written once: an append-only
//! chain of chunks that the run writes at its end and that a turn's context
//! reads (its agent's earlier turns) without a copy.
//!
//! The run owns the newest chunk and writes into it with no check of who
//! else reads it: a turn's context borrows the run's bytes for its turn,
//! and a context that outlives a borrow (a fan-out branch's, kept while the
//! run records the branch's siblings) takes a share, which freezes the
//! bytes written so far in a shared chunk and starts a new one after it, so
//! bytes once shared never move and never change.

use std::sync::Arc;

/// The least a new chunk reserves after a share (a run's first chunk
/// reserves what [`Payloads::with_capacity`] asks): room for one payload
/// the size of the last one, or this. A fan-out shares once a branch turn
/// and about one payload is written between two, and each chunk is kept
/// for the run: a fixed 1 KiB chunk held mostly nothing for small payloads,
/// room for two held half nothing for any. More written than reserved grows
/// the chunk as [`Payloads::tail`] does.
const CHUNK: usize = 128;

/// The least a chunk grows by (see [`Payloads::tail`]): fewer, larger
/// growths while the run is young (each one a reallocation and a copy).
const GROWTH: usize = 512;

/// Pushes `item` onto `v`, growing a full `v` by half its length (by 4 at
/// least) rather than doubling it: still amortised (each growth adds a fixed
/// share of what is there), with a third of the capacity at most unused
/// instead of a half. For a run's per-transfer tables, held as long as the
/// run.
#[inline(always)]
pub(crate) fn push_grown<T>(v: &mut Vec<T>, item: T) {
    if v.len() == v.capacity() {
        grow(v);
    }
    v.push(item);
}

/// Grows a full `v` as [`push_grown`] does: rarely, out of the caller's way.
#[cold]
#[inline(never)]
fn grow<T>(v: &mut Vec<T>) {
    v.reserve_exact((v.len() / 2).max(4));
}

/// The payload bytes of a run's transfers, addressed by their offset from
/// the first byte the run wrote (as the transcript's entries record them).
/// The run owns the chunk it writes into; [`share`](Self::share) hands the
/// bytes written so far to a holder that outlives a borrow (a fan-out
/// branch's context), which freezes them in a shared chunk and starts a
/// new one after it. Cloning copies the chunk being written and shares the
/// frozen ones.
#[derive(Clone)]
pub(crate) struct Payloads {
    head: Chunk,
}

/// The bytes a run wrote up to a [`Payloads::share`]: frozen, shared, read
/// by a holder while the run writes on.
#[derive(Clone)]
pub(crate) struct SharedPayloads {
    head: Option<Arc<Chunk>>,
}

/// Payload bytes to read: the run's own, borrowed, or a share of them.
#[derive(Clone, Copy)]
pub(crate) enum PayloadsRef<'a> {
    /// The run's, borrowed for a turn.
    Run(&'a Payloads),
    /// A share, held by a fan-out branch's context.
    Shared(&'a SharedPayloads),
}

impl PayloadsRef<'_> {
    /// The bytes from offset `start` to `end`, if written (and, for a
    /// share, written before it was taken).
    pub(crate) fn get(&self, start: u32, end: u32) -> Option<&[u8]> {
        match self {
            PayloadsRef::Run(p) => p.get(start, end),
            PayloadsRef::Shared(p) => p.get(start, end),
        }
    }
}

/// One chunk: the bytes from offset `base` on, and the chunk before it.
#[derive(Clone, Default)]
struct Chunk {
    base: u32,
    bytes: Vec<u8>,
    /// The length of `bytes` when the last payload began: what that
    /// payload took is what the next one is expected to need.
    mark: usize,
    /// The most bytes [`Payloads::tail`] asked this chunk to have room
    /// for: what a run like this one reserves not to grow at all.
    wanted: usize,
    prev: Option<Arc<Chunk>>,
}

impl Chunk {
    /// The offset after this chunk's last byte.
    fn end(&self) -> usize {
        self.base as usize + self.bytes.len()
    }

    /// The bytes from offset `start` to `end`, in this chunk or one before.
    fn get(&self, start: u32, end: u32) -> Option<&[u8]> {
        let mut chunk = self;
        // Nearly always this chunk, or the one before.
        while start < chunk.base {
            chunk = chunk.prev.as_deref()?;
        }
        chunk
            .bytes
            .get((start - chunk.base) as usize..end.checked_sub(chunk.base)? as usize)
    }
}

impl Drop for Chunk {
    // The chain is dropped one chunk at a time, not by recursion: a long
    // run with many fan-outs may have many chunks.
    fn drop(&mut self) {
        let mut prev = self.prev.take();
        while let Some(chunk) = prev {
            match Arc::try_unwrap(chunk) {
                Ok(mut chunk) => prev = chunk.prev.take(),
                Err(_) => break,
            }
        }
    }
}

impl SharedPayloads {
    /// The bytes from offset `start` to `end`, if written before the share
    /// was taken.
    pub(crate) fn get(&self, start: u32, end: u32) -> Option<&[u8]> {
        self.head.as_deref()?.get(start, end)
    }
}

impl Payloads {
    /// No bytes yet, `capacity` reserved.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Payloads {
            head: Chunk {
                base: 0,
                bytes: Vec::with_capacity(capacity),
                mark: 0,
                wanted: 0,
                prev: None,
            },
        }
    }

    /// The offset the next byte written takes: every byte written so far.
    pub(crate) fn len(&self) -> usize {
        self.head.end()
    }

    /// The room a run writing what this one wrote needs from its start
    /// so as never to grow: every byte written, and the room
    /// [`tail`](Self::tail) asked for after the last of them (it expects
    /// a payload the size of the one before, which may be larger than the
    /// last one was: a run's small output after its handoffs).
    pub(crate) fn wanted(&self) -> usize {
        self.len().max(self.head.base as usize + self.head.wanted)
    }

    /// The bytes from offset `start` to `end`, if written.
    pub(crate) fn get(&self, start: u32, end: u32) -> Option<&[u8]> {
        self.head.get(start, end)
    }

    /// The bytes written so far, for a holder that reads them while the run
    /// writes on: the chunk being written is frozen into a shared one (its
    /// bytes moved, not copied) and the run writes on into a new chunk
    /// after it; when nothing was written since the last share, that one
    /// is shared again.
    pub(crate) fn share(&mut self) -> SharedPayloads {
        if !self.head.bytes.is_empty() || self.head.prev.is_none() {
            // What the last payload took, expected of the next ones.
            let expected = self.head.bytes.len().saturating_sub(self.head.mark);
            let frozen = Chunk {
                base: self.head.base,
                bytes: std::mem::take(&mut self.head.bytes),
                mark: self.head.mark,
                wanted: self.head.wanted,
                prev: self.head.prev.take(),
            };
            self.head = Chunk {
                base: frozen.end() as u32,
                bytes: Vec::with_capacity(expected.max(CHUNK)),
                mark: 0,
                wanted: 0,
                prev: Some(Arc::new(frozen)),
            };
        }
        SharedPayloads {
            head: self.head.prev.clone(),
        }
    }

    /// The buffer the next bytes are appended to (its own length is not the
    /// offset: see [`len`](Self::len)). The run owns it alone (what others
    /// read was frozen by [`share`](Self::share)), so appending and
    /// truncating back to [`len`](Self::len) taken before are both safe.
    #[inline]
    pub(crate) fn tail(&mut self) -> &mut Vec<u8> {
        let chunk = &mut self.head;
        let bytes = &mut chunk.bytes;
        // The next payload is expected to take what the last one took: when
        // that no longer fits, the buffer grows by half its length first
        // (not doubled: a run's bytes keep at most about a third of their
        // buffer unused, and far less on average). A payload larger than
        // expected grows it as `Vec` does, doubling.
        // Plus what a writer may put past its end before cutting it off.
        let expected = bytes.len().saturating_sub(chunk.mark) + crate::encode::OVERWRITE;
        chunk.mark = bytes.len();
        chunk.wanted = chunk.wanted.max(bytes.len() + expected);
        if bytes.capacity() - bytes.len() < expected {
            bytes.reserve_exact((bytes.len() / 2).max(expected).max(GROWTH));
        }
        bytes
    }

    /// Appends `bytes`.
    pub(crate) fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.tail().extend_from_slice(bytes);
    }

    /// Drops the bytes from offset `len` on, when they are in the chunk
    /// being written (the bytes just appended, taken back on an error).
    pub(crate) fn truncate(&mut self, len: usize) {
        let base = self.head.base as usize;
        if len >= base {
            self.head.bytes.truncate(len - base);
        }
    }

    /// Gives back the chunk's unused reservation (for a transcript kept
    /// after its run stopped).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.head.bytes.shrink_to_fit();
    }
}

impl std::fmt::Debug for Payloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Payloads")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_by_a_holder_stay_put_while_the_run_writes_on() {
        let mut p = Payloads::with_capacity(4);
        p.extend_from_slice(b"abc");
        let held = p.share();
        p.extend_from_slice(b"defgh");
        assert_eq!(p.len(), 8);
        assert_eq!(held.get(0, 3), Some(&b"abc"[..]));
        assert_eq!(p.get(0, 3), Some(&b"abc"[..]));
        assert_eq!(p.get(3, 8), Some(&b"defgh"[..]));
        assert_eq!(held.get(3, 8), None);
        // Nothing written since: the same frozen chunk shared again.
        let mut q = Payloads::with_capacity(4);
        q.extend_from_slice(b"abc");
        let (first, second) = (q.share(), q.share());
        assert!(Arc::ptr_eq(
            first.head.as_ref().unwrap(),
            second.head.as_ref().unwrap()
        ));
        assert_eq!(q.head.base, 3);
        drop(held);
        // The run writes on in its own chunk, after the frozen one.
        p.extend_from_slice(b"ij");
        assert_eq!(p.get(3, 10), Some(&b"defghij"[..]));
        assert!(p.head.prev.is_some());
        assert_eq!(p.head.base, 3);
        // A share of nothing yet reads nothing.
        let mut empty = Payloads::with_capacity(0);
        assert_eq!(empty.share().get(0, 0), Some(&b""[..]));
        assert_eq!(empty.share().get(0, 1), None);
    }

    #[test]
    fn a_truncate_takes_back_only_the_bytes_just_written() {
        let mut p = Payloads::with_capacity(0);
        p.extend_from_slice(b"abc");
        let held = p.share();
        let start = p.len();
        p.extend_from_slice(b"xyz");
        p.truncate(start);
        assert_eq!(p.len(), 3);
        assert_eq!(held.get(0, 3), Some(&b"abc"[..]));
        // Below the chunk being written: left alone.
        p.truncate(1);
        assert_eq!(p.get(0, 3), Some(&b"abc"[..]));
    }

    #[test]
    fn the_bytes_grow_by_half_with_room_for_a_payload() {
        let mut p = Payloads::with_capacity(512);
        let mut grown = 0;
        let mut capacity = 512;
        for _ in 0..100 {
            p.extend_from_slice(&[7; 100]);
            let chunk = &p.head.bytes;
            if chunk.capacity() != capacity {
                grown += 1;
                capacity = chunk.capacity();
            }
            // Never more than half again what is written (or the least
            // growth) plus a payload.
            assert!(capacity <= chunk.len() + (chunk.len() / 2).max(GROWTH) + 100);
        }
        assert_eq!(p.len(), 10_000);
        // Amortised: a few growths (by half each time, or by 512 bytes
        // while that is more), not one per payload.
        assert_eq!(grown, 7);
        assert!(p.head.prev.is_none());
    }

    #[test]
    fn push_grown_grows_by_half() {
        let mut v: Vec<u32> = Vec::new();
        let mut capacities = Vec::new();
        for i in 0..40 {
            push_grown(&mut v, i);
            if capacities.last() != Some(&v.capacity()) {
                capacities.push(v.capacity());
            }
        }
        assert_eq!(v, (0..40).collect::<Vec<_>>());
        assert_eq!(capacities, [4, 8, 12, 18, 27, 40]);
    }

    #[test]
    fn a_long_chain_drops_without_recursing() {
        let mut p = Payloads::with_capacity(0);
        for _ in 0..200_000 {
            // Held while the run writes: a new chunk each time.
            let keep = p.share();
            p.extend_from_slice(b"x");
            drop(keep);
        }
        assert_eq!(p.get(199_999, 200_000), Some(&b"x"[..]));
        assert_eq!(p.get(0, 1), Some(&b"x"[..]));
        drop(p);
    }

    /// Every byte the chain of chunks reserves.
    fn reserved(p: &Payloads) -> usize {
        let mut reserved = p.head.bytes.capacity();
        let mut chunk = p.head.prev.as_deref();
        while let Some(c) = chunk {
            reserved += c.bytes.capacity();
            chunk = c.prev.as_deref();
        }
        reserved
    }

    #[test]
    fn a_share_a_payload_reserves_about_what_is_written() {
        for size in [300, 4096, 70_000] {
            let mut p = Payloads::with_capacity(0);
            let mut held = Vec::new();
            for _ in 0..50 {
                // A branch turn: a share, then one payload of its sibling's.
                held.push(p.share());
                p.extend_from_slice(&vec![1; size]);
            }
            assert_eq!(p.len(), 50 * size);
            // Each chunk about full: what was written, and one chunk's least.
            let reserved = reserved(&p);
            assert!(reserved <= 50 * size + CHUNK, "{size}: {reserved} reserved");
            drop(held);
        }
        // Two payloads between shares: the chunk grows as `tail` grows it.
        let mut p = Payloads::with_capacity(0);
        let mut held = Vec::new();
        for _ in 0..50 {
            held.push(p.share());
            p.extend_from_slice(&[1; 300]);
            p.extend_from_slice(&[2; 300]);
        }
        assert_eq!(p.get(300, 600), Some(&[2; 300][..]));
        assert!(reserved(&p) <= 2 * 30_000, "{} reserved", reserved(&p));
    }
}
