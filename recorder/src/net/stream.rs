//! A connected stream socket, TCP or Unix, as one generic wrapper: std's socket as it is in
//! pass-through mode, the logged [`Core`] (and std's socket, when recording) under a backend.

use std::io;
use std::net::Shutdown;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use ppd_formats::ObjectId;
use ppd_formats::event::{NetOp, OpenHow, SocketKind};

use super::core::{Core, Opened, Site};
use super::options::{Options, OsTimeouts};

/// What ppd needs of a std stream socket (`TcpStream`, `UnixStream`).
pub(crate) trait OsStream: OsTimeouts {
    /// What a `NetOpen` calls it.
    const KIND: SocketKind;
    /// Its address type.
    type Addr;
    fn local(&self) -> io::Result<Self::Addr>;
    fn peer(&self) -> io::Result<Self::Addr>;
    /// An address as the log writes it.
    fn show(addr: &Self::Addr) -> String;
    /// An address from the log.
    fn parse(addr: &str) -> io::Result<Self::Addr>;
    fn os_shutdown(&self, how: Shutdown) -> io::Result<()>;
    fn os_peek(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Reads and writes through a shared reference, as std's sockets allow
    /// (`Read for &TcpStream`): clones of a logged stream share one socket.
    fn os_read(&self, buf: &mut [u8]) -> io::Result<usize>;
    fn os_write(&self, buf: &[u8]) -> io::Result<usize>;
    fn os_flush(&self) -> io::Result<()>;
    /// The peer's OS process, for a Unix socket.
    fn peer_pid(&self) -> Option<u32> {
        None
    }
}

/// A stream under a backend: std's socket when recording (none when replaying), the core.
#[derive(Debug)]
pub(crate) struct Logged<S> {
    pub(crate) os: Option<S>,
    pub(crate) core: Core,
}

/// A stream socket in either mode.
#[derive(Debug)]
pub(crate) enum Stream<S> {
    /// Pass-through: std's socket, nothing logged.
    Plain(S),
    /// Under a backend; clones share it (one stream, one pair of offsets).
    Logged(Arc<Logged<S>>),
}

impl<S: OsStream> Stream<S> {
    /// Wraps what opening gave: std's socket in pass-through mode, else the logged socket.
    pub(crate) fn opened(os: Option<S>, core: Option<Core>) -> io::Result<Stream<S>> {
        match (os, core) {
            (Some(os), None) => Ok(Stream::Plain(os)),
            (os, Some(core)) => Ok(Stream::Logged(Arc::new(Logged { os, core }))),
            (None, None) => Err(io::Error::other("ppd: a socket opened without a socket")),
        }
    }

    /// Connects: `connect` on the operating system in pass-through mode and when recording
    /// (both addresses logged), the logged outcome when replaying.
    pub(crate) fn connect(site: Site, connect: impl FnOnce() -> io::Result<S>) -> io::Result<Self> {
        if !crate::runtime::active() {
            return connect().map(Stream::Plain);
        }
        let (os, core) = Core::open(S::KIND, OpenHow::Connect, None, site, || {
            let os = connect()?;
            Ok(Opened {
                local: S::show(&os.local()?),
                peer: S::show(&os.peer()?),
                peer_pid: os.peer_pid(),
                os,
            })
        })?;
        Self::opened(os, Some(core))
    }

    /// One end of a pair made together (`UnixStream::pair`): `os` is std's socket in
    /// pass-through mode and when recording, none when replaying; `from` is the other end,
    /// for the second.
    pub(crate) fn paired(os: Option<S>, from: Option<ObjectId>, site: Site) -> io::Result<Self> {
        if !crate::runtime::active() {
            return Self::opened(os, None);
        }
        let (os, core) = Core::open(S::KIND, OpenHow::Pair, from, site, || {
            Ok(Opened {
                os: os.ok_or_else(|| io::Error::other("ppd: a pair without sockets"))?,
                local: String::new(),
                peer: String::new(),
                peer_pid: None,
            })
        })?;
        Self::opened(os, Some(core))
    }

