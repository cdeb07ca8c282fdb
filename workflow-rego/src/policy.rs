//! The policy, its decision and its errors.

use std::fmt;
use std::panic::{self, AssertUnwindSafe};

use regorus::{CompiledPolicy, Engine, Value};
use serde::Deserialize as _;

/// The package every policy's first module declares.
const PACKAGE: &str = "data.workflow";
/// The rule a policy declares, relative to [`PACKAGE`].
const DENY_RULE: &str = "deny";
/// The rule evaluated on every transition.
const DENY_PATH: &str = "data.workflow.deny";

/// A set of Rego policies evaluated on every transition of a run.
///
/// Compiled once (by [`Policy::from_rego`], again by each `add_*`);
/// [`Policy::evaluate`] takes `&self` and may run on many threads at once.
#[derive(Clone)]
pub struct Policy {
    /// The modules and data, kept to recompile after `add_*`.
    engine: Engine,
    /// What `evaluate` runs: analysed, scheduled, `data.workflow.deny` resolved.
    compiled: CompiledPolicy,
    /// The module names, in the order they were added.
    modules: Vec<String>,
}

// The executor shares one policy between sessions and threads.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Policy>();
};

impl Policy {
    /// Compiles Rego `source` (file name `name`, used in error messages).
    ///
    /// The module must declare `package workflow` and a `deny` rule. Errors
    /// (syntax, unsafe variables, another package, no `deny`) are a
    /// [`PolicyError`] carrying regorus' message, never a panic. regorus
    /// finds a variable bound nowhere in a rule *head* (or only on the right
    /// of `:=`) when the rule's body first holds, so that one is an error of
    /// [`Policy::evaluate`]: test every rule with an input that fires it.
    pub fn from_rego(name: &str, source: &str) -> Result<Policy, PolicyError> {
        let compile_error = |message| PolicyError::new(PolicyStage::Compile, name, message);
        let mut engine = Engine::new();
        let package = guarded(|| engine.add_policy(name.to_owned(), source.to_owned()))
            .map_err(compile_error)?;
        if package != PACKAGE {
            let found = package.strip_prefix("data.").unwrap_or(&package);
            return Err(PolicyError::new(
                PolicyStage::Compile,
                name,
                format!(
                    "the first module declares `package {found}`; write `package workflow` \
                     (other packages can be added with `add_rego`)"
                ),
            ));
        }
        let declares_deny = guarded(|| engine.has_declared_rule_rooted_at(name, DENY_RULE))
            .map_err(compile_error)?;
        if !declares_deny {
            return Err(PolicyError::new(
                PolicyStage::Compile,
                name,
                "`package workflow` declares no `deny` rule, so it would allow everything; \
                 add `deny contains msg if { ... }`",
            ));
        }
        let compiled = compile(&mut engine).map_err(compile_error)?;
        Ok(Policy {
            engine,
            compiled,
            modules: vec![name.to_owned()],
        })
    }

    /// Adds another Rego module (any package: more `deny` rules in
    /// `package workflow`, or helpers imported from elsewhere).
    ///
    /// On error the policy is left as it was.
    pub fn add_rego(&mut self, name: &str, source: &str) -> Result<(), PolicyError> {
        if self.modules.iter().any(|m| m == name) {
            return Err(PolicyError::new(
                PolicyStage::Compile,
                name,
                "a module with this name was already added; give each module its own name",
            ));
        }
        let compile_error = |message| PolicyError::new(PolicyStage::Compile, name, message);
        let mut engine = self.engine.clone();
        guarded(|| engine.add_policy(name.to_owned(), source.to_owned())).map_err(compile_error)?;
        let compiled = compile(&mut engine).map_err(compile_error)?;
        self.engine = engine;
        self.compiled = compiled;
        self.modules.push(name.to_owned());
        Ok(())
    }

    /// Adds JSON data (`data.*`), e.g. a list of forbidden jurisdictions.
    ///
    /// `data` must be an object; it is deep-merged with the data already
    /// added, and a key given two different values is an error. On error
    /// the policy is left as it was.
    pub fn add_data(&mut self, data: serde_json::Value) -> Result<(), PolicyError> {
        let data_error = |message| PolicyError::new(PolicyStage::Data, self.names(), message);
        let value = guarded(|| Value::deserialize(data)).map_err(data_error)?;
        let mut engine = self.engine.clone();
        guarded(|| engine.add_data(value)).map_err(data_error)?;
        let compiled = compile(&mut engine).map_err(data_error)?;
        self.engine = engine;
        self.compiled = compiled;
        Ok(())
    }

