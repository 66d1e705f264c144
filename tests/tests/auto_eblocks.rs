//! `ppd build`'s automatic e-blocks, on programs with no `#[ppd::eblock]`: the producer/consumer
//! of `tests/unannotated/` and the examples with every `#[ppd::eblock]` line blanked (so every
//! other line keeps its number), built in a scratch crate by `ppd build`
//! ([`ppd_tests::unannotated`]), recorded, and asked the questions the annotated examples
//! answer.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use ppd_tests::{example_bin, line_of, output_text, ppd, ppd_bin, unannotated};

/// The examples built with their annotations taken off.
const EXAMPLES: &[&str] = &["bank", "pipeline", "word_count"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

struct Built {
    root: PathBuf,
    /// What `ppd build --explain` printed on standard output.
    report: String,
}

impl Built {
    fn program(&self, path: &str) -> PathBuf {
        self.root.join("target/ppd/debug").join(path)
    }
}

/// The scratch crate, written and built by `ppd build` once for all the tests here.
fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("auto-eblocks");
        unannotated::write_crate(&root, EXAMPLES, false);
        let out = unannotated::ppd_build(
            &ppd_bin(),
            &root,
            &["--explain", "--offline", "--bins", "--examples"],
        );
        let (report, err) = output_text(&out);
        assert!(out.status.success(), "ppd build failed:\n{report}\n{err}");
        Built { root, report }
    })
}

fn record(cwd: &Path, dir: &Path, program: &Path, options: &[&str]) -> Output {
    let mut args = vec!["record", "-o", dir.to_str().unwrap()];
    args.extend_from_slice(options);
    args.extend(["--", program.to_str().unwrap()]);
    ppd(cwd, &args)
}

fn why(cwd: &Path, dir: &Path, question: &[&str]) -> String {
    let mut args = vec!["why", dir.to_str().unwrap()];
    args.extend_from_slice(question);
    let out = ppd(cwd, &args);
    let (text, err) = output_text(&out);
    assert!(out.status.success(), "why {question:?}: {err}");
    text
}

#[test]
fn the_unannotated_producer_consumer_explains_its_closure_variables_down_to_the_send() {
    let built = built();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record(work.path(), &dir, &built.program("producer_consumer"), &[]);
    assert!(out.status.success(), "{}", output_text(&out).1);
    let source = std::fs::read_to_string(built.root.join("src/bin/producer_consumer.rs")).unwrap();
    let send = format!(
        "data via message: sent {{}}  (src/bin/producer_consumer.rs:{}, producer-",
        line_of(&source, "out.send(item)")
    );
    for variable in ["last", "doubled"] {
        let chain = why(work.path(), &dir, &["consumer", variable]);
        let defined = format!(
            "(src/bin/producer_consumer.rs:{}, consumer",
            line_of(
                &source,
                if variable == "last" {
                    "last = item;"
                } else {
                    "let doubled = process(item);"
                }
            )
        );
        assert!(chain.lines().nth(1).unwrap().contains(&defined), "{chain}");
        let (sent_head, sent_tail) = send.split_once("{}").unwrap();
        assert!(
            chain
                .lines()
                .any(|l| l.contains(sent_head) && l.contains(sent_tail)),
            "why consumer {variable} does not reach the producer's send:\n{chain}"
        );
        assert!(
            chain.contains("[message ") && chain.contains(" from producer-"),
            "{chain}"
        );
    }
}

