//! How a command fails: bad input (exit code 2) or a failure (exit code 1).

use std::process::ExitCode;

use ppd_formats::FormatError;

/// A command's error, classified for the exit code.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The user gave something unusable: a missing or damaged recording, a bad argument.
    Input(anyhow::Error),
    /// The command could not do its job.
    Failure(anyhow::Error),
}

impl CliError {
    /// Prints the error with its causes and gives the exit code.
    pub(crate) fn report(self) -> ExitCode {
        let (error, code) = match self {
            CliError::Input(e) => (e, 2),
            CliError::Failure(e) => (e, 1),
        };
        eprintln!("ppd: {error:#}");
        ExitCode::from(code)
    }
}

impl From<FormatError> for CliError {
    fn from(e: FormatError) -> Self {
        CliError::Input(e.into())
    }
}

/// Marks an error as bad input.
pub(crate) fn input(e: impl Into<anyhow::Error>) -> CliError {
    CliError::Input(e.into())
}

/// Marks an error as a failure.
pub(crate) fn failure(e: impl Into<anyhow::Error>) -> CliError {
    CliError::Failure(e.into())
}

/// Result of a command: the exit code on success.
pub(crate) type CmdResult = Result<ExitCode, CliError>;
