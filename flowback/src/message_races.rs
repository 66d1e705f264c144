//! Message races: receives that another send could have matched.
//!
//! A receive *r* on channel *c* took the message of send *s*. Another send *s'* on *c* races
//! with *s* at *r* when, in some execution with the same happened-before order, *r* could
//! have taken *s'* instead:
//!
//! 1. *s'* is concurrent with *s* (neither happened before the other — a channel is FIFO, so a
//!    send that happened before *s* was queued first and was taken earlier);
//! 2. *s'* did not happen after *r* (it could already have been queued when *r* took a
//!    message);
//! 3. *s'* was still in the channel at *r*: it was received after *r*, or never.
//!
//! The race is reported once, at the first receive where both messages were candidates.
//! Sends of one process reach the channel in program order, so for each other sending process
//! only its oldest message still in the channel can be a candidate: checking it is enough, and
//! the analysis costs one comparison per receive and sending process.
//!
//! `try_recv` and timeouts that found nothing are not receives here: they did not choose
//! between messages. A send that found the receiver gone (`Undelivered`) never entered the
//! channel and competes with nothing.
//!
//! Sockets are channels too. A datagram socket's receipts are receives on it, and the sends
//! they pair with are its sends (a datagram nobody received went nowhere the log can tell, so
//! it competes with nothing). A stream's writes are sends on the writing end, and a read is a
//! receive of the write holding its last byte; the stream is FIFO across every process writing
//! to it, so a read takes every write numbered up to that one.

use crate::fasthash::FastMap;

use crate::trace::{EventRef, EventStore, NO_OBJECT, ObjIdx, Op, SiteId, Trace};
use crate::vclock::Clocks;
use ppd_formats::event::Class;
use ppd_formats::progress;

/// A message race, deduplicated by the sites of its two sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageRace {
    /// The channel.
    pub channel: ObjIdx,
    /// The send whose message was received.
    pub received: EventRef,
    /// A concurrent send whose message could have been received instead.
    pub other: EventRef,
    /// The receive.
    pub receive: EventRef,
    /// How many (receive, competing send) pairs share these two send sites.
    pub count: u64,
}

/// The sends and receives of one channel. A send is kept as its event's position and site (its
/// number is read from the trace when needed): a channel keeps 40 bytes per message, not 56.
#[derive(Default)]
struct Channel {
    /// Each receive, with what it did: the check meets them in happened-before order, which
    /// is not the trace's, so it keeps them rather than looking each up again.
    receives: Vec<(EventRef, Op)>,
    /// Per sending process (dense index), the indexes and sites of its sends in program order.
    chains: Vec<(u32, Vec<(u32, SiteId)>)>,
    /// Whether each chain's sends are numbered in increasing order, noted as they are added.
    numbering: Vec<Numbering>,
}

/// Whether a chain's message numbers increase, kept while the chain is built so that nothing
/// reads its sends again for it.
#[derive(Clone, Copy)]
struct Numbering {
    /// The number of the last send added (none for a socket's: sockets number their writes in
    /// the trace's pairing instead).
    last: Option<u64>,
    increasing: bool,
    /// A send was taken back: the order is checked again from the trace.
    recheck: bool,
}

impl Channel {
    /// Adds send `k` of process `p`, numbered `seq`, at `site`, to `p`'s chain (made on its
    /// first send).
    fn push(&mut self, p: u32, k: u32, site: SiteId, seq: Option<u64>) {
        let c = match self.chains.last() {
            Some((q, _)) if *q == p => self.chains.len() - 1,
            _ => match self.chains.iter().position(|(q, _)| *q == p) {
                Some(c) => c,
                None => {
                    self.chains.push((p, Vec::new()));
                    self.numbering.push(Numbering {
                        last: None,
                        increasing: true,
                        recheck: false,
                    });
                    self.chains.len() - 1
                }
            },
        };
        let chain = &mut self.chains[c].1;
        let numbering = &mut self.numbering[c];
        numbering.increasing &= chain.is_empty() || numbering.last < seq;
        numbering.last = seq;
        chain.push((k, site));
    }

