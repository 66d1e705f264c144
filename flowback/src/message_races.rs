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

use crate::fasthash::FastMap;

use crate::trace::{EventRef, ObjIdx, Op, Trace};
use crate::vclock::Clocks;

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

#[derive(Default)]
struct Channel {
    receives: Vec<Receive>,
    /// Per sending process, its sends (sequence number, event) in program order.
    chains: Vec<(u32, Vec<(u64, EventRef)>)>,
}

/// A receive and the number of the message it took.
#[derive(Clone, Copy)]
struct Receive {
    event: EventRef,
    seq: u64,
}

impl Channel {
    /// The chain of process `p`, made on its first send.
    fn chain_of(&mut self, p: u32) -> &mut Vec<(u64, EventRef)> {
        let c = match self.chains.last() {
            Some((q, _)) if *q == p => self.chains.len() - 1,
            _ => match self.chains.iter().position(|(q, _)| *q == p) {
                Some(c) => c,
                None => {
                    self.chains.push((p, Vec::new()));
                    self.chains.len() - 1
                }
            },
        };
        &mut self.chains[c].1
    }

    /// Takes back the send of message `seq` by `p`, which found the receiver gone
    /// (`Undelivered`, logged right after its send).
    fn undeliver(&mut self, p: u32, seq: u64) {
        if let Some((_, chain)) = self.chains.iter_mut().find(|(q, _)| *q == p)
            && let Some(i) = chain.iter().rposition(|&(s, _)| s == seq)
        {
            chain.remove(i);
        }
    }
}

