//! The runtime side of `#[ppd::eblock]`: prelogs at entry, postlogs at exit (Miller & Choi
//! §5.1). Calls nest, so log intervals nest (§5.2). Not called directly: the attribute
//! generates the calls.
//!
//! A prelog is a map from parameter name to value; a postlog maps `%0` to the return value and
//! each `&mut` parameter's name to its final value. When ppd re-executes an e-block instance,
//! a nested e-block call is not re-run: [`enter`] returns [`Entry::Substituted`] with the
//! nested instance's postlog, and the call site takes its results from it (§5.2).

use std::panic::Location;

use ppd_formats::value::{self, MapWriter};
use ppd_formats::{Event, EventKind};
use serde::de::DeserializeOwned;

use crate::runtime::backend::{Mode, Op};
use crate::runtime::{self, diverged};

/// An open e-block instance.
#[derive(Debug)]
#[must_use = "an e-block frame must be closed with `exit`"]
pub struct Frame {
    name: &'static str,
    open: bool,
}

/// What a call of an e-block does.
#[derive(Debug)]
pub enum Entry {
    /// Run the body, then [`Frame::exit`].
    Run(Frame),
    /// Re-executing an enclosing instance: take the results from this postlog.
    Substituted(Postlog),
}

/// Starts a prelog or postlog of `len` entries.
pub fn map(len: u32) -> MapWriter {
    MapWriter::new(len)
}

/// Enters e-block `name`, logging the prelog `prelog()` produces (not called in pass-through).
pub fn enter(
    name: &'static str,
    site: &'static Location<'static>,
    prelog: impl FnOnce() -> Vec<u8>,
) -> Entry {
    if !runtime::active() {
        return Entry::Run(Frame { name, open: false });
    }
    let bytes = prelog();
    runtime::expect(Op::plain(EventKind::EblockEnter, Some(site)));
    runtime::done(&Event::EblockEnter {
        eblock: name,
        site: Some(site),
        prelog: &bytes,
    });
    value::recycle(bytes);
    if runtime::mode() == Mode::Emulate {
        // A nested call: its postlog stands for it.
        return match runtime::expect(Op::plain(EventKind::EblockExit, None)) {
            Some(Event::EblockExit { postlog, .. }) => {
                runtime::done(&Event::EblockExit {
                    eblock: name,
                    postlog: &postlog,
                });
                Entry::Substituted(Postlog {
                    eblock: name,
                    bytes: postlog,
                })
            }
            _ => diverged(&format!("the nested e-block {name} has no logged exit")),
        };
    }
    runtime::enter_eblock();
    Entry::Run(Frame { name, open: true })
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
        value::recycle(bytes);
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

/// The logged results of a nested e-block instance, standing in for running it.
#[derive(Debug)]
pub struct Postlog {
    eblock: &'static str,
    bytes: Box<[u8]>,
}

impl Postlog {
    /// The logged value of `name` (`%0` for the return value).
    pub fn take<T: DeserializeOwned>(&self, name: &str) -> T {
        let entries = match value::map_entries(&self.bytes) {
            Ok(e) => e,
            Err(e) => diverged(&format!("the postlog of {} is malformed: {e}", self.eblock)),
        };
        let Some((_, bytes)) = entries.iter().find(|(n, _)| n == name) else {
            diverged(&format!("the postlog of {} has no `{name}`", self.eblock))
        };
        match value::decode_as(bytes) {
            Ok(v) => v,
            Err(e) => diverged(&format!(
                "the logged `{name}` of {} does not decode as its type: {e}",
                self.eblock
            )),
        }
    }
}
