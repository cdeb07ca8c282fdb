//! A join agent's verdicts: `Agent::verdicts` reads the verdict of every
//! branch that ended `Done`, for branch output types that derive `Verdict`
//! (others have none: the probe answers `None`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;

use crate::model::agent::Agent;

/// `fn verdicts(input) -> Vec<BranchVerdict>` for a join agent; nothing
/// for any other agent (the trait's default: none).
pub(crate) fn join_verdicts(a: &Agent) -> Option<TokenStream> {
    a.args.join_key.as_ref()?;
    let input = &a.input_ty;
    let reads = a.args.join.iter().map(|j| {
        let field = &j.name;
        let name = j.name.unraw().to_string();
        // A map's join field (`[T]`) holds one outcome per item, in list
        // order: item `k`'s verdict is branch `name[k]`'s.
        if matches!(j.ty, syn::Type::Slice(_)) {
            return quote! {
                for (k, branch) in input.#field.iter().enumerate() {
                    if let ::workflow_core::__private::Branch::Done(value) = branch {
                        if let ::workflow_core::__private::Option::Some(verdict) =
                            (&::workflow_core::__private::VerdictProbe(value)).verdict_of()
                        {
                            out.push(::workflow_core::__private::BranchVerdict::of_item(
                                #name,
                                k as u16,
                                verdict,
                            ));
                        }
                    }
                }
            };
        }
        quote! {
            if let ::workflow_core::__private::Branch::Done(value) = &input.#field {
                if let ::workflow_core::__private::Option::Some(verdict) =
                    (&::workflow_core::__private::VerdictProbe(value)).verdict_of()
                {
                    out.push(::workflow_core::__private::BranchVerdict::new(#name, verdict));
                }
            }
        }
    });
    Some(quote! {
        fn verdicts(input: &#input) -> ::workflow_core::__private::Vec<::workflow_core::__private::BranchVerdict> {
            #[allow(unused_imports)]
            use ::workflow_core::__private::{VerdictOfAnything as _, VerdictOfVerdict as _};
            let mut out = ::workflow_core::__private::Vec::new();
            #(#reads)*
            out
        }
    })
}
