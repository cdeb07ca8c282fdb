//! The model of a `#[workflow]` module: its agents, tools, handoffs and
//! invariants, each keeping the user's tokens for spans.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{FnArg, GenericArgument, Ident, Item, ItemFn, Pat, PathArguments, ReturnType, Type};

use crate::check;
use crate::codegen;
use crate::ctxt::Ctxt;
use crate::model::handoff::Handoff;
use crate::parse::{AgentArgs, ConditionArgs, HandoffArgs, InvariantsArgs, ToolArgs, WorkflowArgs};

/// An `#[agent]` function.
pub struct Agent {
    pub name: Ident,
    /// Its variant name in `Next` and `State` (CamelCase of the name).
    pub variant: Ident,
    /// Whether the function is `async` (a non-async one is reported).
    pub is_async: bool,
    /// Whether the function has the `(input, cx)` shape and can be called.
    pub callable: bool,
    pub input_pat: Pat,
    pub input_ty: Type,
    pub cx_pat: Pat,
    pub args: AgentArgs,
    pub pre: Vec<ConditionArgs>,
    pub post: Vec<ConditionArgs>,
}

/// A `#[tool]` function.
pub struct Tool {
    pub name: Ident,
    /// The name the tool's function is emitted under, out of agents' reach.
    pub hidden: Ident,
    /// Whether the function is `async` (a non-async one is reported).
    pub is_async: bool,
    /// Whether the function has the `(input, deps) -> Result<..>` shape.
    pub callable: bool,
    pub input_ty: Type,
    pub output_ty: Type,
    pub needs: Option<Ident>,
    /// `effect`, `retries`, `backoff_ms`, `then`.
    pub args: ToolArgs,
    /// The tool's doc comment, for its MCP definition.
    pub description: String,
}

/// A `#[workflow]` module.
pub struct Workflow {
    pub vis: syn::Visibility,
    pub name: Ident,
    pub attrs: Vec<syn::Attribute>,
    pub args: WorkflowArgs,
    /// The module's items as they will be emitted (markers consumed).
    pub items: Vec<TokenStream>,
    pub agents: Vec<Agent>,
    pub tools: Vec<Tool>,
    /// Names of the `#[handoff]` structs declared in the module.
    pub handoffs: Vec<Ident>,
    pub invariants: Option<Ident>,
    /// `#[invariants(forbid = [..], check = [..])]`.
    pub invariants_args: InvariantsArgs,
    /// Structs and enums declared in the module without `pub`.
    pub private_types: Vec<Ident>,
}

/// Whether `attr` is `#[name]`, also written `#[workflow_core::name]`.
fn is_attr(attr: &syn::Attribute, name: &str) -> bool {
    let path = attr.path();
    path.is_ident(name)
        || (path.segments.len() == 2
            && path.segments[0].ident == "workflow_core"
            && path.segments[1].ident == name)
}

fn has_attr(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().any(|a| is_attr(a, name))
}

fn take_attrs(attrs: &mut Vec<syn::Attribute>, name: &str) -> Vec<syn::Attribute> {
    let (taken, kept) = attrs.drain(..).partition(|a| is_attr(a, name));
    *attrs = kept;
    taken
}

/// A condition is a plain boolean expression evaluated at the receipt: no
/// `?`, `.await` or `return` (closures inside it may use what they like).
fn check_plain_condition(cx: &Ctxt, expr: &syn::Expr) -> bool {
    struct Plain<'c>(&'c Ctxt, bool);
    impl<'a> syn::visit::Visit<'a> for Plain<'_> {
        fn visit_expr_try(&mut self, e: &'a syn::ExprTry) {
            self.1 = false;
            self.0.error_spanned_by(
                e.question_token,
                "a condition is a plain `bool` expression: `?` is not allowed; handle the error inside (`.is_ok_and(..)`, `matches!`)",
            );
        }
        fn visit_expr_await(&mut self, e: &'a syn::ExprAwait) {
            self.1 = false;
            self.0.error_spanned_by(
                e.await_token,
                "a condition is evaluated synchronously at the receipt: `.await` is not allowed; compute the value in the sending agent and carry it in the payload",
            );
        }
        fn visit_expr_return(&mut self, e: &'a syn::ExprReturn) {
            self.1 = false;
            self.0.error_spanned_by(
                e.return_token,
                "a condition is a plain `bool` expression: `return` is not allowed",
            );
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'a syn::ExprAsync) {}
    }
    let mut plain = Plain(cx, true);
    syn::visit::Visit::visit_expr(&mut plain, expr);
    plain.1
}

