//! `ppd races` against an independent implementation of its definition, on random programs.
//!
//! Each seed of `random_atomics` is recorded with the real `ppd`; `ppd races --json` must then
//! report exactly the data races that a brute-force oracle finds in the recording's logs: every
//! racing pair of source sites, nothing else, with the number of racing access pairs at each.
//!
//! The oracle shares nothing with the analysis but the log reader. It builds the
//! happened-before graph edge by edge from the documented rules (program order; spawn → the
//! child's start; the child's last event → join; send → receive of the same message; unlock →
//! the next acquisition of the mutex; a release write → an acquire read that reads from a
//! release sequence it heads, where a read reads from the last write before it in the recorded
//! memory order, a release sequence is its head followed by read-modify-writes, and a failed
//! compare-exchange is governed by its failure ordering), decides order by searching that graph,
//! and compares every pair of accesses to the same atomic from different processes: two race
//! when neither is reachable from the other, one writes, and one is a data access (a relaxed
//! load or store; every other access synchronizes).

mod analysis_support;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use analysis_support::races_json;
use ppd_formats::event::{AtomicOp, Event, MemOrdering};
use ppd_formats::ids::{ObjectId, ProcessId};
use ppd_formats::recording::Recording;
use ppd_tests::ppd;

/// How many random programs are recorded and compared.
const SEEDS: u64 = 40;

/// `(variable, lower site, higher site)`, a site being `(file, line)`.
type SitePair = (String, (String, u32), (String, u32));

/// An event, as `(process index, position in its log)`.
type Node = (usize, usize);

