//! Parsing the attribute arguments: `#[workflow(..)]`, `#[agent(..)]`,
//! `#[tool(..)]`, `#[pre(..)]` / `#[post(..)]`. Each keeps its tokens for spans.

use proc_macro2::{TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitStr, Token, Type, bracketed, parenthesized};

use crate::ctxt::{Ctxt, suggestion};
use crate::model::value::{Effect, Keyword, Number, OnReject, Then};

/// Splits attribute arguments at top-level commas, so that one bad
/// argument is reported without losing the others.
pub fn split_args(tokens: TokenStream) -> Vec<TokenStream> {
    let mut args = vec![TokenStream::new()];
    // Commas inside `<..>` (`HashMap<K, V>`) do not split; `->` is no `>`.
    let mut depth = 0usize;
    let mut after_dash = false;
    for tt in tokens {
        let dash = matches!(&tt, TokenTree::Punct(p) if p.as_char() == '-');
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' && depth == 0 => {
                args.push(TokenStream::new());
                after_dash = false;
                continue;
            }
            TokenTree::Punct(p) if p.as_char() == '<' => depth += 1,
            TokenTree::Punct(p) if p.as_char() == '>' && !after_dash => {
                depth = depth.saturating_sub(1)
            }
            _ => {}
        }
        after_dash = dash;
        if let Some(last) = args.last_mut() {
            last.extend([tt]);
        }
    }
    args.retain(|a| !a.is_empty());
    args
}

/// Parses each argument with `parse`, reporting each failure into `cx`.
pub fn parse_each<T>(
    cx: &Ctxt,
    tokens: TokenStream,
    mut parse: impl FnMut(ParseStream) -> syn::Result<T>,
) -> Vec<T> {
    split_args(tokens)
        .into_iter()
        .filter_map(
            |arg| match (|input: ParseStream| parse(input)).parse2(arg) {
                Ok(v) => Some(v),
                Err(e) => {
                    cx.syn_error(e);
                    None
                }
            },
        )
        .collect()
}

