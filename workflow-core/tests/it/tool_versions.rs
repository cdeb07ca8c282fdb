//! A tool's description and schemas are versioned: the manifest publishes
//! each tool's declared version with the digests of its description and
//! its input and output schemas, and a change of any of them without a
//! higher `#[tool(version = N)]` is drift that names the tool and what
//! changed; an export over the published copy is refused.
//!
//! Three releases of one workflow `lookup` (the same name, so one
//! publication folder): as published, with its tool's description
//! reworded, and reworded with the version bumped.

use std::path::PathBuf;

use workflow_core::prelude::*;
use workflow_core::tool::{ToolPart, UnversionedChange};
use workflow_core::{Drift, Publication};

/// The types every release shares.
pub mod shared {
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Which VPC.
    #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
    pub struct Query {
        /// Its tag.
        pub tag: String,
    }

    /// Its id.
    #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
    pub struct Found {
        /// The id.
        pub id: String,
    }
    impl workflow_core::FailFast for Found {}
}

/// The release as published.
pub mod published {
    use super::*;

    #[workflow(entry = finder, output = String)]
    pub mod lookup {
        use super::*;
        use crate::tool_versions::shared::{Found, Query};

        /// Finds the VPC that carries a tag.
        #[tool(effect = read)]
        async fn find_vpc(query: Query, _deps: &()) -> Result<Found, ToolError> {
            Ok(Found { id: query.tag })
        }

        #[agent(tools = [find_vpc], to = [END])]
        async fn finder(tag: String, cx: finder::Context<'_>) -> Result<finder::Next, Reject> {
            let found = cx.call(tools::find_vpc, Query { tag }).await?;
            Ok(finder::Next::End(found.id))
        }
    }
}

/// The description reworded, the version not bumped.
pub mod reworded {
    use super::*;

    #[workflow(entry = finder, output = String)]
    pub mod lookup {
        use super::*;
        use crate::tool_versions::shared::{Found, Query};

        /// Lists every VPC and picks the first one.
        #[tool(effect = read)]
        async fn find_vpc(query: Query, _deps: &()) -> Result<Found, ToolError> {
            Ok(Found { id: query.tag })
        }

        #[agent(tools = [find_vpc], to = [END])]
        async fn finder(tag: String, cx: finder::Context<'_>) -> Result<finder::Next, Reject> {
            let found = cx.call(tools::find_vpc, Query { tag }).await?;
            Ok(finder::Next::End(found.id))
        }
    }
}

/// The description reworded and the version bumped.
pub mod bumped {
    use super::*;

    #[workflow(entry = finder, output = String)]
    pub mod lookup {
        use super::*;
        use crate::tool_versions::shared::{Found, Query};

        /// Lists every VPC and picks the first one.
        #[tool(effect = read, version = 2)]
        async fn find_vpc(query: Query, _deps: &()) -> Result<Found, ToolError> {
            Ok(Found { id: query.tag })
        }

        #[agent(tools = [find_vpc], to = [END])]
        async fn finder(tag: String, cx: finder::Context<'_>) -> Result<finder::Next, Reject> {
            let found = cx.call(tools::find_vpc, Query { tag }).await?;
            Ok(finder::Next::End(found.id))
        }
    }
}

/// A fresh, empty folder under the system's temp dir.
fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "workflow-core-tool-versions-{}-{label}",
        std::process::id()
    ));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("an old test folder can be removed");
    }
    dir
}

#[test]
fn the_manifest_carries_each_tools_version_and_digests() {
    let manifest = published::lookup::Workflow::manifest();
    let tool = &manifest.tools[0];
    assert_eq!((tool.name.as_str(), tool.version), ("find_vpc", 1));
    // SHA-256 of the doc comment, hex.
    assert_eq!(tool.description, "Finds the VPC that carries a tag.");
    assert_eq!(tool.description_digest.len(), 64);
    let reworded = &reworded::lookup::Workflow::manifest().tools[0];
    assert_ne!(reworded.description_digest, tool.description_digest);
    assert_eq!(reworded.input_schema_digest, tool.input_schema_digest);
    assert_eq!(reworded.output_schema_digest, tool.output_schema_digest);
    assert_eq!(bumped::lookup::Workflow::manifest().tools[0].version, 2);
}

#[test]
fn a_changed_description_without_a_version_bump_fails_the_drift_check() {
    let dir = temp_dir("reworded");
    Publication::of::<published::lookup::Spec>()
        .export(&dir)
        .expect("the first release is published");
    let drift: Drift = Publication::of::<reworded::lookup::Spec>()
        .check(&dir)
        .expect_err("the reworded description is drift");
    assert_eq!(
        drift.unversioned_tools,
        [UnversionedChange {
            tool: "find_vpc".into(),
            published: 1,
            current: 1,
            changed: vec![ToolPart::Description],
        }]
    );
    let text = drift.to_string();
    assert!(
        text.contains(
            "unversioned: tool `find_vpc`: description changed without a version bump (version 1 published, 1 now); declare `#[tool(version = 2)]`"
        ),
        "{text}"
    );
    // Re-exporting would publish the change as if it were none: refused,
    // and the published manifest is left as it was.
    let before = std::fs::read_to_string(dir.join("manifest.json")).expect("published");
    let refused = Publication::of::<reworded::lookup::Spec>()
        .export(&dir)
        .expect_err("an unversioned change is not exported");
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidData);
    assert!(
        refused
            .to_string()
            .contains("tool `find_vpc`: description changed"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("manifest.json")).expect("published"),
        before
    );
}

#[test]
fn a_bumped_version_is_a_change_to_re_export_not_an_unversioned_one() {
    let dir = temp_dir("bumped");
    Publication::of::<published::lookup::Spec>()
        .export(&dir)
        .expect("the first release is published");
    let drift = Publication::of::<bumped::lookup::Spec>()
        .check(&dir)
        .expect_err("the manifest changed");
    assert!(drift.unversioned_tools.is_empty(), "{drift}");
    assert_eq!(drift.changed_documents, ["manifest.json", "tools.json"]);
    Publication::of::<bumped::lookup::Spec>()
        .export(&dir)
        .expect("a bumped version is exported");
    assert_eq!(
        Publication::of::<bumped::lookup::Spec>().check(&dir),
        Ok(())
    );
    // Going back to the old release's version is drift of its own.
    let back = Publication::of::<published::lookup::Spec>()
        .check(&dir)
        .expect_err("the version went down");
    assert_eq!(back.unversioned_tools[0].current, 1);
    assert_eq!(back.unversioned_tools[0].published, 2);
}
