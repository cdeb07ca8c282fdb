//! The model of an `#[agent]` function and its conditions.

use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Ident, ItemFn, Pat, Type};

use crate::model::syntax::{borrows, camel, collect, take_attrs, typed_arg};
use crate::parse::{AgentArgs, ConditionArgs};

/// A `#[pre]`/`#[post]` condition, with what makes it not a plain `bool`
/// expression (`?`, `.await`, `return`; reported by the rules, and such a
/// condition is left out of the generated code).
pub struct Condition {
    pub args: ConditionArgs,
    pub impure: Vec<Impurity>,
}

/// A token a condition may not hold.
pub enum Impurity {
    Try(syn::Token![?]),
    Await(syn::Token![await]),
    Return(syn::Token![return]),
}

impl Condition {
    fn new(args: ConditionArgs) -> Condition {
        struct Find(Vec<Impurity>);
        impl<'a> syn::visit::Visit<'a> for Find {
            fn visit_expr_try(&mut self, e: &'a syn::ExprTry) {
                self.0.push(Impurity::Try(e.question_token));
            }
            fn visit_expr_await(&mut self, e: &'a syn::ExprAwait) {
                self.0.push(Impurity::Await(e.await_token));
            }
            fn visit_expr_return(&mut self, e: &'a syn::ExprReturn) {
                self.0.push(Impurity::Return(e.return_token));
            }
            // Closures and async blocks inside may use what they like.
            fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
            fn visit_expr_async(&mut self, _: &'a syn::ExprAsync) {}
        }
        let mut find = Find(Vec::new());
        syn::visit::Visit::visit_expr(&mut find, &args.expr);
        Condition {
            args,
            impure: find.0,
        }
    }

    /// Whether the condition is a plain expression the receipt can test.
    pub fn is_plain(&self) -> bool {
        self.impure.is_empty()
    }
}

/// An `#[agent]` function.
pub struct Agent {
    pub name: Ident,
    /// Its variant name in `Next` and `State` (CamelCase of the name).
    pub variant: Ident,
    /// The signature as written, for the shape rules.
    pub sig: syn::Signature,
    /// Whether the function is `async` (a non-async one is reported).
    pub is_async: bool,
    /// Whether the function has the `(input, cx)` shape and an owned input,
    /// and can be called.
    pub callable: bool,
    pub input_pat: Pat,
    /// The input type; `()` for a missing or borrowed input (reported).
    pub input_ty: Type,
    pub cx_pat: Pat,
    pub args: AgentArgs,
    /// `#[agent(..)]` attributes after the first.
    pub extra_attrs: Vec<syn::Attribute>,
    pub pre: Vec<Condition>,
    pub post: Vec<Condition>,
    /// Errors found while reading its attributes (arguments, conditions).
    pub malformed: Vec<syn::Error>,
    /// An agent declared before under the same variant name.
    pub clash: Option<Ident>,
}

impl Agent {
    /// The pre-conditions the generated code tests (the plain ones).
    pub fn plain_pre(&self) -> Vec<&ConditionArgs> {
        self.pre
            .iter()
            .filter(|c| c.is_plain())
            .map(|c| &c.args)
            .collect()
    }

    /// The post-conditions the generated code tests (the plain ones).
    pub fn plain_post(&self) -> Vec<&ConditionArgs> {
        self.post
            .iter()
            .filter(|c| c.is_plain())
            .map(|c| &c.args)
            .collect()
    }

    /// Whether a post-condition may read the agent's context: one of them
    /// names the context parameter's binding (anywhere in its tokens, macro
    /// arguments included, raw or not, or as a word inside a literal, which
    /// `format!`-style macros capture), or the parameter's pattern is not a
    /// plain name. When none does, the runtime checks them without
    /// building a context.
    pub fn post_reads_context(&self) -> bool {
        // `cx` is also the generated `post`'s own parameter.
        let mut names_read = vec!["cx".to_owned()];
        match &self.cx_pat {
            Pat::Ident(p) if p.subpat.is_none() => names_read.push(p.ident.unraw().to_string()),
            Pat::Wild(_) => {}
            _ => return true,
        }
        self.plain_post()
            .iter()
            .any(|c| names(c.expr.to_token_stream(), &names_read))
    }
}

/// Whether `tokens` hold one of the identifiers `wanted` (raw or not) at
/// any depth, or a literal holding one as a word (a string a macro may
/// capture from).
fn names(tokens: proc_macro2::TokenStream, wanted: &[String]) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => wanted.contains(&i.unraw().to_string()),
        proc_macro2::TokenTree::Group(g) => names(g.stream(), wanted),
        proc_macro2::TokenTree::Literal(l) => {
            let text = l.to_string();
            wanted.iter().any(|name| {
                text.match_indices(name.as_str()).any(|(at, _)| {
                    let before = text[..at].chars().next_back();
                    let after = text[at + name.len()..].chars().next();
                    !before.is_some_and(word) && !after.is_some_and(word)
                })
            })
        }
        proc_macro2::TokenTree::Punct(_) => false,
    })
}

