//! Rego policies (files under `tests/policies/`)
//! decide on the documented transition input: an empty `deny` allows, each
//! message denies, and a broken policy is an error, never an allow.

use serde_json::{Value, json};
use workflow_rego::{Policy, PolicyDecision, PolicyError, PolicyStage};

const ENVIRONMENT_PINNING: &str = include_str!("policies/environment_pinning.rego");
const MUTATION_LIMITS: &str = include_str!("policies/mutation_limits.rego");
const FORBIDDEN_JURISDICTIONS: &str = include_str!("policies/forbidden_jurisdictions.rego");

// The executor shares one policy between sessions and threads.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Policy>();
    send_sync::<PolicyError>();
};

/// The input the executor passes for one transition, with this payload and
/// these root invariants.
fn transition(payload: Value, root: Value) -> Value {
    json!({
        "workflow": "deploy",
        "run_id": 123,
        "hop": 2,
        "sender": "network",
        "receiver": "terraform",
        "payload_type": "TerraformPlan",
        "contract": {
            "operation": { "name": "apply_plan" },
            "authority": { "owns": ["routes"] },
            "evidence": [],
            "uncertainty": [],
            "stop": { "max_hops": 8 }
        },
        "payload": payload,
        "root": root,
    })
}

fn root() -> Value {
    json!({ "allowed_env": "staging", "max_changed_routes": 5 })
}

fn deny(messages: &[&str]) -> PolicyDecision {
    PolicyDecision::Deny(messages.iter().map(|m| (*m).to_owned()).collect())
}

fn policy(name: &str, source: &str) -> Policy {
    match Policy::from_rego(name, source) {
        Ok(policy) => policy,
        Err(e) => panic!("{name} should compile: {e}"),
    }
}

#[test]
fn environment_pinning_allows_the_pinned_environment_only() {
    let policy = policy("environment_pinning.rego", ENVIRONMENT_PINNING);

    let pinned = json!({ "target_env": "staging", "vpc_env": "staging", "routes": 1 });
    assert_eq!(
        policy.evaluate(&transition(pinned, root())),
        Ok(PolicyDecision::Allow)
    );

    let prod = json!({ "target_env": "prod", "vpc_env": "staging", "routes": 1 });
    assert_eq!(
        policy.evaluate(&transition(prod, root())),
        Ok(deny(&[
            "target_env `prod` is not the pinned environment `staging`"
        ]))
    );

    let prod_vpc = json!({ "target_env": "staging", "vpc_env": "prod", "routes": 1 });
    assert_eq!(
        policy.evaluate(&transition(prod_vpc, root())),
        Ok(deny(&[
            "vpc_env `prod` is not the pinned environment `staging`"
        ]))
    );
}

#[test]
fn mutation_limits_deny_more_routes_than_the_root_allows() {
    let policy = policy("mutation_limits.rego", MUTATION_LIMITS);

    for routes in [0, 5] {
        assert_eq!(
            policy.evaluate(&transition(json!({ "routes": routes }), root())),
            Ok(PolicyDecision::Allow),
            "{routes} routes are within the limit"
        );
    }
    assert_eq!(
        policy.evaluate(&transition(json!({ "routes": 6 }), root())),
        Ok(deny(&["the plan changes 6 routes, over the limit of 5"]))
    );
}

#[test]
fn forbidden_jurisdictions_come_from_data() {
    let mut policy = policy("forbidden_jurisdictions.rego", FORBIDDEN_JURISDICTIONS);
    let cn = transition(json!({ "region": "cn-north-1" }), root());

    // Without the data the list is undefined: nothing is forbidden yet.
    assert_eq!(policy.evaluate(&cn), Ok(PolicyDecision::Allow));

    policy
        .add_data(json!({ "forbidden_jurisdictions": ["cn-north-1", "ru-central1"] }))
        .expect("an object is valid data");
    assert_eq!(
        policy.evaluate(&transition(json!({ "region": "eu-west-1" }), root())),
        Ok(PolicyDecision::Allow)
    );
    assert_eq!(
        policy.evaluate(&cn),
        Ok(deny(&["region `cn-north-1` is a forbidden jurisdiction"]))
    );
}

