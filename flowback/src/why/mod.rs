//! Why-queries: the chain of statements, messages and processes that gave a variable its value
//! (Miller & Choi's flowback analysis, §3–§5).
//!
//! * [`index`]: per process, every e-block instance and every send made inside one, and which
//!   top-level instances changed which part of the arguments they log on exit
//!   (`changes`), cached;
//! * [`store`]: traces of re-executed instances, from the cache or by running the recorded
//!   binary in emulate mode (incremental tracing, §5.3);
//! * [`place`]: variables and the parts of them (`bank.accounts[1].balance`) a query follows;
//! * `point`: where in a process's run a query asks (`--at`, a [`Point`]);
//! * `answer`: what a query asks ([`Query`]) and what it answers ([`Answer`]): steps of the
//!   dependence graph (§4.2);
//! * `engine`: the backward search over the dynamic program dependence graph ([`ask`]):
//!   definitions and dependences; `target` finds where a query starts and `chain` follows it;
//!   `shared` follows a value read under a lock or from an atomic to the write that made it,
//!   in whichever process (§6.3), and `wire` one read from a socket to the write its bytes
//!   came from, in whichever OS process;
//! * [`races`]: the receives of an answer's chain that another order of the processes could
//!   have given another message;
//! * [`render`]: the answer as a tree or a Graphviz graph;
//! * [`restore`]: a process's state from accumulated logs, and what-if re-execution (§5.7).

use ppd_formats::ProcessNameError;
use ppd_formats::{ProcessId, Recording};

use crate::error::{FlowbackError, Result};

pub(crate) mod answer;
pub(crate) mod chain;
mod changes;
pub(crate) mod engine;
pub mod index;
mod objects;
pub mod place;
pub(crate) mod point;
pub mod races;
pub mod render;
pub mod restore;
mod shared;
pub mod store;
pub(crate) mod target;
mod wire;

pub use answer::{Answer, Dependence, Edge, LeakReport, NodeKind, Query, Step, Via};
pub use engine::ask;
pub use point::Point;
pub use store::{InstanceKey, TraceStore, Work};

/// ` (did you mean a, b?)` with the known names closest to `wanted`, or nothing when none is
/// close: what every refusal of an unknown name ends with.
pub fn did_you_mean<'a>(wanted: &str, known: impl Iterator<Item = &'a str>) -> String {
    let close = ppd_replayer::predicate::closest(wanted, known);
    if close.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", close.join(", "))
    }
}

/// The process a query names (by name, or `p<id>`), or a refusal with the closest names.
pub fn find_process(recording: &Recording, name: &str) -> Result<ProcessId> {
    match recording.resolve_process(name) {
        Ok(p) => Ok(p.id),
        Err(ProcessNameError::Unknown { .. }) => {
            let names = recording.processes().iter().map(|p| p.name.as_str());
            Err(FlowbackError::Query(format!(
                "no process `{name}` in the recording{}",
                did_you_mean(name, names)
            )))
        }
        Err(e) => Err(FlowbackError::Query(e.to_string())),
    }
}