/// Records seed `seed` of `random_atomics` into `<work>/<seed>`.
fn record_seed(work: &Path, seed: u64) -> std::path::PathBuf {
    let dir = work.join(seed.to_string());
    let bin = env!("CARGO_BIN_EXE_random_atomics");
    let seed = seed.to_string();
    let out = ppd(
        work,
        &[
            "record",
            "-o",
            dir.to_str().expect("utf-8 path"),
            "--",
            bin,
            &seed,
        ],
    );
    assert!(
        out.status.success(),
        "recording seed {seed}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// The data races `ppd races --json` reports, by site pair.
fn reported(work: &Path, dir: &Path) -> BTreeMap<SitePair, u64> {
    let report = races_json(work, dir);
    let mut map = BTreeMap::new();
    for race in report["races"].as_array().expect("races") {
        if race["kind"] != "data" {
            continue;
        }
        let site = |side: &serde_json::Value| {
            (
                side["file"].as_str().expect("file").to_owned(),
                side["line"].as_u64().expect("line") as u32,
            )
        };
        let (a, b) = (site(&race["a"]), site(&race["b"]));
        let key = (
            race["var"].as_str().expect("var").to_owned(),
            a.clone().min(b.clone()),
            a.max(b),
        );
        let count = race["count"].as_u64().expect("count");
        assert!(
            map.insert(key.clone(), count).is_none(),
            "{key:?} reported twice"
        );
    }
    map
}

/// One atomic access, as the oracle sees it.
#[derive(Clone, Debug)]
struct Access {
    node: Node,
    object: ObjectId,
    version: u64,
    op: AtomicOp,
    /// The ordering that governs it: a failed compare-exchange's failure ordering.
    ordering: MemOrdering,
    site: (String, u32),
}

impl Access {
    fn writes(&self) -> bool {
        matches!(self.op, AtomicOp::Store | AtomicOp::Rmw)
    }

    fn acquires(&self) -> bool {
        !matches!(self.op, AtomicOp::Store)
            && matches!(
                self.ordering,
                MemOrdering::Acquire | MemOrdering::AcqRel | MemOrdering::SeqCst
            )
    }

    fn releases(&self) -> bool {
        self.writes()
            && matches!(
                self.ordering,
                MemOrdering::Release | MemOrdering::AcqRel | MemOrdering::SeqCst
            )
    }

    /// A relaxed load or store: a plain data access. Every other access (acquire loads,
    /// release stores, read-modify-writes, failed compare-exchanges) synchronizes.
    fn is_data(&self) -> bool {
        matches!(self.op, AtomicOp::Load | AtomicOp::Store) && self.ordering == MemOrdering::Relaxed
    }
}

/// What the oracle found in one recording.
struct Found {
    /// Every racing site pair, with its count.
    races: BTreeMap<SitePair, u64>,
    /// Pairs of conflicting accesses (one of them data) from different processes that
    /// happened-before orders: the races synchronization prevented.
    ordered: usize,
    /// Synchronization edges drawn between atomic accesses.
    atomic_edges: usize,
    /// Those of them into failed compare-exchanges, which acquire by their failure ordering.
    failed_cas_edges: usize,
}

/// The oracle: every racing site pair of the recording in `dir`, with its count.
fn oracle(dir: &Path) -> Found {
    let recording = Recording::open(dir).expect("open the recording");
    let pids: Vec<ProcessId> = recording.processes().iter().map(|p| p.id).collect();
    let index_of = |pid: ProcessId| {
        pids.iter()
            .position(|&p| p == pid)
            .unwrap_or_else(|| panic!("unknown process {pid:?}"))
    };
    let logs: Vec<Vec<Event>> = recording
        .processes()
        .iter()
        .map(|entry| {
            let log = recording.open_log(entry).expect("open a log");
            log.events().map(|e| e.expect("read an event").1).collect()
        })
        .collect();

    let mut names: HashMap<ObjectId, String> = HashMap::new();
    let mut sends = HashMap::new();
    let mut spawns = HashMap::new();
    let mut locks: HashMap<ObjectId, Vec<(u64, Node)>> = HashMap::new();
    let mut accesses: Vec<Access> = Vec::new();
    for (p, log) in logs.iter().enumerate() {
        for (k, event) in log.iter().enumerate() {
            match event {
                Event::Create {
                    object,
                    name: Some(name),
                    ..
                } => {
                    names.insert(*object, name.to_string());
                }
                Event::Send { channel, seq, .. } => {
                    sends.insert((*channel, *seq), (p, k));
                }
                Event::Spawn { child, .. } => {
                    spawns.insert(*child, (p, k));
                }
                Event::Lock {
                    object, version, ..
                } => locks.entry(*object).or_default().push((*version, (p, k))),
                Event::SemAcquire { .. } | Event::SemRelease { .. } => {
                    panic!("random_atomics makes no semaphores")
                }
                Event::Atomic {
                    object,
                    version,
                    op,
                    ordering,
                    failure,
                    site,
                    ..
                } => {
                    let site = site.as_ref().expect("every access has a site");
                    accesses.push(Access {
                        node: (p, k),
                        object: *object,
                        version: *version,
                        op: *op,
                        ordering: match op {
                            AtomicOp::CasFail => failure.expect("a failure ordering is logged"),
                            _ => *ordering,
                        },
                        site: (site.file.clone(), site.line),
                    });
                }
                _ => {}
            }
        }
    }

    // The synchronization edges, as `from → to`.
    let mut edges: Vec<(Node, Node)> = Vec::new();
    for (p, log) in logs.iter().enumerate() {
        for (k, event) in log.iter().enumerate() {
            match event {
                Event::Start { parent: Some(_) } => {
                    edges.push((spawns[&pids[p]], (p, k)));
                }
                Event::Join { child, .. } => {
                    let c = index_of(*child);
                    edges.push(((c, logs[c].len() - 1), (p, k)));
                }
                Event::Recv { channel, seq, .. } => {
                    edges.push((sends[&(*channel, *seq)], (p, k)));
                }
                _ => {}
            }
        }
    }
    for acquisitions in locks.values_mut() {
        acquisitions.sort();
        for pair in acquisitions.windows(2) {
            // The unlock that ends the earlier acquisition: the holder's next unlock of it.
            let (p, k) = pair[0].1;
            let Event::Lock { object, .. } = &logs[p][k] else {
                unreachable!()
            };
            let unlock = (k + 1..logs[p].len())
                .find(|&j| matches!(&logs[p][j], Event::Unlock { object: o, .. } if o == object))
                .expect("every acquisition before another is released");
            edges.push(((p, unlock), pair[1].1));
        }
    }
    let before_atomics = edges.len();
    let mut failed_cas_edges = 0;
    let mut by_object: HashMap<ObjectId, Vec<&Access>> = HashMap::new();
    for a in &accesses {
        by_object.entry(a.object).or_default().push(a);
    }
    for order in by_object.values_mut() {
        order.sort_by_key(|a| a.version);
        for (i, read) in order.iter().enumerate() {
            if !read.acquires() {
                continue;
            }
            // The write it reads from, then back through the read-modify-writes before it: each
            // release write met heads a release sequence that write is in.
            let mut writes = order[..i].iter().rev().filter(|a| a.writes());
            for w in writes.by_ref() {
                if w.releases() {
                    edges.push((w.node, read.node));
                    failed_cas_edges += usize::from(read.op == AtomicOp::CasFail);
                }
                if w.op == AtomicOp::Store {
                    break;
                }
            }
        }
    }

    let atomic_edges = edges.len() - before_atomics;
    let mut successors: HashMap<Node, Vec<Node>> = HashMap::new();
    for (from, to) in edges {
        successors.entry(from).or_default().push(to);
    }
    // Everything an event happened before: a search of the graph from it.
    let reach = |from: Node| {
        let mut seen: std::collections::HashSet<Node> = std::collections::HashSet::new();
        let mut queue = VecDeque::from([from]);
        while let Some(n) = queue.pop_front() {
            let mut next: Vec<Node> = successors.get(&n).cloned().unwrap_or_default();
            if n.1 + 1 < logs[n.0].len() {
                next.push((n.0, n.1 + 1));
            }
            for m in next {
                if seen.insert(m) {
                    queue.push_back(m);
                }
            }
        }
        seen
    };
    let after: HashMap<Node, _> = accesses.iter().map(|a| (a.node, reach(a.node))).collect();

    let mut races = BTreeMap::new();
    let mut ordered = 0;
    for (i, a) in accesses.iter().enumerate() {
        for b in &accesses[i + 1..] {
            if a.object != b.object
                || a.node.0 == b.node.0
                || !(a.writes() || b.writes())
                || !(a.is_data() || b.is_data())
            {
                continue;
            }
            if after[&a.node].contains(&b.node) || after[&b.node].contains(&a.node) {
                ordered += 1;
            } else {
                let key = (
                    names[&a.object].clone(),
                    a.site.clone().min(b.site.clone()),
                    a.site.clone().max(b.site.clone()),
                );
                *races.entry(key).or_insert(0) += 1;
            }
        }
    }
    Found {
        races,
        ordered,
        atomic_edges,
        failed_cas_edges,
    }
}

#[test]
fn races_reports_every_racing_site_pair_of_random_programs_and_nothing_else() {
    let work = tempfile::tempdir().unwrap();
    let mut racing_pairs = 0;
    let mut seeds_with_races = 0;
    let (mut ordered, mut atomic_edges, mut failed_cas_edges) = (0, 0, 0);
    for seed in 0..SEEDS {
        let dir = record_seed(work.path(), seed);
        let found = oracle(&dir);
        ordered += found.ordered;
        atomic_edges += found.atomic_edges;
        failed_cas_edges += found.failed_cas_edges;
        let expected = found.races;
        let got = reported(work.path(), &dir);
        let missing: Vec<_> = expected
            .iter()
            .filter(|(k, _)| !got.contains_key(*k))
            .collect();
        let extra: Vec<_> = got
            .iter()
            .filter(|(k, _)| !expected.contains_key(*k))
            .collect();
        let miscounted: Vec<_> = expected
            .iter()
            .filter_map(|(k, n)| got.get(k).filter(|m| *m != n).map(|m| (k, n, m)))
            .collect();
        assert!(
            missing.is_empty() && extra.is_empty() && miscounted.is_empty(),
            "seed {seed}: missing {missing:?}\nextra {extra:?}\n\
             miscounted (pair, oracle, ppd) {miscounted:?}"
        );
        racing_pairs += expected.len();
        seeds_with_races += usize::from(!expected.is_empty());
    }
    let summary = format!(
        "{seeds_with_races} of {SEEDS} seeds raced, at {racing_pairs} site pairs in all; \
         {ordered} conflicting pairs were ordered, {atomic_edges} atomic edges drawn, \
         {failed_cas_edges} of them into failed compare-exchanges"
    );
    println!("{summary}");
    // The programs exercise both sides of the definition: most seeds race, and
    // synchronization (atomic edges among it) orders many conflicting pairs.
    assert!(
        seeds_with_races >= 30
            && racing_pairs >= 150
            && ordered >= 100
            && atomic_edges >= 40
            && failed_cas_edges >= 5,
        "{summary}"
    );
}
