//! Values that crossed processes through shared memory: the write a lock acquisition or an
//! atomic load read (Miller & Choi §6.3: the parallel dynamic graph extends data dependences
//! across processes).
//!
//! The log orders every object's accesses by version, and each access names the process of
//! the access before it (`prev`). Acquisition `v` of a mutex reads what the critical section of
//! acquisition `v − 1` left at its release; if that section wrote nothing through its guard,
//! what the one before left, and so on back to the mutex's initial value. A reader-writer
//! lock's versions count acquisitions and releases alike, and only write holds can change the
//! value: a hold reads what the last write hold before it left, so the walk passes over
//! releases and read holds. An atomic access that reads reads the latest write before it in
//! version order. All are found by walking back along versions, reading each process's accesses
//! to the object once.
//!
//! Beyond the paper: a critical section is matched to its e-block instance's trace (the
//! acquisition's input record, the variable its guard was bound to, the release's record),
//! so the chain reaches the statement that wrote through the guard; a holder outside every
//! e-block ends the chain at its release, named as such.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use ppd_formats::eblock_trace::{EblockTrace, Record, RecordKind};
use ppd_formats::event::{AtomicOp, RwMode, Site as EventSite};
use ppd_formats::{Event, ObjectId, ProcessId, Recording};

use super::answer::{Dependence, Via};
use super::engine::{Dep, DepNode, Engine, Outside, Stall, Try};
use super::place::Place;
use super::store::InstanceKey;
use crate::error::{FlowbackError, Result};

/// How many earlier accesses are walked back through for the one that wrote.
const WALK_LIMIT: u64 = 100_000;
/// How many earlier critical sections are re-executed along with the one a walk needs.
const PREFETCH: usize = 16;

/// One logged access to a mutex, a reader-writer lock or an atomic.
#[derive(Debug, Clone)]
pub(super) struct Access {
    /// The process that made it.
    pub(super) process: ProcessId,
    /// Its event in the process's log.
    pub(super) event: u64,
    /// The process of the access before it.
    pub(super) prev: Option<ProcessId>,
    /// What it was.
    pub(super) kind: AccessKind,
    /// Where it was made.
    pub(super) site: Option<&'static EventSite>,
    /// A hold that could write (a mutex's, a reader-writer lock's write hold): the event that
    /// released it, if the log has it.
    pub(super) release: Option<u64>,
}

/// What an access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AccessKind {
    /// A mutex acquisition.
    Lock,
    /// A reader-writer lock acquisition.
    RwAcquire(RwMode),
    /// A reader-writer lock release (it has a version of its own).
    RwRelease,
    /// An atomic access.
    Atomic(AtomicOp),
}

impl AccessKind {
    /// Whether the hold this access begins may have written the guarded value.
    fn holds_for_writing(self) -> bool {
        matches!(
            self,
            AccessKind::Lock | AccessKind::RwAcquire(RwMode::Write)
        )
    }
}

/// Where an object was created, and with what.
#[derive(Debug, Clone)]
pub(super) struct Created {
    event: u64,
    site: Option<&'static EventSite>,
    init: u64,
}

/// The accesses to objects, read from the logs as queries need them.
#[derive(Debug, Default)]
pub(super) struct Histories {
    /// Per process and object: its accesses, by version.
    accesses: HashMap<(ProcessId, ObjectId), Arc<BTreeMap<u64, Access>>>,
    created: HashMap<ObjectId, Option<Created>>,
}

impl Histories {
    /// Access `version` of `object`, which `process` made.
    fn access(
        &mut self,
        recording: &Recording,
        process: ProcessId,
        object: ObjectId,
        version: u64,
    ) -> Result<Option<Access>> {
        if let Some(found) = self.accesses.get(&(process, object)) {
            return Ok(found.get(&version).cloned());
        }
        let found = Arc::new(self.scan(recording, process, object)?);
        self.accesses.insert((process, object), Arc::clone(&found));
        Ok(found.get(&version).cloned())
    }

