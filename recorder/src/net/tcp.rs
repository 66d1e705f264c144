//! TCP, mirroring `std::net::{TcpListener, TcpStream}`.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::panic::Location;
use std::sync::Mutex;
use std::time::Duration;

use ppd_formats::event::SocketKind;

use super::listener::{Listener, OsListener};
use super::stream::{OsStream, Stream};

impl OsStream for std::net::TcpStream {
    const KIND: SocketKind = SocketKind::TcpStream;
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

    fn os_shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.shutdown(how)
    }

    fn os_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.peek(buf)
    }

    fn os_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&mut &*self).read(buf)
    }

    fn os_read_to_end(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        (&mut &*self).read_to_end(buf)
    }

    fn os_write(&self, buf: &[u8]) -> io::Result<usize> {
        (&mut &*self).write(buf)
    }

    fn os_flush(&self) -> io::Result<()> {
        (&mut &*self).flush()
    }
}

impl OsListener for std::net::TcpListener {
    const KIND: SocketKind = SocketKind::TcpListener;
    type Stream = std::net::TcpStream;

    fn local(&self) -> io::Result<SocketAddr> {
        self.local_addr()
    }

    fn os_accept(&self) -> io::Result<(std::net::TcpStream, SocketAddr)> {
        self.accept()
    }
}

/// Socket options a replay keeps for its getters, having no socket to ask.
#[derive(Debug, Default)]
struct Remembered {
    nodelay: Option<bool>,
    ttl: Option<u32>,
}

/// A TCP connection, like `std::net::TcpStream`. Recorded, it logs both addresses at
/// `connect`, where each write's bytes went and each read's bytes; replayed, it opens no
/// socket: reads return the logged bytes.
///
/// ```no_run
/// use std::io::{Read, Write};
/// let mut stream = ppd::net::TcpStream::connect("127.0.0.1:7878")?;
/// stream.write_all(b"ping")?;
/// let mut reply = [0; 4];
/// stream.read_exact(&mut reply)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TcpStream {
    inner: Stream<std::net::TcpStream>,
    remembered: Mutex<Remembered>,
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("socket", &self.inner.id())
            .finish_non_exhaustive()
    }
}

impl TcpStream {
    fn new(inner: Stream<std::net::TcpStream>) -> TcpStream {
        TcpStream {
            inner,
            remembered: Mutex::new(Remembered::default()),
        }
    }

    /// Connects to `addr`, as std's; the connection (or its error) is logged.
    #[track_caller]
    pub fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        Stream::connect(Location::caller(), || std::net::TcpStream::connect(addr)).map(Self::new)
    }

    /// Connects to `addr`, waiting at most `timeout`, as std's.
    #[track_caller]
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        Stream::connect(Location::caller(), || {
            std::net::TcpStream::connect_timeout(addr, timeout)
        })
        .map(Self::new)
    }

    /// The peer's address (replayed: as logged).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }

    /// This end's address (replayed: as logged).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Shuts the reading, writing or both halves down, as std's.
    #[track_caller]
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.shutdown(how, Location::caller())
    }

    /// Another handle to the same connection. Recorded, clones share one stream (its
    /// offsets are the connection's).
    pub fn try_clone(&self) -> io::Result<TcpStream> {
        self.inner.try_clone().map(Self::new)
    }

    super::options::timeout_methods!("a read");

    /// Reads without consuming, as std's; what it saw is logged like a read.
    #[track_caller]
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.peek(buf, Location::caller())
    }

    /// Sets `TCP_NODELAY`.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.remembered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .nodelay = Some(nodelay);
        self.inner.os().map_or(Ok(()), |os| os.set_nodelay(nodelay))
    }

    /// `TCP_NODELAY` (replayed: as the program last set it).
    pub fn nodelay(&self) -> io::Result<bool> {
        match self.inner.os() {
            Some(os) => os.nodelay(),
            None => Ok(self
                .remembered
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .nodelay
                .unwrap_or(false)),
        }
    }

    /// Sets the IP time-to-live.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.remembered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ttl = Some(ttl);
        self.inner.os().map_or(Ok(()), |os| os.set_ttl(ttl))
    }

    /// The IP time-to-live (replayed: as the program last set it, else 64).
    pub fn ttl(&self) -> io::Result<u32> {
        match self.inner.os() {
            Some(os) => os.ttl(),
            None => Ok(self
                .remembered
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .ttl
                .unwrap_or(64)),
        }
    }

    /// The socket's pending error (replayed: none; an error that mattered is in the logged
    /// operation that met it).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.options().take_error()
    }

    /// Switches reads to non-blocking: a read with nothing to read returns `WouldBlock`,
    /// logged like any other result.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.inner.options().set_nonblocking(nonblocking)
    }
}

super::stream::read_write!(TcpStream);

/// A stream is logged as its socket's id (it can be an e-block argument).
impl serde::Serialize for TcpStream {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        crate::sync::handle::serialize(self.inner.id(), ppd_formats::value::End::Whole, serializer)
    }
}

impl<'de> serde::Deserialize<'de> for TcpStream {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = crate::sync::handle::deserialize(deserializer, "TcpStream")?;
        Ok(TcpStream::new(Stream::emulated(id)))
    }
}

/// A TCP listener, like `std::net::TcpListener`. Recorded, it logs its address and every
/// accepted connection's two addresses; replayed, it binds nothing.
///
/// ```no_run
/// let listener = ppd::net::TcpListener::bind("127.0.0.1:0")?;
/// for stream in listener.incoming().take(1) {
///     let _stream = stream?;
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TcpListener {
    inner: Listener<std::net::TcpListener>,
}

impl TcpListener {
    /// Binds to `addr`, as std's.
    #[track_caller]
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        Listener::bind(Location::caller(), || std::net::TcpListener::bind(addr))
            .map(|inner| TcpListener { inner })
    }

    /// The bound address (replayed: as logged).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Another handle to the same listener.
    pub fn try_clone(&self) -> io::Result<TcpListener> {
        self.inner.try_clone().map(|inner| TcpListener { inner })
    }

    /// Accepts a connection, as std's; which connection came, from where, is logged.
    #[track_caller]
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        self.inner
            .accept(Location::caller())
            .map(|(stream, addr)| (TcpStream::new(stream), addr))
    }

    /// The connections as they come, as std's.
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// Sets the IP time-to-live of the listening socket.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.inner.os().map_or(Ok(()), |os| os.set_ttl(ttl))
    }

    /// The IP time-to-live (replayed: 64).
    pub fn ttl(&self) -> io::Result<u32> {
        self.inner.os().map_or(Ok(64), std::net::TcpListener::ttl)
    }

    /// The socket's pending error (replayed: none).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.options().take_error()
    }

    /// Switches `accept` to non-blocking: with no connection waiting it returns
    /// `WouldBlock`, logged.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.inner.options().set_nonblocking(nonblocking)
    }
}

/// The connections of a [`TcpListener`], as they are accepted; like std's `Incoming`.
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    #[track_caller]
    fn next(&mut self) -> Option<io::Result<TcpStream>> {
        Some(self.listener.accept().map(|(stream, _)| stream))
    }
}
