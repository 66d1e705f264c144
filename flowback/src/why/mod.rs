//! Why-queries: the chain of statements, messages and processes that gave a variable its value
//! (Miller & Choi's flowback analysis, §3–§5).
//!
//! * [`index`]: per process, every e-block instance and every send made inside one, cached;
//! * [`store`]: traces of re-executed instances, from the cache or by running the recorded
//!   binary in emulate mode (incremental tracing, §5.3);
//! * [`place`]: variables and the parts of them (`bank.accounts[1].balance`) a query follows;
//! * [`point`]: where in a process's run a query asks (`--at`);
//! * [`answer`]: what a query asks and what it answers: steps of the dependence graph (§4.2);
//! * [`engine`]: the backward search over the dynamic program dependence graph: definitions
//!   and dependences; [`target`](mod@target) finds where a query starts and [`chain`] follows it;
//! * [`render`]: the answer as a tree or a Graphviz graph;
//! * [`restore`]: a process's state from accumulated logs, and what-if re-execution (§5.7).

pub mod answer;
pub mod chain;
pub mod engine;
pub mod index;
pub mod place;
pub mod point;
pub mod render;
pub mod restore;
pub mod store;
pub mod target;

pub use answer::{Answer, Dependence, LeakReport, NodeKind, Query, Step, Via};
pub use engine::ask;
pub use point::Point;
pub use store::{InstanceKey, TraceStore, Work};
