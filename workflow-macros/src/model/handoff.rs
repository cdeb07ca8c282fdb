//! The model of a `#[handoff]` struct: its fields and which carry which
//! contract part, with the marker tokens kept for spans.

use syn::{Fields, Ident, ItemStruct, Type};

use crate::ctxt::Ctxt;

/// A contract part: marker name, what it is, an example field.
pub struct Part {
    pub marker: &'static str,
    pub meaning: &'static str,
    pub example: &'static str,
}

/// The contract parts, in the order they are reported.
pub const PARTS: [Part; 5] = [
    Part {
        marker: "operation",
        meaning: "the operation the receiver is asked to do",
        example: "#[operation] pub op: Operation",
    },
    Part {
        marker: "authority",
        meaning: "the authority the receiver is asked to exercise, and until when",
        example: "#[authority] pub scope: Scope<authority::Name>",
    },
    Part {
        marker: "evidence",
        meaning: "the evidence the sender relied on",
        example: "#[evidence] pub evidence: Vec<Evidence>",
    },
    Part {
        marker: "uncertainty",
        meaning: "what the sender left unresolved",
        example: "#[uncertainty] pub open: Vec<Uncertainty>",
    },
    Part {
        marker: "stop",
        meaning: "when the receiver must stop",
        example: "#[stop] pub stop: StopWhen",
    },
];

/// A field marked as a contract part.
pub struct PartField {
    /// The marker attribute's path (`operation`, ...), for spans.
    pub marker: Ident,
    /// Index of the part in [`PARTS`].
    pub part: usize,
    pub field: Ident,
    pub ty: Type,
}

/// The marker of the short form: one field holding the five parts
/// (`#[contract] pub contract: Contract<authority::Name>`).
pub const CONTRACT_MARKER: &str = "contract";

/// The JSON field of each part inside a `Contract<A>`, in [`PARTS`] order.
pub const CONTRACT_FIELDS: [&str; 5] = ["op", "scope", "evidence", "open", "stop"];

/// A field marked `#[contract]`.
pub struct ContractField {
    /// The marker attribute's path, for spans.
    pub marker: Ident,
    pub field: Ident,
    pub ty: Type,
}

/// A field pinned to a root invariant: `#[pin(root_field)] pub field: T`.
pub struct Pin {
    /// The `pin` of the attribute, for spans.
    pub attr: Ident,
    /// The handoff's field.
    pub field: Ident,
    /// The field of the `#[invariants]` struct it must equal.
    pub root: Ident,
}

/// A `#[handoff]` struct.
pub struct Handoff {
    /// The struct with the part markers removed.
    pub item: ItemStruct,
    /// The marked fields, in field order.
    pub parts: Vec<PartField>,
    /// `#[handoff(max_bytes = N, max_tokens = N)]`.
    pub args: crate::parse::HandoffArgs,
    /// Part markers written with arguments (`#[stop(..)]`), by part index.
    pub marker_args: Vec<(usize, syn::Attribute)>,
    /// The fields marked `#[contract]`, in field order.
    pub contracts: Vec<ContractField>,
    /// `#[contract(..)]` markers written with arguments.
    pub contract_args: Vec<syn::Attribute>,
    /// The fields pinned to root invariants, in field order.
    pub pins: Vec<Pin>,
}

impl Handoff {
    /// Builds the model; reports a struct without named fields and gives
    /// it back without its part markers.
    pub fn from_struct(cx: &Ctxt, mut item: ItemStruct) -> Result<Handoff, Box<ItemStruct>> {
        if !matches!(item.fields, Fields::Named(_)) {
            for field in item.fields.iter_mut() {
                field.attrs.retain(|a| {
                    !PARTS.iter().any(|p| a.path().is_ident(p.marker))
                        && !a.path().is_ident(CONTRACT_MARKER)
                        && !a.path().is_ident("pin")
                });
            }
            cx.error_spanned_by(
                &item.ident,
                "`#[handoff]` needs a struct with named fields: the contract parts are marked fields",
            );
            return Err(Box::new(item));
        }
        let Fields::Named(named) = &mut item.fields else {
            return Err(Box::new(item));
        };
        let mut parts = Vec::new();
        let mut marker_args = Vec::new();
        let mut contracts = Vec::new();
        let mut contract_args = Vec::new();
        let mut pins = Vec::new();
        for field in named.named.iter_mut() {
            let Some(ident) = field.ident.clone() else {
                continue;
            };
            for attr in take_pins(field) {
                let Some(pin) = attr.path().get_ident().cloned() else {
                    continue;
                };
                match attr.parse_args::<Ident>() {
                    Ok(root) if pins.iter().all(|p: &Pin| p.field != ident) => pins.push(Pin {
                        attr: pin,
                        field: ident.clone(),
                        root,
                    }),
                    Ok(_) => cx.error_spanned_by(
                        &attr,
                        "a field is pinned to one root invariant; keep one `#[pin(..)]`",
                    ),
                    Err(_) => cx.error_spanned_by(
                        &attr,
                        "`#[pin]` names the root invariant this field must equal: `#[pin(tenant)]`",
                    ),
                }
            }
            let mut markers = Vec::new();
            field.attrs.retain(|attr| {
                if let Some(marker) = attr.path().get_ident()
                    && marker == CONTRACT_MARKER
                {
                    if !matches!(attr.meta, syn::Meta::Path(_)) {
                        contract_args.push(attr.clone());
                    }
                    contracts.push(ContractField {
                        marker: marker.clone(),
                        field: ident.clone(),
                        ty: field.ty.clone(),
                    });
                    return false;
                }
                let part = attr
                    .path()
                    .get_ident()
                    .and_then(|id| PARTS.iter().position(|p| id == p.marker));
                match (part, attr.path().get_ident()) {
                    (Some(part), Some(marker)) => {
                        if !matches!(attr.meta, syn::Meta::Path(_)) {
                            marker_args.push((part, attr.clone()));
                        }
                        markers.push((part, marker.clone()));
                        false
                    }
                    _ => true,
                }
            });
            for (part, marker) in markers {
                parts.push(PartField {
                    marker,
                    part,
                    field: ident.clone(),
                    ty: field.ty.clone(),
                });
            }
        }
        Ok(Handoff {
            item,
            parts,
            marker_args,
            contracts,
            contract_args,
            pins,
            args: crate::parse::HandoffArgs::default(),
        })
    }

