//! [`Select`] over [`Receiver`]s and the [`select!`](crate::select) macro, with
//! crossbeam-channel's API. The choice is the mpsc [`Select`](crate::sync::mpsc::Select)'s:
//! logged as a `Select` event (or `RecvNone` when nothing was ready in time), made again in
//! replay; the receive that completes it is logged as every receive is.

use std::fmt;
use std::panic::Location;
use std::time::{Duration, Instant};

use super::{
    ReadyTimeoutError, Receiver, RecvError, SelectTimeoutError, TryReadyError, TrySelectError,
};
use crate::sync::mpsc::{self, Wait};

/// Waits on several receive operations and chooses one that can proceed, like
/// `crossbeam_channel::Select`.
///
/// ```
/// let (s1, r1) = ppd::channel::unbounded::<u8>();
/// let (_s2, r2) = ppd::channel::unbounded::<u8>();
/// s1.send(3).unwrap();
/// let mut sel = ppd::channel::Select::new();
/// let first = sel.recv(&r1);
/// sel.recv(&r2);
/// let op = sel.select();
/// assert_eq!(op.index(), first);
/// assert_eq!(op.recv(&r1), Ok(3));
/// ```
#[derive(Default)]
pub struct Select<'a> {
    inner: mpsc::Select<'a>,
}

impl fmt::Debug for Select<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl<'a> Select<'a> {
    /// An empty selection.
    ///
    /// ```
    /// let _sel = ppd::channel::Select::new();
    /// ```
    pub fn new() -> Select<'a> {
        Select {
            inner: mpsc::Select::new(),
        }
    }

    /// Adds a receive from `r`; returns the operation's index.
    ///
    /// ```
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// assert_eq!(sel.recv(&r), 0);
    /// ```
    pub fn recv<T>(&mut self, r: &'a Receiver<T>) -> usize {
        self.inner.recv_core(&r.core)
    }

    /// Waits until one of the operations can proceed and chooses it.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(1u8).unwrap();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert_eq!(sel.select().recv(&r), Ok(1));
    /// ```
    #[track_caller]
    pub fn select(&mut self) -> SelectedOperation<'a> {
        loop {
            if let Ok(op) = self.inner.choose(Wait::Block, Location::caller()) {
                return SelectedOperation { inner: op };
            }
        }
    }

    /// Chooses an operation that can proceed now, if there is one.
    ///
    /// ```
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.try_select().is_err());
    /// ```
    #[track_caller]
    pub fn try_select(&mut self) -> Result<SelectedOperation<'a>, TrySelectError> {
        self.inner
            .choose(Wait::Try, Location::caller())
            .map(|inner| SelectedOperation { inner })
            .map_err(|_| TrySelectError)
    }

    /// Like [`select`](Select::select), giving up after `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.select_timeout(Duration::from_millis(1)).is_err());
    /// ```
    #[track_caller]
    pub fn select_timeout(
        &mut self,
        timeout: Duration,
    ) -> Result<SelectedOperation<'a>, SelectTimeoutError> {
        self.inner
            .choose(Wait::Timeout(timeout), Location::caller())
            .map(|inner| SelectedOperation { inner })
            .map_err(|_| SelectTimeoutError)
    }

    /// Like [`select`](Select::select), giving up at `deadline`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.select_deadline(Instant::now()).is_err());
    /// ```
    #[track_caller]
    pub fn select_deadline(
        &mut self,
        deadline: Instant,
    ) -> Result<SelectedOperation<'a>, SelectTimeoutError> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.inner
            .choose(Wait::Timeout(left), Location::caller())
            .map(|inner| SelectedOperation { inner })
            .map_err(|_| SelectTimeoutError)
    }

    /// Waits until one of the operations can proceed and returns its index without performing
    /// it; the caller then does (a `try_recv`, say), and that is logged on its own.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(2u8).unwrap();
    /// let mut sel = ppd::channel::Select::new();
    /// let i = sel.recv(&r);
    /// assert_eq!(sel.ready(), i);
    /// assert_eq!(r.try_recv(), Ok(2));
    /// ```
    #[track_caller]
    pub fn ready(&mut self) -> usize {
        loop {
            if let Ok(index) = self.inner.ready_in(Wait::Block, Location::caller()) {
                return index;
            }
        }
    }

    /// The index of an operation that can proceed now, if there is one.
    ///
    /// ```
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.try_ready().is_err());
    /// ```
    #[track_caller]
    pub fn try_ready(&mut self) -> Result<usize, TryReadyError> {
        self.inner
            .ready_in(Wait::Try, Location::caller())
            .map_err(|_| TryReadyError)
    }

    /// Like [`ready`](Select::ready), giving up after `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.ready_timeout(Duration::from_millis(1)).is_err());
    /// ```
    #[track_caller]
    pub fn ready_timeout(&mut self, timeout: Duration) -> Result<usize, ReadyTimeoutError> {
        self.inner
            .ready_in(Wait::Timeout(timeout), Location::caller())
            .map_err(|_| ReadyTimeoutError)
    }
}

/// The operation a [`Select`] chose; complete it with [`recv`](SelectedOperation::recv).
///
/// ```
/// let (s, r) = ppd::channel::unbounded::<u8>();
/// s.send(5).unwrap();
/// let mut sel = ppd::channel::Select::new();
/// sel.recv(&r);
/// let op: ppd::channel::SelectedOperation<'_> = sel.select();
/// assert_eq!(op.index(), 0);
/// assert_eq!(op.recv(&r), Ok(5));
/// ```
#[derive(Debug)]
pub struct SelectedOperation<'a> {
    inner: mpsc::SelectedOperation<'a>,
}

