//! Code generation: one file per generated artefact.

pub mod agent;
pub mod handoff;
pub mod spec;
pub mod workflow;

/// `network_agent` -> `NetworkAgent`: the variant name for an agent.
pub fn camel(ident: &syn::Ident) -> String {
    let raw = ident.to_string();
    let raw = raw.strip_prefix("r#").unwrap_or(&raw);
    raw.split('_')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// The source text of a condition, formatted as rustfmt would (on one
/// line), for messages and records.
pub fn expr_text(expr: &syn::Expr) -> String {
    // Built by hand, not re-parsed: an expression that starts with `match`
    // or a block would not parse back as a statement.
    let mut function: syn::ItemFn = syn::parse_quote!(
        fn condition() {}
    );
    function
        .block
        .stmts
        .push(syn::Stmt::Expr(expr.clone(), None));
    let file = syn::File {
        shebang: None,
        attrs: Vec::new(),
        items: vec![syn::Item::Fn(function)],
    };
    let formatted = prettyplease::unparse(&file);
    let mut lines: Vec<&str> = formatted.lines().map(str::trim).collect();
    // Drop `fn condition() {` and the closing `}`.
    if lines.len() >= 2 {
        lines.remove(0);
        lines.pop();
    }
    let mut text = String::new();
    for line in lines {
        let glued = line.starts_with(['.', ')', ']', '?']) || text.ends_with(['(', '[']);
        if !text.is_empty() && !glued {
            text.push(' ');
        }
        text.push_str(line);
    }
    text
}

/// The contract of the value `value` (a reference) if its type is a
/// handoff, `None` otherwise: an `Option<ContractView>` expression.
pub(crate) fn contract_probe(value: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote::quote! {{
        #[allow(unused_imports)]
        use ::workflow_core::__private::{ContractOfAnything as _, ContractOfHandoff as _};
        (&::workflow_core::__private::ContractProbe(#value)).contract_view()
    }}
}
