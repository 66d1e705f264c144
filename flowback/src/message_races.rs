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

use crate::fasthash::{FastMap, FastSet};

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
    receives: Vec<(EventRef, u64)>,
    /// Per sending process, its sends (sequence number, event) in program order.
    chains: Vec<(u32, Vec<(u64, EventRef)>)>,
}

/// Finds the message races of a trace.
pub fn message_races(trace: &Trace, clocks: &Clocks) -> Vec<MessageRace> {
    // Indexed by object: one slot per object is cheaper than a hash lookup per message.
    let mut channels: Vec<Channel> = Vec::new();
    channels.resize_with(trace.objects().len(), Channel::default);
    let undelivered: FastSet<(ObjIdx, u64)> = trace
        .processes()
        .iter()
        .flat_map(|p| p.events.iter())
        .filter_map(|e| match e.op {
            Op::Undelivered { channel, seq } => Some((channel, seq)),
            Op::Start { .. }
            | Op::Spawn { .. }
            | Op::Join { .. }
            | Op::Exit
            | Op::Panic { .. }
            | Op::Create { .. }
            | Op::Send { .. }
            | Op::Recv { .. }
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
            | Op::Outcome { .. }
            | Op::RwAcquire { .. }
            | Op::RwRelease { .. } => None,
        })
        .collect();
    for (p, proc) in trace.processes().iter().enumerate() {
        for (k, ev) in proc.events.iter().enumerate() {
            let r = EventRef::new(p as u32, k as u32);
            match ev.op {
                Op::Send { channel, seq }
                    if undelivered.is_empty() || !undelivered.contains(&(channel, seq)) =>
                {
                    let ch = &mut channels[channel as usize];
                    let c = match ch.chains.last() {
                        Some((q, _)) if *q == p as u32 => ch.chains.len() - 1,
                        _ => match ch.chains.iter().position(|(q, _)| *q == p as u32) {
                            Some(c) => c,
                            None => {
                                ch.chains.push((p as u32, Vec::new()));
                                ch.chains.len() - 1
                            }
                        },
                    };
                    ch.chains[c].1.push((seq, r));
                }
                Op::Recv { channel, seq, .. } => {
                    channels[channel as usize].receives.push((r, seq));
                }
                Op::Start { .. }
                | Op::Spawn { .. }
                | Op::Join { .. }
                | Op::Exit
                | Op::Panic { .. }
                | Op::Create { .. }
                | Op::Send { .. }
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
                | Op::Undelivered { .. }
                | Op::JoinBlocked { .. }
                | Op::Sleep { .. }
                | Op::Outcome { .. }
                | Op::RwAcquire { .. }
                | Op::RwRelease { .. } => {}
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
        let find = |seq: u64| {
            ch.chains.iter().enumerate().find_map(|(c, (_, chain))| {
                let h = if increasing[c] {
                    chain.binary_search_by_key(&seq, |&(s, _)| s).ok()
                } else {
                    chain.iter().position(|&(s, _)| s == seq)
                };
                h.map(|h| (chain[h].1, c, h))
            })
        };
        let mut taken: Vec<Option<EventRef>> = Vec::with_capacity(ch.receives.len());
        for (i, &(_, seq)) in ch.receives.iter().enumerate() {
            let send = find(seq);
            if let Some((_, c, h)) = send {
                let at = &mut received_at[c][h];
                *at = (*at).min(i);
            }
            taken.push(send.map(|(s, _, _)| s));
        }
        let mut heads = vec![0usize; ch.chains.len()];
        for (i, (&(r, _), s)) in ch.receives.iter().zip(&taken).enumerate() {
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
fn order_receives(receives: &mut [(EventRef, u64)], clocks: &Clocks) {
    let one_process = receives
        .windows(2)
        .all(|w| w[0].0.process == w[1].0.process);
    if one_process {
        return;
    }
    // The sum of a clock's components grows along every happened-before path: a linear
    // extension of the order.
    let mut keyed: Vec<(u64, (EventRef, u64))> = receives
        .iter()
        .map(|&(r, seq)| {
            let sum = (0..clocks.width() as u32)
                .map(|q| u64::from(clocks.component(r, q)))
                .sum();
            (sum, (r, seq))
        })
        .collect();
    keyed.sort_by_key(|&(sum, (r, _))| (sum, r));
    for (slot, (_, item)) in receives.iter_mut().zip(keyed) {
        *slot = item;
    }
}