    /// The `Create` of `object`, from its creator's log.
    fn created(&mut self, recording: &Recording, object: ObjectId) -> Result<Option<Created>> {
        if !self.created.contains_key(&object) {
            self.access(recording, object.creator(), object, 0)?;
        }
        Ok(self.created.get(&object).cloned().flatten())
    }

    /// Reads `process`'s log once for its accesses to `object` (and the object's creation, when
    /// the process created it).
    fn scan(
        &mut self,
        recording: &Recording,
        process: ProcessId,
        object: ObjectId,
    ) -> Result<BTreeMap<u64, Access>> {
        let entry = recording.process(process).ok_or_else(|| {
            FlowbackError::Query(format!("no process {process} in the recording"))
        })?;
        let reader = recording.open_log(entry)?;
        let mut found = BTreeMap::new();
        let mut held: Option<u64> = None;
        let mut created = None;
        for item in reader.events() {
            let (k, event) = item?;
            match event {
                Event::Create {
                    object: o,
                    init,
                    site,
                    ..
                } if o == object => {
                    created = Some(Created {
                        event: k,
                        site,
                        init,
                    });
                }
                Event::Lock {
                    object: o,
                    version,
                    prev,
                    site,
                    ..
                } if o == object => {
                    held = Some(version);
                    found.insert(
                        version,
                        Access {
                            process,
                            event: k,
                            prev,
                            kind: AccessKind::Lock,
                            site,
                            release: None,
                        },
                    );
                }
                Event::Unlock { object: o, .. } if o == object => {
                    if let Some(access) = held.take().and_then(|v| found.get_mut(&v)) {
                        access.release = Some(k);
                    }
                }
                Event::RwAcquire {
                    object: o,
                    version,
                    prev,
                    mode,
                    site,
                    ..
                } if o == object => {
                    if mode == RwMode::Write {
                        held = Some(version);
                    }
                    found.insert(
                        version,
                        Access {
                            process,
                            event: k,
                            prev,
                            kind: AccessKind::RwAcquire(mode),
                            site,
                            release: None,
                        },
                    );
                }
                Event::RwRelease {
                    object: o,
                    version,
                    prev,
                    mode,
                    site,
                } if o == object => {
                    if mode == RwMode::Write
                        && let Some(access) = held.take().and_then(|v| found.get_mut(&v))
                    {
                        access.release = Some(k);
                    }
                    found.insert(
                        version,
                        Access {
                            process,
                            event: k,
                            prev,
                            kind: AccessKind::RwRelease,
                            site,
                            release: None,
                        },
                    );
                }
                Event::Atomic {
                    object: o,
                    version,
                    prev,
                    op,
                    site,
                    ..
                } if o == object => {
                    found.insert(
                        version,
                        Access {
                            process,
                            event: k,
                            prev,
                            kind: AccessKind::Atomic(op),
                            site,
                            release: None,
                        },
                    );
                }
                _ => {}
            }
        }
        if process == object.creator() {
            self.created.insert(object, created);
        }
        Ok(found)
    }
}

/// What a walk back along an object's versions found.
enum Earlier {
    /// The access, of that version.
    Access(u64, Access),
    /// There is none: the object's initial value.
    Initial,
    /// The log does not have it (cut short or damaged): what is missing.
    Lost(String),
}

impl Engine<'_, '_> {
    /// Where the value an input record holds came from, when it crossed processes: the write a
    /// lock acquisition or an atomic read found.
    pub(super) fn shared_source(&mut self, inst: InstanceKey, r: &Record) -> Try<Vec<Dep>> {
        let Some(k) = r.event else {
            return Ok(Vec::new());
        };
        let value = self.shown(inst.process, r.value.as_ref());
        match self.store.event(inst.process, k)? {
            Event::Lock {
                object,
                version,
                prev,
                ..
            }
            | Event::RwAcquire {
                object,
                version,
                prev,
                ..
            } => Ok(vec![self.lock_writer(object, version, prev, value)?]),
            Event::Atomic {
                object,
                version,
                prev,
                ..
            } => Ok(vec![self.atomic_writer(object, version, prev, value)?]),
            _ => Ok(Vec::new()),
        }
    }

