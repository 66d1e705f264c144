//! Damaged logs and recordings: truncated files, flipped bits, a wrong version or magic, missing
//! files, a broken manifest.
//!
//! Whatever the damage, the reader must not panic, must name the file and the byte offset, and
//! must still return every event before the damage, equal to what was written. The committed
//! corpus in `tests/corpus/` pins the exact error of each kind of damage; a sweep over every
//! k-th byte of the two base logs checks the rules above where nobody chose the damage.
//!
//! The corpus is made by `regenerate_corpus` (ignored: the files are committed). After
//! regenerating, refresh the expectations with `UPDATE_EXPECT=1 cargo test --test corruption`.

mod common;

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use expect_test::{Expect, expect};
use ppd_formats::manifest::{Program, RecordOptions};
use ppd_formats::recording::Recording;
use ppd_formats::{FORMAT_VERSION, FormatError, LogReader, LogState, LogWriter, Manifest};

use common::{check_event, event_at, identity, payload, small_blocks};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");

/// Events in each base log.
const EVENTS: u64 = 1200;
/// Ring of the base logs: two slots of 4 KiB (the smallest the format allows).
const RING_BLOCKS: u64 = 2;
const BLOCK_SIZE: u64 = 4096;

// Sizes from docs/format.md §3, so the tests find structures without the crate's help.
const HEADER_REGION: u64 = 4096;
const FRAMES_START: u64 = HEADER_REGION + RING_BLOCKS * BLOCK_SIZE;
const SLOT_HEADER: u64 = 64;
const FRAME_HEADER: u64 = 56;
const FOOTER: u64 = 36;

fn corpus(name: &str) -> PathBuf {
    Path::new(CORPUS).join(name)
}

fn u32_at(bytes: &[u8], at: u64) -> u64 {
    let at = at as usize;
    u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()))
}