    /// Takes back the send of message `seq` by `p`, which found the receiver gone
    /// (`Undelivered`, logged right after its send).
    fn undeliver<S: EventStore>(&mut self, trace: &Trace<S>, p: u32, seq: u64) {
        if let Some(c) = self.chains.iter().position(|(q, _)| *q == p)
            && let Some(i) = self.chains[c]
                .1
                .iter()
                .rposition(|&(k, _)| send_seq(trace, EventRef::new(p, k)) == Some(seq))
        {
            self.chains[c].1.remove(i);
            self.numbering[c].recheck = true;
        }
    }
}

/// The message number of send `e`.
fn send_seq<S: EventStore>(trace: &Trace<S>, e: EventRef) -> Option<u64> {
    if let Op::Send { seq, .. } = trace.event(e).op {
        Some(seq)
    } else {
        None
    }
}

/// The write (or datagram) number of socket send `e`.
fn net_seq<S: EventStore>(trace: &Trace<S>, e: EventRef) -> Option<u64> {
    if let Op::NetWrite { seq, .. } = trace.event(e).op {
        Some(seq)
    } else {
        None
    }
}

/// The sends and receives of sockets, as channels: a stream's on its writing end, a datagram
/// socket's on the receiving socket, gathered in the same pass as the channels'.
#[derive(Default)]
struct Sockets {
    /// Each socket send by `(socket, seq)`.
    sends: FastMap<(ObjIdx, u64), EventRef>,
    /// Where each received datagram went: `(sending socket, seq)` to the receiving socket.
    delivered: FastMap<(ObjIdx, u64), ObjIdx>,
    /// Every write and datagram sent, in process order: which channel a datagram joins is
    /// known once every receipt is.
    writes: Vec<(EventRef, SiteId, ObjIdx, u64, bool)>,
}

impl Sockets {
    fn write(&mut self, at: EventRef, site: SiteId, socket: ObjIdx, seq: u64, datagram: bool) {
        self.sends.insert((socket, seq), at);
        self.writes.push((at, site, socket, seq, datagram));
    }

    /// The channel of a read of bytes the recording holds the writer of, or of a datagram
    /// received from a recorded socket: the writing end of a stream, the receiving socket.
    fn read(&mut self, socket: ObjIdx, peer: ObjIdx, seq: u64, datagram: bool) -> ObjIdx {
        if datagram {
            self.delivered.insert((peer, seq), socket);
            socket
        } else {
            peer
        }
    }

    /// Puts each write on its channel's chains; returns each socket send by `(socket, seq)`.
    fn finish(self, channels: &mut [Channel]) -> FastMap<(ObjIdx, u64), EventRef> {
        for (at, site, socket, seq, datagram) in self.writes {
            let channel = if datagram {
                match self.delivered.get(&(socket, seq)) {
                    Some(&to) => to,
                    None => continue,
                }
            } else {
                socket
            };
            channels[channel as usize].push(at.process, at.index, site, None);
        }
        self.sends
    }
}

/// Finds the message races of a trace.
pub fn message_races<S: EventStore>(trace: &Trace<S>, clocks: &Clocks) -> Vec<MessageRace> {
    let counted = progress::pass("finding the message races", trace.event_count());
    Candidates::of(trace, counted).races(trace, clocks)
}

/// Every channel's sends and receives, gathered without the clocks: a report can gather them
/// while the clocks are being computed.
pub(crate) struct Candidates {
    /// Indexed by object: one slot per object is cheaper than a hash lookup per message.
    channels: Vec<Channel>,
    /// Each socket send by `(socket, seq)`.
    socket_sends: FastMap<(ObjIdx, u64), EventRef>,
}

