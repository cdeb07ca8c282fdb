//! Agents named like something the DSL or the generated code gives a
//! meaning to: the ends of the run (`END`, `START`, in any spelling), an
//! item `#[workflow]` generates (`State`, `GRAPH`, ...), or a hidden
//! generated name (`__wf_...`).

use workflow_core::prelude::*;

#[workflow(entry = END, output = String)]
mod ends {
    use super::*;

    #[agent(to = [END])]
    async fn END(topic: String, _cx: END::Context<'_>) -> Result<END::Next, Reject> {
        Ok(END::Next::End(topic))
    }
}

#[workflow(entry = start, output = String)]
mod starts {
    use super::*;

    #[agent(to = [END])]
    async fn start(topic: String, _cx: start::Context<'_>) -> Result<start::Next, Reject> {
        Ok(start::Next::End(topic))
    }
}

#[workflow(entry = State, output = String)]
mod states {
    use super::*;

    #[agent(to = [END])]
    async fn State(topic: String, _cx: State::Context<'_>) -> Result<State::Next, Reject> {
        Ok(State::Next::End(topic))
    }
}

#[workflow(entry = GRAPH, output = String)]
mod graphs {
    use super::*;

    #[agent(to = [END])]
    async fn GRAPH(topic: String, _cx: GRAPH::Context<'_>) -> Result<GRAPH::Next, Reject> {
        Ok(GRAPH::Next::End(topic))
    }
}

#[workflow(entry = __wf_helper, output = String)]
mod hidden {
    use super::*;

    #[agent(to = [END])]
    async fn __wf_helper(
        topic: String,
        _cx: __wf_helper::Context<'_>,
    ) -> Result<__wf_helper::Next, Reject> {
        Ok(__wf_helper::Next::End(topic))
    }
}

#[workflow(entry = Spec, output = String)]
mod specs_ {
    use super::*;

    #[agent(to = [END])]
    async fn Spec(topic: String, _cx: Spec::Context<'_>) -> Result<Spec::Next, Reject> {
        Ok(Spec::Next::End(topic))
    }
}

#[workflow(entry = Workflow, output = String)]
mod workflows_ {
    use super::*;

    #[agent(to = [END])]
    async fn Workflow(topic: String, _cx: Workflow::Context<'_>) -> Result<Workflow::Next, Reject> {
        Ok(Workflow::Next::End(topic))
    }
}

#[workflow(entry = MAX_HOPS, output = String)]
mod max_hopss_ {
    use super::*;

    #[agent(to = [END])]
    async fn MAX_HOPS(topic: String, _cx: MAX_HOPS::Context<'_>) -> Result<MAX_HOPS::Next, Reject> {
        Ok(MAX_HOPS::Next::End(topic))
    }
}

#[workflow(entry = Start, output = String)]
mod starts_ {
    use super::*;

    #[agent(to = [END])]
    async fn Start(topic: String, _cx: Start::Context<'_>) -> Result<Start::Next, Reject> {
        Ok(Start::Next::End(topic))
    }
}

fn main() {}
