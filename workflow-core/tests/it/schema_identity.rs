//! Two workflows of one crate that both declare a type named `Same`: each
//! publishes it under its own name (`north.Same`, `south.Same`), with its
//! file name as `$id`, and an export never overwrites a file that holds
//! another schema, nor a folder that holds another workflow's publication.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use workflow_core::prelude::*;
use workflow_core::{Publication, SchemaSet};

/// The two types named `Same`, of different shapes.
pub mod twins {
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// North's.
    pub mod a {
        use super::*;
        /// A count.
        #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
        pub struct Same {
            /// How many.
            pub x: u32,
        }
    }

    /// South's.
    pub mod b {
        use super::*;
        /// A word.
        #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
        pub struct Same {
            /// Which.
            pub y: String,
        }
    }
}

#[workflow(entry = first, output = twins::a::Same)]
pub mod north {
    use super::*;

    #[agent(owns = [Count], to = [END])]
    async fn first(x: u32, _cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::End(twins::a::Same { x }))
    }
}

#[workflow(entry = first, output = twins::b::Same)]
pub mod south {
    use super::*;

    #[agent(owns = [Name], to = [END])]
    async fn first(x: u32, _cx: first::Context<'_>) -> Result<first::Next, Reject> {
        Ok(first::Next::End(twins::b::Same { y: x.to_string() }))
    }
}

/// A fresh, empty folder under the system's temp dir.
fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "workflow-core-identity-{}-{label}",
        std::process::id()
    ));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("an old test folder can be removed");
    }
    dir
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the file is there"))
        .expect("the file is JSON")
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the folder is there")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_workflows_own_types_publish_under_its_name_with_their_file_as_id() {
    let set = SchemaSet::of::<north::Spec>();
    assert!(
        set.get("Same").is_none(),
        "no bare name for a workflow's type"
    );
    let same = set.get("north.Same").expect("north's `Same`");
    assert_eq!(same["title"], "Same");
    assert!(
        same.get("$id").is_none(),
        "the schema a model follows has no `$id`"
    );
    let published = set.published("north.Same").expect("published");
    assert_eq!(published["$id"], "north.Same.schema.json");
    // The shared types keep their bare names.
    assert_eq!(
        set.published("Receipt").expect("shared")["$id"],
        "Receipt.schema.json"
    );
    // The manifest names the files the schemas are exported to.
    let manifest = north::Workflow::manifest();
    // A type without a name of its own (`u32`) is named for its role.
    assert_eq!(manifest.input_schema, "north.input.schema.json");
    assert_eq!(manifest.output_schema, "north.Same.schema.json");
    for name in [&manifest.input_schema, &manifest.output_schema] {
        let name = name.strip_suffix(".schema.json").unwrap();
        assert!(set.get(name).is_some(), "{name}");
    }
}

