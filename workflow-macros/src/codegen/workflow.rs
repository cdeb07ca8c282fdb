//! Code for a `#[workflow]` module: the module itself, the aliases of the
//! user's types, the authorities and tools, and the compile-time ownership
//! assertions; each agent's code is in `agent.rs`, the `Spec` in `spec.rs`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;

use crate::check::workflow::Resolved;
use crate::graph::Target;
use crate::model::workflow::{Agent, Workflow};

pub(super) fn type_text(ty: &syn::Type) -> String {
    quote!(#ty).to_string().replace(' ', "")
}

/// The whole module, user items first, generated items after.
pub fn expand(wf: &Workflow, r: &Resolved) -> TokenStream {
    let Workflow {
        vis,
        name,
        attrs,
        items,
        ..
    } = wf;
    let (authority_items, tool_items) = (authorities(wf), tools(wf));
    // An agent named like a generated module (reported) gets that module's
    // items in its own module, so nothing else breaks.
    let named = |n: &str| wf.agents.iter().any(|a| a.name.unraw() == n);
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
    let (inner, outer): (Vec<_>, Vec<_>) = attrs
        .iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
    quote! {
        #(#outer)*
        #vis mod #name {
            #(#inner)*
            #(#items)*

            #[doc = #max_doc]
            pub const MAX_HOPS: u32 = #max_hops;

            #aliases
            #authority
            #tools
            #(#agents)*
            #spec
            #assertions
        }
    }
}

pub(super) fn input_alias(a: &Agent) -> syn::Ident {
    format_ident!("__wf_input_{}", a.name.unraw())
}

fn tool_input_alias(t: &crate::model::workflow::Tool) -> syn::Ident {
    format_ident!("__wf_tool_input_{}", t.name.unraw())
}

fn tool_output_alias(t: &crate::model::workflow::Tool) -> syn::Ident {
    format_ident!("__wf_tool_output_{}", t.name.unraw())
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
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        type __wf_output = #output;
        #(#agents)*
        #(#tools)*
    }
}

fn authorities(wf: &Workflow) -> TokenStream {
    let mut seen = std::collections::HashSet::new();
    let owned = wf.agents.iter().flat_map(|a| &a.args.owns);
    let markers = owned
        .filter(|o| seen.insert(o.unraw().to_string()))
        .map(|o| {
            let text = o.unraw().to_string();
            let doc = format!("The authority `{text}`.");
            quote! {
                #[doc = #doc]
                #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
                pub struct #o;
                impl ::workflow_core::Authority for #o {
                    const NAME: &'static str = #text;
                }
            }
        });
    quote!(#(#markers)*)
}

fn tools(wf: &Workflow) -> TokenStream {
    let tools = wf.tools.iter().map(|t| {
        let name = &t.name;
        let text = name.unraw().to_string();
        let doc = format!("The tool `{text}`: pass it to `cx.call`.");
        let hidden = &t.hidden;
        let (input_alias, output_alias) = (tool_input_alias(t), tool_output_alias(t));
        let needs = match &t.needs {
            Some(n) => {
                let n = n.unraw().to_string();
                quote!(::workflow_core::__private::Option::Some(#n))
            }
            None => quote!(::workflow_core::__private::Option::None),
        };
        // A missing `FailFast` is reported on the output type the user wrote.
        let output_span = syn::spanned::Spanned::span(&t.output_ty);
        let output_decl = quote::quote_spanned!(output_span=> type Output = super::#output_alias;);
        let effect = super::spec::tool_effect(t);
        let fallback = super::spec::tool_fallback(t);
        let body = if !t.callable {
            quote! {
                async move {
                    let _ = (input, deps);
                    ::workflow_core::__private::Result::Err(::workflow_core::ToolError::new(
                        #text,
                        "the tool's signature is invalid (reported at compile time)",
                    ))
                }
            }
        } else if t.is_async {
            quote!(super::#hidden(input, deps))
        } else {
            quote!(async move { super::#hidden(input, deps) })
        };
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, Default)]
            #[allow(non_camel_case_types)]
            pub struct #name;
            impl ::workflow_core::Tool<super::Spec> for #name {
                const NAME: &'static str = #text;
                const NEEDS: ::workflow_core::__private::Option<&'static str> = #needs;
                const EFFECT: ::workflow_core::Effect = #effect;
                const FALLBACK: ::workflow_core::Fallback = #fallback;
                type Input = super::#input_alias;
                #output_decl
                fn call(
                    self,
                    input: super::#input_alias,
                    deps: &<super::Spec as ::workflow_core::Workflow>::Deps,
                ) -> impl ::workflow_core::__private::Future<
                    Output = ::workflow_core::__private::Result<super::#output_alias, ::workflow_core::ToolError>,
                > + Send {
                    #body
                }
            }
        }
    });
    quote!(#(#tools)*)
}

/// The future of an agent's body. A malformed agent (reported already)
/// gets a body that compiles, so no second error follows from the first.
pub(super) fn body_call(a: &Agent) -> TokenStream {
    let name = &a.name;
    if !a.callable {
        return quote! {
            async move {
                let _ = (input, cx);
                ::workflow_core::__private::Result::Err(::workflow_core::Reject::because(
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

pub(super) fn output_ty(wf: &Workflow) -> TokenStream {
    match &wf.args.output {
        Some(t) => quote!(#t),
        None => quote!(()),
    }
}

/// Compile-time assertion: the receiver of each edge owns the authority its
/// payload delegates; the error lands on the receiver's name in `to = [...]`.
pub fn ownership_assertions(wf: &Workflow, r: &Resolved) -> TokenStream {
    let asserts = r
        .graph
        .edges
        .iter()
        .zip(&r.edge_tokens)
        .filter_map(|(e, token)| {
            let Target::Agent(b) = e.to else { return None };
            let receiver = &wf.agents[b].name;
            let payload = &wf.agents[b].input_ty;
            Some(quote_spanned! {token.span()=>
                const _: () = ::workflow_core::__private::assert_owns::<
                    #receiver::Agent,
                    <#payload as ::workflow_core::Handoff>::Authority,
                >();
            })
        });
    quote!(#(#asserts)*)
}
