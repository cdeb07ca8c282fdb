//! Code for a `#[workflow]` module: the module itself, the aliases of the
//! user's types, the authorities and tools, and the compile-time ownership
//! assertions; each agent's code is in `agent.rs`, the `Spec` in `spec.rs`.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;

use crate::check::parallel::EdgeKind;
use crate::check::workflow::Resolved;
use crate::graph::Target;
use crate::model::handoff::Handoff;
use crate::model::workflow::{ModItem, Workflow};

use super::{input_alias, output_ty, tool_input_alias, tool_output_alias};

/// The user's items as they are emitted: markers consumed, handoffs
/// expanded, tools renamed and sealed, items that clash with a generated name (reported)
/// left out.
pub fn items(wf: &Workflow) -> Vec<TokenStream> {
    wf.items
        .iter()
        .filter_map(|item| match item {
            ModItem::Handoff { model, .. } => Some(handoff(model)),
            ModItem::Invariants { item, .. } => {
                let derives = super::handoff::derives(item, false);
                Some(quote!(#derives #item))
            }
            ModItem::Tool { tool: None, .. } => None,
            ModItem::Tool {
                item,
                tool: Some(tool),
                ..
            } => Some(super::tool::sealed(item, &wf.tools[*tool])),
            ModItem::Agent {
                item,
                agent: Some(_),
                ..
            } => Some(super::agent::agent_fn(item)),
            ModItem::Agent { item, .. } | ModItem::StrayConditions { item, .. } => {
                Some(item.to_token_stream())
            }
            ModItem::Other { tokens, declares } => match declares {
                Some(ident) if wf.clash(ident).is_some() => None,
                _ => Some(tokens.clone()),
            },
        })
        .collect()
}

/// A `#[handoff]` struct as emitted. A rejected one (generic, or without
/// named fields; reported) still gets the impls of a handoff, so that its
/// uses elsewhere report nothing more.
pub fn handoff(model: &Result<Handoff, Box<syn::ItemStruct>>) -> TokenStream {
    match model {
        Ok(h) if !h.item.generics.params.is_empty() => {
            let impls = super::rejected::handoff_impl(&h.item.ident, &h.item.generics);
            let item = super::handoff::expand(h);
            quote!(#item #impls)
        }
        Ok(h) => super::handoff::expand(h),
        Err(cleaned) => {
            let impls = super::rejected::payload_impls(&cleaned.ident, &cleaned.generics);
            quote!(#cleaned #impls)
        }
    }
}

/// The whole module, user items first, generated items after.
pub fn expand(wf: &Workflow, r: &Resolved) -> TokenStream {
    let Workflow {
        vis, name, attrs, ..
    } = wf;
    let items = items(wf);
    let (authority_items, tool_items) = (super::authority::authorities(wf), super::tool::tools(wf));
    // An agent named like a generated module (reported) gets that module's
    // items in its own module, so nothing else breaks.
    let named = |n: &str| super::agent_named(wf, n);
    let authority = (!named("authority")).then(|| {
        quote! {
            /// The authorities of this workflow, one type each.
            pub mod authority {
                #authority_items
            }
        }
    });
    let tools = (!named("tools")).then(|| {
        quote! {
            /// The tools of this workflow, one type each.
            pub mod tools {
                #tool_items
            }
        }
    });
    let agents = wf.agents.iter().enumerate().map(|(i, a)| {
        let extra = match a.name.unraw().to_string().as_str() {
            "authority" => authority_items.clone(),
            "tools" => tool_items.clone(),
            _ => TokenStream::new(),
        };
        super::agent::agent(wf, r, i, a, extra)
    });
    let spec = super::spec::spec(wf, r);
    let aliases = aliases(wf);
    let assertions = ownership_assertions(wf, r);
    let max_hops = proc_macro2::Literal::u32_unsuffixed(r.max_hops);
    let max_doc = format!(
        "Upper bound on agent turns in any run of `{name}`, computed from the loop bounds."
    );
    // An agent named like one of these (reported) keeps its name; the
    // constant is left out, so nothing else breaks.
    let max_hops_const = (!named("MAX_HOPS")).then(|| {
        quote! {
            #[doc = #max_doc]
            pub const MAX_HOPS: u32 = #max_hops;
        }
    });
    let spec_ty = super::generated(wf, "Spec");
    let graph_const = (!named("GRAPH")).then(|| {
        quote! {
            /// The workflow's static graph: its agents, edges, tools and
            /// bounds (what the manifest publishes).
            pub const GRAPH: &'static ::workflow_core::__private::Graph =
                <#spec_ty as ::workflow_core::__private::Workflow>::GRAPH;
        }
    });
    let (inner, outer): (Vec<_>, Vec<_>) = attrs
        .iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
    quote! {
        #(#outer)*
        #vis mod #name {
            #(#inner)*
            #(#items)*

            #max_hops_const
            #graph_const

            #aliases
            #authority
            #tools
            #(#agents)*
            #spec
            #assertions
        }
    }
}

/// Module-level aliases for the user's types, so that the nested generated
/// modules name them as the user wrote them, resolved where they were
/// written (`super::Task` in the user's code stays right).
fn aliases(wf: &Workflow) -> TokenStream {
    let output = output_ty(wf);
    let agents = wf.agents.iter().map(|a| {
        let (alias, ty) = (input_alias(a), &a.input_ty);
        quote!(#[doc(hidden)] #[allow(non_camel_case_types)] type #alias = #ty;)
    });
    let tools = wf.tools.iter().map(|t| {
        let (i, o) = (tool_input_alias(t), tool_output_alias(t));
        let (it, ot) = (&t.input_ty, &t.output_ty);
        quote! {
            #[doc(hidden)] #[allow(non_camel_case_types)] type #i = #it;
            #[doc(hidden)] #[allow(non_camel_case_types)] type #o = #ot;
        }
    });
    let probe = super::contract_probe(quote!(output));
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        type __wf_output = #output;
        /// The contract of the workflow's output, if it is a handoff (for
        /// the transfers to `END`).
        #[doc(hidden)]
        #[allow(dead_code)]
        fn __wf_output_contract(
            output: &__wf_output,
        ) -> ::workflow_core::__private::Option<::workflow_core::__private::ContractView<'_>> {
            #probe
        }
        #(#agents)*
        #(#tools)*
    }
}

/// Compile-time assertions: the receiver of each edge owns the authority its
/// payload delegates; the error lands on the receiver's name in `to = [...]`.
/// The edge from the caller into the entry is one of them (`entry_owns`).
///
/// All in one `const` item (one body to check, not one per edge), and an
/// assertion whose error would land on the handoff's own `#[authority]`
/// type is written once per receiver: the other edges into that receiver
/// would repeat it word for word, at the same place.
pub fn ownership_assertions(wf: &Workflow, r: &Resolved) -> TokenStream {
    let entry = entry_owns(wf, r);
    let mut at_type = std::collections::HashSet::new();
    let asserts: Vec<TokenStream> = r
        .graph
        .edges
        .iter()
        .zip(&r.edge_tokens)
        .zip(&r.kinds)
        .filter_map(|((e, token), kind)| {
            // A branch's outcome and a join's transfer carry no handoff.
            if matches!(kind, EdgeKind::Outcome { .. } | EdgeKind::Join { .. }) {
                return None;
            }
            let Target::Agent(b) = e.to else { return None };
            // A join's input is not a handoff (a wrong join is reported).
            if wf.agents[b].args.join_key.is_some() {
                return None;
            }
            let receiver = &wf.agents[b].name;
            let payload = &wf.agents[b].input_ty;
            // The authority is projected at the span of the handoff's
            // `#[authority]` type when the handoff is the module's own: a
            // type that is not a scope is then reported once, on the field
            // (the compiler merges the identical error), not again at each
            // edge that carries it.
            let type_span = authority_type_span(wf, payload);
            if type_span.is_some() && !at_type.insert(b) {
                return None;
            }
            let at = type_span.unwrap_or_else(|| token.span());
            let authority = quote_spanned! {at=>
                <#payload as ::workflow_core::__private::Handoff>::Authority
            };
            Some(quote_spanned! {token.span()=>
                ::workflow_core::__private::assert_owns::<
                    #receiver::Agent,
                    #authority,
                >();
            })
        })
        .collect();
    if asserts.is_empty() {
        return entry;
    }
    quote! {
        #entry
        const _: () = {
            #(#asserts)*
        };
    }
}

/// The span of the `#[authority]` part's type of `payload` when `payload`
/// names a `#[handoff]` struct of this module (by its bare name).
fn authority_type_span(wf: &Workflow, payload: &syn::Type) -> Option<proc_macro2::Span> {
    let syn::Type::Path(path) = payload else {
        return None;
    };
    let name = path.path.get_ident()?;
    wf.items.iter().find_map(|item| match item {
        ModItem::Handoff { model: Ok(h), .. } if h.item.ident == *name => {
            match h.contract_field() {
                Some(c) => Some(syn::spanned::Spanned::span(&c.ty)),
                None => h
                    .counted_parts()
                    .find(|p| p.part == 1)
                    .map(|p| syn::spanned::Spanned::span(&p.ty)),
            }
        }
        _ => None,
    })
}

/// The edge from the caller into the entry: when the workflow's input is a
/// handoff, the entry must own the authority it delegates (an input that
/// is not a handoff delegates nothing). Whether the input is a handoff is
/// only known to the compiler, hence autoref specialisation: the probe
/// finds the handoff's authority, or `UnknownAuthority` (owned by every
/// agent) for any other type. The error lands on `entry = ..`'s agent.
/// An input that is one of the module's own handoffs needs no probe.
fn entry_owns(wf: &Workflow, r: &Resolved) -> TokenStream {
    let agent = &wf.agents[r.graph.entry];
    let name = &agent.name;
    let input = input_alias(agent);
    let span = wf.args.entry.as_ref().map_or(name.span(), |e| e.span());
    // The module's own handoff: asserted directly, like any other edge (its
    // authority projected at the field's type, so a type that is not a
    // scope is reported once).
    if let Some(at) = authority_type_span(wf, &agent.input_ty) {
        let payload = &agent.input_ty;
        let mut name = name.clone();
        name.set_span(span);
        let authority = quote_spanned! {at=>
            <#payload as ::workflow_core::__private::Handoff>::Authority
        };
        return quote_spanned! {span=>
            const _: () = ::workflow_core::__private::assert_owns::<#name::Agent, #authority>();
        };
    }
    let check = quote_spanned! {span=>
        fn __check(probe: __Probe<#input>) {
            __entry_owns((&probe).authority());
        }
    };
    quote! {
        #[allow(dead_code, non_camel_case_types)]
        const _: () = {
            struct __Probe<T>(fn() -> T);
            trait __AuthorityOfHandoff {
                type Authority;
                fn authority(&self) -> ::workflow_core::__private::Option<Self::Authority>;
            }
            impl<T: ::workflow_core::__private::Handoff> __AuthorityOfHandoff for __Probe<T> {
                type Authority = <T as ::workflow_core::__private::Handoff>::Authority;
                fn authority(&self) -> ::workflow_core::__private::Option<Self::Authority> {
                    ::workflow_core::__private::Option::None
                }
            }
            trait __AuthorityOfAnything {
                fn authority(&self) -> ::workflow_core::__private::Option<::workflow_core::__private::UnknownAuthority>;
            }
            impl<T> __AuthorityOfAnything for &__Probe<T> {
                fn authority(&self) -> ::workflow_core::__private::Option<::workflow_core::__private::UnknownAuthority> {
                    ::workflow_core::__private::Option::None
                }
            }
            fn __entry_owns<Au: ::workflow_core::__private::Authority>(
                _: ::workflow_core::__private::Option<Au>,
            ) where
                #name::Agent: ::workflow_core::__private::Owns<Au>,
            {
            }
            #check
        };
    }
}
