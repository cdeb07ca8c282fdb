//! Attribute macros for typed, checked multi-agent workflows.
//!
//! Use them through `workflow_core` (`use workflow_core::prelude::*;`): the
//! generated code names `::workflow_core::__private` paths only. Each macro runs the
//! pipeline parse -> model -> check -> codegen and reports every error of
//! one expansion together.

mod check;
mod codegen;
mod ctxt;
mod expand;
mod graph;
mod model;
mod parse;
mod verdict;

use proc_macro::TokenStream;

/// Declares a workflow on an inline module of agents, handoffs and tools.
///
/// `#[workflow(entry = agent, output = Type, deps = Type, max_hops = N)]`;
/// see the book's DSL reference.
#[proc_macro_attribute]
pub fn workflow(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::workflow(attr.into(), item.into()).into()
}

/// A handoff payload: a struct with the four contract parts as marked
/// fields (`#[operation]`, `#[authority]`, `#[evidence]`, `#[uncertainty]`,
/// `#[stop]`). Derives serde (unknown fields denied) and schemars.
#[proc_macro_attribute]
pub fn handoff(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::handoff(attr.into(), item.into()).into()
}

/// `#[derive(Verdict)]`: marks one named field `#[verdict]` as what a
/// branch of a fan-out concluded; its join compares the branches' verdicts
/// and must carry a disagreement forward.
#[proc_macro_derive(Verdict, attributes(verdict))]
pub fn derive_verdict(item: TokenStream) -> TokenStream {
    verdict::derive(item.into()).into()
}

/// An agent of a `#[workflow]` module (only valid inside one).
#[proc_macro_attribute]
pub fn agent(_attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::outside("agent", item.into()).into()
}

/// A tool of a `#[workflow]` module (only valid inside one).
#[proc_macro_attribute]
pub fn tool(_attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::outside("tool", item.into()).into()
}

/// A pre-condition of an agent (only valid on an `#[agent]`).
#[proc_macro_attribute]
pub fn pre(_attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::outside("pre", item.into()).into()
}

/// A post-condition of an agent (only valid on an `#[agent]`).
#[proc_macro_attribute]
pub fn post(_attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::outside("post", item.into()).into()
}

/// The invariants pinned for a run (only valid inside a `#[workflow]` module).
#[proc_macro_attribute]
pub fn invariants(_attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::outside("invariants", item.into()).into()
}

#[cfg(test)]
mod expand_tests;