    /// Whether `parts[i]` is a second mark on a field already marked
    /// (reported: one field, one contract part).
    pub fn is_second_mark(&self, i: usize) -> bool {
        self.parts[..i]
            .iter()
            .any(|earlier| earlier.field == self.parts[i].field)
    }

    /// The marked fields that count: those marked once. A field marked
    /// twice (reported) counts for neither part, so no type error follows
    /// on it: which part it is, is for the user to say first.
    pub fn counted_parts(&self) -> impl Iterator<Item = &PartField> {
        self.parts.iter().filter(|p| {
            self.parts.iter().filter(|q| q.field == p.field).count() == 1
                && !self.contracts.iter().any(|c| c.field == p.field)
        })
    }

    /// The `#[contract]` field that counts: the first one, marked once
    /// (a field also marked as a part is reported and counts for nothing).
    pub fn contract_field(&self) -> Option<&ContractField> {
        self.contracts
            .first()
            .filter(|c| !self.parts.iter().any(|p| p.field == c.field))
            .filter(|c| self.contracts.iter().filter(|d| d.field == c.field).count() == 1)
    }
}

/// Takes the `#[pin(..)]` attributes off a field.
fn take_pins(field: &mut syn::Field) -> Vec<syn::Attribute> {
    let (pins, rest) = std::mem::take(&mut field.attrs)
        .into_iter()
        .partition(|a| a.path().is_ident("pin"));
    field.attrs = rest;
    pins
}

/// The serde options a contract part may carry: names only.
pub const PART_SERDE_ALLOWED: [&str; 2] = ["rename", "alias"];

/// The schemars options a handoff's fields may carry: documentation only.
pub const FIELD_SCHEMARS_ALLOWED: [&str; 4] = ["title", "description", "example", "deprecated"];

/// Whether `attr` is `#[cfg(..)]`, which would make a field disappear.
pub fn is_cfg(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("cfg")
}

/// The serde options a handoff struct may carry: none that changes what is
/// read or written (`from`, `into`, `default`, `remote`, ... are refused).
pub const CONTAINER_SERDE_ALLOWED: [&str; 5] = [
    "rename",
    "rename_all",
    "deny_unknown_fields",
    "expecting",
    "bound",
];

/// Whether a `#[cfg_attr(..)]` carries serde or schemars options, which
/// the rules could not see.
pub fn cfg_attr_hides_options(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("cfg_attr")
        && quote::ToTokens::to_token_stream(&attr.meta)
            .into_iter()
            .any(|tt| matches!(&tt, proc_macro2::TokenTree::Group(g) if g.stream().into_iter().any(|t| matches!(&t, proc_macro2::TokenTree::Ident(i) if i == "serde" || i == "schemars"))))
}

/// The container serde options that leave what serde writes as the
/// derive's plain form (a map of every field under its own name).
pub const PLAIN_FORM_CONTAINER_SERDE: [&str; 3] = ["crate", "deny_unknown_fields", "expecting"];

/// Attributes that cannot change what serde writes for a struct (with the
/// serde ones checked apart). Any other (`cfg_attr`, an attribute macro
/// such as `serde_as` expanded after `#[handoff]`) could, so a struct that
/// carries one gets no direct writer.
const INERT_ATTRS: [&str; 10] = [
    "doc",
    "schemars",
    "allow",
    "expect",
    "warn",
    "deny",
    "derive",
    "must_use",
    "non_exhaustive",
    "repr",
];

/// Whether `attr` is one of [`INERT_ATTRS`].
fn is_inert(attr: &syn::Attribute) -> bool {
    INERT_ATTRS.iter().any(|k| attr.path().is_ident(k))
}

