//! Code for one agent: its function as emitted, its module (`Agent`,
//! `Next`, `Context`), its ownership and grant impls, its `Agent` impl
//! (conditions, contract view, body) and the `Route` impl of its `Next`.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::check::parallel::EdgeKind;
use crate::check::workflow::Resolved;
use crate::graph::Target;
use crate::model::agent::Agent;
use crate::model::workflow::Workflow;

use super::{body_call, input_alias};

/// An agent's `async fn` as emitted: when its parameters are plain names,
/// written as a function that returns an `async move` block, so that the
/// turn's future holds each argument once (an `async fn` moves its
/// arguments again into its body's locals on the first poll: a copy of
/// the input each turn). Any other function stays as written, and so does
/// one with inner attributes (`#![allow(..)]` in the body), which have no
/// place in a block expression.
pub(super) fn agent_fn(item: &syn::ItemFn) -> TokenStream {
    let plain = item.sig.inputs.iter().all(|arg| match arg {
        syn::FnArg::Typed(t) => matches!(
            &*t.pat,
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none()
        ),
        syn::FnArg::Receiver(_) => false,
    });
    let inner = item
        .attrs
        .iter()
        .any(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
    let Some(asyncness) = item.sig.asyncness.filter(|_| plain && !inner) else {
        return item.to_token_stream();
    };
    let output = match &item.sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => ty.to_token_stream(),
    };
    let mut sig = item.sig.clone();
    sig.asyncness = None;
    // Spanned at the macro (edition 2024), not at the user's `async`: the
    // future captures the context's lifetime (`Context<'_>`) whatever the
    // edition of the user's crate (tested by `ui-tests/edition2021`).
    sig.output = syn::parse_quote_spanned!(proc_macro2::Span::mixed_site()=>
        -> impl ::workflow_core::__private::Future<Output = #output>
    );
    let (attrs, vis, stmts) = (&item.attrs, &item.vis, &item.block.stmts);
    quote_spanned!(asyncness.span=>
        #(#attrs)*
        #[allow(clippy::manual_async_fn)]
        #vis #sig {
            async move { #(#stmts)* }
        }
    )
}

/// Whether agent `agent` receives handoffs (a join receives its branches'
/// outcomes instead, in a generated type that is not a handoff).
fn has_incoming(wf: &Workflow, r: &Resolved, agent: usize) -> bool {
    if wf.agents[agent].args.join_key.is_some() {
        return false;
    }
    r.graph.edges.iter().zip(&r.kinds).any(|(e, k)| {
        e.to == Target::Agent(agent) && matches!(k, EdgeKind::Plain | EdgeKind::Start { .. })
    })
}

/// The bound of the map agent `index` starts, and its receiver's name:
/// checked as the agent's last post-condition.
pub(super) fn map_bound(r: &Resolved, index: usize) -> Option<(u32, usize)> {
    r.forks
        .iter()
        .find(|f| f.from == index)
        .and_then(|f| Some((f.map?, *f.branches.first()?)))
}

/// The module-level alias of what branch agent `a` hands to its join.
pub(super) fn branch_output_alias(a: &Agent) -> syn::Ident {
    format_ident!("__wf_branch_output_{}", a.name.unraw())
}