    /// Access `version - 1` of `object`, made by `by`.
    fn before(&mut self, object: ObjectId, version: u64, by: Option<ProcessId>) -> Try<Earlier> {
        let Some(earlier) = version.checked_sub(1).filter(|v| *v > 0) else {
            return Ok(Earlier::Initial);
        };
        let Some(by) = by else {
            return Ok(Earlier::Lost(format!(
                "access {version} names no process before it"
            )));
        };
        let recording = self.store.recording();
        Ok(match self.shared.access(recording, by, object, earlier)? {
            Some(access) => Earlier::Access(earlier, access),
            None => Earlier::Lost(format!(
                "access {earlier} is not in the log of {}",
                self.process_name(by)
            )),
        })
    }

    /// The critical section that last wrote what acquisition `version` of mutex or
    /// reader-writer lock `object` found: walking back through the holders that could write,
    /// the first whose section wrote through its guard.
    fn lock_writer(
        &mut self,
        object: ObjectId,
        version: u64,
        prev: Option<ProcessId>,
        value: Option<String>,
    ) -> Try<Dep> {
        let (mut version, mut by) = (version, prev);
        for _ in 0..WALK_LIMIT {
            let (held, access) = match self.before(object, version, by)? {
                Earlier::Access(v, access) => (v, access),
                Earlier::Initial => return self.initial(object, value, Via::Lock),
                Earlier::Lost(why) => return Ok(self.lost(object, &why, value, Via::Lock)),
            };
            if !access.kind.holds_for_writing() {
                (version, by) = (held, access.prev);
                continue;
            }
            let section = match self.critical_section(held, &access) {
                // Sections that wrote nothing are common (checks): the holders before this one
                // are re-executed in the same run, so a walk back costs one run, not one each.
                Err(Stall::Need(mut keys)) => {
                    keys.extend(self.holders_before(object, held, access.prev)?);
                    return Err(Stall::Need(keys));
                }
                other => other?,
            };
            match section {
                Section::Wrote(site) => return Ok(self.crossing(Via::Lock, object, site)),
                Section::Untraced(note) => {
                    let released = access.release.unwrap_or(access.event);
                    let site = self.untraced(object, &access, released, note, value);
                    return Ok(self.crossing(Via::Lock, object, site));
                }
                Section::Unchanged => {}
            }
            (version, by) = (held, access.prev);
        }
        Ok(self.lost(
            object,
            &format!("no write in the {WALK_LIMIT} critical sections before"),
            value,
            Via::Lock,
        ))
    }

    /// The instances of the [`PREFETCH`] critical sections that could write before acquisition
    /// `version` of `object` (made by `by`) that ran inside e-blocks.
    fn holders_before(
        &mut self,
        object: ObjectId,
        version: u64,
        by: Option<ProcessId>,
    ) -> Try<BTreeSet<InstanceKey>> {
        let (mut version, mut by) = (version, by);
        let mut keys = BTreeSet::new();
        for _ in 0..WALK_LIMIT {
            if keys.len() >= PREFETCH {
                break;
            }
            let Earlier::Access(held, access) = self.before(object, version, by)? else {
                break;
            };
            if !access.kind.holds_for_writing() {
                (version, by) = (held, access.prev);
                continue;
            }
            match self.containing(access.process, access.event)? {
                Some(key) => keys.insert(key),
                // The walk stops at a holder outside e-blocks.
                None => break,
            };
            (version, by) = (held, access.prev);
        }
        Ok(keys)
    }

    /// The write an atomic access of `version` read: the latest write before it.
    fn atomic_writer(
        &mut self,
        object: ObjectId,
        version: u64,
        prev: Option<ProcessId>,
        value: Option<String>,
    ) -> Try<Dep> {
        let (mut version, mut by) = (version, prev);
        for _ in 0..WALK_LIMIT {
            let (v, access) = match self.before(object, version, by)? {
                Earlier::Access(v, access) => (v, access),
                Earlier::Initial => return self.initial(object, value, Via::Atomic),
                Earlier::Lost(why) => return Ok(self.lost(object, &why, value, Via::Atomic)),
            };
            if matches!(access.kind, AccessKind::Atomic(op) if op.writes()) {
                let site = self.store_site(object, v, &access, value)?;
                return Ok(self.crossing(Via::Atomic, object, site));
            }
            (version, by) = (v, access.prev);
        }
        Ok(self.lost(
            object,
            &format!("no write in the {WALK_LIMIT} accesses before"),
            value,
            Via::Atomic,
        ))
    }

