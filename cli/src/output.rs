//! Small helpers for human-readable output.

/// Bytes as `12.3 KiB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use ppd_flowback::Palette;

/// `--color`: when ppd's own text output is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set to anything but the empty string or `TERM` is
    /// `dumb`.
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

static PALETTE: OnceLock<Palette> = OnceLock::new();

/// Chooses, once, how text on standard output is coloured.
pub(crate) fn choose_palette(when: ColorWhen) {
    use std::io::IsTerminal;
    let colored = match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
            let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
            std::io::stdout().is_terminal() && !no_color && !dumb
        }
    };
    let _ = PALETTE.set(if colored {
        Palette::ANSI
    } else {
        Palette::PLAIN
    });
}

/// How text on standard output is coloured (plain until [`choose_palette`]).
pub(crate) fn palette() -> Palette {
    PALETTE.get().copied().unwrap_or(Palette::PLAIN)
}

/// The first error writing to standard output; later output is dropped and `main` reports it.
static STDOUT_ERROR: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Writes to standard output, remembering the first error instead of panicking as `print!`
/// does (a full disk, a closed descriptor). A closed pipe never gets here: SIGPIPE ends `ppd`
/// quietly first.
pub(crate) fn write(args: std::fmt::Arguments<'_>) {
    crate::progress::clear();
    let mut error = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
    if error.is_none()
        && let Err(e) = std::io::stdout().lock().write_fmt(args)
    {
        *error = Some(e);
    }
}

/// Flushes standard output and returns the first error any output met.
pub(crate) fn finish() -> Result<(), std::io::Error> {
    let flushed = std::io::stdout().lock().flush();
    let mut error = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
    match error.take() {
        Some(e) => Err(e),
        None => flushed,
    }
}

/// `print!` that does not panic on a write error (see [`write`](fn@write)).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*))
    };
}

/// `println!` that does not panic on a write error (see [`write`](fn@write)).
macro_rules! outln {
    () => {
        $crate::output::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {out, outln};

/// Prints a value as pretty JSON on stdout.
pub(crate) fn json<T: serde::Serialize>(value: &T) {
    outln!(
        "{}",
        serde_json::to_string_pretty(value).expect("our reports always serialize")
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_are_human_readable() {
        assert_eq!(super::bytes(12), "12 B");
        assert_eq!(super::bytes(2048), "2.0 KiB");
        assert_eq!(super::bytes(5 * 1024 * 1024 + 1024 * 512), "5.5 MiB");
    }
}
