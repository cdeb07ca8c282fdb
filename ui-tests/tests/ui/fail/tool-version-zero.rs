//! A tool version of zero, and one too large for `u32`: versions start at 1.

use workflow_core::prelude::*;

#[workflow(entry = reader, output = String)]
mod wf {
    use super::*;

    /// Reads a value.
    #[tool(effect = read, version = 0)]
    async fn read_value(input: String, _deps: &()) -> Result<String, ToolError> {
        Ok(input)
    }

    /// Reads it again.
    #[tool(effect = read, version = 4294967296)]
    async fn read_again(input: String, _deps: &()) -> Result<String, ToolError> {
        Ok(input)
    }

    #[agent(tools = [read_value, read_again], to = [END])]
    async fn reader(input: String, _cx: reader::Context<'_>) -> Result<reader::Next, Reject> {
        Ok(reader::Next::End(input))
    }
}

fn main() {}
