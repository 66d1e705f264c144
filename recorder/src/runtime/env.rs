//! The environment through which `ppd` tells a program how to run.
//!
//! `ppd record`, `ppd replay` and `ppd why` start the user's program with these variables set;
//! `#[ppd::main]` reads them before the program's body runs. A program started without them
//! runs in pass-through mode.

/// `record`, `replay` or `emulate`.
pub const MODE: &str = "PPD_MODE";
/// The recording directory.
pub const DIR: &str = "PPD_DIR";
/// The name of this OS process's node in a recording of several (default: the program's
/// name and a number).
pub const NODE: &str = "PPD_NODE";
/// The id of the run being recorded, the same in every OS process of it (`ppd record --join`).
pub const RUN: &str = "PPD_RUN";
/// `1`: log message payloads (`ppd record --payloads`).
pub const PAYLOADS: &str = "PPD_PAYLOADS";
/// `1`: fsync frames before their ring slot is reused (`ppd record --fsync`).
pub const FSYNC: &str = "PPD_FSYNC";
/// Raw block size of the logs, bytes.
pub const BLOCK_SIZE: &str = "PPD_BLOCK_SIZE";
/// Ring slots per log.
pub const RING_BLOCKS: &str = "PPD_RING_BLOCKS";
/// Unix socket of the global debugger (replay).
pub const CONTROL: &str = "PPD_CONTROL";
/// The breakpoint of a live program, as JSON (`ppd record --stop`,
/// [`ppd_formats::live::LiveStop`]).
pub const LIVE_STOP: &str = "PPD_LIVE_STOP";
/// Unix socket of the debugger that halts the live program (`ppd record --stop`).
pub const LIVE_CONTROL: &str = "PPD_LIVE_CONTROL";
/// File holding the emulation request (emulate).
pub const REQUEST: &str = "PPD_REQUEST";
/// The process whose body a replay traces (`ppd_replayer::body`).
pub const TRACE_BODY: &str = "PPD_TRACE_BODY";
/// Where a replay that traces a body writes its trace.
pub const TRACE_OUT: &str = "PPD_TRACE_OUT";

/// Reads a boolean flag: set and not `0`.
pub fn flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| v != "0" && !v.is_empty())
}

/// Whether `id` can name a run: 1 to 64 letters, digits, `-`, `_` and `.`.
pub fn valid_run_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}