#[test]
fn a_tools_plain_input_and_output_are_named_for_the_tool_and_its_direction() {
    let set = SchemaSet::of::<crate::enforcement::shop::Spec>();
    // `pick(String) -> Vec<String>`, `flaky(u32) -> u32`.
    for (name, ty) in [
        ("shop.pick.input", "string"),
        ("shop.pick.output", "array"),
        ("shop.flaky.input", "integer"),
        ("shop.flaky.output", "integer"),
    ] {
        let schema = set.published(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(schema["type"], ty, "{name}");
        assert_eq!(schema["$id"], format!("{name}.schema.json"));
    }
    let shared: Vec<&str> = set
        .names()
        .filter(|n| {
            ["string", "Array_of_string", "uint32"]
                .iter()
                .any(|s| n.ends_with(&format!(".{s}")))
        })
        .collect();
    assert!(
        shared.is_empty(),
        "no file named for a bare type: {shared:?}"
    );
    // The manifest names the same files.
    let manifest = crate::enforcement::shop::Workflow::manifest();
    let pick = manifest
        .tools
        .iter()
        .find(|t| t.name == "pick")
        .expect("pick");
    assert_eq!(pick.input_schema, "shop.pick.input.schema.json");
    assert_eq!(pick.output_schema, "shop.pick.output.schema.json");
}

#[test]
fn two_workflows_with_a_same_named_type_both_publish_into_one_folder() {
    let dir = temp_dir("both");
    let (north, south) = (
        SchemaSet::of::<north::Spec>(),
        SchemaSet::of::<south::Spec>(),
    );
    north.export(&dir).expect("north exports");
    south.export(&dir).expect("south exports beside it");
    // Each `Same` is kept, as its workflow publishes it.
    assert_eq!(
        Some(read(&dir.join("north.Same.schema.json"))),
        north.published("north.Same")
    );
    assert_eq!(
        Some(read(&dir.join("south.Same.schema.json"))),
        south.published("south.Same")
    );
    assert_ne!(north.get("north.Same"), south.get("south.Same"));
    // Exporting north again over the shared folder still works.
    north.export(&dir).expect("north again");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_export_never_overwrites_a_file_holding_another_schema() {
    let south = SchemaSet::of::<south::Spec>();
    let target = |dir: &Path| dir.join("south.Same.schema.json");

    // A file that says it holds another schema (north's `Same`, copied
    // under south's name): refused, naming the file and both schemas,
    // and nothing is written.
    let dir = temp_dir("foreign-id");
    std::fs::create_dir_all(&dir).unwrap();
    let north = SchemaSet::of::<north::Spec>();
    let foreign = north.published("north.Same").unwrap();
    std::fs::write(target(&dir), foreign.to_string()).unwrap();
    let error = south.export(&dir).expect_err("another schema's file");
    assert_eq!(error.kind(), ErrorKind::AlreadyExists);
    let message = error.to_string();
    for named in [
        "south.Same.schema.json` holds the schema `north.Same.schema.json`",
        "not `south.Same.schema.json`",
    ] {
        assert!(message.contains(named), "{message}");
    }
    assert_eq!(read(&target(&dir)), foreign, "the file is unchanged");
    assert_eq!(files(&dir), ["south.Same.schema.json"], "nothing written");
    std::fs::remove_dir_all(&dir).unwrap();

    // A file without `$id` whose title is another type's: refused too.
    let dir = temp_dir("foreign-title");
    std::fs::create_dir_all(&dir).unwrap();
    let other = json!({"title": "Other", "type": "object"});
    std::fs::write(target(&dir), other.to_string()).unwrap();
    let error = south.export(&dir).expect_err("another type's file");
    assert_eq!(error.kind(), ErrorKind::AlreadyExists);
    assert!(error.to_string().contains("`Other`, not `Same`"), "{error}");
    assert_eq!(read(&target(&dir)), other, "the file is unchanged");
    std::fs::remove_dir_all(&dir).unwrap();

    // An older copy of the same schema (no `$id`, the same title), or a
    // file that is no longer JSON, is this schema's own: overwritten.
    for own in [
        json!({"title": "Same"}).to_string(),
        "{ not json".to_owned(),
    ] {
        let dir = temp_dir("own");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(target(&dir), &own).unwrap();
        south.export(&dir).expect("its own file");
        assert_eq!(Some(read(&target(&dir))), south.published("south.Same"));
        assert_eq!(south.check(&dir), Ok(()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_publication_is_never_exported_over_another_workflows() {
    let dir = temp_dir("publication");
    let north = Publication::of::<north::Spec>();
    north.export(&dir).expect("north publishes");
    let before = files(&dir);
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();

    let error = Publication::of::<south::Spec>()
        .export(&dir)
        .expect_err("north's folder");
    assert_eq!(error.kind(), ErrorKind::AlreadyExists);
    assert!(
        error
            .to_string()
            .contains("is the publication of workflow `north`, not `south`"),
        "{error}"
    );
    // Nothing of south's was written; north's manifest is intact.
    assert_eq!(files(&dir), before);
    assert_eq!(
        std::fs::read_to_string(dir.join("manifest.json")).unwrap(),
        manifest
    );
    assert_eq!(north.check(&dir), Ok(()));
    // North exports again over its own publication.
    north.export(&dir).expect("its own folder");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two workflows named `flow`, in different modules, each with its own
/// `Same`: same published names, same `$id`s, different Rust types.
pub mod elsewhere {
    use super::*;

    /// The first `flow`.
    pub mod one {
        use super::*;

        #[workflow(entry = first, output = twins::a::Same)]
        pub mod flow {
            use super::*;

            #[agent(owns = [Count], to = [END])]
            async fn first(x: u32, _cx: first::Context<'_>) -> Result<first::Next, Reject> {
                Ok(first::Next::End(twins::a::Same { x }))
            }
        }
    }

    /// The second `flow`.
    pub mod two {
        use super::*;

        #[workflow(entry = first, output = twins::b::Same)]
        pub mod flow {
            use super::*;

            #[agent(owns = [Name], to = [END])]
            async fn first(x: u32, _cx: first::Context<'_>) -> Result<first::Next, Reject> {
                Ok(first::Next::End(twins::b::Same { y: x.to_string() }))
            }
        }
    }
}

#[test]
fn a_workflow_of_the_same_name_in_another_module_never_overwrites_the_first() {
    let dir = temp_dir("same-name");
    let one = Publication::of::<elsewhere::one::flow::Spec>();
    let two = Publication::of::<elsewhere::two::flow::Spec>();
    one.export(&dir).expect("the first export");
    let before = read(&dir.join("flow.Same.schema.json"));
    assert_eq!(before["$id"], "flow.Same.schema.json");
    assert!(
        workflow_core::schema::rust_type_of(&before).is_some_and(|t| t.ends_with("twins::a::Same")),
        "{before:#}"
    );
    let refused = two.export(&dir).expect_err("the same names, other types");
    assert_eq!(refused.kind(), ErrorKind::AlreadyExists);
    assert!(refused.to_string().contains("twins::a::Same"), "{refused}");
    assert_eq!(
        read(&dir.join("flow.Same.schema.json")),
        before,
        "left as it was"
    );
    // Its own re-export is not refused.
    one.export(&dir).expect("the same workflow again");
    let _ = std::fs::remove_dir_all(&dir);
}
