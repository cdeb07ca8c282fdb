//! The tools an agent offers its model in a tool loop: a tuple of granted
//! tool values, their definitions, and the dispatch of a requested call
//! (by name, with JSON arguments) to the one call path of `cx.call`.

use std::future::Future;
use std::pin::Pin;

use crate::llm::ToolDefinition;
use crate::run::Context;
use crate::spec::{Agent, Granted, ModelError, ModelErrorKind, Tool, ToolError, Workflow};

/// A call a model asked for, checked and under way: its index among the
/// turn's tool calls, and the future of its result as JSON text.
pub(crate) struct Dispatched<'x> {
    pub(crate) index: u32,
    pub(crate) result: Pin<Box<dyn Future<Output = Result<String, ToolError>> + Send + 'x>>,
}

/// A set of tools agent `A` of workflow `W` offers its model
/// ([`Context::tool_loop`]): a tuple of tool values, `(tools::lookup,)` or
/// `(tools::lookup, tools::write)`, up to eight.
///
/// Implemented only for tuples of tools the agent is granted: offering an
/// ungranted tool is the same compile error as `cx.call` of it.
pub trait Toolset<W: Workflow, A>: Copy + Send + Sync + 'static {
    /// The tools' names, in order.
    fn names() -> Vec<&'static str>;

    /// What the model is offered: each tool's name, description (its doc
    /// comment) and input schema, as `Workflow::mcp_tools()` publishes them.
    fn definitions() -> Vec<ToolDefinition>;

    /// Checks a call of tool `name` with `arguments` against the tool's
    /// input schema and type, and starts it through `cx.call`'s path;
    /// `None` when no tool of the set has that name.
    #[doc(hidden)]
    fn dispatch<'x>(
        self,
        cx: &Context<'x, W, A>,
        name: &str,
        arguments: serde_json::Value,
    ) -> Option<Result<DispatchedCall<'x>, ModelError>>;
}

/// A requested call that passed its checks and is under way (opaque: only
/// the tool loop awaits it).
#[doc(hidden)]
pub struct DispatchedCall<'x>(pub(crate) Dispatched<'x>);

/// The definition of tool `T` of `W`: from the workflow's graph (what
/// `mcp_tools` publishes); a hand-written workflow that does not list the
/// tool gets its name and its input type's schema.
pub(crate) fn definition<W: Workflow, T: Tool<W>>() -> ToolDefinition {
    let input_schema = input_schema::<W, T>().schema.clone();
    match W::GRAPH.tools.iter().find(|t| t.name == T::NAME) {
        Some(info) => ToolDefinition {
            name: info.name.to_owned(),
            description: info.description.to_owned(),
            input_schema,
        },
        None => ToolDefinition {
            name: T::NAME.to_owned(),
            description: String::new(),
            input_schema,
        },
    }
}

/// The input schema of tool `T` of `W` as [`definition`] publishes it,
/// built and compiled once per process (a tool loop checks every requested
/// call against it).
fn input_schema<W: Workflow, T: Tool<W>>() -> std::sync::Arc<crate::export::validate::Compiled> {
    crate::export::validate::compiled::<(W, T)>(|| {
        match W::GRAPH.tools.iter().find(|t| t.name == T::NAME) {
            Some(info) => (info.input_schema_doc)().to_value(),
            None => crate::spec::root_schema::<T::Input>(),
        }
    })
}

/// The model's arguments for tool `T` as its input: a tool whose input is
/// not an object is offered wrapped, as MCP publishes it (`{"value": ..}`,
/// [`mcp_object_schema`](crate::export::mcp_object_schema)), so its
/// arguments are unwrapped; anything else in their place is refused.
fn unwrapped<W: Workflow, T: Tool<W>>(
    schema: &serde_json::Value,
    arguments: serde_json::Value,
) -> Result<serde_json::Value, ModelError> {
    if !crate::export::mcp_wraps(schema) {
        return Ok(arguments);
    }
    let property = crate::export::STRICT_ROOT_PROPERTY;
    match arguments {
        serde_json::Value::Object(mut fields) if fields.len() == 1 => {
            match fields.remove(property) {
                Some(value) => Ok(value),
                None => Err(wrapped_error::<W, T>(property)),
            }
        }
        _ => Err(wrapped_error::<W, T>(property)),
    }
}

fn wrapped_error<W: Workflow, T: Tool<W>>(property: &str) -> ModelError {
    ModelError::new(
        ModelErrorKind::ToolArguments,
        format!(
            "the arguments of `{}` do not match its input schema",
            T::NAME
        ),
    )
    .with_errors(vec![format!(
        "the input of `{}` is not an object: pass it as the one property `{property}` of the arguments",
        T::NAME
    )])
}

/// Checks `arguments` for tool `T` (its input schema, then its input type:
/// unknown fields denied) and starts the call through the path of
/// `cx.call`.
fn dispatch_one<'x, W: Workflow, A: Agent<W>, T: Tool<W>>(
    tool: T,
    cx: &Context<'x, W, A>,
    arguments: serde_json::Value,
) -> Result<DispatchedCall<'x>, ModelError> {
    let compiled = input_schema::<W, T>();
    let arguments = unwrapped::<W, T>(&compiled.schema, arguments)?;
    compiled.check(&arguments).map_err(|errors| {
        ModelError::new(
            ModelErrorKind::ToolArguments,
            format!(
                "the arguments of `{}` do not match its input schema",
                T::NAME
            ),
        )
        .with_errors(errors)
    })?;
    let input: T::Input = serde_json::from_value(arguments).map_err(|e| {
        ModelError::new(
            ModelErrorKind::ToolArguments,
            format!("the arguments of `{}` do not read as its input", T::NAME),
        )
        .with_errors(vec![e.to_string()])
    })?;
    // The loop runs one call at a time: the next index is this call's.
    let index = cx.run.shared().lock().next_call;
    let call = cx.call_granted(tool, input);
    let result = async move {
        let out = call.await?;
        crate::encode::to_json_text(&out).map_err(|e| {
            ToolError::of(
                T::NAME,
                crate::spec::ToolErrorKind::Schema,
                format!("the result does not serialize: {e}"),
            )
        })
    };
    Ok(DispatchedCall(Dispatched {
        index,
        result: Box::pin(result),
    }))
}

macro_rules! toolset {
    ($($T:ident $i:tt),+) => {
        impl<W: Workflow, A: Agent<W>, $($T: Tool<W>),+> Toolset<W, A> for ($($T,)+)
        where
            $(A: Granted<$T>,)+
        {
            fn names() -> Vec<&'static str> {
                vec![$($T::NAME),+]
            }

            fn definitions() -> Vec<ToolDefinition> {
                vec![$(definition::<W, $T>()),+]
            }

            fn dispatch<'x>(
                self,
                cx: &Context<'x, W, A>,
                name: &str,
                arguments: serde_json::Value,
            ) -> Option<Result<DispatchedCall<'x>, ModelError>> {
                $(
                    if name == $T::NAME {
                        return Some(dispatch_one::<W, A, $T>(self.$i, cx, arguments));
                    }
                )+
                None
            }
        }
    };
}

toolset!(T0 0);
toolset!(T0 0, T1 1);
toolset!(T0 0, T1 1, T2 2);
toolset!(T0 0, T1 1, T2 2, T3 3);
toolset!(T0 0, T1 1, T2 2, T3 3, T4 4);
toolset!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5);
toolset!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6);
toolset!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7);
