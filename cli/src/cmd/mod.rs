//! One module per subcommand.

pub(crate) mod debugger;
pub(crate) mod info;
pub(crate) mod record;
pub(crate) mod replay;
