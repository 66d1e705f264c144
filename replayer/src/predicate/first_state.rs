//! The first global state of a predicate, decided from the events at which its components
//! hold: the global debugger's half of Manabe & Imase's split when a predicate's processes
//! are in several OS processes.
//!
//! Each node's local controllers replay their node alone and report every event at which one
//! of the predicate's components holds (history mode); the global debugger knows the
//! happened-before of the whole run, socket edges between the nodes included, as a vector
//! clock per event. From those alone it decides where the run first satisfies the predicate,
//! and the nodes are then driven to that cut. Inside one OS process Algorithm 1 finds the same
//! state online, with control messages (`local::control`); here the state is decided before
//! the halting replay, which is what lets each node replay from its own logs without waiting
//! for the others.
//!
//! - **Disjunctive** (Manabe & Imase §3.3): the least consistent cut containing a satisfying
//!   event is its vector clock; the first states are the minimal ones, and the one with the
//!   fewest events is taken (fewest events is itself minimal: a smaller clock has a smaller
//!   sum), as `--first` does inside one node.
//! - **Conjunctive** (§3.2) and **simultaneous** (Spezialetti & Gupta's stable states): each
//!   process of the predicate must be in a state where all its components hold, in one
//!   consistent cut. Candidates are advanced as Garg & Waldecker's weak conjunctive predicate
//!   detection does: a candidate another candidate depends on a later state of is too early
//!   and is replaced by its process's next. The result is the least such cut (the satisfying
//!   cuts of a conjunction are closed under meet). Under `==` the reported states are those
//!   inside each stable interval, so the same search finds the first state all hold at once.
//! - **Linked** (Miller & Choi §3.4): an event of the last stage preceded, through a chain of
//!   happened-before, by an event of each earlier stage; the first (fewest events) is taken.
//!   Only the earliest event of each process in a stage matters to the next stage: a later one
//!   precedes nothing the earliest does not.

use super::resolve::Combination;

/// A state of one process at which components of the predicate hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Satisfying {
    /// The process, as an index into the vector clocks.
    pub process: usize,
    /// The state: after this many events of the process (at least 1).
    pub events: u64,
    /// The components that hold there.
    pub components: Vec<usize>,
    /// Events of each process in the causal past of the state, its own included
    /// (`vclock[process] == events`): the least consistent cut that contains it.
    pub vclock: Vec<u64>,
}

/// Where the predicate first holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstState {
    /// Events of each process in the state.
    pub cut: Vec<u64>,
    /// The states, as indices into the reported ones, at which the predicate holds there:
    /// one for a disjunctive or linked predicate, one per process for a conjunction.
    pub holding: Vec<usize>,
}

/// The first state where the predicate whose components are about `process_of` (a process
/// index per component) and combine as `combination` holds, given every state `reported`
/// where some of its components hold; `None` when it never does.
pub fn first_state(
    combination: &Combination,
    process_of: &[usize],
    reported: &[Satisfying],
) -> Option<FirstState> {
    match combination {
        Combination::Conjunctive | Combination::Simultaneous => conjunction(process_of, reported),
        Combination::Disjunctive | Combination::Linked(_) => {
            let events = events_satisfying(combination, reported)?;
            fewest_events(reported, events.into_iter())
        }
    }
}

/// Every reported event at which a disjunctive or linked predicate holds (for a linked one,
/// every event that ends a chain through its stages), as indices into `reported`, in the order
/// reported: the states `--trace` prints. `None` for a conjunction, whose states are not single
/// events.
pub fn events_satisfying(combination: &Combination, reported: &[Satisfying]) -> Option<Vec<usize>> {
    match combination {
        Combination::Disjunctive => Some((0..reported.len()).collect()),
        Combination::Linked(stages) => Some(chain_ends(stages, reported)),
        Combination::Conjunctive | Combination::Simultaneous => None,
    }
}

/// The one of `among` with the fewest events in its causal past.
fn fewest_events(
    reported: &[Satisfying],
    among: impl Iterator<Item = usize>,
) -> Option<FirstState> {
    let first = among.min_by_key(|&i| reported[i].vclock.iter().sum::<u64>())?;
    Some(FirstState {
        cut: reported[first].vclock.clone(),
        holding: vec![first],
    })
}