/// The generated types of a fan-out agent (`Parallel`: one input per
/// branch) and of a join agent (`Joined`: one outcome per branch), and the
/// aliases of the branches' outputs.
fn fork_types(wf: &Workflow, r: &Resolved, index: usize) -> (TokenStream, TokenStream) {
    let mut inner = TokenStream::new();
    let mut outer = TokenStream::new();
    for fork in &r.forks {
        if fork.from == index {
            let fields = fork.branches.iter().map(|&b| {
                let (field, ty) = (&wf.agents[b].name, input_alias(&wf.agents[b]));
                let doc = format!("The input of branch `{field}`.");
                quote!(#[doc = #doc] pub #field: super::#ty)
            });
            inner.extend(quote! {
                /// The inputs of the fan-out's branches, one per branch: each
                /// is handed to its branch's agent, all at once.
                pub struct Parallel {
                    #(#fields),*
                }
            });
        }
    }
    // A join's input: one outcome per branch it lists (generated even when
    // the list is wrong, reported, so that nothing else breaks).
    let join = &wf.agents[index].args.join;
    if wf.agents[index].args.join_key.is_some() {
        for j in join {
            let alias = format_ident!("__wf_branch_output_{}", j.name.unraw());
            // A mapped branch's `[T]`: each item's outcome is a `T`.
            let ty = crate::check::parallel::slice_elem(&j.ty).unwrap_or(&j.ty);
            outer.extend(quote! {
                #[doc(hidden)]
                #[allow(non_camel_case_types)]
                type #alias = #ty;
            });
        }
        let fields = join.iter().map(|j| {
            let field = &j.name;
            let alias = format_ident!("__wf_branch_output_{}", j.name.unraw());
            if crate::check::parallel::slice_elem(&j.ty).is_some() {
                let doc = format!(
                    "What each item's turn of `{field}` ended with, in the order of the list."
                );
                return quote!(#[doc = #doc] pub #field: ::workflow_core::__private::Vec<::workflow_core::__private::Branch<super::#alias>>);
            }
            let doc = format!("What branch `{field}` ended with.");
            quote!(#[doc = #doc] pub #field: ::workflow_core::__private::Branch<super::#alias>)
        });
        // Named for its agent: two joins' `Joined` types must not take
        // the same schema name (their files would collide).
        let schema_name = format!("{}.Joined", wf.agents[index].name.unraw());
        inner.extend(quote! {
            /// Every branch's outcome, one field per branch: its output,
            /// or why it has none (rejected, failed, timed out, cancelled).
            #[derive(
                ::workflow_core::__private::serde::Serialize,
                ::workflow_core::__private::serde::Deserialize,
                ::workflow_core::__private::schemars::JsonSchema
            )]
            #[serde(crate = "::workflow_core::__private::serde", deny_unknown_fields)]
            #[schemars(crate = "::workflow_core::__private::schemars", rename = #schema_name)]
            pub struct Joined {
                #(#fields),*
            }
        });
    }
    (inner, outer)
}

/// `pre`/`post` bodies: bind the user's names, test each condition.
fn conditions(
    spec: &syn::Ident,
    index: usize,
    conds: &[&crate::parse::ConditionArgs],
    list: &str,
    bind: TokenStream,
) -> TokenStream {
    let list = format_ident!("{list}");
    let tests = conds.iter().enumerate().map(|(i, c)| {
        let expr = &c.expr;
        quote_spanned! {expr.span()=>
            if !(#expr) {
                return ::workflow_core::__private::Result::Err(
                    &<#spec as ::workflow_core::__private::Workflow>::GRAPH.agents[#index].#list[#i],
                );
            }
        }
    });
    quote! {
        #bind
        #(#tests)*
        ::workflow_core::__private::Result::Ok(())
    }
}

/// The module's handoff that agent `a` takes, when its input names one.
fn input_handoff<'w>(wf: &'w Workflow, a: &Agent) -> Option<&'w crate::model::handoff::Handoff> {
    let syn::Type::Path(p) = &a.input_ty else {
        return None;
    };
    let ident = p.path.get_ident()?;
    wf.items.iter().find_map(|item| match item {
        crate::model::workflow::ModItem::Handoff { model: Ok(h), .. } if h.item.ident == *ident => {
            Some(h)
        }
        _ => None,
    })
}

