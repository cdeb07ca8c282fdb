//! Rules for the items of a `#[workflow]` module, checked in source order:
//! the shapes of agents and tools, their conditions, the `#[invariants]`
//! type, and the names user items may take.

use syn::ext::IdentExt;
use syn::{FnArg, Type};

use crate::ctxt::Ctxt;
use crate::model::agent::{Agent, Impurity};
use crate::model::syntax::{borrows, camel};
use crate::model::tool::Tool;
use crate::model::workflow::{Clash, ModItem, Workflow};

/// Runs the rules of each item, in the order the items are written.
pub fn check(cx: &Ctxt, wf: &Workflow) {
    for item in &wf.items {
        match item {
            ModItem::Handoff { model, malformed } => {
                check_arguments(cx, malformed);
                if let Ok(h) = model {
                    super::contract::check(cx, h);
                    check_pins_have_root(cx, wf, h);
                }
            }
            ModItem::Invariants {
                item,
                own_derives,
                already,
                malformed,
            } => {
                check_arguments(cx, malformed);
                check_one_invariants(cx, item, already.as_ref());
                check_own_derives(cx, own_derives, "#[invariants]");
            }
            ModItem::Agent {
                agent, redeclared, ..
            } => {
                let Some(a) = agent.map(|i| &wf.agents[i]).or(redeclared.as_deref()) else {
                    continue;
                };
                check_arguments(cx, &a.malformed);
                check_one_agent_attribute(cx, a);
                check_plain_conditions(cx, a);
                check_agent_shape(cx, a);
                check_agent_declared_once(cx, a, redeclared.is_some());
            }
            ModItem::Tool {
                tool, redeclared, ..
            } => {
                let Some(t) = tool.map(|i| &wf.tools[i]).or(redeclared.as_deref()) else {
                    continue;
                };
                check_arguments(cx, &t.malformed);
                check_tool_shape(cx, t);
                if redeclared.is_some() {
                    check_tool_declared_once(cx, t);
                }
            }
            ModItem::StrayConditions { paths, .. } => check_stray_conditions(cx, paths),
            ModItem::Other { .. } => {}
        }
    }
    check_reserved_names(cx, wf);
}

/// Arguments that do not parse, in the order found.
fn check_arguments(cx: &Ctxt, malformed: &[syn::Error]) {
    for e in malformed {
        cx.syn_error(e.clone());
    }
}

/// A workflow has one `#[invariants]` type: the second is reported.
fn check_one_invariants(cx: &Ctxt, item: &syn::ItemStruct, already: Option<&syn::Ident>) {
    if let Some(first) = already {
        cx.error_spanned_by(
            &item.ident,
            format!("a workflow has one `#[invariants]` type; `{first}` is already declared"),
        );
    }
}

/// The macro derives serde and schemars itself: the user's own derives
/// (removed from the expansion) are reported.
pub fn check_own_derives(cx: &Ctxt, own: &[syn::Path], owner: &str) {
    for p in own {
        let name = p
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        cx.error_spanned_by(
            p,
            format!("`{owner}` derives `{name}` itself; remove it from `#[derive(..)]`"),
        );
    }
}

/// An agent has one `#[agent(..)]` attribute.
fn check_one_agent_attribute(cx: &Ctxt, a: &Agent) {
    for attr in &a.extra_attrs {
        cx.error_spanned_by(
            attr,
            "an agent has one `#[agent(..)]` attribute; merge them into one",
        );
    }
}

/// A condition is a plain boolean expression evaluated at the receipt: no
/// `?`, `.await` or `return` (closures inside it may use what they like).
/// Such a condition is left out of the expansion, so nothing else follows.
fn check_plain_conditions(cx: &Ctxt, a: &Agent) {
    for c in a.pre.iter().chain(&a.post) {
        for impurity in &c.impure {
            match impurity {
                Impurity::Try(t) => cx.error_spanned_by(
                    t,
                    "a condition is a plain `bool` expression: `?` is not allowed; handle the error inside (`.is_ok_and(..)`, `matches!`)",
                ),
                Impurity::Await(t) => cx.error_spanned_by(
                    t,
                    "a condition is evaluated synchronously at the receipt: `.await` is not allowed; compute the value in the sending agent and carry it in the payload",
                ),
                Impurity::Return(t) => cx.error_spanned_by(
                    t,
                    "a condition is a plain `bool` expression: `return` is not allowed",
                ),
            }
        }
    }
}