fn u64_at(bytes: &[u8], at: u64) -> u64 {
    let at = at as usize;
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

// ---------------------------------------------------------------------------------------------
// The layout of an undamaged log, read by hand from the bytes (docs/format.md §3)

/// A compressed frame; `intact` is the number of events recorded entirely before it (one less
/// than its first event when it continues a record begun in an earlier block).
#[derive(Debug, Clone, Copy)]
struct Frame {
    offset: u64,
    end: u64,
    intact: u64,
}

/// A ring slot, with `intact` as for a frame.
#[derive(Debug, Clone, Copy)]
struct Slot {
    offset: u64,
    seq: u64,
    intact: u64,
    committed: u64,
}

/// Events before a block: its first event, less the record it continues, if any.
fn intact_before(first_event: u64, continuation: u64) -> u64 {
    first_event - u64::from(continuation > 0)
}

#[derive(Debug)]
struct Layout {
    len: u64,
    /// End of the archived file header.
    header_end: u64,
    frames: Vec<Frame>,
    frames_end: u64,
    /// Offset of the index, when the log was closed.
    index: Option<u64>,
    /// Ring slots holding blocks that are not in a frame yet.
    live_slots: Vec<Slot>,
}

impl Layout {
    fn of(bytes: &[u8]) -> Layout {
        let len = bytes.len() as u64;
        let header_end = 20 + u32_at(bytes, 12);
        let footer = len - FOOTER;
        let index = (&bytes[footer as usize..footer as usize + 4] == b"PEND")
            .then(|| u64_at(bytes, footer + 4));
        let mut frames = Vec::new();
        let mut offset = FRAMES_START;
        while offset + FRAME_HEADER <= index.unwrap_or(len) {
            assert_eq!(&bytes[offset as usize..offset as usize + 4], b"PFRM");
            let end = offset + FRAME_HEADER + u32_at(bytes, offset + 28);
            frames.push(Frame {
                offset,
                end,
                intact: intact_before(u64_at(bytes, offset + 12), u32_at(bytes, offset + 32)),
            });
            offset = end;
        }
        let live_slots = (0..RING_BLOCKS)
            .map(|s| {
                let offset = HEADER_REGION + s * BLOCK_SIZE;
                Slot {
                    offset,
                    seq: u64_at(bytes, offset + 12),
                    intact: intact_before(u64_at(bytes, offset + 20), u32_at(bytes, offset + 28)),
                    committed: u64_at(bytes, offset) & 0xffff_ffff,
                }
            })
            .filter(|s| {
                &bytes[s.offset as usize + 8..s.offset as usize + 12] == b"PBLK"
                    && s.seq >= frames.len() as u64
            })
            .collect();
        Layout {
            len,
            header_end,
            frames,
            frames_end: offset,
            index,
            live_slots,
        }
    }

    fn frame_at(&self, offset: u64) -> Option<&Frame> {
        self.frames
            .iter()
            .find(|f| f.offset <= offset && offset < f.end)
    }

    fn slot_at(&self, offset: u64) -> Option<&Slot> {
        self.live_slots
            .iter()
            .find(|s| s.offset <= offset && offset < s.offset + BLOCK_SIZE)
    }

    /// How many events must stay readable when the byte at `offset` is damaged; `None` when
    /// the log cannot be opened at all.
    fn intact_after_flip(&self, offset: u64) -> Option<u64> {
        if offset < self.header_end {
            return None;
        }
        if let Some(frame) = self.frame_at(offset) {
            return Some(frame.intact);
        }
        match self.slot_at(offset) {
            Some(slot) if offset < slot.offset + SLOT_HEADER + slot.committed => Some(slot.intact),
            // Header padding, unused ring space, index, footer: the events are all elsewhere.
            _ => Some(EVENTS),
        }
    }

    /// Whether a flipped bit at `offset` may change an event without anybody noticing: the
    /// data of a block still in the ring carries no checksum (only its commit word says how
    /// much of it is complete), so there a flip can only be caught when it breaks the encoding.
    fn unchecked(&self, offset: u64) -> bool {
        self.slot_at(offset).is_some_and(|s| {
            offset >= s.offset + SLOT_HEADER && offset < s.offset + SLOT_HEADER + s.committed
        })
    }

    /// How many events must stay readable when the file is cut to `len` bytes.
    fn intact_after_truncation(&self, len: u64) -> Option<u64> {
        if len < self.header_end {
            return None;
        }
        if len < FRAMES_START {
            return Some(0);
        }
        if len >= self.frames_end {
            return Some(EVENTS);
        }
        Some(
            self.frames
                .iter()
                .find(|f| len < f.end)
                .map_or(EVENTS, |f| f.intact),
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Reading a damaged log and describing what came out

/// What a reader made of a log.
#[derive(Debug, Default)]
struct Outcome {
    open_error: Option<String>,
    state: Option<LogState>,
    event_count: u64,
    damage: Vec<String>,
    /// Events read in order before the first error.
    read: u64,
    read_error: Option<String>,
    /// Whether the last event could be read by seeking to it.
    last_readable: bool,
    /// Events read in order or by seeking that differ from what was written: index, how.
    wrong: Vec<(u64, String)>,
    /// Every error message, for the checks that they name file and offset.
    errors: Vec<(String, bool)>,
}

impl Outcome {
    fn reported_error(&self) -> bool {
        self.open_error.is_some() || !self.damage.is_empty() || self.read_error.is_some()
    }
}

/// `Variant: message`, with the directory of the file left out.
fn describe(e: &FormatError, dir: &Path) -> String {
    let debug = format!("{e:?}");
    let variant = debug.split([' ', '{', '(']).next().unwrap_or_default();
    let message = e.to_string().replace(&format!("{}/", dir.display()), "");
    format!("{variant}: {message}")
}

/// Whether an error is one that has no byte offset to name.
fn has_no_offset(e: &FormatError) -> bool {
    matches!(
        e,
        FormatError::UnsupportedVersion { .. }
            | FormatError::Missing { .. }
            | FormatError::EventOutOfRange { .. }
            | FormatError::NotAFile { .. }
            | FormatError::Foreign { .. }
    )
}

/// Opens the log at `path`, reads it in order, seeks to a few events, counts kinds. Never
/// asserts: the callers decide what the outcome must be.
fn examine(path: &Path) -> Outcome {
    let dir = path.parent().unwrap();
    let mut out = Outcome::default();
    let note = |out: &mut Outcome, e: &FormatError| {
        let text = describe(e, dir);
        out.errors.push((text.clone(), has_no_offset(e)));
        text
    };
    let reader = match LogReader::open(path) {
        Ok(r) => r,
        Err(e) => {
            out.open_error = Some(note(&mut out, &e));
            return out;
        }
    };
    out.state = Some(reader.state());
    out.event_count = reader.event_count();
    for e in reader.damage() {
        let text = note(&mut out, e);
        out.damage.push(text);
    }
    for item in reader.events() {
        match item {
            Ok((i, e)) => {
                if i != out.read {
                    let how = format!("event {} came as number {i}", out.read);
                    out.wrong.push((out.read, how));
                }
                if let Err(diff) = check_event(i, &e) {
                    out.wrong.push((i, diff));
                }
                out.read += 1;
            }
            Err(e) => {
                out.read_error = Some(note(&mut out, &e));
                break;
            }
        }
    }
    let n = reader.event_count();
    for k in [
        0,
        1,
        n / 3,
        n / 2,
        n.saturating_sub(2),
        n.saturating_sub(1),
        n,
        n + 5,
    ] {
        match reader.get(k) {
            Ok(e) => {
                out.last_readable |= k + 1 == n;
                if let Err(diff) = check_event(k, &e) {
                    out.wrong.push((k, format!("get: {diff}")));
                }
            }
            Err(e) => {
                note(&mut out, &e);
            }
        }
        if let Ok(mut events) = reader.events_from(k) {
            match events.next() {
                Some(Ok((i, _))) if i != k => {
                    out.wrong
                        .push((k, format!("events_from({k}) started at {i}")));
                }
                Some(Err(e)) => {
                    note(&mut out, &e);
                }
                _ => {}
            }
        }
    }
    if let Err(e) = reader.kind_counts() {
        note(&mut out, &e);
    }
    let _ = reader.block_times();
    out
}

/// The report pinned by a corpus expectation.
fn report(out: &Outcome) -> String {
    if let Some(e) = &out.open_error {
        return format!("open: {e}\n");
    }
    let mut s = format!(
        "{:?}, {} events\n",
        out.state.expect("opened"),
        out.event_count
    );
    for d in &out.damage {
        s += &format!("damage: {d}\n");
    }
    s += &format!("read {} events", out.read);
    match &out.read_error {
        Some(e) => s += &format!(", then {e}\n"),
        None => s += "\n",
    }
    if out.event_count > out.read {
        let how = if out.last_readable { "" } else { "not " };
        s += &format!("the last event is {how}readable by seeking\n");
    }
    s
}

/// Checks the rules every damaged log must follow: no wrong event, every event before the
/// damage readable, every error naming the file and (where it has one) the byte offset.
fn check_rules(name: &str, out: &Outcome, intact: Option<u64>) -> Result<(), String> {
    if !out.wrong.is_empty() {
        return Err(format!("{name}: wrong events: {:#?}", out.wrong));
    }
    for (e, no_offset) in &out.errors {
        if !e.contains(name) {
            return Err(format!("{name}: error does not name the file: {e}"));
        }
        if !no_offset && !e.contains("byte offset") {
            return Err(format!("{name}: error does not name the byte offset: {e}"));
        }
    }
    match intact {
        None if out.open_error.is_none() => {
            Err(format!("{name}: opened a log with a damaged header"))
        }
        Some(_) if out.open_error.is_some() => Err(format!(
            "{name}: {:?} although the header is intact",
            out.open_error
        )),
        Some(n) if out.read < n => Err(format!(
            "{name}: read {} events, but the first {n} are undamaged: {out:#?}",
            out.read
        )),
        _ => Ok(()),
    }
}

/// Like [`check_rules`], and a log that reports no damage must give back every event.
fn check_sweep_rules(name: &str, out: &Outcome, intact: Option<u64>) -> Result<(), String> {
    check_rules(name, out, intact)?;
    if !out.reported_error() && (out.event_count, out.read) != (EVENTS, EVENTS) {
        return Err(format!(
            "{name}: {} of {EVENTS} events readable, {} read, and no error",
            out.event_count, out.read
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The committed corpus

/// The damage of a corpus file: the first byte where it differs from its base log, or its
/// length when it is a prefix of it.
fn damage_offset(base: &[u8], damaged: &[u8]) -> (u64, bool) {
    match base.iter().zip(damaged).position(|(a, b)| a != b) {
        Some(at) => (at as u64, false),
        None => {
            assert!(damaged.len() < base.len(), "not damaged");
            (damaged.len() as u64, true)
        }
    }
}

/// Checks corpus log `name` (`<base>.<damage>.log`) against the rules and its expectation.
fn check_corpus(name: &str, expected: Expect) {
    let base_name = format!("{}.log", name.split('.').next().unwrap());
    let base = fs::read(corpus(&base_name)).unwrap();
    let damaged = fs::read(corpus(name)).unwrap();
    let layout = Layout::of(&base);
    let (offset, truncated) = damage_offset(&base, &damaged);
    let intact = if truncated {
        layout.intact_after_truncation(offset)
    } else {
        layout.intact_after_flip(offset)
    };
    let mut out = examine(&corpus(name));
    if !truncated && layout.unchecked(offset) {
        // Ring data not yet in a frame carries no checksum (format §5): a flip there is caught
        // only when it breaks the encoding, and may instead decode as another valid record.
        // What it did is pinned below; the events before the flipped block must be right.
        let silent = std::mem::take(&mut out.wrong);
        let (after, before): (Vec<_>, Vec<_>) =
            silent.into_iter().partition(|(i, _)| Some(*i) >= intact);
        out.wrong = before;
        check_rules(name, &out, intact).unwrap();
        let mut pinned = report(&out);
        for (_, what) in after {
            pinned += &format!("undetected (unchecked ring data): {what}\n");
        }
        expected.assert_eq(&pinned);
        return;
    }
    check_rules(name, &out, intact).unwrap();
    assert!(out.reported_error(), "{name}: damage went unreported");
    expected.assert_eq(&report(&out));
}

#[test]
fn the_base_logs_read_back_whole() {
    for (name, state) in [
        ("complete.log", LogState::Complete),
        ("crashed.log", LogState::Recovered),
    ] {
        let out = examine(&corpus(name));
        check_rules(name, &out, Some(EVENTS)).unwrap();
        assert_eq!(out.state, Some(state), "{name}");
        assert!(!out.reported_error(), "{name}: {out:#?}");
        assert_eq!((out.event_count, out.read), (EVENTS, EVENTS), "{name}");
    }
    // The crashed log really needs its ring: the last two blocks are in no frame.
    let crashed = Layout::of(&fs::read(corpus("crashed.log")).unwrap());
    assert_eq!(crashed.live_slots.len(), 2, "{crashed:?}");
    assert!(crashed.index.is_none());
}

#[test]
fn truncated_logs() {
    check_corpus(
        "complete.trunc-prologue.log",
        expect![[r#"
            open: Truncated: complete.trunc-prologue.log: truncated log header: needed 20 bytes at byte offset 0, file has 10
        "#]],
    );
    check_corpus(
        "complete.trunc-header.log",
        expect![[r#"
        open: Truncated: complete.trunc-header.log: truncated log header: needed 37 bytes at byte offset 20, file has 40
    "#]],
    );
    check_corpus(
        "complete.trunc-ring.log",
        expect![[r#"
        Recovered, 0 events
        damage: Truncated: complete.trunc-ring.log: truncated log ring: needed 8192 bytes at byte offset 4096, file has 4196
        damage: Corrupt: complete.trunc-ring.log: corrupt log footer at byte offset 4196: missing, and the ring holds no block as only a closed log's does
        read 0 events
    "#]],
    );
    check_corpus(
        "complete.trunc-frame-header.log",
        expect![[r#"
            Recovered, 250 events
            damage: Truncated: complete.trunc-frame-header.log: truncated frame header: needed 56 bytes at byte offset 13620, file has 13640
            read 250 events
        "#]],
    );
    check_corpus(
        "complete.trunc-frame-payload.log",
        expect![[r#"
            Recovered, 250 events
            damage: Truncated: complete.trunc-frame-payload.log: truncated frame: needed 1279 bytes at byte offset 13620, file has 14287
            read 250 events
        "#]],
    );
    check_corpus(
        "complete.trunc-index.log",
        expect![[r#"
            Recovered, 1200 events
            damage: Corrupt: complete.trunc-index.log: corrupt log index at byte offset 18267: the frames end here and what follows is no frame: the log's index or footer is cut or damaged
            read 1200 events
        "#]],
    );
    check_corpus(
        "complete.trunc-footer.log",
        expect![[r#"
            Recovered, 1200 events
            damage: Corrupt: complete.trunc-footer.log: corrupt log index at byte offset 18267: the frames end here and what follows is no frame: the log's index or footer is cut or damaged
            read 1200 events
        "#]],
    );
    check_corpus(
        "crashed.trunc-ring.log",
        expect![[r#"
            Recovered, 0 events
            damage: Truncated: crashed.trunc-ring.log: truncated log ring: needed 8192 bytes at byte offset 4096, file has 4396
            damage: Corrupt: crashed.trunc-ring.log: corrupt ring block header at byte offset 4104: block 6 (first event 1017) where block 0 (first event 0) was expected
            read 0 events
        "#]],
    );
    check_corpus(
        "crashed.trunc-frame.log",
        expect![[r#"
            Recovered, 250 events
            damage: Truncated: crashed.trunc-frame.log: truncated frame: needed 1279 bytes at byte offset 13620, file has 13720
            read 250 events
        "#]],
    );
}

#[test]
fn logs_with_a_flipped_bit() {
    check_corpus(
        "complete.flip-header.log",
        expect![[r#"
        open: Checksum: complete.flip-header.log: checksum mismatch in log header at byte offset 20
    "#]],
    );
    check_corpus(
        "complete.flip-frame-header.log",
        expect![[r#"
            Complete, 1200 events
            read 250 events, then Checksum: complete.flip-frame-header.log: checksum mismatch in frame header at byte offset 13620
            the last event is readable by seeking
        "#]],
    );
    check_corpus(
        "complete.flip-frame-payload.log",
        expect![[r#"
            Complete, 1200 events
            read 250 events, then Checksum: complete.flip-frame-payload.log: checksum mismatch in frame payload at byte offset 13676
            the last event is readable by seeking
        "#]],
    );
    check_corpus(
        "complete.flip-index.log",
        expect![[r#"
            Recovered, 1200 events
            damage: Checksum: complete.flip-index.log: checksum mismatch in log index at byte offset 18267
            read 1200 events
        "#]],
    );
    check_corpus(
        "complete.flip-footer.log",
        expect![[r#"
            Recovered, 1200 events
            damage: Checksum: complete.flip-footer.log: checksum mismatch in log footer at byte offset 18783
            read 1200 events
        "#]],
    );
    check_corpus(
        "crashed.flip-ring-info.log",
        expect![[r#"
            Recovered, 1017 events
            damage: Checksum: crashed.flip-ring-info.log: checksum mismatch in ring block header at byte offset 4104
            read 1017 events
        "#]],
    );
    check_corpus(
        "crashed.flip-ring-commit.log",
        expect![[r#"
            Recovered, 1198 events
            damage: Record: crashed.flip-ring-commit.log: corrupt event record in block 6 (block at byte offset 4096, byte 1394 of the block's data): the block holds more events than the 181 its header counts
            read 1198 events
        "#]],
    );
    check_corpus(
        "crashed.flip-ring-data.log",
        expect![[r#"
            Recovered, 1017 events
            damage: Record: crashed.flip-ring-data.log: corrupt event record in block 6 (block at byte offset 4096, byte 0 of the block's data): object 27 is not defined in this block
            read 1017 events
        "#]],
    );
    check_corpus(
        "crashed.flip-frame-header.log",
        expect![[r#"
            Recovered, 250 events
            damage: Checksum: crashed.flip-frame-header.log: checksum mismatch in frame header at byte offset 13249
            read 250 events
        "#]],
    );
    check_corpus(
        "crashed.flip-frame-payload.log",
        expect![[r#"
            Recovered, 1200 events
            read 250 events, then Checksum: crashed.flip-frame-payload.log: checksum mismatch in frame payload at byte offset 13305
            the last event is readable by seeking
        "#]],
    );
}

#[test]
fn wrong_version_wrong_magic_and_missing_files() {
    check_corpus(
        "complete.next-version.log",
        expect![[r#"
            open: UnsupportedVersion: complete.next-version.log: format version 6 is not supported (this build reads versions 2 to 5)
        "#]],
    );
    check_corpus(
        "complete.bad-magic.log",
        expect![[r#"
        open: BadMagic: complete.bad-magic.log: not a ppd log (bad magic at byte offset 0)
    "#]],
    );
    let out = examine(&corpus("no-such.log"));
    check_rules("no-such.log", &out, None).unwrap();
    expect![[r#"
        open: Missing: no-such.log: missing (open log)
    "#]]
    .assert_eq(&report(&out));
}

#[test]
fn a_frame_torn_by_the_crash_loses_nothing() {
    // The compressor died while appending the last frame: its block is still in the ring.
    let out = examine(&corpus("crashed.torn-frame.log"));
    check_rules("crashed.torn-frame.log", &out, Some(EVENTS)).unwrap();
    assert!(!out.reported_error(), "{out:#?}");
    expect![[r#"
        Recovered, 1200 events
        read 1200 events
    "#]]
    .assert_eq(&report(&out));
}

/// Found by fuzzing, with the checksums recomputed after the damage so that they cannot see it:
/// the first frame decodes to one event more than its header counts. The reader used to number
/// the extra event as the first of the next block, disagreeing with seeking (which numbers
/// events from the block headers), and in the second file it did so without any error because
/// the log's event count ended the scan before the end of the block. Now the event one past the
/// header's count is an error.
#[test]
fn a_block_with_more_events_than_its_header_counts_is_reported() {
    let check = |name: &str, expected: Expect| {
        let out = examine(&corpus(name));
        assert!(out.read_error.is_some(), "{name}: {out:#?}");
        // The block's events are forged, so their values may differ from what was written,
        // but the scan and seeking must agree on how they are numbered.
        assert!(
            !out.wrong
                .iter()
                .any(|(_, how)| how.starts_with("events_from")),
            "{name}: {:#?}",
            out.wrong
        );
        for (e, no_offset) in &out.errors {
            assert!(
                e.contains(name) && (*no_offset || e.contains("byte offset")),
                "{e}"
            );
        }
        expected.assert_eq(&report(&out));
    };
    check(
        "fuzz-forged-block.log",
        expect![[r#"
            Recovered, 751 events
            damage: Corrupt: fuzz-forged-block.log: corrupt log footer at byte offset 17524: offsets do not add up
            damage: Corrupt: fuzz-forged-block.log: corrupt frame payload at byte offset 16227: zstd: Data corruption detected
            read 250 events, then Record: fuzz-forged-block.log: corrupt event record in block 0 (block at byte offset 12288, byte 1817 of the block's data): the block holds more events than the 250 its header counts
            the last event is not readable by seeking
        "#]],
    );
    check(
        "fuzz-forged-block-2.log",
        expect![[r#"
            Recovered, 251 events
            damage: Corrupt: fuzz-forged-block-2.log: corrupt log footer at byte offset 17529: offsets do not add up
            damage: Corrupt: fuzz-forged-block-2.log: corrupt frame payload at byte offset 13668: zstd: Data corruption detected
            read 250 events, then Record: fuzz-forged-block-2.log: corrupt event record in block 0 (block at byte offset 12288, byte 1817 of the block's data): the block holds more events than the 250 its header counts
            the last event is not readable by seeking
        "#]],
    );
}

#[test]
fn recordings_with_a_damaged_manifest() {
    let describe_dir = |name: &str| -> String {
        let dir = corpus(name);
        match Recording::open(&dir) {
            Err(e) => format!("open: {}\n", describe(&e, Path::new(CORPUS))),
            Ok(rec) => {
                let mut s = String::new();
                for p in rec.processes() {
                    match rec.open_log(p) {
                        Ok(r) => s += &format!("{}: {} events\n", p.log, r.event_count()),
                        Err(e) => s += &format!("{}: {}\n", p.log, describe(&e, Path::new(CORPUS))),
                    }
                }
                s
            }
        }
    };
    expect![[r#"
        open: Manifest: manifest-truncated/manifest.json: invalid manifest: EOF while parsing a string at line 16 column 7
    "#]].assert_eq(&describe_dir("manifest-truncated"));
    expect![[r#"
        open: UnsupportedVersion: manifest-next-version/manifest.json: format version 6 is not supported (this build reads versions 2 to 5)
    "#]].assert_eq(&describe_dir("manifest-next-version"));
    expect![[r#"
        proc-0000.log: 1200 events
        proc-0001.log: Missing: manifest-missing-log/proc-0001.log: missing (open log)
    "#]]
    .assert_eq(&describe_dir("manifest-missing-log"));
    expect![[r#"
        open: NotARecording: no-manifest: not a ppd recording (no manifest.json)
    "#]]
    .assert_eq(&describe_dir("no-manifest"));
}

/// A recording of two processes in a fresh directory, made of the committed complete log
/// (process 2, "teller") and a log written here for process 3 ("clerk"), with a manifest that
/// names both. Each case below damages one thing and pins what the integrity check says.
fn two_process_recording() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut manifest = sample_manifest(&["proc-0002.log", "proc-0003.log"]);
    manifest.processes[1].name = "clerk".into();
    manifest.write(dir.path(), false).unwrap();
    fs::copy(corpus("complete.log"), dir.path().join("proc-0002.log")).unwrap();
    let clerk = ppd_formats::LogIdentity {
        process_id: ppd_formats::ProcessId(3),
        name: "clerk".into(),
        ..identity()
    };
    let mut w =
        LogWriter::create(&dir.path().join("proc-0003.log"), &clerk, small_blocks(2)).unwrap();
    for i in 0..10 {
        w.append(&event_at(i, &payload(i))).unwrap();
    }
    w.close().unwrap();
    dir
}

/// What `integrity::check` finds, one line per finding, with the directory left out; or the
/// error that stops the recording from opening.
fn check_recording(dir: &Path) -> String {
    let rec = match Recording::open(dir) {
        Ok(rec) => rec,
        Err(e) => {
            let text = describe(&e, dir).replace(&dir.display().to_string(), "REC");
            return format!("open: {text}\n");
        }
    };
    let found = ppd_formats::integrity::check(&rec);
    let strip = |s: String| s.replace(&format!("{}/", dir.display()), "");
    let mut out = String::new();
    for d in &found.damage {
        out += &format!("damage: {}\n", strip(d.to_string()));
    }
    for d in &found.ends_early {
        out += &format!("ends early: {}\n", strip(d.to_string()));
    }
    if out.is_empty() {
        out = "sound\n".into();
    }
    out
}

#[test]
fn missing_swapped_foreign_and_duplicated_logs_are_damage() {
    let case = |edit: &dyn Fn(&Path)| {
        let rec = two_process_recording();
        edit(rec.path());
        check_recording(rec.path())
    };
    expect![[r#"
        sound
    "#]]
    .assert_eq(&case(&|_| {}));
    // Only the manifest is left.
    expect![[r#"
        damage: teller (p2): proc-0002.log: missing (open log)
        damage: clerk (p3): proc-0003.log: missing (open log)
    "#]]
    .assert_eq(&case(&|d| {
        fs::remove_file(d.join("proc-0002.log")).unwrap();
        fs::remove_file(d.join("proc-0003.log")).unwrap();
    }));
    expect![[r#"
        damage: clerk (p3): proc-0003.log: truncated log header: needed 20 bytes at byte offset 0, file has 0
    "#]]
    .assert_eq(&case(&|d| fs::write(d.join("proc-0003.log"), b"").unwrap()));
    expect![[r#"
        damage: teller (p2): proc-0002.log: the log's header is process p3 "clerk" (parent p0), the manifest expects process p2 "teller" (parent p0) here: logs swapped or copied in
        damage: clerk (p3): proc-0003.log: the log's header is process p2 "teller" (parent p0), the manifest expects process p3 "clerk" (parent p0) here: logs swapped or copied in
    "#]]
    .assert_eq(&case(&|d| {
        fs::rename(d.join("proc-0002.log"), d.join("x")).unwrap();
        fs::rename(d.join("proc-0003.log"), d.join("proc-0002.log")).unwrap();
        fs::rename(d.join("x"), d.join("proc-0003.log")).unwrap();
    }));
    // The same process of another run: another OS process, created before this run started.
    let foreign = case(&|d| {
        let mut m = Manifest::read(d).unwrap();
        m.start_unix_ns = u64::MAX / 2;
        m.write(d, false).unwrap();
    });
    assert_eq!(foreign.lines().count(), 2, "{foreign}");
    assert!(
        foreign
            .lines()
            .all(|l| l.contains("a log from another run")),
        "{foreign}"
    );
    let other_os_process = case(&|d| {
        let mut m = Manifest::read(d).unwrap();
        m.processes[1].os_pid = 1;
        m.write(d, false).unwrap();
    });
    assert!(
        other_os_process.starts_with(
            "damage: clerk (p3): proc-0003.log: the log was written by OS process 4242 at "
        ) && other_os_process
            .contains("not by this run (OS process 1, started 2023-11-14T22:13:20Z)"),
        "{other_os_process}"
    );
    expect![[r#"
        open: NotARecording: REC: not a ppd recording (the manifest lists process p2 twice (logs proc-0002.log and proc-0003.log))
    "#]]
    .assert_eq(&case(&|d| {
        let mut m = Manifest::read(d).unwrap();
        m.processes[1].id = ppd_formats::ProcessId(2);
        m.write(d, false).unwrap();
    }));
    // A payload that fails its checksum inside a log whose index and footer are intact: opening
    // does not read payloads, the check does.
    expect![[r#"
        damage: teller (p2): proc-0002.log: checksum mismatch in frame payload at byte offset 13676
    "#]]
    .assert_eq(&case(&|d| {
        fs::copy(
            corpus("complete.flip-frame-payload.log"),
            d.join("proc-0002.log"),
        )
        .unwrap();
    }));
    expect![[r#"
        damage: clerk (p3): proc-0003.log: is a directory, not a regular file
    "#]]
    .assert_eq(&case(&|d| {
        fs::remove_file(d.join("proc-0003.log")).unwrap();
        fs::create_dir(d.join("proc-0003.log")).unwrap();
    }));
}

/// A FIFO in place of a log or manifest is refused at once; reading it would wait for a writer
/// that never comes.
#[test]
fn a_fifo_in_place_of_a_log_or_manifest_is_refused_without_waiting() {
    let rec = two_process_recording();
    let log = rec.path().join("proc-0003.log");
    fs::remove_file(&log).unwrap();
    nix::unistd::mkfifo(&log, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    expect![[r#"
        damage: clerk (p3): proc-0003.log: is a FIFO, not a regular file
    "#]]
    .assert_eq(&check_recording(rec.path()));
    let manifest = rec.path().join("manifest.json");
    fs::remove_file(&manifest).unwrap();
    nix::unistd::mkfifo(&manifest, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let err = Recording::open(rec.path()).unwrap_err();
    expect![[r#"
        NotAFile: manifest.json: is a FIFO, not a regular file
    "#]]
    .assert_eq(&format!("{}\n", describe(&err, rec.path())));
}

// ---------------------------------------------------------------------------------------------
// The sweep

/// Runs `check` on every variant, in parallel, and collects the failures (a panic of the
/// reader included) with the variant that caused them.
fn sweep(
    variants: Vec<(String, Vec<u8>)>,
    check: impl Fn(&str, &Path) -> Result<(), String> + Sync,
) {
    let dir = tempfile::tempdir().unwrap();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = variants
            .chunks(variants.len().div_ceil(workers))
            .map(|chunk| {
                let (dir, check) = (dir.path(), &check);
                s.spawn(move || {
                    let mut failures = Vec::new();
                    for (name, bytes) in chunk {
                        let path = dir.join(name);
                        fs::write(&path, bytes).unwrap();
                        match catch_unwind(AssertUnwindSafe(|| check(name, &path))) {
                            Ok(Ok(())) => {}
                            Ok(Err(failure)) => failures.push(failure),
                            Err(_) => failures.push(format!("{name}: the reader panicked")),
                        }
                        fs::remove_file(&path).unwrap();
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The offset or length in a variant's name, `<base>-<how>-<number>.log`.
fn variant_number(name: &str) -> u64 {
    let last = name.rsplit('-').next().unwrap();
    last.trim_end_matches(".log").parse().unwrap()
}

#[test]
fn every_flipped_bit_is_read_correctly_or_reported() {
    for base_name in ["complete", "crashed"] {
        let base = fs::read(corpus(&format!("{base_name}.log"))).unwrap();
        let layout = Layout::of(&base);
        let variants = (0..base.len())
            .step_by(13)
            .map(|at| {
                let mut bytes = base.clone();
                bytes[at] ^= 1 << (at % 8);
                (format!("{base_name}-flip-{at}.log"), bytes)
            })
            .collect();
        sweep(variants, |name, path| {
            let at = variant_number(name);
            let out = examine(path);
            if layout.unchecked(at) {
                // Only the events before the flipped block are known to be right.
                let intact = layout.intact_after_flip(at);
                let mut out = out;
                out.wrong.retain(|(i, _)| Some(*i) < intact);
                return check_rules(name, &out, intact);
            }
            check_sweep_rules(name, &out, layout.intact_after_flip(at))
        });
    }
}

#[test]
fn every_truncation_is_read_correctly_or_reported() {
    for base_name in ["complete", "crashed"] {
        let base = fs::read(corpus(&format!("{base_name}.log"))).unwrap();
        let layout = Layout::of(&base);
        let mut lengths: Vec<usize> = (0..base.len()).step_by(11).collect();
        // Every cut at or next to a structure's boundary.
        let mut edges = vec![layout.header_end, FRAMES_START, layout.frames_end];
        edges.extend(
            layout
                .frames
                .iter()
                .flat_map(|f| [f.offset, f.offset + FRAME_HEADER]),
        );
        edges.extend(layout.index);
        edges.push(layout.len - FOOTER);
        for e in edges {
            lengths.extend([e as usize - 1, e as usize, e as usize + 1]);
        }
        lengths.retain(|&l| l < base.len());
        lengths.sort_unstable();
        lengths.dedup();
        let variants = lengths
            .into_iter()
            .map(|len| (format!("{base_name}-cut-{len}.log"), base[..len].to_vec()))
            .collect();
        sweep(variants, |name, path| {
            let len = variant_number(name);
            check_sweep_rules(name, &examine(path), layout.intact_after_truncation(len))
        });
    }
}

// ---------------------------------------------------------------------------------------------
// The corpus generator

fn write_base(path: &Path) -> LogWriter {
    let mut w = LogWriter::create(path, &identity(), small_blocks(RING_BLOCKS as u32)).unwrap();
    for i in 0..EVENTS {
        let bytes = payload(i);
        w.append(&event_at(i, &bytes)).unwrap();
    }
    w
}

fn flip(bytes: &[u8], at: u64, bit: u8) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at as usize] ^= 1 << bit;
    out
}

fn cut(bytes: &[u8], len: u64) -> Vec<u8> {
    bytes[..len as usize].to_vec()
}

fn sample_manifest(logs: &[&str]) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        program: Program {
            path: "/usr/local/bin/bank".into(),
            size: 1,
            blake3: "00".into(),
        },
        argv: vec!["bank".into()],
        cwd: "/".into(),
        host: "host".into(),
        node: None,
        run: None,
        os_pid: 4242,
        start_unix_ns: 1_700_000_000_000_000_000,
        start_time: Manifest::rfc3339(1_700_000_000_000_000_000),
        options: RecordOptions {
            payloads: true,
            fsync: false,
            block_size: BLOCK_SIZE as u32,
            ring_blocks: RING_BLOCKS as u32,
        },
        processes: logs
            .iter()
            .enumerate()
            .map(|(i, log)| ppd_formats::manifest::ProcessEntry {
                // The first entry is the base logs' own process (`common::identity`).
                id: ppd_formats::ProcessId(2 + i as u32),
                name: if i == 0 {
                    "teller".into()
                } else {
                    format!("p{}", 2 + i)
                },
                parent: Some(ppd_formats::ProcessId(0)),
                host: "host".into(),
                os_pid: 4242,
                log: (*log).to_owned(),
                node: 0,
            })
            .collect(),
        end: None,
        stopped: None,
    }
}

/// Writes the corpus: two base logs, damaged copies of them, and damaged recordings.
#[test]
#[ignore = "the corpus is committed; run to regenerate it"]
fn regenerate_corpus() {
    // Files are overwritten, not removed first: the corpus also holds inputs found by fuzzing.
    fs::create_dir_all(CORPUS).unwrap();
    let scratch = tempfile::tempdir().unwrap();

    // A log closed cleanly.
    let closed = scratch.path().join("closed.log");
    write_base(&closed).close().unwrap();
    let complete = fs::read(&closed).unwrap();
    fs::write(corpus("complete.log"), &complete).unwrap();

    // A log whose writer died: copy the file while the writer is alive, once the compressor
    // has caught up, and drop the last frame so that the last two blocks live only in the ring.
    let live = scratch.path().join("live.log");
    let writer = write_base(&live);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let snapshot = fs::read(&live).unwrap();
    drop(writer);
    let snap = Layout::of(&snapshot);
    let last = snap.frames.last().unwrap();
    let crashed = cut(&snapshot, last.offset);
    fs::write(corpus("crashed.log"), &crashed).unwrap();
    let torn = cut(&snapshot, last.offset + FRAME_HEADER + 10);

    let c = Layout::of(&complete);
    let r = Layout::of(&crashed);
    assert!(c.frames.len() >= 5 && r.frames.len() >= 4, "{c:?} {r:?}");
    let index = c.index.unwrap();
    let footer = c.len - FOOTER;
    let f2 = c.frames[2];
    let (ring0, ring1) = (r.live_slots[0], r.live_slots[1]);
    let later = if ring0.seq > ring1.seq { ring0 } else { ring1 };
    let mut next_version = complete.clone();
    next_version[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let mut bad_magic = complete.clone();
    bad_magic[..8].copy_from_slice(b"PPDLOG\n\n");

    let files: Vec<(&str, Vec<u8>)> = vec![
        ("crashed.torn-frame.log", torn),
        ("complete.trunc-prologue.log", cut(&complete, 10)),
        ("complete.trunc-header.log", cut(&complete, 40)),
        (
            "complete.trunc-ring.log",
            cut(&complete, HEADER_REGION + 100),
        ),
        (
            "complete.trunc-frame-header.log",
            cut(&complete, f2.offset + 20),
        ),
        (
            "complete.trunc-frame-payload.log",
            cut(&complete, (f2.offset + FRAME_HEADER + f2.end) / 2),
        ),
        ("complete.trunc-index.log", cut(&complete, index + 10)),
        ("complete.trunc-footer.log", cut(&complete, footer + 10)),
        ("crashed.trunc-ring.log", cut(&crashed, later.offset + 300)),
        (
            "crashed.trunc-frame.log",
            cut(&crashed, r.frames[2].offset + 100),
        ),
        ("complete.flip-header.log", flip(&complete, 30, 2)),
        (
            "complete.flip-frame-header.log",
            flip(&complete, f2.offset + 14, 0),
        ),
        (
            "complete.flip-frame-payload.log",
            flip(&complete, f2.offset + FRAME_HEADER + 40, 5),
        ),
        ("complete.flip-index.log", flip(&complete, index + 3, 1)),
        ("complete.flip-footer.log", flip(&complete, footer + 6, 3)),
        (
            "crashed.flip-ring-info.log",
            flip(&crashed, later.offset + 20, 0),
        ),
        (
            "crashed.flip-ring-commit.log",
            flip(&crashed, later.offset + 4, 1),
        ),
        (
            "crashed.flip-ring-data.log",
            flip(&crashed, later.offset + SLOT_HEADER, 3),
        ),
        (
            "crashed.flip-frame-header.log",
            flip(&crashed, r.frames[1].offset + 30, 4),
        ),
        (
            "crashed.flip-frame-payload.log",
            flip(&crashed, r.frames[1].offset + FRAME_HEADER + 7, 6),
        ),
        ("complete.next-version.log", next_version),
        ("complete.bad-magic.log", bad_magic),
    ];
    for (name, bytes) in files {
        fs::write(corpus(name), bytes).unwrap();
    }

    // Recordings: a manifest cut short, one of a future version, one naming a missing log, and
    // a directory with logs but no manifest.
    let write_manifest = |name: &str, manifest: &Manifest, edit: &dyn Fn(String) -> String| {
        let d = corpus(name);
        fs::create_dir_all(&d).unwrap();
        manifest.write(&d, false).unwrap();
        let path = d.join("manifest.json");
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, edit(text)).unwrap();
    };
    let one = sample_manifest(&["proc-0000.log"]);
    write_manifest("manifest-truncated", &one, &|t| t[..t.len() / 2].to_owned());
    write_manifest("manifest-next-version", &one, &|t| {
        let this = format!("\"format_version\": {FORMAT_VERSION}");
        let next = format!("\"format_version\": {}", FORMAT_VERSION + 1);
        t.replace(&this, &next)
    });
    let two = sample_manifest(&["proc-0000.log", "proc-0001.log"]);
    write_manifest("manifest-missing-log", &two, &|t| t);
    fs::copy(
        corpus("complete.log"),
        corpus("manifest-missing-log/proc-0000.log"),
    )
    .unwrap();
    fs::create_dir_all(corpus("no-manifest")).unwrap();
    fs::write(corpus("no-manifest/proc-0000.log"), cut(&complete, 100)).unwrap();
}

/// `version-2.log`, `version-3.log` and `version-4.log` are `complete.log` as the last builds
/// of format versions 2 (no extended events), 3 (no pending access record) and 4 (no check in
/// the record) wrote it: this build reads them whole.
#[test]
fn logs_of_the_previous_format_versions_still_read() {
    for name in ["version-2.log", "version-3.log", "version-4.log"] {
        let reader = LogReader::open(&corpus(name)).unwrap();
        reader.verify_payloads().unwrap();
        assert!(reader.damage().is_empty(), "{name}: {:?}", reader.damage());
        let events = reader.events().collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(events.len(), 1200, "{name}");
        let counts = reader.kind_counts().unwrap();
        let total: u64 = counts.iter().map(|(_, n)| n).sum();
        assert_eq!(total, 1200, "{name}: {counts:?}");
    }
}
