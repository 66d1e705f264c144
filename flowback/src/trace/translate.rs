//! How a logged event becomes an event of the trace: [`translate`], the one mapping for the two
//! readers that do it. The builder reads a log for the first time: it interns what it meets,
//! notes the objects events define and the socket traffic it will pair. A [`Rereader`] reads a
//! log again ([`super::Logged`]): it only looks up the ids the builder gave, in its
//! [`Dictionary`].

use std::collections::HashMap;
use std::sync::Arc;

use ppd_formats::event::ObjectKind;
use ppd_formats::{Event, ObjectId, Site};

use super::{NO_OBJECT, NO_SITE, NameId, ObjIdx, Op, SiteId};
use crate::fasthash::FastMap;
use ppd_formats::order::governing_ordering;

/// What [`translate`] needs of its reader: ids for what an event names, and to be told what
/// an event defines.
pub(crate) trait Interner {
    /// The id of a site as readers share it (interned: one address per location).
    fn site(&mut self, site: &'static Site) -> SiteId;
    /// The id of a site given by value.
    fn site_value(&mut self, site: Site) -> SiteId;
    /// The id of a name shared by the events of a block.
    fn name(&mut self, name: &Arc<str>) -> NameId;
    /// The id of a name given by value.
    fn name_value(&mut self, name: &str) -> NameId;
    /// The id of object `id`, used as a `kind` (`None`: a use that does not say).
    fn object(&mut self, id: ObjectId, kind: Option<ObjectKind>) -> ObjIdx;
    /// Object `o` was created: its kind, initial value and name.
    fn created(&mut self, o: ObjIdx, kind: ObjectKind, init: u64, name: Option<NameId>);
    /// Socket `o` was opened by `event` in process `p`, and is called `label`.
    fn opened(&mut self, p: u32, o: ObjIdx, label: NameId, event: &Event);
    /// Socket `o` carried what `event` logs in process `p`: a write, a read, a datagram sent
    /// or received.
    fn traffic(&mut self, p: u32, o: ObjIdx, event: &Event);
}

/// The trace's form of `event`, read from process `p`'s log by `i`.
#[inline]
pub(crate) fn translate(i: &mut impl Interner, p: u32, event: &Event) -> (Op, SiteId) {
    let site = event.site().map(|s| i.site(s)).unwrap_or(NO_SITE);
    let op = match event {
        Event::Start { parent } => Op::Start { parent: *parent },
        Event::Spawn { child, .. } => Op::Spawn { child: *child },
        Event::Join { child, .. } => Op::Join { child: *child },
        Event::Exit => Op::Exit,
        Event::Panic {
            message,
            file,
            line,
        } => {
            let message = i.name_value(message);
            let site = i.site_value(Site {
                file: file.to_string(),
                line: *line,
                column: 0,
            });
            return (Op::Panic { message }, site);
        }
        Event::Create {
            object,
            kind,
            init,
            name,
            ..
        } => {
            let o = i.object(*object, None);
            let name = name.as_ref().map(|n| i.name(n));
            i.created(o, *kind, *init, name);
            Op::Create { object: o }
        }
        Event::Send { channel, seq, .. } => Op::Send {
            channel: i.object(*channel, Some(ObjectKind::Channel)),
            seq: *seq,
        },
        Event::Recv {
            channel,
            sender,
            seq,
            ..
        } => Op::Recv {
            channel: i.object(*channel, Some(ObjectKind::Channel)),
            sender: *sender,
            seq: *seq,
        },
        Event::RecvNone {
            channel, outcome, ..
        } => Op::RecvNone {
            channel: i.object(*channel, Some(ObjectKind::Channel)),
            outcome: *outcome,
        },
        Event::Select { index, .. } => Op::Select { index: *index },
        Event::Lock {
            object,
            version,
            prev,
            ..
        } => Op::Lock {
            object: i.object(*object, Some(ObjectKind::Mutex)),
            version: *version,
            prev: *prev,
        },
        Event::Unlock { object, .. } => Op::Unlock {
            object: i.object(*object, Some(ObjectKind::Mutex)),
        },
        Event::SemAcquire {
            object,
            version,
            prev,
            ..
        }
        | Event::SemRelease {
            object,
            version,
            prev,
            ..
        } => {
            let (object, version, prev) = (
                i.object(*object, Some(ObjectKind::Semaphore)),
                *version,
                *prev,
            );
            if matches!(event, Event::SemAcquire { .. }) {
                Op::SemAcquire {
                    object,
                    version,
                    prev,
                }
            } else {
                Op::SemRelease {
                    object,
                    version,
                    prev,
                }
            }
        }
        Event::Atomic {
            object,
            version,
            prev,
            op,
            ordering,
            failure,
            ..
        } => Op::Atomic {
            object: i.object(*object, Some(ObjectKind::Atomic)),
            version: *version,
            prev: *prev,
            op: *op,
            ordering: governing_ordering(*op, *ordering, *failure),
        },
        Event::Clock { .. } => Op::Clock,
        Event::Random { .. } => Op::Random,
        Event::EblockEnter { eblock, .. } => Op::EblockEnter {
            name: i.name(eblock),
        },
        Event::EblockExit { eblock, .. } => Op::EblockExit {
            name: i.name(eblock),
        },
        Event::Mark { label, .. } => Op::Mark {
            label: i.name(label),
        },
        Event::Blocked { object, .. } => Op::Blocked {
            object: i.object(*object, None),
        },
        Event::Undelivered { channel, seq, .. } => Op::Undelivered {
            channel: i.object(*channel, Some(ObjectKind::Channel)),
            seq: *seq,
        },
        Event::JoinBlocked { child, .. } => Op::JoinBlocked { child: *child },
        Event::Sleep { nanos, .. } => Op::Sleep { nanos: *nanos },
        Event::Answer {
            question, value, ..
        } => Op::Answer {
            question: *question,
            value: *value,
        },
        Event::Outcome {
            object, outcome, ..
        } => Op::Outcome {
            object: i.object(*object, None),
            outcome: *outcome,
        },
        Event::RwAcquire {
            object,
            version,
            prev,
            mode,
            ..
        } => Op::RwAcquire {
            object: i.object(*object, Some(ObjectKind::RwLock)),
            version: *version,
            prev: *prev,
            mode: *mode,
        },
        Event::RwRelease {
            object,
            version,
            mode,
            ..
        } => Op::RwRelease {
            object: i.object(*object, Some(ObjectKind::RwLock)),
            version: *version,
            mode: *mode,
        },
        Event::NetOpen {
            socket,
            kind,
            local,
            peer,
            ..
        } => {
            let o = i.object(*socket, Some(ObjectKind::Socket));
            let label = match (local.is_empty(), peer.is_empty()) {
                (_, true) => format!("{} {local}", kind.name()),
                (true, false) => format!("{} to {peer}", kind.name()),
                (false, false) => format!("{} {local} <-> {peer}", kind.name()),
            };
            let label = i.name_value(&label);
            i.opened(p, o, label, event);
            Op::NetOpen { socket: o }
        }
        Event::NetWrite { socket, seq, .. } => {
            let o = i.object(*socket, Some(ObjectKind::Socket));
            i.traffic(p, o, event);
            Op::NetWrite {
                socket: o,
                seq: *seq,
                datagram: false,
            }
        }
        Event::NetRead {
            socket, peek, data, ..
        } => {
            let o = i.object(*socket, Some(ObjectKind::Socket));
            i.traffic(p, o, event);
            Op::NetRead {
                socket: o,
                peer: NO_OBJECT,
                seq: 0,
                datagram: false,
                end: data.is_empty() && !*peek,
            }
        }
        Event::NetSendTo { socket, seq, .. } => {
            let o = i.object(*socket, Some(ObjectKind::Socket));
            i.traffic(p, o, event);
            Op::NetWrite {
                socket: o,
                seq: *seq,
                datagram: true,
            }
        }
        Event::NetRecvFrom { socket, .. } => {
            let o = i.object(*socket, Some(ObjectKind::Socket));
            i.traffic(p, o, event);
            Op::NetRead {
                socket: o,
                peer: NO_OBJECT,
                seq: 0,
                datagram: true,
                end: false,
            }
        }
        Event::NetFail { socket, .. } => Op::NetFail {
            socket: i.object(*socket, Some(ObjectKind::Socket)),
        },
    };
    (op, site)
}

/// Ids of interned sites ([`Site::intern`]) by address: one site, one address, for the life
/// of the process, so a lookup hashes a pointer, never a file name.
#[derive(Debug, Default)]
pub(crate) struct SiteIds(FastMap<usize, SiteId>);

impl SiteIds {
    fn address(site: &'static Site) -> usize {
        std::ptr::from_ref(site) as usize
    }