/// An input or output that borrows cannot cross a seam: it is recorded and
/// may outlive the turn. Reports `ty` if it holds a reference or lifetime
/// (other than `'static`), and says whether it is owned.
fn check_owned(cx: &Ctxt, ty: &Type, what: &str) -> bool {
    struct Borrows(bool);
    impl<'a> syn::visit::Visit<'a> for Borrows {
        fn visit_type_reference(&mut self, _: &'a syn::TypeReference) {
            self.0 = true;
        }
        fn visit_lifetime(&mut self, l: &'a syn::Lifetime) {
            self.0 |= l.ident != "static";
        }
    }
    let mut borrows = Borrows(false);
    syn::visit::Visit::visit_type(&mut borrows, ty);
    if borrows.0 {
        cx.error_spanned_by(
            ty,
            format!("{what} must be an owned type: it crosses a seam and is recorded, so it cannot borrow; use an owned type (`String` for `&str`)"),
        );
    }
    !borrows.0
}

impl Workflow {
    /// Builds the model from the module; reports what cannot be modelled.
    pub fn from_module(cx: &Ctxt, args: WorkflowArgs, module: syn::ItemMod) -> Option<Workflow> {
        let Some((_, content)) = module.content else {
            cx.error_spanned_by(
                &module.ident,
                "`#[workflow]` needs an inline module: `mod name { ... }`",
            );
            return None;
        };
        let mut wf = Workflow {
            vis: module.vis,
            name: module.ident,
            attrs: module.attrs,
            args,
            items: Vec::new(),
            agents: Vec::new(),
            tools: Vec::new(),
            handoffs: Vec::new(),
            invariants: None,
            invariants_args: InvariantsArgs::default(),
            private_types: Vec::new(),
        };
        for item in &content {
            let (vis, ident) = match item {
                Item::Struct(i) => (&i.vis, &i.ident),
                Item::Enum(i) => (&i.vis, &i.ident),
                _ => continue,
            };
            if !matches!(vis, syn::Visibility::Public(_)) {
                wf.private_types.push(ident.clone());
            }
        }
        for item in content {
            match item {
                Item::Struct(mut s) if has_attr(&s.attrs, "handoff") => {
                    let mut args = HandoffArgs::default();
                    for a in take_attrs(&mut s.attrs, "handoff") {
                        if let syn::Meta::List(list) = &a.meta {
                            args = HandoffArgs::parse_all(cx, list.tokens.clone());
                        } else if !matches!(a.meta, syn::Meta::Path(_)) {
                            cx.error_spanned_by(
                                &a,
                                "`#[handoff]` takes `(max_bytes = N, max_tokens = N)` or nothing",
                            );
                        }
                    }
                    wf.handoffs.push(s.ident.clone());
                    wf.items.push(expand_handoff(cx, s, args));
                }
                Item::Struct(mut s) if has_attr(&s.attrs, "invariants") => {
                    for a in take_attrs(&mut s.attrs, "invariants") {
                        if let syn::Meta::List(list) = &a.meta {
                            wf.invariants_args = InvariantsArgs::parse_all(cx, list.tokens.clone());
                        } else if !matches!(a.meta, syn::Meta::Path(_)) {
                            cx.error_spanned_by(
                                &a,
                                "`#[invariants]` takes `(forbid = [..], check = [..])` or nothing",
                            );
                        }
                    }
                    if let Some(first) = &wf.invariants {
                        cx.error_spanned_by(
                            &s.ident,
                            format!("a workflow has one `#[invariants]` type; `{first}` is already declared"),
                        );
                    } else {
                        wf.invariants = Some(s.ident.clone());
                    }
                    let s = codegen::handoff::without_own_derives(cx, s, "#[invariants]");
                    let derives = codegen::handoff::derives(&s, false);
                    wf.items.push(quote::quote!(#derives #s));
                }
                Item::Fn(mut f) if has_attr(&f.attrs, "agent") => {
                    if let Some(mut agent) = agent_from_fn(cx, &mut f) {
                        let camel = agent.variant.to_string();
                        match wf.agents.iter().find(|a| a.variant == camel) {
                            Some(first) if first.name.unraw() == agent.name.unraw() => cx
                                .error_spanned_by(
                                    &agent.name,
                                    format!("agent `{}` is declared twice; rename one", agent.name),
                                ),
                            Some(first) => {
                                cx.error_spanned_by(
                                    &agent.name,
                                    format!(
                                        "agents `{}` and `{}` would both be `{camel}` in `Next` and `State`; rename one",
                                        first.name, agent.name
                                    ),
                                );
                                // Kept under a unique variant so that nothing else breaks.
                                agent.variant = quote::format_ident!("{camel}{}", wf.agents.len());
                                wf.agents.push(agent);
                            }
                            None => wf.agents.push(agent),
                        }
                    }
                    wf.items.push(f.into_token_stream());
                }
                Item::Fn(mut f) if has_attr(&f.attrs, "tool") => {
                    if let Some(tool) = tool_from_fn(cx, &mut f) {
                        // The function itself is hidden: `cx.call(tools::x, ..)`,
                        // which checks the grant, is the only way to run a tool.
                        f.sig.ident = tool.hidden.clone();
                        f.attrs.push(syn::parse_quote!(#[doc(hidden)]));
                        wf.tools.push(tool);
                    }
                    wf.items.push(f.into_token_stream());
                }
                Item::Fn(mut f) if has_attr(&f.attrs, "pre") || has_attr(&f.attrs, "post") => {
                    for a in take_attrs(&mut f.attrs, "pre")
                        .into_iter()
                        .chain(take_attrs(&mut f.attrs, "post"))
                    {
                        cx.error_spanned_by(
                            a.path(),
                            "a condition belongs to an agent: add `#[agent(..)]` to this function",
                        );
                    }
                    wf.items.push(f.into_token_stream());
                }
                other => wf.items.push(other.into_token_stream()),
            }
        }
        remove_reserved_names(cx, &mut wf);
        Some(wf)
    }
}

/// Names the macro generates in the module; a user item with one of them
/// would clash.
const RESERVED: [&str; 6] = [
    "Spec",
    "State",
    "Workflow",
    "MAX_HOPS",
    "authority",
    "tools",
];

/// User items must not take a generated name (nor an agent's module name).
/// Such an item is reported and left out, so that the generated code, and
/// the rest of the user's, compiles without a cascade of errors.
fn remove_reserved_names(cx: &Ctxt, wf: &mut Workflow) {
    let agents: Vec<String> = wf
        .agents
        .iter()
        .map(|a| a.name.unraw().to_string())
        .collect();
    wf.items.retain(|item| {
        let Ok(item) = syn::parse2::<syn::Item>(item.clone()) else {
            return true;
        };
        let ident = match &item {
            syn::Item::Struct(i) => &i.ident,
            syn::Item::Enum(i) => &i.ident,
            syn::Item::Type(i) => &i.ident,
            syn::Item::Const(i) => &i.ident,
            syn::Item::Static(i) => &i.ident,
            syn::Item::Mod(i) => &i.ident,
            syn::Item::Trait(i) => &i.ident,
            syn::Item::Union(i) => &i.ident,
            _ => return true,
        };
        let name = ident.unraw().to_string();
        if RESERVED.contains(&name.as_str()) {
            cx.error_spanned_by(
                ident,
                format!("`{name}` is generated by `#[workflow]` in this module; rename this item"),
            );
            false
        } else if agents.contains(&name) {
            cx.error_spanned_by(
                ident,
                format!("`{name}` is the module generated for agent `{name}`; rename this item"),
            );
            false
        } else {
            true
        }
    });
}

/// Expands a `#[handoff]` struct in place (its rules run with the rest).
pub fn expand_handoff(cx: &Ctxt, s: syn::ItemStruct, args: HandoffArgs) -> TokenStream {
    let mut model = match Handoff::from_struct(cx, s) {
        Ok(model) => model,
        Err(cleaned) => return cleaned.to_token_stream(),
    };
    model.args = args;
    check::contract::check(cx, &model);
    codegen::handoff::expand(&model)
}

fn typed_arg(arg: &FnArg) -> Option<(&Pat, &Type)> {
    match arg {
        FnArg::Typed(t) => Some((&t.pat, &t.ty)),
        FnArg::Receiver(_) => None,
    }
}

fn agent_from_fn(cx: &Ctxt, f: &mut ItemFn) -> Option<Agent> {
    let mut args = AgentArgs::default();
    for (i, a) in take_attrs(&mut f.attrs, "agent").into_iter().enumerate() {
        if i > 0 {
            cx.error_spanned_by(
                &a,
                "an agent has one `#[agent(..)]` attribute; merge them into one",
            );
            continue;
        }
        if let syn::Meta::List(list) = &a.meta {
            args = AgentArgs::parse_all(cx, list.tokens.clone());
        }
    }
    let mut conditions = |name: &str| -> Vec<ConditionArgs> {
        take_attrs(&mut f.attrs, name)
            .into_iter()
            .filter_map(|a| match a.parse_args::<ConditionArgs>() {
                Ok(c) => Some(c),
                Err(e) => {
                    cx.syn_error(e);
                    None
                }
            })
            .collect()
    };
    // A condition that is not a plain expression is reported and left out,
    // so the compiler has nothing more to say about it.
    let pre: Vec<_> = conditions("pre")
        .into_iter()
        .filter(|c| check_plain_condition(cx, &c.expr))
        .collect();
    let post: Vec<_> = conditions("post")
        .into_iter()
        .filter(|c| check_plain_condition(cx, &c.expr))
        .collect();
    let sig = &f.sig;
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
    let input = inputs.first().and_then(|a| typed_arg(a));
    let context = inputs.get(1).and_then(|a| typed_arg(a));
    if input.is_none() || context.is_none() {
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
    let owned = input
        .is_none_or(|(_, ty)| check_owned(cx, ty, &format!("the input of agent `{}`", sig.ident)));
    // A borrowed input (reported) is replaced by `()` below: the agent is not
    // called, so no lifetime error follows.
    let input = input.filter(|_| owned);
    // A malformed agent stays in the model, so that the graph and the
    // generated names exist and no other error follows from this one.
    Some(Agent {
        name: sig.ident.clone(),
        variant: quote::format_ident!("{}", codegen::camel(&sig.ident)),
        is_async: sig.asyncness.is_some(),
        callable: input.is_some()
            && context.is_some()
            && inputs.len() == 2
            && sig.generics.params.is_empty(),
        input_pat: input.map_or_else(|| syn::parse_quote!(_input), |(p, _)| p.clone()),
        input_ty: input.map_or_else(|| syn::parse_quote!(()), |(_, t)| t.clone()),
        cx_pat: context.map_or_else(|| syn::parse_quote!(_cx), |(p, _)| p.clone()),
        args,
        pre,
        post,
    })
}

fn tool_from_fn(cx: &Ctxt, f: &mut ItemFn) -> Option<Tool> {
    let mut args = ToolArgs::default();
    for a in take_attrs(&mut f.attrs, "tool") {
        if let syn::Meta::List(list) = &a.meta {
            args = ToolArgs::parse_all(cx, list.tokens.clone());
        }
    }
    let description = f
        .attrs
        .iter()
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_owned();
    let sig = &f.sig;
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
    let input_ty = sig
        .inputs
        .first()
        .and_then(typed_arg)
        .map(|(_, t)| t.clone());
    let output_ty = result_ok_type(&sig.output);
    let what = match (&input_ty, &output_ty, sig.inputs.len()) {
        (Some(_), Some(_), 2) => None,
        (_, None, _) => Some("its return type must be written `Result<Output, ToolError>`"),
        (_, _, n) if n != 2 => Some("it takes exactly two arguments, its input and `&Deps`"),
        _ => Some("its first argument must be its input"),
    };
    if let Some(what) = what {
        cx.error_spanned_by(
            &sig.ident,
            format!("tool `{}` has the wrong shape: {what}; {shape}", sig.ident),
        );
    }
    let mut owned = true;
    for (ty, what) in [(&input_ty, "input"), (&output_ty, "output")] {
        if let Some(ty) = ty {
            owned &= check_owned(cx, ty, &format!("the {what} of tool `{}`", sig.ident));
        }
    }
    // A borrowing tool (reported) gets `()` types and is not called.
    let (input_ty, output_ty) = if owned {
        (input_ty, output_ty)
    } else {
        (None, None)
    };
    Some(Tool {
        name: sig.ident.clone(),
        hidden: syn::Ident::new(&format!("__tool_{}", sig.ident.unraw()), sig.ident.span()),
        is_async: sig.asyncness.is_some(),
        callable: what.is_none() && owned,
        input_ty: input_ty.unwrap_or_else(|| syn::parse_quote!(())),
        output_ty: output_ty.unwrap_or_else(|| syn::parse_quote!(())),
        needs: args.needs.clone(),
        args,
        description,
    })
}

/// `T` of a `Result<T, _>` return type.
fn result_ok_type(ret: &ReturnType) -> Option<Type> {
    let ReturnType::Type(_, ty) = ret else {
        return None;
    };
    let Type::Path(p) = &**ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    }
}
