//! Code generation: one file per generated artefact.

pub mod handoff;
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