impl Candidates {
    /// The sends and receives of `trace`, by channel; each event gone through is `counted`.
    pub(crate) fn of<S: EventStore>(
        trace: &Trace<S>,
        mut counted: progress::Counter,
    ) -> Candidates {
        let mut channels: Vec<Channel> = Vec::new();
        channels.resize_with(trace.objects().len(), Channel::default);
        let mut sockets = Sockets::default();
        for (p, proc) in trace.processes().iter().enumerate() {
            let p = p as u32;
            for (k, ev) in proc.events.iter().enumerate() {
                counted.add(1);
                match ev.op.kind().class() {
                    Class::Message | Class::Socket => match ev.op {
                        Op::Send { channel, seq } => {
                            channels[channel as usize].push(p, k as u32, ev.site, Some(seq));
                        }
                        Op::Undelivered { channel, seq } => {
                            channels[channel as usize].undeliver(trace, p, seq);
                        }
                        Op::Recv { channel, .. } => {
                            channels[channel as usize]
                                .receives
                                .push((EventRef::new(p, k as u32), ev.op));
                        }
                        Op::NetWrite {
                            socket,
                            seq,
                            datagram,
                        } => sockets.write(
                            EventRef::new(p, k as u32),
                            ev.site,
                            socket,
                            seq,
                            datagram,
                        ),
                        Op::NetRead {
                            socket,
                            peer,
                            seq,
                            datagram,
                            end: false,
                        } if peer != NO_OBJECT => {
                            let channel = sockets.read(socket, peer, seq, datagram);
                            channels[channel as usize]
                                .receives
                                .push((EventRef::new(p, k as u32), ev.op));
                        }
                        // A receive that got nothing, a select's choice, a socket made or failed,
                        // a read of the end or of a writer outside the recording: no message.
                        _ => {}
                    },
                    Class::Lifecycle
                    | Class::Create
                    | Class::Lock
                    | Class::Semaphore
                    | Class::Atomic
                    | Class::Input
                    | Class::Attempt
                    | Class::Eblock
                    | Class::Mark
                    | Class::Wait => {}
                }
            }
        }
        let socket_sends = sockets.finish(&mut channels);
        // A channel with one sender has no message races: what it holds can go now, while
        // the clocks are still being computed.
        for channel in &mut channels {
            if channel.chains.len() < 2 {
                *channel = Channel::default();
            }
        }
        Candidates {
            channels,
            socket_sends,
        }
    }

    /// The message races among these sends and receives, with the clocks of `trace`, each
    /// pair of send sites once.
    pub(crate) fn races<S: EventStore>(
        self,
        trace: &Trace<S>,
        clocks: &Clocks,
    ) -> Vec<MessageRace> {
        let mut races: Vec<MessageRace> = Vec::new();
        let mut index: FastMap<(ObjIdx, SiteId, SiteId), usize> = FastMap::default();
        self.each_race(trace, clocks, |found| {
            let key = (
                found.channel,
                found.received_site.min(found.other_site),
                found.received_site.max(found.other_site),
            );
            match index.get(&key) {
                Some(&at) => races[at].count += 1,
                None => {
                    index.insert(key, races.len());
                    races.push(MessageRace {
                        channel: found.channel,
                        received: found.received,
                        other: found.other,
                        receive: found.receive,
                        count: 1,
                    });
                }
            }
        });
        races
    }

