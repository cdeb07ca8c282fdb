//! JSON Schemas (draft 2020-12) for everything that crosses a seam, their
//! export to a directory, and the drift check against a published copy.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::spec::Workflow;
use crate::spec::{Evidence, Expiry, Operation, StopWhen, Uncertainty};
use crate::spec::{Receipt, TransferRecord};

use crate::spec::SchemaSet;
pub use crate::spec::schema_file as file_name;

impl SchemaSet {
    /// Every schema of workflow `W`: its payloads, input, output, tool
    /// inputs and outputs, the contract parts, receipts and transfer records.
    pub fn of<W: Workflow>() -> Self {
        let mut set = SchemaSet::new();
        set.add::<Operation>()
            .add::<Expiry>()
            .add::<Evidence>()
            .add::<Uncertainty>()
            .add::<StopWhen>()
            .add::<Receipt>()
            .add::<TransferRecord>()
            .add::<crate::ledger::LedgerRecord>()
            .add::<crate::export::Manifest>();
        // The workflow's own types, under `<workflow>.<Type>`.
        set.workflow = Some(W::GRAPH.name);
        W::schemas(&mut set);
        set.workflow = None;
        set
    }

    fn render(schema: &Value) -> String {
        let mut text =
            serde_json::to_string_pretty(schema).expect("a JSON value always serializes");
        text.push('\n');
        text
    }

    /// Writes each schema to `dir/<name>.schema.json` (creating `dir`) and
    /// returns the paths written. A file there that holds another schema
    /// (its `$id`, or without one its `title`, differs) is never
    /// overwritten: the export is refused before anything is written.
    pub fn export(&self, dir: impl AsRef<Path>) -> io::Result<Vec<PathBuf>> {
        let dir = dir.as_ref();
        if !self.conflicts.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "two different schemas share a name: {}; rename one of the types",
                    self.conflicts.join(", ")
                ),
            ));
        }
        self.refuse_foreign(dir)?;
        fs::create_dir_all(dir)?;
        let mut written = Vec::with_capacity(self.schemas.len());
        for name in self.schemas.keys() {
            let path = dir.join(file_name(name));
            let schema = self.published(name).unwrap_or_default();
            fs::write(&path, Self::render(&schema))?;
            written.push(path);
        }
        Ok(written)
    }

    /// Refuses an export into `dir` where a file the export would write
    /// holds another schema: one with another `$id`, or (written before
    /// schemas had one) another `title`, or the same `$id` for another Rust
    /// type (the `Rust type: ` line of its `$comment`: a workflow of the same
    /// name in another module). A file that is not JSON, or says
    /// neither, is taken for an old copy of this schema.
    fn refuse_foreign(&self, dir: &Path) -> io::Result<()> {
        let identity = |schema: &Value| {
            let field = |key: &str| schema.get(key).and_then(Value::as_str).map(str::to_owned);
            field("$id")
                .map(|id| ("$id", id))
                .or_else(|| field("title").map(|title| ("title", title)))
        };
        let mut foreign = Vec::new();
        for name in self.schemas.keys() {
            let schema = self.published(name).unwrap_or_default();
            let path = dir.join(file_name(name));
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            let Ok(published) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let Some((key, held)) = identity(&published) else {
                continue;
            };
            let ours = schema.get(key).and_then(Value::as_str).unwrap_or_default();
            if held != ours {
                foreign.push(format!(
                    "`{}` holds the schema `{held}`, not `{ours}`",
                    path.display()
                ));
                continue;
            }
            // The same name from a workflow of the same name elsewhere.
            let rust_type = crate::spec::rust_type_of;
            if let (Some(held), Some(ours)) = (rust_type(&published), rust_type(&schema))
                && held != ours
            {
                foreign.push(format!(
                    "`{}` holds the schema of `{held}`, not of `{ours}`",
                    path.display()
                ));
            }
        }
        if foreign.is_empty() {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "the export would overwrite another schema: {}; export into a folder of its own, or remove the file if it is stale",
                foreign.join("; ")
            ),
        ))
    }

    /// Compares the set with the schemas published in `dir`: every schema
    /// that changed, is new, or was removed is reported.
    #[expect(
        clippy::result_large_err,
        reason = "a drift report is built once per check, off any hot path; boxing it would only make it harder to match"
    )]
    pub fn check(&self, dir: impl AsRef<Path>) -> Result<(), Drift> {
        let dir = dir.as_ref();
        let mut drift = Drift {
            conflicts: self.conflicts.clone(),
            ..Drift::default()
        };
        for name in self.schemas.keys() {
            let path = dir.join(file_name(name));
            let schema = self.published(name);
            match fs::read_to_string(&path) {
                Ok(published) => {
                    let same = serde_json::from_str::<Value>(&published)
                        .map(|v| Some(v) == schema)
                        .unwrap_or(false);
                    if !same {
                        drift.changed.push(name.clone());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    drift.unpublished.push(name.clone())
                }
                Err(e) => drift.unreadable.push((name.clone(), e.to_string())),
            }
        }
        match fs::read_dir(dir) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    let file = entry.file_name().to_string_lossy().into_owned();
                    if let Some(name) = file.strip_suffix(crate::spec::SCHEMA_FILE_SUFFIX)
                        && !self.schemas.contains_key(name)
                    {
                        drift.removed.push(name.to_owned());
                    }
                }
            }
            Err(e) => drift
                .unreadable
                .push((dir.display().to_string(), e.to_string())),
        }
        drift.removed.sort();
        if drift.is_empty() { Ok(()) } else { Err(drift) }
    }
}

