//! The static graph (`Workflow::GRAPH`) the executor indexes into on
//! every transition, and the manifest and diagrams are drawn from.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;

use crate::check::parallel::EdgeKind;
use crate::check::workflow::Resolved;
use crate::graph::Target;
use crate::model::value::OnReject;
use crate::model::workflow::Workflow;

use super::{output_ty, tool_effect, tool_fallback, type_text};

/// The function naming `ty`'s schema: its own name, or `role` (`input`,
/// `lookup.output`) for a type without one (`String`, `Vec<String>`), so
/// that its file is named for what it is in this workflow.
fn schema_name(ty: TokenStream, role: &str) -> TokenStream {
    quote!(|| ::workflow_core::__private::schema_name_or::<#ty>(#role))
}

pub fn graph(wf: &Workflow, r: &Resolved) -> TokenStream {
    let output = output_ty(wf);
    let output_text = wf
        .args
        .output
        .as_ref()
        .map(type_text)
        .unwrap_or_else(|| "()".into());
    let entry = &wf.agents[r.graph.entry];
    let input_text = type_text(&entry.input_ty);
    let cond = |cs: Vec<&crate::parse::ConditionArgs>, extra: Option<TokenStream>| {
        let items = cs.into_iter().map(|c| {
            let text = super::expr_text(&c.expr);
            let message = &c.message;
            quote!(::workflow_core::__private::Condition { expr: #text, message: #message })
        });
        quote!(&[#(#items,)* #extra])
    };
    let agents = wf.agents.iter().enumerate().map(|(i, a)| {
        // A map's bound: the agent's last post-condition (see `agent.rs`).
        let map_bound = super::agent::map_bound(r, i).map(|(max, b)| {
            let worker = wf.agents[b].name.unraw().to_string();
            let expr = format!("map({worker}).len() <= {max}");
            let message = format!(
                "one turn maps at most {max} items to `{worker}` (`map({worker}, max = {max})`, counted in MAX_HOPS); the list is never cut"
            );
            quote!(::workflow_core::__private::Condition { expr: #expr, message: #message })
        });
        let name = a.name.unraw().to_string();
        let ty = &a.input_ty;
        let input = type_text(ty);
        let input_schema = schema_name(quote!(#ty), "input");
        let owns = a.args.owns.iter().map(|o| o.unraw().to_string());
        let tools = a.args.tools.iter().map(|t| t.unraw().to_string());
        let timeout = match a.args.timeout_ms.as_ref().and_then(|t| t.get()) {
            Some(ms) => quote!(::workflow_core::__private::Option::Some(#ms)),
            None => quote!(::workflow_core::__private::Option::None),
        };
        let (pre, post) = (cond(a.plain_pre(), None), cond(a.plain_post(), map_bound));
        let on_reject = match a.args.on_reject.as_ref().map(|o| &o.value) {
            Some(OnReject::Escalate) => quote!(::workflow_core::__private::OnReject::Escalate),
            Some(OnReject::Sender { max }) => {
                // A bound that does not fit (reported) counts as 1.
                let max = max.get().and_then(|m| u32::try_from(m).ok()).unwrap_or(1);
                quote!(::workflow_core::__private::OnReject::Sender { max: #max })
            }
            Some(OnReject::Abort) | None => quote!(::workflow_core::__private::OnReject::Abort),
        };
        quote! {
            ::workflow_core::__private::AgentInfo {
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
            quote!(::workflow_core::__private::Node::Agent(#i))
        }
        Target::End => quote!(::workflow_core::__private::Node::End),
    };
    let entry_node = node(Target::Agent(r.graph.entry));
    let entry_ty = &entry.input_ty;
    let entry_schema = schema_name(quote!(#entry_ty), "input");
    let start = quote! {
        ::workflow_core::__private::EdgeInfo {
            from: ::workflow_core::__private::Node::Start,
            to: #entry_node,
            payload: #input_text,
            payload_schema: #entry_schema,
            bound: ::workflow_core::__private::Option::None,
        }
    };
    let edges = r.graph.edges.iter().zip(&r.kinds).map(|(e, kind)| {
        let from = node(Target::Agent(e.from));
        let to = node(e.to);
        let (ty, text, role) = match (kind, e.to) {
            // A branch's outcome carries what the join declares for it.
            (EdgeKind::Outcome { fork, branch }, _) => {
                let first = r.forks[*fork].branches.get(*branch).copied().unwrap_or(e.from);
                let alias = super::agent::branch_output_alias(&wf.agents[first]);
                let text = r.forks[*fork]
                    .output(wf, *branch)
                    .map_or_else(|| "()".to_owned(), type_text);
                (quote!(#alias), text, "output")
            }
            (_, Target::Agent(b)) => {
                let t = &wf.agents[b].input_ty;
                (quote!(#t), type_text(t), "input")
            }
            (_, Target::End) => (output.clone(), output_text.clone(), "output"),
        };
        let schema = schema_name(ty, role);
        let bound = match e.bound {
            Some(b) => quote!(::workflow_core::__private::Option::Some(#b)),
            None => quote!(::workflow_core::__private::Option::None),
        };
        quote! {
            ::workflow_core::__private::EdgeInfo { from: #from, to: #to, payload: #text, payload_schema: #schema, bound: #bound }
        }
    });
    let tools = wf.tools.iter().map(|t| {
        let name = t.name.unraw().to_string();
        let (i, o) = (&t.input_ty, &t.output_ty);
        let (it, ot) = (type_text(i), type_text(o));
        let (is, os) = (
            schema_name(quote!(#i), &format!("{name}.input")),
            schema_name(quote!(#o), &format!("{name}.output")),
        );
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
        // `version = N` (checked from 1 to `u32::MAX`), 1 when not written.
        let version = t
            .args
            .version
            .as_ref()
            .and_then(|v| v.get())
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(1);
        let version = proc_macro2::Literal::u32_unsuffixed(version);
        quote! {
            ::workflow_core::__private::ToolInfo {
                name: #name,
                input: #it,
                input_schema: #is,
                output: #ot,
                output_schema: #os,
                needs: #needs,
                description: #description,
                effect: #effect,
                fallback: #fallback,
                version: #version,
                input_schema_doc: ::workflow_core::__private::schema_doc::<#i>,
                output_schema_doc: ::workflow_core::__private::schema_doc::<#o>,
            }
        }
    });
    let name = wf.name.unraw().to_string();
    let max_hops = proc_macro2::Literal::u32_unsuffixed(r.max_hops);
    quote! {
        ::workflow_core::__private::Graph {
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
