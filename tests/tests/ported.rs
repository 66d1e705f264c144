//! The std programs ported to ppd in `examples/` (see `docs/porting.md`): each records,
//! replays with `--verify`, reports no race or deadlock, and answers a `why` question about its
//! bug across processes.

use std::path::Path;

use ppd_tests::{assert_no_races, assert_replays, output_text, ppd, record_example};

/// Records example `name` into `work/name`; returns what it printed.
fn record(work: &Path, name: &str) -> String {
    let dir = work.join(name);
    let out = record_example(work, &dir, name, &[]);
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "recording {name} failed: {stderr}");
    stdout
}

/// `ppd why` on the recording of `name`; returns the chain it prints.
fn why(work: &Path, name: &str, args: &[&str]) -> String {
    let dir = work.join(name);
    let mut all = vec!["why", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = ppd(work, &all);
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "ppd why failed: {stderr}");
    stdout
}

/// The 1-based line of `source` that holds `needle`.
fn source_line(source: &str, needle: &str) -> usize {
    1 + source
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} is not in the source"))
}

#[test]
fn word_count_replays_and_why_follows_the_report_through_the_table_lock_to_a_counter() {
    let work = tempfile::tempdir().unwrap();
    let printed = record(work.path(), "word_count");
    // The bug is visible in the output: a word with a line break in it.
    assert!(printed.contains("2 \"end\\n\""), "{printed}");
    assert_replays(work.path(), &work.path().join("word_count"), &printed);
    assert_no_races(work.path(), &work.path().join("word_count"));

    let chain = why(work.path(), "word_count", &["main", "top", "--depth", "6"]);
    assert!(chain.starts_with("why main top"), "{chain}");
    // From the report in main, across the table's lock, to the merge in a counter that wrote it.
    let crossing = chain
        .lines()
        .find(|l| l.contains("via lock table"))
        .unwrap_or_else(|| panic!("no step through the table's lock:\n{chain}"));
    let write = source_line(
        include_str!("../../examples/word_count.rs"),
        "*table.entry(word).or_insert(0) += n;",
    );
    assert!(
        crossing.contains(&format!("word_count.rs:{write}")),
        "{crossing}"
    );
    assert!(crossing.contains("counter"), "{crossing}");
    assert!(crossing.contains("word_count::merge"), "{crossing}");
}

#[test]
fn thread_pool_replays_and_why_follows_an_unbilled_receipt_to_the_price_change_that_caused_it() {
    let work = tempfile::tempdir().unwrap();
    let printed = record(work.path(), "thread_pool");
    // The bug is visible in the output: an order quoted after the price change bills nothing.
    assert!(printed.contains("was billed nothing"), "{printed}");
    // Which worker served first, and which orders saw the new prices, are the run's choices;
    // replay reproduces them.
    assert_replays(work.path(), &work.path().join("thread_pool"), &printed);
    // Receipts from several workers race for the collector's receives: that is the design (a
    // true message race, and why a different order can be unbilled in another run). Nothing
    // else races or deadlocks.
    let send = source_line(
        include_str!("../../examples/thread_pool.rs"),
        "receipts.send(receipt).unwrap();",
    );
    let out = ppd(
        work.path(),
        &[
            "races",
            work.path().join("thread_pool").to_str().unwrap(),
            "--json",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for race in report["races"].as_array().unwrap() {
        assert_eq!(race["kind"], "message", "{race:#}");
        assert_eq!(race["a"]["line"], send, "{race:#}");
    }
    assert_eq!(report["deadlocks"]["cycles"], serde_json::json!([]));
    assert_eq!(report["deadlocks"]["blocked"], serde_json::json!([]));
    assert_eq!(report["potential_deadlocks"], serde_json::json!([]));

    let chain = why(
        work.path(),
        "thread_pool",
        &["collector", "unbilled", "--depth", "8"],
    );
    assert!(chain.starts_with("why collector unbilled"), "{chain}");
    assert!(!chain.contains("did not reproduce"), "{chain}");
    // From the collector, across the bounded results channel, to the quote in a worker.
    let crossing = chain
        .lines()
        .find(|l| l.contains("data via message: sent"))
        .unwrap_or_else(|| panic!("no step across the results channel:\n{chain}"));
    assert!(
        crossing.contains(&format!("thread_pool.rs:{send}")),
        "{crossing}"
    );
    assert!(crossing.contains("thread_pool::quote"), "{crossing}");
    assert!(crossing.contains("worker"), "{crossing}");
    // ... where the price list read under the lock holds the discount stored as a percentage,
    // ... which the reader-writer lock leads back to: the write hold in the price change that
    // stored the discount in cents as a percentage.
    assert!(
        chain.contains("discount_percent: 150"),
        "the bad price list is not shown:\n{chain}"
    );
    let bug = source_line(
        include_str!("../../examples/thread_pool.rs"),
        "prices.discount_percent = change.discount_cents;",
    );
    let through_lock = chain
        .lines()
        .find(|l| l.contains("data via lock prices:"))
        .unwrap_or_else(|| panic!("no step through the price list's lock:\n{chain}"));
    assert!(
        through_lock.contains(&format!("thread_pool.rs:{bug}")),
        "{through_lock}"
    );
    assert!(
        through_lock.contains("thread_pool::reprice"),
        "{through_lock}"
    );
    assert!(through_lock.contains("= 150"), "{through_lock}");
}
