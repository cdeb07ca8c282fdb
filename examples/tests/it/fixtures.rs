//! What more than one test module uses.

mod scratch;

pub use scratch::{Scratch, scratch};

/// A small deterministic generator for the kill times of the crash tests
/// (no extra crate).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number, in `0..2^31`.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}
