//! Analyses over recordings: the happened-before order of a run and what it shows.
//!
//! A recording is read into a [`Trace`] (every event of every process, interned). The
//! [`Clocks`] give every event a Fidge vector clock, computed after the run by the replay
//! algorithm of Lin's thesis §5.4.1 generalized to ppd's synchronization edges ([`SyncEdge`])
//! and cached in the recording. From the clocks: data races (Miller & Choi §6, Definitions
//! 6.1–6.4, [`clocks_and_races`]), message races ([`message_races()`]), deadlocks, time-space
//! diagrams ([`picture`]) and exports for other viewers ([`export`]). From the lock
//! acquisitions alone: potential deadlocks ([`potential_deadlocks`]). From the atomics' version
//! order: which write each read read, drawn with the happened-before edges. [`Analysis`] runs
//! them over a recording.
//!
//! The public modules are the ones other crates reach into: [`trace`], [`picture`],
//! [`export`], [`report`], [`tasks`] and [`why`]; the analyses' results are named there or
//! re-exported here.

#![deny(missing_docs)]

pub(crate) mod analysis;
pub(crate) mod cache;
pub(crate) mod deadlock;
pub(crate) mod error;
pub mod export;
mod fasthash;
pub(crate) mod halt;
pub(crate) mod lamport;
pub(crate) mod lock_order;
pub(crate) mod message_races;
pub(crate) mod palette;
pub mod picture;
pub(crate) mod races;
pub(crate) mod reads_from;
pub mod report;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
pub mod tasks;
#[cfg(test)]
mod testing;
mod threads;
pub mod trace;
pub(crate) mod vclock;
pub mod why;
pub(crate) mod window;

pub use analysis::Analysis;
pub use cache::CacheOutcome;
pub use error::{FlowbackError, Result};
pub use halt::HaltCut;
pub use lock_order::potential_deadlocks;
pub use message_races::message_races;
pub use palette::Palette;
pub use races::clocks_and_races;
pub use trace::{EventRef, Trace};
pub use vclock::{Clocks, SyncEdge};
pub use window::Window;
