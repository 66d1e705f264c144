//! UDP, mirroring `std::net::UdpSocket`.

use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::panic::Location;
use std::time::Duration;

use ppd_formats::event::SocketKind;

use super::datagram::{Datagram, OsDatagram};

impl OsDatagram for std::net::UdpSocket {
    const KIND: SocketKind = SocketKind::UdpSocket;
    type Addr = SocketAddr;

    fn local(&self) -> io::Result<SocketAddr> {
        self.local_addr()
    }

    fn peer(&self) -> io::Result<SocketAddr> {
        self.peer_addr()
    }

    fn show(addr: &SocketAddr) -> String {
        addr.to_string()
    }

    fn parse(addr: &str) -> io::Result<SocketAddr> {
        addr.parse().map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidData, format!("bad address {addr:?}"))
        })
    }

    fn os_send_to(&self, buf: &[u8], to: &SocketAddr) -> io::Result<usize> {
        self.send_to(buf, to)
    }

    fn os_send(&self, buf: &[u8]) -> io::Result<usize> {
        self.send(buf)
    }

    fn os_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.recv_from(buf)
    }

    fn os_peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.peek_from(buf)
    }

    fn os_connect(&self, to: &SocketAddr) -> io::Result<()> {
        self.connect(to)
    }
}

/// The first address `addr` resolves to, as std's `send_to` takes it.
fn first_address(addr: impl ToSocketAddrs) -> io::Result<SocketAddr> {
    addr.to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no addresses to send data to"))
}

/// A UDP socket, like `std::net::UdpSocket`. Recorded, a send logs the datagram's length,
/// destination and digest, a receipt its bytes and source; datagrams lost, duplicated or
/// reordered on the way are simply what the receipts say. Replayed, nothing is sent.
///
/// ```no_run
/// let socket = ppd::net::UdpSocket::bind("127.0.0.1:0")?;
/// socket.send_to(b"hello", "127.0.0.1:9000")?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UdpSocket {
    inner: Datagram<std::net::UdpSocket>,
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("socket", &self.inner.id())
            .finish_non_exhaustive()
    }
}

impl UdpSocket {
    /// Binds to `addr`, as std's.
    #[track_caller]
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        Datagram::open(Location::caller(), || std::net::UdpSocket::bind(addr))
            .map(|inner| UdpSocket { inner })
    }

    /// Sends a datagram to `addr` (its first address).
    #[track_caller]
    pub fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], addr: A) -> io::Result<usize> {
        let to = if super::core::from_log() {
            Err(io::Error::other("replayed: where it went is logged"))
        } else {
            first_address(addr)
        };
        self.inner.send_to(buf, to, Location::caller())
    }

    /// Receives a datagram: its length and source, as std's.
    #[track_caller]
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.recv_from(buf, false, Location::caller())
    }

    /// Receives a datagram without taking it, as std's.
    #[track_caller]
    pub fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.recv_from(buf, true, Location::caller())
    }

    /// Sets the peer that `send` sends to and `recv` receives from.
    #[track_caller]
    pub fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        self.inner.connect(first_address(addr), Location::caller())
    }

    /// Sends to the connected peer.
    #[track_caller]
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.send(buf, Location::caller())
    }

    /// Receives from the connected peer.
    #[track_caller]
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .recv_from(buf, false, Location::caller())
            .map(|(n, _)| n)
    }

    /// Receives from the connected peer without taking the datagram.
    #[track_caller]
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .recv_from(buf, true, Location::caller())
            .map(|(n, _)| n)
    }

    /// The bound address (replayed: as logged).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The connected peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }

    /// Another handle to the same socket.
    pub fn try_clone(&self) -> io::Result<UdpSocket> {
        self.inner.try_clone().map(|inner| UdpSocket { inner })
    }

    super::options::timeout_methods!("a receipt");

    /// Sets `SO_BROADCAST`.
    pub fn set_broadcast(&self, broadcast: bool) -> io::Result<()> {
        self.inner
            .os()
            .map_or(Ok(()), |os| os.set_broadcast(broadcast))
    }

    /// Sets the IP time-to-live.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.inner.os().map_or(Ok(()), |os| os.set_ttl(ttl))
    }

    /// The socket's pending error (replayed: none).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.options().take_error()
    }

    /// Switches receipts to non-blocking: with no datagram waiting they return `WouldBlock`,
    /// logged.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.inner.options().set_nonblocking(nonblocking)
    }
}

/// A socket is logged as its id (it can be an e-block argument).
impl serde::Serialize for UdpSocket {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        crate::sync::handle::serialize(self.inner.id(), ppd_formats::value::End::Whole, serializer)
    }
}

impl<'de> serde::Deserialize<'de> for UdpSocket {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = crate::sync::handle::deserialize(deserializer, "UdpSocket")?;
        Ok(UdpSocket {
            inner: Datagram::emulated(id),
        })
    }
}
