//! Code generation: one file per generated artefact, each reading the
//! model (and the resolved graph) and the helpers below; none imports
//! another.

pub mod agent;
pub mod authority;
pub mod graph;
pub mod handoff;
pub mod invariants;
pub mod rejected;
pub mod spec;
pub mod tool;
pub mod verdicts;
pub mod workflow;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ext::IdentExt;

use crate::model::agent::Agent;
use crate::model::tool::Tool;
use crate::model::value::{Effect, Then};
use crate::model::workflow::Workflow;

/// A type's tokens without spaces, as the static graph names it.
pub fn type_text(ty: &syn::Type) -> String {
    quote!(#ty).to_string().replace(' ', "")
}

/// Whether an agent is named `name` (one of the generated names: reported).
pub fn agent_named(wf: &Workflow, name: &str) -> bool {
    wf.agents.iter().any(|a| a.name.unraw() == name)
}

/// The generated type `name` (`Spec`, `State`): under a hidden name when
/// an agent takes it (reported), since the agent's module needs the name.
pub fn generated(wf: &Workflow, name: &str) -> syn::Ident {
    if agent_named(wf, name) {
        format_ident!("__wf_{name}")
    } else {
        format_ident!("{name}")
    }
}

/// The module-level alias of agent `a`'s input type.
pub fn input_alias(a: &Agent) -> syn::Ident {
    format_ident!("__wf_input_{}", a.name.unraw())
}

/// The module-level alias of tool `t`'s input type.
pub fn tool_input_alias(t: &Tool) -> syn::Ident {
    format_ident!("__wf_tool_input_{}", t.name.unraw())
}

/// The module-level alias of tool `t`'s output type.
pub fn tool_output_alias(t: &Tool) -> syn::Ident {
    format_ident!("__wf_tool_output_{}", t.name.unraw())
}

/// The workflow's output type (`()` when missing, reported).
pub fn output_ty(wf: &Workflow) -> TokenStream {
    match &wf.args.output {
        Some(t) => quote!(#t),
        None => quote!(()),
    }
}

/// The future of an agent's body. A malformed agent (reported already)
/// gets a body that compiles, so no second error follows from the first.
pub fn body_call(a: &Agent) -> TokenStream {
    let name = &a.name;
    if !a.callable {
        return quote! {
            async move {
                let _ = (input, cx);
                ::workflow_core::__private::Result::Err(::workflow_core::__private::Reject::because(
                    "the agent's signature is invalid (reported at compile time)",
                ))
            }
        };
    }
    if a.is_async {
        quote!(#name(input, cx))
    } else {
        quote!(async move { #name(input, cx) })
    }
}

/// The declared effect of tool `t`.
pub fn tool_effect(t: &Tool) -> TokenStream {
    match t.args.effect.as_ref().map(|e| e.value) {
        Some(Effect::Write) => quote!(::workflow_core::__private::Effect::Write),
        Some(Effect::Destructive) => quote!(::workflow_core::__private::Effect::Destructive),
        // `None` is a compile error already (`check_tool_effects`).
        Some(Effect::Read) | None => quote!(::workflow_core::__private::Effect::Read),
    }
}

/// The declared fallback policy of tool `t`.
pub fn tool_fallback(t: &Tool) -> TokenStream {
    let retries = t.args.retries.as_ref().and_then(|n| n.get()).unwrap_or(0);
    let backoff = t
        .args
        .backoff_ms
        .as_ref()
        .and_then(|n| n.get())
        .unwrap_or(0);
    let then = match t.args.then.as_ref().map(|e| e.value) {
        Some(Then::Escalate) => quote!(::workflow_core::__private::Then::Escalate),
        Some(Then::Abort) | None => quote!(::workflow_core::__private::Then::Abort),
    };
    quote!(::workflow_core::__private::Fallback { retries: #retries, backoff_ms: #backoff, then: #then })
}

/// The source text of a condition, formatted as rustfmt would (on one
/// line), for messages and records.
pub fn expr_text(expr: &syn::Expr) -> String {
    // Built by hand, not re-parsed: an expression that starts with `match`
    // or a block would not parse back as a statement.
    let mut function: syn::ItemFn = syn::parse_quote!(
        fn condition() {}
    );
    function
        .block
        .stmts
        .push(syn::Stmt::Expr(expr.clone(), None));
    let file = syn::File {
        shebang: None,
        attrs: Vec::new(),
        items: vec![syn::Item::Fn(function)],
    };
    let formatted = prettyplease::unparse(&file);
    let mut lines: Vec<&str> = formatted.lines().map(str::trim).collect();
    // Drop `fn condition() {` and the closing `}`.
    if lines.len() >= 2 {
        lines.remove(0);
        lines.pop();
    }
    let mut text = String::new();
    for line in lines {
        let glued = line.starts_with(['.', ')', ']', '?']) || text.ends_with(['(', '[']);
        if !text.is_empty() && !glued {
            text.push(' ');
        }
        text.push_str(line);
    }
    text
}

/// The contract of the value `value` (a reference) if its type is a
/// handoff, `None` otherwise: an `Option<ContractView>` expression.
pub(crate) fn contract_probe(value: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote::quote! {{
        #[allow(unused_imports)]
        use ::workflow_core::__private::{ContractOfAnything as _, ContractOfHandoff as _};
        (&::workflow_core::__private::ContractProbe(#value)).contract_view()
    }}
}