    #[inline]
    pub(crate) fn get(&self, site: &'static Site) -> Option<SiteId> {
        self.0.get(&Self::address(site)).copied()
    }

    pub(crate) fn insert(&mut self, site: &'static Site, id: SiteId) {
        self.0.insert(Self::address(site), id);
    }
}

/// Shared names remembered by address: a block of a log decodes each once and shares it among
/// its events, so most lookups need no hashing of its contents. At most `REMEMBERED` are
/// remembered at once, since each block decodes its own and remembering every one would grow
/// with the run.
#[derive(Debug)]
pub(crate) struct ByAddress<T: ?Sized, Id> {
    ids: FastMap<usize, Id>,
    /// Holding each value keeps its address from being reused by another one.
    alive: Vec<Arc<T>>,
}

impl<T: ?Sized, Id> Default for ByAddress<T, Id> {
    fn default() -> Self {
        ByAddress {
            ids: FastMap::default(),
            alive: Vec::new(),
        }
    }
}

impl<T: ?Sized, Id: Copy> ByAddress<T, Id> {
    const REMEMBERED: usize = 4096;

    fn address(value: &Arc<T>) -> usize {
        Arc::as_ptr(value) as *const u8 as usize
    }

    /// The id remembered for `value`, if it is.
    #[inline]
    pub(crate) fn get(&self, value: &Arc<T>) -> Option<Id> {
        self.ids.get(&Self::address(value)).copied()
    }

