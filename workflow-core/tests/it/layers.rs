//! The layers of `workflow-core/src` import one way: each file names only
//! its own layer and the layers below it (see the book's architecture
//! chapter). The one import against the direction kept on purpose: the
//! traits in `spec/workflow.rs` name the run layer's `Runtime` and `Context`.

use std::path::Path;

/// The layers, bottom up.
const LAYERS: &[&str] = &[
    "spec", "encode", "ledger", "llm", "export", "observe", "run", "drive",
];

/// `(file, layer)`: the imports against the direction kept on purpose.
const ALLOWED_UPWARD: &[(&str, &str)] = &[("spec/workflow.rs", "run")];

/// Every `crate::` path a line of code names (comments and doc comments
/// are not imports).
fn crate_paths(line: &str) -> impl Iterator<Item = &str> {
    let code = line.trim_start();
    let code = if code.starts_with("//") { "" } else { code };
    code.match_indices("crate::").filter_map(move |(at, _)| {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            return None; // `workflow_core::` or `$crate::`, not ours
        }
        let rest = &code[at + "crate::".len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        Some(&rest[..end])
    })
}

/// The violations in `source`, a file of layer `layer` at `file`.
fn violations(file: &str, layer: &str, source: &str) -> Vec<String> {
    let rank = |l: &str| LAYERS.iter().position(|x| *x == l);
    let own = rank(layer).expect("a layer");
    let mut found = Vec::new();
    for (n, line) in source.lines().enumerate() {
        for target in crate_paths(line) {
            let Some(target_rank) = rank(target) else {
                found.push(format!(
                    "{file}:{}: `crate::{target}` does not name a layer (name the item's layer: `crate::<layer>::..`)",
                    n + 1
                ));
                continue;
            };
            if target_rank > own && !ALLOWED_UPWARD.contains(&(file, target)) {
                found.push(format!(
                    "{file}:{}: layer `{layer}` imports `{target}`, a layer above it; move the item down instead",
                    n + 1
                ));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_layer_imports_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut checked = 0;
    let mut found = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let Some(layer) = LAYERS.iter().find(|l| rel.starts_with(&format!("{l}/"))) else {
            continue; // lib.rs (the facade) and the integrations beside the layers
        };
        let source = std::fs::read_to_string(&path).unwrap();
        found.extend(violations(&rel, layer, &source));
        checked += 1;
    }
    assert!(checked >= LAYERS.len(), "only {checked} layer files found");
    assert!(
        found.is_empty(),
        "imports against the layers' direction:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_an_import_against_the_direction() {
    let source = "use crate::spec::Graph;\nuse crate::drive::Executor;\n";
    let found = violations("run/x.rs", "run", source);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("run/x.rs:2: layer `run` imports `drive`"));
}

#[test]
fn the_check_finds_an_item_named_by_its_root_path() {
    let found = violations("ledger/x.rs", "ledger", "    let g: &crate::Graph = x;");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("does not name a layer"));
}

#[test]
fn the_check_reads_inline_paths_and_skips_comments() {
    let source = "/// See [`Runtime`](crate::run::Runtime).\nlet x = crate::run::agent(1);\n";
    assert_eq!(violations("spec/x.rs", "spec", source).len(), 1);
    assert!(violations("spec/x.rs", "spec", "// crate::drive::X").is_empty());
    assert!(violations("spec/x.rs", "spec", "$crate::drive::X").is_empty());
}

#[test]
fn the_kept_cycle_is_allowed_only_where_it_is_named() {
    let source = "use crate::run::{Context, Runtime};";
    assert!(violations("spec/workflow.rs", "spec", source).is_empty());
    assert_eq!(violations("spec/record.rs", "spec", source).len(), 1);
}
