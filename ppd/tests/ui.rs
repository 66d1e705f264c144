//! The attributes' compile-time contract: what compiles, and the error (with its span) for
//! what does not. `TRYBUILD=overwrite cargo test -p ppd --test ui` rewrites the `.stderr` files.

#[test]
fn attributes() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
