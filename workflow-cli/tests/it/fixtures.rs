//! What more than one test module uses: the examples' temporary folders
//! and the core tests' thread-local subscriber (one copy each, included
//! from those crates' `tests/it/fixtures/`).

#[path = "../../../examples/tests/it/fixtures/scratch.rs"]
mod scratch;
#[path = "../../../workflow-core/tests/it/fixtures/subscriber.rs"]
mod subscriber;

pub use scratch::{Scratch, scratch};
pub use subscriber::with_subscriber;
