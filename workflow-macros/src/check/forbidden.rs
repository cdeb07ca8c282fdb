//! Forbidden fields caught where they are declared: a type of the module
//! that travels as a payload (a handoff, the workflow's input or output, a
//! tool's input or output) may not declare a field that
//! `#[invariants(forbid = [..])]` forbids, since every transfer carrying it
//! would be rejected at run time.
//!
//! Field names are the names serde writes (`rename`, `rename_all`,
//! `skip`, `flatten` as `serde_derive` computes them). Fields are followed
//! into the module's own structs (through `Option`, `Vec`, `Box`, ...), as
//! the run-time check looks at every depth; types declared elsewhere are
//! left to the run-time check.

use std::collections::{HashMap, HashSet};

use syn::Ident;
use syn::ext::IdentExt;

use crate::ctxt::Ctxt;
use crate::model::workflow::{ModItem, Workflow};

/// A field as serde writes it.
struct WireField {
    /// The field's name in the source, for the span.
    ident: Ident,
    /// The name serde serializes it under.
    name: String,
    /// `#[serde(flatten)]`: its fields are written in place of it.
    flatten: bool,
    ty: syn::Type,
}

/// The fields serde writes for `item` (skipped ones left out), or `None`
/// when serde would not accept the struct (reported by serde itself).
fn wire_fields(item: &syn::ItemStruct) -> Option<Vec<WireField>> {
    use serde_derive_internals::{Ctxt as SerdeCtxt, Derive, ast};
    let input: syn3::DeriveInput = syn3::parse2(quote::ToTokens::to_token_stream(item)).ok()?;
    let cx = SerdeCtxt::new();
    let private = syn3::Ident::new("__private", proc_macro2::Span::call_site());
    let fields =
        ast::Container::from_ast(&cx, &input, Derive::Serialize, &private).and_then(|container| {
            match container.data {
                ast::Data::Struct(ast::Style::Struct, fields) => Some(
                    fields
                        .iter()
                        .filter(|f| !f.attrs.skip_serializing())
                        .map(|f| {
                            (
                                f.attrs.name().serialize_name().value.clone(),
                                f.attrs.flatten(),
                            )
                        })
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            }
        });
    cx.check().ok()?;
    let fields = fields?;
    // serde's view drops skipped fields; match the rest to ours by name.
    let syn::Fields::Named(named) = &item.fields else {
        return None;
    };
    let mut ours = named.named.iter();
    let mut out = Vec::new();
    for (name, flatten) in fields {
        // Serde keeps field order, so the next field of ours that is not
        // skipped is this one.
        let field = ours.find(|f| !skipped(f))?;
        out.push(WireField {
            ident: field.ident.clone()?,
            name,
            flatten,
            ty: field.ty.clone(),
        });
    }
    Some(out)
}

/// Whether serde never writes this field.
fn skipped(field: &syn::Field) -> bool {
    field.attrs.iter().any(|a| {
        a.path().is_ident("serde")
            && crate::model::handoff::serde_has_any(a, &["skip", "skip_serializing"])
    })
}

/// The module's structs named in `ty` (`Vec<Hit>`, `Option<Box<Hit>>`, ...).
fn named_structs<'s>(
    ty: &syn::Type,
    structs: &'s HashMap<String, syn::ItemStruct>,
) -> Vec<&'s syn::ItemStruct> {
    struct Names(Vec<String>);
    impl<'a> syn::visit::Visit<'a> for Names {
        fn visit_path(&mut self, path: &'a syn::Path) {
            if path.segments.len() == 1 {
                self.0.push(path.segments[0].ident.unraw().to_string());
            }
            syn::visit::visit_path(self, path);
        }
    }
    let mut names = Names(Vec::new());
    syn::visit::Visit::visit_type(&mut names, ty);
    names.0.iter().filter_map(|n| structs.get(n)).collect()
}

/// The dotted paths still to be matched while walking into a struct, as
/// `(the path as declared, its steps left)`; undotted names apply at every
/// depth.
type Pending = Vec<(String, Vec<String>)>;

