//! A connected stream socket, TCP or Unix, as one generic wrapper: std's socket as it is in
//! pass-through mode, the logged [`Core`] (and std's socket, when recording) under a backend.

use std::fmt;
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
    /// std's `read_to_end`, which reads into the vector's spare room.
    fn os_read_to_end(&self, buf: &mut Vec<u8>) -> io::Result<usize>;
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

    /// A read, located at `site` (or at the line a [`crate::io::BufReader`] reading it was
    /// called from).
    pub(crate) fn read(&self, buf: &mut [u8], site: Site) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.os_read(buf),
            Stream::Logged(l) => l.core.read(Self::fd(l), buf, false, located(site)),
        }
    }

    pub(crate) fn peek(&self, buf: &mut [u8], site: Site) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.os_peek(buf),
            Stream::Logged(l) => l.core.read(Self::fd(l), buf, true, located(site)),
        }
    }

    pub(crate) fn write(&self, buf: &[u8], site: Site) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.os_write(buf),
            Stream::Logged(l) => l
                .core
                .write(Self::fd(l), buf, located(site), |buf| match &l.os {
                    Some(os) => os.os_write(buf),
                    None => Err(io::Error::other("ppd: no socket to write to")),
                }),
        }
    }

    /// `Write::write_all`, every write located at `site`: std's provided method would locate
    /// them at its own line.
    pub(crate) fn write_all(&self, mut buf: &[u8], site: Site) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write(buf, site) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "failed to write whole buffer",
                    ));
                }
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// `Write::write_fmt` (`write!`, `writeln!`): each piece written with [`write_all`](Self::write_all)
    /// as std's does, located at `site`.
    pub(crate) fn write_fmt(&self, args: fmt::Arguments<'_>, site: Site) -> io::Result<()> {
        struct Pieces<'a, S> {
            stream: &'a Stream<S>,
            site: Site,
            error: io::Result<()>,
        }
        impl<S: OsStream> fmt::Write for Pieces<'_, S> {
            fn write_str(&mut self, piece: &str) -> fmt::Result {
                self.stream
                    .write_all(piece.as_bytes(), self.site)
                    .map_err(|e| {
                        self.error = Err(e);
                        fmt::Error
                    })
            }
        }
        let mut pieces = Pieces {
            stream: self,
            site,
            error: Ok(()),
        };
        match fmt::write(&mut pieces, args) {
            Ok(()) => Ok(()),
            Err(_) if pieces.error.is_err() => pieces.error,
            Err(_) => Err(io::Error::other(
                "a formatting trait implementation returned an error",
            )),
        }
    }

    /// `Read::read_exact`, every read located at `site`.
    pub(crate) fn read_exact(&self, mut buf: &mut [u8], site: Site) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read(buf, site) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "failed to fill whole buffer",
                    ));
                }
                Ok(n) => buf = &mut buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// `Read::read_to_end`, every read located at `site`; std's own in pass-through mode.
    pub(crate) fn read_to_end(&self, out: &mut Vec<u8>, site: Site) -> io::Result<usize> {
        if let Stream::Plain(s) = self {
            return s.os_read_to_end(out);
        }
        let start = out.len();
        let mut chunk = [0u8; 8 * 1024];
        loop {
            match self.read(&mut chunk, site) {
                Ok(0) => return Ok(out.len() - start),
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// `Read::read_to_string`: as std's, what was read is kept only if it is UTF-8.
    pub(crate) fn read_to_string(&self, out: &mut String, site: Site) -> io::Result<usize> {
        let mut bytes = Vec::new();
        let read = self.read_to_end(&mut bytes, site);
        match String::from_utf8(bytes) {
            Ok(text) => {
                out.push_str(&text);
                read
            }
            Err(_) => read.and(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ))),
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

/// The site of an operation: where its caller is, unless a [`crate::io::BufReader`] called
/// it on behalf of the line that called that.
fn located(site: Site) -> Site {
    crate::io::reading_for().unwrap_or(site)
}

/// `Read` and `Write` for a public stream type (with its `Stream` as `inner`) and for a shared
/// reference to it, as std has them for its streams. Every method that reads or writes is
/// `#[track_caller]`, std's provided ones too (`write_all`, `write!`, `read_exact`,
/// `read_to_end`, `read_to_string`), so that each logged operation is located at the line of
/// the program that asked for it, not in std.
macro_rules! read_write {
    ($stream:ty) => {
        super::stream::read_write!(@read $stream);
        super::stream::read_write!(@read &$stream);
        super::stream::read_write!(@write $stream);
        super::stream::read_write!(@write &$stream);
    };
    (@read $stream:ty) => {
        impl std::io::Read for $stream {
            #[track_caller]
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.inner.read(buf, std::panic::Location::caller())
            }

            #[track_caller]
            fn read_exact(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
                self.inner.read_exact(buf, std::panic::Location::caller())
            }

            #[track_caller]
            fn read_to_end(&mut self, buf: &mut Vec<u8>) -> std::io::Result<usize> {
                self.inner.read_to_end(buf, std::panic::Location::caller())
            }

            #[track_caller]
            fn read_to_string(&mut self, buf: &mut String) -> std::io::Result<usize> {
                self.inner.read_to_string(buf, std::panic::Location::caller())
            }
        }
    };
    (@write $stream:ty) => {
        impl std::io::Write for $stream {
            #[track_caller]
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.inner.write(buf, std::panic::Location::caller())
            }

            #[track_caller]
            fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
                self.inner.write_all(buf, std::panic::Location::caller())
            }

            #[track_caller]
            fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
                self.inner.write_fmt(args, std::panic::Location::caller())
            }

            fn flush(&mut self) -> std::io::Result<()> {
                self.inner.flush()
            }
        }
    };
}

pub(crate) use read_write;
