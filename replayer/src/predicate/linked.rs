//! Detecting a linked predicate `DP1 -> DP2 -> … -> DPn` (Miller & Choi §3.4, §3.6) over the
//! vector clocks of the events as they are replayed, at a cost that does not grow with n.
//!
//! Stage k is *reached* by an event e of one of its components that happened after an event
//! that reached stage k-1 (stage 1 by any event of one of its components); the predicate holds
//! after an event that reaches stage n. The events after some event that reached stage k are a
//! subset of those after some event that reached stage k-1 (the one before it), so what an
//! event e can reach is a prefix of the stages: every stage up to its *level*, one past the
//! highest stage reached in its causal past. Of those, the one stage that matters is the
//! highest, the level itself (a lower one adds nothing its past has not); and past the last
//! stage, the last stage again. So each event needs the tests of one stage, and its level is
//! read off its vector clock: for each process that reached a stage, the highest stage its
//! events up to the clock's component reached. Those rise along each process and are kept
//! only where they rise, at most once per stage and process.
//!
//! This is how Miller & Choi's predicate markers travel (a process enables stage k+1 once it
//! has seen stage k), computed from the clocks the replay keeps instead of on the messages.

use ppd_formats::order::Tick;

/// Where a linked predicate stands in a replay.
#[derive(Debug, Clone)]
pub struct Linked {
    /// The number of stages.
    stages: usize,
    /// For each process, where the stages its events reached rose: (the event's position,
    /// counting from 1 as its clock component does; one past the stage it reached).
    rises: Vec<Vec<(Tick, usize)>>,
    /// The processes with a rise, in the order they first had one.
    risen: Vec<usize>,
}

impl Linked {
    /// A predicate of `stages` stages over `processes` processes, no stage reached yet.
    pub fn new(stages: usize, processes: usize) -> Linked {
        Linked {
            stages,
            rises: vec![Vec::new(); processes],
            risen: Vec::new(),
        }
    }

    /// One past the highest stage reached in the causal past of an event whose vector clock is
    /// `vclock` (its own process's earlier events included, the event itself not yet seen).
    fn level(&self, vclock: &[Tick]) -> usize {
        self.risen
            .iter()
            .filter_map(|&q| {
                let rises = &self.rises[q];
                let seen = vclock.get(q).copied().unwrap_or(0);
                let before = rises.partition_point(|&(at, _)| at <= seen);
                before.checked_sub(1).map(|i| rises[i].1)
            })
            .max()
            .unwrap_or(0)
    }

    /// Process `p` executed an event with vector clock `vclock`; `holds(stage)` says whether a
    /// component of `stage` (from 0) about `p` holds after it, and is asked about one stage
    /// only. Returns whether the event reached the last stage: the predicate holds after it.
    pub fn observe(
        &mut self,
        p: usize,
        vclock: &[Tick],
        holds: impl FnOnce(usize) -> bool,
    ) -> bool {
        let Some(last) = self.stages.checked_sub(1) else {
            return false;
        };
        let stage = self.level(vclock).min(last);
        if !holds(stage) {
            return false;
        }
        let Some(rises) = self.rises.get_mut(p) else {
            return stage == last;
        };
        let level = stage + 1;
        if rises.last().is_none_or(|&(_, l)| l < level) {
            if rises.is_empty() {
                self.risen.push(p);
            }
            rises.push((vclock.get(p).copied().unwrap_or(0), level));
        }
        stage == last
    }