/// `key = value` arguments, parsed by key.
fn parse_key(input: ParseStream, keys: &[&str]) -> syn::Result<Ident> {
    let key: Ident = input.parse()?;
    let name = key.to_string();
    if !keys.contains(&name.as_str()) {
        return Err(syn::Error::new(
            key.span(),
            format!(
                "unknown argument `{name}`{}; the arguments are {}",
                suggestion(&name, keys.iter().copied()),
                keys.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    input.parse::<Token![=]>()?;
    Ok(key)
}

fn duplicate(key: &Ident) -> syn::Error {
    syn::Error::new(
        key.span(),
        format!("`{key}` is given twice; keep one of them"),
    )
}

/// `#[workflow(entry = a, output = T, deps = D, max_hops = N, open_ended = [A])]`
#[derive(Default)]
pub struct WorkflowArgs {
    pub entry: Option<Ident>,
    pub output: Option<Type>,
    pub deps: Option<Type>,
    pub max_hops: Option<Number<u64>>,
    /// The authorities whose leases may be open-ended (`open_ended = [..]`).
    pub open_ended: Option<Vec<Ident>>,
    /// Some argument could not be parsed (and was reported): what looks
    /// missing may be that one.
    pub incomplete: bool,
}

impl WorkflowArgs {
    /// Parses the arguments, reporting each bad one and keeping the rest.
    pub fn parse_all(cx: &Ctxt, tokens: TokenStream) -> WorkflowArgs {
        let mut args = WorkflowArgs::default();
        let given = split_args(tokens.clone()).len();
        let parsed = parse_each(cx, tokens, |input| {
            let key = parse_key(
                input,
                &["entry", "output", "deps", "max_hops", "open_ended"],
            )?;
            match key.to_string().as_str() {
                "entry" if args.entry.is_none() => args.entry = Some(input.parse()?),
                "output" if args.output.is_none() => args.output = Some(input.parse()?),
                "deps" if args.deps.is_none() => args.deps = Some(input.parse()?),
                "max_hops" if args.max_hops.is_none() => {
                    args.max_hops = Some(Number::new(input.parse()?))
                }
                "open_ended" if args.open_ended.is_none() => {
                    args.open_ended = Some(bracketed_list(input)?)
                }
                _ => return Err(duplicate(&key)),
            }
            Ok(())
        });
        args.incomplete = parsed.len() < given;
        args
    }
}

/// One entry of `to = [...]`: an agent, `END`, optionally `(max = N)`;
/// or a fan-out, `parallel(a, b, ..)`.
pub struct TargetArg {
    pub name: Ident,
    /// `parallel(a, b, ..)`: the branches' agents (the entry's `name` is
    /// the `parallel` keyword).
    pub branches: Option<Vec<Ident>>,
    /// `map(worker, max = N)`: the one receiver run once per item of a
    /// list (the entry's `name` is the `map` keyword), and its bound.
    pub map: Option<MapArg>,
    pub bound: Option<Number<u64>>,
    /// A malformed `(..)` after the name: reported, and the edge is taken
    /// as bounded so that nothing else is reported about it.
    pub bad_bound: Option<syn::Error>,
}

impl Parse for TargetArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        let mut target = TargetArg {
            name,
            branches: None,
            map: None,
            bound: None,
            bad_bound: None,
        };
        if target.name == "parallel" && input.peek(syn::token::Paren) {
            let inner;
            parenthesized!(inner in input);
            let branches = Punctuated::<Ident, Token![,]>::parse_terminated(&inner)?;
            target.branches = Some(branches.into_iter().collect());
            return Ok(target);
        }
        if target.name == "map" && input.peek(syn::token::Paren) {
            let inner;
            parenthesized!(inner in input);
            target.map = Some(inner.parse()?);
            return Ok(target);
        }
        if input.peek(syn::token::Paren) {
            let inner;
            parenthesized!(inner in input);
            let bound = (|| -> syn::Result<Number<u64>> {
                let key: Ident = inner.parse()?;
                if key != "max" {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "expected `max = N` (a loop bound), found `{key}`; write `{}(max = N)`",
                            target.name
                        ),
                    ));
                }
                inner.parse::<Token![=]>()?;
                Ok(Number::new(inner.parse()?))
            })();
            match bound {
                Ok(bound) => target.bound = Some(bound),
                Err(e) => {
                    // The rest of the group is skipped, the list goes on.
                    let _: TokenStream = inner.parse()?;
                    target.bad_bound = Some(e);
                }
            }
        }
        Ok(target)
    }
}

/// The inside of `map(worker, max = N)`: the receiver and its bound (`None`
/// when not written: reported by the checks).
pub struct MapArg {
    pub agent: Ident,
    pub max: Option<Number<u64>>,
}

impl Parse for MapArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let agent: Ident = input.parse()?;
        let mut max = None;
        if input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
            let key: Ident = input.parse()?;
            if key != "max" {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "expected `max = N` (the most items a map takes), found `{key}`; write `map({agent}, max = N)`"
                    ),
                ));
            }
            input.parse::<Token![=]>()?;
            max = Some(Number::new(input.parse()?));
            input.parse::<Option<Token![,]>>()?;
        }
        Ok(MapArg { agent, max })
    }
}

fn bracketed_list<T: Parse>(input: ParseStream) -> syn::Result<Vec<T>> {
    let inner;
    bracketed!(inner in input);
    Ok(Punctuated::<T, Token![,]>::parse_terminated(&inner)?
        .into_iter()
        .collect())
}

/// `#[agent(owns = [..], tools = [..], to = [..], timeout_ms = N, max_steps = N)]`
/// One entry of `join = [...]`: a branch's agent and the type of what it
/// hands to the join (`security: Review`).
pub struct JoinArg {
    pub name: Ident,
    pub ty: syn::Type,
}