/// Every global state `--trace` prints for a conjunctive or simultaneous predicate: for each
/// reported state of one of its processes where all that process's components hold, the least
/// consistent cut where the predicate holds with that process at that state or later — the
/// state the run reaches when that process's part holds again, as Algorithm 1 halts there
/// once more after a `continue`. Distinct cuts, fewest events first; empty for any other
/// combination, or when the predicate never holds.
pub fn conjunction_states(
    combination: &Combination,
    process_of: &[usize],
    reported: &[Satisfying],
) -> Vec<FirstState> {
    if !matches!(
        combination,
        Combination::Conjunctive | Combination::Simultaneous
    ) {
        return Vec::new();
    }
    let width = reported.first().map_or(0, |s| s.vclock.len());
    let mut states: Vec<FirstState> = Vec::new();
    for s in reported {
        if !process_of.contains(&s.process) {
            continue;
        }
        let mut from = vec![0; width];
        from[s.process] = s.events;
        if let Some(state) = conjunction_from(process_of, reported, &from)
            && !states.iter().any(|known| known.cut == state.cut)
        {
            states.push(state);
        }
    }
    states.sort_by_key(|state| state.cut.iter().sum::<u64>());
    states
}

fn conjunction(process_of: &[usize], reported: &[Satisfying]) -> Option<FirstState> {
    let width = reported.first().map_or(0, |s| s.vclock.len());
    conjunction_from(process_of, reported, &vec![0; width])
}

/// The least satisfying cut of a conjunction in which each process `p` is at least at its
/// state `from[p]`.
fn conjunction_from(
    process_of: &[usize],
    reported: &[Satisfying],
    from: &[u64],
) -> Option<FirstState> {
    let mut processes: Vec<usize> = process_of.to_vec();
    processes.sort_unstable();
    processes.dedup();
    // Each process's candidates: its states where all of its components hold, in order.
    let candidates: Vec<Vec<usize>> = processes
        .iter()
        .map(|&p| {
            let mine: Vec<usize> = (0..process_of.len())
                .filter(|&c| process_of[c] == p)
                .collect();
            let at_least = from.get(p).copied().unwrap_or(0);
            let mut states: Vec<usize> = (0..reported.len())
                .filter(|&i| {
                    reported[i].process == p
                        && reported[i].events >= at_least
                        && mine.iter().all(|c| reported[i].components.contains(c))
                })
                .collect();
            states.sort_by_key(|&i| reported[i].events);
            states.dedup_by_key(|i| reported[*i].events);
            states
        })
        .collect();
    let mut at = vec![0usize; processes.len()];
    loop {
        let mut advanced = false;
        for a in 0..processes.len() {
            let state = &reported[*candidates[a].get(at[a])?];
            // Too early if another candidate's past holds a later state of this process.
            let too_early = (0..processes.len()).any(|b| {
                b != a
                    && candidates[b].get(at[b]).is_some_and(|&j| {
                        reported[j].vclock.get(processes[a]).copied().unwrap_or(0) > state.events
                    })
            });
            if too_early {
                at[a] += 1;
                advanced = true;
            }
        }
        if !advanced {
            break;
        }
    }
    let holding: Vec<usize> = (0..processes.len())
        .map(|a| candidates[a].get(at[a]).copied())
        .collect::<Option<_>>()?;
    let width = reported.first().map_or(0, |s| s.vclock.len());
    let mut cut = vec![0; width];
    for &i in &holding {
        for (slot, &n) in cut.iter_mut().zip(&reported[i].vclock) {
            *slot = (*slot).max(n);
        }
    }
    Some(FirstState { cut, holding })
}

