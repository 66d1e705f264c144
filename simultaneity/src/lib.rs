//! Spezialetti & Gupta's static analysis of simultaneous events, over a distributed control
//! flow graph (DCFG).
//!
//! What is here, and which section of the paper each part follows:
//!
//! * [`Dcfg`] (§2, Definition 2.1): statement, send and receive nodes of each process,
//!   intraprocess edges (`Succ`/`Pred`) and interprocess edges from a send to each receive that
//!   may get its message. Sends are non-blocking, receives blocking, as in the paper.
//! * [`Analysis`] (§3.2): `Reach`, `Dom` and `PDom` per node, computed by iteration to a fixed
//!   point over each process's graph (the paper assumes them given); `PRE` by the equations
//!   and worklist algorithm of §3.2.1 (an overestimate); `POST1` and `POST2` by the forward and
//!   backward approximations of §3.2.2 (underestimates: only interprocess edges that are the
//!   send's only out-edge, respectively the receive's only in-edge, carry a guarantee);
//!   `StatsAlongPaths` (§3.2.3) and `PathExists` (§3.2.4).
//! * [`Counts`]: how much work each step did, to set against the bounds of §3.2.5: `PRE`,
//!   `POST1` and `POST2` each O(S × E) edge examinations, `StatsAlongPaths` O(N²), `PathExists`
//!   O(|PATH|²) calls of `StatsAlongPaths`.
//!
//! Where this goes beyond the paper or simplifies: [`Dcfg`] takes the edges its builder gives
//! it ([`source`] prunes send–receive pairs by the §2 counting, `#S > #R`, where one process
//! sends on a channel and one other receives from it); `Reach(n)` holds `n` only when `n`
//! lies on a cycle, and `Dom(n)`/`PDom(n)` hold `n`.
//!
//! * [`Analysis::ordered`]: the guaranteed interaction (a send after one node on every path,
//!   a receive in its `POST2` set before the other on every path) that orders every execution
//!   of one node after the single execution of another — what a static "impossible in every
//!   run" verdict for `==` or `&` has to rest on. It uses guarantees only, never `PRE`'s
//!   potential interactions.
//!
//! The event classes of §3.1 and ppd's `==`: a component `mark L` without a condition holds
//! from the process's first mark `L` on, so it is *monotonic*; `mark L if E` (from a mark that
//! satisfies `E` to the next mark `L` that does not) and `enter F` (while inside `F`) are not,
//! and their stability at a recognition point needs post-recognition interactions (*dependent
//! monotonic*) or, in addition, no change of the state they test between `S_i` and `R_i`
//! (*generalized dependent monotonic*, checked with `StatsAlongPaths`). ppd's replay evaluates
//! `==` over the lattice of the replayed run's consistent states, where the halted state is
//! the evaluated one, so its dynamic evaluation needs no stability argument.
//!
//! * [`source`]: the DCFG built from a program's Rust source with `syn` — the paper takes the
//!   graph as given (§2); which constructs are modelled and where the analysis gives up is
//!   listed there. Going beyond the paper, a receive forks into a node that took a message and
//!   one that took none (disconnected, empty, timed out), so that only code that needs a
//!   message is dominated by the receive; and senders the analysis cannot see are one extra
//!   *unmodelled sender* process whose edges keep `POST2` from promising anything about the
//!   receives they could feed.
//! * [`check()`]: the verdict on a `==` or `&` predicate of local components: *impossible*
//!   from [`Analysis::ordered`] only, *possible* with the recognition points of §3.2.4
//!   (condition (i): `PathExists` through receives whose `PRE` holds a send after each
//!   component; condition (ii), the post-recognition sends, is not checked, since ppd's
//!   replay halts without them), or *unknown* with the constructs that decide it.
//!   [`render`] words it for `ppd check`.
//!
//! The instrumentation of §3.3 is the live program's (`ppd record --stop`, in the recorder's
//! `runtime::halt`): given the recognition points, each process evaluates the whole predicate
//! only there, once the parts' values that travel piggybacked on its synchronization say
//! every part has held; since ppd's parts are not all monotonic, the evaluation then reads the
//! parts as they hold now. ppd's replay evaluates predicates over the recorded run instead.
//!
//! Not done: stability of generalized dependent monotonic components (`StatsAlongPaths` is
//! there, no predicate uses it).

#![deny(missing_docs)]

mod bits;
mod check;
mod dcfg;
mod sets;
pub mod source;

pub use bits::Bits;
pub use check::{CheckError, Combination, Component, Event, Recognition, Verdict, check, render};
pub use dcfg::{Dcfg, DcfgError, Kind, Node, NodeId, Process};
pub use sets::{Analysis, Counts, Ordering};
