//! The attributes' compile-time contract for what does not compile: the error, with its span.
//! `TRYBUILD=overwrite cargo test -p ppd --test ui` rewrites the `.stderr` files. What must
//! compile is `tests/eblock_forms.rs` and `tests/let_bindings.rs`, ordinary test programs: with
//! only failing cases, trybuild checks its crates instead of building them, which takes a
//! fraction of the time.

#[test]
fn attributes() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}
