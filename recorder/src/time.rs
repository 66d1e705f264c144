//! Clocks, mirroring `std::time`. Every reading is logged with its value, and replay returns the
//! logged value, so code that measures time behaves the same way again.

use std::ops::{Add, AddAssign, Sub, SubAssign};

pub use std::time::{Duration, SystemTimeError};

use ppd_formats::event::ClockSource;
use ppd_formats::{Event, EventKind};

use crate::runtime;
use crate::runtime::backend::{Op, expected};

/// The monotonic clock in nanoseconds (since boot): what an `Instant` holds.
fn monotonic_nanos() -> u64 {
    // The clock std's `Instant` reads on Linux, read without the conversions `Instant` needs:
    // in pass-through this read is all `now` costs, as std's.
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to write; CLOCK_MONOTONIC is always readable.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Reads a clock through the runtime: the live reading when recording, the logged one when
/// replaying.
fn read_clock(source: ClockSource, live: impl FnOnce() -> u64) -> u64 {
    if !runtime::active() {
        return live();
    }
    let logged = runtime::expect(Op::plain(EventKind::Clock, None));
    let nanos = expected::clock(&logged, source).unwrap_or_else(live);
    runtime::done(&Event::Clock { source, nanos });
    nanos
}

/// A monotonic instant, like `std::time::Instant`.
///
/// ```
/// let start = ppd::time::Instant::now();
/// let later = ppd::time::Instant::now();
/// assert!(later >= start);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    nanos: u64,
}

impl Instant {
    /// The instant `nanos` nanoseconds after the clock's origin (what [`Instant::nanos`] gives).
    pub(crate) fn from_nanos(nanos: u64) -> Instant {
        Instant { nanos }
    }

    /// Nanoseconds since the clock's origin.
    pub(crate) fn nanos(self) -> u64 {
        self.nanos
    }

    /// Now.
    ///
    /// ```
    /// let _now = ppd::time::Instant::now();
    /// ```
    pub fn now() -> Instant {
        let nanos = read_clock(ClockSource::Monotonic, monotonic_nanos);
        Instant { nanos }
    }

    /// Time from `earlier` to this instant, zero if `earlier` is later.
    ///
    /// ```
    /// let a = ppd::time::Instant::now();
    /// let b = a + std::time::Duration::from_secs(1);
    /// assert_eq!(b.duration_since(a).as_secs(), 1);
    /// ```
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }

    /// Time from `earlier`, or `None` if `earlier` is later.
    ///
    /// ```
    /// let a = ppd::time::Instant::now();
    /// assert!(a.checked_duration_since(a).is_some());
    /// ```
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.nanos
            .checked_sub(earlier.nanos)
            .map(Duration::from_nanos)
    }

    /// Time from `earlier`, zero if `earlier` is later.
    ///
    /// ```
    /// let a = ppd::time::Instant::now();
    /// assert_eq!(a.saturating_duration_since(a), std::time::Duration::ZERO);
    /// ```
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.nanos.saturating_sub(earlier.nanos))
    }

    /// Time since this instant (reads the clock).
    ///
    /// ```
    /// let a = ppd::time::Instant::now();
    /// let _ = a.elapsed();
    /// ```
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// This instant plus `d`, if representable.
    ///
    /// ```
    /// let a = ppd::time::Instant::now();
    /// assert!(a.checked_add(std::time::Duration::from_secs(1)).is_some());
    /// ```
    pub fn checked_add(&self, d: Duration) -> Option<Instant> {
        let d = u64::try_from(d.as_nanos()).ok()?;
        self.nanos.checked_add(d).map(|nanos| Instant { nanos })
    }

    /// This instant minus `d`, if representable.
    ///
    /// ```
    /// let a = ppd::time::Instant::now() + std::time::Duration::from_secs(2);
    /// assert!(a.checked_sub(std::time::Duration::from_secs(1)).is_some());
    /// ```
    pub fn checked_sub(&self, d: Duration) -> Option<Instant> {
        let d = u64::try_from(d.as_nanos()).ok()?;
        self.nanos.checked_sub(d).map(|nanos| Instant { nanos })
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    fn add(self, d: Duration) -> Instant {
        self.checked_add(d)
            .expect("overflow when adding duration to instant")
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    fn sub(self, d: Duration) -> Instant {
        self.checked_sub(d)
            .expect("overflow when subtracting duration from instant")
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    fn sub(self, other: Instant) -> Duration {
        self.saturating_duration_since(other)
    }
}

/// The Unix epoch, like `std::time::UNIX_EPOCH`.
///
/// ```
/// assert_eq!(ppd::time::UNIX_EPOCH, ppd::time::SystemTime::UNIX_EPOCH);
/// ```
pub const UNIX_EPOCH: SystemTime = SystemTime::UNIX_EPOCH;

/// Wall-clock time, like `std::time::SystemTime`.
///
/// ```
/// let now = ppd::time::SystemTime::now();
/// assert!(now.duration_since(ppd::time::SystemTime::UNIX_EPOCH).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SystemTime(std::time::SystemTime);

impl SystemTime {
    /// The Unix epoch.
    pub const UNIX_EPOCH: SystemTime = SystemTime(std::time::UNIX_EPOCH);

    /// Now.
    ///
    /// ```
    /// let _now = ppd::time::SystemTime::now();
    /// ```
    pub fn now() -> SystemTime {
        let nanos = read_clock(ClockSource::Wall, || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() * 1_000_000_000 + u64::from(d.subsec_nanos()))
                .unwrap_or(0)
        });
        SystemTime(std::time::UNIX_EPOCH + Duration::from_nanos(nanos))
    }

    /// Time from `earlier`, or an error if `earlier` is later.
    ///
    /// ```
    /// let t = ppd::time::SystemTime::now();
    /// assert!(t.duration_since(t).is_ok());
    /// ```
    pub fn duration_since(&self, earlier: SystemTime) -> Result<Duration, SystemTimeError> {
        self.0.duration_since(earlier.0)
    }

    /// Time since this moment (reads the clock).
    ///
    /// ```
    /// let t = ppd::time::SystemTime::UNIX_EPOCH;
    /// assert!(t.elapsed().is_ok());
    /// ```
    pub fn elapsed(&self) -> Result<Duration, SystemTimeError> {
        SystemTime::now().duration_since(*self)
    }
}

impl From<SystemTime> for std::time::SystemTime {
    fn from(t: SystemTime) -> std::time::SystemTime {
        t.0
    }
}

impl Add<Duration> for SystemTime {
    type Output = SystemTime;

    fn add(self, d: Duration) -> SystemTime {
        SystemTime(self.0 + d)
    }
}

impl Sub<Duration> for SystemTime {
    type Output = SystemTime;

    fn sub(self, d: Duration) -> SystemTime {
        SystemTime(self.0 - d)
    }
}
