//! One module per subcommand.

pub(crate) mod info;
pub(crate) mod record;
