//! The schemas of the main example are published under `examples/schemas/`
//! (and those of the parallel review, a workflow with a fan-out, beside them);
//! this test fails when they drift. After an intended change, re-export with
//! `UPDATE_SCHEMAS=1 cargo test -p examples --test it published_schemas` (or
//! `cargo run -p examples --bin workflow_deploy -- schema export
//! examples/schemas/deploy`) and say so in the change's notes.

use std::path::Path;

use examples::deploy_workflow::deploy;
use workflow_core::Publication;

/// The published set of workflow `W` in `examples/schemas/<set>`, checked
/// for drift (re-exported first under `UPDATE_SCHEMAS=1`): what `schema
/// export` writes and `schema check` checks. Returns the folder and the
/// published manifest.
fn checked_set<W: workflow_core::Workflow>(set: &str) -> (std::path::PathBuf, serde_json::Value) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(set);
    let publication = Publication::of::<W>();
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).expect("the old export can be removed");
        }
        publication.export(&dir).expect("the files can be written");
    }
    if let Err(drift) = publication.check(&dir) {
        panic!("{drift}\n(UPDATE_SCHEMAS=1 re-exports them)");
    }
    let manifest = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json")).expect("the manifest is published"),
    )
    .expect("the manifest is JSON");
    (dir, manifest)
}

#[test]
fn published_schemas_have_not_drifted() {
    let (dir, published) = checked_set::<deploy::Spec>("deploy");
    assert_eq!(
        published,
        serde_json::to_value(deploy::Workflow::manifest()).expect("serializes"),
        "the published manifest drifted (UPDATE_SCHEMAS=1 re-exports it)"
    );
    let tools: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("tools.json")).expect("the tools are published"),
    )
    .expect("the tool definitions are JSON");
    assert_eq!(
        tools,
        serde_json::to_value(deploy::Workflow::mcp_tools()).expect("serializes"),
        "the published MCP tool definitions drifted (UPDATE_SCHEMAS=1 re-exports them)"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("workflow.mmd")).expect("the diagram is published"),
        deploy::Workflow::mermaid()
    );
}

#[test]
fn the_published_set_covers_every_payload() {
    let schemas = deploy::Workflow::schemas();
    // The workflow's own types under `deploy.<Type>`, the shared ones bare.
    for name in [
        "deploy.Goal",
        "deploy.NetworkTask",
        "deploy.TerraformPlan",
        "deploy.DeployReport",
        "deploy.VpcQuery",
        "deploy.VpcPage",
        "deploy.ApplyRequest",
        "deploy.Applied",
        "deploy.Root",
        "Operation",
        "Evidence",
        "Uncertainty",
        "StopWhen",
        "Expiry",
        "Receipt",
        "TransferRecord",
        "LedgerRecord",
        "Manifest",
    ] {
        assert!(
            schemas.get(name).is_some(),
            "no schema for {name}: {:?}",
            schemas.names().collect::<Vec<_>>()
        );
    }
}

#[test]
fn tools_are_published_as_mcp_definitions_with_their_effects() {
    let tools = deploy::Workflow::mcp_tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["describe_vpcs", "apply_plan"]);
    let apply = &tools[1];
    assert_eq!(
        apply.description,
        "Changes a VPC's route table. Its guard refuses a change over the run's route limit before anything is applied."
    );
    assert!(!apply.annotations.read_only_hint, "apply_plan writes");
    // MCP's `false` would promise purely additive updates.
    assert!(
        apply.annotations.destructive_hint,
        "a write is not additive"
    );
    assert_eq!(apply.meta.needs.as_deref(), Some("Apply"));
    assert_eq!(apply.meta.effect, workflow_core::Effect::Write);
    assert!(tools[0].annotations.read_only_hint);
    assert!(!tools[0].annotations.destructive_hint);
    assert_eq!(tools[0].meta.needs.as_deref(), Some("LookupVpc"));
    // The schemas are the types' own, draft 2020-12.
    assert_eq!(
        apply.input_schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(apply.input_schema["title"], "ApplyRequest");
    assert!(
        apply.input_schema["required"]
            .as_array()
            .expect("a list")
            .contains(&"vpc_id".into())
    );
    assert_eq!(tools[0].output_schema["title"], "VpcPage");
}

/// The parallel review's set (`examples/schemas/parallel_review`): a
/// workflow with a fan-out, whose manifest lists its fork and join, whose
/// diagram draws them, and whose schemas include the join's input type.
#[test]
fn the_parallel_reviews_published_set_shows_its_fork_and_join() {
    use examples::parallel_review::review;
    let (dir, manifest) = checked_set::<review::Spec>("parallel_review");
    assert_eq!(
        manifest,
        serde_json::to_value(review::Workflow::manifest()).expect("serializes")
    );
    let forks = manifest["forks"]
        .as_array()
        .expect("the manifest lists its forks");
    assert_eq!(forks.len(), 1);
    assert_eq!(forks[0]["from"], "lead");
    assert_eq!(forks[0]["kind"], "parallel");
    assert_eq!(
        forks[0]["join_input_schema"],
        "review.judge.Joined.schema.json"
    );
    assert_eq!(forks[0]["join"], "judge");
    let diagram =
        std::fs::read_to_string(dir.join("workflow.mmd")).expect("the diagram is published");
    assert_eq!(diagram, review::Workflow::mermaid());
    let schemas = review::Workflow::schemas();
    assert!(
        schemas.iter().any(|(name, _)| name.ends_with("Joined")),
        "the join's input type is published"
    );
}
