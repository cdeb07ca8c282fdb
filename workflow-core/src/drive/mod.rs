//! The drivers on top: the `Executor` that starts, resumes and replays runs
//! and applies a person's decisions, the step-wise `Session`, suspensions,
//! what a run ends with (`Completed`, `Aborted`) and its summary.

pub(crate) mod canary;
mod escalation;
mod executor;
mod leased;
mod outcome;
mod replay;
mod session;
mod stream;
mod summary;

pub use escalation::*;
pub use executor::*;
pub use outcome::*;
pub use replay::*;
pub use session::*;
pub use stream::*;
pub use summary::*;
