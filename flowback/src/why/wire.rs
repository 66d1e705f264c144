//! Values that arrived over a socket: the write a read's bytes came from (the send a datagram
//! came from), in whichever process, OS process or host wrote them (Miller & Choi's data dependence across a message, §6.3,
//! carried over a byte stream).
//!
//! A socket read logs its bytes and where they are in its end's stream; a write logs where its
//! bytes went in the writing end's stream. The two ends of a connection pair by what each end
//! logged when it opened (`ppd_formats::net`), so a read's last byte names the write that made
//! it. The index is built the first time a query meets a socket read, from every log of the
//! recording.

use std::collections::HashMap;

use ppd_formats::event::datagram_digest;
use ppd_formats::net::{Datagram, End, Writes, pair_datagrams, pair_streams};
use ppd_formats::{Event, ObjectId, ProcessId, Recording};

use crate::error::Result;

/// The connections of a recording, and who wrote what on each end.
#[derive(Debug, Default)]
pub(super) struct Wire {
    /// Each stream socket's other end.
    peer: HashMap<ObjectId, ObjectId>,
    /// Each socket's writes, by stream offset.
    writes: HashMap<ObjectId, Writes>,
    /// The process and log event of each write: `(socket, write number)`.
    writers: HashMap<(ObjectId, u64), (ProcessId, u64)>,
    /// The send of each received datagram, by the receipt's process and log event.
    datagrams: HashMap<(ProcessId, u64), Source>,
}

/// A datagram sent or received, while the logs are read: the socket's address is known only
/// once its `NetOpen` has been read.
struct Logged {
    socket: ObjectId,
    /// The other side's address: where a send went, where a receipt came from.
    other: String,
    digest: u64,
    process: ProcessId,
    event: u64,
    seq: u64,
}

/// The write a read's bytes end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Source {
    /// The writing process.
    pub(super) process: ProcessId,
    /// Its socket (the other end of the reader's).
    pub(super) socket: ObjectId,
    /// Which write of that socket.
    pub(super) seq: u64,
    /// The write's event in the writer's log.
    pub(super) event: u64,
}

impl Wire {
    /// Reads every log of `recording` for its sockets' ends and writes.
    pub(super) fn load(recording: &Recording) -> Result<Wire> {
        let mut wire = Wire::default();
        let mut ends = Vec::new();
        let mut sends = Vec::new();
        let mut receipts = Vec::new();
        for entry in recording.processes() {
            let reader = recording.open_log(entry)?;
            for item in reader.events() {
                let (k, event) = item?;
                if let Some(end) = End::opened(&event, entry.os_pid) {
                    ends.push(end);
                    continue;
                }
                match event {
                    Event::NetWrite {
                        socket,
                        seq,
                        offset,
                        len,
                        ..
                    } => {
                        wire.writes
                            .entry(socket)
                            .or_default()
                            .push(seq, offset, len);
                        wire.writers.insert((socket, seq), (entry.id, k));
                    }
                    Event::NetSendTo {
                        socket,
                        seq,
                        to,
                        digest,
                        ..
                    } => sends.push(Logged {
                        socket,
                        other: to.into(),
                        digest,
                        process: entry.id,
                        event: k,
                        seq,
                    }),
                    Event::NetRecvFrom {
                        socket, from, data, ..
                    } => receipts.push(Logged {
                        socket,
                        other: from.into(),
                        digest: datagram_digest(&data),
                        process: entry.id,
                        event: k,
                        seq: 0,
                    }),
                    _ => {}
                }
            }
        }
        for (a, b) in pair_streams(&ends) {
            wire.peer.insert(ends[a].socket, ends[b].socket);
            wire.peer.insert(ends[b].socket, ends[a].socket);
        }
        let address: HashMap<ObjectId, &str> =
            ends.iter().map(|e| (e.socket, e.local.as_str())).collect();
        let local = |socket| address.get(&socket).copied().unwrap_or("").to_owned();
        let sent: Vec<Datagram> = sends
            .iter()
            .map(|d| Datagram {
                from: local(d.socket),
                to: d.other.clone(),
                digest: d.digest,
            })
            .collect();
        let received: Vec<Datagram> = receipts
            .iter()
            .map(|d| Datagram {
                from: d.other.clone(),
                to: local(d.socket),
                digest: d.digest,
            })
            .collect();
        for (r, s) in pair_datagrams(&sent, &received).into_iter().enumerate() {
            if let Some(s) = s {
                let (receipt, send) = (&receipts[r], &sends[s]);
                wire.datagrams.insert(
                    (receipt.process, receipt.event),
                    Source {
                        process: send.process,
                        socket: send.socket,
                        seq: send.seq,
                        event: send.event,
                    },
                );
            }
        }
        Ok(wire)
    }

    /// The send of the datagram `process` received at log event `event`, when the recording
    /// holds it.
    pub(super) fn datagram_source(&self, process: ProcessId, event: u64) -> Option<Source> {
        self.datagrams.get(&(process, event)).copied()
    }

    /// Where the bytes `offset..offset + len` read on `socket` came from: the write holding the
    /// last of them, when the recording holds the other end.
    pub(super) fn source(&self, socket: ObjectId, offset: u64, len: u64) -> Option<Source> {
        let last = offset.checked_add(len)?.checked_sub(1)?;
        let writer = *self.peer.get(&socket)?;
        let seq = self.writes.get(&writer)?.holding(last)?;
        let &(process, event) = self.writers.get(&(writer, seq))?;
        Some(Source {
            process,
            socket: writer,
            seq,
            event,
        })
    }
}
