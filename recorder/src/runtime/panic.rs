//! Capturing panic messages and locations so a panicking process's `Panic` event can say what
//! and where. The standard hook still runs, so the user sees the usual message.
//!
//! A panic of the program is an outcome like a return, which replay reproduces. A panic inside
//! ppd's own replay code is not: it is a failure of ppd, after which nothing the replay says
//! can be trusted, so it ends the replayed program at once ([`ReplayCode`]) instead of
//! unwinding into the program as if the program had panicked.

use std::cell::{Cell, RefCell};
use std::sync::Once;

/// What the last panic on this thread said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanicReport {
    /// The message.
    pub message: String,
    /// Source file.
    pub file: String,
    /// Line.
    pub line: u32,
}

thread_local! {
    static LAST: RefCell<Option<PanicReport>> = const { RefCell::new(None) };
    static IN_REPLAY_CODE: Cell<u32> = const { Cell::new(0) };
}

/// Marks the current thread as running ppd's replay code (a replay or emulation backend, the
/// replay's control threads) until dropped. A panic meanwhile aborts the program with a
/// message naming ppd as the culprit: the global debugger then sees the replay end without its
/// report, a failure, never a replay that matched.
#[derive(Debug)]
pub struct ReplayCode(());

impl ReplayCode {
    /// Enters replay code.
    pub fn enter() -> ReplayCode {
        IN_REPLAY_CODE.with(|n| n.set(n.get() + 1));
        ReplayCode(())
    }
}

impl Drop for ReplayCode {
    fn drop(&mut self) {
        IN_REPLAY_CODE.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

fn in_replay_code() -> bool {
    IN_REPLAY_CODE.try_with(|n| n.get() > 0).unwrap_or(false)
}

pub(super) fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = if let Some(s) = info.payload().downcast_ref::<&str>() {
                (*s).to_owned()
            } else if let Some(s) = info.payload().downcast_ref::<String>() {
                s.clone()
            } else {
                "non-string panic payload".to_owned()
            };
            let (file, line) = info
                .location()
                .map(|l| (l.file().to_owned(), l.line()))
                .unwrap_or_default();
            if in_replay_code() {
                let thread = std::thread::current();
                eprintln!(
                    "ppd: the replay failed inside ppd, not in the program (thread {}): \
                     {message} at {file}:{line}; the replay is abandoned",
                    thread.name().unwrap_or("unnamed")
                );
                std::process::abort();
            }
            LAST.with(|last| {
                *last.borrow_mut() = Some(PanicReport {
                    message,
                    file,
                    line,
                })
            });
            previous(info);
        }));
    });
}

/// Takes the report of the last panic on this thread.
pub fn take_last_panic() -> Option<PanicReport> {
    LAST.with(|last| last.borrow_mut().take())
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    use super::{ReplayCode, install_hook};

    /// Set in the child's environment: panic inside replay code (`inside`) or outside.
    const CHILD: &str = "PPD_PANIC_TEST_CHILD";

    #[test]
    #[ignore = "run by a_panic_in_replay_code_ends_the_program_and_blames_ppd"]
    fn child_panics() {
        let Ok(place) = std::env::var(CHILD) else {
            return;
        };
        install_hook();
        let _replay_code = (place == "inside").then(ReplayCode::enter);
        panic!("injected panic");
    }

    fn run_child(place: &str) -> std::process::Output {
        Command::new(std::env::current_exe().unwrap())
            .args([
                "runtime::panic::tests::child_panics",
                "--exact",
                "--ignored",
            ])
            .args(["--nocapture", "--test-threads", "1"])
            .env(CHILD, place)
            .output()
            .unwrap()
    }

    #[test]
    fn a_panic_in_replay_code_ends_the_program_and_blames_ppd() {
        let inside = run_child("inside");
        let stderr = String::from_utf8_lossy(&inside.stderr);
        assert_eq!(inside.status.signal(), Some(libc::SIGABRT), "{stderr}");
        assert!(
            stderr.contains("the replay failed inside ppd, not in the program")
                && stderr.contains("injected panic"),
            "{stderr}"
        );
        // The program's own panics unwind as always: an outcome replay reproduces.
        let outside = run_child("outside");
        let stderr = String::from_utf8_lossy(&outside.stderr);
        assert_eq!(outside.status.signal(), None, "{stderr}");
        assert!(!stderr.contains("inside ppd"), "{stderr}");
    }
}
