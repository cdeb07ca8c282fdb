//! Writes the three crates of the compile-time benchmark (issue 18, item 2):
//! the same 50-agent, 200-edge workflow
//!
//! * `macro/`: with `#[workflow]`, `#[agent]` and `#[handoff]`;
//! * `hand/`: written by hand against the traits (the payloads with the
//!   same derives, `Debug`, `Clone`, `PartialEq` and the three `#[handoff]`
//!   adds), as
//!   `examples/src/hand_written.rs` writes the loop workload (what the macros
//!   would generate, without their compile-time checks);
//! * `plain/`: a plain enum-and-match program of the same shape (one struct
//!   per agent input, one `Next` enum per agent, a `State` enum and a loop
//!   matching on it), with no contracts, records or derives beyond `Debug`
//!   and `Clone`.
//!
//! Agent `a{i}` owns authority `R{i}`, takes `In{i}` (`a0` takes the `u32`
//! input) and hands off to `a{i+1}` .. `a{i+4}` (those below 50), and every
//! fifth agent (`a4`, `a9`, .., `a49`) also to `END`: 190 + 10 = 200 edges
//! besides `START -> a0`. The graph has no cycle, so no loop bound.
//!
//! Std only, so that `examples/compile_bench.sh` builds it with `rustc`
//! without building the `examples` crate's dependencies:
//! `gen_compile_bench OUT_DIR WORKSPACE_ROOT`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Agents in the generated workflow.
const AGENTS: usize = 50;
/// Forward edges per agent (to the next ones, below `AGENTS`).
const FAN: usize = 4;

/// The agents `i` hands off to (`None` is `END`).
fn targets(i: usize) -> Vec<Option<usize>> {
    let mut t: Vec<Option<usize>> = (i + 1..(i + 1 + FAN).min(AGENTS)).map(Some).collect();
    if i % 5 == 4 {
        t.push(None);
    }
    t
}

/// The input type of agent `i`.
fn input(i: usize) -> String {
    if i == 0 {
        "u32".into()
    } else {
        format!("In{i}")
    }
}

/// The `Next` variant naming a target.
fn variant(t: Option<usize>) -> String {
    match t {
        Some(j) => format!("A{j}"),
        None => "End".into(),
    }
}

/// Longest walk from `a0`, in turns (the graph is acyclic).
fn max_hops() -> usize {
    let mut longest = vec![1usize; AGENTS];
    for i in (0..AGENTS).rev() {
        for j in targets(i).into_iter().flatten() {
            longest[i] = longest[i].max(1 + longest[j]);
        }
    }
    longest[0]
}

/// The body of agent `i`, the same text in the macro and hand-written crates.
fn body(i: usize, out: &mut String) {
    let t = targets(i);
    let n = if i == 0 { "x" } else { "x.n" };
    let cx = if t.iter().any(Option::is_some) {
        "cx"
    } else {
        "_cx"
    };
    let _ = writeln!(
        out,
        "    async fn a{i}(x: {}, {cx}: a{i}::Context<'_>) -> Result<a{i}::Next, Reject> {{",
        input(i)
    );
    let _ = writeln!(out, "        Ok(match {n} % {} {{", t.len());
    for (k, tgt) in t.iter().enumerate() {
        let arm = if k + 1 == t.len() {
            "_".to_string()
        } else {
            k.to_string()
        };
        match tgt {
            Some(j) => {
                let _ = writeln!(
                    out,
                    "            {arm} => a{i}::Next::A{j}(in{j}(cx.lease(authority::R{j}).as_long_as_mine(), {n} + 1)),"
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "            {arm} => a{i}::Next::End(Done {{ n: {n} }}),"
                );
            }
        }
    }
    out.push_str("        })\n    }\n\n");
}

/// The payload structs' fields and their constructors.
fn payload(i: usize, attrs: bool, out: &mut String) {
    let a = |s: &str| {
        if attrs {
            format!("        {s}\n")
        } else {
            String::new()
        }
    };
    let _ = write!(
        out,
        "    /// The input of `a{i}`.\n    pub struct In{i} {{\n        /// The step.\n{}        pub op: Operation,\n        /// Under `a{i}`'s authority.\n{}        pub scope: Scope<authority::R{i}>,\n        /// None.\n{}        pub evidence: Vec<Evidence>,\n        /// None.\n{}        pub open: Vec<Uncertainty>,\n        /// The bound.\n{}        pub stop: StopWhen,\n        /// Steps so far.\n        pub n: u32,\n    }}\n\n",
        a("#[operation]"),
        a("#[authority]"),
        a("#[evidence]"),
        a("#[uncertainty]"),
        a("#[stop]"),
    );
    let _ = write!(
        out,
        "    fn in{i}(scope: Scope<authority::R{i}>, n: u32) -> In{i} {{\n        In{i} {{\n            op: Operation::new(\"step\", \"\"),\n            scope,\n            evidence: Vec::new(),\n            open: Vec::new(),\n            stop: StopWhen::at_hop(MAX_HOPS),\n            n,\n        }}\n    }}\n\n"
    );
}