    /// Remembers that `value` has `id`.
    pub(crate) fn insert(&mut self, value: &Arc<T>, id: Id) {
        if self.alive.len() >= Self::REMEMBERED {
            self.alive.clear();
            self.ids.clear();
        }
        self.alive.push(Arc::clone(value));
        self.ids.insert(Self::address(value), id);
    }
}

/// The ids a builder gave the objects, sites and names it met, to translate the same logs
/// again.
#[derive(Debug, Default)]
pub(crate) struct Dictionary {
    pub(crate) objects: FastMap<ObjectId, ObjIdx>,
    pub(crate) sites: HashMap<Site, SiteId>,
    pub(crate) names: HashMap<Arc<str>, NameId>,
}

/// Reads logs again with a builder's [`Dictionary`]: every id is one the builder gave. A
/// value the builder never met (the log changed since) gets no id: [`NO_SITE`], [`NO_OBJECT`],
/// or a name that reads as empty.
#[derive(Debug)]
pub(crate) struct Rereader<'d> {
    dictionary: &'d Dictionary,
    sites: SiteIds,
    names: ByAddress<str, NameId>,
}

impl<'d> Rereader<'d> {
    pub(crate) fn new(dictionary: &'d Dictionary) -> Rereader<'d> {
        Rereader {
            dictionary,
            sites: SiteIds::default(),
            names: ByAddress::default(),
        }
    }
}

/// The id no name has: [`super::Trace::name`] reads it as empty.
const UNKNOWN_NAME: NameId = NameId::MAX;

impl Interner for Rereader<'_> {
    fn site(&mut self, site: &'static Site) -> SiteId {
        if let Some(id) = self.sites.get(site) {
            return id;
        }
        let id = self.site_value(site.clone());
        self.sites.insert(site, id);
        id
    }

    fn site_value(&mut self, site: Site) -> SiteId {
        self.dictionary.sites.get(&site).copied().unwrap_or(NO_SITE)
    }

    fn name(&mut self, name: &Arc<str>) -> NameId {
        if let Some(id) = self.names.get(name) {
            return id;
        }
        let id = self.name_value(name);
        self.names.insert(name, id);
        id
    }

    fn name_value(&mut self, name: &str) -> NameId {
        self.dictionary
            .names
            .get(name)
            .copied()
            .unwrap_or(UNKNOWN_NAME)
    }

    fn object(&mut self, id: ObjectId, _: Option<ObjectKind>) -> ObjIdx {
        self.dictionary
            .objects
            .get(&id)
            .copied()
            .unwrap_or(NO_OBJECT)
    }

    fn created(&mut self, _: ObjIdx, _: ObjectKind, _: u64, _: Option<NameId>) {}

    fn opened(&mut self, _: u32, _: ObjIdx, _: NameId, _: &Event) {}

    fn traffic(&mut self, _: u32, _: ObjIdx, _: &Event) {}
}
