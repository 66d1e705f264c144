//! The peers' own test suites, run against ppd's twins three ways: plain, recorded, and
//! replayed with `--verify`.
//!
//! * **crossbeam-channel**: the `tests/` directory of the crossbeam-channel crate cargo fetched
//!   for this workspace, taken from the registry source at test time (nothing upstream is in
//!   this repository), its paths rewritten to ppd's ([`suite::REWRITES`]).
//! * **std-sync**: std's documented behaviour of each sync twin, in `tests/conformance/std/`
//!   (std's own tests are not published with the toolchain).
//!
//! Each suite becomes a package of a scratch workspace under cargo's test scratch directory,
//! built once; every test of it then runs alone (`--exact`), under `ppd record`, and the
//! recording is replayed. A test that cannot pass in a mode is listed in [`cuts`] with its
//! reason and not run in that mode; any other failure fails this test, and so does a cut that
//! names no test. The table printed at the end gives the counts per suite and mode.

mod cuts;
mod run;
mod scratch;
mod suite;

use std::process::ExitCode;

fn main() -> ExitCode {
    let suites = match suite::all() {
        Ok(suites) => suites,
        Err(e) => {
            eprintln!("peer suites: {e}");
            return ExitCode::FAILURE;
        }
    };
    for suite in &suites {
        println!("{}: {}", suite.name, suite.origin);
    }
    let binaries = match scratch::build(&suites) {
        Ok(binaries) => binaries,
        Err(e) => {
            eprintln!("peer suites: {e}");
            return ExitCode::FAILURE;
        }
    };
    let report = run::all(&binaries);
    report.print();
    let refusal = run::second_test_is_refused(&binaries);
    if let Some(failure) = &refusal {
        println!("FAILED: {failure}");
    }
    if report.passed() && refusal.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