#[test]
fn messages_of_every_module_come_back_sorted() {
    let mut policy = policy("mutation_limits.rego", MUTATION_LIMITS);
    policy
        .add_rego("forbidden_jurisdictions.rego", FORBIDDEN_JURISDICTIONS)
        .expect("compiles");
    policy
        .add_rego("environment_pinning.rego", ENVIRONMENT_PINNING)
        .expect("compiles");
    policy
        .add_data(json!({ "forbidden_jurisdictions": ["ru-central1"] }))
        .expect("valid data");
    assert_eq!(
        policy.modules(),
        [
            "mutation_limits.rego",
            "forbidden_jurisdictions.rego",
            "environment_pinning.rego"
        ]
    );

    let everything_wrong = json!({
        "target_env": "prod", "vpc_env": "dev", "routes": 40, "region": "ru-central1"
    });
    assert_eq!(
        policy.evaluate(&transition(everything_wrong, root())),
        Ok(deny(&[
            "region `ru-central1` is a forbidden jurisdiction",
            "target_env `prod` is not the pinned environment `staging`",
            "the plan changes 40 routes, over the limit of 5",
            "vpc_env `dev` is not the pinned environment `staging`",
        ]))
    );

    let fine = json!({
        "target_env": "staging", "vpc_env": "staging", "routes": 2, "region": "eu-west-1"
    });
    assert_eq!(
        policy.evaluate(&transition(fine, root())),
        Ok(PolicyDecision::Allow)
    );
}

#[test]
fn a_syntax_error_names_the_module_and_the_line() {
    let err = Policy::from_rego(
        "broken.rego",
        "package workflow\n\ndeny contains msg if {\n\tmsg := \"unclosed\"\n",
    )
    .expect_err("the rule body is not closed");
    assert_eq!(err.stage(), PolicyStage::Compile);
    assert_eq!(err.module(), "broken.rego");
    assert!(
        err.message().contains("broken.rego:"),
        "regorus' message carries the position: {err}"
    );
    assert!(
        err.to_string()
            .starts_with("cannot compile policy module `broken.rego`: "),
        "{err}"
    );
}

#[test]
fn an_unsafe_variable_is_an_error() {
    let err = Policy::from_rego(
        "unsafe.rego",
        "package workflow\n\ndeny contains \"too many\" if {\n\tx > 1\n}\n",
    )
    .expect_err("`x` is never bound");
    assert_eq!(err.stage(), PolicyStage::Compile);
    assert!(
        err.message()
            .ends_with("error: use of undefined variable `x` is unsafe"),
        "{err}"
    );

    // regorus finds an unbound variable in a rule head only when the body
    // holds: then it is an evaluation error, still not an allow.
    let policy = policy(
        "unsafe_head.rego",
        "package workflow\n\ndeny contains msg if {\n\tinput.payload.routes > 1\n}\n",
    );
    let err = policy
        .evaluate(&transition(json!({ "routes": 3 }), root()))
        .expect_err("`msg` is never bound");
    assert_eq!(err.stage(), PolicyStage::Evaluate);
    assert!(err.message().contains("var msg is unsafe"), "{err}");
}

#[test]
fn the_first_module_must_be_package_workflow_with_a_deny_rule() {
    let err = Policy::from_rego(
        "other.rego",
        "package deploy\n\ndeny contains \"no\" if { true }\n",
    )
    .expect_err("wrong package");
    assert_eq!(
        err.to_string(),
        "cannot compile policy module `other.rego`: the first module declares \
         `package deploy`; write `package workflow` (other packages can be added with `add_rego`)"
    );

    // A misspelt rule name would otherwise allow everything.
    let err = Policy::from_rego(
        "typo.rego",
        "package workflow\n\ndenny contains \"no\" if { true }\n",
    )
    .expect_err("no deny rule");
    assert_eq!(err.stage(), PolicyStage::Compile);
    assert!(err.message().contains("declares no `deny` rule"), "{err}");
}

#[test]
fn a_deny_rule_yielding_a_non_string_is_an_error() {
    let policy = policy(
        "numbers.rego",
        "package workflow\n\ndeny contains input.payload.routes if { input.payload.routes > 3 }\n",
    );
    assert_eq!(
        policy.evaluate(&transition(json!({ "routes": 1 }), root())),
        Ok(PolicyDecision::Allow)
    );
    let err = policy
        .evaluate(&transition(json!({ "routes": 7 }), root()))
        .expect_err("7 is not a message");
    assert_eq!(
        err.to_string(),
        "cannot evaluate policy `numbers.rego`: `data.workflow.deny` contains `7`, \
         not a string; make every `deny` rule yield a message string"
    );
}

#[test]
fn a_deny_that_is_not_a_set_is_an_error() {
    let policy = policy(
        "boolean.rego",
        "package workflow\n\ndeny if { input.payload.routes > 3 }\n",
    );
    let err = policy
        .evaluate(&transition(json!({ "routes": 7 }), root()))
        .expect_err("a boolean is not a set of messages");
    assert_eq!(err.stage(), PolicyStage::Evaluate);
    assert!(err.message().contains("not a set of strings"), "{err}");
}

