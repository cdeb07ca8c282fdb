//! Code for the workflow itself: the `Spec` implementing
//! `workflow_core::Workflow` (start, turn, restore, schemas), the `State`
//! and the static graph the executor and the manifest read.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;

use crate::check::workflow::Resolved;
use crate::graph::Target;
use crate::model::workflow::Workflow;

use super::workflow::{body_call, output_ty, type_text};

pub(super) fn spec(wf: &Workflow, r: &Resolved) -> TokenStream {
    let wf_name = wf.name.unraw().to_string();
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
            State::#v(input) => {
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
        quote!(State::#v(payload) => ::workflow_core::__private::encode(out, payload),)
    });
    let restores = wf.agents.iter().enumerate().map(|(i, a)| {
        let v = a.variant.clone();
        let i = i as u16;
        quote!(#i => payload.decode().map(State::#v),)
    });
    let agent_of = wf.agents.iter().enumerate().map(|(i, a)| {
        let v = a.variant.clone();
        let i = i as u16;
        quote!(State::#v(_) => #i,)
    });
    let mut schema_types: Vec<TokenStream> = vec![quote!(#input), output.clone()];
    schema_types.extend(wf.agents.iter().map(|a| {
        let t = &a.input_ty;
        quote!(#t)
    }));
    schema_types.extend(wf.tools.iter().flat_map(|t| {
        let (i, o) = (&t.input_ty, &t.output_ty);
        [quote!(#i), quote!(#o)]
    }));
    if let Some(i) = &wf.invariants {
        schema_types.push(quote!(#i));
    }
    let graph = graph(wf, r);
    let probe_input = super::contract_probe(quote!(&input));
    let invariants = wf.invariants.as_ref().map(|root| invariants(wf, root));
    let doc = format!("The definition of workflow `{wf_name}`; run it with [`Workflow`].");
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy, Default)]
        pub struct Spec;

        /// The executor of this workflow: `Workflow::new(root, deps).run(input)`.
        pub type Workflow = ::workflow_core::Executor<Spec>;

        #invariants

        /// Which agent runs next, with its input.
        pub enum State {
            #(#states),*
        }

        impl ::workflow_core::Workflow for Spec {
            type Input = #input;
            type Output = #output;
            type Root = #root;
            type Deps = #deps;
            type State = State;
            const GRAPH: &'static ::workflow_core::Graph = &#graph;

            fn start(
                input: #input,
                run: &mut ::workflow_core::Runtime<'_, Spec>,
            ) -> ::workflow_core::__private::Result<State, ::workflow_core::RunError> {
                run.handoff(0, &input, #probe_input)?;
                ::workflow_core::__private::Result::Ok(State::#entry_v(input))
            }

            fn turn<'a, 'x>(
                state: State,
                run: &'a mut ::workflow_core::Runtime<'x, Spec>,
            ) -> impl ::workflow_core::__private::Future<
                Output = ::workflow_core::__private::Result<::workflow_core::Transition<Spec>, ::workflow_core::RunError>,
            > + Send + 'a {
                async move {
                    match state {
                        #(#turns)*
                    }
                }
            }

            fn agent_of(state: &State) -> u16 {
                match state {
                    #(#agent_of)*
                }
            }

            fn restore(
                agent: u16,
                payload: &::workflow_core::RecordedPayload<'_>,
            ) -> ::workflow_core::__private::Result<State, ::workflow_core::__private::String> {
                match agent {
                    #(#restores)*
                    _ => ::workflow_core::__private::Result::Err(
                        ::workflow_core::__private::format!("no agent {} in this workflow", agent),
                    ),
                }
            }

            fn encode_state(
                state: &State,
                out: &mut ::workflow_core::__private::Vec<u8>,
            ) -> ::workflow_core::__private::Result<::workflow_core::ledger::PayloadFormat, ::workflow_core::__private::String> {
                match state {
                    #(#encodes)*
                }
            }

            fn schemas(set: &mut ::workflow_core::SchemaSet) {
                #(set.add::<#schema_types>();)*
            }
        }
    }
}

fn schema_name(ty: TokenStream) -> TokenStream {
    quote!(<#ty as ::workflow_core::__private::schemars::JsonSchema>::schema_name)
}

fn graph(wf: &Workflow, r: &Resolved) -> TokenStream {
    let output = output_ty(wf);
    let output_text = wf
        .args
        .output
        .as_ref()
        .map(type_text)
        .unwrap_or_else(|| "()".into());
    let entry = &wf.agents[r.graph.entry];
    let input_text = type_text(&entry.input_ty);
    let cond = |cs: &[crate::parse::ConditionArgs]| {
        let items = cs.iter().map(|c| {
            let text = super::expr_text(&c.expr);
            let message = &c.message;
            quote!(::workflow_core::Condition { expr: #text, message: #message })
        });
        quote!(&[#(#items),*])
    };
    let agents = wf.agents.iter().map(|a| {
        let name = a.name.unraw().to_string();
        let ty = &a.input_ty;
        let input = type_text(ty);
        let input_schema = schema_name(quote!(#ty));
        let owns = a.args.owns.iter().map(|o| o.unraw().to_string());
        let tools = a.args.tools.iter().map(|t| t.unraw().to_string());
        let timeout = match a
            .args
            .timeout_ms
            .as_ref()
            .and_then(|t| t.base10_parse::<u64>().ok())
        {
            Some(ms) => quote!(::workflow_core::__private::Option::Some(#ms)),
            None => quote!(::workflow_core::__private::Option::None),
        };
        let (pre, post) = (cond(&a.pre), cond(&a.post));
        let on_reject = match &a.args.on_reject {
            Some(o) if o.kind == "escalate" => quote!(::workflow_core::OnReject::Escalate),
            Some(o) if o.kind == "sender" => {
                let max = o
                    .max
                    .as_ref()
                    .and_then(|m| m.base10_parse::<u32>().ok())
                    .unwrap_or(1);
                quote!(::workflow_core::OnReject::Sender { max: #max })
            }
            _ => quote!(::workflow_core::OnReject::Abort),
        };
        quote! {
            ::workflow_core::AgentInfo {
                name: #name,
                input: #input,
                input_schema: #input_schema,
                owns: &[#(#owns),*],
                tools: &[#(#tools),*],
                timeout_ms: #timeout,
                pre: #pre,
                post: #post,
                on_reject: #on_reject,
            }
        }
    });
    let node = |t: Target| match t {
        Target::Agent(i) => {
            let i = i as u16;
            quote!(::workflow_core::Node::Agent(#i))
        }
        Target::End => quote!(::workflow_core::Node::End),
    };
    let entry_node = node(Target::Agent(r.graph.entry));
    let entry_ty = &entry.input_ty;
    let entry_schema = schema_name(quote!(#entry_ty));
    let start = quote! {
        ::workflow_core::EdgeInfo {
            from: ::workflow_core::Node::Start,
            to: #entry_node,
            payload: #input_text,
            payload_schema: #entry_schema,
            bound: ::workflow_core::__private::Option::None,
        }
    };
    let edges = r.graph.edges.iter().map(|e| {
        let from = node(Target::Agent(e.from));
        let to = node(e.to);
        let (ty, text) = match e.to {
            Target::Agent(b) => {
                let t = &wf.agents[b].input_ty;
                (quote!(#t), type_text(t))
            }
            Target::End => (output.clone(), output_text.clone()),
        };
        let schema = schema_name(ty);
        let bound = match e.bound {
            Some(b) => quote!(::workflow_core::__private::Option::Some(#b)),
            None => quote!(::workflow_core::__private::Option::None),
        };
        quote! {
            ::workflow_core::EdgeInfo { from: #from, to: #to, payload: #text, payload_schema: #schema, bound: #bound }
        }
    });
    let tools = wf.tools.iter().map(|t| {
        let name = t.name.unraw().to_string();
        let (i, o) = (&t.input_ty, &t.output_ty);
        let (it, ot) = (type_text(i), type_text(o));
        let (is, os) = (schema_name(quote!(#i)), schema_name(quote!(#o)));
        let needs = match &t.needs {
            Some(n) => {
                let n = n.unraw().to_string();
                quote!(::workflow_core::__private::Option::Some(#n))
            }
            None => quote!(::workflow_core::__private::Option::None),
        };
        let description = &t.description;
        let effect = tool_effect(t);
        let fallback = tool_fallback(t);
        quote! {
            ::workflow_core::ToolInfo {
                name: #name,
                input: #it,
                input_schema: #is,
                output: #ot,
                output_schema: #os,
                needs: #needs,
                description: #description,
                effect: #effect,
                fallback: #fallback,
                input_schema_doc: ::workflow_core::__private::schema_doc::<#i>,
                output_schema_doc: ::workflow_core::__private::schema_doc::<#o>,
            }
        }
    });
    let name = wf.name.unraw().to_string();
    let max_hops = proc_macro2::Literal::u32_unsuffixed(r.max_hops);
    quote! {
        ::workflow_core::Graph {
            name: #name,
            agents: &[#(#agents),*],
            edges: &[#start, #(#edges),*],
            tools: &[#(#tools),*],
            input: #input_text,
            output: #output_text,
            max_hops: #max_hops,
        }
    }
}

/// The declared effect of tool `t`.
pub(super) fn tool_effect(t: &crate::model::workflow::Tool) -> TokenStream {
    match t.args.effect.as_ref().map(|e| e.to_string()).as_deref() {
        Some("write") => quote!(::workflow_core::Effect::Write),
        Some("destructive") => quote!(::workflow_core::Effect::Destructive),
        _ => quote!(::workflow_core::Effect::Read),
    }
}

/// The declared fallback policy of tool `t`.
pub(super) fn tool_fallback(t: &crate::model::workflow::Tool) -> TokenStream {
    let retries = t
        .args
        .retries
        .as_ref()
        .and_then(|n| n.base10_parse::<u32>().ok())
        .unwrap_or(0);
    let backoff = t
        .args
        .backoff_ms
        .as_ref()
        .and_then(|n| n.base10_parse::<u64>().ok())
        .unwrap_or(0);
    let then = match t.args.then.as_ref().map(|e| e.to_string()).as_deref() {
        Some("escalate") => quote!(::workflow_core::Then::Escalate),
        _ => quote!(::workflow_core::Then::Abort),
    };
    quote!(::workflow_core::Fallback { retries: #retries, backoff_ms: #backoff, then: #then })
}

/// The `Invariants` impl of the `#[invariants]` type: its forbidden fields
/// and its declared checks, in order.
fn invariants(wf: &Workflow, root: &syn::Ident) -> TokenStream {
    let args = &wf.invariants_args;
    let forbid = &args.forbid;
    let checks_given = !args.check.is_empty();
    let checks = args.check.iter().map(|path| {
        let name = quote!(#path).to_string().replace(' ', "");
        quote::quote_spanned! {syn::spanned::Spanned::span(path)=>
            if let ::workflow_core::__private::Result::Err(message) = #path(self, transfer) {
                return ::workflow_core::__private::Result::Err((#name, message));
            }
        }
    });
    quote! {
        impl ::workflow_core::Invariants for #root {
            const FORBIDDEN: &'static [&'static str] = &[#(#forbid),*];
            const CHECKS: bool = #checks_given;
            fn check(
                &self,
                transfer: &::workflow_core::TransferView<'_>,
            ) -> ::workflow_core::__private::Result<(), (&'static str, ::workflow_core::__private::String)> {
                #(#checks)*
                let _ = transfer;
                ::workflow_core::__private::Result::Ok(())
            }
            fn to_json(&self) -> ::workflow_core::__private::Result<::workflow_core::__private::serde_json::Value, ::workflow_core::__private::String> {
                ::workflow_core::__private::to_json(self)
            }
        }
    }
}
