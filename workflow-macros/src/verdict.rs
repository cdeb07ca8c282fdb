//! `#[derive(Verdict)]`: one field of a branch output type, marked
//! `#[verdict]`, is what the branch concluded. Parse (the marked fields),
//! check (exactly one, on a named field of a struct), codegen (the
//! `Verdict` impl).

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;

/// The derive: the `Verdict` impl, or the compile errors.
pub(crate) fn derive(item: TokenStream) -> TokenStream {
    let input: syn::DeriveInput = match syn::parse2(item) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    match check(&input) {
        Ok(field) => codegen(&input, field),
        Err(e) => e.to_compile_error(),
    }
}

/// Whether `attr` is `#[verdict]`.
fn is_verdict(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("verdict")
}

/// The one named field marked `#[verdict]`: `E-verdict-not-named-field` for
/// a mark on a tuple field, an enum or a union (or a type with no named
/// field), `E-verdict-twice` for two marks, `E-verdict-missing` for none.
fn check(input: &syn::DeriveInput) -> syn::Result<&syn::Ident> {
    let fields = match &input.data {
        syn::Data::Struct(s) => &s.fields,
        syn::Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span(),
                "`#[derive(Verdict)]` needs a struct with named fields: the verdict is one field of a branch's output; put the verdict in a named field of a struct and mark it `#[verdict]`",
            ));
        }
        syn::Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span(),
                "`#[derive(Verdict)]` needs a struct with named fields: the verdict is one field of a branch's output; put the verdict in a named field of a struct and mark it `#[verdict]`",
            ));
        }
    };
    let marked: Vec<&syn::Field> = fields
        .iter()
        .filter(|f| f.attrs.iter().any(is_verdict))
        .collect();
    if let Some(unnamed) = marked.iter().find(|f| f.ident.is_none()) {
        let attr = unnamed.attrs.iter().find(|a| is_verdict(a));
        return Err(syn::Error::new_spanned(
            attr.map_or_else(|| quote!(#unnamed), |a| quote!(#a)),
            "`#[verdict]` marks a named field: a tuple field has no name for the record to show; give the struct named fields and mark the verdict's field `#[verdict]`",
        ));
    }
    match marked.as_slice() {
        [one] => Ok(one.ident.as_ref().expect("checked: named")),
        [] => Err(syn::Error::new(
            input.ident.span(),
            format!(
                "`{}` derives `Verdict` but marks no field `#[verdict]`; mark the field that says what the branch concluded `#[verdict]` (exactly one)",
                input.ident
            ),
        )),
        [first, second, ..] => {
            let second_attr = second.attrs.iter().find(|a| is_verdict(a));
            let mut e = syn::Error::new_spanned(
                second_attr.map_or_else(|| quote!(#second), |a| quote!(#a)),
                format!(
                    "`{}` marks two fields `#[verdict]` (`{}` and `{}`): a branch concludes one verdict, which its join compares with its siblings'; keep `#[verdict]` on one field; the other is a plain field of the output",
                    input.ident,
                    first.ident.as_ref().expect("checked: named"),
                    second.ident.as_ref().expect("checked: named"),
                ),
            );
            let first_attr = first.attrs.iter().find(|a| is_verdict(a));
            e.combine(syn::Error::new_spanned(
                first_attr.map_or_else(|| quote!(#first), |a| quote!(#a)),
                "the first `#[verdict]` is here",
            ));
            Err(e)
        }
    }
}

/// `impl Verdict for T`: the field's name, and its value as text.
fn codegen(input: &syn::DeriveInput, field: &syn::Ident) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let name = field.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    quote! {
        impl #impl_generics ::workflow_core::__private::Verdict for #ident #ty_generics #where_clause {
            const VERDICT_FIELD: &'static str = #name;
            fn verdict(&self) -> ::workflow_core::__private::Option<::workflow_core::__private::String> {
                ::workflow_core::__private::verdict_text(&self.#field)
            }
        }
    }
}