#[test]
fn an_evaluation_error_is_an_error_not_an_allow() {
    // `count` of a number is a type error (regorus raises builtin errors).
    let policy = policy(
        "count.rego",
        "package workflow\n\ndeny contains \"too many routes\" if { count(input.payload.routes) > 3 }\n",
    );
    assert_eq!(
        policy.evaluate(&transition(
            json!({ "routes": ["a", "b", "c", "d"] }),
            root()
        )),
        Ok(deny(&["too many routes"]))
    );
    let err = policy
        .evaluate(&transition(json!({ "routes": 7 }), root()))
        .expect_err("count(7) fails");
    assert_eq!(err.stage(), PolicyStage::Evaluate);
    assert_eq!(err.module(), "count.rego");
}

#[test]
fn a_builtin_left_out_of_the_build_is_an_evaluation_error() {
    // regorus' `regex` feature is off: the module compiles, and the call
    // fails when a body reaches it (an error, so a rejection, not an allow).
    let policy = policy(
        "regex.rego",
        "package workflow\n\ndeny contains \"prod\" if { regex.match(\"^prod\", input.payload.target_env) }\n",
    );
    let err = policy
        .evaluate(&transition(json!({ "target_env": "prod-eu" }), root()))
        .expect_err("regex.match is not in the build");
    assert_eq!(err.stage(), PolicyStage::Evaluate);
    assert!(
        err.message()
            .ends_with("error: could not find function regex.match"),
        "{err}"
    );
}

#[test]
fn a_panic_inside_regorus_is_an_error() {
    // regorus' `sprintf` expects ASCII digits in a width: `%٣d` panics in it.
    let policy = policy(
        "width.rego",
        "package workflow\n\ndeny contains msg if {\n\tmsg := sprintf(\"%\u{663}d\", [1])\n}\n",
    );
    let err = policy
        .evaluate(&transition(json!({}), root()))
        .expect_err("regorus panics");
    assert_eq!(
        err.to_string(),
        "cannot evaluate policy `width.rego`: regorus panicked: could not get digit from char"
    );
}

#[test]
fn a_failed_addition_leaves_the_policy_as_it_was() {
    let mut policy = policy("mutation_limits.rego", MUTATION_LIMITS);

    let err = policy
        .add_rego("broken.rego", "package workflow\n\ndeny contains msg if {")
        .expect_err("syntax error");
    assert_eq!(
        (err.stage(), err.module()),
        (PolicyStage::Compile, "broken.rego")
    );

    let err = policy
        .add_rego("mutation_limits.rego", MUTATION_LIMITS)
        .expect_err("same name twice");
    assert!(err.message().contains("already added"), "{err}");

    let err = policy
        .add_data(json!(["not", "an", "object"]))
        .expect_err("data is an object");
    assert_eq!(err.stage(), PolicyStage::Data);

    policy.add_data(json!({ "limit": 1 })).expect("valid data");
    let err = policy
        .add_data(json!({ "limit": 2 }))
        .expect_err("`limit` given two values");
    assert_eq!(err.stage(), PolicyStage::Data);

    assert_eq!(policy.modules(), ["mutation_limits.rego"]);
    assert_eq!(
        policy.evaluate(&transition(json!({ "routes": 6 }), root())),
        Ok(deny(&["the plan changes 6 routes, over the limit of 5"]))
    );
}

#[test]
fn one_policy_evaluates_on_many_threads() {
    let policy = policy("mutation_limits.rego", MUTATION_LIMITS);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|routes| {
                let policy = &policy;
                s.spawn(move || {
                    policy.evaluate(&transition(json!({ "routes": routes * 3 }), root()))
                })
            })
            .collect();
        let decisions: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect();
        assert_eq!(
            decisions,
            [
                Ok(PolicyDecision::Allow),
                Ok(PolicyDecision::Allow),
                Ok(deny(&["the plan changes 6 routes, over the limit of 5"])),
                Ok(deny(&["the plan changes 9 routes, over the limit of 5"])),
            ]
        );
    });
}

#[test]
fn as_a_gate_a_policy_allows_denies_with_its_messages_and_fails_closed() {
    use workflow_core::Gate;

    let policy = policy(
        "count.rego",
        "package workflow\n\ndeny contains \"too many routes\" if { count(input.payload.routes) > 3 }\n",
    );
    assert_eq!(policy.name(), "policy count.rego");
    assert_eq!(
        policy.check(&transition(json!({ "routes": ["a"] }), root())),
        Ok(())
    );
    assert_eq!(
        policy.check(&transition(
            json!({ "routes": ["a", "b", "c", "d"] }),
            root()
        )),
        Err(vec!["too many routes".to_owned()])
    );
    let messages = policy
        .check(&transition(json!({ "routes": 7 }), root()))
        .expect_err("a policy that cannot decide denies");
    assert_eq!(messages.len(), 1);
    assert!(
        messages[0].starts_with("the policy could not decide: cannot evaluate policy `count.rego`"),
        "{messages:?}"
    );
}
