//! What the corruption and crash tests write: event `i` is a function of `i` alone, so a reader
//! of a damaged or crashed log can check every event it gets back without the writer's help.

#![allow(dead_code, unreachable_pub)]

use std::panic::Location;

use ppd_formats::event::{AtomicOp, ClockSource, MemOrdering, ObjectKind, RecvOutcome, RwMode};
use ppd_formats::{Borrowed, Event, LogIdentity, ObjectId, ProcessId, WriterOptions};

/// Who the test logs belong to.
pub fn identity() -> LogIdentity {
    LogIdentity {
        process_id: ProcessId(2),
        parent: Some(ProcessId(0)),
        name: "teller".into(),
        os_pid: 4242,
    }
}

/// Small blocks, so that a few thousand events make many frames.
pub fn small_blocks(ring_blocks: u32) -> WriterOptions {
    WriterOptions {
        block_size: 4096,
        ring_blocks,
        ..WriterOptions::default()
    }
}

/// Every `SPAN_EVERY`-th event (offset by half) carries a value larger than a 4 KiB block.
pub const SPAN_EVERY: u64 = 500;

/// The bytes event `i` carries: a large value now and then, a few bytes often, else none.
pub fn payload(i: u64) -> Vec<u8> {
    if i % SPAN_EVERY == SPAN_EVERY / 2 {
        (0..6000u64).map(|j| ((i + j) % 251) as u8).collect()
    } else {
        i.to_le_bytes()[..(i % 9) as usize].to_vec()
    }
}

fn site() -> &'static Location<'static> {
    Location::caller()
}

/// Event `i`: a deterministic mix of kinds, objects, sites and payloads.
pub fn event_at(i: u64, payload: &[u8]) -> Event<Borrowed<'_>> {
    let object = ObjectId::new(ProcessId(1), (i % 3) as u32);
    let site = if i.is_multiple_of(4) {
        None
    } else {
        Some(site())
    };
    if i % SPAN_EVERY == SPAN_EVERY / 2 {
        return Event::Mark {
            label: "big",
            site,
            value: payload,
        };
    }
    match i % 9 {
        0 => Event::Send {
            channel: object,
            seq: i / 9 + 1,
            site,
            payload: (!payload.is_empty()).then_some(payload),
        },
        1 => Event::Recv {
            channel: object,
            sender: ProcessId((i % 5) as u32),
            seq: i / 9 + 1,
            site,
            payload: (!payload.is_empty()).then_some(payload),
        },
        2 => Event::RecvNone {
            channel: object,
            outcome: RecvOutcome::Empty,
            site,
        },
        3 => Event::Random {
            value: i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        },
        4 => Event::Create {
            object,
            kind: ObjectKind::Mutex,
            init: i,
            name: Some(if i.is_multiple_of(2) {
                "accounts"
            } else {
                "ledger"
            }),
            site,
        },
        5 => Event::Lock {
            object,
            version: i / 9 + 1,
            prev: i.is_multiple_of(2).then_some(ProcessId(3)),
            site,
            value: (!payload.is_empty()).then_some(payload),
        },
        6 => Event::Atomic {
            object,
            version: i,
            prev: None,
            op: AtomicOp::Rmw,
            ordering: MemOrdering::SeqCst,
            failure: None,
            site,
            value: Some(i * 3),
        },
        7 => Event::Clock {
            source: ClockSource::Monotonic,
            nanos: i * 1_000,
        },
        // An extended-tag kind (docs/format.md §4.2) every other round.
        _ if (i / 9) % 2 == 1 => Event::RwAcquire {
            object,
            version: i / 9 + 1,
            prev: (i % 4 == 1).then_some(ProcessId(3)),
            mode: if i.is_multiple_of(3) {
                RwMode::Read
            } else {
                RwMode::Write
            },
            site,
            value: (!payload.is_empty()).then_some(payload),
        },
        _ => Event::Mark {
            label: "balance",
            site,
            value: payload,
        },
    }
}

/// An event's debug form with source lines and columns left out, so that a committed log stays
/// comparable when this file's lines move.
fn render(debug: String) -> String {
    let debug = debug
        .replace("Location { file: ", "Site { file: ")
        .replace(", col: ", ", column: ");
    let mut parts = debug.split("Site { file: ");
    let mut out = parts.next().unwrap_or_default().to_owned();
    for part in parts {
        out.push_str("Site { file: ");
        let Some(start) = part.find(", line: ") else {
            out.push_str(part);
            continue;
        };
        let end = part[start..].find(" }").map_or(part.len(), |e| start + e);
        out.push_str(&part[..start]);
        out.push_str(", line: _, column: _");
        out.push_str(&part[end..]);
    }
    out
}

/// Whether `got` is what was written as event `i`; the difference otherwise.
pub fn check_event(i: u64, got: &Event) -> Result<(), String> {
    let bytes = payload(i);
    let want = render(format!("{:?}", event_at(i, &bytes)));
    let got = render(format!("{got:?}"));
    if want == got {
        Ok(())
    } else {
        Err(format!("event {i}: read {got}, wrote {want}"))
    }
}
