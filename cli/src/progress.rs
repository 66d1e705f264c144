//! Progress on stderr for work that runs over a second.
//!
//! The libraries count (`ppd_formats::progress`); this draws what they count with `indicatif`,
//! only when stderr is a terminal and `--quiet` was not given, and only once the command has
//! run for a second (`PPD_PROGRESS_AFTER_MS` changes that delay). Each stage gets a bar of its
//! own, made whole before it replaces the last one, so no frame shows one stage's name with
//! another's count. The bar is cleared before the first line of output, so it never mixes
//! with the answer; a note on stderr while it runs is written above it.

use std::io::IsTerminal;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ppd_formats::progress::{self, Progress};

/// How long a command runs before its progress is shown.
const DELAY: Duration = Duration::from_secs(1);

/// How often the spinner turns and the counts are redrawn.
const TICK: Duration = Duration::from_millis(120);

/// The bar, while the command has not printed its answer.
#[derive(Debug)]
struct Terminal {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The current stage's bar.
    bar: ProgressBar,
    /// Whether it shows a count: a stage with no total shows one from its first event on, so
    /// that no stage says "0 events" while it works on something else.
    counts: bool,
    /// Whether the delay has passed and bars are drawn.
    shown: bool,
    /// Whether the bar is gone for good.
    gone: bool,
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
    let terminal: &'static Terminal = Box::leak(Box::new(Terminal {
        state: Mutex::new(State {
            bar: stage_bar("starting", None, false),
            counts: false,
            shown: false,
            gone: false,
        }),
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
        let mut state = terminal.lock();
        if !state.gone {
            if state.shown {
                state.bar.force_draw();
            }
            state.gone = true;
            state.shown = false;
            state.bar.finish_and_clear();
        }
    }
}

/// Writes `line` on stderr, above the bar when one is drawn.
pub(crate) fn note(line: &str) {
    match TERMINAL.get() {
        Some(terminal) => {
            let state = terminal.lock();
            state.bar.suspend(|| eprintln!("{line}"));
        }
        None => eprintln!("{line}"),
    }
}

/// A bar for stage `what` of `events` events (a spinner when that is not known), drawn on
/// stderr when `shown`.
fn stage_bar(what: &str, events: Option<u64>, shown: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(events, ProgressDrawTarget::hidden())
        .with_prefix("ppd")
        .with_message(what.to_owned())
        .with_style(match events {
            Some(_) => bar_style(),
            None => spinner_style(),
        });
    if shown {
        draw(&bar);
    }
    bar
}

fn draw(bar: &ProgressBar) {
    bar.set_draw_target(ProgressDrawTarget::stderr());
    bar.enable_steady_tick(TICK);
    bar.tick();
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix} {spinner} {msg}, {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn counting_spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix} {spinner} {msg}: {human_pos} events, {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{prefix} {msg} [{bar:30}] {human_pos} of {human_len} events, {elapsed}, {eta} left",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ")
}

impl Terminal {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn show(&self) {
        let mut state = self.lock();
        if !state.shown && !state.gone {
            state.shown = true;
            draw(&state.bar);
        }
    }
}

impl Progress for &'static Terminal {
    fn stage(&self, what: &str, events: Option<u64>) {
        let mut state = self.lock();
        if state.gone {
            return;
        }
        // The last stage's line shows where it ended, then the new one is drawn in its place.
        if state.shown {
            state.bar.force_draw();
        }
        state.bar.finish_and_clear();
        state.bar = stage_bar(what, events, state.shown);
        state.counts = events.is_some();
    }

    fn advance(&self, events: u64) {
        let mut state = self.lock();
        if !state.counts {
            state.counts = true;
            state.bar.set_style(counting_spinner_style());
        }
        state.bar.inc(events);
    }
}