pub fn agent_from_fn(f: &mut ItemFn) -> Agent {
    let mut args = AgentArgs::default();
    let mut extra_attrs = Vec::new();
    let mut pre = Vec::new();
    let mut post = Vec::new();
    let malformed = collect(|cx| {
        for (i, a) in take_attrs(&mut f.attrs, "agent").into_iter().enumerate() {
            if i > 0 {
                extra_attrs.push(a);
                continue;
            }
            if let syn::Meta::List(list) = &a.meta {
                args = AgentArgs::parse_all(cx, list.tokens.clone());
            }
        }
        let mut conditions = |name: &str| -> Vec<Condition> {
            take_attrs(&mut f.attrs, name)
                .into_iter()
                .filter_map(|a| match a.parse_args::<ConditionArgs>() {
                    Ok(c) => Some(Condition::new(c)),
                    Err(e) => {
                        cx.syn_error(e);
                        None
                    }
                })
                .collect()
        };
        pre = conditions("pre");
        post = conditions("post");
    });
    let sig = &f.sig;
    let inputs: Vec<_> = sig.inputs.iter().collect();
    let input = inputs.first().and_then(|a| typed_arg(a));
    let context = inputs.get(1).and_then(|a| typed_arg(a));
    // A borrowed input (reported) is replaced by `()`: the agent is not
    // called, so no lifetime error follows.
    let input = input.filter(|(_, ty)| !borrows(ty));
    // A malformed agent stays in the model, so that the graph and the
    // generated names exist and no other error follows from this one.
    Agent {
        name: sig.ident.clone(),
        variant: quote::format_ident!("{}", camel(&sig.ident)),
        sig: sig.clone(),
        is_async: sig.asyncness.is_some(),
        callable: input.is_some()
            && context.is_some()
            && inputs.len() == 2
            && sig.generics.params.is_empty(),
        input_pat: input.map_or_else(|| syn::parse_quote!(_input), |(p, _)| p.clone()),
        input_ty: input.map_or_else(|| syn::parse_quote!(()), |(_, t)| t.clone()),
        cx_pat: context.map_or_else(|| syn::parse_quote!(_cx), |(p, _)| p.clone()),
        args,
        extra_attrs,
        pre,
        post,
        malformed,
        clash: None,
    }
}

#[cfg(test)]
mod tests {
    use super::agent_from_fn;

    fn reads(f: syn::ItemFn) -> bool {
        let mut f = f;
        agent_from_fn(&mut f).post_reads_context()
    }

    #[test]
    fn a_post_condition_naming_the_context_reads_it() {
        // By the parameter's name, inside a macro's arguments too.
        assert!(reads(syn::parse_quote! {
            #[post(matches!(out, a::Next::End(n) if *n < ctx.root().max), "m")]
            async fn a(x: u32, ctx: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
        // `cx` is the generated `post`'s own parameter, whatever the agent
        // calls its context (or if it ignores it).
        assert!(reads(syn::parse_quote! {
            #[post(cx.hops_left() > 0, "m")]
            async fn a(x: u32, ctx: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
        assert!(reads(syn::parse_quote! {
            #[post(cx.hops_left() > 0, "m")]
            async fn a(x: u32, _: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
        // Raw identifiers, in the condition and in the parameter.
        assert!(reads(syn::parse_quote! {
            #[post(r#cx.hop() < 100, "m")]
            async fn a(x: u32, _: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
        assert!(reads(syn::parse_quote! {
            #[post(ctx.hop() < 100, "m")]
            async fn a(x: u32, r#ctx: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
        // A name a format string captures.
        assert!(reads(syn::parse_quote! {
            #[post(!format!("{ctx:p}").is_empty(), "m")]
            async fn a(x: u32, ctx: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
        // A pattern that is not a plain name: assumed read.
        assert!(reads(syn::parse_quote! {
            #[post(true, "m")]
            async fn a(x: u32, ref cx @ _: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
    }

    #[test]
    fn a_post_condition_on_the_output_alone_does_not() {
        assert!(!reads(syn::parse_quote! {
            #[post(!matches!(out, a::Next::End(t) if t.done == 0), "m")]
            async fn a(x: u32, cx: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
        // The context ignored with `_`, and a name that merely starts
        // like it.
        assert!(!reads(syn::parse_quote! {
            #[post(cx_like > 0, "m")]
            async fn a(x: u32, _: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
        // A literal holding the name only inside a longer word.
        assert!(!reads(syn::parse_quote! {
            #[post(out.to_string() != "ctx_done", "m")]
            async fn a(x: u32, ctx: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
        // No post-condition at all.
        assert!(!reads(syn::parse_quote! {
            async fn a(x: u32, cx: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
        }));
    }
}
