//! Expansion snapshots (read them to see what the macros generate) and
//! unit tests of the rules on `parse_quote!` input, without compiling
//! anything.

use proc_macro2::TokenStream;
use quote::quote;

use crate::expand;

/// The expansion, formatted; `compile_error!`s stay visible as such.
fn pretty(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("expansion does not parse as a file: {e}\n{tokens}"),
    }
}

/// The messages of the `compile_error!`s in an expansion.
fn errors(tokens: TokenStream) -> Vec<String> {
    let file: syn::File = syn::parse2(tokens).expect("expansion parses");
    let mut out = Vec::new();
    for item in file.items {
        if let syn::Item::Macro(m) = item
            && m.mac
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "compile_error")
        {
            let lit: syn::LitStr = m.mac.parse_body().expect("a string literal");
            out.push(lit.value());
        }
    }
    out
}

fn review_loop() -> TokenStream {
    quote! {
        pub mod review {
            use super::*;

            #[handoff]
            pub struct Draft {
                #[operation] pub op: Operation,
                #[authority] pub scope: Scope<authority::Approve>,
                #[evidence] pub evidence: Vec<Evidence>,
                #[uncertainty] pub open: Vec<Uncertainty>,
                #[stop] pub stop: StopWhen,
                pub text: String,
            }

            #[tool(needs = Approve, effect = read)]
            async fn publish(text: String, _d: &()) -> Result<bool, ToolError> { Ok(true) }

            #[agent(owns = [Write], to = [reviewer], timeout_ms = 500)]
            #[pre(!draft.text.is_empty(), "something to write about")]
            async fn writer(draft: Draft, cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
                todo!()
            }

            #[agent(owns = [Approve], tools = [publish], to = [writer(max = 3), END])]
            #[post(true, "always")]
            async fn reviewer(draft: Draft, cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> {
                todo!()
            }
        }
    }
}

#[test]
fn snapshot_review_loop() {
    let out = expand::workflow(quote!(entry = writer, output = String), review_loop());
    assert!(errors(out.clone()).is_empty(), "{:?}", errors(out));
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn snapshot_handoff() {
    let out = expand::handoff(
        quote!(),
        quote! {
            pub struct Task {
                #[operation] pub op: Operation,
                #[authority] pub scope: Scope<authority::Do>,
                #[evidence] pub evidence: Vec<Evidence>,
                #[uncertainty] pub open: Vec<Uncertainty>,
                #[stop] pub stop: StopWhen,
                pub n: u32,
            }
        },
    );
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn all_errors_of_one_expansion_are_reported_together() {
    let out = expand::workflow(
        quote!(entry = writr),
        quote! {
            mod m {
                #[agent(owns = [A], to = [reviwer])]
                async fn writer(x: u32, cx: writer::Context<'_>) -> Result<writer::Next, Reject> { todo!() }
                #[agent(owns = [A], to = [reviewer])]
                async fn reviewer(x: u32, cx: reviewer::Context<'_>) -> Result<reviewer::Next, Reject> { todo!() }
                #[agent(to = [END])]
                async fn orphan(x: u32, cx: orphan::Context<'_>) -> Result<orphan::Next, Reject> { todo!() }
            }
        },
    );
    let errors = errors(out);
    let has = |needle: &str| errors.iter().any(|e| e.contains(needle));
    assert!(has("no output type"), "{errors:#?}");
    assert!(
        has("entry `writr` is not an agent of this workflow (did you mean `writer`?)"),
        "{errors:#?}"
    );
    assert!(
        has("handoff to undeclared agent `reviwer` (did you mean `reviewer`?)"),
        "{errors:#?}"
    );
    assert_eq!(
        errors
            .iter()
            .filter(|e| e.contains("role overlap: authority `A`"))
            .count(),
        2,
        "{errors:#?}"
    );
    assert!(has("unbounded loop: reviewer -> reviewer"), "{errors:#?}");
    // With a bad entry and a bad target, reachability would only repeat them.
    assert!(
        !has("cannot be reached") && !has("no path to `END`"),
        "{errors:#?}"
    );
    assert_eq!(errors.len(), 6, "{errors:#?}");
}

#[test]
fn dead_ends_are_reported_where_they_are() {
    let out = expand::workflow(
        quote!(entry = planner, output = u32),
        quote! {
            mod m {
                #[agent(to = [network])]
                async fn planner(x: u32, cx: planner::Context<'_>) -> Result<planner::Next, Reject> { todo!() }
                #[agent(to = [terraform])]
                async fn network(x: u32, cx: network::Context<'_>) -> Result<network::Next, Reject> { todo!() }
                #[agent]
                async fn terraform(x: u32, cx: terraform::Context<'_>) -> Result<terraform::Next, Reject> { todo!() }
                #[agent(to = [END])]
                async fn orphan(x: u32, cx: orphan::Context<'_>) -> Result<orphan::Next, Reject> { todo!() }
            }
        },
    );
    let errors = errors(out);
    assert_eq!(
        errors,
        [
            "agent `orphan` cannot be reached from the entry `planner`; add it to some agent's `to = [...]`, or remove it",
            "agent `terraform` has no path to `END`: every run through it would be cut by the hop cap; add `END` to its `to = [...]` or hand off to an agent that can end",
        ],
    );
}

#[test]
fn handoff_rules_name_every_problem() {
    let out = expand::handoff(
        quote!(),
        quote! {
            #[serde(default)]
            pub struct Task {
                #[operation] pub op: Option<Operation>,
                #[evidence] #[serde(skip_serializing_if = "Vec::is_empty")] pub evidence: Vec<Evidence>,
                #[evidence] pub more: Vec<Evidence>,
                #[stop] pub stop: StopWhen,
            }
        },
    );
    let errors = errors(out);
    let expected = [
        "missing its `#[authority]` part",
        "missing its `#[uncertainty]` part",
        "`#[evidence]` is marked twice, on `evidence` and `more`",
        "contract part `#[operation]` can be absent",
        "`#[serde(skip_serializing_if)]` lets contract part `#[evidence]` be dropped",
        "`#[serde(default)]` on a handoff lets every contract part be dropped",
    ];
    for e in expected {
        assert!(
            errors.iter().any(|m| m.contains(e)),
            "missing `{e}` in {errors:#?}"
        );
    }
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
}

#[test]
fn max_hops_is_the_computed_bound_lowered_by_the_cap() {
    let bound = |attr: TokenStream| {
        let out = pretty(expand::workflow(attr, review_loop()));
        out.lines()
            .find_map(|l| l.trim().strip_prefix("pub const MAX_HOPS: u32 = "))
            .map(|v| v.trim_end_matches(';').to_owned())
    };
    // writer -> reviewer, reviewer -> writer (max 3): (3 + 1) * 2.
    assert_eq!(
        bound(quote!(entry = writer, output = String)).as_deref(),
        Some("8")
    );
    assert_eq!(
        bound(quote!(entry = writer, output = String, max_hops = 5)).as_deref(),
        Some("5")
    );
}

#[test]
fn camel_names_variants() {
    let id: syn::Ident = syn::parse_quote!(network_agent);
    assert_eq!(crate::model::syntax::camel(&id), "NetworkAgent");
}

#[test]
fn condition_text_is_formatted() {
    let e: syn::Expr = syn::parse_quote!(plan.evidence.iter().all(|e| e.complete));
    assert_eq!(
        crate::codegen::expr_text(&e),
        "plan.evidence.iter().all(|e| e.complete)"
    );
    let e: syn::Expr = syn::parse_quote!(!draft.text.is_empty());
    assert_eq!(crate::codegen::expr_text(&e), "!draft.text.is_empty()");
}

#[test]
fn condition_text_of_a_match_or_block() {
    let e: syn::Expr = syn::parse_quote!(
        match *n {
            0 => false,
            _ => true,
        } == true
    );
    assert_eq!(
        crate::codegen::expr_text(&e),
        "(match *n { 0 => false, _ => true, }) == true"
    );
    let e: syn::Expr = syn::parse_quote!({ x } > 1);
    assert!(crate::codegen::expr_text(&e).contains('x'));
}

#[test]
fn snapshot_invariants() {
    let out = expand::workflow(
        quote!(entry = intake, output = String),
        quote! {
            pub mod support {
                use super::*;

                /// Pinned for every run.
                #[invariants(forbid = ["ssn", "customer.email"], check = [same_tenant])]
                pub struct Root {
                    pub tenant: String,
                }

                fn same_tenant(root: &Root, t: &TransferView<'_>) -> Result<(), String> {
                    Ok(())
                }

                #[agent(to = [END])]
                async fn intake(q: String, cx: intake::Context<'_>) -> Result<intake::Next, Reject> {
                    todo!()
                }
            }
        },
    );
    assert!(errors(out.clone()).is_empty(), "{:?}", errors(out));
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn snapshot_on_reject() {
    let out = expand::workflow(
        quote!(entry = planner, output = String),
        quote! {
            pub mod ops {
                use super::*;

                #[handoff]
                pub struct Change {
                    #[operation] pub op: Operation,
                    #[authority] pub scope: Scope<authority::Apply>,
                    #[evidence] pub evidence: Vec<Evidence>,
                    #[uncertainty] pub open: Vec<Uncertainty>,
                    #[stop] pub stop: StopWhen,
                }

                #[handoff]
                pub struct Audit {
                    #[operation] pub op: Operation,
                    #[authority] pub scope: Scope<authority::Review>,
                    #[evidence] pub evidence: Vec<Evidence>,
                    #[uncertainty] pub open: Vec<Uncertainty>,
                    #[stop] pub stop: StopWhen,
                }

                #[agent(to = [applier], on_reject = escalate)]
                async fn planner(q: String, cx: planner::Context<'_>) -> Result<planner::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Apply], to = [auditor], on_reject = sender(max = 2))]
                async fn applier(c: Change, cx: applier::Context<'_>) -> Result<applier::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Review], to = [END], on_reject = abort)]
                async fn auditor(a: Audit, cx: auditor::Context<'_>) -> Result<auditor::Next, Reject> {
                    todo!()
                }
            }
        },
    );
    assert!(errors(out.clone()).is_empty(), "{:?}", errors(out));
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn snapshot_parallel() {
    let out = expand::workflow(
        quote!(entry = lead, output = String),
        quote! {
            pub mod panel {
                use super::*;

                #[handoff]
                pub struct SecurityAsk {
                    #[contract] pub contract: Contract<authority::Security>,
                }

                #[handoff]
                pub struct StyleAsk {
                    #[contract] pub contract: Contract<authority::Style>,
                }

                #[agent(to = [parallel(security, style)])]
                async fn lead(change: String, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Security], to = [judge])]
                async fn security(a: SecurityAsk, cx: security::Context<'_>) -> Result<security::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Style], to = [judge])]
                async fn style(a: StyleAsk, cx: style::Context<'_>) -> Result<style::Next, Reject> {
                    todo!()
                }

                #[agent(join = [security: bool, style: bool], to = [END])]
                async fn judge(views: judge::Joined, cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
                    todo!()
                }
            }
        },
    );
    assert!(errors(out.clone()).is_empty(), "{:?}", errors(out));
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn snapshot_parallel_rounds() {
    // A branch of more than one turn: `security` hands on to `fixer`,
    // which hands back (bounded) before the branch reaches the join.
    let out = expand::workflow(
        quote!(entry = lead, output = String),
        quote! {
            pub mod panel {
                use super::*;

                #[handoff]
                pub struct SecurityAsk {
                    #[contract] pub contract: Contract<authority::Security>,
                }

                #[handoff]
                pub struct FixAsk {
                    #[contract] pub contract: Contract<authority::Fix>,
                }

                #[handoff]
                pub struct StyleAsk {
                    #[contract] pub contract: Contract<authority::Style>,
                }

                #[agent(to = [parallel(security, style)])]
                async fn lead(change: String, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Security], to = [fixer, judge])]
                async fn security(a: SecurityAsk, cx: security::Context<'_>) -> Result<security::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Fix], to = [security(max = 2)])]
                async fn fixer(a: FixAsk, cx: fixer::Context<'_>) -> Result<fixer::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Style], to = [judge])]
                async fn style(a: StyleAsk, cx: style::Context<'_>) -> Result<style::Next, Reject> {
                    todo!()
                }

                #[agent(join = [security: bool, style: bool], to = [END])]
                async fn judge(views: judge::Joined, cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
                    todo!()
                }
            }
        },
    );
    assert!(errors(out.clone()).is_empty(), "{:?}", errors(out));
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn snapshot_parallel_nested() {
    // A fan-out inside a branch: `review` fans out to `a` and `b`, whose
    // join `panel` hands the branch's outcome to the outer join.
    let out = expand::workflow(
        quote!(entry = lead, output = String),
        quote! {
            pub mod panel {
                use super::*;

                #[handoff]
                pub struct ReviewAsk {
                    #[contract] pub contract: Contract<authority::Review>,
                }

                #[handoff]
                pub struct AAsk {
                    #[contract] pub contract: Contract<authority::A>,
                }

                #[handoff]
                pub struct BAsk {
                    #[contract] pub contract: Contract<authority::B>,
                }

                #[handoff]
                pub struct StyleAsk {
                    #[contract] pub contract: Contract<authority::Style>,
                }

                #[agent(to = [parallel(review, style)])]
                async fn lead(change: String, cx: lead::Context<'_>) -> Result<lead::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Review], to = [parallel(a, b)])]
                async fn review(r: ReviewAsk, cx: review::Context<'_>) -> Result<review::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [A], to = [inner])]
                async fn a(x: AAsk, cx: a::Context<'_>) -> Result<a::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [B], to = [inner])]
                async fn b(x: BAsk, cx: b::Context<'_>) -> Result<b::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Inner], join = [a: bool, b: bool], to = [judge])]
                async fn inner(views: inner::Joined, cx: inner::Context<'_>) -> Result<inner::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Style], to = [judge])]
                async fn style(a: StyleAsk, cx: style::Context<'_>) -> Result<style::Next, Reject> {
                    todo!()
                }

                #[agent(join = [review: bool, style: bool], to = [END])]
                async fn judge(views: judge::Joined, cx: judge::Context<'_>) -> Result<judge::Next, Reject> {
                    todo!()
                }
            }
        },
    );
    assert!(errors(out.clone()).is_empty(), "{:?}", errors(out));
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn snapshot_map_quorum() {
    let out = expand::workflow(
        quote!(entry = dispatch, output = String),
        quote! {
            pub mod files {
                use super::*;

                #[handoff]
                pub struct Job {
                    #[contract] pub contract: Contract<authority::Work>,
                }

                #[agent(to = [map(worker, max = 16)])]
                async fn dispatch(paths: Vec<String>, cx: dispatch::Context<'_>) -> Result<dispatch::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Work], to = [gather])]
                async fn worker(job: Job, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
                    todo!()
                }

                #[agent(join = [worker: [bool]], quorum = 2, to = [END])]
                async fn gather(all: gather::Joined, cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
                    todo!()
                }
            }
        },
    );
    assert!(errors(out.clone()).is_empty(), "{:?}", errors(out));
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn snapshot_tool_policies() {
    let out = expand::workflow(
        quote!(entry = operator, output = String),
        quote! {
            pub mod infra {
                use super::*;

                /// Lists the running machines.
                #[tool(effect = read)]
                async fn list(filter: String, _d: &()) -> Result<Vec<String>, ToolError> { todo!() }

                /// Deletes a machine, retried on transient failures.
                #[tool(needs = Destroy, effect = destructive, retries = 3, backoff_ms = 250, then = escalate)]
                async fn delete(machine: String, _d: &()) -> Result<bool, ToolError> { todo!() }

                #[agent(owns = [Destroy], tools = [list, delete], to = [END])]
                async fn operator(q: String, cx: operator::Context<'_>) -> Result<operator::Next, Reject> {
                    todo!()
                }
            }
        },
    );
    assert!(errors(out.clone()).is_empty(), "{:?}", errors(out));
    insta::assert_snapshot!(pretty(out));
}

/// The model of `module` under `attr`, with the errors found building it.
fn model(
    attr: TokenStream,
    module: syn::ItemMod,
) -> (Option<crate::model::workflow::Workflow>, TokenStream) {
    let cx = crate::ctxt::Ctxt::new();
    let args = crate::parse::WorkflowArgs::parse_all(&cx, attr);
    let wf = crate::model::workflow::Workflow::from_module(&cx, args, module);
    (wf, cx.check())
}

#[test]
fn the_model_holds_typed_tool_policies_and_numbers_parsed_once() {
    use crate::model::value::{Effect, OnReject, Then};
    let (wf, errors) = model(
        quote!(entry = a, output = String, max_hops = 7),
        syn::parse_quote! {
            mod m {
                #[tool(needs = X, effect = destructive, retries = 3, backoff_ms = 99999999999999999999, then = escalate)]
                async fn t(i: String, _d: &()) -> Result<bool, ToolError> { todo!() }
                #[agent(owns = [X], tools = [t], to = [END], timeout_ms = 500, max_steps = 5, on_reject = sender(max = 4))]
                async fn a(q: String, cx: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
            }
        },
    );
    assert!(errors.is_empty(), "{errors}");
    let wf = wf.expect("a model");
    assert_eq!(
        wf.agents[0].args.max_steps.as_ref().and_then(|n| n.get()),
        Some(5)
    );
    assert_eq!(wf.args.max_hops.as_ref().and_then(|n| n.get()), Some(7));
    let t = &wf.tools[0].args;
    assert_eq!(
        t.effect.as_ref().map(|e| e.value),
        Some(Effect::Destructive)
    );
    assert_eq!(t.then.as_ref().map(|e| e.value), Some(Then::Escalate));
    assert_eq!(t.retries.as_ref().and_then(|n| n.get()), Some(3));
    // Parsed once, kept with why it does not parse (for the number rule).
    let backoff = t.backoff_ms.as_ref().expect("backoff_ms");
    assert!(
        backoff
            .value
            .as_ref()
            .is_err_and(|e| e.contains("too large"))
    );
    let a = &wf.agents[0].args;
    assert_eq!(a.timeout_ms.as_ref().and_then(|n| n.get()), Some(500));
    assert!(matches!(
        a.on_reject.as_ref().map(|o| &o.value),
        Some(OnReject::Sender { max }) if max.get() == Some(4)
    ));
}

#[test]
fn building_the_model_reports_nothing_the_rules_report() {
    // A non-async agent with a `?` condition and a duplicated tool: the
    // model takes them in; only the rules (`check/`) report them.
    let (wf, errors) = model(
        quote!(entry = a, output = String),
        syn::parse_quote! {
            mod m {
                #[tool(effect = read)]
                async fn t(i: String, _d: &()) -> Result<bool, ToolError> { todo!() }
                #[tool(effect = read)]
                async fn t(i: String, _d: &()) -> Result<bool, ToolError> { todo!() }
                #[agent(to = [END])]
                #[pre(q.parse::<u32>()? > 1, "a number")]
                fn a(q: String, cx: a::Context<'_>) -> Result<a::Next, Reject> { todo!() }
            }
        },
    );
    assert!(errors.is_empty(), "{errors}");
    let wf = wf.expect("a model");
    assert_eq!(wf.tools.len(), 1);
    assert!(!wf.agents[0].pre[0].is_plain());
    let cx = crate::ctxt::Ctxt::new();
    crate::check::workflow::check(&cx, &wf);
    let reported = cx.check().to_string();
    for needle in [
        "tool `t` is declared twice",
        "`?` is not allowed",
        "agent `a` must be an `async fn`",
    ] {
        assert!(
            reported.contains(needle),
            "missing `{needle}` in {reported}"
        );
    }
}

#[test]
fn max_hops_counts_every_possible_item_of_a_map_in_every_round() {
    let out = pretty(expand::workflow(
        quote!(entry = dispatch, output = String),
        quote! {
            pub mod files {
                use super::*;

                #[handoff]
                pub struct Job {
                    #[contract] pub contract: Contract<authority::Work>,
                }

                #[handoff]
                pub struct Again {
                    #[contract] pub contract: Contract<authority::Dispatch>,
                }

                #[agent(owns = [Dispatch], to = [map(worker, max = 3)])]
                async fn dispatch(a: Again, cx: dispatch::Context<'_>) -> Result<dispatch::Next, Reject> {
                    todo!()
                }

                #[agent(owns = [Work], to = [gather])]
                async fn worker(job: Job, cx: worker::Context<'_>) -> Result<worker::Next, Reject> {
                    todo!()
                }

                #[agent(join = [worker: [bool]], to = [dispatch(max = 2), END])]
                async fn gather(all: gather::Joined, cx: gather::Context<'_>) -> Result<gather::Next, Reject> {
                    todo!()
                }
            }
        },
    ));
    let hops = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("pub const MAX_HOPS: u32 = "))
        .map(|v| v.trim_end_matches(';').to_owned());
    // Three rounds (the first and two back to `dispatch`), each the
    // dispatcher, three workers and the gatherer.
    assert_eq!(hops.as_deref(), Some("15"));
}
