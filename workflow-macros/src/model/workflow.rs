//! The model of a `#[workflow]` module: its agents, tools, handoffs and
//! invariants, each keeping the user's tokens for spans.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{FnArg, GenericArgument, Ident, Item, ItemFn, Pat, PathArguments, ReturnType, Type};

use crate::ctxt::Ctxt;
use crate::model::handoff::Handoff;
use crate::parse::{AgentArgs, ConditionArgs, HandoffArgs, InvariantsArgs, ToolArgs, WorkflowArgs};

/// A `#[pre]`/`#[post]` condition, with what makes it not a plain `bool`
/// expression (`?`, `.await`, `return`; reported by the rules, and such a
/// condition is left out of the generated code).
pub struct Condition {
    pub args: ConditionArgs,
    pub impure: Vec<Impurity>,
}

/// A token a condition may not hold.
pub enum Impurity {
    Try(syn::Token![?]),
    Await(syn::Token![await]),
    Return(syn::Token![return]),
}

impl Condition {
    fn new(args: ConditionArgs) -> Condition {
        struct Find(Vec<Impurity>);
        impl<'a> syn::visit::Visit<'a> for Find {
            fn visit_expr_try(&mut self, e: &'a syn::ExprTry) {
                self.0.push(Impurity::Try(e.question_token));
            }
            fn visit_expr_await(&mut self, e: &'a syn::ExprAwait) {
                self.0.push(Impurity::Await(e.await_token));
            }
            fn visit_expr_return(&mut self, e: &'a syn::ExprReturn) {
                self.0.push(Impurity::Return(e.return_token));
            }
            // Closures and async blocks inside may use what they like.
            fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
            fn visit_expr_async(&mut self, _: &'a syn::ExprAsync) {}
        }
        let mut find = Find(Vec::new());
        syn::visit::Visit::visit_expr(&mut find, &args.expr);
        Condition {
            args,
            impure: find.0,
        }
    }

    /// Whether the condition is a plain expression the receipt can test.
    pub fn is_plain(&self) -> bool {
        self.impure.is_empty()
    }
}

/// Whether `ty` holds a reference or a lifetime other than `'static`.
pub fn borrows(ty: &Type) -> bool {
    struct Borrows(bool);
    impl<'a> syn::visit::Visit<'a> for Borrows {
        fn visit_type_reference(&mut self, _: &'a syn::TypeReference) {
            self.0 = true;
        }
        fn visit_lifetime(&mut self, l: &'a syn::Lifetime) {
            self.0 |= l.ident != "static";
        }
    }
    let mut b = Borrows(false);
    syn::visit::Visit::visit_type(&mut b, ty);
    b.0
}

/// `network_agent` -> `NetworkAgent`: the variant name for an agent.
pub fn camel(ident: &Ident) -> String {
    let raw = ident.to_string();
    let raw = raw.strip_prefix("r#").unwrap_or(&raw);
    raw.split('_')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// An `#[agent]` function.
pub struct Agent {
    pub name: Ident,
    /// Its variant name in `Next` and `State` (CamelCase of the name).
    pub variant: Ident,
    /// The signature as written, for the shape rules.
    pub sig: syn::Signature,
    /// Whether the function is `async` (a non-async one is reported).
    pub is_async: bool,
    /// Whether the function has the `(input, cx)` shape and an owned input,
    /// and can be called.
    pub callable: bool,
    pub input_pat: Pat,
    /// The input type; `()` for a missing or borrowed input (reported).
    pub input_ty: Type,
    pub cx_pat: Pat,
    pub args: AgentArgs,
    /// `#[agent(..)]` attributes after the first.
    pub extra_attrs: Vec<syn::Attribute>,
    pub pre: Vec<Condition>,
    pub post: Vec<Condition>,
    /// Errors found while reading its attributes (arguments, conditions).
    pub malformed: Vec<syn::Error>,
    /// An agent declared before under the same variant name.
    pub clash: Option<Ident>,
}

impl Agent {
    /// The pre-conditions the generated code tests (the plain ones).
    pub fn plain_pre(&self) -> Vec<&ConditionArgs> {
        self.pre
            .iter()
            .filter(|c| c.is_plain())
            .map(|c| &c.args)
            .collect()
    }

    /// The post-conditions the generated code tests (the plain ones).
    pub fn plain_post(&self) -> Vec<&ConditionArgs> {
        self.post
            .iter()
            .filter(|c| c.is_plain())
            .map(|c| &c.args)
            .collect()
    }
}

/// A `#[tool]` function.
pub struct Tool {
    pub name: Ident,
    /// The name the tool's function is emitted under, out of agents' reach.
    pub hidden: Ident,
    /// The signature as written, for the shape rules.
    pub sig: syn::Signature,
    /// Whether the function is `async` (a non-async one is reported).
    pub is_async: bool,
    /// Whether the function has the `(input, deps) -> Result<..>` shape.
    pub callable: bool,
    /// What is wrong with its shape, if anything.
    pub shape_problem: Option<&'static str>,
    /// The written input and output types (before any replacement).
    pub written: [Option<Type>; 2],
    pub input_ty: Type,
    pub output_ty: Type,
    pub needs: Option<Ident>,
    /// `effect`, `retries`, `backoff_ms`, `then`.
    pub args: ToolArgs,
    /// The tool's doc comment, for its MCP definition.
    pub description: String,
    /// Errors found while reading its attribute.
    pub malformed: Vec<syn::Error>,
}

/// An item of the module, in the order written.
pub enum ModItem {
    /// A `#[handoff]` struct: its model, or the struct given back when it
    /// cannot be modelled.
    Handoff {
        model: Result<Handoff, Box<syn::ItemStruct>>,
        malformed: Vec<syn::Error>,
    },
    /// The `#[invariants]` struct, without the derives the macro adds.
    Invariants {
        item: syn::ItemStruct,
        /// The user's own serde/schemars derives, removed.
        own_derives: Vec<syn::Path>,
        /// The invariants type declared before this one.
        already: Option<Ident>,
        malformed: Vec<syn::Error>,
    },
    /// An agent's function; `agent` indexes `Workflow::agents`, `None`
    /// for a second declaration of the same name (`redeclared`).
    Agent {
        item: ItemFn,
        agent: Option<usize>,
        redeclared: Option<Box<Agent>>,
    },
    /// A tool's function, renamed to its hidden name; `Workflow::tools[tool]`,
    /// `None` for a second declaration of the same name (`redeclared`,
    /// left out of the expansion).
    Tool {
        item: ItemFn,
        tool: Option<usize>,
        redeclared: Option<Box<Tool>>,
    },
    /// A function with `#[pre]`/`#[post]` but no `#[agent]` (the condition
    /// attributes removed, their paths kept).
    StrayConditions { item: ItemFn, paths: Vec<syn::Path> },
    /// Any other item, with the name it declares.
    Other {
        tokens: TokenStream,
        declares: Option<Ident>,
    },
}

/// A `#[workflow]` module.
pub struct Workflow {
    pub vis: syn::Visibility,
    pub name: Ident,
    pub attrs: Vec<syn::Attribute>,
    pub args: WorkflowArgs,
    /// The module's items, markers consumed.
    pub items: Vec<ModItem>,
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

/// Names the macro generates in the module; a user item (or an agent) with
/// one of them would clash.
pub const GENERATED_NAMES: [&str; 6] = [
    "Spec",
    "State",
    "Workflow",
    "MAX_HOPS",
    "authority",
    "tools",
];

/// The generated modules among [`GENERATED_NAMES`] (an agent is a module too).
pub const GENERATED_MODULES: [&str; 2] = ["authority", "tools"];

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

/// The name an item declares in the module, if any.
fn declared_name(item: &Item) -> Option<Ident> {
    match item {
        Item::Struct(i) => Some(i.ident.clone()),
        Item::Enum(i) => Some(i.ident.clone()),
        Item::Type(i) => Some(i.ident.clone()),
        Item::Const(i) => Some(i.ident.clone()),
        Item::Static(i) => Some(i.ident.clone()),
        Item::Mod(i) => Some(i.ident.clone()),
        Item::Trait(i) => Some(i.ident.clone()),
        Item::Union(i) => Some(i.ident.clone()),
        _ => None,
    }
}

/// Errors reported into a scratch context while reading one item, kept
/// with the item so that they are reported in source order by the rules.
fn collect(read: impl FnOnce(&Ctxt)) -> Vec<syn::Error> {
    let scratch = Ctxt::new();
    read(&scratch);
    scratch.into_errors()
}

/// Removes the user's own serde/schemars derives from `attrs` (the macro
/// derives them itself) and returns them, for the rules to report.
pub fn strip_own_derives(attrs: &mut [syn::Attribute]) -> Vec<syn::Path> {
    use syn::punctuated::Punctuated;
    let own = |p: &syn::Path| {
        p.segments
            .last()
            .is_some_and(|s| OWN_DERIVES.iter().any(|d| s.ident == d))
    };
    let mut removed = Vec::new();
    for attr in attrs.iter_mut().filter(|a| a.path().is_ident("derive")) {
        let Ok(paths) =
            attr.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
        else {
            continue;
        };
        let kept: Vec<&syn::Path> = paths.iter().filter(|p| !own(p)).collect();
        if kept.len() != paths.len() {
            removed.extend(paths.iter().filter(|p| own(p)).cloned());
            *attr = syn::parse_quote!(#[derive(#(#kept),*)]);
        }
    }
    removed
}

/// The derives the macro adds itself, removed from the user's list.
const OWN_DERIVES: [&str; 3] = ["Serialize", "Deserialize", "JsonSchema"];

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
            let item = match item {
                Item::Struct(mut s) if has_attr(&s.attrs, "handoff") => {
                    let mut model = None;
                    let malformed = collect(|cx| {
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
                        model = Some(Handoff::from_struct(cx, s).map(|mut h| {
                            h.args = args;
                            h
                        }));
                    });
                    let Some(model) = model else { continue };
                    ModItem::Handoff { model, malformed }
                }
                Item::Struct(mut s) if has_attr(&s.attrs, "invariants") => {
                    let malformed = collect(|cx| {
                        for a in take_attrs(&mut s.attrs, "invariants") {
                            if let syn::Meta::List(list) = &a.meta {
                                wf.invariants_args =
                                    InvariantsArgs::parse_all(cx, list.tokens.clone());
                            } else if !matches!(a.meta, syn::Meta::Path(_)) {
                                cx.error_spanned_by(
                                    &a,
                                    "`#[invariants]` takes `(forbid = [..], check = [..])` or nothing",
                                );
                            }
                        }
                    });
                    let already = wf.invariants.clone();
                    if already.is_none() {
                        wf.invariants = Some(s.ident.clone());
                    }
                    let own_derives = strip_own_derives(&mut s.attrs);
                    ModItem::Invariants {
                        item: s,
                        own_derives,
                        already,
                        malformed,
                    }
                }
                Item::Fn(mut f) if has_attr(&f.attrs, "agent") => {
                    let mut agent = agent_from_fn(&mut f);
                    let camel = agent.variant.to_string();
                    match wf.agents.iter().find(|a| a.variant == camel) {
                        Some(first) if first.name.unraw() == agent.name.unraw() => ModItem::Agent {
                            item: f,
                            agent: None,
                            redeclared: Some(Box::new(agent)),
                        },
                        Some(first) => {
                            // Kept under a unique variant so that nothing else breaks.
                            agent.clash = Some(first.name.clone());
                            agent.variant = quote::format_ident!("{camel}{}", wf.agents.len());
                            wf.agents.push(agent);
                            ModItem::Agent {
                                item: f,
                                agent: Some(wf.agents.len() - 1),
                                redeclared: None,
                            }
                        }
                        None => {
                            wf.agents.push(agent);
                            ModItem::Agent {
                                item: f,
                                agent: Some(wf.agents.len() - 1),
                                redeclared: None,
                            }
                        }
                    }
                }
                Item::Fn(mut f) if has_attr(&f.attrs, "tool") => {
                    let tool = tool_from_fn(&mut f);
                    if wf.tools.iter().any(|t| t.name.unraw() == tool.name.unraw()) {
                        wf.items.push(ModItem::Tool {
                            item: f,
                            tool: None,
                            redeclared: Some(Box::new(tool)),
                        });
                        continue;
                    }
                    // The function itself is hidden: `cx.call(tools::x, ..)`,
                    // which checks the grant, is the only way to run a tool.
                    f.sig.ident = tool.hidden.clone();
                    f.attrs.push(syn::parse_quote!(#[doc(hidden)]));
                    wf.tools.push(tool);
                    ModItem::Tool {
                        item: f,
                        tool: Some(wf.tools.len() - 1),
                        redeclared: None,
                    }
                }
                Item::Fn(mut f) if has_attr(&f.attrs, "pre") || has_attr(&f.attrs, "post") => {
                    let paths = take_attrs(&mut f.attrs, "pre")
                        .into_iter()
                        .chain(take_attrs(&mut f.attrs, "post"))
                        .map(|a| a.path().clone())
                        .collect();
                    ModItem::StrayConditions { item: f, paths }
                }
                other => ModItem::Other {
                    declares: declared_name(&other),
                    tokens: other.into_token_stream(),
                },
            };
            wf.items.push(item);
        }
        Some(wf)
    }
}

/// Why a user item's name clashes with the generated code.
pub enum Clash {
    /// One of [`GENERATED_NAMES`].
    Generated,
    /// The module generated for an agent of that name.
    AgentModule,
}

impl Workflow {
    /// Whether the item named `ident` clashes with a generated item (it is
    /// reported, and left out of the expansion).
    pub fn clash(&self, ident: &Ident) -> Option<Clash> {
        let name = ident.unraw().to_string();
        if GENERATED_NAMES.contains(&name.as_str()) {
            Some(Clash::Generated)
        } else if self.agents.iter().any(|a| a.name.unraw() == name) {
            Some(Clash::AgentModule)
        } else {
            None
        }
    }
}

fn typed_arg(arg: &FnArg) -> Option<(&Pat, &Type)> {
    match arg {
        FnArg::Typed(t) => Some((&t.pat, &t.ty)),
        FnArg::Receiver(_) => None,
    }
}

fn agent_from_fn(f: &mut ItemFn) -> Agent {
    let mut args = AgentArgs::default();
    let mut extra_attrs = Vec::new();
    let mut pre = Vec::new();
    let mut post = Vec::new();
    let malformed = collect(|cx| {
        for (i, a) in take_attrs(&mut f.attrs, "agent").into_iter().enumerate() {
            if i > 0 {
                extra_attrs.push(a);
                continue;
            }
            if let syn::Meta::List(list) = &a.meta {
                args = AgentArgs::parse_all(cx, list.tokens.clone());
            }
        }
        let mut conditions = |name: &str| -> Vec<Condition> {
            take_attrs(&mut f.attrs, name)
                .into_iter()
                .filter_map(|a| match a.parse_args::<ConditionArgs>() {
                    Ok(c) => Some(Condition::new(c)),
                    Err(e) => {
                        cx.syn_error(e);
                        None
                    }
                })
                .collect()
        };
        pre = conditions("pre");
        post = conditions("post");
    });
    let sig = &f.sig;
    let inputs: Vec<_> = sig.inputs.iter().collect();
    let input = inputs.first().and_then(|a| typed_arg(a));
    let context = inputs.get(1).and_then(|a| typed_arg(a));
    // A borrowed input (reported) is replaced by `()`: the agent is not
    // called, so no lifetime error follows.
    let input = input.filter(|(_, ty)| !borrows(ty));
    // A malformed agent stays in the model, so that the graph and the
    // generated names exist and no other error follows from this one.
    Agent {
        name: sig.ident.clone(),
        variant: quote::format_ident!("{}", camel(&sig.ident)),
        sig: sig.clone(),
        is_async: sig.asyncness.is_some(),
        callable: input.is_some()
            && context.is_some()
            && inputs.len() == 2
            && sig.generics.params.is_empty(),
        input_pat: input.map_or_else(|| syn::parse_quote!(_input), |(p, _)| p.clone()),
        input_ty: input.map_or_else(|| syn::parse_quote!(()), |(_, t)| t.clone()),
        cx_pat: context.map_or_else(|| syn::parse_quote!(_cx), |(p, _)| p.clone()),
        args,
        extra_attrs,
        pre,
        post,
        malformed,
        clash: None,
    }
}

fn tool_from_fn(f: &mut ItemFn) -> Tool {
    let mut args = ToolArgs::default();
    let malformed = collect(|cx| {
        for a in take_attrs(&mut f.attrs, "tool") {
            if let syn::Meta::List(list) = &a.meta {
                args = ToolArgs::parse_all(cx, list.tokens.clone());
            }
        }
    });
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
    let input_ty = sig
        .inputs
        .first()
        .and_then(typed_arg)
        .map(|(_, t)| t.clone());
    let output_ty = result_ok_type(&sig.output);
    let shape_problem = match (&input_ty, &output_ty, sig.inputs.len()) {
        (Some(_), Some(_), 2) => None,
        (_, None, _) => Some("its return type must be written `Result<Output, ToolError>`"),
        (_, _, n) if n != 2 => Some("it takes exactly two arguments, its input and `&Deps`"),
        _ => Some("its first argument must be its input"),
    };
    let owned = [&input_ty, &output_ty]
        .into_iter()
        .flatten()
        .all(|ty| !borrows(ty));
    let written = [input_ty.clone(), output_ty.clone()];
    // A borrowing tool (reported) gets `()` types and is not called.
    let (input_ty, output_ty) = if owned {
        (input_ty, output_ty)
    } else {
        (None, None)
    };
    Tool {
        name: sig.ident.clone(),
        hidden: syn::Ident::new(&format!("__tool_{}", sig.ident.unraw()), sig.ident.span()),
        sig: sig.clone(),
        is_async: sig.asyncness.is_some(),
        callable: shape_problem.is_none() && owned,
        shape_problem,
        written,
        input_ty: input_ty.unwrap_or_else(|| syn::parse_quote!(())),
        output_ty: output_ty.unwrap_or_else(|| syn::parse_quote!(())),
        needs: args.needs.clone(),
        args,
        description,
        malformed,
    }
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