    /// An atomic write as a node: its record in its instance's trace, or the event itself
    /// when no e-block made it.
    fn store_site(
        &mut self,
        object: ObjectId,
        version: u64,
        access: &Access,
        value: Option<String>,
    ) -> Try<DepNode> {
        let index = self.store.index(access.process)?;
        let Some((_, instance)) = index.innermost_containing(access.event)? else {
            let note = format!(
                "stored by {} outside e-blocks (access {version}): what it computed the value \
                 from is not traced",
                self.process_name(access.process)
            );
            return Ok(self.untraced(object, access, access.event, note, value));
        };
        let inst = InstanceKey {
            process: access.process,
            enter: instance.enter,
        };
        let trace = self.trace(inst)?;
        Ok(
            match trace
                .records
                .iter()
                .rposition(|x| x.kind == RecordKind::Publish && x.event == Some(access.event))
            {
                Some(rec) => DepNode::Publish {
                    inst,
                    rec: rec as u32,
                    value,
                },
                None => {
                    let note = format!(
                        "stored by {} at event {}, which the trace of {} does not show",
                        self.process_name(access.process),
                        access.event,
                        trace.eblock
                    );
                    let mut site = self.untraced(object, access, access.event, note, value);
                    if let DepNode::Outside(o) = &mut site {
                        o.inst = Some(inst);
                    }
                    site
                }
            },
        )
    }

    /// What the critical section of acquisition `held` did with the guarded value.
    fn critical_section(&mut self, held: u64, access: &Access) -> Try<Section> {
        let holder = self.process_name(access.process);
        let index = self.store.index(access.process)?;
        let Some((_, instance)) = index.innermost_containing(access.event)? else {
            return Ok(Section::Untraced(format!(
                "held by {holder} outside e-blocks (acquisition {held}): what it wrote under the \
                 lock is not traced"
            )));
        };
        let inst = InstanceKey {
            process: access.process,
            enter: instance.enter,
        };
        let trace = self.trace(inst)?;
        let Some((guard, bound)) = guard_binding(&trace, access.event) else {
            return Ok(Section::Untraced(format!(
                "held by {holder} in {} (acquisition {held}), whose guard is not bound to a \
                 variable: what it wrote under the lock is not traced",
                trace.eblock
            )));
        };
        // The section ends at its release; one released after the instance exited (the guard
        // left it) runs to the trace's end.
        let end = match access.release {
            Some(u) if u < instance.exit => match trace
                .records
                .iter()
                .position(|x| x.kind == RecordKind::Publish && x.event == Some(u))
            {
                Some(at) => at,
                None => {
                    return Ok(Section::Untraced(format!(
                        "held by {holder} in {} (acquisition {held}), whose trace does not show \
                         the release at event {u}: what it wrote under the lock is not known",
                        trace.eblock
                    )));
                }
            },
            _ => trace.records.len(),
        };
        Ok(match self.last_def(inst, end, &guard, 0)? {
            Some(site @ DepNode::Record { rec, .. }) if rec as usize > bound => {
                Section::Wrote(site)
            }
            Some(site @ DepNode::CallOutput { rec, .. }) if rec as usize > bound => {
                Section::Wrote(site)
            }
            _ => Section::Unchanged,
        })
    }