    /// Calls `found` for every (receive, competing send) pair: at each receive, the oldest
    /// message of each other sending process that was still in the channel, if it races.
    fn each_race<S: EventStore>(
        self,
        trace: &Trace<S>,
        clocks: &Clocks,
        mut found: impl FnMut(RaceAt),
    ) {
        let Candidates {
            mut channels,
            socket_sends,
        } = self;
        for (channel, ch) in channels.iter_mut().enumerate() {
            let channel = channel as ObjIdx;
            if ch.chains.len() < 2 {
                continue;
            }
            order_receives(&mut ch.receives, clocks);
            let chains = &ch.chains;
            let seq_at =
                |c: usize, h: usize| send_seq(trace, EventRef::new(chains[c].0, chains[c].1[h].0));
            // A process numbers its sends on a channel in increasing order, so its chain is found
            // by binary search; a chain that is not (an inconsistent log) is searched in full.
            let increasing: Vec<bool> = (0..chains.len())
                .map(|c| match ch.numbering[c] {
                    Numbering { recheck: true, .. } => {
                        (1..chains[c].1.len()).all(|h| seq_at(c, h - 1) < seq_at(c, h))
                    }
                    Numbering { increasing, .. } => increasing,
                })
                .collect();
            let find_in = |c: usize, seq: u64| {
                let len = chains[c].1.len();
                if increasing[c] {
                    let (mut lo, mut hi) = (0, len);
                    while lo < hi {
                        let mid = lo + (hi - lo) / 2;
                        if seq_at(c, mid) < Some(seq) {
                            lo = mid + 1;
                        } else {
                            hi = mid;
                        }
                    }
                    (lo < len && seq_at(c, lo) == Some(seq)).then_some(lo)
                } else {
                    (0..len).find(|&h| seq_at(c, h) == Some(seq))
                }
            };
            // Whether each send of each chain was received by the receives met so far.
            let mut received: Vec<Vec<bool>> = chains
                .iter()
                .map(|(_, chain)| vec![false; chain.len()])
                .collect();
            // The receive names its sender, and a sender's messages arrive in the order it sent
            // them: the send a receive took is almost always the one after its sender's previous
            // message, found without a search.
            let mut expected = vec![0usize; chains.len()];
            let mut heads = vec![0usize; chains.len()];
            for &(r, op) in &ch.receives {
                let send = match op {
                    Op::Recv { sender, seq, .. } => {
                        let hinted = trace
                            .index_of(sender)
                            .and_then(|q| chains.iter().position(|(p, _)| *p == q));
                        hinted
                            .and_then(|c| {
                                let h = expected[c];
                                if h < chains[c].1.len() && seq_at(c, h) == Some(seq) {
                                    Some((c, h))
                                } else {
                                    find_in(c, seq).map(|h| (c, h))
                                }
                            })
                            .or_else(|| {
                                (0..chains.len()).find_map(|c| find_in(c, seq).map(|h| (c, h)))
                            })
                    }
                    // A socket send is found by its number; a chain lists its process's sends in
                    // program order.
                    Op::NetRead {
                        peer,
                        seq,
                        datagram,
                        ..
                    } => socket_sends.get(&(peer, seq)).and_then(|s| {
                        let c = chains.iter().position(|(p, _)| *p == s.process)?;
                        let h = chains[c]
                            .1
                            .binary_search_by_key(&s.index, |&(k, _)| k)
                            .ok()?;
                        if !datagram {
                            // The stream's earlier writes, whoever made them, were read by now.
                            for (c, (q, chain)) in chains.iter().enumerate() {
                                let mut h = heads[c];
                                while h < chain.len()
                                    && net_seq(trace, EventRef::new(*q, chain[h].0)) < Some(seq)
                                {
                                    received[c][h] = true;
                                    h += 1;
                                }
                            }
                        }
                        Some((c, h))
                    }),
                    _ => None,
                };
                let Some((sc, sh)) = send else {
                    continue;
                };
                expected[sc] = sh + 1;
                received[sc][sh] = true;
                let (s, sa) = (
                    EventRef::new(chains[sc].0, chains[sc].1[sh].0),
                    chains[sc].1[sh].1,
                );
                for (c, (q, chain)) in chains.iter().enumerate() {
                    let head = &mut heads[c];
                    while *head < chain.len() && received[c][*head] {
                        *head += 1;
                    }
                    if *q == s.process || *head >= chain.len() {
                        continue;
                    }
                    let (other, sb) = (EventRef::new(*q, chain[*head].0), chain[*head].1);
                    let races_here = !clocks.happened_before(s, other)
                        && !clocks.happened_before(other, s)
                        && !clocks.happened_before(r, other);
                    if races_here {
                        found(RaceAt {
                            channel,
                            receive: r,
                            received: s,
                            received_site: sa,
                            other,
                            other_site: sb,
                        });
                    }
                }
            }
        }
    }
}

/// One receive and a send whose message it could have taken instead of the one it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RaceAt {
    /// The channel (a stream's writing end, a datagram socket).
    pub(crate) channel: ObjIdx,
    /// The receive.
    pub(crate) receive: EventRef,
    /// The send whose message it took.
    pub(crate) received: EventRef,
    received_site: SiteId,
    /// The competing send.
    pub(crate) other: EventRef,
    other_site: SiteId,
}