fn cargo_toml(name: &str, root: &Path, deps: bool) -> String {
    let mut s = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[lib]\npath = \"src/lib.rs\"\n\n[dependencies]\n"
    );
    if deps {
        let _ = write!(
            s,
            "workflow-core = {{ path = \"{}\" }}\nserde = {{ version = \"1\", features = [\"derive\"] }}\nschemars = \"1.2\"\n",
            root.join("workflow-core").display()
        );
    }
    s
}

const DONE: &str = "/// What a run ends with.\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]\npub struct Done {\n    /// Steps done.\n    pub n: u32,\n}\n\n";

fn macro_crate() -> String {
    let mut s = String::from(
        "//! Generated by `examples/gen_compile_bench.rs`: 50 agents, 200 edges, with the macros.\n\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\nuse workflow_core::prelude::*;\n\n",
    );
    s.push_str(DONE);
    s.push_str("#[workflow(entry = a0, output = Done)]\npub mod wide {\n    use super::*;\n\n");
    for i in 1..AGENTS {
        // The same derives as the hand-written payloads besides the three
        // `#[handoff]` adds, so both crates derive the same impls.
        s.push_str("    #[handoff]\n    #[derive(Debug, Clone, PartialEq)]\n");
        payload(i, true, &mut s);
    }
    for i in 0..AGENTS {
        let to: Vec<String> = targets(i)
            .iter()
            .map(|t| t.map_or("END".into(), |j| format!("a{j}")))
            .collect();
        let _ = writeln!(
            s,
            "    /// Agent {i}.\n    #[agent(owns = [R{i}], to = [{}])]",
            to.join(", ")
        );
        body(i, &mut s);
    }
    s.push_str("}\n");
    s
}

