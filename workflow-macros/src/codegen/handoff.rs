//! Code for a `#[handoff]` struct: the serde and schemars derives (unknown
//! fields denied) and the `Handoff` impl the executor reads at the receipt.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::model::handoff::{Handoff, PARTS};

/// The derives every payload type gets; `deny` adds `deny_unknown_fields`.
pub fn derives(item: &syn::ItemStruct, deny: bool) -> TokenStream {
    let has_deny = item.attrs.iter().any(|a| {
        a.path().is_ident("serde")
            && a.meta
                .to_token_stream_string()
                .contains("deny_unknown_fields")
    });
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

trait MetaText {
    fn to_token_stream_string(&self) -> String;
}

impl MetaText for syn::Meta {
    fn to_token_stream_string(&self) -> String {
        quote::ToTokens::to_token_stream(self).to_string()
    }
}

/// The struct with its derives, and (when the model is complete) the
/// `Handoff` impl.
pub fn expand(h: &Handoff, complete: bool) -> TokenStream {
    let item = &h.item;
    let derives = derives(item, true);
    let body = quote! { #derives #item };
    if !complete {
        return body;
    }
    let (Some(scope), Some(stop)) = (h.part(1), h.part(4)) else {
        return body;
    };
    let ident = &item.ident;
    let scope_field = &scope.field;
    let scope_ty = &scope.ty;
    let stop_field = &stop.field;
    let authority =
        quote_spanned!(scope_ty.span()=> <#scope_ty as ::workflow_core::AuthorityScope>::Authority);
    let stop_view =
        quote_spanned!(stop.ty.span()=> &self.#stop_field as &dyn ::workflow_core::StopConditions);
    let parts = h.parts.iter().map(|p| {
        let marker = PARTS[p.part].marker;
        let field = p.field.to_string();
        quote!((#marker, #field))
    });
    quote! {
        #body

        impl ::workflow_core::Handoff for #ident {
            type Authority = #authority;
            const PARTS: &'static [(&'static str, &'static str)] = &[#(#parts),*];
            fn contract(&self) -> ::workflow_core::ContractView<'_> {
                ::workflow_core::ContractView {
                    authority: <#authority as ::workflow_core::Authority>::NAME,
                    expires: ::workflow_core::AuthorityScope::expiry(&self.#scope_field),
                    stop: #stop_view,
                }
            }
        }
    }
}
