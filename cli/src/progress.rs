//! Progress on stderr for work that runs over a second.
//!
//! The libraries count (`ppd_formats::progress`); this draws what they count with `indicatif`,
//! only when stderr is a terminal and `--quiet` was not given, and only once the command has
//! run for a second (`PPD_PROGRESS_AFTER_MS` changes that delay). The bar is cleared before
//! the first line of output, so it never mixes with the answer.

use std::io::IsTerminal;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ppd_formats::progress::{self, Progress};

/// How long a command runs before its progress is shown.
const DELAY: Duration = Duration::from_secs(1);

/// The bar, while the command has not printed its answer.
#[derive(Debug)]
struct Terminal {
    bar: ProgressBar,
    /// Whether it is drawn, and whether it is gone for good.
    state: Mutex<(bool, bool)>,
}

static TERMINAL: OnceLock<&'static Terminal> = OnceLock::new();

/// Draws progress from now on, unless `quiet` or stderr is not a terminal.
pub(crate) fn install(quiet: bool) {
    if quiet || !std::io::stderr().is_terminal() {
        return;
    }
    let delay = std::env::var("PPD_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(DELAY, Duration::from_millis);
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
        .with_prefix("ppd")
        .with_message("starting")
        .with_style(spinner());
    let terminal: &'static Terminal = Box::leak(Box::new(Terminal {
        bar,
        state: Mutex::new((false, false)),
    }));
    let _ = TERMINAL.set(terminal);
    progress::report_to(Box::new(terminal));
    if delay.is_zero() {
        terminal.show();
    } else {
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            terminal.show();
        });
    }
}

/// Removes the bar for good: the command's answer follows.
pub(crate) fn clear() {
    if let Some(terminal) = TERMINAL.get() {
        let mut state = terminal.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.1 {
            *state = (false, true);
            terminal.bar.finish_and_clear();
        }
    }
}

fn spinner() -> ProgressStyle {
    ProgressStyle::with_template("{prefix} {spinner} {msg}: {human_pos} events, {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar() -> ProgressStyle {
    ProgressStyle::with_template(
        "{prefix} {msg} [{bar:30}] {percent}% of {human_len} events, {elapsed}, {eta} left",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ")
}

impl Terminal {
    fn show(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if *state == (false, false) {
            state.0 = true;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.bar.enable_steady_tick(Duration::from_millis(120));
            self.bar.tick();
        }
    }
}

impl Progress for &'static Terminal {
    fn stage(&self, what: &str, events: Option<u64>) {
        if self.state.lock().unwrap_or_else(|e| e.into_inner()).1 {
            return;
        }
        match events {
            Some(n) => {
                self.bar.set_style(bar());
                self.bar.set_length(n);
            }
            None => {
                self.bar.set_style(spinner());
                self.bar.unset_length();
            }
        }
        self.bar.reset();
        self.bar.set_message(what.to_owned());
    }

    fn advance(&self, events: u64) {
        self.bar.inc(events);
    }
}
