//! Analyses over recordings: the happened-before order of a run and what it shows.
//!
//! A recording is read into a [`Trace`] (every event of every process, interned). The
//! [`Clocks`] give every event a Fidge vector clock, computed after the run by the replay
//! algorithm of Lin's thesis §5.4.1 generalized to ppd's synchronization edges ([`vclock::hb`]) and
//! cached in the recording. From the clocks: data races (Miller & Choi §6, Definitions
//! 6.1–6.4, [`races`]), message races ([`message_races`]), deadlocks ([`deadlock`]),
//! time-space diagrams ([`picture`]) and exports for other viewers ([`export`]). From the
//! lock acquisitions alone: potential deadlocks ([`lock_order`]). From the atomics' version
//! order: which write each read read ([`reads_from`]), drawn with the happened-before edges.

#![deny(missing_docs)]

pub(crate) mod analysis;
pub mod cache;
pub mod deadlock;
pub(crate) mod error;
pub mod export;
mod fasthash;
pub mod halt;
pub mod lamport;
pub mod lock_order;
pub mod message_races;
pub mod palette;
pub mod picture;
pub mod races;
pub mod reads_from;
pub mod report;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
pub mod tasks;
#[cfg(test)]
mod testing;
mod threads;
pub mod trace;
pub mod vclock;
pub mod why;
pub mod window;

pub use analysis::Analysis;
pub use error::{FlowbackError, Result};
pub use trace::{EventRef, Trace};
pub use vclock::{Clocks, SyncEdge};
