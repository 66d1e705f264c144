//! A listening socket, TCP or Unix, as one generic wrapper (see `stream`).

use std::io;
use std::sync::Arc;

use ppd_formats::event::{OpenHow, SocketKind};

use super::core::{Core, Opened, Site};
use super::options::{Options, OsSocket};
use super::stream::{OsStream, Stream};

/// What ppd needs of a std listener (`TcpListener`, `UnixListener`).
pub(crate) trait OsListener: OsSocket {
    /// What a `NetOpen` calls it.
    const KIND: SocketKind;
    /// The streams it accepts.
    type Stream: OsStream;
    fn local(&self) -> io::Result<<Self::Stream as OsStream>::Addr>;
    fn os_accept(&self) -> io::Result<(Self::Stream, <Self::Stream as OsStream>::Addr)>;
}

/// A listener under a backend: std's listener when recording (none when replaying), the core.
#[derive(Debug)]
pub(crate) struct LoggedListener<L> {
    os: Option<L>,
    core: Core,
}

/// A listener in either mode.
#[derive(Debug)]
pub(crate) enum Listener<L> {
    /// Pass-through: std's listener.
    Plain(L),
    /// Under a backend.
    Logged(Arc<LoggedListener<L>>),
}

/// An accepted stream and its peer's address.
pub(crate) type Accepted<L> = (
    Stream<<L as OsListener>::Stream>,
    <<L as OsListener>::Stream as OsStream>::Addr,
);

impl<L: OsListener> Listener<L> {
    /// Binds: `bind` on the operating system in pass-through mode and when recording (the
    /// bound address logged), the logged outcome when replaying.
    pub(crate) fn bind(site: Site, bind: impl FnOnce() -> io::Result<L>) -> io::Result<Self> {
        if !crate::runtime::active() {
            return bind().map(Listener::Plain);
        }
        let (os, core) = Core::open(L::KIND, OpenHow::Bind, None, site, || {
            let os = bind()?;
            let local = <L::Stream as OsStream>::show(&os.local()?);
            Ok(Opened {
                os,
                local,
                peer: String::new(),
                peer_pid: None,
            })
        })?;
        Ok(Listener::Logged(Arc::new(LoggedListener { os, core })))
    }

    /// Accepts a connection. Under a backend the accepted stream is a socket of the process
    /// that accepted it, opened with both addresses logged (and, for a Unix socket, the
    /// peer's OS process); an accept that is about to wait logs `Blocked` first.
    pub(crate) fn accept(&self, site: Site) -> io::Result<Accepted<L>> {
        let l = match self {
            Listener::Plain(os) => {
                return os.os_accept().map(|(s, a)| (Stream::Plain(s), a));
            }
            Listener::Logged(l) => l,
        };
        if let Some(os) = &l.os {
            l.core.before_wait(os.as_raw_fd(), site);
        }
        let (accepted, core) = Core::open(
            L::Stream::KIND,
            OpenHow::Accept,
            Some(l.core.id),
            site,
            || {
                let os =
                    l.os.as_ref()
                        .ok_or_else(|| io::Error::other("ppd: no listener to accept on"))?;
                let (stream, addr) = os.os_accept()?;
                let local = L::Stream::show(&stream.local()?);
                let peer = L::Stream::show(&addr);
                let peer_pid = stream.peer_pid();
                Ok(Opened {
                    os: (stream, addr),
                    local,
                    peer,
                    peer_pid,
                })
            },
        )?;
        let (stream, addr) = match accepted {
            Some((stream, addr)) => (Some(stream), addr),
            None => (None, L::Stream::parse(&core.peer)?),
        };
        Ok((Stream::opened(stream, Some(core))?, addr))
    }

    pub(crate) fn local_addr(&self) -> io::Result<<L::Stream as OsStream>::Addr> {
        match self {
            Listener::Plain(os) => os.local(),
            Listener::Logged(l) => match &l.os {
                Some(os) => os.local(),
                None => L::Stream::parse(&l.core.local),
            },
        }
    }

    /// Its non-blocking switch and pending error.
    pub(crate) fn options(&self) -> Options<'_, L> {
        match self {
            Listener::Plain(os) => Options::Plain(os),
            Listener::Logged(l) => Options::Logged(&l.core, l.os.as_ref()),
        }
    }

    pub(crate) fn try_clone(&self) -> io::Result<Self> {
        match self {
            Listener::Plain(os) => os.os_try_clone().map(Listener::Plain),
            Listener::Logged(l) => Ok(Listener::Logged(Arc::clone(l))),
        }
    }

    /// The OS listener, when there is one.
    pub(crate) fn os(&self) -> Option<&L> {
        match self {
            Listener::Plain(os) => Some(os),
            Listener::Logged(l) => l.os.as_ref(),
        }
    }
}
