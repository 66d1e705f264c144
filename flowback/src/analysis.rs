//! A recording opened for analysis: its events and their clocks, from which every query
//! (races, deadlocks, pictures, exports) is answered.

use std::sync::OnceLock;

use ppd_formats::{Recording, progress};

use crate::cache::{self, CacheOutcome};
use crate::deadlock::{self, Deadlocks};
use crate::error::Result;
use crate::lock_order::{self, PotentialDeadlock};
use crate::message_races::{self, Candidates, MessageRace};
use crate::races::{self, DataRace};
use crate::report::Report;
use crate::threads;
use crate::trace::{EventStore, Trace};
use crate::vclock::Clocks;

/// Events and clocks of one run.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Every event.
    pub trace: Trace,
    /// Their vector clocks and the synchronization edges.
    pub clocks: Clocks,
    /// Where the clocks came from.
    pub cache: Option<CacheOutcome>,
    /// The data races, once found (with the clocks when they had to be computed).
    races: OnceLock<Vec<DataRace>>,
}

impl Analysis {
    /// Reads `recording` and its clocks (from the cache when valid).
    pub fn open(recording: &Recording) -> Result<Analysis> {
        let trace = Trace::load(recording)?;
        let races = OnceLock::new();
        // Computing the clocks finds the data races on the way: keep them.
        let (clocks, outcome) = cache::load_or_compute_with(recording, &trace, |trace| {
            let (clocks, found, _) = races::clocks_and_races(trace);
            let _ = races.set(found);
            clocks
        });
        Ok(Analysis {
            trace,
            clocks,
            cache: Some(outcome),
            races,
        })
    }

    /// The race and deadlock report of `recording`, as `ppd races` prints it. The clocks are
    /// computed here without the cache (race detection replays every atomic access with its
    /// clock anyway, so stored clocks would only add reading them to that work) and without
    /// listing the synchronization edges, which the report only counts. Every pass of the
    /// report reads the events in order, so they are kept in the
    /// [`Compact`](crate::trace::Compact) store.
    pub fn race_report(recording: &Recording) -> Result<Report> {
        Ok(Analysis::race_report_of(&Trace::load_compact(recording)?))
    }

    /// The race and deadlock report of a trace built in memory, as [`Analysis::race_report`]
    /// makes it.
    ///
    /// What needs no clocks (the deadlocks, the lock-order cycles, each channel's sends and
    /// receives) is found on a second thread while the clocks are computed.
    pub fn race_report_of<S: EventStore>(trace: &Trace<S>) -> Report {
        let ((clocks, data), (candidates, deadlocks, potential)) = threads::both(
            || races::clocks_and_races_counting_edges(trace),
            || {
                (
                    // Beside the clocks, which count the same events.
                    Candidates::of(trace, progress::Counter::silent()),
                    deadlock::deadlocks(trace),
                    lock_order::potential_deadlocks(trace).0,
                )
            },
        );
        Report::new(
            trace,
            &clocks,
            &data,
            &candidates.races(trace, &clocks),
            &deadlocks,
            &potential,
        )
    }

    /// Analyses a trace built in memory (no cache).
    pub fn of_trace(trace: Trace) -> Analysis {
        let (clocks, found, _) = races::clocks_and_races(&trace);
        Analysis {
            trace,
            clocks,
            cache: None,
            races: OnceLock::from(found),
        }
    }

    /// The data races.
    pub fn data_races(&self) -> Vec<DataRace> {
        self.races
            .get_or_init(|| races::data_races(&self.trace))
            .clone()
    }

    /// The message races.
    pub fn message_races(&self) -> Vec<MessageRace> {
        message_races::message_races(&self.trace, &self.clocks)
    }

    /// How the run ended: blocked processes and deadlocks.
    pub fn deadlocks(&self) -> Deadlocks {
        deadlock::deadlocks(&self.trace)
    }

    /// The cycles of the lock-order graph that could deadlock another run.
    pub fn potential_deadlocks(&self) -> Vec<PotentialDeadlock> {
        lock_order::potential_deadlocks(&self.trace).0
    }

    /// The full race and deadlock report.
    pub fn report(&self) -> Report {
        Report::new(
            &self.trace,
            &self.clocks,
            &self.data_races(),
            &self.message_races(),
            &self.deadlocks(),
            &self.potential_deadlocks(),
        )
    }
}
