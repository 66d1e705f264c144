//! The components of a resolved predicate, grouped for evaluation at every replayed event.
//!
//! Components that are the same simple predicate about the same process hold after the same
//! events, so each distinct one, a *test*, is evaluated at most once per event; and the tests
//! are found by process, and for a linked predicate by process and stage, so that an event is
//! checked only against the tests that can matter to it. A predicate of 3000 copies of
//! `teller: recv` joined by `->` is then one test, asked once per event of the teller.

use std::collections::HashMap;
use std::sync::Arc;

use ppd_formats::{Event, ProcessId};

use super::Scope;
use super::eval::Interval;
use super::resolve::{Combination, Component, Matcher, Resolved};

/// A predicate's distinct tests.
#[derive(Debug)]
pub struct Tests {
    /// Each test: one of its components (what it matches, its condition), and all of them.
    tests: Vec<(Component, Vec<usize>)>,
    /// Each process's tests.
    of_process: HashMap<ProcessId, Vec<usize>>,
    /// A linked predicate's tests of each process in each stage.
    of_stage: HashMap<(ProcessId, usize), Vec<usize>>,
    /// A linked predicate's stage of each component.
    stage_of: Vec<usize>,
    /// How many stages a linked predicate has (0 for any other predicate).
    stages: usize,
    /// The components are stable states (`==`), not events.
    stable: bool,
}

impl Tests {
    /// Groups the components of `plan`.
    pub fn of(plan: &Resolved) -> Tests {
        let mut tests: Vec<(Component, Vec<usize>)> = Vec::new();
        let mut by_key: HashMap<(ProcessId, Matcher, String), usize> = HashMap::new();
        let mut of_process: HashMap<ProcessId, Vec<usize>> = HashMap::new();
        let mut test_of = Vec::with_capacity(plan.components.len());
        for c in &plan.components {
            let condition = c.condition.as_ref().map(ToString::to_string);
            let key = (c.process, c.matcher.clone(), condition.unwrap_or_default());
            let test = *by_key.entry(key).or_insert_with(|| {
                tests.push((c.clone(), Vec::new()));
                of_process
                    .entry(c.process)
                    .or_default()
                    .push(tests.len() - 1);
                tests.len() - 1
            });
            tests[test].1.push(c.id);
            test_of.push(test);
        }
        let mut of_stage: HashMap<(ProcessId, usize), Vec<usize>> = HashMap::new();
        let mut stage_of = Vec::new();
        let stages = match &plan.combination {
            Combination::Linked(stages) => {
                stage_of = vec![0; plan.components.len()];
                for (k, stage) in stages.iter().enumerate() {
                    for &c in stage {
                        stage_of[c] = k;
                        let tests = of_stage.entry((plan.components[c].process, k)).or_default();
                        // A stage lists a test once, however many of its components it is.
                        if !tests.contains(&test_of[c]) {
                            tests.push(test_of[c]);
                        }
                    }
                }
                stages.len()
            }
            Combination::Conjunctive | Combination::Disjunctive | Combination::Simultaneous => 0,
        };
        Tests {
            tests,
            of_process,
            of_stage,
            stage_of,
            stages,
            stable: plan.combination == Combination::Simultaneous,
        }
    }

    /// The tests about process `p`.
    pub fn of_process(&self, p: ProcessId) -> &[usize] {
        self.of_process.get(&p).map_or(&[], Vec::as_slice)
    }

    /// The tests of a linked predicate's `stage` (from 0) about process `p`.
    pub fn of_stage(&self, p: ProcessId, stage: usize) -> &[usize] {
        self.of_stage.get(&(p, stage)).map_or(&[], Vec::as_slice)
    }

    /// The stage of a linked predicate's component `c`.
    pub fn stage_of(&self, c: usize) -> Option<usize> {
        self.stage_of.get(c).copied()
    }

    /// The components that are `test`.
    pub fn components(&self, test: usize) -> &[usize] {
        self.tests.get(test).map_or(&[], |(_, c)| c.as_slice())
    }

    /// How many stages a linked predicate has (0 for any other).
    pub fn stages(&self) -> usize {
        self.stages
    }
}

/// One process's tests, evaluated on the events it executes.
#[derive(Debug)]
pub struct Local {
    tests: Arc<Tests>,
    /// Its tests.
    mine: Vec<usize>,
    /// Under `==`, each of its tests as a stable state, in the order of `mine`.
    intervals: Vec<Interval>,
}

