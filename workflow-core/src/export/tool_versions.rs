//! Tool versions: what a model reads of a tool (its description and its
//! input schema) and what it gets back (its output schema) are part of the
//! contract it acts on, so each is published with a digest beside the
//! tool's declared version (`#[tool(version = N)]`), and a change of any of
//! them without a higher version is drift: the check names the tool and
//! what changed, and an export over the published copy is refused.

use std::fmt;

use serde_json::Value;

use crate::spec::{Graph, ToolInfo};

/// A tool's declared version and the SHA-256 digests (hex-encoded) of its
/// description and of its input and output JSON Schemas (as JSON text):
/// what the manifest publishes for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDigests {
    /// The declared version.
    pub version: u32,
    /// The digest of the description.
    pub description: String,
    /// The digest of the input schema.
    pub input_schema: String,
    /// The digest of the output schema.
    pub output_schema: String,
}

/// A part of a tool that a model reads or gets back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolPart {
    /// Its description (its doc comment).
    Description,
    /// Its input's JSON Schema.
    InputSchema,
    /// Its output's JSON Schema.
    OutputSchema,
}

impl fmt::Display for ToolPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ToolPart::Description => "description",
            ToolPart::InputSchema => "input schema",
            ToolPart::OutputSchema => "output schema",
        })
    }
}

impl ToolDigests {
    /// The version and digests of `tool` as declared.
    pub fn of(tool: &ToolInfo) -> Self {
        let schema = |doc: fn() -> schemars::Schema| {
            crate::encode::digest(&serde_json::to_string(&doc().to_value()).unwrap_or_default())
        };
        ToolDigests {
            version: tool.version,
            description: crate::encode::digest(tool.description),
            input_schema: schema(tool.input_schema_doc),
            output_schema: schema(tool.output_schema_doc),
        }
    }

    /// The version and digests a published manifest's tool entry holds
    /// (`None` for an entry without them: a manifest written before tools
    /// were versioned).
    pub fn published(entry: &Value) -> Option<Self> {
        let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(ToolDigests {
            version: u32::try_from(entry.get("version")?.as_u64()?).ok()?,
            description: text("description_digest")?,
            input_schema: text("input_schema_digest")?,
            output_schema: text("output_schema_digest")?,
        })
    }

    /// The parts whose digest differs from `other`'s.
    pub fn changed_since(&self, other: &ToolDigests) -> Vec<ToolPart> {
        let mut parts = Vec::new();
        if self.description != other.description {
            parts.push(ToolPart::Description);
        }
        if self.input_schema != other.input_schema {
            parts.push(ToolPart::InputSchema);
        }
        if self.output_schema != other.output_schema {
            parts.push(ToolPart::OutputSchema);
        }
        parts
    }
}

/// A tool whose description or schemas changed since the published
/// manifest without a higher version, or whose version went down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnversionedChange {
    /// The tool.
    pub tool: String,
    /// The version the published manifest holds.
    pub published: u32,
    /// The version declared now.
    pub current: u32,
    /// What changed (empty when only the version went down).
    pub changed: Vec<ToolPart>,
}

impl fmt::Display for UnversionedChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (tool, published, current) = (&self.tool, self.published, self.current);
        if self.changed.is_empty() {
            return write!(
                f,
                "tool `{tool}`: its version went down from {published} to {current}; a version only goes up"
            );
        }
        let parts = self
            .changed
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        write!(
            f,
            "tool `{tool}`: {parts} changed without a version bump (version {published} published, {current} now); declare `#[tool(version = {})]`",
            published.saturating_add(1)
        )
    }
}

/// The tools of `graph` that changed since the manifest published as
/// `manifest` without a higher version. Tools new or removed since, and
/// published entries without digests, are not reported here (the manifest's
/// own drift names them).
pub(crate) fn unversioned_changes(
    current: &[(String, ToolDigests)],
    manifest: &Value,
) -> Vec<UnversionedChange> {
    let Some(published) = manifest.get("tools").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    for (name, now) in current {
        let Some(then) = published
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name.as_str()))
            .and_then(ToolDigests::published)
        else {
            continue;
        };
        let changed = now.changed_since(&then);
        let unbumped = !changed.is_empty() && now.version <= then.version;
        if unbumped || now.version < then.version {
            changes.push(UnversionedChange {
                tool: name.clone(),
                published: then.version,
                current: now.version,
                changed,
            });
        }
    }
    changes
}

/// The version and digests of every tool of `graph`, by name.
pub(crate) fn tool_digests(graph: &Graph) -> Vec<(String, ToolDigests)> {
    graph
        .tools
        .iter()
        .map(|t| (t.name.to_owned(), ToolDigests::of(t)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digests(version: u32, description: &str) -> ToolDigests {
        ToolDigests {
            version,
            description: crate::encode::digest(description),
            input_schema: "in".into(),
            output_schema: "out".into(),
        }
    }

    fn manifest(version: u32, description: &str) -> Value {
        let d = digests(version, description);
        serde_json::json!({"tools": [{
            "name": "lookup",
            "version": d.version,
            "description_digest": d.description,
            "input_schema_digest": d.input_schema,
            "output_schema_digest": d.output_schema,
        }]})
    }

    #[test]
    fn a_changed_description_needs_a_higher_version() {
        let published = manifest(1, "Looks a VPC up.");
        let same = [("lookup".to_owned(), digests(1, "Looks a VPC up."))];
        assert!(unversioned_changes(&same, &published).is_empty());
        let reworded = [("lookup".to_owned(), digests(1, "Lists every VPC."))];
        let changes = unversioned_changes(&reworded, &published);
        assert_eq!(
            changes,
            [UnversionedChange {
                tool: "lookup".into(),
                published: 1,
                current: 1,
                changed: vec![ToolPart::Description],
            }]
        );
        assert_eq!(
            changes[0].to_string(),
            "tool `lookup`: description changed without a version bump (version 1 published, 1 now); declare `#[tool(version = 2)]`"
        );
        let bumped = [("lookup".to_owned(), digests(2, "Lists every VPC."))];
        assert!(unversioned_changes(&bumped, &published).is_empty());
        let lowered = [("lookup".to_owned(), digests(1, "Lists every VPC."))];
        assert_eq!(
            unversioned_changes(&lowered, &manifest(2, "Lists every VPC."))[0].to_string(),
            "tool `lookup`: its version went down from 2 to 1; a version only goes up"
        );
    }

    #[test]
    fn a_manifest_without_digests_is_left_to_the_document_drift() {
        let old = serde_json::json!({"tools": [{"name": "lookup", "description": "x"}]});
        let now = [("lookup".to_owned(), digests(1, "y"))];
        assert!(unversioned_changes(&now, &old).is_empty());
    }
}
