//! The model of a `#[tool]` function.

use syn::ext::IdentExt;
use syn::{GenericArgument, Ident, ItemFn, PathArguments, ReturnType, Type};

use crate::model::syntax::{borrows, collect, take_attrs, typed_arg};
use crate::parse::ToolArgs;

/// A `#[tool]` function.
pub struct Tool {
    pub name: Ident,
    /// The name the tool's function is emitted under, out of agents' reach.
    pub hidden: Ident,
    /// The signature as written, for the shape rules.
    pub sig: syn::Signature,
    /// Whether the function is `async` (a non-async one is reported).
    pub is_async: bool,
    /// Whether the function has the `(input, deps) -> Result<..>` shape.
    pub callable: bool,
    /// What is wrong with its shape, if anything.
    pub shape_problem: Option<&'static str>,
    /// The written input and output types (before any replacement).
    pub written: [Option<Type>; 2],
    pub input_ty: Type,
    pub output_ty: Type,
    pub needs: Option<Ident>,
    /// `effect`, `retries`, `backoff_ms`, `then`.
    pub args: ToolArgs,
    /// The tool's doc comment, for its MCP definition.
    pub description: String,
    /// Errors found while reading its attribute.
    pub malformed: Vec<syn::Error>,
}

pub fn tool_from_fn(f: &mut ItemFn) -> Tool {
    let mut args = ToolArgs::default();
    let malformed = collect(|cx| {
        for a in take_attrs(&mut f.attrs, "tool") {
            if let syn::Meta::List(list) = &a.meta {
                args = ToolArgs::parse_all(cx, list.tokens.clone());
            }
        }
    });
    let description = f
        .attrs
        .iter()
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_owned();
    let sig = &f.sig;
    let input_ty = sig
        .inputs
        .first()
        .and_then(typed_arg)
        .map(|(_, t)| t.clone());
    let output_ty = result_ok_type(&sig.output);
    let shape_problem = match (&input_ty, &output_ty, sig.inputs.len()) {
        (Some(_), Some(_), 2) => None,
        (_, None, _) => Some("its return type must be written `Result<Output, ToolError>`"),
        (_, _, n) if n != 2 => Some("it takes exactly two arguments, its input and `&Deps`"),
        _ => Some("its first argument must be its input"),
    };
    let owned = [&input_ty, &output_ty]
        .into_iter()
        .flatten()
        .all(|ty| !borrows(ty));
    let written = [input_ty.clone(), output_ty.clone()];
    // A borrowing tool (reported) gets `()` types and is not called.
    let (input_ty, output_ty) = if owned {
        (input_ty, output_ty)
    } else {
        (None, None)
    };
    Tool {
        name: sig.ident.clone(),
        hidden: syn::Ident::new(&format!("__tool_{}", sig.ident.unraw()), sig.ident.span()),
        sig: sig.clone(),
        is_async: sig.asyncness.is_some(),
        callable: shape_problem.is_none() && owned,
        shape_problem,
        written,
        input_ty: input_ty.unwrap_or_else(|| syn::parse_quote!(())),
        output_ty: output_ty.unwrap_or_else(|| syn::parse_quote!(())),
        needs: args.needs.clone(),
        args,
        description,
        malformed,
    }
}

/// `T` of a `Result<T, _>` return type.
fn result_ok_type(ret: &ReturnType) -> Option<Type> {
    let ReturnType::Type(_, ty) = ret else {
        return None;
    };
    let Type::Path(p) = &**ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    }
}
