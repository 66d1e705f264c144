//! A datagram socket, UDP or Unix, as one generic wrapper (see `stream`).

use std::io;
use std::sync::Arc;

use ppd_formats::ObjectId;
use ppd_formats::event::{NetOp, OpenHow, SocketKind};

use super::core::{Core, Opened, Site};
use super::options::{Options, OsTimeouts};

/// What ppd needs of a std datagram socket (`UdpSocket`, `UnixDatagram`).
pub(crate) trait OsDatagram: OsTimeouts {
    /// What a `NetOpen` calls it.
    const KIND: SocketKind;
    /// Its address type.
    type Addr;
    fn local(&self) -> io::Result<Self::Addr>;
    fn peer(&self) -> io::Result<Self::Addr>;
    fn show(addr: &Self::Addr) -> String;
    fn parse(addr: &str) -> io::Result<Self::Addr>;
    fn os_send_to(&self, buf: &[u8], to: &Self::Addr) -> io::Result<usize>;
    fn os_send(&self, buf: &[u8]) -> io::Result<usize>;
    fn os_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, Self::Addr)>;
    fn os_peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, Self::Addr)>;
    fn os_connect(&self, to: &Self::Addr) -> io::Result<()>;
}

/// A datagram socket under a backend.
#[derive(Debug)]
pub(crate) struct LoggedDatagram<D> {
    os: Option<D>,
    core: Core,
    /// The peer `connect` set (as logged): where `send` sends, replaying.
    peer: std::sync::Mutex<String>,
}

/// A datagram socket in either mode.
#[derive(Debug)]
pub(crate) enum Datagram<D> {
    /// Pass-through: std's socket.
    Plain(D),
    /// Under a backend.
    Logged(Arc<LoggedDatagram<D>>),
}

impl<D: OsDatagram> Datagram<D> {
    /// Opens (binds, or makes unbound): `open` on the operating system in pass-through mode and
    /// when recording, the logged outcome when replaying.
    pub(crate) fn open(site: Site, open: impl FnOnce() -> io::Result<D>) -> io::Result<Self> {
        if !crate::runtime::active() {
            return open().map(Datagram::Plain);
        }
        let (os, core) = Core::open(D::KIND, OpenHow::Bind, None, site, || {
            let os = open()?;
            let local = os.local().map(|a| D::show(&a)).unwrap_or_default();
            Ok(Opened {
                os,
                local,
                peer: String::new(),
                peer_pid: None,
            })
        })?;
        Ok(Self::logged(os, core))
    }

    fn logged(os: Option<D>, core: Core) -> Self {
        let peer = core.peer.clone();
        Datagram::Logged(Arc::new(LoggedDatagram {
            os,
            core,
            peer: std::sync::Mutex::new(peer),
        }))
    }

    /// A datagram socket of a pair made together (`UnixDatagram::pair`): `from` is the other
    /// end, for the second.
    /// `os` is std's socket in pass-through mode and when recording, none when replaying.
    pub(crate) fn paired(os: Option<D>, from: Option<ObjectId>, site: Site) -> io::Result<Self> {
        if !crate::runtime::active() {
            return os
                .map(Datagram::Plain)
                .ok_or_else(|| io::Error::other("ppd: a pair without sockets"));
        }
        let (os, core) = Core::open(D::KIND, OpenHow::Pair, from, site, || {
            Ok(Opened {
                os: os.ok_or_else(|| io::Error::other("ppd: a pair without sockets"))?,
                local: String::new(),
                peer: String::new(),
                peer_pid: None,
            })
        })?;
        Ok(Self::logged(os, core))
    }

    /// A socket rebuilt for re-executing an e-block.
    pub(crate) fn emulated(id: ObjectId) -> Self {
        Self::logged(None, Core::emulated(id))
    }

    /// Its id under a backend.
    pub(crate) fn id(&self) -> ObjectId {
        match self {
            Datagram::Plain(_) => ObjectId(0),
            Datagram::Logged(l) => l.core.id,
        }
    }

    fn os_of(l: &LoggedDatagram<D>) -> io::Result<&D> {
        l.os.as_ref()
            .ok_or_else(|| io::Error::other("ppd: no socket to use"))
    }

