//! Code for the workflow itself: the `Spec` implementing
//! `workflow_core::Workflow` (start, turn, restore, schemas), the `State`
//! and the static graph the executor and the manifest read.

use crate::check::parallel::{EdgeKind, ForkModel};
use crate::graph::Target;
use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;

use crate::check::workflow::Resolved;
use crate::model::workflow::Workflow;

use super::{body_call, output_ty};

pub(super) fn spec(wf: &Workflow, r: &Resolved) -> TokenStream {
    let wf_name = wf.name.unraw().to_string();
    let (spec, state) = (super::generated(wf, "Spec"), super::generated(wf, "State"));
    // Left out when an agent takes the name (reported).
    let executor = (!super::agent_named(wf, "Workflow")).then(|| {
        quote! {
            /// The executor of this workflow: `Workflow::new(root, deps).run(input)`.
            pub type Workflow = ::workflow_core::__private::Executor<#spec>;
        }
    });
    let entry = &wf.agents[r.graph.entry];
    let entry_v = entry.variant.clone();
    let input = &entry.input_ty;
    let output = output_ty(wf);
    let root = match &wf.invariants {
        Some(i) => quote!(#i),
        None => quote!(()),
    };
    let deps = match &wf.args.deps {
        Some(d) => quote!(#d),
        None => quote!(()),
    };
    let states = wf.agents.iter().map(|a| {
        let v = a.variant.clone();
        let ty = &a.input_ty;
        let doc = format!("`{}` runs next.", a.name);
        quote!(#[doc = #doc] #v(#ty))
    });
    // Each agent's turn, an arm of the run's loop (`__wf_drive`): an error
    // leaves the arm with `break '__wf_turn`, as the turn's result, for the
    // loop to decide what follows (the value is bound first: `break 'label
    // ::path` reads to syn as a label's declaration).
    let turns = wf.agents.iter().map(|a| {
        let (v, n) = (a.variant.clone(), &a.name);
        let body_future = body_call(a);
        quote! {
            #state::#v(input) => {
                if let ::workflow_core::__private::Result::Err(e) = run.receive::<#n::Agent>(&input) {
                    let failed = ::workflow_core::__private::Result::Err(e);
                    break '__wf_turn failed;
                }
                // The turn's context borrows the run's state until its body
                // returns: nothing counted in or out.
                let cx = run.turn_context::<#n::Agent>();
                // The body's future is built where it is awaited and pinned
                // there: the instrumentation around it holds a `Pin<&mut _>`,
                // not the future (moving a future of a 160-byte payload into
                // each wrapper cost a transition two copies of 216 bytes).
                // One future with a time limit or without (the timer boxed
                // in it, when there is one), so the body is polled from one
                // place. The body's future is dropped at the block's end,
                // before the delivery or a timeout is recorded (it borrows
                // the run through `cx`). Inlined, not one call to
                // `Runtime::turn` (which does the same steps): that call's
                // nested future costs a transition more moves, and saved no
                // measurable `cargo check` time (book, performance,
                // "Compile time").
                let finished = {
                    let body = ::core::pin::pin!(#body_future);
                    run.limited_turn::<#n::Agent, _>(body).await
                };
                let ::workflow_core::__private::Option::Some(result) = finished else {
                    let failed = ::workflow_core::__private::Result::Err(run.timed_out::<#n::Agent>());
                    break '__wf_turn failed;
                };
                run.deliver_turn::<#n::Agent>(result)
            }
        }
    });
    // Each fan-out: a state of its own (the branches' inputs), whose turn
    // runs every branch at once and records the join's transfer, and the
    // static `Fork` the runtime reads.
    let mut fork_states = Vec::new();
    let mut fork_turns = Vec::new();
    let mut fork_statics = Vec::new();
    let mut fork_agent_of = Vec::new();
    let mut fork_encodes = Vec::new();
    let mut fork_restores = Vec::new();
    let mut fork_infos = Vec::new();
    for (f, fork) in r.forks.iter().enumerate() {
        let v = quote::format_ident!("__Fork{}", f);
        let stat = quote::format_ident!("__WF_FORK_{}", f);
        let from = &wf.agents[fork.from].name;
        let doc = format!("The branches of `{from}`'s fan-out run next.");
        match (fork.map, fork.branches.first()) {
            (Some(_), Some(&b)) => {
                let ty = super::input_alias(&wf.agents[b]);
                fork_states.push(
                    quote!(#[doc = #doc] #[doc(hidden)] #v(::workflow_core::__private::Vec<#ty>)),
                );
            }
            _ => fork_states.push(quote!(#[doc = #doc] #[doc(hidden)] #v(#from::Parallel))),
        }
        let from_u16 = fork.from as u16;
        let first = fork.branches.first().map_or(from_u16, |&b| b as u16);
        fork_agent_of.push(quote!(#state::#v(_) => #first,));
        fork_encodes.push(quote! {
            #state::#v(_) => ::workflow_core::__private::Result::Err(
                ::workflow_core::__private::String::from("a fan-out's state is not one payload"),
            ),
        });
        let branches = fork.edges.iter().map(|(start, outcome)| {
            let start = (*start + 1) as u16;
            let outcome = outcome.map_or(0, |o| (o + 1) as u16);
            quote!(::workflow_core::__private::ForkBranch { start: #start, outcome: #outcome })
        });
        let join_edge = fork.join_edge.map_or(0, |e| (e + 1) as u16);
        let map = match fork.map {
            Some(max) => quote!(::workflow_core::__private::Option::Some(#max)),
            None => quote!(::workflow_core::__private::Option::None),
        };
        let policy = match fork.quorum {
            Some(q) => quote!(::workflow_core::__private::JoinPolicy::Quorum(#q)),
            None => quote!(::workflow_core::__private::JoinPolicy::All),
        };
        fork_infos.push(quote! {
            ::workflow_core::__private::ForkInfo { fork: &#stat, map: #map, policy: #policy }
        });
        fork_statics.push(quote! {
            #[doc(hidden)]
            static #stat: ::workflow_core::__private::Fork = ::workflow_core::__private::Fork {
                from: #from_u16,
                branches: &[#(#branches),*],
                join: #join_edge,
            };
        });
        // A fan-out whose rules failed (reported) gets a turn that compiles.
        let Some(join) = fork.join.filter(|_| fork.clean) else {
            fork_turns.push(quote! {
                #state::#v(_) => ::workflow_core::__private::Result::Err(
                    ::workflow_core::__private::RunError::Protocol(
                        ::workflow_core::__private::String::from("the fan-out is malformed (reported at compile time)"),
                    ),
                ),
            });
            continue;
        };
        // A fan-out inside a branch runs in its outer fan-out's turn
        // (`rounds`): never a state of its own.
        if fork.inside.is_some() {
            let from_str = from.unraw().to_string();
            let why = format!(
                "the fan-out of `{from_str}` is inside a branch: it runs in its outer fan-out's turn"
            );
            fork_turns.push(quote! {
                #state::#v(_) => ::workflow_core::__private::Result::Err(
                    ::workflow_core::__private::RunError::Protocol(
                        ::workflow_core::__private::String::from(#why),
                    ),
                ),
            });
            fork_restores.push(quote! {
                #from_u16 => ::workflow_core::__private::Result::Err(
                    ::workflow_core::__private::String::from(#why),
                ),
            });
            continue;
        }
        let join_agent = &wf.agents[join];
        let (join_name, join_v) = (&join_agent.name, &join_agent.variant);
        // The bodies, at once; under a quorum, until that many are done.
        let run_bodies = |turns: TokenStream| match fork.quorum {
            Some(q) => {
                let q = q as usize;
                quote!(::workflow_core::__private::run_branches_quorum(#turns, #q).await;)
            }
            None => quote!(::workflow_core::__private::run_branches(#turns).await;),
        };
        if let (Some(max), Some(&b)) = (fork.map, fork.branches.first()) {
            // Resuming inside a map: its starts alone do not say how many
            // items the list had (a crash may have cut the starts), so the
            // fan-out agent's turn runs again and hands each recorded start
            // the item recorded for it (`run/fork_resume.rs`).
            fork_restores.push(quote! {
                #from_u16 => ::workflow_core::__private::Result::Ok(::workflow_core::__private::Option::None),
            });
            let b = &wf.agents[b].name;
            let alias = quote::format_ident!("__wf_branch_output_{}", b.unraw());
            let run = run_bodies(quote!(&mut bodies));
            fork_turns.push(quote! {
                #state::#v(items) => {
                    let mut fork = run.fork_map(&#stat, items.len(), #max)?;
                    let mut turns = ::workflow_core::__private::Vec::with_capacity(items.len());
                    for (k, item) in items.into_iter().enumerate() {
                        turns.push(run.branch::<#b::Agent>(&mut fork, k as u16, item)?);
                    }
                    {
                        let mut bodies: ::workflow_core::__private::Vec<&mut dyn ::workflow_core::__private::BranchBody> =
                            turns.iter_mut().map(|t| t as &mut dyn ::workflow_core::__private::BranchBody).collect();
                        #run
                    }
                    let mut #b = ::workflow_core::__private::Vec::with_capacity(turns.len());
                    for turn in turns {
                        #b.push(run.settle::<#b::Agent, #alias>(
                            &mut fork,
                            turn,
                            |next| match next { #b::Next::#join_v(out) => out },
                            ::workflow_core::__private::no_contract,
                        )?);
                    }
                    let joined = #join_name::Joined { #b };
                    run.join::<#join_name::Agent>(fork, &joined)?;
                    ::workflow_core::__private::Result::Ok(
                        ::workflow_core::__private::Transition::To(#state::#join_v(joined)),
                    )
                }
            });
            continue;
        }
        let names: Vec<_> = fork.branches.iter().map(|&b| &wf.agents[b].name).collect();
        let turns: Vec<_> = (0..names.len())
            .map(|k| quote::format_ident!("__wf_branch_{}", k))
            .collect();
        // Resuming inside the fan-out: its static, and its state rebuilt
        // from the branches' recorded inputs.
        let count = names.len();
        let from_str = from.unraw().to_string();
        let fields = names
            .iter()
            .enumerate()
            .map(|(k, b)| quote!(#b: inputs[#k].decode()?));
        fork_restores.push(quote! {
            #from_u16 => {
                if inputs.len() < #count {
                    return ::workflow_core::__private::Result::Ok(::workflow_core::__private::Option::None);
                }
                if inputs.len() > #count {
                    return ::workflow_core::__private::Result::Err(::workflow_core::__private::format!(
                        "the fan-out of `{}` has {} branches, {} were recorded",
                        #from_str, #count, inputs.len(),
                    ));
                }
                ::workflow_core::__private::Result::Ok(::workflow_core::__private::Option::Some(
                    #state::#v(#from::Parallel { #(#fields),* }),
                ))
            }
        });
        if fork.multi_turn() {
            let (items, arm) = rounds(wf, r, f, fork, join, &spec, &state);
            fork_statics.push(items);
            fork_turns.push(arm);
            continue;
        }
        let starts = names.iter().zip(&turns).enumerate().map(|(k, (b, t))| {
            let k = k as u16;
            quote!(let mut #t = run.branch::<#b::Agent>(&mut fork, #k, parallel.#b)?;)
        });
        let settles = names.iter().zip(&turns).map(|(b, t)| {
            let alias = quote::format_ident!("__wf_branch_output_{}", b.unraw());
            quote! {
                let #b = run.settle::<#b::Agent, #alias>(
                    &mut fork,
                    #t,
                    |next| match next { #b::Next::#join_v(out) => out },
                    ::workflow_core::__private::no_contract,
                )?;
            }
        });
        let run = run_bodies(quote!(&mut [
            #(&mut #turns as &mut dyn ::workflow_core::__private::BranchBody),*
        ]));
        fork_turns.push(quote! {
            #state::#v(parallel) => {
                let mut fork = run.fork(&#stat)?;
                #(#starts)*
                #run
                #(#settles)*
                let joined = #join_name::Joined { #(#names),* };
                run.join::<#join_name::Agent>(fork, &joined)?;
                ::workflow_core::__private::Result::Ok(
                    ::workflow_core::__private::Transition::To(#state::#join_v(joined)),
                )
            }
        });
    }
    // Left to the trait's default (none) in a workflow without fan-outs.
    let forks_const = (!fork_infos.is_empty()).then(|| {
        quote!(const FORKS: &'static [::workflow_core::__private::ForkInfo] = &[#(#fork_infos),*];)
    });
    let encodes = wf.agents.iter().map(|a| {
        let v = a.variant.clone();
        quote!(#state::#v(payload) => ::workflow_core::__private::encode(out, payload),)
    });
    let restores = wf.agents.iter().enumerate().map(|(i, a)| {
        let v = a.variant.clone();
        let i = i as u16;
        quote!(#i => payload.decode().map(#state::#v),)
    });
    let agent_of = wf.agents.iter().enumerate().map(|(i, a)| {
        let v = a.variant.clone();
        let i = i as u16;
        quote!(#state::#v(_) => #i,)
    });
    // Each type with the name its schema takes when it has none of its own
    // (see `graph::schema_name`).
    let mut schema_types: Vec<(TokenStream, String)> = vec![
        (quote!(#input), "input".into()),
        (output.clone(), "output".into()),
    ];
    schema_types.extend(wf.agents.iter().map(|a| {
        let t = &a.input_ty;
        (quote!(#t), "input".into())
    }));
    schema_types.extend(wf.tools.iter().flat_map(|t| {
        let (i, o) = (&t.input_ty, &t.output_ty);
        let name = t.name.unraw().to_string();
        [
            (quote!(#i), format!("{name}.input")),
            (quote!(#o), format!("{name}.output")),
        ]
    }));
    if let Some(i) = &wf.invariants {
        schema_types.push((quote!(#i), "invariants".into()));
    }
    let schema_adds = schema_types
        .iter()
        .map(|(ty, role)| quote!(set.add_or::<#ty>(#role);));
    let graph = super::graph::graph(wf, r);
    let entry_name = &entry.name;
    let invariants = wf
        .invariants
        .as_ref()
        .map(|root| super::invariants::invariants(wf, root));
    // Only a workflow with a fan-out restores one (the default refuses).
    let restore_fork = (!fork_restores.is_empty()).then(|| {
        quote! {
            fn restore_fork(
                agent: u16,
                inputs: &[::workflow_core::__private::RecordedPayload<'_>],
            ) -> ::workflow_core::__private::Result<::workflow_core::__private::Option<#state>, ::workflow_core::__private::String> {
                let _ = inputs;
                match agent {
                    #(#fork_restores)*
                    _ => ::workflow_core::__private::Result::Err(
                        ::workflow_core::__private::format!("agent {} starts no fan-out", agent),
                    ),
                }
            }
        }
    });
    // A run resumed at a join's record reads the branches' verdicts from
    // the join agent's restored input, as the run that recorded it did.
    let join_verdicts: Vec<_> = wf
        .agents
        .iter()
        .filter(|a| a.args.join_key.is_some())
        .map(|a| {
            let (v, name) = (&a.variant, &a.name);
            quote!(#state::#v(input) => <#name::Agent as ::workflow_core::__private::Agent<#spec>>::verdicts(input),)
        })
        .collect();
    let state_verdicts = (!join_verdicts.is_empty()).then(|| {
        quote! {
            fn state_verdicts(
                state: &#state,
            ) -> ::workflow_core::__private::Vec<::workflow_core::__private::BranchVerdict> {
                match state {
                    #(#join_verdicts)*
                    _ => ::workflow_core::__private::Vec::new(),
                }
            }
        }
    });
    // The run's loop: the turns from `state` on, one (`Workflow::turn`) or
    // to the run's end (`Workflow::run_to_end`). One loop rather than a
    // turn's future per turn: the state is not moved into a new future and
    // back out of its result at every transition (book, performance).
    // A fan-out's turn is a function of its own, its errors returned with
    // `?` as the turn's result.
    let (fork_arm, fork_fn) = if fork_turns.is_empty() {
        (None, None)
    } else {
        // Bound under a name of the macro's own: a user's `const fork` in
        // scope would make a plain `fork` a pattern matching that constant.
        let arm = quote! {
            __wf_fork_state => #spec::__wf_fork(__wf_fork_state, run).await,
        };
        let function = quote! {
            /// A fan-out's turn: its branches run, and their join.
            fn __wf_fork<'a, 'x>(
                state: #state,
                run: &'a mut ::workflow_core::__private::Runtime<'x, #spec>,
            ) -> impl ::workflow_core::__private::Future<
                Output = ::workflow_core::__private::Result<::workflow_core::__private::Transition<#spec>, ::workflow_core::__private::RunError>,
            > + Send + 'a {
                async move {
                    match state {
                        #(#fork_turns)*
                        _ => ::workflow_core::__private::Result::Err(
                            ::workflow_core::__private::RunError::Protocol(
                                ::workflow_core::__private::String::from("an agent's turn taken for a fan-out's"),
                            ),
                        ),
                    }
                }
            }
        };
        (Some(arm), Some(function))
    };
    let drive = quote! {
        impl #spec {
            /// The turns from `state` on: one (`once`), or until the run
            /// ends or stops.
            fn __wf_drive<'a, 'x>(
                state: #state,
                run: &'a mut ::workflow_core::__private::Runtime<'x, #spec>,
                once: bool,
            ) -> impl ::workflow_core::__private::Future<
                Output = ::workflow_core::__private::Result<::workflow_core::__private::Transition<#spec>, ::workflow_core::__private::RunError>,
            > + Send + 'a {
                async move {
                    let mut state = state;
                    loop {
                        let next = '__wf_turn: {
                            match state {
                                #(#turns)*
                                #fork_arm
                            }
                        };
                        if once {
                            return next;
                        }
                        match next {
                            ::workflow_core::__private::Result::Ok(::workflow_core::__private::Transition::To(next)) => state = next,
                            ::workflow_core::__private::Result::Ok(end) => return ::workflow_core::__private::Result::Ok(end),
                            ::workflow_core::__private::Result::Err(e) => state = run.after_error(e)?,
                        }
                    }
                }
            }

            #fork_fn
        }
    };
    let doc = format!("The definition of workflow `{wf_name}`; run it with [`Workflow`].");
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy, Default)]
        pub struct #spec;

        #executor

        #invariants

        /// Which agent runs next, with its input.
        pub enum #state {
            #(#states,)*
            #(#fork_states,)*
        }

        #(#fork_statics)*

        #drive

        impl ::workflow_core::__private::Workflow for #spec {
            type Input = #input;
            type Output = #output;
            type Root = #root;
            type Deps = #deps;
            type State = #state;
            const GRAPH: &'static ::workflow_core::__private::Graph = &#graph;
            #forks_const

            fn start(
                input: #input,
                run: &mut ::workflow_core::__private::Runtime<'_, #spec>,
            ) -> ::workflow_core::__private::Result<#state, ::workflow_core::__private::RunError> {
                let contract =
                    <#entry_name::Agent as ::workflow_core::__private::Agent<#spec>>::contract(&input);
                run.handoff(0, &input, contract)?;
                ::workflow_core::__private::Result::Ok(#state::#entry_v(input))
            }

            fn turn<'a, 'x>(
                state: #state,
                run: &'a mut ::workflow_core::__private::Runtime<'x, #spec>,
            ) -> impl ::workflow_core::__private::Future<
                Output = ::workflow_core::__private::Result<::workflow_core::__private::Transition<#spec>, ::workflow_core::__private::RunError>,
            > + Send + 'a {
                #spec::__wf_drive(state, run, true)
            }

            fn run_to_end<'a, 'x>(
                state: #state,
                run: &'a mut ::workflow_core::__private::Runtime<'x, #spec>,
            ) -> impl ::workflow_core::__private::Future<
                Output = ::workflow_core::__private::Result<#output, ::workflow_core::__private::RunError>,
            > + Send + 'a {
                async move {
                    match #spec::__wf_drive(state, run, false).await? {
                        ::workflow_core::__private::Transition::End(output) => ::workflow_core::__private::Result::Ok(output),
                        ::workflow_core::__private::Transition::To(_) => ::workflow_core::__private::Result::Err(
                            ::workflow_core::__private::RunError::Protocol(
                                ::workflow_core::__private::String::from("the run's loop stopped before its end"),
                            ),
                        ),
                    }
                }
            }

            fn agent_of(state: &#state) -> u16 {
                match state {
                    #(#agent_of)*
                    #(#fork_agent_of)*
                }
            }

            fn restore(
                agent: u16,
                payload: &::workflow_core::__private::RecordedPayload<'_>,
            ) -> ::workflow_core::__private::Result<#state, ::workflow_core::__private::String> {
                match agent {
                    #(#restores)*
                    _ => ::workflow_core::__private::Result::Err(
                        ::workflow_core::__private::format!("no agent {} in this workflow", agent),
                    ),
                }
            }

            #restore_fork
            #state_verdicts

            fn encode_state(
                state: &#state,
                out: &mut ::workflow_core::__private::Vec<u8>,
            ) -> ::workflow_core::__private::Result<::workflow_core::__private::PayloadFormat, ::workflow_core::__private::String> {
                match state {
                    #(#encodes)*
                    #(#fork_encodes)*
                }
            }

            fn schemas(set: &mut ::workflow_core::__private::SchemaSet) {
                #(#schema_adds)*
            }
        }
    }
}

/// The turn of a fan-out whose branches take more than one turn: the
/// branches run in rounds, one turn of each at a time (all at once), then
/// each turn is settled in branch order: handed on inside its branch (a
/// step, whose turn runs in the next round), to the join (the branch's
/// outcome), or to a fan-out inside the branch (its first start). Then the
/// fan-outs opened in the round run, in branch order, one after the other,
/// each to its join, whose turn runs in the next round. Records are
/// committed in that order whatever order the bodies finish in. Returns the
/// module-level items (the enums of the branches' turns) and the match arm.
fn rounds(
    wf: &Workflow,
    r: &Resolved,
    f: usize,
    fork: &ForkModel,
    join: usize,
    spec: &syn::Ident,
    state: &syn::Ident,
) -> (TokenStream, TokenStream) {
    let v = quote::format_ident!("__Fork{}", f);
    let stat = quote::format_ident!("__WF_FORK_{}", f);
    let turn_enum = turn_enum_name(f);
    let join_agent = &wf.agents[join];
    let (join_name, join_v) = (&join_agent.name, &join_agent.variant);
    let mut items = turn_items(wf, f, fork, spec);
    let mut inside: Vec<usize> = fork.nested.iter().map(|&(_, g)| g).collect();
    while let Some(g) = inside.pop() {
        items.extend(turn_items(wf, g, &r.forks[g], spec));
        inside.extend(r.forks[g].nested.iter().map(|&(_, h)| h));
    }
    let starts = fork.branches.iter().enumerate().map(|(k, &b)| {
        let (n, bv) = (&wf.agents[b].name, &wf.agents[b].variant);
        let k16 = k as u16;
        quote! {
            __wf_turns.push(#turn_enum::#bv(run.branch::<#n::Agent>(&mut fork, #k16, parallel.#n)?));
        }
    });
    let outs = out_decls(wf, f, fork);
    let nested_decls = nested_decls(wf, r, fork, spec);
    let arms = settle_arms(wf, r, f, fork, &quote!(fork), &quote!(__wf_next));
    let pass2 = nested_runs(
        wf,
        r,
        fork,
        &turn_enum,
        &quote!(fork),
        &quote!(__wf_next),
        spec,
    );
    let fields = joined_fields(wf, f, fork);
    let n = fork.branches.len();
    let arm = quote! {
        #state::#v(parallel) => {
            let mut fork = run.fork_rounds(&#stat)?;
            let mut __wf_turns: ::workflow_core::__private::Vec<#turn_enum<'_>> =
                ::workflow_core::__private::Vec::with_capacity(#n);
            #(#starts)*
            #(#outs)*
            #nested_decls
            // One round: every branch's current turn readied (the record
            // each will write numbered), run at once, then each settled in
            // branch order.
            while !__wf_turns.is_empty() {
                for turn in __wf_turns.iter_mut() {
                    turn.ready(run, &mut fork)?;
                }
                {
                    let mut bodies: ::workflow_core::__private::Vec<&mut dyn ::workflow_core::__private::BranchBody> =
                        __wf_turns.iter_mut().map(|t| t.body()).collect();
                    ::workflow_core::__private::run_branches(&mut bodies).await;
                }
                let mut __wf_next = ::workflow_core::__private::Vec::with_capacity(__wf_turns.len());
                for turn in __wf_turns {
                    match turn {
                        #(#arms)*
                    }
                }
                #pass2
                __wf_turns = __wf_next;
            }
            let joined = #join_name::Joined { #(#fields),* };
            run.join::<#join_name::Agent>(fork, &joined)?;
            ::workflow_core::__private::Result::Ok(
                ::workflow_core::__private::Transition::To(#state::#join_v(joined)),
            )
        }
    };
    (items, arm)
}

/// The enum of fan-out `f`'s branch turns.
fn turn_enum_name(f: usize) -> syn::Ident {
    quote::format_ident!("__WfFork{}Turn", f)
}

/// Where a round keeps nested fan-out `g` opened in it.
fn nested_slot(g: usize) -> syn::Ident {
    quote::format_ident!("__wf_nested_{}", g)
}

/// Where fan-out `f` keeps branch `k`'s outcome.
fn out_name(f: usize, k: usize) -> syn::Ident {
    quote::format_ident!("__wf_out_{}_{}", f, k)
}

/// The enum of the turns of fan-out `f`'s branches (one variant per agent
/// of its branches), with the body and the readying of each.
fn turn_items(wf: &Workflow, f: usize, fork: &ForkModel, spec: &syn::Ident) -> TokenStream {
    let turn_enum = turn_enum_name(f);
    let from = &wf.agents[fork.from].name;
    let agents: Vec<usize> = fork.regions.iter().flatten().copied().collect();
    let variants = agents.iter().map(|&a| {
        let (n, av) = (&wf.agents[a].name, &wf.agents[a].variant);
        quote!(#av(::workflow_core::__private::BranchTurn<'x, #spec, #n::Agent>))
    });
    let bodies = agents.iter().map(|&a| {
        let av = &wf.agents[a].variant;
        quote!(Self::#av(turn) => turn,)
    });
    let readies = agents.iter().map(|&a| {
        let av = &wf.agents[a].variant;
        quote!(Self::#av(turn) => run.ready(fork, turn),)
    });
    let doc = format!("The turns of the branches of `{from}`'s fan-out, one per branch at a time.");
    quote! {
        #[doc = #doc]
        #[doc(hidden)]
        enum #turn_enum<'x> {
            #(#variants),*
        }

        impl<'x> #turn_enum<'x> {
            fn body(&mut self) -> &mut dyn ::workflow_core::__private::BranchBody {
                match self {
                    #(#bodies)*
                }
            }

            fn ready(
                &mut self,
                run: &mut ::workflow_core::__private::Runtime<'x, #spec>,
                fork: &mut ::workflow_core::__private::ForkRun,
            ) -> ::workflow_core::__private::Result<(), ::workflow_core::__private::RunError> {
                match self {
                    #(#readies)*
                }
            }
        }
    }
}

/// The declarations of fan-out `f`'s branch outcomes, none yet.
fn out_decls(wf: &Workflow, f: usize, fork: &ForkModel) -> Vec<TokenStream> {
    // A map inside a branch: one outcome per item, as many as it started
    // (its variable `__wf_fork_{f}`).
    if fork.map.is_some() {
        let o = out_name(f, 0);
        let a = super::agent::branch_output_alias(&wf.agents[fork.branches[0]]);
        let fork_var = quote::format_ident!("__wf_fork_{}", f);
        return vec![quote! {
            let mut #o: ::workflow_core::__private::Vec<
                ::workflow_core::__private::Option<::workflow_core::__private::Branch<#a>>,
            > = (0..#fork_var.branches()).map(|_| ::workflow_core::__private::Option::None).collect();
        }];
    }
    (0..fork.branches.len())
        .map(|k| {
            let o = out_name(f, k);
            let a = super::agent::branch_output_alias(&wf.agents[fork.branches[k]]);
            quote! {
                let mut #o: ::workflow_core::__private::Option<::workflow_core::__private::Branch<#a>> =
                    ::workflow_core::__private::Option::None;
            }
        })
        .collect()
}

/// The fields of fan-out `f`'s join input: each branch's outcome.
fn joined_fields(wf: &Workflow, f: usize, fork: &ForkModel) -> Vec<TokenStream> {
    if fork.map.is_some() {
        let (n, o) = (&wf.agents[fork.branches[0]].name, out_name(f, 0));
        let missing = format!("an item of `{}` ended without an outcome", n.unraw());
        return vec![quote! {
            #n: #o
                .into_iter()
                .map(|o| o.ok_or_else(|| ::workflow_core::__private::RunError::Protocol(
                    ::workflow_core::__private::String::from(#missing),
                )))
                .collect::<::workflow_core::__private::Result<::workflow_core::__private::Vec<_>, _>>()?
        }];
    }
    fork.branches
        .iter()
        .enumerate()
        .map(|(k, &b)| {
            let (n, o) = (&wf.agents[b].name, out_name(f, k));
            let missing = format!("branch `{}` ended without an outcome", n.unraw());
            quote! {
                #n: #o.ok_or_else(|| ::workflow_core::__private::RunError::Protocol(
                    ::workflow_core::__private::String::from(#missing),
                ))?
            }
        })
        .collect()
}

/// The match arms settling a turn of fan-out `f` (its variable `fork_var`),
/// in the enum of its branch turns: what it handed on, recorded (or, in a
/// resumed run, read back), the next turn of its branch pushed to
/// `next_var`.
fn settle_arms(
    wf: &Workflow,
    r: &Resolved,
    f: usize,
    fork: &ForkModel,
    fork_var: &TokenStream,
    next_var: &TokenStream,
) -> Vec<TokenStream> {
    let turn_enum = turn_enum_name(f);
    let agents: Vec<(usize, usize)> = fork
        .regions
        .iter()
        .enumerate()
        .flat_map(|(k, region)| region.iter().map(move |&a| (k, a)))
        .collect();
    agents.iter().map(|&(k, x)| {
        let (xn, xv) = (&wf.agents[x].name, &wf.agents[x].variant);
        let o = out_name(f, k);
        // A map's outcomes: one per item, its branch.
        let (o, item) = match fork.map {
            Some(_) => (
                quote!(#o[usize::from(__wf_item)]),
                quote!(let __wf_item = turn.branch();),
            ),
            None => (quote!(#o), TokenStream::new()),
        };
        let a = super::agent::branch_output_alias(&wf.agents[fork.branches[k]]);
        let mut ran = Vec::new();
        let mut recorded = Vec::new();
        for (i, (e, kind)) in r.graph.edges.iter().zip(&r.kinds).enumerate() {
            if e.from != x {
                continue;
            }
            let edge = (i + 1) as u16; // edge 0 is START -> entry
            match (kind, e.to) {
                (EdgeKind::Outcome { fork: of, .. }, Target::Agent(j)) if *of == f => {
                    let jv = &wf.agents[j].variant;
                    ran.push(quote! {
                        #xn::Next::#jv(out) => {
                            #o = ::workflow_core::__private::Option::Some(run.hand_to_join(
                                &mut #fork_var, handing, #edge, out, ::workflow_core::__private::no_contract,
                            )?);
                        }
                    });
                    recorded.push(quote! {
                        #edge => {
                            #o = ::workflow_core::__private::Option::Some(
                                run.settle_recorded::<#xn::Agent, #a>(&mut #fork_var, branch, seq)?,
                            );
                        }
                    });
                }
                (EdgeKind::Plain, Target::Agent(y)) => {
                    let (yn, yv) = (&wf.agents[y].name, &wf.agents[y].variant);
                    ran.push(quote! {
                        #xn::Next::#yv(input) => #next_var.push(#turn_enum::#yv(
                            run.step::<#yn::Agent>(&mut #fork_var, handing, #edge, input)?,
                        )),
                    });
                    recorded.push(quote! {
                        #edge => #next_var.push(#turn_enum::#yv(
                            run.step_recorded::<#yn::Agent>(&mut #fork_var, branch, depth, seq)?,
                        )),
                    });
                }
                // A map inside the branch: its first item's start now (or,
                // handed no item, its join), the rest once the round is
                // settled.
                (EdgeKind::Start { fork: g, branch: 0 }, _)
                    if fork.nested.iter().any(|n| n.1 == *g) && r.forks[*g].map.is_some() =>
                {
                    let inner = &r.forks[*g];
                    let stat = quote::format_ident!("__WF_FORK_{}", g);
                    let slot = nested_slot(*g);
                    let max = inner.map.unwrap_or(1);
                    let b0 = &wf.agents[inner.branches[0]].name;
                    let Some(j) = inner.join else { continue };
                    let (jn, jv) = (&wf.agents[j].name, &wf.agents[j].variant);
                    ran.push(quote! {
                        #xn::Next::Map(items) => {
                            let (__wf_inner, __wf_first, __wf_rest) = run.fan_out_map_in_branch::<#b0::Agent>(
                                &mut #fork_var, handing, &#stat, #max, items,
                            )?;
                            match __wf_first {
                                ::workflow_core::__private::Option::Some(__wf_first) => {
                                    #slot = ::workflow_core::__private::Option::Some((__wf_inner, __wf_first, __wf_rest));
                                }
                                ::workflow_core::__private::Option::None => #next_var.push(#turn_enum::#jv(
                                    run.join_in_branch::<#jn::Agent>(
                                        &mut #fork_var, __wf_inner, #jn::Joined { #b0: ::workflow_core::__private::Vec::new() },
                                    )?,
                                )),
                            }
                        }
                    });
                    recorded.push(quote! {
                        #edge => {
                            let (__wf_inner, __wf_first) = run.map_recorded::<#b0::Agent>(
                                &mut #fork_var, branch, depth, seq, &#stat,
                            )?;
                            let __wf_rest = (1..__wf_inner.branches())
                                .map(|i| run.recorded_input::<#b0::Agent>(&__wf_inner, i as u16))
                                .collect::<::workflow_core::__private::Result<::workflow_core::__private::Vec<_>, _>>()?;
                            #slot = ::workflow_core::__private::Option::Some((__wf_inner, __wf_first, __wf_rest));
                        }
                    });
                }
                // A map inside the branch handed no item: its join was the
                // turn's record.
                (EdgeKind::Join { fork: g }, Target::Agent(j))
                    if fork.nested.iter().any(|n| n.1 == *g) && r.forks[*g].map.is_some() =>
                {
                    let inner = &r.forks[*g];
                    let stat = quote::format_ident!("__WF_FORK_{}", g);
                    let b0 = &wf.agents[inner.branches[0]].name;
                    let (jn, jv) = (&wf.agents[j].name, &wf.agents[j].variant);
                    recorded.push(quote! {
                        #edge => {
                            let __wf_inner = run.empty_map_recorded(&mut #fork_var, branch, depth, seq, &#stat)?;
                            #next_var.push(#turn_enum::#jv(run.join_in_branch::<#jn::Agent>(
                                &mut #fork_var, __wf_inner, #jn::Joined { #b0: ::workflow_core::__private::Vec::new() },
                            )?));
                        }
                    });
                }
                // A fan-out inside the branch: its first start now, the
                // rest once the round is settled.
                (EdgeKind::Start { fork: g, branch: 0 }, _) if fork.nested.iter().any(|n| n.1 == *g) => {
                    let inner = &r.forks[*g];
                    let stat = quote::format_ident!("__WF_FORK_{}", g);
                    let slot = nested_slot(*g);
                    let b0 = &wf.agents[inner.branches[0]].name;
                    let given = inner.branches[1..].iter().map(|&b| {
                        let n = &wf.agents[b].name;
                        quote!(parallel.#n,)
                    });
                    let read = inner.branches.iter().enumerate().skip(1).map(|(i, &b)| {
                        let n = &wf.agents[b].name;
                        let i = i as u16;
                        quote!(run.recorded_input::<#n::Agent>(&__wf_inner, #i)?,)
                    });
                    ran.push(quote! {
                        #xn::Next::Parallel(parallel) => {
                            let (__wf_inner, __wf_first) = run.fan_out_in_branch::<#b0::Agent>(
                                &mut #fork_var, handing, &#stat, parallel.#b0,
                            )?;
                            #slot = ::workflow_core::__private::Option::Some((__wf_inner, __wf_first, (#(#given)*)));
                        }
                    });
                    recorded.push(quote! {
                        #edge => {
                            let (__wf_inner, __wf_first) = run.fan_out_recorded::<#b0::Agent>(
                                &mut #fork_var, branch, depth, seq, &#stat,
                            )?;
                            let __wf_rest = (#(#read)*);
                            #slot = ::workflow_core::__private::Option::Some((__wf_inner, __wf_first, __wf_rest));
                        }
                    });
                }
                _ => {}
            }
        }
        let x_str = xn.unraw().to_string();
        quote! {
            #turn_enum::#xv(turn) => { #item match run.finish(&mut #fork_var, turn)? {
                ::workflow_core::__private::Finished::Ran(next, handing) => match next {
                    #(#ran)*
                },
                ::workflow_core::__private::Finished::Ended(ended) => {
                    #o = ::workflow_core::__private::Option::Some(ended.retyped());
                }
                ::workflow_core::__private::Finished::Recorded { branch, depth, seq, edge } => match edge {
                    #(#recorded)*
                    _ => {
                        return ::workflow_core::__private::Result::Err(::workflow_core::__private::RunError::Protocol(
                            ::workflow_core::__private::format!(
                                "record #{} of branch {} took edge {}, which agent `{}` does not take",
                                seq, branch, edge, #x_str,
                            ),
                        ));
                    }
                },
            } }
        }
    }).collect()
}

/// The slots a round of fan-out `fork` keeps the fan-outs inside its
/// branches in, once opened: each one's fan-out, its first branch's turn,
/// the other branches' inputs.
fn nested_decls(wf: &Workflow, r: &Resolved, fork: &ForkModel, spec: &syn::Ident) -> TokenStream {
    fork.nested
        .iter()
        .map(|&(_, g)| {
            let slot = nested_slot(g);
            let inner = &r.forks[g];
            let b0 = &wf.agents[inner.branches[0]].name;
            let rest = match inner.map {
                // A map: the other items.
                Some(_) => {
                    let ty = super::input_alias(&wf.agents[inner.branches[0]]);
                    quote!(::workflow_core::__private::Vec<#ty>)
                }
                None => {
                    let tys = inner.branches[1..].iter().map(|&b| {
                        let ty = super::input_alias(&wf.agents[b]);
                        quote!(#ty,)
                    });
                    quote!((#(#tys)*))
                }
            };
            quote! {
                let mut #slot: ::workflow_core::__private::Option<(
                    ::workflow_core::__private::ForkRun,
                    ::workflow_core::__private::BranchTurn<'_, #spec, #b0::Agent>,
                    #rest,
                )> = ::workflow_core::__private::Option::None;
            }
        })
        .collect()
}

/// Once a round of fan-out `fork` (its variable `fork_var`, its enum of
/// turns `turn_enum`, its next round's turns `next_var`) is settled: the
/// fan-outs inside its branches opened in the round, in branch order.
fn nested_runs(
    wf: &Workflow,
    r: &Resolved,
    fork: &ForkModel,
    turn_enum: &syn::Ident,
    fork_var: &TokenStream,
    next_var: &TokenStream,
    spec: &syn::Ident,
) -> TokenStream {
    let mut nested: Vec<&(usize, usize)> = fork.nested.iter().collect();
    nested.sort_by_key(|(k, _)| *k);
    nested
        .iter()
        .map(|&&(_, g)| nested_run(wf, r, turn_enum, fork_var, next_var, g, spec))
        .collect()
}

/// Nested fan-out `g`, if a turn of the round just settled opened it, run to
/// its join: the rest of its starts, its rounds (each settled, then the
/// fan-outs inside its own branches), its join, whose agent's turn runs in
/// the outer fan-out's next round.
fn nested_run(
    wf: &Workflow,
    r: &Resolved,
    outer_enum: &syn::Ident,
    outer_fork: &TokenStream,
    outer_next: &TokenStream,
    g: usize,
    spec: &syn::Ident,
) -> TokenStream {
    let inner = &r.forks[g];
    let slot = nested_slot(g);
    let inner_enum = turn_enum_name(g);
    let Some(join) = inner.join else {
        return TokenStream::new();
    };
    let fork_var = quote::format_ident!("__wf_fork_{}", g);
    let turns = quote::format_ident!("__wf_turns_{}", g);
    let next = quote::format_ident!("__wf_next_{}", g);
    let (join_name, join_v) = (&wf.agents[join].name, &wf.agents[join].variant);
    let b0v = &wf.agents[inner.branches[0]].variant;
    let starts: Vec<TokenStream> = match inner.map {
        // A map: each other item, in the list's order.
        Some(_) => {
            let (n, bv) = (&wf.agents[inner.branches[0]].name, &wf.agents[inner.branches[0]].variant);
            vec![quote! {
                for (i, item) in __wf_rest.into_iter().enumerate() {
                    #turns.push(#inner_enum::#bv(run.branch::<#n::Agent>(&mut #fork_var, (i + 1) as u16, item)?));
                }
            }]
        }
        None => inner
            .branches
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, &b)| {
                let (n, bv) = (&wf.agents[b].name, &wf.agents[b].variant);
                let k16 = i as u16;
                let field = syn::Index::from(i - 1);
                quote! {
                    #turns.push(#inner_enum::#bv(run.branch::<#n::Agent>(&mut #fork_var, #k16, __wf_rest.#field)?));
                }
            })
            .collect(),
    };
    let outs = out_decls(wf, g, inner);
    let arms = settle_arms(wf, r, g, inner, &quote!(#fork_var), &quote!(#next));
    let decls = nested_decls(wf, r, inner, spec);
    let pass2 = nested_runs(
        wf,
        r,
        inner,
        &inner_enum,
        &quote!(#fork_var),
        &quote!(#next),
        spec,
    );
    let fields = joined_fields(wf, g, inner);
    let n = inner.branches.len();
    // Its branches at once; under a quorum (branches of one turn), until
    // that many are done.
    let run_bodies = match inner.quorum {
        Some(q) => {
            let q = q as usize;
            quote!(::workflow_core::__private::run_branches_quorum(&mut bodies, #q).await;)
        }
        None => quote!(::workflow_core::__private::run_branches(&mut bodies).await;),
    };
    quote! {
        if let ::workflow_core::__private::Option::Some((mut #fork_var, __wf_first, __wf_rest)) = #slot.take() {
            run.nested_starts(&#outer_fork, &mut #fork_var);
            let mut #turns: ::workflow_core::__private::Vec<#inner_enum<'_>> =
                ::workflow_core::__private::Vec::with_capacity(#n);
            #turns.push(#inner_enum::#b0v(__wf_first));
            #(#starts)*
            #(#outs)*
            #decls
            while !#turns.is_empty() {
                for turn in #turns.iter_mut() {
                    turn.ready(run, &mut #fork_var)?;
                }
                {
                    let mut bodies: ::workflow_core::__private::Vec<&mut dyn ::workflow_core::__private::BranchBody> =
                        #turns.iter_mut().map(|t| t.body()).collect();
                    #run_bodies
                }
                let mut #next = ::workflow_core::__private::Vec::with_capacity(#turns.len());
                for turn in #turns {
                    match turn {
                        #(#arms)*
                    }
                }
                #pass2
                #turns = #next;
            }
            let joined = #join_name::Joined { #(#fields),* };
            #outer_next.push(#outer_enum::#join_v(
                run.join_in_branch::<#join_name::Agent>(&mut #outer_fork, #fork_var, joined)?,
            ));
        }
    }
}
