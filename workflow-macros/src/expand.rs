//! Each macro's pipeline: parse -> model -> check -> codegen.

use proc_macro2::TokenStream;
use quote::ToTokens;

use crate::check;
use crate::codegen;
use crate::ctxt::Ctxt;
use crate::model::workflow::{Workflow, expand_handoff};
use crate::parse::WorkflowArgs;

/// `#[workflow(..)] mod name { .. }`
pub fn workflow(attr: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::default();
    let args = match syn::parse2::<WorkflowArgs>(attr) {
        Ok(args) => args,
        Err(e) => {
            cx.syn_error(e);
            WorkflowArgs::default()
        }
    };
    let module = match syn::parse2::<syn::ItemMod>(item.clone()) {
        Ok(m) => m,
        Err(_) => {
            let span = syn::parse2::<syn::Item>(item.clone())
                .map(|i| i.into_token_stream())
                .unwrap_or_else(|_| item.clone());
            cx.error_spanned_by(
                span.into_iter().next(),
                "`#[workflow]` goes on an inline module: `mod name { ... }`",
            );
            let errors = cx.finish();
            return quote::quote!(#errors #item);
        }
    };
    let Some(wf) = Workflow::from_module(&cx, args, module.clone()) else {
        let errors = cx.finish();
        return quote::quote!(#errors #module);
    };
    let code = match check::workflow::check(&cx, &wf) {
        Some(resolved) => codegen::workflow::expand(&wf, &resolved),
        None => {
            let (vis, name, items) = (&wf.vis, &wf.name, &wf.items);
            quote::quote!(#vis mod #name { #(#items)* })
        }
    };
    let errors = cx.finish();
    quote::quote!(#errors #code)
}

/// `#[handoff] struct Name { .. }` outside a workflow module.
pub fn handoff(attr: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::default();
    if !attr.is_empty() {
        cx.error_spanned_by(&attr, "`#[handoff]` takes no arguments");
    }
    let code = match syn::parse2::<syn::ItemStruct>(item.clone()) {
        Ok(s) => expand_handoff(&cx, s),
        Err(_) => {
            cx.error_spanned_by(
                item.clone().into_iter().next(),
                "`#[handoff]` goes on a struct with named fields",
            );
            item
        }
    };
    let errors = cx.finish();
    quote::quote!(#errors #code)
}

/// An attribute that only means something inside `#[workflow]`.
pub fn outside(name: &str, item: TokenStream) -> TokenStream {
    let cx = Ctxt::default();
    cx.error_spanned_by(
        item.clone().into_iter().next(),
        format!("`#[{name}]` only works inside a `#[workflow]` module; move this item into one"),
    );
    let errors = cx.finish();
    quote::quote!(#errors #item)
}
