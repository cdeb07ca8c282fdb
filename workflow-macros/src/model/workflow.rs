//! The model of a `#[workflow]` module: its agents, tools, handoffs and
//! invariants, each keeping the user's tokens for spans.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Ident, Item, ItemFn};

use crate::ctxt::Ctxt;
use crate::model::agent::Agent;
use crate::model::agent::agent_from_fn;
use crate::model::handoff::Handoff;
use crate::model::syntax::{collect, declared_name, has_attr, strip_own_derives, take_attrs};
use crate::model::tool::Tool;
use crate::model::tool::tool_from_fn;
use crate::parse::{HandoffArgs, InvariantsArgs, WorkflowArgs};

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
pub const GENERATED_NAMES: [&str; 7] = [
    "Spec",
    "State",
    "Workflow",
    "MAX_HOPS",
    "GRAPH",
    "authority",
    "tools",
];

/// The prefix of the hidden names the macro generates in the module (the
/// aliases of the user's types, the output's contract): agents may not
/// take it, since an agent's module and function could clash with them.
pub const GENERATED_PREFIX: &str = "__wf_";

/// The generated modules among [`GENERATED_NAMES`] (an agent is a module too).
pub const GENERATED_MODULES: [&str; 2] = ["authority", "tools"];

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
                Item::Struct(mut s)
                    if has_attr(&s.attrs, "handoff")
                        || (!has_attr(&s.attrs, "invariants") && marks_parts(&s)) =>
                {
                    let mut model = None;
                    let malformed = collect(|cx| {
                        if !has_attr(&s.attrs, "handoff") {
                            // Read as the handoff it was meant to be, so
                            // that this is the one error: not one "cannot
                            // find attribute" per marker, nor a missing
                            // `Handoff` impl where it is an agent's input.
                            cx.error_spanned_by(
                                &s.ident,
                                format!(
                                    "`{}` marks contract parts but is not a `#[handoff]`; add `#[handoff]` above `pub struct {}`",
                                    s.ident, s.ident
                                ),
                            );
                        }
                        let mut args = HandoffArgs::default();
                        for a in take_attrs(&mut s.attrs, "handoff") {
                            if let syn::Meta::List(list) = &a.meta {
                                args = HandoffArgs::parse_all(cx, list.tokens.clone());
                            } else if !matches!(a.meta, syn::Meta::Path(_)) {
                                cx.error_spanned_by(
                                    &a,
                                    "`#[handoff]` takes `(max_bytes = N, max_tokens = N, unbounded_stop, uncited_evidence)` or nothing",
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

/// Whether a struct has a field marked as a contract part (`#[operation]`,
/// ...) or pinned (`#[pin(..)]`): markers only `#[handoff]` reads.
fn marks_parts(s: &syn::ItemStruct) -> bool {
    s.fields.iter().flat_map(|f| &f.attrs).any(|a| {
        crate::model::handoff::PARTS
            .iter()
            .any(|p| a.path().is_ident(p.marker))
            || a.path().is_ident(crate::model::handoff::CONTRACT_MARKER)
            || a.path().is_ident("pin")
    })
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