fn typed(arg: &FnArg) -> Option<&Type> {
    match arg {
        FnArg::Typed(t) => Some(&t.ty),
        FnArg::Receiver(_) => None,
    }
}

/// An input or output that borrows cannot cross a seam: it is recorded and
/// may outlive the turn.
fn check_owned(cx: &Ctxt, ty: &Type, what: &str) {
    if borrows(ty) {
        cx.error_spanned_by(
            ty,
            format!("{what} must be an owned type: it crosses a seam and is recorded, so it cannot borrow; use an owned type (`String` for `&str`)"),
        );
    }
}

/// An agent is `async fn name(input: Input, cx: name::Context<'_>)`, not
/// generic, with an owned input.
fn check_agent_shape(cx: &Ctxt, a: &Agent) {
    let sig = &a.sig;
    if sig.asyncness.is_none() {
        cx.error_spanned_by(
            sig.fn_token,
            format!("agent `{}` must be an `async fn`; add `async`", sig.ident),
        );
    }
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            "an agent cannot be generic; use concrete types",
        );
    }
    let inputs: Vec<_> = sig.inputs.iter().collect();
    let input = inputs.first().and_then(|a| typed(a));
    if input.is_none() || inputs.get(1).and_then(|a| typed(a)).is_none() {
        cx.error_spanned_by(
            &sig.ident,
            format!(
                "agent `{0}` takes two arguments, its input and its context: `async fn {0}(input: Input, cx: {0}::Context<'_>)`",
                sig.ident
            ),
        );
    }
    if inputs.len() > 2 {
        cx.error_spanned_by(
            inputs[2],
            "an agent takes exactly two arguments (input, context); remove this one",
        );
    }
    if let Some(ty) = input {
        check_owned(cx, ty, &format!("the input of agent `{}`", sig.ident));
    }
}

/// Two agents cannot share a name, nor a variant name in `Next` and `State`.
fn check_agent_declared_once(cx: &Ctxt, a: &Agent, redeclared: bool) {
    if redeclared {
        cx.error_spanned_by(
            &a.name,
            format!("agent `{}` is declared twice; rename one", a.name),
        );
    } else if let Some(first) = &a.clash {
        cx.error_spanned_by(
            &a.name,
            format!(
                "agents `{first}` and `{}` would both be `{}` in `Next` and `State`; rename one",
                a.name,
                camel(&a.name)
            ),
        );
    }
}

/// A tool is `async fn name(input: Input, deps: &Deps) -> Result<Output,
/// ToolError>` with owned input and output.
fn check_tool_shape(cx: &Ctxt, t: &Tool) {
    let sig = &t.sig;
    let shape = format!(
        "a tool is `async fn {}(input: Input, deps: &Deps) -> Result<Output, ToolError>`",
        sig.ident
    );
    if sig.asyncness.is_none() {
        cx.error_spanned_by(
            sig.fn_token,
            format!("tool `{}` must be an `async fn`; {shape}", sig.ident),
        );
    }
    if let Some(what) = t.shape_problem {
        cx.error_spanned_by(
            &sig.ident,
            format!("tool `{}` has the wrong shape: {what}; {shape}", sig.ident),
        );
    }
    for (ty, what) in t.written.iter().zip(["input", "output"]) {
        if let Some(ty) = ty {
            check_owned(cx, ty, &format!("the {what} of tool `{}`", sig.ident));
        }
    }
}

