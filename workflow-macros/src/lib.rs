use proc_macro::TokenStream;
macro_rules! stub { ($($n:ident),*) => { $( #[proc_macro_attribute] pub fn $n(_a: TokenStream, i: TokenStream) -> TokenStream { i } )* } }
stub!(agent, handoff, invariants, post, pre, tool, workflow);
