//! `word_count`: a parallel word count over files, with a work queue.
//!
//! The main thread walks the directories given on the command line (by default the sample
//! texts in `examples/data/words`) and queues every file; three `counter` threads take files
//! from the queue, count each file's words and merge the counts into a shared table; `main`
//! reports the most frequent words. It is a std program ported by changing its `use` lines and
//! adding `#[ppd::main]` (see `docs/porting.md`).
//!
//! The bug: `count_words` splits on spaces only, so the last word of a line and the first word
//! of the next are counted as one word, `"dog\nthe"`. Ask where it came from:
//!
//! ```text
//! ppd record -- ./target/debug/examples/word_count
//! ppd why main top
//! ```
//!
//! The chain leads from the report, through the table's lock, to the `merge` in the counter
//! that added the word and the `count_words` call that produced it, with the file it read.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use ppd::sync::{Arc, Mutex};
use ppd::thread;

/// Counts the words of one file's text.
#[ppd::eblock]
fn count_words(file: String, text: String) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for word in text.split(' ') {
        let word = word
            .trim_matches(|c: char| c.is_ascii_punctuation())
            .to_lowercase();
        if !word.is_empty() {
            *counts.entry(word).or_insert(0) += 1;
        }
    }
    counts
}

/// Adds one file's counts to the table; returns how many words they hold.
#[ppd::eblock]
fn merge(table: &Mutex<BTreeMap<String, u64>>, counts: BTreeMap<String, u64>) -> u64 {
    let mut table = table.lock().unwrap();
    let mut words = 0;
    for (word, n) in counts {
        *table.entry(word).or_insert(0) += n;
        words += n;
    }
    words
}

/// The `limit` most frequent words, most frequent first.
#[ppd::eblock]
fn report(table: &Mutex<BTreeMap<String, u64>>, limit: usize) -> Vec<(String, u64)> {
    let table = table.lock().unwrap();
    let mut top: Vec<(String, u64)> = table.iter().map(|(w, n)| (w.clone(), *n)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(limit);
    top
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn counter(queue: Arc<Mutex<VecDeque<PathBuf>>>, table: Arc<Mutex<BTreeMap<String, u64>>>) {
    loop {
        let Some(path) = queue.lock().unwrap().pop_front() else {
            return;
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let counts = count_words(path.display().to_string(), text);
        merge(&table, counts);
    }
}

#[ppd::main]
fn main() {
    let mut roots: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if roots.is_empty() {
        roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/words"));
    }
    let mut files = Vec::new();
    for root in &roots {
        files_under(root, &mut files);
    }
    let queue = Arc::new(Mutex::new(VecDeque::from(files)));
    let table = Arc::new(Mutex::new(BTreeMap::new()));
    let counters: Vec<_> = (0..3)
        .map(|id| {
            let queue = Arc::clone(&queue);
            let table = Arc::clone(&table);
            thread::Builder::new()
                .name(format!("counter{id}"))
                .spawn(move || counter(queue, table))
                .unwrap()
        })
        .collect();
    for counter in counters {
        counter.join().unwrap();
    }
    let top = report(&table, 8);
    for (word, n) in &top {
        println!("{n:4} {word:?}");
    }
}