/// Every competing send at each of `receives`, by receive: not one per pair of send sites, as
/// [`message_races`] reports them, but each the receive could have taken.
pub(crate) fn races_at<S: EventStore>(
    trace: &Trace<S>,
    clocks: &Clocks,
    receives: &[EventRef],
) -> Vec<RaceAt> {
    let mut at = Vec::new();
    if receives.is_empty() {
        return at;
    }
    let wanted: crate::fasthash::FastSet<EventRef> = receives.iter().copied().collect();
    let counted = progress::pass("finding the message races", trace.event_count());
    Candidates::of(trace, counted).each_race(trace, clocks, |race| {
        if wanted.contains(&race.receive) {
            at.push(race);
        }
    });
    at
}

/// Receives on one channel are ordered by happened-before (one receiver, moved between
/// processes only along edges); put them in that order.
fn order_receives(receives: &mut [(EventRef, Op)], clocks: &Clocks) {
    let one_process = receives
        .windows(2)
        .all(|w| w[0].0.process == w[1].0.process);
    if one_process {
        return;
    }
    // The sum of a clock's components grows along every happened-before path: a linear
    // extension of the order.
    let mut keyed: Vec<(u64, EventRef, Op)> = receives
        .iter()
        .map(|&(r, op)| {
            let sum = (0..clocks.width() as u32)
                .map(|q| u64::from(clocks.component(r, q)))
                .sum();
            (sum, r, op)
        })
        .collect();
    keyed.sort_unstable_by_key(|&(sum, r, _)| (sum, r));
    for (slot, (_, r, op)) in receives.iter_mut().zip(keyed) {
        *slot = (r, op);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{self, Shape};

    /// The three conditions of the module docs, checked literally: for every receive (in
    /// program order: each synthetic channel has one receiver), every other sending process's
    /// oldest send not taken by this or an earlier receive.
    fn by_definition(trace: &Trace, clocks: &Clocks) -> Vec<MessageRace> {
        let all: Vec<(EventRef, Op)> = trace
            .processes()
            .iter()
            .enumerate()
            .flat_map(|(p, proc)| {
                proc.events
                    .iter()
                    .enumerate()
                    .map(move |(k, ev)| (EventRef::new(p as u32, k as u32), ev.op))
            })
            .collect();
        let mut races: Vec<MessageRace> = Vec::new();
        for channel in 0..trace.objects().len() as ObjIdx {
            let sends: Vec<(EventRef, u64)> = all
                .iter()
                .filter_map(|&(e, op)| {
                    if let Op::Send { channel: c, seq } = op
                        && c == channel
                    {
                        Some((e, seq))
                    } else {
                        None
                    }
                })
                .collect();
            let receives: Vec<(EventRef, u64)> = all
                .iter()
                .filter_map(|&(e, op)| {
                    if let Op::Recv {
                        channel: c, seq, ..
                    } = op
                        && c == channel
                    {
                        Some((e, seq))
                    } else {
                        None
                    }
                })
                .collect();
            let mut taken: Vec<EventRef> = Vec::new();
            for &(r, seq) in &receives {
                let Some(&(s, _)) = sends.iter().find(|&&(_, q)| q == seq) else {
                    continue;
                };
                taken.push(s);
                for q in 0..trace.processes().len() as u32 {
                    if q == s.process {
                        continue;
                    }
                    let Some(&(other, _)) = sends
                        .iter()
                        .find(|&&(e, _)| e.process == q && !taken.contains(&e))
                    else {
                        continue;
                    };
                    if !clocks.concurrent(s, other) || clocks.happened_before(r, other) {
                        continue;
                    }
                    let (sa, sb) = (trace.event(s).site, trace.event(other).site);
                    let same = |m: &MessageRace| {
                        let (ma, mb) = (trace.event(m.received).site, trace.event(m.other).site);
                        m.channel == channel && ma.min(mb) == sa.min(sb) && ma.max(mb) == sa.max(sb)
                    };
                    match races.iter_mut().find(|m| same(m)) {
                        Some(m) => m.count += 1,
                        None => races.push(MessageRace {
                            channel,
                            received: s,
                            other,
                            receive: r,
                            count: 1,
                        }),
                    }
                }
            }
        }
        races
    }

    /// Processes `names`, and socket sends and receipts pushed as the trace would hold them
    /// after pairing; the races found.
    fn socket_races(
        build: impl FnOnce(&mut crate::trace::TraceBuilder, &[u32]),
        names: &[&str],
    ) -> Vec<MessageRace> {
        let mut b = Trace::builder();
        let ps: Vec<u32> = names
            .iter()
            .enumerate()
            .map(|(i, n)| b.add_process(ppd_formats::ProcessId(i as u32), n, None))
            .collect();
        build(&mut b, &ps);
        let trace = b.build();
        let clocks = Clocks::compute(&trace);
        message_races(&trace, &clocks)
    }

    fn write(b: &mut crate::trace::TraceBuilder, p: u32, socket: ObjIdx, seq: u64, datagram: bool) {
        b.push(
            p,
            Op::NetWrite {
                socket,
                seq,
                datagram,
            },
            crate::trace::NO_SITE,
        );
    }

    fn read(
        b: &mut crate::trace::TraceBuilder,
        p: u32,
        at: ObjIdx,
        from: (ObjIdx, u64),
        datagram: bool,
    ) {
        b.push(
            p,
            Op::NetRead {
                socket: at,
                peer: from.0,
                seq: from.1,
                datagram,
                end: false,
            },
            crate::trace::NO_SITE,
        );
    }

    fn socket(b: &mut crate::trace::TraceBuilder, n: u32) -> ObjIdx {
        b.object(ppd_formats::ObjectId::new(ppd_formats::ProcessId(9), n))
    }

    #[test]
    fn datagrams_from_two_senders_race_at_the_receiving_socket() {
        let races = socket_races(
            |b, p| {
                let (sa, sb, r) = (socket(b, 0), socket(b, 1), socket(b, 2));
                write(b, p[0], sa, 1, true);
                write(b, p[1], sb, 1, true);
                read(b, p[2], r, (sa, 1), true);
                read(b, p[2], r, (sb, 1), true);
            },
            &["a", "b", "c"],
        );
        assert_eq!(races.len(), 1, "{races:?}");
        assert_eq!(races[0].channel, 2);
        assert_eq!((races[0].received.process, races[0].other.process), (0, 1));
    }

    #[test]
    fn a_stream_with_one_writer_races_on_nothing_however_its_reads_cut_it() {
        let races = socket_races(
            |b, p| {
                let (s, r) = (socket(b, 0), socket(b, 1));
                for seq in 1..=3 {
                    write(b, p[0], s, seq, false);
                }
                read(b, p[1], r, (s, 2), false);
                read(b, p[1], r, (s, 3), false);
            },
            &["writer", "reader"],
        );
        assert_eq!(races, []);
    }

    #[test]
    fn a_stream_two_processes_write_unordered_races_unless_one_read_took_both() {
        let two_reads = socket_races(
            |b, p| {
                let (s, r) = (socket(b, 0), socket(b, 1));
                write(b, p[0], s, 1, false);
                write(b, p[1], s, 2, false);
                read(b, p[2], r, (s, 1), false);
                read(b, p[2], r, (s, 2), false);
            },
            &["a", "b", "reader"],
        );
        assert_eq!(two_reads.len(), 1, "{two_reads:?}");
        // One read holding both writes: the stream is FIFO, the earlier write was read with it.
        let one_read = socket_races(
            |b, p| {
                let (s, r) = (socket(b, 0), socket(b, 1));
                write(b, p[0], s, 1, false);
                write(b, p[1], s, 2, false);
                read(b, p[2], r, (s, 2), false);
            },
            &["a", "b", "reader"],
        );
        assert_eq!(one_read, []);
    }

    #[test]
    fn message_races_are_those_of_the_definition_on_synthetic_runs() {
        let mut found = 0;
        for seed in 0..6 {
            let trace = synth::execution(&Shape::mixed(5, 6_000), seed);
            let clocks = Clocks::compute(&trace);
            let expected = by_definition(&trace, &clocks);
            found += expected.len();
            assert_eq!(message_races(&trace, &clocks), expected, "seed {seed}");
        }
        assert!(
            found > 0,
            "the synthetic runs have message races to compare"
        );
    }
}