    /// Evaluates `data.workflow.deny` (a set of strings:
    /// `deny contains msg if { ... }`) on `input`.
    ///
    /// An empty set (or an undefined rule) is [`PolicyDecision::Allow`];
    /// otherwise [`PolicyDecision::Deny`] with the messages sorted. A deny
    /// rule yielding a non-string, or an evaluation error, is a
    /// [`PolicyError`]: never silently allow.
    pub fn evaluate(&self, input: &serde_json::Value) -> Result<PolicyDecision, PolicyError> {
        let deny = guarded(|| self.compiled.eval_with_input(Value::deserialize(input)?))
            .map_err(|message| self.evaluation_error(message))?;
        let set = match deny {
            Value::Undefined => return Ok(PolicyDecision::Allow),
            Value::Set(set) => set,
            other => {
                return Err(self.evaluation_error(format!(
                    "`{DENY_PATH}` is `{other}`, not a set of strings; \
                     write `deny contains msg if {{ ... }}`"
                )));
            }
        };
        let mut messages = Vec::with_capacity(set.len());
        for value in set.iter() {
            match value {
                Value::String(msg) => messages.push(msg.to_string()),
                other => {
                    return Err(self.evaluation_error(format!(
                        "`{DENY_PATH}` contains `{other}`, not a string; \
                         make every `deny` rule yield a message string"
                    )));
                }
            }
        }
        if messages.is_empty() {
            return Ok(PolicyDecision::Allow);
        }
        messages.sort_unstable();
        Ok(PolicyDecision::Deny(messages))
    }

    /// The names of the modules, in the order they were added.
    pub fn modules(&self) -> &[String] {
        &self.modules
    }

    /// The module names, for errors that belong to the whole policy.
    fn names(&self) -> String {
        self.modules.join(", ")
    }

    fn evaluation_error(&self, message: String) -> PolicyError {
        PolicyError::new(PolicyStage::Evaluate, self.names(), message)
    }
}

/// A policy is a gate: `Executor::with_gate(Arc::new(policy))` evaluates it
/// on every transfer. A deny is a rejection carrying the policy's messages
/// (`RejectReason::Denied`); an evaluation error is a rejection too (the
/// policy fails closed), its message saying what went wrong.
impl workflow_core::Gate for Policy {
    fn name(&self) -> std::borrow::Cow<'static, str> {
        format!("policy {}", self.modules().join(", ")).into()
    }

    fn check(&self, input: &serde_json::Value) -> Result<(), Vec<String>> {
        match self.evaluate(input) {
            Ok(PolicyDecision::Allow) => Ok(()),
            Ok(PolicyDecision::Deny(messages)) => Err(messages),
            Err(e) => Err(vec![format!("the policy could not decide: {e}")]),
        }
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("modules", &self.modules)
            .finish_non_exhaustive()
    }
}

/// Analyses and schedules the modules and resolves `data.workflow.deny`;
/// most unsafe variables are found here.
fn compile(engine: &mut Engine) -> Result<CompiledPolicy, String> {
    guarded(|| engine.compile_with_entrypoint(&DENY_PATH.into()))
}

/// Runs a regorus call and returns its error as a message: `{:#}` keeps the
/// whole chain of causes of an `anyhow` error, and the leading newline of
/// regorus' positioned messages goes. A panic inside regorus (it has a few
/// `expect`s on policy text, e.g. a non-ASCII digit in a `sprintf` width) is
/// an error too: whatever reaches the executor must be a decision or an
/// error, never an unwinding thread. Unwind safety: a panicking call only
/// touches an engine that is then dropped, or reads the compiled policy.
fn guarded<T, E: fmt::Display>(call: impl FnOnce() -> Result<T, E>) -> Result<T, String> {
    match panic::catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(format!("{e:#}").trim_start().to_owned()),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("a non-string panic payload");
            Err(format!("regorus panicked: {what}"))
        }
    }
}

/// What a policy decided about one transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision {
    /// `deny` is empty or undefined: the transition may proceed.
    Allow,
    /// `deny` holds these messages, sorted: the transition is rejected.
    Deny(Vec<String>),
}

/// Where a [`PolicyError`] happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyStage {
    /// Parsing or compiling a module ([`Policy::from_rego`], [`Policy::add_rego`]).
    Compile,
    /// Adding data ([`Policy::add_data`]).
    Data,
    /// Evaluating `data.workflow.deny` on an input ([`Policy::evaluate`]).
    Evaluate,
}

impl fmt::Display for PolicyStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyStage::Compile => "cannot compile policy module",
            PolicyStage::Data => "cannot add data to policy",
            PolicyStage::Evaluate => "cannot evaluate policy",
        })
    }
}

/// A policy that could not be compiled, extended or evaluated.
///
/// The executor turns it into a rejection: a broken policy never allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{stage} `{module}`: {message}")]
pub struct PolicyError {
    stage: PolicyStage,
    module: String,
    message: String,
}

impl PolicyError {
    fn new(stage: PolicyStage, module: impl Into<String>, message: impl Into<String>) -> Self {
        PolicyError {
            stage,
            module: module.into(),
            message: message.into(),
        }
    }

    /// Where it happened.
    pub fn stage(&self) -> PolicyStage {
        self.stage
    }

    /// The module at fault for [`PolicyStage::Compile`]; the policy's module
    /// names, comma-separated, for the other stages.
    pub fn module(&self) -> &str {
        &self.module
    }

    /// What went wrong (regorus' message, with its line and column, when it
    /// comes from regorus).
    pub fn message(&self) -> &str {
        &self.message
    }
}