    /// The number of stages reached one after the other so far: the highest stage any event
    /// reached, plus one.
    pub fn reached(&self) -> usize {
        self.risen
            .iter()
            .filter_map(|&q| self.rises[q].last().map(|&(_, l)| l))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ppd_formats::clock::VectorClock;

    /// A small random generator, so that the runs below are the same on every machine.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// A random run: events as (process, vector clock), in an order replay could take them;
    /// some events receive a message from an earlier event of another process.
    fn run(rng: &mut Rng, processes: usize, events: usize) -> Vec<(usize, Vec<Tick>)> {
        let mut clocks = vec![vec![0 as Tick; processes]; processes];
        let mut out: Vec<(usize, Vec<Tick>)> = Vec::new();
        for _ in 0..events {
            let p = rng.below(processes as u64) as usize;
            if !out.is_empty() && rng.below(3) == 0 {
                let (_, sent) = &out[rng.below(out.len() as u64) as usize];
                clocks[p].join(sent);
            }
            clocks[p][p] += 1;
            out.push((p, clocks[p].clone()));
        }
        out
    }

    /// The definition, checked by brute force: the events that reach each stage, an event
    /// reaching stage k when a component of it holds and an event that reached stage k-1
    /// happened before it. Returns, per event, whether it reached the last stage.
    fn by_definition(
        run: &[(usize, Vec<Tick>)],
        stages: usize,
        holds: &dyn Fn(usize, usize) -> bool,
    ) -> Vec<bool> {
        let before = |a: &[Tick], b: &[Tick]| a.iter().zip(b).all(|(x, y)| x <= y) && a != b;
        let mut reached: Vec<Vec<usize>> = vec![Vec::new(); stages];
        let mut last = Vec::new();
        for (e, (_, vc)) in run.iter().enumerate() {
            for k in (0..stages).rev() {
                let after_previous =
                    k == 0 || reached[k - 1].iter().any(|&f| before(&run[f].1, vc));
                if holds(e, k) && after_previous {
                    reached[k].push(e);
                }
            }
            last.push(reached[stages - 1].last() == Some(&e));
        }
        last
    }

    #[test]
    fn holds_exactly_where_the_definition_says() {
        let mut rng = Rng(0x5eed_1111);
        let mut both = (0, 0);
        for trial in 0..300 {
            let processes = 1 + (trial % 4);
            let stages = 1 + (trial % 5);
            let run = run(&mut rng, processes, 40);
            // Which stages' components hold after each event, at random: about one in three.
            let table: Vec<Vec<bool>> = (0..run.len())
                .map(|_| (0..stages).map(|_| rng.below(3) == 0).collect())
                .collect();
            let holds = |e: usize, k: usize| table[e][k];
            let expected = by_definition(&run, stages, &holds);
            let mut linked = Linked::new(stages, processes);
            for (e, (p, vc)) in run.iter().enumerate() {
                let got = linked.observe(*p, vc, |k| holds(e, k));
                assert_eq!(
                    got, expected[e],
                    "trial {trial}: event {e} of process {p} with clock {vc:?}"
                );
                if got {
                    both.0 += 1;
                } else {
                    both.1 += 1;
                }
            }
        }
        assert!(
            both.0 > 100 && both.1 > 100,
            "both answers checked: {both:?}"
        );
    }

    #[test]
    fn each_event_asks_about_one_stage_whatever_the_number_of_stages() {
        // 3000 stages of the same event on one process of three, as `teller: recv -> …`: every
        // event asks once, and memory grows with the stages reached, not with the events.
        let stages = 3000;
        let mut rng = Rng(42);
        let run = run(&mut rng, 3, 20_000);
        let mut linked = Linked::new(stages, 3);
        let mut asked = 0usize;
        let mut first = None;
        for (e, (p, vc)) in run.iter().enumerate() {
            let holds = linked.observe(*p, vc, |_| {
                asked += 1;
                *p == 1
            });
            if holds && first.is_none() {
                first = Some(e);
            }
        }
        assert_eq!(asked, run.len(), "one question per event");
        let kept: usize = linked.rises.iter().map(Vec::len).sum();
        assert!(kept <= stages, "{kept} rises kept for {stages} stages");
        // Every event of process 1 reaches the next stage: the last at its 3000th event.
        let nth = run
            .iter()
            .enumerate()
            .filter(|(_, (p, _))| *p == 1)
            .nth(stages - 1)
            .map(|(e, _)| e);
        assert_eq!(first, nth);
        assert_eq!(linked.reached(), stages);
    }
}
