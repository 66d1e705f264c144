//! Values that arrived over a socket: the write a read's bytes came from, in whichever process,
//! OS process or host wrote them (Miller & Choi's data dependence across a message, §6.3,
//! carried over a byte stream).
//!
//! A socket read logs its bytes and where they are in its end's stream; a write logs where its
//! bytes went in the writing end's stream. The two ends of a connection pair by what each end
//! logged when it opened (`ppd_formats::net`), so a read's last byte names the write that made
//! it. The index is built the first time a query meets a socket read, from every log of the
//! recording.

use std::collections::HashMap;

use ppd_formats::net::{End, Writes, pair_streams};
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
        for entry in recording.processes() {
            let reader = recording.open_log(entry)?;
            for item in reader.events() {
                let (k, event) = item?;
                match event {
                    Event::NetOpen {
                        socket,
                        kind,
                        how,
                        from,
                        local,
                        peer,
                        peer_pid,
                        unix_ns,
                        ..
                    } => ends.push(End {
                        socket,
                        kind,
                        how,
                        from,
                        local: local.into(),
                        peer: peer.into(),
                        peer_pid,
                        os_pid: entry.os_pid,
                        unix_ns,
                    }),
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
                    _ => {}
                }
            }
        }
        for (a, b) in pair_streams(&ends) {
            wire.peer.insert(ends[a].socket, ends[b].socket);
            wire.peer.insert(ends[b].socket, ends[a].socket);
        }
        Ok(wire)
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
