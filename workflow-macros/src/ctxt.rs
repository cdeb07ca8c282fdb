//! The error accumulator: every check reports into it, and all errors of
//! one expansion are emitted together.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Collects errors; [`Ctxt::check`] turns them into one token stream.
///
/// As serde's `Ctxt`: dropping it without calling `check` is a bug in this
/// macro (errors would be lost), so it panics then, unless the thread is
/// already panicking.
pub struct Ctxt {
    /// `None` once checked.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    /// An empty accumulator; call [`Ctxt::check`] before dropping it.
    pub fn new() -> Ctxt {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    fn push(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("error reported after `Ctxt::check`")
            .push(error);
    }

    /// An error spanning `tokens`.
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// An error that syn already built.
    pub fn syn_error(&self, error: syn::Error) {
        self.push(error);
    }

    /// All errors as `compile_error!` invocations (empty when there are none).
    pub fn check(self) -> TokenStream {
        self.errors
            .borrow_mut()
            .take()
            .expect("`Ctxt::check` called twice")
            .into_iter()
            .map(|e| e.to_compile_error())
            .collect()
    }
}

impl Ctxt {
    /// The errors themselves, for a caller that reports them later (in
    /// source order, with the rest of its item).
    pub fn into_errors(self) -> Vec<syn::Error> {
        self.errors
            .borrow_mut()
            .take()
            .expect("`Ctxt::check` called twice")
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to call `Ctxt::check`: its errors would be lost");
        }
    }
}

/// The closest of `candidates` to `name`, if close enough to suggest.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// ` (did you mean `x`?)` or nothing.
pub fn suggestion<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match did_you_mean(name, candidates) {
        Some(c) => format!(" (did you mean `{c}`?)"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::Ctxt;

    #[test]
    #[should_panic(expected = "forgot to call `Ctxt::check`")]
    fn an_unchecked_context_panics_when_dropped() {
        let cx = Ctxt::new();
        cx.error_spanned_by(quote::quote!(x), "lost");
    }

    #[test]
    fn a_checked_context_gives_its_errors_in_order() {
        let cx = Ctxt::new();
        cx.error_spanned_by(quote::quote!(x), "first");
        cx.error_spanned_by(quote::quote!(y), "second");
        let out = cx.check().to_string();
        let (first, second) = (out.find("first"), out.find("second"));
        assert!(first.is_some() && first < second, "{out}");
    }
}
