//! Code for a `#[handoff]` struct: the serde and schemars derives (unknown
//! fields denied) and the `Handoff` impl the executor reads at the receipt.
//!
//! When a contract rule failed, the struct is still emitted, without the
//! reported attributes, with a `Handoff` impl over the parts it has: the
//! user sees the rule's error and nothing that follows from it.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::model::handoff::{
    CONTAINER_SERDE_ALLOWED, FIELD_SCHEMARS_ALLOWED, Handoff, PART_SERDE_ALLOWED, PARTS,
    cfg_attr_hides_options, has_plain_serde_form, is_cfg, is_option, serde_has_any,
    serde_has_other,
};
use crate::model::syntax::strip_own_derives;

/// The derives every payload type gets; `deny` adds `deny_unknown_fields`.
pub fn derives(item: &syn::ItemStruct, deny: bool) -> TokenStream {
    let has_deny = item
        .attrs
        .iter()
        .any(|a| a.path().is_ident("serde") && serde_has_any(a, &["deny_unknown_fields"]));
    let deny = if deny && !has_deny {
        quote!(, deny_unknown_fields)
    } else {
        quote!()
    };
    quote! {
        #[derive(
            ::workflow_core::__private::serde::Serialize,
            ::workflow_core::__private::serde::Deserialize,
            ::workflow_core::__private::schemars::JsonSchema
        )]
        #[serde(crate = "::workflow_core::__private::serde" #deny)]
        #[schemars(crate = "::workflow_core::__private::schemars")]
    }
}

/// Whether the rules refused `attr` (a serde option outside `allowed`, or a
/// `cfg_attr` hiding options): it is left out after being reported.
fn refused(attr: &syn::Attribute, allowed: &[&str]) -> bool {
    let serde_refused = attr.path().is_ident("serde") && serde_has_other(attr, allowed);
    serde_refused || cfg_attr_hides_options(attr)
}

/// The struct without what the rules reported: droppable serde options on
/// parts, container options other than names, `cfg_attr`s hiding options,
/// the user's own serde derives.
///
/// A part gets no attribute of its own to be required: its type must
/// implement its part's trait (asked in `contract()`, or by an assertion for
/// the operation), which no `Option` does under any spelling, and serde
/// reads an absent field of any type that does not ask for an option as
/// the `missing field` error. (A per-field `deserialize_with` did the same
/// at the cost of two wrapper types with their `Deserialize` impls per
/// part: most of what the macro's output cost to check over a hand-written
/// workflow.)
fn cleaned(h: &Handoff) -> syn::ItemStruct {
    let mut item = h.item.clone();
    item.attrs.retain(|a| !refused(a, &CONTAINER_SERDE_ALLOWED));
    // Reported by the contract rules (`check_container`).
    strip_own_derives(&mut item.attrs);
    if let syn::Fields::Named(named) = &mut item.fields {
        for field in named.named.iter_mut() {
            field.attrs.retain(|a| {
                let schemars_refused =
                    a.path().is_ident("schemars") && serde_has_other(a, &FIELD_SCHEMARS_ALLOWED);
                !refused(a, &PART_SERDE_ALLOWED) && !schemars_refused && !is_cfg(a)
            });
        }
    }
    item
}

