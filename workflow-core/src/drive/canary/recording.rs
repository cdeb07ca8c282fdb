//! What a live canary run leaves for replays: per canary, the model's
//! replies (its tool loop's record), the tools' responses, and the version
//! and digests of each tool offered, so that a later description change is
//! seen.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::export::ToolDigests;
use crate::spec::{ModelCallRecord, ToolCallRecord, Workflow};

/// The recording of a workflow's canaries (`--record`): committed beside
/// the workflow, replayed in CI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CanaryRecording {
    /// The workflow whose canaries these are.
    pub workflow: String,
    /// One entry per canary, in the order they ran.
    pub canaries: Vec<RecordedCanary>,
}

/// One canary's recorded run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordedCanary {
    /// The canary's name.
    pub canary: String,
    /// The tools offered, as they were when it was recorded.
    pub tools: Vec<RecordedTool>,
    /// The tool loop: each model step (request digest, reply, calls asked).
    pub model_call: ModelCallRecord,
    /// The tool calls made, with their outcomes.
    pub tool_calls: Vec<ToolCallRecord>,
}

/// A tool offered to a recorded canary: its version and digests then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordedTool {
    /// The tool's name.
    pub name: String,
    /// Its declared version.
    pub version: u32,
    /// The SHA-256 of its description.
    pub description_digest: String,
    /// The SHA-256 of its input schema.
    pub input_schema_digest: String,
    /// The SHA-256 of its output schema.
    pub output_schema_digest: String,
}

impl RecordedTool {
    /// The recorded tool `name` with `digests`.
    pub fn new(name: &str, digests: ToolDigests) -> Self {
        RecordedTool {
            name: name.to_owned(),
            version: digests.version,
            description_digest: digests.description,
            input_schema_digest: digests.input_schema,
            output_schema_digest: digests.output_schema,
        }
    }

    /// Its version and digests.
    pub fn digests(&self) -> ToolDigests {
        ToolDigests {
            version: self.version,
            description: self.description_digest.clone(),
            input_schema: self.input_schema_digest.clone(),
            output_schema: self.output_schema_digest.clone(),
        }
    }
}

impl CanaryRecording {
    /// An empty recording of workflow `W`.
    pub fn of<W: Workflow>() -> Self {
        CanaryRecording {
            workflow: W::GRAPH.name.to_owned(),
            canaries: Vec::new(),
        }
    }

    /// The recording of canary `name`.
    pub fn get(&self, name: &str) -> Option<&RecordedCanary> {
        self.canaries.iter().find(|c| c.canary == name)
    }

    /// Reads a recording from `path` (JSON, unknown fields refused).
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the canary recording {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is not a canary recording: {e}; write one with `workflow canary --live --record {}`",
                path.display(),
                path.display()
            )
        })
    }

    /// Writes the recording to `path` (pretty JSON, a newline at the end).
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| format!("the recording does not serialize: {e}"))?;
        text.push('\n');
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}