/// Everything a workflow publishes for the programs around it: the JSON
/// Schemas (`<Name>.schema.json`), the manifest (`manifest.json`), the
/// tools as MCP definitions (`tools.json`) and the diagram
/// (`workflow.mmd`). Exported to a folder kept under version control, and
/// checked against it in CI (`workflow schema export` / `check`).
#[derive(Debug, Clone, PartialEq)]
pub struct Publication {
    schemas: SchemaSet,
    /// File name and content of each other document.
    documents: Vec<(&'static str, String)>,
    /// Each tool's declared version and digests, by name.
    tools: Vec<(String, crate::export::ToolDigests)>,
}

impl Publication {
    /// The publication of workflow `W`.
    pub fn of<W: Workflow>() -> Self {
        let json = |value: Result<String, serde_json::Error>| match value {
            Ok(text) => text + "\n",
            // Plain data always serializes; never worth a panic.
            Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
        };
        let manifest = crate::export::Manifest::of_workflow::<W>();
        let tools = crate::export::mcp_tools(W::GRAPH);
        Publication {
            schemas: SchemaSet::of::<W>(),
            documents: vec![
                (
                    "manifest.json",
                    json(serde_json::to_string_pretty(&manifest)),
                ),
                ("tools.json", json(serde_json::to_string_pretty(&tools))),
                (
                    "workflow.mmd",
                    crate::export::mermaid_with_forks(W::GRAPH, W::FORKS),
                ),
            ],
            tools: super::tool_versions::tool_digests(W::GRAPH),
        }
    }

    /// The schemas.
    pub fn schemas(&self) -> &SchemaSet {
        &self.schemas
    }

    /// How many files the publication holds.
    pub fn len(&self) -> usize {
        self.schemas.len() + self.documents.len()
    }

    /// Whether it holds nothing (never, for a workflow).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes every file into `dir` (creating it) and returns the paths
    /// written. Schemas no longer produced are left in place: `check` names
    /// them, remove them by hand (or export into an empty folder). A folder
    /// that holds another workflow's publication (its `manifest.json` names
    /// another workflow), or a file that holds another schema, is never
    /// overwritten: the export is refused before anything is written.
    pub fn export(&self, dir: impl AsRef<Path>) -> io::Result<Vec<PathBuf>> {
        let dir = dir.as_ref();
        self.refuse_other_workflow(dir)?;
        self.refuse_unversioned(dir)?;
        let mut written = self.schemas.export(dir)?;
        for (name, content) in &self.documents {
            let path = dir.join(name);
            fs::write(&path, content)?;
            written.push(path);
        }
        Ok(written)
    }