/// Whether `item` (as emitted, its refused options and part markers left
/// out) serializes in the derive's plain form: named fields, no generics,
/// no serde option on any field, none on the container but
/// [`PLAIN_FORM_CONTAINER_SERDE`], and no attribute but [`INERT_ATTRS`]
/// anywhere. Only such a struct gets a direct MessagePack writer, which
/// must write exactly what serde writes.
pub fn has_plain_serde_form(item: &syn::ItemStruct) -> bool {
    let syn::Fields::Named(named) = &item.fields else {
        return false;
    };
    let container_plain = item.attrs.iter().all(|a| {
        if !a.path().is_ident("serde") {
            return is_inert(a);
        }
        let syn::Meta::List(_) = &a.meta else {
            return false;
        };
        a.parse_nested_meta(|meta| {
            if !PLAIN_FORM_CONTAINER_SERDE
                .iter()
                .any(|k| meta.path.is_ident(k))
            {
                return Err(meta.error("not plain"));
            }
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        })
        .is_ok()
    });
    let fields_plain = named.named.iter().all(|f| f.attrs.iter().all(is_inert));
    item.generics.params.is_empty() && container_plain && fields_plain
}

/// Whether a `#[serde(..)]` attribute holds a key outside `allowed`.
pub fn serde_has_other(attr: &syn::Attribute, allowed: &[&str]) -> bool {
    let mut found = false;
    for_each_serde_key(attr, |key| {
        found |= !allowed.iter().any(|k| key.is_ident(k))
    });
    found
}

/// Serde options that let a field be absent or dropped on the wire.
pub const DROPPING: [&str; 6] = [
    "default",
    "skip",
    "skip_deserializing",
    "skip_serializing",
    "skip_serializing_if",
    "flatten",
];

/// Calls `f` with the path of every `key` or `key = ..` in `#[serde(..)]`.
pub fn for_each_serde_key(attr: &syn::Attribute, mut f: impl FnMut(&syn::Path)) {
    if let syn::Meta::List(_) = &attr.meta {
        let _ = attr.parse_nested_meta(|meta| {
            f(&meta.path);
            // Skip a value (`= "..."`) or a nested list so parsing goes on.
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _ = meta.parse_nested_meta(|_| Ok(()));
            }
            Ok(())
        });
    }
}

/// Whether a `#[serde(..)]` attribute holds one of `keys`.
pub fn serde_has_any(attr: &syn::Attribute, keys: &[&str]) -> bool {
    let mut found = false;
    for_each_serde_key(attr, |key| found |= keys.iter().any(|k| key.is_ident(k)));
    found
}

/// Whether `ty` is spelled `Option<..>`.
pub fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().is_some_and(|s| s.ident == "Option")
        }
        Type::Group(g) => is_option(&g.elem),
        Type::Paren(p) => is_option(&p.elem),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::has_plain_serde_form;

    fn plain(item: proc_macro2::TokenStream) -> bool {
        has_plain_serde_form(&syn::parse2(item).expect("a struct"))
    }

    /// Only a struct whose serde form is the derive's plain one gets a
    /// direct writer: any option, attribute or shape that could change what
    /// serde writes leaves it to serde.
    #[test]
    fn a_plain_serde_form_is_told_from_every_other() {
        use quote::quote;
        assert!(plain(quote!(
            struct T {
                a: u8,
                b: String,
            }
        )));
        assert!(plain(quote!(
            struct T {}
        )));
        assert!(plain(quote! {
            /// Documented.
            #[derive(Debug, Clone)]
            #[serde(deny_unknown_fields, expecting = "a T", crate = "x")]
            #[schemars(title = "T")]
            #[allow(dead_code)]
            struct T {
                /// Documented.
                #[schemars(description = "a")]
                a: u8,
            }
        }));
        for item in [
            quote!(
                #[serde(rename_all = "camelCase")]
                struct T {
                    a: u8,
                }
            ),
            quote!(
                #[serde(rename = "U")]
                struct T {
                    a: u8,
                }
            ),
            quote!(
                #[serde(deny_unknown_fields, tag = "t")]
                struct T {
                    a: u8,
                }
            ),
            quote!(
                #[serde = "x"]
                struct T {
                    a: u8,
                }
            ),
            quote!(
                #[serde(deny_unknown_fields)]
                #[serde(into = "U")]
                struct T {
                    a: u8,
                }
            ),
            quote!(
                #[cfg_attr(test, serde(rename_all = "camelCase"))]
                struct T {
                    a: u8,
                }
            ),
            quote!(
                #[serde_as]
                struct T {
                    a: u8,
                }
            ),
            quote!(
                struct T {
                    #[serde(rename = "b")]
                    a: u8,
                }
            ),
            quote!(
                struct T {
                    #[serde(skip_serializing_if = "is_zero")]
                    a: u8,
                }
            ),
            quote!(
                struct T {
                    #[serde_as(as = "DisplayFromStr")]
                    a: u8,
                }
            ),
            quote!(
                struct T {
                    #[cfg_attr(test, serde(skip))]
                    a: u8,
                }
            ),
            quote!(
                struct T<X> {
                    a: X,
                }
            ),
            quote!(
                struct T(u8);
            ),
            quote!(
                struct T;
            ),
        ] {
            assert!(!plain(item.clone()), "plain: {item}");
        }
    }
}
