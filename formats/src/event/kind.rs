//! The table of event kinds: every kind's name, its tag order and its class, declared once.
//!
//! [`EventKind`], [`EventKind::ALL`] (whose order is the codec's tag order and the compact
//! store's), [`EventKind::name`] and [`EventKind::class`] are all made from the one table at
//! the bottom of this file. The data enums ([`Event`](super::Event), flowback's `Op`) each map
//! their variants to a kind in one exhaustive match; an analysis decides what a kind means for
//! it by its [`Class`], so that adding a kind of an existing class changes the table, the data
//! enums and the layouts, not the analyses.

use serde::{Deserialize, Serialize};

/// What an event is for, as the analyses tell kinds apart. A new class is a new question for
/// every analysis that matches on classes: the compiler lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// A process's life: its start, a spawn, a join, its end or panic.
    Lifecycle,
    /// A shared object made.
    Create,
    /// A channel message: sent, received, not received, chosen by a select, undelivered.
    Message,
    /// A mutex or reader-writer lock taken or released.
    Lock,
    /// A semaphore operation.
    Semaphore,
    /// An atomic access.
    Atomic,
    /// A value the run read from outside (a clock, random bits, a question about the
    /// machine or the timing): replay gives it again.
    Input,
    /// The answer of a non-blocking attempt (a `try_lock` that found the lock held, or took
    /// it): replay gives it again.
    Attempt,
    /// An e-block's entry or exit.
    Eblock,
    /// A user mark.
    Mark,
    /// A wait marker: the process is about to wait (on an object, in a join, in a sleep).
    /// It orders nothing and is what a hang leaves at the end of a log.
    Wait,
    /// A socket made, written, read, or failed.
    Socket,
}

/// How an event changes its process's e-block nesting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nesting {
    /// An e-block instance begins (`EblockEnter`).
    Enter,
    /// The innermost open instance ends (`EblockExit`).
    Exit,
    /// Every other kind.
    Flat,
}

/// Declares [`EventKind`] and its table-driven methods from rows `Kind = "name", Class;`.
macro_rules! event_kinds {
    ($($kind:ident = $name:literal, $class:ident;)*) => {
        /// The kind of an event, without its data; used for counting and filtering.
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(rename_all = "snake_case")]
        #[allow(missing_docs)]
        pub enum EventKind {
            $($kind,)*
        }

        impl EventKind {
            /// Every kind, in tag order (the table's).
            pub const ALL: [EventKind; [$(EventKind::$kind),*].len()] = [$(EventKind::$kind),*];

            /// The snake_case name used in text and JSON output.
            pub fn name(self) -> &'static str {
                match self {
                    $(EventKind::$kind => $name,)*
                }
            }

            /// What the kind is for.
            pub fn class(self) -> Class {
                match self {
                    $(EventKind::$kind => Class::$class,)*
                }
            }
        }
    };
}

event_kinds! {
    Start = "start", Lifecycle;
    Spawn = "spawn", Lifecycle;
    Join = "join", Lifecycle;
    Exit = "exit", Lifecycle;
    Panic = "panic", Lifecycle;
    Create = "create", Create;
    Send = "send", Message;
    Recv = "recv", Message;
    RecvNone = "recv_none", Message;
    Select = "select", Message;
    Lock = "lock", Lock;
    Unlock = "unlock", Lock;
    SemAcquire = "sem_acquire", Semaphore;
    SemRelease = "sem_release", Semaphore;
    Atomic = "atomic", Atomic;
    Clock = "clock", Input;
    Random = "random", Input;
    EblockEnter = "eblock_enter", Eblock;
    EblockExit = "eblock_exit", Eblock;
    Mark = "mark", Mark;
    Blocked = "blocked", Wait;
    Undelivered = "undelivered", Message;
    JoinBlocked = "join_blocked", Wait;
    Sleep = "sleep", Wait;
    Answer = "answer", Input;
    Outcome = "outcome", Attempt;
    RwAcquire = "rw_acquire", Lock;
    RwRelease = "rw_release", Lock;
    NetOpen = "net_open", Socket;
    NetWrite = "net_write", Socket;
    NetRead = "net_read", Socket;
    NetSendTo = "net_send_to", Socket;
    NetRecvFrom = "net_recv_from", Socket;
    NetFail = "net_fail", Socket;
}

impl EventKind {
    /// How the kind changes the e-block nesting: what the walkers that only track nesting
    /// match on.
    pub fn nesting(self) -> Nesting {
        match self {
            EventKind::EblockEnter => Nesting::Enter,
            EventKind::EblockExit => Nesting::Exit,
            _ => Nesting::Flat,
        }
    }

    /// Whether it is a wait marker ([`Class::Wait`]): logged before a wait, ordering nothing,
    /// skipped by replay's comparisons when the operation it announced follows.
    pub fn is_wait(self) -> bool {
        self.class() == Class::Wait
    }

    /// Whether the process ends with it.
    pub fn ends_process(self) -> bool {
        matches!(self, EventKind::Exit | EventKind::Panic)
    }

    /// The kind's position in [`EventKind::ALL`]: its tag order.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::EventKind;

    #[test]
    fn the_table_is_in_declaration_order_with_distinct_names() {
        for (i, kind) in EventKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i, "{kind:?}");
        }
        let mut names: Vec<_> = EventKind::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EventKind::ALL.len());
    }

    #[test]
    fn names_are_the_serde_names() {
        for kind in EventKind::ALL {
            let json = serde_json::to_string(&kind).expect("a kind serializes");
            assert_eq!(json, format!("\"{}\"", kind.name()));
        }
    }
}