struct Walk<'w> {
    cx: &'w Ctxt,
    structs: &'w HashMap<String, syn::ItemStruct>,
    undotted: Vec<String>,
    seen: HashSet<(String, Pending)>,
    reported: HashSet<(String, String)>,
}

impl Walk<'_> {
    fn walk(&mut self, item: &syn::ItemStruct, pending: &Pending, via: &str) {
        let key = (item.ident.unraw().to_string(), pending.clone());
        if !self.seen.insert(key) {
            return;
        }
        let Some(fields) = wire_fields(item) else {
            return;
        };
        for field in fields {
            let mut next = Pending::new();
            if field.flatten {
                // Its fields take its place: match them at this level.
                next = pending.clone();
            } else {
                let mut hit = self.undotted.iter().find(|n| **n == field.name).cloned();
                for (declared, steps) in pending {
                    if steps[0] == "*" || steps[0] == field.name {
                        if steps.len() == 1 {
                            hit.get_or_insert_with(|| declared.clone());
                        } else {
                            next.push((declared.clone(), steps[1..].to_vec()));
                        }
                    }
                }
                if let Some(path) = hit {
                    self.report(item, &field, &path, via);
                    continue;
                }
            }
            for inner in named_structs(&field.ty, self.structs) {
                let inner = inner.clone();
                self.walk(&inner, &next, via);
            }
        }
    }

    fn report(&mut self, item: &syn::ItemStruct, field: &WireField, path: &str, via: &str) {
        let owner = item.ident.unraw().to_string();
        if !self
            .reported
            .insert((owner.clone(), field.ident.to_string()))
        {
            return;
        }
        let carried = if owner == via {
            String::new()
        } else {
            format!(" (`{owner}` travels inside `{via}`)")
        };
        self.cx.error_spanned_by(
            &field.ident,
            format!(
                "field `{}` is forbidden by `#[invariants(forbid = [\"{path}\"])]`: every transfer carrying it would be rejected{carried}; remove the field, or mark it `#[serde(skip)]` if it never travels",
                field.name
            ),
        );
    }
}

/// The types of the module that travel as payloads, and the fields
/// they declare that the invariants forbid.
pub fn check(cx: &Ctxt, wf: &Workflow) {
    let forbid = &wf.invariants_args.forbid;
    if forbid.is_empty() {
        return;
    }
    let mut structs: HashMap<String, syn::ItemStruct> = HashMap::new();
    for item in &wf.items {
        let item = match item {
            ModItem::Handoff { model: Ok(h), .. } => h.item.clone(),
            ModItem::Other { tokens, .. } => match syn::parse2::<syn::ItemStruct>(tokens.clone()) {
                Ok(s) => s,
                Err(_) => continue,
            },
            _ => continue,
        };
        structs
            .entry(item.ident.unraw().to_string())
            .or_insert(item);
    }
    let mut roots: Vec<String> = wf.handoffs.iter().map(|h| h.unraw().to_string()).collect();
    let mut used: Vec<&syn::Type> = wf.agents.iter().map(|a| &a.input_ty).collect();
    used.extend(wf.args.output.iter());
    used.extend(wf.tools.iter().flat_map(|t| [&t.input_ty, &t.output_ty]));
    for ty in used {
        for s in named_structs(ty, &structs) {
            let name = s.ident.unraw().to_string();
            if !roots.contains(&name) {
                roots.push(name);
            }
        }
    }
    let pending: Pending = forbid
        .iter()
        .map(|p| p.value())
        .filter(|p| p.contains('.'))
        .map(|p| (p.clone(), p.split('.').map(String::from).collect()))
        .collect();
    let mut walk = Walk {
        cx,
        structs: &structs,
        undotted: forbid
            .iter()
            .map(|p| p.value())
            .filter(|p| !p.contains('.'))
            .collect(),
        seen: HashSet::new(),
        reported: HashSet::new(),
    };
    for root in roots {
        if let Some(item) = structs.get(&root) {
            walk.walk(item, &pending, &root);
        }
    }
}