#[test]
fn ppd_build_says_what_it_chose_and_why() {
    let report = &built().report;
    for expected in [
        // The rule of §5.4: subroutines are e-blocks, small leaves are left to their callers.
        "src/bin/producer_consumer.rs:8 produce: e-block",
        "src/bin/producer_consumer.rs:15 process: a small leaf: left to its callers",
        "src/bin/producer_consumer.rs:24 checksum: #[ppd::not_traced]",
        "src/bin/producer_consumer.rs:32 consume: e-block",
        "src/bin/producer_consumer.rs:47 main: an entry point, traced by its own attribute",
        "examples/bank.rs:95 handle: e-block",
        "examples/bank.rs:211 client: e-block",
    ] {
        assert!(
            report.lines().any(|l| l.ends_with(expected)),
            "{expected:?} not in:\n{report}"
        );
    }
    // `files_under(dir: &Path, …)` passes the syntactic checks but its expansion does not
    // compile (a `Path` cannot be rebuilt from the log): it alone is withdrawn, and the
    // example keeps the rest of its e-blocks.
    let withdrawn = report
        .lines()
        .find(|l| l.contains("files_under:"))
        .unwrap_or_else(|| panic!("no files_under in:\n{report}"));
    assert!(
        withdrawn.contains("not an e-block: its e-block does not compile"),
        "{withdrawn}"
    );
    assert!(
        report.contains("word_count: 4 automatic e-blocks"),
        "{report}"
    );
    assert!(!report.contains("built as written instead"), "{report}");
}

/// The part of a chain from its root down to the first message it follows: the locations the
/// question's answer is made of, whatever values this run had.
fn locations_to_first_message(chain: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in chain.lines() {
        if let Some(start) = line.find("(examples/") {
            let location = &line[start + 1..];
            let end = location.find([',', ')']).unwrap_or(location.len());
            out.push(location[..end].to_string());
        }
        if line.contains("data via message: sent") {
            break;
        }
    }
    out
}

#[test]
fn bank_without_annotations_answers_the_readme_question_as_the_annotated_bank_does() {
    let built = built();
    let work = tempfile::tempdir().unwrap();
    let question = ["teller", "balance", "--at", "mark negative", "--depth", "8"];
    let mut chains = Vec::new();
    for (name, program) in [
        ("annotated", example_bin("bank")),
        ("unannotated", built.program("examples/bank")),
    ] {
        let dir = work.path().join(name);
        let out = record(work.path(), &dir, &program, &["--until-failure"]);
        assert_eq!(out.status.code(), Some(1), "{}", output_text(&out).1);
        chains.push(why(work.path(), &dir, &question));
    }
    let (annotated, unannotated) = (&chains[0], &chains[1]);
    assert_eq!(
        locations_to_first_message(unannotated),
        locations_to_first_message(annotated),
        "annotated:\n{annotated}\nunannotated:\n{unannotated}"
    );
    assert!(
        unannotated.contains("data via message: sent Withdraw"),
        "{unannotated}"
    );
    // The annotated bank's chain stops at `operate`'s caller, which is no e-block; the
    // automatic e-blocks make `client` one, so the chain goes on into it.
    let source = std::fs::read_to_string(workspace().join("examples/bank.rs")).unwrap();
    let account = format!(
        "(examples/bank.rs:{}, client-",
        line_of(&source, "let account = id % ACCOUNTS;")
    );
    assert!(unannotated.contains(&account), "{unannotated}");
    assert!(
        !unannotated.contains("which is not an e-block"),
        "{unannotated}"
    );
}

#[test]
fn pipeline_without_annotations_follows_the_sum_to_the_producer() {
    let built = built();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record(work.path(), &dir, &built.program("examples/pipeline"), &[]);
    assert!(out.status.success(), "{}", output_text(&out).1);
    let chain = why(work.path(), &dir, &["consumer", "sum", "--depth", "12"]);
    for process in ["filter", "producer"] {
        assert!(
            chain.contains(&format!(" from {process}]")),
            "the chain does not reach {process}:\n{chain}"
        );
    }
    assert!(chain.contains("[a random number, from the log]"), "{chain}");
}

#[test]
fn a_program_that_does_not_compile_fails_ppd_build_with_rustcs_error() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\n\n[package]\nname = \"broken\"\nversion = \"0.0.0\"\nedition = \"2024\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    let x: u32 = \"not a number\";\n}\n",
    )
    .unwrap();
    let out = Command::new(ppd_bin())
        .args(["build", "--offline"])
        .current_dir(root)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    let (_, err) = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("mismatched types"), "{err}");
    assert!(err.contains("src/main.rs:2"), "{err}");
    assert!(err.contains("ppd: cargo build failed"), "{err}");
}
