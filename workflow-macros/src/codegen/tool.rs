//! The tools of a workflow: one unit type per `#[tool]` in the `tools`
//! module, and, beside the user's items, the tool's function sealed with
//! its `Tool` impl.
//!
//! The function is emitted inside an anonymous `const _: () = { .. };`
//! block: nothing outside the block can name it, so an agent cannot call
//! it around the grant, the scope check, fail-fast, the journal and the
//! record. The block's `Tool` impl is the only caller, and its `call`
//! takes a `ToolCallPermit<Self>` that only `cx.call` can make, so calling
//! the trait method by hand does not compile either.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;

use crate::model::tool::Tool;
use crate::model::workflow::Workflow;

use super::{tool_effect, tool_fallback, tool_input_alias, tool_output_alias};

/// The items of the `tools` module: one unit type per tool.
pub fn tools(wf: &Workflow) -> TokenStream {
    let tools = wf.tools.iter().map(|t| {
        let name = &t.name;
        let text = name.unraw().to_string();
        let doc = format!("The tool `{text}`: pass it to `cx.call`.");
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, Default)]
            #[allow(non_camel_case_types)]
            pub struct #name;
        }
    });
    quote!(#(#tools)*)
}

/// The user's tool function `item` (renamed to its hidden name), sealed in
/// an anonymous block with the `Tool` impl that calls it; emitted in the
/// workflow module, where the function was written, so that its body's
/// names resolve as the user wrote them.
pub fn sealed(item: &syn::ItemFn, t: &Tool) -> TokenStream {
    let name = &t.name;
    let text = name.unraw().to_string();
    let hidden = &t.hidden;
    let (input_alias, output_alias) = (tool_input_alias(t), tool_output_alias(t));
    let needs = match &t.needs {
        Some(n) => {
            let n = n.unraw().to_string();
            quote!(::workflow_core::__private::Option::Some(#n))
        }
        None => quote!(::workflow_core::__private::Option::None),
    };
    // A missing `FailFast` is reported on the output type the user wrote.
    let output_span = syn::spanned::Spanned::span(&t.output_ty);
    let output_decl = quote::quote_spanned!(output_span=> type Output = #output_alias;);
    let effect = tool_effect(t);
    let fallback = tool_fallback(t);
    let guard = t.args.guard.as_ref().map(|path| {
        let name = quote!(#path).to_string().replace(' ', "");
        let span = syn::spanned::Spanned::span(path);
        let call = quote::quote_spanned!(span=> #path(input, root));
        quote! {
            const GUARD: ::workflow_core::__private::Option<&'static str> =
                ::workflow_core::__private::Option::Some(#name);
            fn guard(
                input: &#input_alias,
                root: &<Spec as ::workflow_core::__private::Workflow>::Root,
            ) -> ::workflow_core::__private::Result<(), ::workflow_core::__private::String> {
                #call
            }
        }
    });
    let (body, allow) = if !t.callable {
        (
            quote! {
                let _ = (input, deps);
                ::workflow_core::__private::Result::Err(::workflow_core::__private::ToolError::new(
                    #text,
                    "the tool's signature is invalid (reported at compile time)",
                ))
            },
            // Not called (its signature is reported): no unused warning.
            quote!(#[allow(dead_code)]),
        )
    } else if t.is_async {
        (quote!(#hidden(input, deps).await), quote!())
    } else {
        (quote!(#hidden(input, deps)), quote!())
    };
    quote! {
        const _: () = {
            #allow
            #item

            impl ::workflow_core::__private::Tool<Spec> for tools::#name {
                const NAME: &'static str = #text;
                const NEEDS: ::workflow_core::__private::Option<&'static str> = #needs;
                const EFFECT: ::workflow_core::__private::Effect = #effect;
                const FALLBACK: ::workflow_core::__private::Fallback = #fallback;
                #guard
                type Input = #input_alias;
                #output_decl
                fn call(
                    self,
                    input: #input_alias,
                    deps: &<Spec as ::workflow_core::__private::Workflow>::Deps,
                    _permit: ::workflow_core::__private::ToolCallPermit<Self>,
                ) -> impl ::workflow_core::__private::Future<
                    Output = ::workflow_core::__private::Result<#output_alias, ::workflow_core::__private::ToolError>,
                > + Send {
                    async move { #body }
                }
            }
        };
    }
}