    /// A stream rebuilt for re-executing an e-block.
    pub(crate) fn emulated(id: ObjectId) -> Stream<S> {
        Stream::Logged(Arc::new(Logged {
            os: None,
            core: Core::emulated(id),
        }))
    }

    /// Its id under a backend.
    pub(crate) fn id(&self) -> ObjectId {
        match self {
            Stream::Plain(_) => ObjectId(0),
            Stream::Logged(l) => l.core.id,
        }
    }

    fn fd(l: &Logged<S>) -> Option<RawFd> {
        l.os.as_ref().map(AsRawFd::as_raw_fd)
    }

    pub(crate) fn read(&self, buf: &mut [u8], site: Site) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.os_read(buf),
            Stream::Logged(l) => l.core.read(Self::fd(l), buf, false, site),
        }
    }

    pub(crate) fn peek(&self, buf: &mut [u8], site: Site) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.os_peek(buf),
            Stream::Logged(l) => l.core.read(Self::fd(l), buf, true, site),
        }
    }

    pub(crate) fn write(&self, buf: &[u8], site: Site) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.os_write(buf),
            Stream::Logged(l) => l.core.write(Self::fd(l), buf, site, |buf| match &l.os {
                Some(os) => os.os_write(buf),
                None => Err(io::Error::other("ppd: no socket to write to")),
            }),
        }
    }

    pub(crate) fn flush(&self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.os_flush(),
            Stream::Logged(l) => match &l.os {
                Some(os) => os.os_flush(),
                None => Ok(()),
            },
        }
    }

    pub(crate) fn shutdown(&self, how: Shutdown, site: Site) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.os_shutdown(how),
            Stream::Logged(l) => l.core.unless_failed(NetOp::Shutdown, site, || match &l.os {
                Some(os) => os.os_shutdown(how),
                None => Ok(()),
            }),
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<S::Addr> {
        match self {
            Stream::Plain(s) => s.local(),
            Stream::Logged(l) => match &l.os {
                Some(os) => os.local(),
                None => S::parse(&l.core.local),
            },
        }
    }

    pub(crate) fn peer_addr(&self) -> io::Result<S::Addr> {
        match self {
            Stream::Plain(s) => s.peer(),
            Stream::Logged(l) => match &l.os {
                Some(os) => os.peer(),
                None => S::parse(&l.core.peer),
            },
        }
    }

    /// Its non-blocking switch, pending error and timeouts.
    pub(crate) fn options(&self) -> Options<'_, S> {
        match self {
            Stream::Plain(s) => Options::Plain(s),
            Stream::Logged(l) => Options::Logged(&l.core, l.os.as_ref()),
        }
    }

    /// Another handle to the same stream: in pass-through std's clone; under a backend the
    /// same logged socket (clones share one stream and its offsets).
    pub(crate) fn try_clone(&self) -> io::Result<Stream<S>> {
        match self {
            Stream::Plain(s) => s.os_try_clone().map(Stream::Plain),
            Stream::Logged(l) => Ok(Stream::Logged(Arc::clone(l))),
        }
    }

    /// The OS socket, when there is one (recording and pass-through).
    pub(crate) fn os(&self) -> Option<&S> {
        match self {
            Stream::Plain(s) => Some(s),
            Stream::Logged(l) => l.os.as_ref(),
        }
    }
}

/// `Read` and `Write` for a public stream type (with its `Stream` as `inner`) and for a shared
/// reference to it, as std has them for its streams.
macro_rules! read_write {
    ($stream:ty) => {
        impl std::io::Read for $stream {
            #[track_caller]
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.inner.read(buf, std::panic::Location::caller())
            }
        }

        impl std::io::Read for &$stream {
            #[track_caller]
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.inner.read(buf, std::panic::Location::caller())
            }
        }

        impl std::io::Write for $stream {
            #[track_caller]
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.inner.write(buf, std::panic::Location::caller())
            }

            fn flush(&mut self) -> std::io::Result<()> {
                self.inner.flush()
            }
        }

        impl std::io::Write for &$stream {
            #[track_caller]
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.inner.write(buf, std::panic::Location::caller())
            }

            fn flush(&mut self) -> std::io::Result<()> {
                self.inner.flush()
            }
        }
    };
}

pub(crate) use read_write;
