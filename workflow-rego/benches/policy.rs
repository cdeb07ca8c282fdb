//! Criterion benchmarks of one `Policy::evaluate` call on the documented
//! transition input: the three example policies of `tests/policies/`
//! together (allowed and denied transitions), one of them alone, and a rule
//! that never holds (the cost of any evaluation).
//!
//! Run: `cargo bench -p workflow-rego --bench policy`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use workflow_rego::{Policy, PolicyDecision};

const ENVIRONMENT_PINNING: &str = include_str!("../tests/policies/environment_pinning.rego");
const MUTATION_LIMITS: &str = include_str!("../tests/policies/mutation_limits.rego");
const FORBIDDEN_JURISDICTIONS: &str =
    include_str!("../tests/policies/forbidden_jurisdictions.rego");

fn transition(payload: Value) -> Value {
    json!({
        "workflow": "deploy",
        "run_id": 123,
        "hop": 2,
        "sender": "network",
        "receiver": "terraform",
        "payload_type": "TerraformPlan",
        "contract": {
            "operation": { "name": "apply_plan", "description": "apply the reviewed plan" },
            "authority": { "owns": ["routes"], "expires": null },
            "evidence": [{ "source": "plan.json", "claim": "3 routes change" }],
            "uncertainty": [],
            "stop": { "max_hops": 8 }
        },
        "payload": payload,
        "root": { "allowed_env": "staging", "max_changed_routes": 5 },
    })
}

fn evaluate(c: &mut Criterion) {
    let mut all =
        Policy::from_rego("environment_pinning.rego", ENVIRONMENT_PINNING).expect("compiles");
    all.add_rego("mutation_limits.rego", MUTATION_LIMITS)
        .expect("compiles");
    all.add_rego("forbidden_jurisdictions.rego", FORBIDDEN_JURISDICTIONS)
        .expect("compiles");
    all.add_data(json!({ "forbidden_jurisdictions": ["cn-north-1", "ru-central1"] }))
        .expect("valid data");
    let one = Policy::from_rego("mutation_limits.rego", MUTATION_LIMITS).expect("compiles");
    // What every evaluation pays whatever the rules: converting the input
    // and a fresh interpreter over the compiled policy.
    let never = Policy::from_rego(
        "never.rego",
        "package workflow\n\ndeny contains \"no\" if { false }\n",
    )
    .expect("compiles");

    let allowed = transition(json!({
        "target_env": "staging", "vpc_env": "staging", "routes": 3, "region": "eu-west-1"
    }));
    let denied = transition(json!({
        "target_env": "prod", "vpc_env": "staging", "routes": 9, "region": "cn-north-1"
    }));
    assert_eq!(all.evaluate(&allowed), Ok(PolicyDecision::Allow));
    assert!(matches!(all.evaluate(&denied), Ok(PolicyDecision::Deny(m)) if m.len() == 3));

    let mut group = c.benchmark_group("policy evaluate");
    group.bench_function("three modules, allowed", |b| {
        b.iter(|| all.evaluate(black_box(&allowed)))
    });
    group.bench_function("three modules, denied (3 messages)", |b| {
        b.iter(|| all.evaluate(black_box(&denied)))
    });
    group.bench_function("one module, allowed", |b| {
        b.iter(|| one.evaluate(black_box(&allowed)))
    });
    group.bench_function("a rule that never holds (the fixed cost)", |b| {
        b.iter(|| never.evaluate(black_box(&allowed)))
    });
    group.finish();
}

criterion_group!(benches, evaluate);
criterion_main!(benches);
