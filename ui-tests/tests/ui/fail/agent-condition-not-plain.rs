//! A condition is a plain boolean expression: no `?`, `.await` or `return`.

use workflow_core::prelude::*;

fn parse(text: &str) -> Result<u32, std::num::ParseIntError> {
    text.parse()
}

#[workflow(entry = writer, output = String)]
mod wf {
    use super::*;

    #[agent(to = [END])]
    #[pre(parse(text)? > 0, "a positive number")]
    #[pre(async { true }.await, "awaited")]
    async fn writer(text: String, _cx: writer::Context<'_>) -> Result<writer::Next, Reject> {
        Ok(writer::Next::End(text))
    }
}

fn main() {}
