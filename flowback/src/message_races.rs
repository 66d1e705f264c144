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
    receives: Vec<(EventRef, u64)>,
    /// Per sending process, its sends in program order.
    chains: Vec<(u32, Vec<EventRef>)>,
}

/// Finds the message races of a trace.
pub fn message_races(trace: &Trace, clocks: &Clocks) -> Vec<MessageRace> {
    let mut channels: FastMap<ObjIdx, Channel> = FastMap::default();
    let mut sends: FastMap<(ObjIdx, u64), EventRef> = FastMap::default();
    let undelivered: std::collections::HashSet<(ObjIdx, u64)> = trace
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
            | Op::EblockEnter { .. }
            | Op::EblockExit { .. }
            | Op::Mark { .. }
            | Op::Blocked { .. }
            | Op::JoinBlocked { .. }
            | Op::Sleep { .. } => None,
        })
        .collect();
    for (p, proc) in trace.processes().iter().enumerate() {
        for (k, ev) in proc.events.iter().enumerate() {
            let r = EventRef::new(p as u32, k as u32);
            match ev.op {
                Op::Send { channel, seq } if !undelivered.contains(&(channel, seq)) => {
                    sends.insert((channel, seq), r);
                    let ch = channels.entry(channel).or_default();
                    match ch.chains.last_mut() {
                        Some((q, chain)) if *q == p as u32 => chain.push(r),
                        _ => match ch.chains.iter_mut().find(|(q, _)| *q == p as u32) {
                            Some((_, chain)) => chain.push(r),
                            None => ch.chains.push((p as u32, vec![r])),
                        },
                    }
                }
                Op::Recv { channel, seq, .. } => {
                    channels.entry(channel).or_default().receives.push((r, seq));
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
                | Op::EblockEnter { .. }
                | Op::EblockExit { .. }
                | Op::Mark { .. }
                | Op::Blocked { .. }
                | Op::Undelivered { .. }
                | Op::JoinBlocked { .. }
                | Op::Sleep { .. } => {}
            }
        }
    }
    let mut ids: Vec<ObjIdx> = channels.keys().copied().collect();
    ids.sort_unstable();
    let mut races = Vec::new();
    let mut index: FastMap<(ObjIdx, u32, u32), usize> = FastMap::default();
    for channel in ids {
        let ch = channels.get_mut(&channel).expect("listed above");
        if ch.chains.len() < 2 {
            continue;
        }
        order_receives(&mut ch.receives, clocks);
        // Where each send was received.
        let mut received_at: FastMap<EventRef, usize> = FastMap::default();
        for (i, &(_, seq)) in ch.receives.iter().enumerate() {
            if let Some(&s) = sends.get(&(channel, seq)) {
                received_at.entry(s).or_insert(i);
            }
        }
        let mut heads = vec![0usize; ch.chains.len()];
        for (i, &(r, seq)) in ch.receives.iter().enumerate() {
            let Some(&s) = sends.get(&(channel, seq)) else {
                continue;
            };
            for (c, (q, chain)) in ch.chains.iter().enumerate() {
                let head = &mut heads[c];
                while *head < chain.len() && received_at.get(&chain[*head]).is_some_and(|&j| j <= i)
                {
                    *head += 1;
                }
                if *q == s.process || *head >= chain.len() {
                    continue;
                }
                let other = chain[*head];
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
