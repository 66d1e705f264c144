//! [`Logged`]: a process's events left in their log, decoded again whenever they are read.
//!
//! A trace's other stores hold every event (32 bytes, or 3–8 compact): memory that grows with
//! the run. An analysis that reads each process's events in order a few times, and only a
//! few events out of order, can instead read the log again: the log is compressed on disk
//! (mapped, not copied), and decoding it costs about what reading the compact store's varints
//! does, once per block of 128 KiB rather than once per event.
//!
//! The logs are read once into a [`Counted`] store, which keeps only how many events there are
//! and which write each socket read ends in (known only once every log is read, so it cannot
//! be decoded again). Every other part of an event is the log's, translated into the trace's
//! ids with the [`Dictionary`] of the builder that read it, which the stores of one trace
//! share. The trace is the one [`super::Trace::load`] gives, event for event (tests check it).

use std::sync::Arc;

use ppd_formats::Events;
use ppd_formats::LogReader;

use super::store::{EventSink, EventStore};
use super::translate::{Dictionary, Rereader, translate};
use super::{Ev, ObjIdx, Op};
use crate::fasthash::FastMap;

/// How many events an iterator decodes at a time.
const BATCH: usize = 256;

/// What a [`Logged`] store is filled with while its log is read: how many events, and the
/// sources of its socket reads.
#[derive(Debug, Default)]
pub(crate) struct Counted {
    len: usize,
    sources: FastMap<u32, (ObjIdx, u64)>,
}

impl EventSink for Counted {
    fn appended(&self) -> usize {
        self.len
    }

    fn push(&mut self, _: Ev) {
        self.len += 1;
    }

    fn reserve(&mut self, _: usize) {}

    fn set_read_source(&mut self, k: usize, peer: ObjIdx, seq: u64) {
        if let Ok(k) = u32::try_from(k) {
            self.sources.insert(k, (peer, seq));
        }
    }
}

/// A process's events, read from its log each time (see the module's documentation).
#[derive(Debug)]
pub struct Logged {
    process: u32,
    log: Option<Arc<LogReader>>,
    dictionary: Arc<Dictionary>,
    len: usize,
    sources: FastMap<u32, (ObjIdx, u64)>,
}

impl Logged {
    /// The events of process `process`, which `counted` counted in `log` (none if it could
    /// not be opened), translated with `dictionary`.
    pub(crate) fn new(
        process: u32,
        log: Option<Arc<LogReader>>,
        dictionary: Arc<Dictionary>,
        counted: Counted,
    ) -> Logged {
        Logged {
            process,
            len: if log.is_some() { counted.len } else { 0 },
            log,
            dictionary,
            sources: counted.sources,
        }
    }

    /// The log the events are read from.
    pub fn log(&self) -> Option<&LogReader> {
        self.log.as_deref()
    }
}

impl EventStore for Logged {
    type Iter<'a> = LoggedIter<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn at(&self, k: usize) -> Option<Ev> {
        self.iter_from(k).next()
    }

    fn iter_from(&self, k: usize) -> LoggedIter<'_> {
        LoggedIter {
            store: self,
            rereader: Rereader::new(&self.dictionary),
            events: None,
            next: k,
            batch: Vec::new(),
            taken: 0,
        }
    }
}

/// The events of a [`Logged`] store from one on, decoded a block at a time.
#[derive(Debug)]
pub struct LoggedIter<'a> {
    store: &'a Logged,
    rereader: Rereader<'a>,
    /// The log's decoder, opened at the first event asked for.
    events: Option<Events<'a>>,
    /// The index of the next event to decode.
    next: usize,
    batch: Vec<Ev>,
    taken: usize,
}

impl LoggedIter<'_> {
    /// Decodes and translates the next batch of events; none when the store's events are all
    /// read. A log that no longer decodes where it did when it was counted ends the events
    /// there: a reader of the trace meets fewer events than [`EventStore::len`] says.
    fn refill(&mut self) {
        self.batch.clear();
        self.taken = 0;
        let store = self.store;
        if self.next >= store.len {
            return;
        }
        if self.events.is_none() {
            let Some(log) = store.log.as_deref() else {
                return;
            };
            match log.events_from(self.next as u64) {
                Ok(events) => self.events = Some(events.until(store.len as u64).without_values()),
                Err(_) => {
                    self.next = store.len;
                    return;
                }
            }
        }
        let Some(events) = self.events.as_mut() else {
            return;
        };
        while self.batch.len() < BATCH && self.next < store.len {
            let Some(Ok((_, event))) = events.next() else {
                self.next = store.len;
                break;
            };
            let (mut op, site) = translate(&mut self.rereader, store.process, &event);
            if let Op::NetRead { peer, seq, .. } = &mut op
                && let Some(&(writer, write)) = store.sources.get(&(self.next as u32))
            {
                *peer = writer;
                *seq = write;
            }
            self.batch.push(Ev { op, site });
            self.next += 1;
        }
    }
}

impl Iterator for LoggedIter<'_> {
    type Item = Ev;

    fn next(&mut self) -> Option<Ev> {
        if self.taken == self.batch.len() {
            self.refill();
        }
        let ev = self.batch.get(self.taken).copied()?;
        self.taken += 1;
        Some(ev)
    }
}
