//! What every socket has, whatever it carries: its non-blocking switch, its pending error and
//! its clone, and for sockets that read and write, their timeouts. Set on std's socket when
//! there is one (pass-through, recording); the core keeps what the program set (the timeouts a
//! replayed read reports, whether a replayed read may return `WouldBlock`), since a replay has
//! no socket to ask.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net as std_unix;
use std::time::Duration;

use super::core::Core;

/// What ppd needs of every std socket.
pub(crate) trait OsSocket: AsRawFd + Sized + Send + Sync + 'static {
    fn os_set_nonblocking(&self, nonblocking: bool) -> io::Result<()>;
    fn os_take_error(&self) -> io::Result<Option<io::Error>>;
    fn os_try_clone(&self) -> io::Result<Self>;
}

/// What ppd needs of a std socket that reads and writes (not a listener): its timeouts.
pub(crate) trait OsTimeouts: OsSocket {
    fn os_set_read_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    fn os_set_write_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    fn os_read_timeout(&self) -> io::Result<Option<Duration>>;
    fn os_write_timeout(&self) -> io::Result<Option<Duration>>;
}

/// std's sockets, whose inherent methods of these names are the ones wanted.
macro_rules! os_socket {
    ($($socket:ty),*) => {$(
        impl OsSocket for $socket {
            fn os_set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
                self.set_nonblocking(nonblocking)
            }

            fn os_take_error(&self) -> io::Result<Option<io::Error>> {
                self.take_error()
            }

            fn os_try_clone(&self) -> io::Result<Self> {
                self.try_clone()
            }
        }
    )*};
}

macro_rules! os_timeouts {
    ($($socket:ty),*) => {$(
        impl OsTimeouts for $socket {
            fn os_set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                self.set_read_timeout(t)
            }

            fn os_set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                self.set_write_timeout(t)
            }

            fn os_read_timeout(&self) -> io::Result<Option<Duration>> {
                self.read_timeout()
            }

            fn os_write_timeout(&self) -> io::Result<Option<Duration>> {
                self.write_timeout()
            }
        }
    )*};
}

os_socket!(
    std::net::TcpStream,
    std::net::TcpListener,
    std::net::UdpSocket,
    std_unix::UnixStream,
    std_unix::UnixListener,
    std_unix::UnixDatagram
);
os_timeouts!(
    std::net::TcpStream,
    std::net::UdpSocket,
    std_unix::UnixStream,
    std_unix::UnixDatagram
);

/// std's four timeout methods for a public socket type whose `inner` has `options()`;
/// `$what` names what times out (`"a read"`), for the docs.
macro_rules! timeout_methods {
    ($what:literal) => {
        #[doc = concat!("Sets the read timeout; ", $what, " that times out returns std's error, logged.")]
        pub fn set_read_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
            self.inner.options().set_read_timeout(dur)
        }

        /// Sets the write timeout.
        pub fn set_write_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
            self.inner.options().set_write_timeout(dur)
        }

        /// The read timeout.
        pub fn read_timeout(&self) -> io::Result<Option<Duration>> {
            self.inner.options().read_timeout()
        }

        /// The write timeout.
        pub fn write_timeout(&self) -> io::Result<Option<Duration>> {
            self.inner.options().write_timeout()
        }
    };
}

pub(crate) use timeout_methods;

/// A socket's options in either mode: std's socket as it is, or under a backend the core and
/// std's socket when recording (none when replaying).
pub(crate) enum Options<'a, S> {
    Plain(&'a S),
    Logged(&'a Core, Option<&'a S>),
}

impl<S: OsSocket> Options<'_, S> {
    pub(crate) fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        match *self {
            Options::Plain(os) => os.os_set_nonblocking(nonblocking),
            Options::Logged(core, os) => {
                core.set_nonblocking(nonblocking);
                os.map_or(Ok(()), |os| os.os_set_nonblocking(nonblocking))
            }
        }
    }

    /// The socket's pending error: std's when there is a socket; replaying, none (an error
    /// that matters shows up in the logged operation that met it).
    pub(crate) fn take_error(&self) -> io::Result<Option<io::Error>> {
        match *self {
            Options::Plain(os) => os.os_take_error(),
            Options::Logged(_, os) => os.map_or(Ok(None), S::os_take_error),
        }
    }
}

impl<S: OsTimeouts> Options<'_, S> {
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match *self {
            Options::Plain(os) => os.os_set_read_timeout(t),
            Options::Logged(core, os) => {
                check_timeout(t)?;
                core.set_read_timeout(t);
                os.map_or(Ok(()), |os| os.os_set_read_timeout(t))
            }
        }
    }

    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match *self {
            Options::Plain(os) => os.os_set_write_timeout(t),
            Options::Logged(core, os) => {
                check_timeout(t)?;
                core.set_write_timeout(t);
                os.map_or(Ok(()), |os| os.os_set_write_timeout(t))
            }
        }
    }

    pub(crate) fn read_timeout(&self) -> io::Result<Option<Duration>> {
        match *self {
            Options::Plain(os) => os.os_read_timeout(),
            Options::Logged(core, _) => Ok(core.timeouts().0),
        }
    }

    pub(crate) fn write_timeout(&self) -> io::Result<Option<Duration>> {
        match *self {
            Options::Plain(os) => os.os_write_timeout(),
            Options::Logged(core, _) => Ok(core.timeouts().1),
        }
    }
}

/// std refuses a zero timeout; so does ppd, in every mode.
fn check_timeout(t: Option<Duration>) -> io::Result<()> {
    if t == Some(Duration::ZERO) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cannot set a 0 duration timeout",
        ));
    }
    Ok(())
}