/// Two tools cannot share a name (the second is left out of the expansion).
fn check_tool_declared_once(cx: &Ctxt, t: &Tool) {
    cx.error_spanned_by(
        &t.name,
        format!("tool `{}` is declared twice; rename one", t.name),
    );
}

/// `#[pre]`/`#[post]` belong to an agent.
fn check_stray_conditions(cx: &Ctxt, paths: &[syn::Path]) {
    for p in paths {
        cx.error_spanned_by(
            p,
            "a condition belongs to an agent: add `#[agent(..)]` to this function",
        );
    }
}

/// User items must not take a generated name (nor an agent's module name),
/// and agents must not take a name the DSL or the generated code gives a
/// meaning to: a generated item's (the agent's module would clash with
/// it), `END` or `START` in any spelling (the records, the manifest and the
/// diagram could not tell the agent from the ends of the run), or `end`
/// (the `End` variant). A clashing item is left out of the expansion, so
/// that the generated code, and the rest of the user's, compiles without a
/// cascade of errors.
fn check_reserved_names(cx: &Ctxt, wf: &Workflow) {
    for item in &wf.items {
        let ModItem::Other {
            declares: Some(ident),
            ..
        } = item
        else {
            continue;
        };
        let name = ident.unraw().to_string();
        match wf.clash(ident) {
            Some(Clash::Generated) => cx.error_spanned_by(
                ident,
                format!("`{name}` is generated by `#[workflow]` in this module; rename this item"),
            ),
            Some(Clash::AgentModule) => cx.error_spanned_by(
                ident,
                format!("`{name}` is the module generated for agent `{name}`; rename this item"),
            ),
            None => {}
        }
    }
    for a in &wf.agents {
        if let Some(why) = reserved_agent_name(&a.name) {
            cx.error_spanned_by(&a.name, why);
        }
    }
}

/// Why an agent cannot be named `name`, if it cannot.
fn reserved_agent_name(name: &syn::Ident) -> Option<String> {
    use crate::model::workflow::{GENERATED_MODULES, GENERATED_NAMES, GENERATED_PREFIX};
    let text = name.unraw().to_string();
    if GENERATED_MODULES.contains(&text.as_str()) {
        return Some(format!(
            "an agent cannot be named `{text}`: `{text}` is a module the workflow generates; rename it"
        ));
    }
    if GENERATED_NAMES.contains(&text.as_str()) {
        return Some(format!(
            "an agent cannot be named `{text}`: `#[workflow]` generates `{text}` in this module, and the agent's function or module would clash with it; rename it"
        ));
    }
    if text.starts_with(GENERATED_PREFIX) {
        return Some(format!(
            "an agent cannot be named `{text}`: names starting with `{GENERATED_PREFIX}` are kept for the code `#[workflow]` generates; rename it"
        ));
    }
    if camel(name) == "End" {
        return Some(
            "an agent cannot be named `end`: `End` is the variant for `END`; rename it".to_owned(),
        );
    }
    if text.eq_ignore_ascii_case("end") {
        return Some(format!(
            "an agent cannot be named `{text}`: `END` is the end of the run in `to = [...]`, and the records, the manifest and the diagram could not tell the agent from it; rename it"
        ));
    }
    if text.eq_ignore_ascii_case("start") {
        return Some(format!(
            "an agent cannot be named `{text}`: `START` is where the workflow input comes from in the records, the manifest and the diagram, which could not tell the agent from it; rename it"
        ));
    }
    None
}

/// A `#[pin(..)]` needs the `#[invariants]` struct it names a field of.
fn check_pins_have_root(cx: &Ctxt, wf: &Workflow, h: &crate::model::handoff::Handoff) {
    if wf.invariants.is_some() {
        return;
    }
    for pin in &h.pins {
        cx.error_spanned_by(
            &pin.attr,
            format!(
                "`#[pin({})]` pins a field to a root invariant, but this workflow has none; declare them with `#[invariants] pub struct Root {{ .. }}`",
                pin.root
            ),
        );
    }
}