/// `Agent::pinned`: each `#[pin(root_field)]` of the input's fields, as
/// `input.field == root.root_field` on the typed values. The comparison
/// carries the pin's span, so a misspelt root field or a type that does
/// not compare is rustc's error at the attribute.
fn pinned(wf: &Workflow, a: &Agent) -> Option<TokenStream> {
    let h = input_handoff(wf, a)?;
    let root = wf.invariants.as_ref()?;
    if h.pins.is_empty() {
        return None;
    }
    let input = &a.input_ty;
    let checks = h.pins.iter().map(|pin| {
        let (field, root_field) = (&pin.field, &pin.root);
        let name = format!("pin({}.{field} = {root_field})", h.item.ident);
        let field_text = format!("{}.{field}", h.item.ident);
        let root_text = root_field.to_string();
        // The root field is named once, so a misspelling is one error.
        let pinned = quote_spanned!(pin.root.span()=> let pinned = &root.#root_field;);
        let compare = quote_spanned!(pin.root.span()=> input.#field == *pinned);
        quote! {{
            #pinned
            if !(#compare) {
                return ::workflow_core::__private::Result::Err((
                    #name,
                    ::workflow_core::__private::pin_mismatch(#field_text, &input.#field, #root_text, pinned),
                ));
            }
        }}
    });
    Some(quote! {
        fn pinned(
            input: &#input,
            root: &#root,
        ) -> ::workflow_core::__private::Result<(), (&'static str, ::workflow_core::__private::String)> {
            #(#checks)*
            ::workflow_core::__private::Result::Ok(())
        }
    })
}

pub(super) fn agent(
    wf: &Workflow,
    r: &Resolved,
    index: usize,
    a: &Agent,
    extra: TokenStream,
) -> TokenStream {
    let name = &a.name;
    let input = &a.input_ty;
    let (spec, state) = (super::generated(wf, "Spec"), super::generated(wf, "State"));
    let index_u16 = index as u16;
    let variants = r
        .graph
        .edges
        .iter()
        .zip(&r.kinds)
        .filter(|(e, _)| e.from == index)
        .filter_map(|(e, kind)| {
            Some(match (kind, e.to) {
                (EdgeKind::Start { fork, branch: 0 }, Target::Agent(b))
                    if r.forks[*fork].map.is_some() =>
                {
                    let ty = input_alias(&wf.agents[b]);
                    let doc = format!(
                        "Hand each item to its own turn of `{}`, all at once (at most {} items).",
                        wf.agents[b].name,
                        r.forks[*fork].map.unwrap_or(1)
                    );
                    quote!(#[doc = #doc] Map(::workflow_core::__private::Vec<super::#ty>))
                }
                (EdgeKind::Start { branch: 0, .. }, _) => quote!(
                    #[doc = "Hand off to every branch of the fan-out at once."]
                    Parallel(Parallel)
                ),
                (EdgeKind::Start { .. } | EdgeKind::Join { .. }, _) => return None,
                (EdgeKind::Outcome { fork, branch }, Target::Agent(b)) => {
                    let v = wf.agents[b].variant.clone();
                    // Named for the branch's first agent, the join's field.
                    let first = r.forks[*fork]
                        .branches
                        .get(*branch)
                        .map_or(a, |&f| &wf.agents[f]);
                    let ty = branch_output_alias(first);
                    let doc = format!(
                        "Hand this branch's outcome to the join `{}`.",
                        wf.agents[b].name
                    );
                    quote!(#[doc = #doc] #v(super::#ty))
                }
                (_, Target::Agent(b)) => {
                    let v = wf.agents[b].variant.clone();
                    let ty = input_alias(&wf.agents[b]);
                    let doc = format!("Hand off to `{}`.", wf.agents[b].name);
                    quote!(#[doc = #doc] #v(super::#ty))
                }
                (_, Target::End) => quote!(
                    #[doc = "End the run with the workflow output."]
                    End(super::__wf_output)
                ),
            })
        });
    // Each handoff site is one call: `hand_off` records the transfer with
    // the receiver's view of its contract, `end` with the output's.
    let routes = r
        .graph
        .edges
        .iter()
        .enumerate()
        .zip(&r.kinds)
        .filter(|((_, e), _)| e.from == index)
        .filter_map(|((i, e), kind)| {
            let edge = (i + 1) as u16; // edge 0 is START -> entry
            Some(match (kind, e.to) {
                (EdgeKind::Start { fork, branch: 0 }, _) if r.forks[*fork].map.is_some() => {
                    let v = quote::format_ident!("__Fork{}", fork);
                    quote! {
                        #name::Next::Map(items) => ::workflow_core::__private::Result::Ok(
                            ::workflow_core::__private::Transition::To(#state::#v(items)),
                        ),
                    }
                }
                (EdgeKind::Start { fork, branch: 0 }, _) => {
                    let v = quote::format_ident!("__Fork{}", fork);
                    quote! {
                        #name::Next::Parallel(parallel) => ::workflow_core::__private::Result::Ok(
                            ::workflow_core::__private::Transition::To(#state::#v(parallel)),
                        ),
                    }
                }
                (EdgeKind::Start { .. } | EdgeKind::Join { .. }, _) => return None,
                (EdgeKind::Outcome { .. }, Target::Agent(b)) => {
                    let v = &wf.agents[b].variant;
                    quote! {
                        #name::Next::#v(_) => ::workflow_core::__private::Result::Err(
                            ::workflow_core::__private::RunError::Protocol(
                                ::workflow_core::__private::String::from("a branch's outcome is settled by its fan-out, not routed"),
                            ),
                        ),
                    }
                }
                (_, Target::Agent(b)) => {
                    let (v, receiver) = (&wf.agents[b].variant, &wf.agents[b].name);
                    quote! {
                        #name::Next::#v(payload) => ::workflow_core::__private::hand_off::<#spec, #receiver::Agent>(
                            run, #edge, payload, #state::#v,
                        ),
                    }
                }
                (_, Target::End) => quote! {
                    #name::Next::End(output) => ::workflow_core::__private::end(
                        run, #edge, output, __wf_output_contract,
                    ),
                },
            })
        });
    // Deduplicated: a name listed twice is reported, and must not also
    // give a conflicting impl.
    let mut seen = std::collections::HashSet::new();
    let owns: Vec<_> = a
        .args
        .owns
        .iter()
        .filter(|o| seen.insert(o.unraw().to_string()))
        .map(|o| quote!(impl ::workflow_core::__private::Owns<authority::#o> for #name::Agent {}))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let grants: Vec<_> = a
        .args
        .tools
        .iter()
        .filter(|t| wf.tools.iter().any(|d| d.name.unraw() == t.unraw()))
        .filter(|t| seen.insert(t.unraw().to_string()))
        .map(|t| quote!(impl ::workflow_core::__private::Granted<tools::#t> for #name::Agent {}))
        .collect();
    let timeout = a.args.timeout_ms.as_ref().and_then(|t| t.get()).map(|ms| {
        quote! {
            const TIMEOUT: ::workflow_core::__private::Option<::workflow_core::__private::Duration> =
                ::workflow_core::__private::Option::Some(::workflow_core::__private::Duration::from_millis(#ms));
        }
    });
    let max_steps = a
        .args
        .max_steps
        .as_ref()
        .and_then(|n| n.get())
        .and_then(|n| u32::try_from(n).ok())
        .map(|n| {
            quote! {
                const MAX_STEPS: ::workflow_core::__private::Option<u32> =
                    ::workflow_core::__private::Option::Some(#n);
            }
        });
    // An agent that receives handoffs must take one (a compile error
    // otherwise); the entry's input is checked when it happens to be one.
    let view = if has_incoming(wf, r, index) {
        let view = quote_spanned!(input.span()=> <#input as ::workflow_core::__private::Handoff>::contract(input));
        quote!(::workflow_core::__private::Option::Some(#view))
    } else {
        quote! {{
            #[allow(unused_imports)]
            use ::workflow_core::__private::{ContractOfAnything as _, ContractOfHandoff as _};
            (&::workflow_core::__private::ContractProbe(input)).contract_view()
        }}
    };
    let contract = quote! {
        fn contract(input: &#input) -> ::workflow_core::__private::Option<::workflow_core::__private::ContractView<'_>> {
            #view
        }
    };
    let pinned = pinned(wf, a);
    let run_body = body_call(a);
    let (input_pat, cx_pat) = (&a.input_pat, &a.cx_pat);
    let (plain_pre, plain_post) = (a.plain_pre(), a.plain_post());
    let pre = (!plain_pre.is_empty()).then(|| {
        let body = conditions(
            &spec,
            index,
            &plain_pre,
            "pre",
            quote!(let #input_pat = input; let #cx_pat = cx;),
        );
        quote! {
            #[allow(unused_variables, unused_mut, clippy::nonminimal_bool)]
            fn pre(
                input: &#input,
                cx: &#name::Context<'_>,
            ) -> ::workflow_core::__private::Result<(), &'static ::workflow_core::__private::Condition> {
                #body
            }
        }
    });
    // A map's bound, checked as the fan-out agent's last post-condition:
    // more items than the bound fail its turn, recorded, never cut.
    let map_check = map_bound(r, index).map(|(max, _)| {
        let k = plain_post.len();
        let max = max as usize;
        // No `let` chain: the expansion is read in the user's edition.
        quote! {
            if ::core::matches!(out, #name::Next::Map(items) if items.len() > #max) {
                return ::workflow_core::__private::Result::Err(
                    &<#spec as ::workflow_core::__private::Workflow>::GRAPH.agents[#index].post[#k],
                );
            }
        }
    });
    // Without post-conditions the runtime builds no context for them.
    let no_post = (plain_post.is_empty() && map_check.is_none()).then(|| {
        quote!(
            const HAS_POST: bool = false;
        )
    });
    // Post-conditions that never name the context are checked without
    // one (`post_without_context`): the runtime then builds none for them,
    // and the trait's default `post` calls them for any other caller.
    let post = (!plain_post.is_empty() || map_check.is_some()).then(|| {
        if a.post_reads_context() {
            let body = conditions(
                &spec,
                index,
                &plain_post,
                "post",
                quote!(#map_check let #cx_pat = cx;),
            );
            return quote! {
                #[allow(unused_variables, unused_mut, clippy::nonminimal_bool)]
                fn post(
                    out: &#name::Next,
                    cx: &#name::Context<'_>,
                ) -> ::workflow_core::__private::Result<(), &'static ::workflow_core::__private::Condition> {
                    #body
                }
            };
        }
        let body = conditions(&spec, index, &plain_post, "post", quote!(#map_check));
        quote! {
            const POST_READS_CONTEXT: bool = false;
            #[allow(unused_variables, unused_mut, clippy::nonminimal_bool)]
            fn post_without_context(
                out: &#name::Next,
            ) -> ::workflow_core::__private::Result<(), &'static ::workflow_core::__private::Condition> {
                #body
            }
        }
    });
    let (fork_inner, fork_outer) = fork_types(wf, r, index);
    let verdicts = super::verdicts::join_verdicts(a);
    let mod_doc =
        format!("Generated for agent `{name}`: its marker, its `Next` and its `Context`.");
    let next_doc = format!(
        "Where `{name}` may hand off: each variant carries exactly the receiver's input type."
    );
    quote! {
        #[doc = #mod_doc]
        pub mod #name {
            /// The agent's marker type.
            #[derive(Debug, Clone, Copy, Default)]
            pub struct Agent;
            #[doc = #next_doc]
            pub enum Next {
                #(#variants),*
            }
            /// What the agent sees during its turn.
            pub type Context<'x> = ::workflow_core::__private::Context<'x, super::#spec, Agent>;
            #extra
            #fork_inner
        }

        #fork_outer

        #(#owns)*
        #(#grants)*

        impl ::workflow_core::__private::Agent<#spec> for #name::Agent {
            const INDEX: u16 = #index_u16;
            #timeout
            #max_steps
            type Input = #input;
            type Next = #name::Next;
            const WRITE_INPUT: ::workflow_core::__private::Option<
                ::workflow_core::__private::PayloadWriter<#input>,
            > = ::workflow_core::__private::Option::Some({
                use ::workflow_core::__private::{ViaDirect as _, ViaSerde as _};
                |__wf_out, __wf_input| {
                    (&::workflow_core::__private::Direct(__wf_input)).write_part(__wf_out, 0).is_ok()
                }
            });
            #contract
            #pinned
            #pre
            #no_post
            #post
            #verdicts
            fn run(
                input: #input,
                cx: #name::Context<'_>,
            ) -> impl ::workflow_core::__private::Future<
                Output = ::workflow_core::__private::Result<#name::Next, ::workflow_core::__private::Reject>,
            > + Send {
                #run_body
            }
        }

        impl ::workflow_core::__private::Route<#spec> for #name::Next {
            // Inlined into the turn that routes: a call of its own took the
            // next state through its result, a copy of the payload more
            // (book, performance).
            #[inline]
            fn route(
                self,
                run: &mut ::workflow_core::__private::Runtime<'_, #spec>,
            ) -> ::workflow_core::__private::Result<::workflow_core::__private::Transition<#spec>, ::workflow_core::__private::RunError> {
                match self {
                    #(#routes)*
                }
            }
        }
    }
}
