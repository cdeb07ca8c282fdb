//! Each macro's pipeline: parse -> model -> check -> codegen.

use proc_macro2::TokenStream;
use quote::ToTokens;

use crate::check;
use crate::codegen;
use crate::ctxt::Ctxt;
use crate::model::handoff::Handoff;
use crate::model::workflow::Workflow;
use crate::parse::{HandoffArgs, WorkflowArgs};

/// The token to blame for an item in the wrong place: its name, else its
/// first token.
fn item_name(item: &TokenStream) -> TokenStream {
    let ident = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(i)) => Some(i.sig.ident),
        Ok(syn::Item::Struct(i)) => Some(i.ident),
        Ok(syn::Item::Enum(i)) => Some(i.ident),
        Ok(syn::Item::Union(i)) => Some(i.ident),
        Ok(syn::Item::Mod(i)) => Some(i.ident),
        Ok(syn::Item::Trait(i)) => Some(i.ident),
        Ok(syn::Item::Type(i)) => Some(i.ident),
        Ok(syn::Item::Const(i)) => Some(i.ident),
        Ok(syn::Item::Static(i)) => Some(i.ident),
        _ => None,
    };
    match ident {
        Some(ident) => ident.into_token_stream(),
        None => item.clone().into_iter().next().into_token_stream(),
    }
}

/// `#[workflow(..)] mod name { .. }`
pub fn workflow(attr: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let args = WorkflowArgs::parse_all(&cx, attr);
    let module = match syn::parse2::<syn::ItemMod>(item.clone()) {
        Ok(m) => m,
        Err(_) => {
            cx.error_spanned_by(
                item_name(&item),
                "`#[workflow]` goes on an inline module: `mod name { ... }`",
            );
            let errors = cx.check();
            return quote::quote!(#errors #item);
        }
    };
    let Some(wf) = Workflow::from_module(&cx, args, module.clone()) else {
        let errors = cx.check();
        return quote::quote!(#errors #module);
    };
    let code = match check::workflow::check(&cx, &wf) {
        Some(resolved) => codegen::workflow::expand(&wf, &resolved),
        None => {
            let (vis, name) = (&wf.vis, &wf.name);
            let items = codegen::workflow::items(&wf);
            let (inner, outer): (Vec<_>, Vec<_>) = wf
                .attrs
                .iter()
                .partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
            quote::quote!(#(#outer)* #vis mod #name { #(#inner)* #(#items)* })
        }
    };
    let errors = cx.check();
    quote::quote!(#errors #code)
}

/// `#[handoff] struct Name { .. }` outside a workflow module.
pub fn handoff(attr: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let args = HandoffArgs::parse_all(&cx, attr);
    let code = match syn::parse2::<syn::ItemStruct>(item.clone()) {
        Ok(s) => {
            let model = Handoff::from_struct(&cx, s).map(|mut model| {
                model.args = args;
                check::contract::check(&cx, &model);
                for pin in &model.pins {
                    cx.error_spanned_by(
                        &pin.attr,
                        "`#[pin]` compares a field with the workflow's root invariants: declare this handoff inside its `#[workflow]` module",
                    );
                }
                model
            });
            codegen::workflow::handoff(&model)
        }
        Err(_) => {
            cx.error_spanned_by(
                item_name(&item),
                "`#[handoff]` goes on a struct with named fields",
            );
            // An enum or a union still reads as a handoff elsewhere, so
            // that only this error shows.
            match syn::parse2::<syn::DeriveInput>(item.clone()) {
                Ok(d) => {
                    let impls = codegen::rejected::payload_impls(&d.ident, &d.generics);
                    quote::quote!(#item #impls)
                }
                Err(_) => item,
            }
        }
    };
    let errors = cx.check();
    quote::quote!(#errors #code)
}

/// An attribute that only means something inside `#[workflow]`.
pub fn outside(name: &str, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let message = match name {
        "pre" | "post" => format!(
            "`#[{name}]` is a condition of an agent: it goes on an `#[agent]` function inside a `#[workflow]` module"
        ),
        _ => {
            format!("`#[{name}]` only works inside a `#[workflow]` module; move this item into one")
        }
    };
    cx.error_spanned_by(item_name(&item), message);
    let errors = cx.check();
    quote::quote!(#errors #item)
}
