//! The tools of a workflow: one unit type per `#[tool]`, implementing
//! `Tool` by calling the (hidden) tool function.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;

use crate::model::workflow::Workflow;

use super::{tool_effect, tool_fallback, tool_input_alias, tool_output_alias};

/// The items of the `tools` module.
pub fn tools(wf: &Workflow) -> TokenStream {
    let tools = wf.tools.iter().map(|t| {
        let name = &t.name;
        let text = name.unraw().to_string();
        let doc = format!("The tool `{text}`: pass it to `cx.call`.");
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
        let output_decl = quote::quote_spanned!(output_span=> type Output = super::#output_alias;);
        let effect = tool_effect(t);
        let fallback = tool_fallback(t);
        let body = if !t.callable {
            quote! {
                async move {
                    let _ = (input, deps);
                    ::workflow_core::__private::Result::Err(::workflow_core::__private::ToolError::new(
                        #text,
                        "the tool's signature is invalid (reported at compile time)",
                    ))
                }
            }
        } else if t.is_async {
            quote!(super::#hidden(input, deps))
        } else {
            quote!(async move { super::#hidden(input, deps) })
        };
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, Default)]
            #[allow(non_camel_case_types)]
            pub struct #name;
            impl ::workflow_core::__private::Tool<super::Spec> for #name {
                const NAME: &'static str = #text;
                const NEEDS: ::workflow_core::__private::Option<&'static str> = #needs;
                const EFFECT: ::workflow_core::__private::Effect = #effect;
                const FALLBACK: ::workflow_core::__private::Fallback = #fallback;
                type Input = super::#input_alias;
                #output_decl
                fn call(
                    self,
                    input: super::#input_alias,
                    deps: &<super::Spec as ::workflow_core::__private::Workflow>::Deps,
                ) -> impl ::workflow_core::__private::Future<
                    Output = ::workflow_core::__private::Result<super::#output_alias, ::workflow_core::__private::ToolError>,
                > + Send {
                    #body
                }
            }
        }
    });
    quote!(#(#tools)*)
}
