//! Reading the user's syntax: marker attributes, item names, argument
//! types. Facts only; the rules are in `check/`.

use syn::{FnArg, Ident, Item, Pat, Type};

use crate::ctxt::Ctxt;

/// Whether `attr` is `#[name]`, also written `#[workflow_core::name]`.
pub fn is_attr(attr: &syn::Attribute, name: &str) -> bool {
    let path = attr.path();
    path.is_ident(name)
        || (path.segments.len() == 2
            && path.segments[0].ident == "workflow_core"
            && path.segments[1].ident == name)
}

pub fn has_attr(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().any(|a| is_attr(a, name))
}

pub fn take_attrs(attrs: &mut Vec<syn::Attribute>, name: &str) -> Vec<syn::Attribute> {
    let (taken, kept) = attrs.drain(..).partition(|a| is_attr(a, name));
    *attrs = kept;
    taken
}

/// The name an item declares in the module, if any.
pub fn declared_name(item: &Item) -> Option<Ident> {
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
pub fn collect(read: impl FnOnce(&Ctxt)) -> Vec<syn::Error> {
    let scratch = Ctxt::new();
    read(&scratch);
    scratch.into_errors()
}

pub fn typed_arg(arg: &FnArg) -> Option<(&Pat, &Type)> {
    match arg {
        FnArg::Typed(t) => Some((&t.pat, &t.ty)),
        FnArg::Receiver(_) => None,
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