fn hand_crate() -> String {
    let mut s = String::from(
        "//! Generated by `examples/gen_compile_bench.rs`: 50 agents, 200 edges, by hand against the traits.\n\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\n\n",
    );
    s.push_str(DONE);
    s.push_str(
        "/// The workflow, as `examples/src/hand_written.rs` lays it out.\npub mod wide {\n    use std::future::Future;\n\n    use schemars::JsonSchema;\n    use serde::{Deserialize, Serialize};\n    use workflow_core::schema::schema_name_or;\n    use workflow_core::{\n        AgentInfo, Authority, AuthorityScope, ContractView, EdgeInfo, Evidence, Executor, Graph,\n        Handoff, Node, OnReject, Operation, Reject, RunError, Runtime, SchemaSet, Scope,\n        StopWhen, Transition, Uncertainty,\n    };\n\n    use super::Done;\n\n",
    );
    for i in 1..AGENTS {
        s.push_str("    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]\n    #[serde(deny_unknown_fields)]\n");
        payload(i, false, &mut s);
        let _ = write!(
            s,
            "    impl Handoff for In{i} {{\n        type Authority = <Scope<authority::R{i}> as AuthorityScope>::Authority;\n        const PARTS: &'static [(&'static str, &'static str)] = &[\n            (\"operation\", \"op\"),\n            (\"authority\", \"scope\"),\n            (\"evidence\", \"evidence\"),\n            (\"uncertainty\", \"open\"),\n            (\"stop\", \"stop\"),\n        ];\n        fn contract(&self) -> ContractView<'_> {{\n            ContractView {{\n                parts: Self::PARTS,\n                authority: <Self::Authority as Authority>::NAME,\n                expires: AuthorityScope::expiry(&self.scope),\n                stop: &self.stop,\n                open: &self.open,\n                evidence: &self.evidence,\n                max_bytes: Self::MAX_BYTES,\n                max_tokens: Self::MAX_TOKENS,\n                unbounded_stop: Self::UNBOUNDED_STOP,\n                uncited_evidence: Self::UNCITED_EVIDENCE,\n                open_ended: false,\n            }}\n        }}\n    }}\n\n"
        );
    }
    for i in 0..AGENTS {
        body(i, &mut s);
    }
    let _ = write!(
        s,
        "    /// Upper bound on turns.\n    pub const MAX_HOPS: u32 = {};\n\n",
        max_hops()
    );
    s.push_str("    /// The authorities.\n    pub mod authority {\n");
    for i in 0..AGENTS {
        let _ = write!(
            s,
            "        /// The authority `R{i}`.\n        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]\n        pub struct R{i};\n        impl workflow_core::Authority for R{i} {{\n            const NAME: &'static str = \"R{i}\";\n        }}\n"
        );
    }
    s.push_str("    }\n\n");
    for i in 0..AGENTS {
        let _ = write!(
            s,
            "    /// Agent `a{i}`.\n    pub mod a{i} {{\n        #[allow(unused_imports)]\n        use super::*;\n\n        /// The agent's marker type.\n        #[derive(Debug, Clone, Copy, Default)]\n        pub struct Agent;\n\n        /// Where `a{i}` may hand off.\n        pub enum Next {{\n"
        );
        for t in targets(i) {
            let ty = t.map_or("Done".to_string(), |j| format!("In{j}"));
            let _ = writeln!(
                s,
                "            /// A handoff.\n            {}({ty}),",
                variant(t)
            );
        }
        let _ = write!(
            s,
            "        }}\n\n        /// What the agent sees during its turn.\n        pub type Context<'x> = workflow_core::Context<'x, super::Spec, Agent>;\n    }}\n\n"
        );
    }
    for i in 0..AGENTS {
        let _ = writeln!(
            s,
            "    impl workflow_core::Owns<authority::R{i}> for a{i}::Agent {{}}"
        );
    }
    s.push_str("\n    const _: () = {\n        const fn owns<A: workflow_core::Owns<Au>, Au: Authority>() {}\n");
    for i in 0..AGENTS {
        for j in targets(i).into_iter().flatten() {
            let _ = writeln!(
                s,
                "        owns::<a{j}::Agent, <In{j} as Handoff>::Authority>();"
            );
        }
    }
    s.push_str("    };\n\n");
    for i in 0..AGENTS {
        let ty = input(i);
        let _ = write!(
            s,
            "    impl workflow_core::Agent<Spec> for a{i}::Agent {{\n        const INDEX: u16 = {i};\n        type Input = {ty};\n        type Next = a{i}::Next;\n\n"
        );
        if i > 0 {
            let _ = write!(
                s,
                "        fn contract(input: &{ty}) -> Option<ContractView<'_>> {{\n            Some(Handoff::contract(input))\n        }}\n\n"
            );
        }
        let _ = write!(
            s,
            "        fn run(\n            input: {ty},\n            cx: a{i}::Context<'_>,\n        ) -> impl Future<Output = Result<a{i}::Next, Reject>> + Send {{\n            a{i}(input, cx)\n        }}\n    }}\n\n"
        );
    }
    // Edges: 0 is START -> a0, then each agent's targets in order.
    let mut edges = vec![(
        "Node::Start".to_string(),
        "Node::Agent(0)".to_string(),
        "u32".to_string(),
        "input",
    )];
    let mut index = Vec::new();
    for i in 0..AGENTS {
        let mut row = Vec::new();
        for t in targets(i) {
            row.push(edges.len());
            let (to, ty, role) = match t {
                Some(j) => (format!("Node::Agent({j})"), format!("In{j}"), "input"),
                None => ("Node::End".to_string(), "Done".to_string(), "output"),
            };
            edges.push((format!("Node::Agent({i})"), to, ty, role));
        }
        index.push(row);
    }
    for (i, row) in index.iter().enumerate() {
        let _ = write!(
            s,
            "    impl workflow_core::Route<Spec> for a{i}::Next {{\n        fn route(self, run: &mut Runtime<'_, Spec>) -> Result<Transition<Spec>, RunError> {{\n            match self {{\n"
        );
        for (k, t) in targets(i).into_iter().enumerate() {
            let e = row[k];
            match t {
                Some(j) => {
                    let _ = write!(
                        s,
                        "                a{i}::Next::A{j}(payload) => {{\n                    run.handoff({e}, &payload, Some(payload.contract()))?;\n                    Ok(Transition::To(State::A{j}(payload)))\n                }}\n"
                    );
                }
                None => {
                    let _ = write!(
                        s,
                        "                a{i}::Next::End(output) => {{\n                    run.end({e}, &output, None)?;\n                    Ok(Transition::End(output))\n                }}\n"
                    );
                }
            }
        }
        s.push_str("            }\n        }\n    }\n\n");
    }
    s.push_str("    /// The definition of the workflow.\n    #[derive(Debug, Clone, Copy, Default)]\n    pub struct Spec;\n\n    /// The executor.\n    pub type Workflow = Executor<Spec>;\n\n    /// Which agent runs next.\n    pub enum State {\n");
    for i in 0..AGENTS {
        let _ = writeln!(
            s,
            "        /// `a{i}` runs next.\n        A{i}({}),",
            input(i)
        );
    }
    s.push_str("    }\n\n    /// The static graph.\n    pub static GRAPH: Graph = Graph {\n        name: \"wide\",\n        agents: &[\n");
    for i in 0..AGENTS {
        let ty = input(i);
        let _ = write!(
            s,
            "            AgentInfo {{\n                name: \"a{i}\",\n                input: \"{ty}\",\n                input_schema: || schema_name_or::<{ty}>(\"input\"),\n                owns: &[\"R{i}\"],\n                tools: &[],\n                timeout_ms: None,\n                pre: &[],\n                post: &[],\n                on_reject: OnReject::Abort,\n            }},\n"
        );
    }
    s.push_str("        ],\n        edges: &[\n");
    for (from, to, ty, role) in &edges {
        let _ = write!(
            s,
            "            EdgeInfo {{\n                from: {from},\n                to: {to},\n                payload: \"{ty}\",\n                payload_schema: || schema_name_or::<{ty}>(\"{role}\"),\n                bound: None,\n            }},\n"
        );
    }
    s.push_str("        ],\n        tools: &[],\n        input: \"u32\",\n        output: \"Done\",\n        max_hops: MAX_HOPS,\n    };\n\n");
    s.push_str("    impl workflow_core::Workflow for Spec {\n        type Input = u32;\n        type Output = Done;\n        type Root = ();\n        type Deps = ();\n        type State = State;\n\n        const GRAPH: &'static Graph = &GRAPH;\n\n        fn start(input: u32, run: &mut Runtime<'_, Spec>) -> Result<State, RunError> {\n            run.handoff(0, &input, None)?;\n            Ok(State::A0(input))\n        }\n\n        async fn turn<'a, 'x>(\n            state: State,\n            run: &'a mut Runtime<'x, Spec>,\n        ) -> Result<Transition<Spec>, RunError> {\n            match state {\n");
    for i in 0..AGENTS {
        let _ = writeln!(
            s,
            "                State::A{i}(input) => run.turn::<a{i}::Agent>(input).await,"
        );
    }
    s.push_str("            }\n        }\n\n        fn agent_of(state: &State) -> u16 {\n            match state {\n");
    for i in 0..AGENTS {
        let _ = writeln!(s, "                State::A{i}(_) => {i},");
    }
    s.push_str("            }\n        }\n\n        fn schemas(set: &mut SchemaSet) {\n            set.add_or::<u32>(\"input\");\n            set.add_or::<Done>(\"output\");\n");
    for i in 0..AGENTS {
        let _ = writeln!(s, "            set.add_or::<{}>(\"input\");", input(i));
    }
    s.push_str("        }\n    }\n}\n");
    s
}