impl Local {
    /// Process `p`'s tests of `tests`.
    pub fn new(tests: Arc<Tests>, p: ProcessId) -> Local {
        let mine = tests.of_process(p).to_vec();
        let intervals = if tests.stable {
            vec![Interval::default(); mine.len()]
        } else {
            Vec::new()
        };
        Local {
            tests,
            mine,
            intervals,
        }
    }

    /// Which tests hold once the process executed `event` (`entry`: an exit's entry prelog).
    /// Stable states follow every event; an event's tests are evaluated when asked.
    pub fn after<'a>(&'a mut self, event: &'a Event, entry: Option<&'a [u8]>) -> After<'a> {
        for (i, &t) in self.mine.iter().enumerate() {
            if let Some(interval) = self.intervals.get_mut(i) {
                interval.observe(&self.tests.tests[t].0, event, entry);
            }
        }
        After {
            local: self,
            event,
            entry,
            scope: None,
        }
    }
}

/// The tests of one process after one of its events, evaluated on demand: the values the
/// event logged are decoded once, when a test first needs them.
#[derive(Debug)]
pub struct After<'a> {
    local: &'a Local,
    event: &'a Event,
    entry: Option<&'a [u8]>,
    scope: Option<Scope>,
}

impl After<'_> {
    /// Whether `test` holds.
    pub fn holds(&mut self, test: usize) -> bool {
        let local = self.local;
        if local.tests.stable {
            // `mine` ascends: the tests were numbered in the order of the components.
            return local
                .mine
                .binary_search(&test)
                .is_ok_and(|i| local.intervals[i].holds());
        }
        let Some((component, _)) = local.tests.tests.get(test) else {
            return false;
        };
        if !component.matches_event(self.event) {
            return false;
        }
        let Some(condition) = &component.condition else {
            return true;
        };
        let (event, entry) = (self.event, self.entry);
        self.scope
            .get_or_insert_with(|| Scope::of(event, entry))
            .eval(condition)
    }

    /// Every test of the process that holds.
    pub fn holding(&mut self) -> Vec<usize> {
        let local = self.local;
        local
            .mine
            .iter()
            .copied()
            .filter(|&t| self.holds(t))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::{Catalog, LoggedShapes, Shape, parse};
    use ppd_formats::value;

    fn resolved(text: &str) -> Resolved {
        let mut ints = Shape::default();
        ints.add(&value::encode(&1).unwrap());
        let marks = || LoggedShapes {
            marks: [("x".to_owned(), ints.clone())].into(),
            ..LoggedShapes::default()
        };
        let catalog = Catalog {
            processes: vec![(ProcessId(0), "p".into()), (ProcessId(1), "q".into())],
            labels: ["x".to_owned()].into(),
            logged: [(ProcessId(0), marks()), (ProcessId(1), marks())].into(),
            ..Catalog::default()
        };
        parse(text).unwrap().resolve(&catalog).unwrap()
    }

    #[test]
    fn copies_of_one_simple_predicate_are_one_test() {
        let text = ["p: mark x"; 3000].join(" -> ") + " | q: mark x if value > 1 -> p: mark x";
        let tests = Tests::of(&resolved(&text));
        let (p, q) = (ProcessId(0), ProcessId(1));
        assert_eq!(tests.of_process(p), [0]);
        assert_eq!(tests.of_process(q), [1]);
        assert_eq!(tests.components(0).len(), 3001);
        assert_eq!(tests.stages(), 3001);
        assert!((0..3001).all(|k| tests.of_stage(p, k) == [0]));
        assert_eq!(tests.of_stage(q, 2999), [1]);
        assert_eq!(tests.of_stage(q, 3000), [] as [usize; 0]);
        assert_eq!(tests.stage_of(3000), Some(2999), "q's component");
    }

    #[test]
    fn a_test_decodes_the_event_once_when_asked() {
        let tests = Arc::new(Tests::of(&resolved("p: mark x if value > 1 | p: mark x")));
        let mut local = Local::new(tests, ProcessId(0));
        let mark = |v: i64| Event::Mark {
            label: "x".into(),
            site: None,
            value: value::encode(&v).unwrap().into(),
        };
        assert_eq!(local.after(&mark(2), None).holding(), [0, 1]);
        assert_eq!(local.after(&mark(0), None).holding(), [1]);
        let five = mark(5);
        let mut after = local.after(&five, None);
        assert!(
            after.scope.is_none(),
            "nothing decoded before a test needs it"
        );
        assert!(after.holds(1));
        assert!(
            after.scope.is_none(),
            "a test without a condition decodes nothing"
        );
        assert!(after.holds(0));
        assert!(after.scope.is_some());
    }
}
