//! The races on a why-chain: the receives of the chain that another run, with the same
//! happened-before order, could have given another message.
//!
//! A server's every receive races when several clients send to it; what matters to a question
//! is the receives its answer went through. Each is checked as `ppd races` checks receives
//! (`message_races`: a concurrent send whose message was still in the channel and did not
//! happen after the receive), here for every competing send, not once per pair of send sites.
//! A receive that raced got its value from the order the processes happened to run in: change
//! that order and the chain, from there up, would have another value.
//!
//! Lock-order and data races are not marked: a lock acquisition's value is the last holder's
//! whatever order they ran in, and which holder was last is the order itself, so every
//! contended lock would be marked; a data race on an atomic is reported by `ppd races` per
//! pair of sites, which says nothing about the one access on a chain.

use serde::Serialize;

use ppd_formats::ProcessId;

use super::answer::Answer;
use crate::analysis::Analysis;
use crate::message_races::races_at;
use crate::trace::{EventRef, Op};

/// A message a receive on the chain could have taken instead of the one it took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RaceOnChain {
    /// The step of the receive.
    pub step: usize,
    /// The channel or socket, by its name.
    pub channel: String,
    /// The process whose send competed.
    pub process: String,
    /// The competing message's number on its channel (a socket write's number on its stream).
    pub message: Option<u64>,
    /// Where it was sent.
    pub file: String,
    /// Its line.
    pub line: u32,
}

impl RaceOnChain {
    /// The competing message: `message N`, or `a message` when its number is unknown.
    pub fn message_label(&self) -> String {
        self.message
            .map_or_else(|| "a message".to_owned(), |n| format!("message {n}"))
    }

    /// The line `why` prints under the receive.
    pub fn describe(&self) -> String {
        let message = self.message_label();
        let at = if self.file.is_empty() {
            String::new()
        } else {
            format!(", sent at {}:{}", self.file, self.line)
        };
        format!(
            "message race: could have received {message} from {}{at} instead",
            self.process
        )
    }
}

/// The receives of `answer`'s chain that raced, each with every message it could have taken
/// instead, in the order of the chain's steps.
pub fn on_chain(analysis: &Analysis, answer: &Answer) -> Vec<RaceOnChain> {
    let trace = &analysis.trace;
    let receives: Vec<(usize, EventRef)> = answer
        .receives()
        .filter_map(|s| {
            let p = trace.index_of(ProcessId(s.pid))?;
            let k = u32::try_from(s.event?).ok()?;
            Some((s.id, EventRef::new(p, k)))
        })
        .collect();
    let refs: Vec<EventRef> = receives.iter().map(|&(_, r)| r).collect();
    let found = races_at(trace, &analysis.clocks, &refs);
    let mut races = Vec::new();
    for &(step, receive) in &receives {
        for race in found.iter().filter(|r| r.receive == receive) {
            let other = trace.event(race.other);
            let site = trace.site(other.site);
            races.push(RaceOnChain {
                step,
                channel: trace.object(race.channel).label(),
                process: trace.process(race.other.process).name.clone(),
                message: match other.op {
                    Op::Send { seq, .. } | Op::NetWrite { seq, .. } => Some(seq),
                    _ => None,
                },
                file: site.map(|s| s.file.clone()).unwrap_or_default(),
                line: site.map_or(0, |s| s.line),
            });
        }
    }
    races
}
