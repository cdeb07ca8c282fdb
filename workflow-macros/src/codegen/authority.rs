//! The authorities of a workflow: one unit type per name in the agents'
//! `owns = [...]` lists.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;

use crate::model::workflow::Workflow;

/// The items of the `authority` module.
pub fn authorities(wf: &Workflow) -> TokenStream {
    let mut seen = std::collections::HashSet::new();
    let owned = wf.agents.iter().flat_map(|a| &a.args.owns);
    let markers = owned
        .filter(|o| seen.insert(o.unraw().to_string()))
        .map(|o| {
            let text = o.unraw().to_string();
            let doc = format!("The authority `{text}`.");
            let open_ended = wf
                .args
                .open_ended
                .iter()
                .flatten()
                .any(|a| a.unraw() == text);
            // Only an open-ended authority says so: the others keep the
            // trait's default, and their expansion reads as before.
            let open = open_ended.then(|| {
                quote! {
                    const OPEN_ENDED: bool = true;
                }
            });
            let marker = open_ended.then(|| {
                quote! {
                    impl ::workflow_core::__private::OpenEnded for #o {}
                }
            });
            quote! {
                #[doc = #doc]
                #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
                pub struct #o;
                impl ::workflow_core::__private::Authority for #o {
                    const NAME: &'static str = #text;
                    #open
                }
                #marker
            }
        });
    quote!(#(#markers)*)
}
