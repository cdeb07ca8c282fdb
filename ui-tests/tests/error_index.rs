//! The book's compile-error index (`book/src/errors.md`) and the failing
//! ui-test cases describe each other: every case has an entry, every entry
//! names existing cases, and every message the book shows is still, word for
//! word, part of what the compiler prints for those cases (their `.stderr`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const CASE_PREFIX: &str = "ui-tests/tests/ui/fail/";

struct Entry {
    id: String,
    cases: Vec<String>,
    messages: Vec<String>,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Splits the index at each `<a id="E-..."></a>` anchor.
fn entries(index: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    for chunk in index.split("<a id=\"").skip(1) {
        let (id, body) = chunk.split_once('"').expect("anchor id is quoted");
        let mut cases = Vec::new();
        for piece in body.split(CASE_PREFIX).skip(1) {
            let name = piece.split(".rs").next().unwrap_or_default();
            if !cases.iter().any(|c| c == name) {
                cases.push(name.to_owned());
            }
        }
        let messages = body
            .split("```text\n")
            .skip(1)
            .map(|m| m.split("\n```").next().unwrap_or_default().to_owned())
            .collect();
        out.push(Entry {
            id: id.to_owned(),
            cases,
            messages,
        });
    }
    out
}

fn fail_cases(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .expect("tests/ui/fail exists")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect()
}

#[test]
fn error_index_matches_cases() {
    let root = manifest_dir();
    let index =
        fs::read_to_string(root.join("../book/src/errors.md")).expect("book/src/errors.md exists");
    let fail_dir = root.join("tests/ui/fail");
    let cases = fail_cases(&fail_dir);
    let entries = entries(&index);
    let mut problems = Vec::new();
    let mut ids = BTreeSet::new();
    let mut covered = BTreeSet::new();

    for entry in &entries {
        if !ids.insert(entry.id.clone()) {
            problems.push(format!("{}: id used twice", entry.id));
        }
        if !entry.cases.iter().any(|c| format!("E-{c}") == entry.id) {
            problems.push(format!(
                "{}: the id must be `E-` + one of its case names",
                entry.id
            ));
        }
        if entry.messages.is_empty() {
            problems.push(format!("{}: shows no message", entry.id));
        }
        let mut stderr = String::new();
        for case in &entry.cases {
            if !cases.contains(case) {
                problems.push(format!("{}: case `{case}.rs` does not exist", entry.id));
                continue;
            }
            covered.insert(case.clone());
            stderr +=
                &fs::read_to_string(fail_dir.join(format!("{case}.stderr"))).unwrap_or_default();
        }
        for message in &entry.messages {
            if !stderr.contains(message.as_str()) {
                let first = message.lines().next().unwrap_or_default();
                problems.push(format!(
                    "{}: message not in the cases' .stderr (copy it again): {first}",
                    entry.id
                ));
            }
        }
    }
    for case in cases.difference(&covered) {
        problems.push(format!(
            "case `{case}.rs` has no entry in book/src/errors.md"
        ));
    }
    assert!(
        problems.is_empty(),
        "error index out of date:\n{}",
        problems.join("\n")
    );
}
