//! Typed argument values: each number parsed once, each keyword an enum,
//! every one keeping the token the user wrote for spans.

use std::str::FromStr;

use syn::{Ident, LitInt};

/// A whole number written in an argument, parsed once.
#[derive(Clone)]
pub struct Number<T> {
    /// The literal as written, to point at.
    pub lit: LitInt,
    /// Its value, or why it does not parse (reported by the number rules).
    pub value: Result<T, String>,
}

impl<T: FromStr> Number<T>
where
    T::Err: std::fmt::Display,
{
    /// Parses `lit` (base 10, suffix allowed).
    pub fn new(lit: LitInt) -> Number<T> {
        let value = lit.base10_parse::<T>().map_err(|e| e.to_string());
        Number { lit, value }
    }
}

impl<T: Copy> Number<T> {
    /// The value, if it parses.
    pub fn get(&self) -> Option<T> {
        self.value.as_ref().ok().copied()
    }
}

/// What a tool does to the world: `effect = read | write | destructive`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    Read,
    Write,
    Destructive,
}

impl Effect {
    /// The keywords, in the order they are suggested.
    pub const NAMES: [&'static str; 3] = ["read", "write", "destructive"];

    /// The effect named `name`.
    pub fn from_name(name: &str) -> Option<Effect> {
        match name {
            "read" => Some(Effect::Read),
            "write" => Some(Effect::Write),
            "destructive" => Some(Effect::Destructive),
            _ => None,
        }
    }
}

/// What a tool failure leads to once its retries are spent: `then = abort | escalate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Then {
    Abort,
    Escalate,
}

impl Then {
    /// The keywords, in the order they are suggested.
    pub const NAMES: [&'static str; 2] = ["abort", "escalate"];

    /// The policy named `name`.
    pub fn from_name(name: &str) -> Option<Then> {
        match name {
            "abort" => Some(Then::Abort),
            "escalate" => Some(Then::Escalate),
            _ => None,
        }
    }
}

/// A keyword argument's value with the token it was written as.
#[derive(Clone)]
pub struct Keyword<T> {
    pub value: T,
    pub token: Ident,
}

/// Where a rejected handoff goes: `on_reject = abort | escalate | sender(max = N)`.
#[derive(Clone)]
pub enum OnReject {
    Abort,
    Escalate,
    /// Back to the sender, at most `max` times per receiver and run.
    Sender {
        max: Number<u64>,
    },
}
