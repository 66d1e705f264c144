//! What a traced run records for each logged event its process performs: the runtime records
//! of a trace (`ppd_recorder::tracer::operation`) — a receive and the message it took, a send,
//! an input from the log, a write others can read, a mark, the result of a nested e-block call.
//!
//! Two runs trace: the emulation of one e-block instance (`emulate`), where a nested call is
//! substituted from its postlog and its events are passed over unseen, and the replay of a
//! process whose body is traced (`ppd_recorder::body`), where a nested call runs and its
//! events come here too. Either way the trace shows a nested call as one record, made when it
//! exits, and nothing of what it did.

use ppd_formats::eblock_trace::{Captured, MessageRef, RecordKind};
use ppd_formats::event::{Class, Owned, RwMode};
use ppd_formats::{Event, ProcessId, value};
use ppd_recorder::tracer;

/// The nested e-block calls open in a traced run.
#[derive(Debug, Default)]
pub(crate) struct OpenCalls {
    /// Enter events of the open nested calls, outermost first.
    nested: Vec<u64>,
}

impl OpenCalls {
    /// How many nested calls are open.
    pub(crate) fn depth(&self) -> usize {
        self.nested.len()
    }

    /// Records logged event `index` of `process`, which the traced run has just performed.
    pub(crate) fn record(&mut self, logged: &Event<Owned>, index: u64, process: ProcessId) {
        // Inside a nested call, only its calls' entries and exits count: nothing else is the
        // traced code's doing.
        if !self.nested.is_empty() && logged.kind().class() != Class::Eblock {
            return;
        }
        let captured =
            |bytes: &Option<Box<[u8]>>| bytes.as_ref().map(|b| Captured::Value(b.to_vec()));
        let input = |v: u64| Some(Captured::Value(value::encode(&v).unwrap_or_default()));
        match logged {
            // A socket read is a receive whose message is its bytes; the reading socket and
            // the stream offset say which bytes (the analysis pairs them with the writes).
            Event::NetRead {
                socket,
                offset,
                data,
                ..
            } => tracer::operation(
                RecordKind::Recv,
                Some(Captured::Value(value::encode_raw(data))),
                Some(MessageRef {
                    channel: *socket,
                    seq: *offset,
                    sender: process,
                }),
                None,
                index,
            ),
            Event::NetRecvFrom { socket, data, .. } => tracer::operation(
                RecordKind::Recv,
                Some(Captured::Value(value::encode_raw(data))),
                Some(MessageRef {
                    channel: *socket,
                    seq: 0,
                    sender: process,
                }),
                None,
                index,
            ),
            Event::NetWrite { socket, seq, .. } | Event::NetSendTo { socket, seq, .. } => {
                tracer::operation(
                    RecordKind::Send,
                    None,
                    Some(MessageRef {
                        channel: *socket,
                        seq: *seq,
                        sender: process,
                    }),
                    None,
                    index,
                )
            }
            Event::NetFail { error, .. } => tracer::operation(
                RecordKind::Input,
                input(u64::from(error.kind)),
                None,
                None,
                index,
            ),
            Event::Recv {
                channel,
                sender,
                seq,
                payload,
                ..
            } => tracer::operation(
                RecordKind::Recv,
                captured(payload),
                Some(MessageRef {
                    channel: *channel,
                    seq: *seq,
                    sender: *sender,
                }),
                None,
                index,
            ),
            Event::Send {
                channel,
                seq,
                payload,
                ..
            } => tracer::operation(
                RecordKind::Send,
                captured(payload),
                Some(MessageRef {
                    channel: *channel,
                    seq: *seq,
                    sender: process,
                }),
                None,
                index,
            ),
            Event::Random { value } => {
                tracer::operation(RecordKind::Input, input(*value), None, None, index)
            }
            Event::Clock { nanos, .. } => {
                tracer::operation(RecordKind::Input, input(*nanos), None, None, index)
            }
            Event::Answer { value, .. } => {
                tracer::operation(RecordKind::Input, input(*value), None, None, index)
            }
            Event::Atomic { value, op, .. } => {
                // A read-modify-write reads, then writes what it read combined with its
                // operands: the write's record holds the read's.
                if let Some(v) = value {
                    tracer::operation(RecordKind::Input, input(*v), None, None, index);
                }
                if op.writes() {
                    tracer::operation(RecordKind::Publish, None, None, None, index);
                }
            }
            Event::Lock { value, .. } => {
                tracer::operation(RecordKind::Input, captured(value), None, None, index)
            }
            Event::Unlock { .. }
            | Event::RwRelease {
                mode: RwMode::Write,
                ..
            } => tracer::operation(RecordKind::Publish, None, None, None, index),
            Event::RwAcquire { value, .. } => {
                tracer::operation(RecordKind::Input, captured(value), None, None, index)
            }
            Event::Mark { value, .. } => tracer::operation(
                RecordKind::Mark,
                Some(Captured::Value(value.to_vec())),
                None,
                None,
                index,
            ),
            Event::EblockEnter { .. } => self.nested.push(index),
            // The exit of a call inside a nested one.
            Event::EblockExit { .. } if self.nested.len() > 1 => {
                self.nested.pop();
            }
            // The exit of the nested call is its record.
            Event::EblockExit { postlog, .. } if self.nested.len() == 1 => {
                let enter = self.nested.pop();
                let returned = value::map_entries(postlog)
                    .ok()
                    .and_then(|entries| entries.into_iter().find(|(n, _)| n == "%0"))
                    .map(|(_, v)| Captured::Value(v));
                tracer::operation(RecordKind::Call, returned, None, enter, index);
            }
            Event::Join { child, .. } => tracer::joined(*child, index),
            Event::Start { .. }
            | Event::Spawn { .. }
            | Event::Exit
            | Event::Panic { .. }
            | Event::Create { .. }
            | Event::RecvNone { .. }
            | Event::Select { .. }
            | Event::SemAcquire { .. }
            | Event::SemRelease { .. }
            | Event::EblockExit { .. }
            | Event::Blocked { .. }
            | Event::Undelivered { .. }
            | Event::JoinBlocked { .. }
            | Event::Sleep { .. }
            | Event::Outcome { .. }
            | Event::NetOpen { .. }
            | Event::RwRelease {
                mode: RwMode::Read, ..
            } => {}
        }
    }
}
