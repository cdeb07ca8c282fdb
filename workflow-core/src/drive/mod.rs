//! The drivers on top: the `Executor` that starts, resumes and replays runs
//! and applies a person's decisions, the step-wise `Session`, suspensions,
//! what a run ends with (`Completed`, `Aborted`) and its summary.

pub mod escalation;
pub mod executor;
pub mod outcome;
pub mod replay;
pub mod session;
pub mod summary;

pub use escalation::*;
pub use executor::*;
pub use outcome::*;
pub use replay::*;
pub use session::*;
pub use summary::*;