fn chain_ends(stages: &[Vec<usize>], reported: &[Satisfying]) -> Vec<usize> {
    let in_stage =
        |i: usize, k: usize| reported[i].components.iter().any(|c| stages[k].contains(c));
    // The earliest state of each process that ends a chain through the stages so far.
    let mut earliest: Vec<Option<u64>> = Vec::new();
    let mut last = Vec::new();
    for k in 0..stages.len() {
        let reached: Vec<usize> = (0..reported.len())
            .filter(|&i| in_stage(i, k))
            .filter(|&i| {
                k == 0 || {
                    let s = &reported[i];
                    earliest.iter().enumerate().any(|(p, e)| {
                        e.is_some_and(|n| {
                            let seen = s.vclock.get(p).copied().unwrap_or(0);
                            // Strictly before: an event does not follow itself.
                            seen >= n && !(p == s.process && s.events == n)
                        })
                    })
                }
            })
            .collect();
        if reached.is_empty() {
            return Vec::new();
        }
        let width = reported[reached[0]].vclock.len();
        earliest = vec![None; width];
        for &i in &reached {
            let s = &reported[i];
            let slot = &mut earliest[s.process];
            *slot = Some(slot.map_or(s.events, |n| n.min(s.events)));
        }
        last = reached;
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A small run: `events[p]` events per process and messages `(from, to)` between events
    /// (`(process, index)`), every message from an earlier step of one global order.
    #[derive(Debug, Clone)]
    struct Run {
        events: Vec<usize>,
        messages: Vec<((usize, usize), (usize, usize))>,
    }

    fn run() -> impl Strategy<Value = Run> {
        (2usize..4, 1usize..5)
            .prop_flat_map(|(processes, per)| {
                // A global order of every event; a message goes from an earlier to a later one.
                let order = Just((0..processes * per).collect::<Vec<_>>()).prop_shuffle();
                (
                    Just(processes),
                    Just(per),
                    order,
                    prop::collection::vec(any::<(u8, u8)>(), 0..6),
                )
            })
            .prop_map(|(processes, per, order, picks)| {
                // Event `index` of process `p` is the `index`-th of p's in the global order.
                let mut seen = vec![0; processes];
                let placed: Vec<(usize, usize)> = order
                    .iter()
                    .map(|&slot| {
                        let p = slot % processes;
                        seen[p] += 1;
                        (p, seen[p] - 1)
                    })
                    .collect();
                let n = placed.len();
                let messages = picks
                    .into_iter()
                    .filter_map(|(a, b)| {
                        let (a, b) = (a as usize % n, b as usize % n);
                        let (from, to) = (placed[a.min(b)], placed[a.max(b)]);
                        (from.0 != to.0).then_some((from, to))
                    })
                    .collect();
                Run {
                    events: vec![per; processes],
                    messages,
                }
            })
    }

    impl Run {
        /// Whether event `a` happened before or is `b`: a path of program order and messages.
        fn reaches(&self, a: (usize, usize), b: (usize, usize)) -> bool {
            let mut stack = vec![a];
            let mut seen = std::collections::HashSet::new();
            while let Some(x) = stack.pop() {
                if x.0 == b.0 && x.1 <= b.1 {
                    return true;
                }
                if !seen.insert(x) {
                    continue;
                }
                if x.1 + 1 < self.events[x.0] {
                    stack.push((x.0, x.1 + 1));
                }
                for &(from, to) in &self.messages {
                    if from == x {
                        stack.push(to);
                    }
                }
            }
            false
        }

        /// The causal past of event `e`, per process.
        fn vclock(&self, e: (usize, usize)) -> Vec<u64> {
            (0..self.events.len())
                .map(|q| {
                    (0..self.events[q])
                        .filter(|&i| self.reaches((q, i), e))
                        .count() as u64
                })
                .collect()
        }

        /// Every consistent cut: no message received inside it was sent outside it.
        fn cuts(&self) -> Vec<Vec<u64>> {
            let mut all = vec![Vec::new()];
            for &n in &self.events {
                all = all
                    .into_iter()
                    .flat_map(|c: Vec<u64>| {
                        (0..=n as u64).map(move |k| {
                            let mut c = c.clone();
                            c.push(k);
                            c
                        })
                    })
                    .collect();
            }
            all.retain(|c| {
                self.messages
                    .iter()
                    .all(|&(from, to)| (to.1 as u64) >= c[to.0] || (from.1 as u64) < c[from.0])
            });
            all
        }
    }

    /// Which components hold after which events: component `c` is about process
    /// `process_of[c]`, and holds after the events `holds[c]` picks.
    fn reports(run: &Run, process_of: &[usize], holds: &[Vec<bool>]) -> Vec<Satisfying> {
        let mut out = Vec::new();
        for p in 0..run.events.len() {
            for i in 0..run.events[p] {
                let components: Vec<usize> = (0..process_of.len())
                    .filter(|&c| process_of[c] == p && holds[c].get(i).copied().unwrap_or(false))
                    .collect();
                if !components.is_empty() {
                    out.push(Satisfying {
                        process: p,
                        events: i as u64 + 1,
                        components,
                        vclock: run.vclock((p, i)),
                    });
                }
            }
        }
        out
    }

    fn holds_at(reported: &[Satisfying], p: usize, events: u64, c: usize) -> bool {
        reported
            .iter()
            .any(|s| s.process == p && s.events == events && s.components.contains(&c))
    }

    fn case() -> impl Strategy<Value = (Run, Vec<usize>, Vec<Vec<bool>>)> {
        run().prop_flat_map(|run| {
            let processes = run.events.len();
            let per = run.events[0];
            (
                Just(run),
                prop::collection::vec(0..processes, 1..4),
                prop::collection::vec(prop::collection::vec(any::<bool>(), per), 3),
            )
                .prop_map(|(run, process_of, holds)| (run, process_of, holds))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// A conjunction's answer is the least of the consistent cuts where every process of
        /// the predicate is in a state where all its components hold, found by enumerating
        /// every consistent cut; none when there is none.
        #[test]
        fn a_conjunction_is_the_least_satisfying_cut((run, process_of, holds) in case()) {
            let reported = reports(&run, &process_of, &holds);
            let satisfies = |cut: &Vec<u64>| {
                (0..process_of.len()).all(|c| holds_at(&reported, process_of[c], cut[process_of[c]], c))
            };
            let satisfying: Vec<Vec<u64>> = run.cuts().into_iter().filter(satisfies).collect();
            let found = first_state(&Combination::Conjunctive, &process_of, &reported);
            match found {
                None => prop_assert!(satisfying.is_empty(), "missed {satisfying:?}"),
                Some(first) => {
                    prop_assert!(satisfying.contains(&first.cut), "{first:?} does not satisfy");
                    for other in &satisfying {
                        prop_assert!(first.cut.iter().zip(other).all(|(a, b)| a <= b),
                            "{:?} is not below {other:?}", first.cut);
                    }
                }
            }
        }

        /// Every state a conjunction's trace prints satisfies it, the first is the first
        /// state, and for each process's satisfying state the least satisfying cut with that
        /// process at it or later (found by enumerating every consistent cut) is printed.
        #[test]
        fn a_conjunctions_trace_is_the_least_satisfying_cut_from_each_state((run, process_of, holds) in case()) {
            let reported = reports(&run, &process_of, &holds);
            let satisfies = |cut: &Vec<u64>| {
                (0..process_of.len()).all(|c| holds_at(&reported, process_of[c], cut[process_of[c]], c))
            };
            let satisfying: Vec<Vec<u64>> = run.cuts().into_iter().filter(satisfies).collect();
            let traced = conjunction_states(&Combination::Conjunctive, &process_of, &reported);
            for state in &traced {
                prop_assert!(satisfying.contains(&state.cut), "{state:?} does not satisfy");
            }
            let first = first_state(&Combination::Conjunctive, &process_of, &reported);
            prop_assert_eq!(traced.first().map(|s| &s.cut), first.as_ref().map(|f| &f.cut));
            for s in &reported {
                if !process_of.contains(&s.process) {
                    continue;
                }
                let least = satisfying
                    .iter()
                    .filter(|cut| cut[s.process] >= s.events)
                    .min_by_key(|cut| cut.iter().sum::<u64>());
                if let Some(least) = least {
                    prop_assert!(
                        traced.iter().any(|t| &t.cut == least),
                        "{least:?}, the least from {s:?}, is not traced: {traced:?}"
                    );
                }
            }
        }

        /// A disjunction's answer is a consistent cut where one component holds, with no
        /// satisfying cut of fewer events (so a minimal one).
        #[test]
        fn a_disjunction_is_a_first_satisfying_cut((run, process_of, holds) in case()) {
            let reported = reports(&run, &process_of, &holds);
            let satisfies = |cut: &Vec<u64>| {
                (0..process_of.len()).any(|c| holds_at(&reported, process_of[c], cut[process_of[c]], c))
            };
            let satisfying: Vec<Vec<u64>> = run.cuts().into_iter().filter(satisfies).collect();
            let found = first_state(&Combination::Disjunctive, &process_of, &reported);
            match found {
                None => prop_assert!(satisfying.is_empty()),
                Some(first) => {
                    prop_assert!(satisfying.contains(&first.cut));
                    let least = satisfying.iter().map(|c| c.iter().sum::<u64>()).min();
                    prop_assert_eq!(Some(first.cut.iter().sum::<u64>()), least);
                }
            }
        }

        /// A linked predicate's answer ends a chain of events, one per stage, each after the
        /// one before (found by searching every chain), with no chain ending in fewer events.
        #[test]
        fn a_linked_predicate_ends_the_first_chain((run, process_of, holds) in case()) {
            let reported = reports(&run, &process_of, &holds);
            // One stage per component, in order.
            let stages: Vec<Vec<usize>> = (0..process_of.len()).map(|c| vec![c]).collect();
            let event = |s: &Satisfying| (s.process, s.events as usize - 1);
            // Every state that ends a chain through stages 0..=k.
            let mut ends: Vec<usize> = (0..reported.len())
                .filter(|&i| reported[i].components.contains(&0))
                .collect();
            for k in 1..stages.len() {
                ends = (0..reported.len())
                    .filter(|&i| reported[i].components.contains(&k))
                    .filter(|&i| ends.iter().any(|&j| {
                        j != i && run.reaches(event(&reported[j]), event(&reported[i]))
                            && event(&reported[j]) != event(&reported[i])
                    }))
                    .collect();
            }
            let combination = Combination::Linked(stages);
            let found = first_state(&combination, &process_of, &reported);
            match found {
                None => prop_assert!(ends.is_empty(), "missed {ends:?}"),
                Some(first) => {
                    prop_assert!(ends.contains(&first.holding[0]), "{first:?} ends no chain");
                    let least = ends.iter().map(|&i| reported[i].vclock.iter().sum::<u64>()).min();
                    prop_assert_eq!(Some(first.cut.iter().sum::<u64>()), least);
                }
            }
        }
    }
}
