//! Code for the workflow itself: the `Spec` implementing
//! `workflow_core::Workflow` (start, turn, restore, schemas), the `State`
//! and the static graph the executor and the manifest read.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;

use crate::check::workflow::Resolved;
use crate::model::workflow::Workflow;

use super::{body_call, output_ty};

pub(super) fn spec(wf: &Workflow, r: &Resolved) -> TokenStream {
    let wf_name = wf.name.unraw().to_string();
    let (spec, state) = (super::generated(wf, "Spec"), super::generated(wf, "State"));
    // Left out when an agent takes the name (reported).
    let executor = (!super::agent_named(wf, "Workflow")).then(|| {
        quote! {
            /// The executor of this workflow: `Workflow::new(root, deps).run(input)`.
            pub type Workflow = ::workflow_core::__private::Executor<#spec>;
        }
    });
    let entry = &wf.agents[r.graph.entry];
    let entry_v = entry.variant.clone();
    let input = &entry.input_ty;
    let output = output_ty(wf);
    let root = match &wf.invariants {
        Some(i) => quote!(#i),
        None => quote!(()),
    };
    let deps = match &wf.args.deps {
        Some(d) => quote!(#d),
        None => quote!(()),
    };
    let states = wf.agents.iter().map(|a| {
        let v = a.variant.clone();
        let ty = &a.input_ty;
        let doc = format!("`{}` runs next.", a.name);
        quote!(#[doc = #doc] #v(#ty))
    });
    let turns = wf.agents.iter().map(|a| {
        let (v, n) = (a.variant.clone(), &a.name);
        let body_future = body_call(a);
        quote! {
            #state::#v(input) => {
                let cx = run.receive::<#n::Agent>(&input)?;
                // The body's future is built where it is awaited (not moved
                // there), and the timer is boxed: a turn without a limit
                // neither carries nor moves the timer's state.
                let result = match run.turn_limit::<#n::Agent>() {
                    ::workflow_core::__private::Option::None => {
                        run.instrument_agent::<#n::Agent, _>(#body_future).await
                    }
                    ::workflow_core::__private::Option::Some(limit) => {
                        match ::workflow_core::__private::Box::pin(
                            ::workflow_core::__private::timeout(
                                limit,
                                run.instrument_agent::<#n::Agent, _>(#body_future),
                            ),
                        ).await {
                            ::workflow_core::__private::Result::Ok(result) => result,
                            ::workflow_core::__private::Result::Err(_) => {
                                return ::workflow_core::__private::Result::Err(run.timed_out::<#n::Agent>());
                            }
                        }
                    }
                };
                run.deliver_turn::<#n::Agent>(result)
            }
        }
    });
    let encodes = wf.agents.iter().map(|a| {
        let v = a.variant.clone();
        quote!(#state::#v(payload) => ::workflow_core::__private::encode(out, payload),)
    });
    let restores = wf.agents.iter().enumerate().map(|(i, a)| {
        let v = a.variant.clone();
        let i = i as u16;
        quote!(#i => payload.decode().map(#state::#v),)
    });
    let agent_of = wf.agents.iter().enumerate().map(|(i, a)| {
        let v = a.variant.clone();
        let i = i as u16;
        quote!(#state::#v(_) => #i,)
    });
    // Each type with the name its schema takes when it has none of its own
    // (see `graph::schema_name`).
    let mut schema_types: Vec<(TokenStream, String)> = vec![
        (quote!(#input), "input".into()),
        (output.clone(), "output".into()),
    ];
    schema_types.extend(wf.agents.iter().map(|a| {
        let t = &a.input_ty;
        (quote!(#t), "input".into())
    }));
    schema_types.extend(wf.tools.iter().flat_map(|t| {
        let (i, o) = (&t.input_ty, &t.output_ty);
        let name = t.name.unraw().to_string();
        [
            (quote!(#i), format!("{name}.input")),
            (quote!(#o), format!("{name}.output")),
        ]
    }));
    if let Some(i) = &wf.invariants {
        schema_types.push((quote!(#i), "invariants".into()));
    }
    let schema_adds = schema_types
        .iter()
        .map(|(ty, role)| quote!(set.add_or::<#ty>(#role);));
    let graph = super::graph::graph(wf, r);
    let entry_name = &entry.name;
    let invariants = wf
        .invariants
        .as_ref()
        .map(|root| super::invariants::invariants(wf, root));
    let doc = format!("The definition of workflow `{wf_name}`; run it with [`Workflow`].");
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy, Default)]
        pub struct #spec;

        #executor

        #invariants

        /// Which agent runs next, with its input.
        pub enum #state {
            #(#states),*
        }

        impl ::workflow_core::__private::Workflow for #spec {
            type Input = #input;
            type Output = #output;
            type Root = #root;
            type Deps = #deps;
            type State = #state;
            const GRAPH: &'static ::workflow_core::__private::Graph = &#graph;

            fn start(
                input: #input,
                run: &mut ::workflow_core::__private::Runtime<'_, #spec>,
            ) -> ::workflow_core::__private::Result<#state, ::workflow_core::__private::RunError> {
                let contract =
                    <#entry_name::Agent as ::workflow_core::__private::Agent<#spec>>::contract(&input);
                run.handoff(0, &input, contract)?;
                ::workflow_core::__private::Result::Ok(#state::#entry_v(input))
            }

            fn turn<'a, 'x>(
                state: #state,
                run: &'a mut ::workflow_core::__private::Runtime<'x, #spec>,
            ) -> impl ::workflow_core::__private::Future<
                Output = ::workflow_core::__private::Result<::workflow_core::__private::Transition<#spec>, ::workflow_core::__private::RunError>,
            > + Send + 'a {
                async move {
                    match state {
                        #(#turns)*
                    }
                }
            }

            fn agent_of(state: &#state) -> u16 {
                match state {
                    #(#agent_of)*
                }
            }

            fn restore(
                agent: u16,
                payload: &::workflow_core::__private::RecordedPayload<'_>,
            ) -> ::workflow_core::__private::Result<#state, ::workflow_core::__private::String> {
                match agent {
                    #(#restores)*
                    _ => ::workflow_core::__private::Result::Err(
                        ::workflow_core::__private::format!("no agent {} in this workflow", agent),
                    ),
                }
            }

            fn encode_state(
                state: &#state,
                out: &mut ::workflow_core::__private::Vec<u8>,
            ) -> ::workflow_core::__private::Result<::workflow_core::__private::PayloadFormat, ::workflow_core::__private::String> {
                match state {
                    #(#encodes)*
                }
            }

            fn schemas(set: &mut ::workflow_core::__private::SchemaSet) {
                #(#schema_adds)*
            }
        }
    }
}
