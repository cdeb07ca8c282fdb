//! The schemas of the main example are published under `examples/schemas/`;
//! this test fails when they drift. After an intended change, re-export with
//! `UPDATE_SCHEMAS=1 cargo test -p examples --test published_schemas` and
//! say so in the change's notes.

use std::path::Path;

use examples::deploy_workflow::deploy;

#[test]
fn published_schemas_have_not_drifted() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/deploy");
    let schemas = deploy::Workflow::schemas();
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).expect("the old export can be removed");
        }
        schemas.export(&dir).expect("the schemas can be written");
        let manifest =
            serde_json::to_string_pretty(&deploy::Workflow::manifest()).expect("serializes");
        std::fs::write(dir.join("manifest.json"), manifest + "\n").expect("written");
        std::fs::write(dir.join("workflow.mmd"), deploy::Workflow::mermaid()).expect("written");
    }
    if let Err(drift) = schemas.check(&dir) {
        panic!("{drift}\n(UPDATE_SCHEMAS=1 re-exports them)");
    }
    let published: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json")).expect("the manifest is published"),
    )
    .expect("the manifest is JSON");
    assert_eq!(
        published,
        serde_json::to_value(deploy::Workflow::manifest()).expect("serializes"),
        "the published manifest drifted (UPDATE_SCHEMAS=1 re-exports it)"
    );
}

#[test]
fn the_published_set_covers_every_payload() {
    let schemas = deploy::Workflow::schemas();
    for name in [
        "Goal",
        "NetworkTask",
        "TerraformPlan",
        "DeployReport",
        "VpcQuery",
        "VpcPage",
        "ApplyRequest",
        "Applied",
        "Root",
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
