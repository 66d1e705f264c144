//! One module per subcommand.

pub(crate) mod analyze;
pub(crate) mod build;
pub(crate) mod check;
pub(crate) mod debugger;
pub(crate) mod export;
pub(crate) mod graph;
pub(crate) mod halt_nodes;
pub(crate) mod info;
pub(crate) mod live_halt;
pub(crate) mod merge;
pub(crate) mod races;
pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod trust;
pub(crate) mod why;