impl Parse for JoinArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        Ok(JoinArg {
            name,
            ty: input.parse()?,
        })
    }
}

#[derive(Default)]
pub struct AgentArgs {
    pub owns: Vec<Ident>,
    /// `join = [branch: Type, ..]`: the branches of a fan-out this agent
    /// joins, with what each hands it.
    pub join: Vec<JoinArg>,
    /// The `join` key itself, when given.
    pub join_key: Option<Ident>,
    /// `quorum = N` beside `join`: the join goes on once `N` branches are
    /// done, the others cancelled.
    pub quorum: Option<Number<u64>>,
    /// The `quorum` key itself, when given.
    pub quorum_key: Option<Ident>,
    pub tools: Vec<Ident>,
    pub to: Vec<TargetArg>,
    /// The `to` key itself, when given.
    pub to_key: Option<Ident>,
    pub timeout_ms: Option<Number<u64>>,
    /// `max_steps = N`: the model steps of each tool loop of the agent's
    /// turns, unless the loop says otherwise.
    pub max_steps: Option<Number<u64>>,
    pub on_reject: Option<Keyword<OnReject>>,
    /// Some argument could not be parsed (and was reported).
    pub incomplete: bool,
}

/// `on_reject = abort | escalate | sender(max = N)`
fn parse_on_reject(input: ParseStream) -> syn::Result<Keyword<OnReject>> {
    let token: Ident = input.parse()?;
    let name = token.to_string();
    let value = match name.as_str() {
        "abort" => OnReject::Abort,
        "escalate" => OnReject::Escalate,
        "sender" => {
            if !input.peek(syn::token::Paren) {
                return Err(syn::Error::new(
                    token.span(),
                    "a handoff returned to its sender needs a bound: write `sender(max = N)`",
                ));
            }
            let inner;
            parenthesized!(inner in input);
            let key: Ident = inner.parse()?;
            if key != "max" {
                return Err(syn::Error::new(
                    key.span(),
                    format!("expected `max = N`, found `{key}`; write `sender(max = N)`"),
                ));
            }
            inner.parse::<Token![=]>()?;
            OnReject::Sender {
                max: Number::new(inner.parse()?),
            }
        }
        _ => {
            return Err(syn::Error::new(
                token.span(),
                format!(
                    "unknown rejection route `{name}`{}; write `abort`, `escalate` or `sender(max = N)`",
                    suggestion(&name, ["abort", "escalate", "sender"])
                ),
            ));
        }
    };
    Ok(Keyword { value, token })
}

impl AgentArgs {
    /// Parses the arguments, reporting each bad one and keeping the rest.
    pub fn parse_all(cx: &Ctxt, tokens: TokenStream) -> AgentArgs {
        let mut args = AgentArgs::default();
        let mut seen: Vec<String> = Vec::new();
        let given = split_args(tokens.clone()).len();
        let parsed = parse_each(cx, tokens, |input| {
            let key = parse_key(
                input,
                &[
                    "owns",
                    "tools",
                    "to",
                    "join",
                    "quorum",
                    "timeout_ms",
                    "max_steps",
                    "on_reject",
                ],
            )?;
            let name = key.to_string();
            if seen.contains(&name) {
                return Err(duplicate(&key));
            }
            seen.push(name.clone());
            match name.as_str() {
                "owns" => args.owns = bracketed_list(input)?,
                "tools" => args.tools = bracketed_list(input)?,
                "to" => {
                    args.to_key = Some(key);
                    args.to = bracketed_list(input)?;
                }
                "join" => {
                    args.join_key = Some(key);
                    args.join = bracketed_list(input)?;
                }
                "quorum" => {
                    args.quorum_key = Some(key);
                    args.quorum = Some(Number::new(input.parse()?));
                }
                "on_reject" => args.on_reject = Some(parse_on_reject(input)?),
                "max_steps" => args.max_steps = Some(Number::new(input.parse()?)),
                _ => args.timeout_ms = Some(Number::new(input.parse()?)),
            }
            Ok(())
        });
        args.incomplete = parsed.len() < given;
        args
    }
}