impl SelectedOperation<'_> {
    /// The index [`Select::recv`] returned for the chosen operation.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(0u8).unwrap();
    /// let mut sel = ppd::channel::Select::new();
    /// let i = sel.recv(&r);
    /// let op = sel.select();
    /// assert_eq!(op.index(), i);
    /// op.recv(&r).unwrap();
    /// ```
    pub fn index(&self) -> usize {
        self.inner.index()
    }

    /// Completes the chosen receive; `r` must be the receiver added at this index.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(4u8).unwrap();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert_eq!(sel.select().recv(&r), Ok(4));
    /// ```
    pub fn recv<T: Send>(self, r: &Receiver<T>) -> Result<T, RecvError> {
        self.inner.recv_core(&r.core).map_err(|_| RecvError)
    }
}

/// Waits on several receives at once, like crossbeam-channel's `select!`: arms
/// `recv(r) -> msg => body`, and at most one of `default => body` (when none is ready now)
/// or `default(timeout) => body` (when none is ready in time). The arm taken is logged and
/// replay takes it again.
///
/// ```
/// use std::time::Duration;
/// let (s1, r1) = ppd::channel::unbounded::<u8>();
/// let (_s2, r2) = ppd::channel::unbounded::<u8>();
/// s1.send(7).unwrap();
/// let got = ppd::select! {
///     recv(r1) -> msg => msg.unwrap(),
///     recv(r2) -> msg => msg.unwrap() + 100,
///     default(Duration::from_millis(10)) => 0,
/// };
/// assert_eq!(got, 7);
/// ```
#[macro_export]
macro_rules! select {
    ($($tokens:tt)*) => {
        $crate::__select_parse!([] [] $($tokens)*)
    };
}

/// Parses `select!`'s arms: receives, then the default. Not a stable interface.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    // A receive arm whose body is a block: the comma after it is optional.
    ([$($recvs:tt)*] [$($default:tt)*]
        recv($r:expr) -> $res:pat => $body:block $(,)? $($rest:tt)*) => {
        $crate::__select_parse!([$($recvs)* (($r) ($res) ($body))] [$($default)*] $($rest)*)
    };
    ([$($recvs:tt)*] [$($default:tt)*]
        recv($r:expr) -> $res:pat => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!([$($recvs)* (($r) ($res) ($body))] [$($default)*] $($rest)*)
    };
    ([$($recvs:tt)*] [$($default:tt)*] recv($r:expr) -> $res:pat => $body:expr) => {
        $crate::__select_parse!([$($recvs)* (($r) ($res) ($body))] [$($default)*])
    };
    ([$($recvs:tt)*] [] default => $body:block $(,)? $($rest:tt)*) => {
        $crate::__select_parse!([$($recvs)*] [(try) ($body)] $($rest)*)
    };
    ([$($recvs:tt)*] [] default => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_parse!([$($recvs)*] [(try) ($body)] $($($rest)*)?)
    };
    ([$($recvs:tt)*] [] default($timeout:expr) => $body:block $(,)? $($rest:tt)*) => {
        $crate::__select_parse!([$($recvs)*] [(timeout $timeout) ($body)] $($rest)*)
    };
    ([$($recvs:tt)*] [] default($timeout:expr) => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_parse!([$($recvs)*] [(timeout $timeout) ($body)] $($($rest)*)?)
    };
    ([$($recvs:tt)*] [$($default:tt)*]) => {
        $crate::__select_build!(sel [] [$($recvs)*] [$($default)*])
    };
}

/// Builds `select!`'s selection, one receiver at a time, each bound once. Not a stable
/// interface.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_build {
    ($sel:ident [$($done:tt)*] [(($r:expr) ($res:pat) ($body:expr)) $($rest:tt)*]
        [$($default:tt)*]) => {{
        let receiver = &$r;
        $crate::__select_build!($sel [$($done)* (receiver ($res) ($body))] [$($rest)*]
            [$($default)*])
    }};
    ($sel:ident [$(($receiver:ident ($res:pat) ($body:expr)))*] [] []) => {{
        let mut $sel = $crate::channel::Select::new();
        let indexes = [$($sel.recv($receiver)),*];
        let op = $sel.select();
        $crate::__select_dispatch!(op indexes 0usize; $(($receiver ($res) ($body)))*)
    }};
    ($sel:ident [$(($receiver:ident ($res:pat) ($body:expr)))*] [] [(try) ($default:expr)]) => {{
        let mut $sel = $crate::channel::Select::new();
        let indexes = [$($sel.recv($receiver)),*];
        match $sel.try_select() {
            Ok(op) => $crate::__select_dispatch!(op indexes 0usize; $(($receiver ($res) ($body)))*),
            Err(_) => $default,
        }
    }};
    ($sel:ident [$(($receiver:ident ($res:pat) ($body:expr)))*] []
        [(timeout $timeout:expr) ($default:expr)]) => {{
        let mut $sel = $crate::channel::Select::new();
        let indexes = [$($sel.recv($receiver)),*];
        match $sel.select_timeout($timeout) {
            Ok(op) => $crate::__select_dispatch!(op indexes 0usize; $(($receiver ($res) ($body)))*),
            Err(_) => $default,
        }
    }};
}

/// Completes the receive `select!` chose and runs its arm. Not a stable interface.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_dispatch {
    ($op:ident $indexes:ident $at:expr; ($receiver:ident ($res:pat) ($body:expr)) $($rest:tt)*) => {
        if $op.index() == $indexes[$at] {
            let $res = $op.recv($receiver);
            $body
        } else {
            $crate::__select_dispatch!($op $indexes $at + 1; $($rest)*)
        }
    };
    ($op:ident $indexes:ident $at:expr;) => {
        unreachable!("select! chose an operation it did not add")
    };
}