/// The struct with its derives and its `Handoff` impl.
pub fn expand(h: &Handoff) -> TokenStream {
    let item = cleaned(h);
    let derives = derives(&item, true);
    let ident = item.ident.clone();
    if !item.generics.params.is_empty() {
        // Reported: a handoff cannot be generic. No impl, no follow-on error.
        let item = item.into_token_stream();
        return quote!(#derives #item);
    }
    // The first field of each part; an `Option` part (reported) counts as
    // absent, so its type is not asked for the part's trait.
    // A field marked twice (reported) counts as absent too.
    let first = |part: usize| {
        h.counted_parts()
            .find(|p| p.part == part)
            .filter(|p| !is_option(&p.ty))
    };
    if let Some(c) = h.contract_field().filter(|c| !is_option(&c.ty)) {
        return short_form(h, &item, &derives, c);
    }
    let (authority, expires) = match first(1) {
        Some(scope) => {
            let (field, ty) = (&scope.field, &scope.ty);
            (
                quote_spanned!(ty.span()=> <#ty as ::workflow_core::__private::AuthorityScope>::Authority),
                quote_spanned!(ty.span()=> <#ty as ::workflow_core::__private::AuthorityScope>::expiry(&self.#field)),
            )
        }
        None => (
            quote!(::workflow_core::__private::UnknownAuthority),
            quote!(::workflow_core::__private::Expiry::Never),
        ),
    };
    // The other parts' types are asked for their part's trait where the
    // receipt reads them; the operation is only asked here. None of the
    // traits is implemented for `Option`, whatever its spelling.
    let operation = first(0).map(|op| {
        let ty = &op.ty;
        quote_spanned!(ty.span()=> const _: () = ::workflow_core::__private::assert_operation_part::<#ty>();)
    });
    let stop = match first(4) {
        Some(stop) => {
            let (field, ty) = (&stop.field, &stop.ty);
            quote_spanned!(ty.span()=> &self.#field as &dyn ::workflow_core::__private::StopConditions)
        }
        None => quote!(&::workflow_core::__private::NO_STOP),
    };
    let open = match first(3) {
        Some(open) => {
            let (field, ty) = (&open.field, &open.ty);
            quote_spanned!(ty.span()=> &self.#field as &dyn ::workflow_core::__private::OpenQuestions)
        }
        None => quote!(&::workflow_core::__private::NO_OPEN),
    };
    let evidence = match first(2) {
        Some(evidence) => {
            let (field, ty) = (&evidence.field, &evidence.ty);
            quote_spanned!(ty.span()=> &self.#field as &dyn ::workflow_core::__private::EvidenceList)
        }
        None => quote!(&::workflow_core::__private::NO_EVIDENCE),
    };
    let parts = h.counted_parts().map(|p| {
        let marker = PARTS[p.part].marker;
        let field = p.field.to_string();
        quote!((#marker, #field))
    });
    let parts = quote!(&[#(#parts),*]);
    let view = View {
        authority,
        expires,
        stop,
        open,
        evidence,
    };
    let imp = impl_handoff(h, &ident, &parts, &view);
    let writer = direct_writer(&item);
    let item = item.into_token_stream();
    quote! {
        #derives
        #item

        #operation

        #imp

        #writer
    }
}

/// MessagePack's header of a map of `len` entries, or of a text of `len`
/// bytes, as `rmp` writes it.
fn header(len: usize, map: bool) -> Vec<u8> {
    let (fix, fix_below) = if map { (0x80u8, 16) } else { (0xa0u8, 32) };
    if len < fix_below {
        vec![fix | len as u8]
    } else if !map && len < 256 {
        vec![0xd9, len as u8]
    } else if len < 65_536 {
        let mut v = vec![if map { 0xde } else { 0xda }];
        v.extend_from_slice(&(len as u16).to_be_bytes());
        v
    } else {
        let mut v = vec![if map { 0xdf } else { 0xdb }];
        v.extend_from_slice(&(len as u32).to_be_bytes());
        v
    }
}

/// The direct MessagePack writer of a struct in serde's plain form (see
/// `has_plain_serde_form`): each field's name as a constant (the map's
/// header with the first), handed to the field's value to write with its
/// own first bytes at once (directly when its type has a writer, through
/// serde otherwise). Byte for
/// byte what serde's derive writes through the encoder; nothing for any
/// other struct.
fn direct_writer(item: &syn::ItemStruct) -> Option<TokenStream> {
    if !has_plain_serde_form(item) {
        return None;
    }
    let syn::Fields::Named(named) = &item.fields else {
        return None;
    };
    let mut prefix = header(named.named.len(), true);
    let mut writes = Vec::new();
    for field in &named.named {
        let ident = field.ident.as_ref()?;
        let name = syn::ext::IdentExt::unraw(ident).to_string();
        prefix.extend(header(name.len(), false));
        prefix.extend_from_slice(name.as_bytes());
        let bytes = syn::LitByteStr::new(&prefix, proc_macro2::Span::call_site());
        writes.push(quote! {
            (&::workflow_core::__private::Direct(&self.#ident))
                .write_keyed_part(#bytes, __wf_out, __wf_depth)?;
        });
        prefix.clear();
    }
    let open = if prefix.is_empty() {
        quote!(let __wf_depth = ::workflow_core::__private::open_container(__wf_depth)?;)
    } else {
        // No field: the empty map's header alone.
        let bytes = syn::LitByteStr::new(&prefix, proc_macro2::Span::call_site());
        writes.push(quote!(__wf_out.extend_from_slice(#bytes);));
        quote!(::workflow_core::__private::open_container(__wf_depth)?;)
    };
    let ident = &item.ident;
    Some(quote! {
        impl ::workflow_core::__private::WriteMsgpack for #ident {
            fn write_msgpack(
                &self,
                __wf_out: &mut ::workflow_core::__private::Vec<::core::primitive::u8>,
                __wf_depth: ::core::primitive::u32,
            ) -> ::workflow_core::__private::Result<(), ::workflow_core::__private::GiveUp> {
                use ::workflow_core::__private::{ViaDirect as _, ViaSerde as _};
                #open
                #(#writes)*
                ::workflow_core::__private::Result::Ok(())
            }
        }
    })
}

/// What the generated `contract()` reads, part by part.
struct View {
    authority: TokenStream,
    expires: TokenStream,
    stop: TokenStream,
    open: TokenStream,
    evidence: TokenStream,
}

/// The `Handoff` impl over the parts as `view` reads them.
fn impl_handoff(h: &Handoff, ident: &syn::Ident, parts: &TokenStream, view: &View) -> TokenStream {
    let limit =
        |n: &Option<crate::model::value::Number<u64>>| match n.as_ref().and_then(|n| n.get()) {
            Some(n) => quote!(::workflow_core::__private::Option::Some(#n)),
            None => quote!(::workflow_core::__private::Option::None),
        };
    let (max_bytes, max_tokens) = (limit(&h.args.max_bytes), limit(&h.args.max_tokens));
    let unbounded_stop = h.args.unbounded_stop.is_some();
    let uncited_evidence = h.args.uncited_evidence.is_some();
    let View {
        authority,
        expires,
        stop,
        open,
        evidence,
    } = view;
    quote! {
        impl ::workflow_core::__private::Handoff for #ident {
            type Authority = #authority;
            const PARTS: &'static [(&'static str, &'static str)] = #parts;
            const MAX_BYTES: ::workflow_core::__private::Option<u64> = #max_bytes;
            const MAX_TOKENS: ::workflow_core::__private::Option<u64> = #max_tokens;
            const UNBOUNDED_STOP: bool = #unbounded_stop;
            const UNCITED_EVIDENCE: bool = #uncited_evidence;
            fn contract(&self) -> ::workflow_core::__private::ContractView<'_> {
                ::workflow_core::__private::ContractView {
                    parts: <Self as ::workflow_core::__private::Handoff>::PARTS,
                    authority: <#authority as ::workflow_core::__private::Authority>::NAME,
                    expires: #expires,
                    stop: #stop,
                    open: #open,
                    evidence: #evidence,
                    max_bytes: <Self as ::workflow_core::__private::Handoff>::MAX_BYTES,
                    max_tokens: <Self as ::workflow_core::__private::Handoff>::MAX_TOKENS,
                    unbounded_stop: <Self as ::workflow_core::__private::Handoff>::UNBOUNDED_STOP,
                    uncited_evidence: <Self as ::workflow_core::__private::Handoff>::UNCITED_EVIDENCE,
                    open_ended: <#authority as ::workflow_core::__private::Authority>::OPEN_ENDED,
                }
            }
        }
    }
}

/// The short form: every part read from the `#[contract]` field through
/// `ContractParts` (asked of its type, so a type that is not a
/// `Contract<A>` is reported once, on the field). `PARTS` names each part
/// by its path, `contract.op`, ...
fn short_form(
    h: &Handoff,
    item: &syn::ItemStruct,
    derives: &TokenStream,
    c: &crate::model::handoff::ContractField,
) -> TokenStream {
    let (field, ty) = (&c.field, &c.ty);
    let parts = PARTS
        .iter()
        .zip(crate::model::handoff::CONTRACT_FIELDS)
        .map(|(part, inner)| {
            let marker = part.marker;
            let path = format!("{field}.{inner}");
            quote!((#marker, #path))
        });
    let parts = quote!(&[#(#parts),*]);
    let bound = quote_spanned!(ty.span()=> <#ty as ::workflow_core::__private::ContractParts>);
    let view = View {
        authority: quote_spanned!(ty.span()=> #bound::Authority),
        expires: quote_spanned!(ty.span()=> #bound::expiry(&self.#field)),
        stop: quote_spanned!(ty.span()=> #bound::stop(&self.#field)),
        open: quote_spanned!(ty.span()=> #bound::open(&self.#field)),
        evidence: quote_spanned!(ty.span()=> #bound::evidence(&self.#field)),
    };
    let ident = &item.ident;
    let imp = impl_handoff(h, ident, &parts, &view);
    let writer = direct_writer(item);
    let item = item.to_token_stream();
    quote! {
        #derives
        #item

        #imp

        #writer
    }
}