/// `#[tool(needs = Authority, effect = write, guard = path, version = N, retries = N, backoff_ms = N, then = escalate)]`
/// (`effect` is required, checked in `check`; the rest are optional).
#[derive(Default)]
pub struct ToolArgs {
    pub needs: Option<Ident>,
    pub effect: Option<Keyword<Effect>>,
    /// `guard = path`: a function over the input and the root, checked
    /// before a write or destructive tool acts.
    pub guard: Option<syn::Path>,
    /// `effect = ..` was written (its value may be misspelt, reported).
    pub effect_written: bool,
    /// `version = N`: the version of the tool's description and schemas
    /// (1 when not written), published in the manifest.
    pub version: Option<Number<u64>>,
    pub retries: Option<Number<u32>>,
    pub backoff_ms: Option<Number<u64>>,
    pub then: Option<Keyword<Then>>,
}

impl ToolArgs {
    /// Parses the arguments, reporting each bad one and keeping the rest.
    pub fn parse_all(cx: &Ctxt, tokens: TokenStream) -> ToolArgs {
        let mut args = ToolArgs::default();
        parse_each(cx, tokens, |input| {
            let key = parse_key(
                input,
                &[
                    "needs",
                    "effect",
                    "guard",
                    "version",
                    "retries",
                    "backoff_ms",
                    "then",
                ],
            )?;
            // A keyword from `allowed`, read by `from_name`.
            fn one_of<T>(
                key: &Ident,
                token: Ident,
                allowed: &[&str],
                hint: &str,
                from_name: fn(&str) -> Option<T>,
            ) -> syn::Result<Keyword<T>> {
                let v = token.to_string();
                if let Some(value) = from_name(&v) {
                    return Ok(Keyword { value, token });
                }
                Err(syn::Error::new(
                    token.span(),
                    format!(
                        "unknown `{key}` value `{v}`{}; write {}{hint}",
                        suggestion(&v, allowed.iter().copied()),
                        allowed
                            .iter()
                            .map(|a| format!("`{a}`"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ),
                ))
            }
            match key.to_string().as_str() {
                "needs" if args.needs.is_none() => args.needs = Some(input.parse()?),
                "guard" if args.guard.is_none() => args.guard = Some(input.parse()?),
                "effect" if args.effect.is_none() => {
                    args.effect_written = true;
                    args.effect = Some(one_of(
                        &key,
                        input.parse()?,
                        &Effect::NAMES,
                        "",
                        Effect::from_name,
                    )?)
                }
                "version" if args.version.is_none() => {
                    args.version = Some(Number::new(input.parse()?))
                }
                "retries" if args.retries.is_none() => {
                    args.retries = Some(Number::new(input.parse()?))
                }
                "backoff_ms" if args.backoff_ms.is_none() => {
                    args.backoff_ms = Some(Number::new(input.parse()?))
                }
                "then" if args.then.is_none() => {
                    args.then = Some(one_of(
                        &key,
                        input.parse()?,
                        &Then::NAMES,
                        " (what a failure leads to once its retries, `retries = N`, are spent)",
                        Then::from_name,
                    )?)
                }
                _ => return Err(duplicate(&key)),
            }
            Ok(())
        });
        args
    }
}

/// `#[handoff(max_bytes = N, max_tokens = N, unbounded_stop, uncited_evidence)]`
/// (all optional).
#[derive(Default)]
pub struct HandoffArgs {
    pub max_bytes: Option<Number<u64>>,
    pub max_tokens: Option<Number<u64>>,
    /// `unbounded_stop`: the stop part may hold no machine-checkable condition.
    pub unbounded_stop: Option<Ident>,
    /// `uncited_evidence`: evidence naming a tool as its source may cite no
    /// call (evidence from the user's request, say).
    pub uncited_evidence: Option<Ident>,
}

/// The flags `#[handoff(..)]` takes, written alone.
const HANDOFF_FLAGS: [&str; 2] = ["unbounded_stop", "uncited_evidence"];

impl HandoffArgs {
    /// Parses the arguments, reporting each bad one and keeping the rest.
    pub fn parse_all(cx: &Ctxt, tokens: TokenStream) -> HandoffArgs {
        let mut args = HandoffArgs::default();
        parse_each(cx, tokens, |input| {
            if input.peek(Ident)
                && HANDOFF_FLAGS.contains(&input.fork().parse::<Ident>()?.to_string().as_str())
            {
                let flag: Ident = input.parse()?;
                if input.peek(Token![=]) {
                    return Err(syn::Error::new(
                        flag.span(),
                        format!("`{flag}` is a flag: write it alone, without `= ..`"),
                    ));
                }
                let slot = if flag == "unbounded_stop" {
                    &mut args.unbounded_stop
                } else {
                    &mut args.uncited_evidence
                };
                if slot.is_some() {
                    return Err(duplicate(&flag));
                }
                *slot = Some(flag);
                return Ok(());
            }
            let key = parse_key(
                input,
                &[
                    "max_bytes",
                    "max_tokens",
                    "unbounded_stop",
                    "uncited_evidence",
                ],
            )?;
            let n = Number::<u64>::new(input.parse()?);
            if n.value.is_err() {
                return Err(syn::Error::new(
                    n.lit.span(),
                    format!("`{key}` is a size: a whole number that fits in 64 bits"),
                ));
            }
            match key.to_string().as_str() {
                "max_bytes" if args.max_bytes.is_none() => args.max_bytes = Some(n),
                "max_tokens" if args.max_tokens.is_none() => args.max_tokens = Some(n),
                _ => return Err(duplicate(&key)),
            }
            Ok(())
        });
        args
    }
}

/// `#[invariants(forbid = ["path", ..], check = [function, ..])]` (both optional).
#[derive(Default)]
pub struct InvariantsArgs {
    pub forbid: Vec<LitStr>,
    pub check: Vec<syn::Path>,
}

impl InvariantsArgs {
    /// Parses the arguments, reporting each bad one and keeping the rest.
    pub fn parse_all(cx: &Ctxt, tokens: TokenStream) -> InvariantsArgs {
        let mut args = InvariantsArgs::default();
        let mut seen: Vec<String> = Vec::new();
        parse_each(cx, tokens, |input| {
            let key = parse_key(input, &["forbid", "check"])?;
            let name = key.to_string();
            if seen.contains(&name) {
                return Err(duplicate(&key));
            }
            seen.push(name.clone());
            if name == "forbid" {
                let paths: Vec<LitStr> = bracketed_list(input)?;
                for p in &paths {
                    let v = p.value();
                    if v.is_empty() || v.split('.').any(str::is_empty) {
                        return Err(syn::Error::new(
                            p.span(),
                            "a forbidden field is a field name (`ssn`) or a dotted path (`customer.email`)",
                        ));
                    }
                }
                args.forbid = paths;
            } else {
                args.check = bracketed_list(input)?;
            }
            Ok(())
        });
        args
    }
}

/// `#[pre(expr, "message")]` / `#[post(expr, "message")]`
pub struct ConditionArgs {
    pub expr: Expr,
    pub message: LitStr,
}

impl Parse for ConditionArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let expr: Expr = input.parse()?;
        if input.is_empty() {
            return Err(syn::Error::new(
                input.span(),
                "a condition needs a message that says what it protects: `(expr, \"message\")`",
            ));
        }
        input.parse::<Token![,]>()?;
        let message: LitStr = input.parse()?;
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
        Ok(ConditionArgs { expr, message })
    }
}
