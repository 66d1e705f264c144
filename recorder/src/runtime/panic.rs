//! Capturing panic messages and locations so a panicking process's `Panic` event can say what
//! and where. The standard hook still runs, so the user sees the usual message.

use std::cell::RefCell;
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
