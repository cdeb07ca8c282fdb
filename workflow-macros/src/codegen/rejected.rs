//! Stand-ins for a rejected `#[handoff]` (generic, not a struct, or a
//! struct without named fields): the item is reported once, and the impls
//! here make it a handoff payload to the rest of the code, so that an agent
//! taking it as input gets no second error saying "mark the type
//! `#[handoff]`" (as thiserror emits a stub impl on error).
//!
//! Nothing here runs: the crate does not compile while the item is
//! reported. The bodies fail without panicking all the same.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::{Generics, Ident};

/// The `Handoff` impl of a rejected handoff: no parts, the authority every
/// agent owns (as for a missing `#[authority]` part).
pub fn handoff_impl(ident: &Ident, generics: &Generics) -> TokenStream {
    let (impl_g, ty_g, where_clause) = generics.split_for_impl();
    // A generic type is a payload only for some parameters; the bound says
    // which (without it, the impl would fail for every other parameter).
    let bound = if generics.params.is_empty() {
        quote!(#where_clause)
    } else {
        let mut clause = where_clause
            .cloned()
            .unwrap_or_else(|| syn::parse_quote!(where));
        // `Payload`, spelled out (it is not named in `__private`).
        clause.predicates.push(syn::parse_quote!(
            Self: ::workflow_core::__private::serde::Serialize
                + for<'__de> ::workflow_core::__private::serde::Deserialize<'__de>
                + ::workflow_core::__private::schemars::JsonSchema
                + ::core::marker::Send
                + ::core::marker::Sync
                + 'static
        ));
        quote!(#clause)
    };
    let p = quote!(::workflow_core::__private);
    quote! {
        impl #impl_g #p::Handoff for #ident #ty_g #bound {
            type Authority = #p::UnknownAuthority;
            const PARTS: &'static [(&'static str, &'static str)] = &[];
            fn contract(&self) -> #p::ContractView<'_> {
                #p::ContractView {
                    parts: &[],
                    authority: <#p::UnknownAuthority as #p::Authority>::NAME,
                    expires: #p::Expiry::Never,
                    stop: &#p::NO_STOP,
                    open: &#p::NO_OPEN,
                    evidence: &#p::NO_EVIDENCE,
                    max_bytes: #p::Option::None,
                    max_tokens: #p::Option::None,
                    unbounded_stop: false,
                    uncited_evidence: false,
                    open_ended: false,
                }
            }
        }
    }
}

/// The serde and schemars impls a rejected handoff does not get from the
/// derives (which would report the same shape again), then its `Handoff`
/// impl.
pub fn payload_impls(ident: &Ident, generics: &Generics) -> TokenStream {
    let (impl_g, ty_g, where_clause) = generics.split_for_impl();
    let mut de_generics = generics.clone();
    de_generics.params.insert(0, syn::parse_quote!('__de));
    let (de_impl_g, _, _) = de_generics.split_for_impl();
    let p = quote!(::workflow_core::__private);
    let name = ident.unraw().to_string();
    let why = format!("`{name}` is not a valid `#[handoff]` (reported at compile time)");
    let handoff = handoff_impl(ident, generics);
    quote! {
        impl #impl_g #p::serde::Serialize for #ident #ty_g #where_clause {
            fn serialize<__S: #p::serde::Serializer>(
                &self,
                _: __S,
            ) -> #p::Result<__S::Ok, __S::Error> {
                #p::Result::Err(<__S::Error as #p::serde::ser::Error>::custom(#why))
            }
        }
        impl #de_impl_g #p::serde::Deserialize<'__de> for #ident #ty_g #where_clause {
            fn deserialize<__D: #p::serde::Deserializer<'__de>>(
                _: __D,
            ) -> #p::Result<Self, __D::Error> {
                #p::Result::Err(<__D::Error as #p::serde::de::Error>::custom(#why))
            }
        }
        impl #impl_g #p::schemars::JsonSchema for #ident #ty_g #where_clause {
            fn schema_name() -> #p::Cow<'static, str> {
                #p::Cow::Borrowed(#name)
            }
            fn json_schema(_: &mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema {
                #p::schemars::Schema::from(false)
            }
        }
        #handoff
    }
}
