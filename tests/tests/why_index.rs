//! The why index's change histories lead a query to the same earlier instance as reading the
//! logs of every earlier instance, latest first, does: for every top-level instance of a real
//! run and every part of its state a query can follow.

use ppd_flowback::why::index::{Instance, ProcessIndex};
use ppd_flowback::why::place::Place;
use ppd_formats::value::{self, Value};
use ppd_formats::{Event, Recording};
use ppd_tests::{example_bin, ppd};

/// A logged map, decoded as a query decodes it.
fn decoded(bytes: &[u8]) -> Vec<(String, Value)> {
    value::map_entries(bytes)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(name, bytes)| value::decode(&bytes).ok().map(|v| (name, v)))
        .collect()
}

struct Logged {
    instance: Instance,
    prelog: Vec<(String, Value)>,
    postlog: Vec<(String, Value)>,
}

/// Where the search for the source of `place` (with value `here` on entry) stops among
/// `earlier` (latest first): the first instance that logged the place on exit and either
/// left another value there or changed it itself.
fn first_source<'a>(
    earlier: impl Iterator<Item = &'a Logged>,
    place: &Place,
    here: &Value,
) -> Option<u64> {
    let whole = Place::variable(&place.root);
    for x in earlier {
        let Some((_, after)) = x.postlog.iter().find(|(n, _)| *n == place.root) else {
            continue;
        };
        if place.select(&whole, after) != Some(here) {
            return Some(x.instance.enter);
        }
        let before = x.prelog.iter().find(|(n, _)| *n == place.root);
        if before.and_then(|(_, v)| place.select(&whole, v)) != Some(here) {
            return Some(x.instance.enter);
        }
    }
    None
}

#[test]
fn the_index_finds_the_instance_that_left_a_value_as_reading_every_earlier_one_does() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let bank = example_bin("bank");
    let out = ppd(
        work.path(),
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "--",
            bank.to_str().unwrap(),
            "60",
        ],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recording = Recording::open(&dir).unwrap();
    let teller = recording.find_process("teller").unwrap();
    let index = ProcessIndex::build(&recording, teller.id).unwrap();
    let reader = recording.open_log(teller).unwrap();

    // Latest first.
    let mut tops: Vec<Logged> = Vec::new();
    for item in index.before(index.len()) {
        let (_, instance) = item.unwrap();
        if !instance.is_top_level() || instance.exit == u64::MAX {
            continue;
        }
        let Event::EblockEnter { prelog, .. } = reader.get(instance.enter).unwrap() else {
            panic!("an instance starts with its entry");
        };
        let Event::EblockExit { postlog, .. } = reader.get(instance.exit).unwrap() else {
            panic!("an instance ends with its exit");
        };
        tops.push(Logged {
            instance,
            prelog: decoded(&prelog),
            postlog: decoded(&postlog),
        });
    }
    assert!(tops.len() > 200, "{} top-level instances", tops.len());

    let places = [
        "bank",
        "bank.accounts",
        "bank.accounts[0].balance",
        "bank.accounts[1].balance",
        "bank.accounts[1]",
        "bank.accounts[i].balance",
        "bank.accounts[0].owner",
        "bank.went_negative",
        "bank.clients_left",
        "requests",
    ];
    let mut found = 0;
    for (i, inst) in tops.iter().enumerate() {
        for text in places {
            let place = Place::parse(text).unwrap();
            let whole = Place::variable(&place.root);
            let Some(here) = inst
                .prelog
                .iter()
                .find(|(n, _)| *n == place.root)
                .and_then(|(_, v)| place.select(&whole, v))
            else {
                continue;
            };
            let expected = first_source(
                tops[i + 1..]
                    .iter()
                    .filter(|x| x.instance.exit < inst.instance.enter),
                &place,
                here,
            );
            let sources: Vec<Instance> = index
                .state_sources(inst.instance.enter, &place)
                .map(Result::unwrap)
                .collect();
            let candidates: Vec<&Logged> = sources
                .iter()
                .map(|s| {
                    tops.iter()
                        .find(|x| x.instance.enter == s.enter)
                        .expect("a source is a top-level instance")
                })
                .collect();
            let got = first_source(candidates.into_iter(), &place, here);
            assert_eq!(
                got, expected,
                "{text} on entry to the instance at event {}",
                inst.instance.enter
            );
            found += usize::from(expected.is_some());
        }
    }
    assert!(
        found > 500,
        "only {found} sources found: the run is too short"
    );
}

/// Where an index's chunks start: after the 64-byte header and the tables whose length it gives
/// (`docs/format.md` §8.1).
fn chunks_start(index: &[u8]) -> usize {
    64 + u32::from_le_bytes(index[56..60].try_into().unwrap()) as usize
}

#[test]
fn a_damaged_or_truncated_index_is_rebuilt_and_the_answer_is_the_same() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let bank = example_bin("bank");
    let out = ppd(
        work.path(),
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "--",
            bank.to_str().unwrap(),
            "60",
        ],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = dir.to_str().unwrap();
    // The balance's chain reads the teller's instances and the histories of its changes.
    let why = ["why", rec, "teller", "balance", "--depth", "6"];
    let first = ppd(work.path(), &why);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let teller = Recording::open(&dir)
        .unwrap()
        .find_process("teller")
        .unwrap()
        .id;
    let path = dir.join(format!("cache/why/p{:04}.idx", teller.0));
    let built = std::fs::read(&path).unwrap();
    let start = chunks_start(&built);

    // Every chunk and the change histories with bytes flipped: damage the header and the
    // tables do not show, found only where a search reads it.
    let mut flipped = built.clone();
    for at in (start..flipped.len()).step_by(97) {
        flipped[at] ^= 0xff;
    }
    let damaged = [
        ("flipped", flipped),
        ("without its last bytes", built[..built.len() - 3].to_vec()),
        ("cut in its chunks", built[..start + 10].to_vec()),
        ("cut in its header", built[..40].to_vec()),
    ];
    for (how, bytes) in damaged {
        std::fs::write(&path, bytes).unwrap();
        let again = ppd(work.path(), &why);
        assert_eq!(
            again.status.code(),
            Some(0),
            "{how}: {}",
            String::from_utf8_lossy(&again.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&again.stdout),
            String::from_utf8_lossy(&first.stdout),
            "{how}"
        );
        assert!(
            std::fs::read(&path).unwrap() == built,
            "{how}: the index is rebuilt in its file"
        );
    }
}
