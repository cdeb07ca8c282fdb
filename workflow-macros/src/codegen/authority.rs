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
            quote! {
                #[doc = #doc]
                #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
                pub struct #o;
                impl ::workflow_core::__private::Authority for #o {
                    const NAME: &'static str = #text;
                }
            }
        });
    quote!(#(#markers)*)
}