fn plain_crate() -> String {
    let mut s = String::from(
        "//! Generated by `examples/gen_compile_bench.rs`: 50 agents, 200 edges, a plain enum and match.\n\n/// What a run ends with.\n#[derive(Debug, Clone, Copy, PartialEq, Eq)]\npub struct Done {\n    /// Steps done.\n    pub n: u32,\n}\n\n/// The workflow.\npub mod wide {\n    use super::Done;\n\n",
    );
    let _ = write!(
        s,
        "    /// Upper bound on turns.\n    pub const MAX_HOPS: u32 = {};\n\n",
        max_hops()
    );
    // Stand-ins for the contract part types, so that the payloads have the same shape.
    s.push_str("    /// The step.\n    #[derive(Debug, Clone)]\n    pub struct Operation(pub String, pub String);\n    impl Operation {\n        fn new(a: &str, b: &str) -> Self {\n            Operation(a.into(), b.into())\n        }\n    }\n    /// A scope.\n    #[derive(Debug, Clone)]\n    pub struct Scope<A>(pub A);\n    /// Evidence.\n    #[derive(Debug, Clone)]\n    pub struct Evidence;\n    /// Uncertainty.\n    #[derive(Debug, Clone)]\n    pub struct Uncertainty;\n    /// A stop condition.\n    #[derive(Debug, Clone)]\n    pub struct StopWhen(pub u32);\n    impl StopWhen {\n        fn at_hop(h: u32) -> Self {\n            StopWhen(h)\n        }\n    }\n\n    /// The authorities.\n    pub mod authority {\n");
    for i in 0..AGENTS {
        let _ = writeln!(
            s,
            "        /// `R{i}`.\n        #[derive(Debug, Clone, Copy)]\n        pub struct R{i};"
        );
    }
    s.push_str("    }\n\n");
    for i in 1..AGENTS {
        s.push_str("    #[derive(Debug, Clone)]\n");
        payload(i, false, &mut s);
    }
    for i in 0..AGENTS {
        let _ = write!(
            s,
            "    /// Agent `a{i}`.\n    pub mod a{i} {{\n        #[allow(unused_imports)]\n        use super::*;\n        /// Where `a{i}` may hand off.\n        pub enum Next {{\n"
        );
        for t in targets(i) {
            let ty = t.map_or("Done".to_string(), |j| format!("In{j}"));
            let _ = writeln!(
                s,
                "            /// A handoff.\n            {}({ty}),",
                variant(t)
            );
        }
        s.push_str("        }\n    }\n\n");
    }
    for i in 0..AGENTS {
        let t = targets(i);
        let n = if i == 0 { "x" } else { "x.n" };
        let _ = writeln!(
            s,
            "    fn a{i}(x: {}) -> a{i}::Next {{\n        match {n} % {} {{",
            input(i),
            t.len()
        );
        for (k, tgt) in t.iter().enumerate() {
            let arm = if k + 1 == t.len() {
                "_".to_string()
            } else {
                k.to_string()
            };
            match tgt {
                Some(j) => {
                    let _ = writeln!(
                        s,
                        "            {arm} => a{i}::Next::A{j}(in{j}(Scope(authority::R{j}), {n} + 1)),"
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "            {arm} => a{i}::Next::End(Done {{ n: {n} }}),"
                    );
                }
            }
        }
        s.push_str("        }\n    }\n\n");
    }
    s.push_str("    /// Which agent runs next.\n    pub enum State {\n");
    for i in 0..AGENTS {
        let _ = writeln!(
            s,
            "        /// `a{i}` runs next.\n        A{i}({}),",
            input(i)
        );
    }
    s.push_str("    }\n\n    /// Runs the workflow to its end.\n    pub fn run(input: u32) -> Done {\n        let mut state = State::A0(input);\n        loop {\n            state = match state {\n");
    for i in 0..AGENTS {
        let _ = writeln!(s, "                State::A{i}(x) => match a{i}(x) {{");
        for t in targets(i) {
            match t {
                Some(j) => {
                    let _ = writeln!(
                        s,
                        "                    a{i}::Next::A{j}(p) => State::A{j}(p),"
                    );
                }
                None => {
                    let _ = writeln!(s, "                    a{i}::Next::End(d) => return d,");
                }
            }
        }
        s.push_str("                },\n");
    }
    s.push_str("            }\n        }\n    }\n}\n");
    s
}

