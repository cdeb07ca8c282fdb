//! The published schemas as a JavaScript consumer compiles them: Ajv's
//! draft 2020-12 class in its default strict mode, with ajv-formats for the
//! standard formats (`tools/ajv-check/`, installed with `npm ci --prefix
//! tools/ajv-check`). Ajv refuses to compile a schema with an unknown
//! format (schemars' `uint32`) or an unknown keyword (`x-rust-type`).
//!
//! Without node or the installed checker the tests say so and pass;
//! `WORKFLOW_REQUIRE_AJV=1` (set by `.ci/run`) makes that a failure.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Map, Value, json};

/// The checker's folder.
fn checker() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/ajv-check")
}

/// Why Ajv cannot be run here, if it cannot.
fn unavailable() -> Option<String> {
    let dir = checker();
    if !dir.join("node_modules/ajv").is_dir() || !dir.join("node_modules/ajv-formats").is_dir() {
        return Some(format!(
            "the checker is not installed (npm ci --prefix {})",
            dir.display()
        ));
    }
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!("`node --version` failed: {}", out.status)),
        Err(e) => Some(format!("no `node`: {e}")),
    }
}

/// Each schema's verdict (`None`: it compiles; `Some(why)`: it does not),
/// or `None` when Ajv cannot run here and is not required.
pub fn compile_all(schemas: &Map<String, Value>) -> Option<Map<String, Value>> {
    if let Some(why) = unavailable() {
        if std::env::var_os("WORKFLOW_REQUIRE_AJV").is_some_and(|v| v == "1") {
            panic!("Ajv is required (WORKFLOW_REQUIRE_AJV=1) but: {why}");
        }
        eprintln!("SKIPPED: the schemas were not compiled with Ajv: {why}");
        return None;
    }
    let mut child = Command::new("node")
        .arg(checker().join("check.js"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    let input = serde_json::to_vec(schemas).expect("JSON serializes");
    child
        .stdin
        .take()
        .expect("a stdin")
        .write_all(&input)
        .expect("the schemas are written");
    let out = child.wait_with_output().expect("the checker ends");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "the checker failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts: Value = serde_json::from_slice(&out.stdout).expect("the checker prints JSON");
    let Value::Object(verdicts) = verdicts else {
        panic!("the checker printed {verdicts}");
    };
    assert_eq!(verdicts.len(), schemas.len(), "one verdict per schema");
    Some(verdicts)
}

/// Every published schema of the main example, and every tool's input and
/// output schema in its published `tools.json`, by name.
pub fn published() -> Map<String, Value> {
    let schemas = published_in("deploy");
    assert!(schemas.len() >= 22, "{} schemas", schemas.len());
    schemas
}

/// Every schema published under `examples/schemas/<set>`, and its tools'.
pub fn published_in(set: &str) -> Map<String, Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(set);
    let read = |path: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("JSON")
    };
    let mut schemas = Map::new();
    for entry in std::fs::read_dir(&dir).expect("the published folder") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".schema.json") {
            schemas.insert(name, read(&path));
        }
    }
    let Value::Array(tools) = read(&dir.join("tools.json")) else {
        panic!("tools.json is a list");
    };
    for tool in tools {
        let name = tool["name"].as_str().expect("a name").to_owned();
        schemas.insert(format!("{name}.inputSchema"), tool["inputSchema"].clone());
        schemas.insert(format!("{name}.outputSchema"), tool["outputSchema"].clone());
    }
    schemas
}

#[test]
fn every_published_schema_compiles_in_ajvs_default_strict_mode() {
    let schemas = published();
    let Some(verdicts) = compile_all(&schemas) else {
        return;
    };
    let refused: Vec<String> = verdicts
        .iter()
        .filter(|(_, why)| !why.is_null())
        .map(|(name, why)| format!("{name}: {why}"))
        .collect();
    assert!(refused.is_empty(), "Ajv refuses:\n{}", refused.join("\n"));
}

#[test]
fn the_parallel_reviews_schemas_compile_in_ajvs_default_strict_mode() {
    // A workflow with a fan-out: its join's input type (`review.judge.Joined`,
    // one `Branch<Review>` per reviewer) among them.
    let schemas = published_in("parallel_review");
    assert!(schemas.contains_key("review.judge.Joined.schema.json"));
    let Some(verdicts) = compile_all(&schemas) else {
        return;
    };
    let refused: Vec<String> = verdicts
        .iter()
        .filter(|(_, why)| !why.is_null())
        .map(|(name, why)| format!("{name}: {why}"))
        .collect();
    assert!(refused.is_empty(), "Ajv refuses:\n{}", refused.join("\n"));
}

#[test]
fn ajv_refuses_what_schemars_emitted_before_so_the_check_can_fail() {
    let mut schemas = Map::new();
    schemas.insert(
        "format".into(),
        json!({"type": "integer", "format": "uint32", "minimum": 0}),
    );
    schemas.insert(
        "keyword".into(),
        json!({"type": "string", "x-rust-type": "a::B"}),
    );
    schemas.insert(
        "standard".into(),
        json!({"type": "string", "format": "date-time", "$comment": "Rust type: a::B"}),
    );
    let Some(verdicts) = compile_all(&schemas) else {
        return;
    };
    assert!(
        verdicts["format"]
            .as_str()
            .is_some_and(|w| w.contains("unknown format \"uint32\"")),
        "{verdicts:?}"
    );
    assert!(
        verdicts["keyword"]
            .as_str()
            .is_some_and(|w| w.contains("unknown keyword")),
        "{verdicts:?}"
    );
    assert!(verdicts["standard"].is_null(), "{verdicts:?}");
}
