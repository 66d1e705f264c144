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
    /// Stops a re-execution that needs the logged `name` of a nested instance whose type
    /// is not serde (`logged`).
    pub fn unlogged<T>(&self, name: &str, type_name: &str) -> T {
        let what = match name {
            "%0" => format!("the result of the nested e-block {}", self.eblock),
            _ => format!("`{name}` after the nested e-block {}", self.eblock),
        };
        diverged(&logged::stop_reason(&what, type_name))
    }

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

/// E-block arguments and results of any type. A serde value is logged as itself; one that is
/// not is logged as a mark naming its type (and its `Debug` form when it has one), so that no
/// argument keeps a function from being an e-block. A re-execution cannot rebuild such a value:
/// it stops where it needs one and says which (`Postlog::unlogged`, and the emulator's
/// arguments). The attribute calls these as `(&&&Logged(&value)).log_entry(..)` with the three
/// traits in scope, so that method resolution picks the best one (autoref specialization, as
/// `tracer::probe`).
pub mod logged {
    use std::fmt::Debug;
    use std::marker::PhantomData;

    use ppd_formats::value::{self, MapWriter};
    use serde::Serialize;
    use serde::de::DeserializeOwned;

    use super::Postlog;

    /// The key of the mark that stands for a value that is not serde.
    pub const NOT_LOGGED: &str = "$not_logged";

    /// What is logged for a value that is not serde.
    #[derive(Debug, Serialize)]
    struct Mark {
        #[serde(rename = "$not_logged")]
        type_name: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        debug: Option<String>,
    }

    impl Mark {
        fn of<T: ?Sized>(debug: Option<String>) -> Mark {
            Mark {
                type_name: std::any::type_name::<T>(),
                debug,
            }
        }
    }

    /// A value to log.
    #[derive(Debug)]
    pub struct Logged<'a, T: ?Sized>(pub &'a T);

    /// Logs a serde value.
    pub trait ViaSerialize {
        /// Writes the value into a prelog or postlog.
        fn log_entry(&self, map: &mut MapWriter, name: &str);
        /// The value's bytes, as a log holds them.
        fn logged_bytes(&self) -> Vec<u8>;
    }

    impl<T: Serialize + ?Sized> ViaSerialize for &&Logged<'_, T> {
        fn log_entry(&self, map: &mut MapWriter, name: &str) {
            map.entry(name, self.0);
        }
        fn logged_bytes(&self) -> Vec<u8> {
            value::encode(self.0).unwrap_or_default()
        }
    }

    /// Logs the mark of a value that is not serde, with its `Debug` form.
    pub trait ViaDebug {
        /// Writes the mark into a prelog or postlog.
        fn log_entry(&self, map: &mut MapWriter, name: &str);
        /// The mark's bytes.
        fn logged_bytes(&self) -> Vec<u8>;
    }

    impl<T: Debug + ?Sized> ViaDebug for &Logged<'_, T> {
        fn log_entry(&self, map: &mut MapWriter, name: &str) {
            map.entry(name, &Mark::of::<T>(Some(format!("{:?}", self.0))));
        }
        fn logged_bytes(&self) -> Vec<u8> {
            value::encode(&Mark::of::<T>(Some(format!("{:?}", self.0)))).unwrap_or_default()
        }
    }

    /// Logs the mark of a value that is neither serde nor `Debug`: its type alone.
    pub trait ViaNothing {
        /// Writes the mark into a prelog or postlog.
        fn log_entry(&self, map: &mut MapWriter, name: &str);
        /// The mark's bytes.
        fn logged_bytes(&self) -> Vec<u8>;
    }

    impl<T: ?Sized> ViaNothing for Logged<'_, T> {
        fn log_entry(&self, map: &mut MapWriter, name: &str) {
            map.entry(name, &Mark::of::<T>(None));
        }
        fn logged_bytes(&self) -> Vec<u8> {
            value::encode(&Mark::of::<T>(None)).unwrap_or_default()
        }
    }

    /// A value of type `T` to take back from a log: `(&&Rebuilt::<T>::new()).take(..)`.
    #[derive(Debug)]
    pub struct Rebuilt<T>(PhantomData<fn() -> T>);

    impl<T> Rebuilt<T> {
        /// For the type `T`.
        pub fn new() -> Self {
            Rebuilt(PhantomData)
        }
    }

    impl<T> Default for Rebuilt<T> {
        fn default() -> Self {
            Rebuilt::new()
        }
    }

    /// Takes a serde value back from a nested instance's postlog.
    pub trait TakeLogged<T> {
        /// The logged value of `name`.
        fn take(&self, postlog: &Postlog, name: &str) -> T;
    }

    impl<T: DeserializeOwned> TakeLogged<T> for &Rebuilt<T> {
        fn take(&self, postlog: &Postlog, name: &str) -> T {
            postlog.take(name)
        }
    }

    /// A value that is not serde cannot be taken back: the re-execution stops.
    pub trait TakeUnlogged<T> {
        /// Stops the re-execution, naming the value.
        fn take(&self, postlog: &Postlog, name: &str) -> T;
    }

    impl<T> TakeUnlogged<T> for Rebuilt<T> {
        fn take(&self, postlog: &Postlog, name: &str) -> T {
            postlog.unlogged(name, std::any::type_name::<T>())
        }
    }

    /// Why a re-execution stopped at a value that is not serde, in the user's words.
    pub fn stop_reason(what: &str, type_name: &str) -> String {
        format!(
            "{what} is a `{type_name}`, which is not serde (Serialize and Deserialize): it was \
             not logged, so the re-execution cannot rebuild it and stops here"
        )
    }
}