    /// The value an object started with.
    fn initial(&mut self, object: ObjectId, value: Option<String>, via: Via) -> Try<Dep> {
        let recording = self.store.recording();
        let created = self.shared.created(recording, object)?;
        let creator = object.creator();
        let name = self.object_name(object);
        let site = match created {
            Some(c) => {
                let mut note = format!("the initial value of {name}: nothing wrote it before");
                // An atomic's initial value is logged (a mutex's is not): it must be what the
                // read found.
                let value = match value {
                    Some(read) if via == Via::Atomic && read != c.init.to_string() => {
                        note.push_str(&format!(
                            "; but it was created holding {}: something changed it without a logged access",
                            c.init
                        ));
                        Some(read)
                    }
                    Some(read) => Some(read),
                    None => (via == Via::Atomic).then(|| c.init.to_string()),
                };
                DepNode::Outside(Box::new(Outside {
                    process: creator,
                    inst: self.containing(creator, c.event)?,
                    var: None,
                    value,
                    file: c.site.as_ref().map_or_else(String::new, |s| s.file.clone()),
                    line: c.site.as_ref().map_or(0, |s| s.line),
                    text: format!("{name} created"),
                    note,
                }))
            }
            None => DepNode::Outside(Box::new(Outside {
                process: creator,
                inst: None,
                var: None,
                value,
                file: String::new(),
                line: 0,
                text: format!("{name} created"),
                note: format!(
                    "the initial value of {name}; its creation is not in the log of {}",
                    self.process_name(creator)
                ),
            })),
        };
        Ok(self.crossing(via, object, site))
    }

    /// The walk back could not go on.
    fn lost(&mut self, object: ObjectId, why: &str, value: Option<String>, via: Via) -> Dep {
        let name = self.object_name(object);
        let site = DepNode::Outside(Box::new(Outside {
            process: object.creator(),
            inst: None,
            var: None,
            value,
            file: String::new(),
            line: 0,
            text: name,
            note: format!("the write this value came from is not known: {why}"),
        }));
        self.crossing(via, object, site)
    }

    /// An access outside traced code, as a node: its event's site, its process.
    fn untraced(
        &mut self,
        object: ObjectId,
        access: &Access,
        event: u64,
        note: String,
        value: Option<String>,
    ) -> DepNode {
        let name = self.object_name(object);
        let what = match access.kind {
            AccessKind::Lock | AccessKind::RwAcquire(_) | AccessKind::RwRelease => "released",
            AccessKind::Atomic(_) => "stored into",
        };
        DepNode::Outside(Box::new(Outside {
            process: access.process,
            inst: None,
            var: None,
            value,
            file: access
                .site
                .as_ref()
                .map_or_else(String::new, |s| s.file.clone()),
            line: access.site.as_ref().map_or(0, |s| s.line),
            text: format!("{what} {name} at event {event}"),
            note,
        }))
    }

    /// The instance of `process` that event `k` is in.
    fn containing(&mut self, process: ProcessId, k: u64) -> Try<Option<InstanceKey>> {
        let index = self.store.index(process)?;
        Ok(index
            .innermost_containing(k)?
            .map(|(_, instance)| InstanceKey {
                process,
                enter: instance.enter,
            }))
    }

    /// A data dependence through `object`, remembered so the answer can name it.
    fn crossing(&mut self, via: Via, object: ObjectId, site: DepNode) -> Dep {
        self.through.insert(site.clone(), object);
        (Dependence::Data, Some(via), site)
    }
}

/// What a critical section did with the guarded value.
enum Section {
    /// This statement wrote it last.
    Wrote(DepNode),
    /// Nothing: the value it released is the one it found.
    Unchanged,
    /// The trace cannot say: why.
    Untraced(String),
}

/// The place a critical section's guard is bound to, and the record that binds it: the first
/// definition holding the acquisition's input record (`let mut guard = account.lock()...`).
fn guard_binding(trace: &EblockTrace, lock_event: u64) -> Option<(Place, usize)> {
    let input = trace
        .records
        .iter()
        .position(|x| x.kind == RecordKind::Input && x.event == Some(lock_event))?;
    let (at, binding) = trace
        .records
        .iter()
        .enumerate()
        .skip(input + 1)
        .find(|(_, x)| x.kind == RecordKind::Def && x.inputs.contains(&(input as u32)))?;
    let place = Place::parse(binding.var.as_deref()?)?;
    Some((Place::variable(&place.root), at))
}
