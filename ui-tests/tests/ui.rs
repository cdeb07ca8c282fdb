//! Compile-time guarantees, case by case: every file under `tests/ui/fail`
//! must be rejected with exactly its `.stderr`, every file under
//! `tests/ui/pass` must compile and run. Each failing case has an entry in
//! the book's error index (`book/src/errors.md`).
//!
//! Bless new or changed messages with `TRYBUILD=overwrite cargo test -p ui-tests`
//! and read the `.stderr` before committing it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
