//! The run layer, the only place with mutable run state: the `Runtime` that
//! checks each receipt and records each transfer, what an agent sees during
//! its turn (`Context`), its tool calls and model generations, and the
//! run's `Transcript`.

mod cite;
mod context;
mod earlier;
mod fork;
mod fork_nested;
mod fork_resume;
mod generate;
pub(crate) mod lease_book;
mod lease_receipt;
mod limited;
mod payloads;
pub(crate) mod receipt;
mod runtime;
mod tool_call;
mod tool_loop;
mod toolset;
mod transcript;
mod verdicts;
pub(crate) mod witness;

pub use context::*;
pub use earlier::*;
pub use fork::*;
pub(crate) use fork_resume::ForkResume;
pub use generate::*;
pub(crate) use lease_book::{LeaseBook, outlives_grantor, unix_now_ms};
pub use limited::Limited;
pub(crate) use payloads::{Payloads, PayloadsRef, SharedPayloads};
pub use runtime::*;
pub use tool_call::*;
pub use tool_loop::*;
pub use toolset::*;
pub(crate) use transcript::RunSizes;
pub use transcript::*;