    /// Sends to `to`, resolved by the caller when recording (`to` is `Err` for an address that
    /// did not resolve, which the send returns, as std's does).
    pub(crate) fn send_to(
        &self,
        buf: &[u8],
        to: io::Result<D::Addr>,
        site: Site,
    ) -> io::Result<usize> {
        match self {
            Datagram::Plain(os) => os.os_send_to(buf, &to?),
            Datagram::Logged(l) => l.core.send_to(buf, site, |buf| {
                let to = to?;
                let n = Self::os_of(l)?.os_send_to(buf, &to)?;
                Ok((n, D::show(&to)))
            }),
        }
    }

    /// Sends to the connected peer.
    pub(crate) fn send(&self, buf: &[u8], site: Site) -> io::Result<usize> {
        match self {
            Datagram::Plain(os) => os.os_send(buf),
            Datagram::Logged(l) => l.core.send_to(buf, site, |buf| {
                let to = l.peer.lock().unwrap_or_else(|p| p.into_inner()).clone();
                Ok((Self::os_of(l)?.os_send(buf)?, to))
            }),
        }
    }

    pub(crate) fn recv_from(
        &self,
        buf: &mut [u8],
        peek: bool,
        site: Site,
    ) -> io::Result<(usize, D::Addr)> {
        match self {
            Datagram::Plain(os) if peek => os.os_peek_from(buf),
            Datagram::Plain(os) => os.os_recv_from(buf),
            Datagram::Logged(l) => {
                if let Some(os) = &l.os {
                    l.core.before_wait(os.as_raw_fd(), site);
                }
                l.core.recv_from(
                    buf,
                    peek,
                    site,
                    |buf| {
                        let os = Self::os_of(l)?;
                        if peek {
                            os.os_peek_from(buf)
                        } else {
                            os.os_recv_from(buf)
                        }
                    },
                    D::show,
                    D::parse,
                )
            }
        }
    }

    /// Sets the peer `send` sends to and `recv` receives from; its error is std's.
    /// Sets the peer. Only a failure is logged; replayed, the address (resolved again, it names
    /// no choice of the run) is what `peer_addr` answers.
    pub(crate) fn connect(&self, to: io::Result<D::Addr>, site: Site) -> io::Result<()> {
        match self {
            Datagram::Plain(os) => os.os_connect(&to?),
            Datagram::Logged(l) => {
                let to = to?;
                l.core.unless_failed(NetOp::Connect, site, || match &l.os {
                    Some(os) => os.os_connect(&to),
                    None => Err(io::Error::other("ppd: no socket to connect")),
                })?;
                *l.peer.lock().unwrap_or_else(|p| p.into_inner()) = D::show(&to);
                Ok(())
            }
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<D::Addr> {
        match self {
            Datagram::Plain(os) => os.local(),
            Datagram::Logged(l) => match &l.os {
                Some(os) => os.local(),
                None => D::parse(&l.core.local),
            },
        }
    }

    pub(crate) fn peer_addr(&self) -> io::Result<D::Addr> {
        match self {
            Datagram::Plain(os) => os.peer(),
            Datagram::Logged(l) => match &l.os {
                Some(os) => os.peer(),
                None => D::parse(&l.peer.lock().unwrap_or_else(|p| p.into_inner())),
            },
        }
    }

    /// Its non-blocking switch, pending error and timeouts.
    pub(crate) fn options(&self) -> Options<'_, D> {
        match self {
            Datagram::Plain(os) => Options::Plain(os),
            Datagram::Logged(l) => Options::Logged(&l.core, l.os.as_ref()),
        }
    }

    pub(crate) fn try_clone(&self) -> io::Result<Self> {
        match self {
            Datagram::Plain(os) => os.os_try_clone().map(Datagram::Plain),
            Datagram::Logged(l) => Ok(Datagram::Logged(Arc::clone(l))),
        }
    }

    /// The OS socket, when there is one.
    pub(crate) fn os(&self) -> Option<&D> {
        match self {
            Datagram::Plain(os) => Some(os),
            Datagram::Logged(l) => l.os.as_ref(),
        }
    }
}
