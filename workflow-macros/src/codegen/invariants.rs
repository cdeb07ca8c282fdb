//! The `Invariants` impl of the `#[invariants]` type.

use proc_macro2::TokenStream;
use quote::quote;

use crate::model::workflow::Workflow;

/// The `Invariants` impl of the `#[invariants]` type: its forbidden fields
/// and its declared checks, in order.
pub fn invariants(wf: &Workflow, root: &syn::Ident) -> TokenStream {
    let args = &wf.invariants_args;
    let forbid = &args.forbid;
    let checks_given = !args.check.is_empty();
    let checks = args.check.iter().map(|path| {
        let name = quote!(#path).to_string().replace(' ', "");
        quote::quote_spanned! {syn::spanned::Spanned::span(path)=>
            if let ::workflow_core::__private::Result::Err(message) = #path(self, transfer) {
                return ::workflow_core::__private::Result::Err((#name, message));
            }
        }
    });
    quote! {
        impl ::workflow_core::__private::Invariants for #root {
            const FORBIDDEN: &'static [&'static str] = &[#(#forbid),*];
            const CHECKS: bool = #checks_given;
            fn check(
                &self,
                transfer: &::workflow_core::__private::TransferView<'_>,
            ) -> ::workflow_core::__private::Result<(), (&'static str, ::workflow_core::__private::String)> {
                #(#checks)*
                let _ = transfer;
                ::workflow_core::__private::Result::Ok(())
            }
            fn to_json(&self) -> ::workflow_core::__private::Result<::workflow_core::__private::serde_json::Value, ::workflow_core::__private::String> {
                ::workflow_core::__private::to_json(self)
            }
        }
    }
}