fn write(dir: &Path, name: &str, deps: bool, lib: &str, root: &Path) -> std::io::Result<()> {
    let d = dir.join(name);
    std::fs::create_dir_all(d.join("src"))?;
    std::fs::write(
        d.join("Cargo.toml"),
        cargo_toml(&format!("bench_{name}"), root, deps),
    )?;
    std::fs::write(d.join("src/lib.rs"), lib)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: gen_compile_bench OUT_DIR WORKSPACE_ROOT");
        std::process::exit(2);
    }
    let (out, root) = (PathBuf::from(&args[1]), PathBuf::from(&args[2]));
    let edges: usize = (0..AGENTS).map(|i| targets(i).len()).sum();
    let result = (|| {
        std::fs::create_dir_all(&out)?;
        std::fs::write(
            out.join("Cargo.toml"),
            "[workspace]\nresolver = \"3\"\nmembers = [\"macro\", \"hand\", \"plain\"]\n",
        )?;
        write(&out, "macro", true, &macro_crate(), &root)?;
        write(&out, "hand", true, &hand_crate(), &root)?;
        write(&out, "plain", false, &plain_crate(), &root)
    })();
    if let Err(e) = result {
        eprintln!("cannot write {}: {e}", out.display());
        std::process::exit(1);
    }
    println!(
        "{AGENTS} agents, {edges} edges (+ START), max hops {}: {}",
        max_hops(),
        out.display()
    );
}