/// Finds the message races of a trace.
pub fn message_races(trace: &Trace, clocks: &Clocks) -> Vec<MessageRace> {
    // Indexed by object: one slot per object is cheaper than a hash lookup per message.
    let mut channels: Vec<Channel> = Vec::new();
    channels.resize_with(trace.objects().len(), Channel::default);
    for (p, proc) in trace.processes().iter().enumerate() {
        let p = p as u32;
        for (k, ev) in proc.events.iter().enumerate() {
            let r = EventRef::new(p, k as u32);
            match ev.op {
                Op::Send { channel, seq } => {
                    channels[channel as usize].chain_of(p).push((seq, r));
                }
                Op::Undelivered { channel, seq } => channels[channel as usize].undeliver(p, seq),
                Op::Recv { channel, seq, .. } => {
                    channels[channel as usize]
                        .receives
                        .push(Receive { event: r, seq });
                }
                Op::Start { .. }
                | Op::Spawn { .. }
                | Op::Join { .. }
                | Op::Exit
                | Op::Panic { .. }
                | Op::Create { .. }
                | Op::RecvNone { .. }
                | Op::Select { .. }
                | Op::Lock { .. }
                | Op::Unlock { .. }
                | Op::SemAcquire { .. }
                | Op::SemRelease { .. }
                | Op::Atomic { .. }
                | Op::Clock
                | Op::Random
                | Op::Answer { .. }
                | Op::EblockEnter { .. }
                | Op::EblockExit { .. }
                | Op::Mark { .. }
                | Op::Blocked { .. }
                | Op::JoinBlocked { .. }
                | Op::Sleep { .. }
                | Op::Outcome { .. } => {}
            }
        }
    }
    let mut races = Vec::new();
    let mut index: FastMap<(ObjIdx, u32, u32), usize> = FastMap::default();
    for (channel, ch) in channels.iter_mut().enumerate() {
        let channel = channel as ObjIdx;
        if ch.chains.len() < 2 {
            continue;
        }
        order_receives(&mut ch.receives, clocks);
        // The send each receive took, and where each send of each chain was first received
        // (`usize::MAX`: never).
        let mut received_at: Vec<Vec<usize>> = ch
            .chains
            .iter()
            .map(|(_, chain)| vec![usize::MAX; chain.len()])
            .collect();
        // A process numbers its sends on a channel in increasing order, so its chain is found
        // by binary search; a chain that is not (an inconsistent log) is searched in full.
        let increasing: Vec<bool> = ch
            .chains
            .iter()
            .map(|(_, chain)| chain.windows(2).all(|w| w[0].0 < w[1].0))
            .collect();
        let find_in = |c: usize, seq: u64| {
            let chain = &ch.chains[c].1;
            if increasing[c] {
                chain.binary_search_by_key(&seq, |&(s, _)| s).ok()
            } else {
                chain.iter().position(|&(s, _)| s == seq)
            }
        };
        // The receive names its sender, and a sender's messages arrive in the order it sent
        // them: the send a receive took is almost always the one after its sender's previous
        // message, found without a search.
        let mut expected = vec![0usize; ch.chains.len()];
        let mut taken: Vec<Option<EventRef>> = Vec::with_capacity(ch.receives.len());
        for (i, rec) in ch.receives.iter().enumerate() {
            let sender = if let Op::Recv { sender, .. } = trace.event(rec.event).op {
                trace.index_of(sender)
            } else {
                None
            };
            let hinted = sender.and_then(|q| ch.chains.iter().position(|(p, _)| *p == q));
            let send = hinted
                .and_then(|c| {
                    let h = expected[c];
                    match ch.chains[c].1.get(h) {
                        Some(&(s, _)) if s == rec.seq => Some((c, h)),
                        _ => find_in(c, rec.seq).map(|h| (c, h)),
                    }
                })
                .or_else(|| (0..ch.chains.len()).find_map(|c| find_in(c, rec.seq).map(|h| (c, h))));
            if let Some((c, h)) = send {
                expected[c] = h + 1;
                let at = &mut received_at[c][h];
                *at = (*at).min(i);
            }
            taken.push(send.map(|(c, h)| ch.chains[c].1[h].1));
        }
        let mut heads = vec![0usize; ch.chains.len()];
        for (i, (rec, s)) in ch.receives.iter().zip(&taken).enumerate() {
            let r = rec.event;
            let Some(s) = *s else {
                continue;
            };
            for (c, (q, chain)) in ch.chains.iter().enumerate() {
                let head = &mut heads[c];
                while *head < chain.len() && received_at[c][*head] <= i {
                    *head += 1;
                }
                if *q == s.process || *head >= chain.len() {
                    continue;
                }
                let other = chain[*head].1;
                let races_here = !clocks.happened_before(s, other)
                    && !clocks.happened_before(other, s)
                    && !clocks.happened_before(r, other);
                if races_here {
                    let sa = trace.event(s).site;
                    let sb = trace.event(other).site;
                    let key = (channel, sa.min(sb), sa.max(sb));
                    match index.get(&key) {
                        Some(&at) => {
                            let race: &mut MessageRace = &mut races[at];
                            race.count += 1;
                        }
                        None => {
                            index.insert(key, races.len());
                            races.push(MessageRace {
                                channel,
                                received: s,
                                other,
                                receive: r,
                                count: 1,
                            });
                        }
                    }
                }
            }
        }
    }
    races
}

/// Receives on one channel are ordered by happened-before (one receiver, moved between
/// processes only along edges); put them in that order.
fn order_receives(receives: &mut [Receive], clocks: &Clocks) {
    let one_process = receives
        .windows(2)
        .all(|w| w[0].event.process == w[1].event.process);
    if one_process {
        return;
    }
    // The sum of a clock's components grows along every happened-before path: a linear
    // extension of the order.
    let mut keyed: Vec<(u64, Receive)> = receives
        .iter()
        .map(|&rec| {
            let sum = (0..clocks.width() as u32)
                .map(|q| u64::from(clocks.component(rec.event, q)))
                .sum();
            (sum, rec)
        })
        .collect();
    keyed.sort_by_key(|&(sum, rec)| (sum, rec.event));
    for (slot, (_, item)) in receives.iter_mut().zip(keyed) {
        *slot = item;
    }
}
