//! The runtime side of `#[ppd::eblock]`: prelogs at entry, postlogs at exit (Miller & Choi
//! §5.1). Calls nest, so log intervals nest (§5.2). Not called directly: the attribute
//! generates the calls.

use std::panic::Location;

use ppd_formats::{Event, EventKind};

use crate::runtime;
use crate::runtime::backend::Op;

/// An open e-block instance.
#[derive(Debug)]
#[must_use = "an e-block frame must be closed with `exit`"]
pub struct Frame {
    name: &'static str,
    open: bool,
}

/// Enters e-block `name`, logging the prelog `prelog()` produces (not called in pass-through).
pub fn enter(
    name: &'static str,
    site: &'static Location<'static>,
    prelog: impl FnOnce() -> Vec<u8>,
) -> Frame {
    if !runtime::active() {
        return Frame { name, open: false };
    }
    let bytes = prelog();
    runtime::expect(Op::plain(EventKind::EblockEnter, Some(site)));
    runtime::done(&Event::EblockEnter {
        eblock: name,
        site: Some(site),
        prelog: &bytes,
    });
    runtime::enter_eblock();
    Frame { name, open: true }
}

impl Frame {
    /// Leaves the e-block, logging the postlog `postlog()` produces.
    pub fn exit(mut self, postlog: impl FnOnce() -> Vec<u8>) {
        if !self.open {
            return;
        }
        self.open = false;
        runtime::leave_eblock();
        let bytes = postlog();
        runtime::expect(Op::plain(EventKind::EblockExit, None));
        runtime::done(&Event::EblockExit {
            eblock: self.name,
            postlog: &bytes,
        });
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        // Unwinding out of the e-block: its interval stays open in the log (the process's
        // `Panic` event follows), but the process is no longer inside it.
        if self.open {
            runtime::leave_eblock();
        }
    }
}
