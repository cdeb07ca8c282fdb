//! Code for a `#[workflow]` module: authorities, tools, one module per agent
//! (`Agent`, `Next`, `Context`), the `State`, the static graph, the `Spec`
//! that implements `workflow_core::Workflow`, and compile-time assertions.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::check::workflow::Resolved;
use crate::graph::Target;
use crate::model::workflow::{Agent, Workflow};

fn type_text(ty: &syn::Type) -> String {
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
        agent(wf, r, i, a, extra)
    });
    let spec = spec(wf, r);
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

fn input_alias(a: &Agent) -> syn::Ident {
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
                type Input = super::#input_alias;
                type Output = super::#output_alias;
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
fn body_call(a: &Agent) -> TokenStream {
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

/// Incoming edges of each agent, by index.
fn has_incoming(r: &Resolved, agent: usize) -> bool {
    r.graph.edges.iter().any(|e| e.to == Target::Agent(agent))
}

fn output_ty(wf: &Workflow) -> TokenStream {
    match &wf.args.output {
        Some(t) => quote!(#t),
        None => quote!(()),
    }
}

/// `pre`/`post` bodies: bind the user's names, test each condition.
fn conditions(
    index: usize,
    conds: &[crate::parse::ConditionArgs],
    list: &str,
    bind: TokenStream,
) -> TokenStream {
    let list = format_ident!("{list}");
    let tests = conds.iter().enumerate().map(|(i, c)| {
        let expr = &c.expr;
        quote_spanned! {expr.span()=>
            if !(#expr) {
                return ::workflow_core::__private::Result::Err(
                    &<Spec as ::workflow_core::Workflow>::GRAPH.agents[#index].#list[#i],
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

fn agent(wf: &Workflow, r: &Resolved, index: usize, a: &Agent, extra: TokenStream) -> TokenStream {
    let name = &a.name;
    let input = &a.input_ty;
    let index_u16 = index as u16;
    let variants = r
        .graph
        .edges
        .iter()
        .filter(|e| e.from == index)
        .map(|e| match e.to {
            Target::Agent(b) => {
                let v = wf.agents[b].variant.clone();
                let ty = input_alias(&wf.agents[b]);
                let doc = format!("Hand off to `{}`.", wf.agents[b].name);
                quote!(#[doc = #doc] #v(super::#ty))
            }
            Target::End => quote!(
                #[doc = "End the run with the workflow output."]
                End(super::__wf_output)
            ),
        });
    let routes = r
        .graph
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.from == index)
        .map(|(i, e)| {
            let edge = (i + 1) as u16; // edge 0 is START -> entry
            match e.to {
                Target::Agent(b) => {
                    let v = wf.agents[b].variant.clone();
                    quote! {
                        #name::Next::#v(payload) => {
                            run.handoff(#edge, &payload)?;
                            ::workflow_core::__private::Result::Ok(
                                ::workflow_core::Transition::To(State::#v(payload)),
                            )
                        }
                    }
                }
                Target::End => quote! {
                    #name::Next::End(output) => {
                        run.end(#edge, &output)?;
                        ::workflow_core::__private::Result::Ok(::workflow_core::Transition::End(output))
                    }
                },
            }
        });
    // Deduplicated: a name listed twice is reported, and must not also
    // give a conflicting impl.
    let mut seen = std::collections::HashSet::new();
    let owns: Vec<_> = a
        .args
        .owns
        .iter()
        .filter(|o| seen.insert(o.unraw().to_string()))
        .map(|o| quote!(impl ::workflow_core::Owns<authority::#o> for #name::Agent {}))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let grants: Vec<_> = a
        .args
        .tools
        .iter()
        .filter(|t| wf.tools.iter().any(|d| d.name.unraw() == t.unraw()))
        .filter(|t| seen.insert(t.unraw().to_string()))
        .map(|t| quote!(impl ::workflow_core::Granted<tools::#t> for #name::Agent {}))
        .collect();
    let timeout = a.args.timeout_ms.as_ref().and_then(|t| t.base10_parse::<u64>().ok()).map(|ms| {
        quote! {
            const TIMEOUT: ::workflow_core::__private::Option<::workflow_core::__private::Duration> =
                ::workflow_core::__private::Option::Some(::workflow_core::__private::Duration::from_millis(#ms));
        }
    });
    // An agent that receives handoffs must take one (a compile error
    // otherwise); the entry's input is checked when it happens to be one.
    let view = if has_incoming(r, index) {
        let view =
            quote_spanned!(input.span()=> <#input as ::workflow_core::Handoff>::contract(input));
        quote!(::workflow_core::__private::Option::Some(#view))
    } else {
        quote! {{
            #[allow(unused_imports)]
            use ::workflow_core::__private::{ContractOfAnything as _, ContractOfHandoff as _};
            (&::workflow_core::__private::ContractProbe(input)).contract_view()
        }}
    };
    let contract = quote! {
        fn contract(input: &#input) -> ::workflow_core::__private::Option<::workflow_core::ContractView<'_>> {
            #view
        }
    };
    let run_body = body_call(a);
    let (input_pat, cx_pat) = (&a.input_pat, &a.cx_pat);
    let pre = (!a.pre.is_empty()).then(|| {
        let body = conditions(
            index,
            &a.pre,
            "pre",
            quote!(let #input_pat = input; let #cx_pat = cx;),
        );
        quote! {
            #[allow(unused_variables, unused_mut, clippy::nonminimal_bool)]
            fn pre(
                input: &#input,
                cx: &#name::Context<'_>,
            ) -> ::workflow_core::__private::Result<(), &'static ::workflow_core::Condition> {
                #body
            }
        }
    });
    let post = (!a.post.is_empty()).then(|| {
        let body = conditions(index, &a.post, "post", quote!(let #cx_pat = cx;));
        quote! {
            #[allow(unused_variables, unused_mut, clippy::nonminimal_bool)]
            fn post(
                out: &#name::Next,
                cx: &#name::Context<'_>,
            ) -> ::workflow_core::__private::Result<(), &'static ::workflow_core::Condition> {
                #body
            }
        }
    });
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
            pub type Context<'x> = ::workflow_core::Context<'x, super::Spec, Agent>;
            #extra
        }

        #(#owns)*
        #(#grants)*

        impl ::workflow_core::Agent<Spec> for #name::Agent {
            const INDEX: u16 = #index_u16;
            #timeout
            type Input = #input;
            type Next = #name::Next;
            #contract
            #pre
            #post
            fn run(
                input: #input,
                cx: #name::Context<'_>,
            ) -> impl ::workflow_core::__private::Future<
                Output = ::workflow_core::__private::Result<#name::Next, ::workflow_core::Reject>,
            > + Send {
                #run_body
            }
        }

        impl ::workflow_core::Route<Spec> for #name::Next {
            fn route(
                self,
                run: &mut ::workflow_core::Runtime<'_, Spec>,
            ) -> ::workflow_core::__private::Result<::workflow_core::Transition<Spec>, ::workflow_core::RunError> {
                match self {
                    #(#routes)*
                }
            }
        }
    }
}

fn spec(wf: &Workflow, r: &Resolved) -> TokenStream {
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
        let timeout = a.args.timeout_ms.as_ref().and_then(|t| t.base10_parse::<u64>().ok());
        let body_future = body_call(a);
        let call = quote!(run.instrument_agent::<#n::Agent, _>(#body_future));
        let body = match timeout {
            None => quote!(#call.await),
            Some(ms) => quote! {
                match ::workflow_core::__private::timeout(
                    ::workflow_core::__private::Duration::from_millis(#ms),
                    #call,
                ).await {
                    ::workflow_core::__private::Result::Ok(result) => result,
                    ::workflow_core::__private::Result::Err(_) => {
                        return ::workflow_core::__private::Result::Err(run.timed_out::<#n::Agent>());
                    }
                }
            },
        };
        quote! {
            State::#v(input) => {
                let cx = run.receive::<#n::Agent>(&input)?;
                let result = #body;
                run.deliver::<#n::Agent>(result, cx)
            }
        }
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
    let doc = format!("The definition of workflow `{wf_name}`; run it with [`Workflow`].");
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy, Default)]
        pub struct Spec;

        /// The executor of this workflow: `Workflow::new(root, deps).run(input)`.
        pub type Workflow = ::workflow_core::Executor<Spec>;

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
                run.handoff(0, &input)?;
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
        quote! {
            ::workflow_core::ToolInfo { name: #name, input: #it, input_schema: #is, output: #ot, output_schema: #os, needs: #needs }
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
