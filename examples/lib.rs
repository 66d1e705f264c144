//! The example programs are the `[[example]]` targets of this package; see each file's header
//! for what it demonstrates. Run one natively with `cargo run --example bank`, or recorded with
//! `ppd record -- cargo run --example bank`.