    /// Refuses an export into a folder whose `manifest.json` is another
    /// workflow's: its manifest, tool definitions and diagram would be
    /// overwritten by this one's.
    fn refuse_other_workflow(&self, dir: &Path) -> io::Result<()> {
        let workflow = |text: &str| {
            serde_json::from_str::<Value>(text)
                .ok()?
                .get("workflow")?
                .as_str()
                .map(str::to_owned)
        };
        let ours = self
            .documents
            .iter()
            .find(|(name, _)| *name == "manifest.json")
            .and_then(|(_, content)| workflow(content));
        let Ok(text) = fs::read_to_string(dir.join("manifest.json")) else {
            return Ok(());
        };
        match (workflow(&text), ours) {
            (Some(held), Some(ours)) if held != ours => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "`{}` is the publication of workflow `{held}`, not `{ours}`: export each workflow into a folder of its own",
                    dir.display()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The tools whose description or schemas changed since the manifest
    /// published in `dir` without a higher version (none when `dir` holds
    /// no manifest that reads).
    pub fn unversioned_changes(
        &self,
        dir: impl AsRef<Path>,
    ) -> Vec<crate::export::UnversionedChange> {
        let Ok(text) = fs::read_to_string(dir.as_ref().join("manifest.json")) else {
            return Vec::new();
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(published) => super::tool_versions::unversioned_changes(&self.tools, &published),
            Err(_) => Vec::new(),
        }
    }

    /// Refuses an export over a manifest whose tools changed without a
    /// version bump: exporting would publish the change as if it were none.
    fn refuse_unversioned(&self, dir: &Path) -> io::Result<()> {
        let changes = self.unversioned_changes(dir);
        if changes.is_empty() {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the export would publish tool changes without a version bump: {}",
                changes
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ))
    }

    /// Compares the publication with the copy published in `dir`: every
    /// schema or document that changed, is new, or was removed, and every
    /// tool whose description or schemas changed without a version bump
    /// ([`Drift::unversioned_tools`]). JSON documents are compared as JSON
    /// values, the diagram as text.
    #[expect(
        clippy::result_large_err,
        reason = "a drift report is built once per check, off any hot path; boxing it would only make it harder to match"
    )]
    pub fn check(&self, dir: impl AsRef<Path>) -> Result<(), Drift> {
        let dir = dir.as_ref();
        let mut drift = match self.schemas.check(dir) {
            Ok(()) => Drift::default(),
            Err(drift) => drift,
        };
        for (name, content) in &self.documents {
            match fs::read_to_string(dir.join(name)) {
                Ok(published) => {
                    let same = if name.ends_with(".json") {
                        let value = |text: &str| serde_json::from_str::<Value>(text).ok();
                        value(&published).is_some() && value(&published) == value(content)
                    } else {
                        published == *content
                    };
                    if !same {
                        drift.changed_documents.push((*name).to_owned());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    drift.unpublished_documents.push((*name).to_owned())
                }
                Err(e) => drift.unreadable.push(((*name).to_owned(), e.to_string())),
            }
        }
        drift.unversioned_tools = self.unversioned_changes(dir);
        if drift.is_empty() { Ok(()) } else { Err(drift) }
    }
}

/// How the current schemas differ from a published copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drift {
    /// Published, but the current schema differs.
    pub changed: Vec<String>,
    /// Current, but not published.
    pub unpublished: Vec<String>,
    /// Published, but no longer produced.
    pub removed: Vec<String>,
    /// Files or folders that could not be read, with the error.
    pub unreadable: Vec<(String, String)>,
    /// Names shared by two different schemas of the current set.
    pub conflicts: Vec<String>,
    /// Published documents of a [`Publication`] (`manifest.json`,
    /// `tools.json`, `workflow.mmd`) that differ from the current ones.
    pub changed_documents: Vec<String>,
    /// Documents of a [`Publication`] that are not published.
    pub unpublished_documents: Vec<String>,
    /// Tools whose description or input or output schema changed since the
    /// published manifest without a higher `#[tool(version = N)]` (or whose
    /// version went down).
    pub unversioned_tools: Vec<crate::export::UnversionedChange>,
}

impl Drift {
    /// Whether nothing differs.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty()
            && self.unpublished.is_empty()
            && self.removed.is_empty()
            && self.unreadable.is_empty()
            && self.conflicts.is_empty()
            && self.changed_documents.is_empty()
            && self.unpublished_documents.is_empty()
            && self.unversioned_tools.is_empty()
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "published schemas drifted:")?;
        for n in &self.changed {
            writeln!(f, "  changed:     {}", file_name(n))?;
        }
        for n in &self.unpublished {
            writeln!(f, "  unpublished: {}", file_name(n))?;
        }
        for n in &self.removed {
            writeln!(f, "  removed:     {}", file_name(n))?;
        }
        for n in &self.changed_documents {
            writeln!(f, "  changed:     {n}")?;
        }
        for n in &self.unpublished_documents {
            writeln!(f, "  unpublished: {n}")?;
        }
        for n in &self.conflicts {
            writeln!(f, "  conflict:    two different types are named `{n}`")?;
        }
        for (what, e) in &self.unreadable {
            writeln!(f, "  unreadable:  {what}: {e}")?;
        }
        for change in &self.unversioned_tools {
            writeln!(f, "  unversioned: {change}")?;
        }
        if !self.unversioned_tools.is_empty() {
            writeln!(
                f,
                "a tool's description and schemas are what a model acts on: bump the version of each tool named, re-run its canaries (`workflow canary --live --record`), then re-export"
            )?;
        }
        write!(
            f,
            "re-export the schemas if the change is intended, and announce it"
        )
    }
}

impl std::error::Error for Drift {}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)] // only their schemas are used
    mod a {
        #[derive(schemars::JsonSchema)]
        pub struct Same {
            pub x: u32,
        }
    }
    #[allow(dead_code)]
    mod b {
        #[derive(schemars::JsonSchema)]
        pub struct Same {
            pub y: String,
        }
    }

    #[test]
    fn two_types_with_one_name_are_a_conflict_not_an_overwrite() {
        let mut set = SchemaSet::new();
        set.add::<a::Same>().add::<a::Same>();
        assert!(set.conflicts().is_empty());
        set.add::<b::Same>();
        assert_eq!(set.conflicts(), ["Same".to_owned()]);
        let dir = std::env::temp_dir().join(format!("wf-conflict-{}", std::process::id()));
        assert_eq!(
            set.export(&dir).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        assert_eq!(set.check(&dir).unwrap_err().conflicts, ["Same".to_owned()]);
    }
}
