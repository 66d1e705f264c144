//! Chrome trace event JSON, the format Perfetto's UI and `chrome://tracing` open.
//!
//! One trace process ("ppd run"), one thread per logical process (`tid` = process id + 1,
//! named and ordered like the recording). Every event is a complete slice (`"ph": "X"`) one
//! microsecond long at its Lamport time, so `1 µs` on the time axis is one causal step; e-blocks
//! are begin/end slices around their events; every synchronization edge is a flow arrow
//! (`"ph": "s"` at its start, `"ph": "f"` with `"bp": "e"` at its end).

use std::io::Write;

use serde_json::{Value, json};

use super::put;
use crate::error::Result;
use crate::lamport::lamport;
use crate::trace::{EventRef, Op, Trace};
use crate::vclock::Clocks;
use ppd_formats::progress;

const WHAT: &str = "the Perfetto trace";

fn tid(trace: &Trace, p: u32) -> u64 {
    u64::from(trace.process(p).id.0) + 1
}

/// Writes the trace of a run.
pub fn write(trace: &Trace, clocks: &Clocks, out: &mut dyn Write) -> Result<()> {
    let times = lamport(trace, clocks);
    put(
        out,
        WHAT,
        br#"{"displayTimeUnit":"ns","otherData":{"generator":"ppd","time":"Lamport time: 1 us = one causal step"},"traceEvents":["#,
    )?;
    let mut first = true;
    let mut emit = |out: &mut dyn Write, v: Value| -> Result<()> {
        if !first {
            put(out, WHAT, b",\n")?;
        }
        first = false;
        put(out, WHAT, v.to_string().as_bytes())
    };
    emit(
        out,
        json!({"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "ppd run"}}),
    )?;
    for (p, proc) in trace.processes().iter().enumerate() {
        let t = tid(trace, p as u32);
        emit(
            out,
            json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": t,
                   "args": {"name": format!("{} ({})", proc.name, proc.id)}}),
        )?;
        emit(
            out,
            json!({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": t,
                   "args": {"sort_index": p}}),
        )?;
    }
    let mut counted = progress::pass("writing the trace JSON", trace.event_count());
    for (p, proc) in trace.processes().iter().enumerate() {
        let t = tid(trace, p as u32);
        let mut open: Vec<(String, u32)> = Vec::new();
        for (k, ev) in proc.events.iter().enumerate() {
            counted.add(1);
            let e = EventRef::new(p as u32, k as u32);
            let ts = times[p][k];
            if let Op::EblockEnter { name } = ev.op {
                let name = trace.name(name).to_owned();
                emit(
                    out,
                    json!({"ph": "B", "name": name, "cat": "eblock", "pid": 1, "tid": t, "ts": ts}),
                )?;
                open.push((name, ts));
            }
            let mut args = json!({"event": k, "what": trace.describe(e)});
            if let Some(site) = trace.site(ev.site) {
                args["site"] = json!(site.to_string());
            }
            emit(
                out,
                json!({"ph": "X", "name": ev.op.kind_name(), "cat": "ppd", "pid": 1, "tid": t,
                       "ts": ts, "dur": 1, "args": args}),
            )?;
            if matches!(ev.op, Op::EblockExit { .. })
                && let Some((name, _)) = open.pop()
            {
                emit(
                    out,
                    json!({"ph": "E", "name": name, "cat": "eblock", "pid": 1, "tid": t, "ts": ts + 1}),
                )?;
            }
        }
        // E-blocks a crash left open end with the process.
        let end = times[p].last().copied().unwrap_or(0) + 1;
        while let Some((name, _)) = open.pop() {
            emit(
                out,
                json!({"ph": "E", "name": name, "cat": "eblock", "pid": 1, "tid": t, "ts": end}),
            )?;
        }
    }
    for (i, edge) in clocks.edges().iter().enumerate() {
        let (f, to) = (edge.from, edge.to);
        let id = i + 1;
        let name = edge.kind.name();
        emit(
            out,
            json!({"ph": "s", "id": id, "name": name, "cat": "sync", "pid": 1,
                   "tid": tid(trace, f.process), "ts": times[f.process as usize][f.index as usize]}),
        )?;
        emit(
            out,
            json!({"ph": "f", "bp": "e", "id": id, "name": name, "cat": "sync", "pid": 1,
                   "tid": tid(trace, to.process), "ts": times[to.process as usize][to.index as usize]}),
        )?;
    }
    put(out, WHAT, b"]}\n")
}
