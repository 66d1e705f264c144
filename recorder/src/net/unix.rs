//! Unix-domain sockets, mirroring `std::os::unix::net::{UnixListener, UnixStream,
//! UnixDatagram}`. A connection's ends pair by the listener's path and each end's OS process
//! (`SO_PEERCRED`), since the connecting end has no address of its own.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net as std_unix;
use std::panic::Location;
use std::path::Path;
use std::time::Duration;

pub use std::os::unix::net::SocketAddr;

use ppd_formats::event::SocketKind;

use super::core::peer_pid;
use super::datagram::{Datagram, OsDatagram};
use super::listener::{Listener, OsListener};
use super::stream::{OsStream, Stream};

/// A Unix socket address as the log writes it: the path, `@name` for an abstract one, `""`
/// for an unnamed one.
fn show(addr: &SocketAddr) -> String {
    if let Some(path) = addr.as_pathname() {
        return path.display().to_string();
    }
    match addr.as_abstract_name() {
        Some(name) => format!("@{}", String::from_utf8_lossy(name)),
        None => String::new(),
    }
}

/// A Unix socket address from the log.
fn parse(addr: &str) -> io::Result<SocketAddr> {
    if addr.is_empty() {
        // std makes no unnamed address but through a socket: an unbound one has it.
        return std_unix::UnixDatagram::unbound()?.local_addr();
    }
    match addr.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
        None => SocketAddr::from_pathname(addr),
    }
}

impl OsStream for std_unix::UnixStream {
    const KIND: SocketKind = SocketKind::UnixStream;
    type Addr = SocketAddr;

    fn local(&self) -> io::Result<SocketAddr> {
        self.local_addr()
    }

    fn peer(&self) -> io::Result<SocketAddr> {
        self.peer_addr()
    }

    fn show(addr: &SocketAddr) -> String {
        show(addr)
    }

    fn parse(addr: &str) -> io::Result<SocketAddr> {
        parse(addr)
    }

    fn os_shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.shutdown(how)
    }

    fn os_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        // `UnixStream::peek` is not stable; MSG_PEEK through recv is what it does.
        use std::os::fd::AsRawFd;
        // SAFETY: `buf` is valid for writes of its length; the descriptor is this socket's.
        let n = unsafe {
            libc::recv(
                self.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_PEEK,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
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

    fn peer_pid(&self) -> Option<u32> {
        peer_pid(self)
    }
}

impl OsListener for std_unix::UnixListener {
    const KIND: SocketKind = SocketKind::UnixListener;
    type Stream = std_unix::UnixStream;

    fn local(&self) -> io::Result<SocketAddr> {
        self.local_addr()
    }

    fn os_accept(&self) -> io::Result<(std_unix::UnixStream, SocketAddr)> {
        self.accept()
    }
}

impl OsDatagram for std_unix::UnixDatagram {
    const KIND: SocketKind = SocketKind::UnixDatagram;
    type Addr = SocketAddr;

    fn local(&self) -> io::Result<SocketAddr> {
        self.local_addr()
    }

    fn peer(&self) -> io::Result<SocketAddr> {
        self.peer_addr()
    }

    fn show(addr: &SocketAddr) -> String {
        show(addr)
    }

    fn parse(addr: &str) -> io::Result<SocketAddr> {
        parse(addr)
    }

    fn os_send_to(&self, buf: &[u8], to: &SocketAddr) -> io::Result<usize> {
        self.send_to_addr(buf, to)
    }

    fn os_send(&self, buf: &[u8]) -> io::Result<usize> {
        self.send(buf)
    }

    fn os_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.recv_from(buf)
    }

    fn os_peek_from(&self, _buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        // std has no stable peek on a Unix datagram socket, nor does ppd's.
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    fn os_connect(&self, to: &SocketAddr) -> io::Result<()> {
        self.connect_addr(to)
    }
}

/// A Unix stream connection, like `std::os::unix::net::UnixStream`.
///
/// ```no_run
/// use std::io::Write;
/// let mut stream = ppd::net::unix::UnixStream::connect("/tmp/ppd-example.sock")?;
/// stream.write_all(b"hello")?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixStream {
    inner: Stream<std_unix::UnixStream>,
}

impl fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixStream")
            .field("socket", &self.inner.id())
            .finish_non_exhaustive()
    }
}

impl UnixStream {
    /// Connects to the socket at `path`, as std's.
    #[track_caller]
    pub fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        Stream::connect(Location::caller(), || std_unix::UnixStream::connect(path))
            .map(|inner| UnixStream { inner })
    }

    /// Two connected ends, as std's `pair`; both are sockets of the calling process.
    #[track_caller]
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let site = Location::caller();
        let live = if super::core::from_log() {
            None
        } else {
            Some(std_unix::UnixStream::pair()?)
        };
        let (a, b) = match live {
            Some((a, b)) => (Some(a), Some(b)),
            None => (None, None),
        };
        let first = Stream::paired(a, None, site)?;
        let second = Stream::paired(b, Some(first.id()), site)?;
        Ok((UnixStream { inner: first }, UnixStream { inner: second }))
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

    /// Another handle to the same connection.
    pub fn try_clone(&self) -> io::Result<UnixStream> {
        self.inner.try_clone().map(|inner| UnixStream { inner })
    }

    super::options::timeout_methods!("a read");

    /// The socket's pending error (replayed: none).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.options().take_error()
    }

    /// Switches reads to non-blocking.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.inner.options().set_nonblocking(nonblocking)
    }
}

super::stream::read_write!(UnixStream);

impl serde::Serialize for UnixStream {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        crate::sync::handle::serialize(self.inner.id(), ppd_formats::value::End::Whole, serializer)
    }
}

impl<'de> serde::Deserialize<'de> for UnixStream {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = crate::sync::handle::deserialize(deserializer, "UnixStream")?;
        Ok(UnixStream {
            inner: Stream::emulated(id),
        })
    }
}

/// A Unix listener, like `std::os::unix::net::UnixListener`.
///
/// ```no_run
/// let listener = ppd::net::unix::UnixListener::bind("/tmp/ppd-example.sock")?;
/// let (_stream, _from) = listener.accept()?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct UnixListener {
    inner: Listener<std_unix::UnixListener>,
}

impl UnixListener {
    /// Binds to `path`, as std's.
    #[track_caller]
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        Listener::bind(Location::caller(), || std_unix::UnixListener::bind(path))
            .map(|inner| UnixListener { inner })
    }

    /// Accepts a connection, as std's; which came is logged.
    #[track_caller]
    pub fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        self.inner
            .accept(Location::caller())
            .map(|(inner, addr)| (UnixStream { inner }, addr))
    }

    /// The connections as they come, as std's.
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// The bound address (replayed: as logged).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Another handle to the same listener.
    pub fn try_clone(&self) -> io::Result<UnixListener> {
        self.inner.try_clone().map(|inner| UnixListener { inner })
    }

    /// Switches `accept` to non-blocking.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.inner.options().set_nonblocking(nonblocking)
    }

    /// The socket's pending error (replayed: none).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.options().take_error()
    }
}

/// The connections of a [`UnixListener`], like std's `Incoming`.
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a UnixListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<UnixStream>;

    #[track_caller]
    fn next(&mut self) -> Option<io::Result<UnixStream>> {
        Some(self.listener.accept().map(|(stream, _)| stream))
    }
}

/// A Unix datagram socket, like `std::os::unix::net::UnixDatagram`.
///
/// ```no_run
/// let socket = ppd::net::unix::UnixDatagram::unbound()?;
/// socket.send_to(b"hello", "/tmp/ppd-example-datagrams.sock")?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixDatagram {
    inner: Datagram<std_unix::UnixDatagram>,
}

impl fmt::Debug for UnixDatagram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixDatagram")
            .field("socket", &self.inner.id())
            .finish_non_exhaustive()
    }
}

impl UnixDatagram {
    /// Binds to `path`, as std's.
    #[track_caller]
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixDatagram> {
        Datagram::open(Location::caller(), || std_unix::UnixDatagram::bind(path))
            .map(|inner| UnixDatagram { inner })
    }

    /// A socket bound to no address, as std's.
    #[track_caller]
    pub fn unbound() -> io::Result<UnixDatagram> {
        Datagram::open(Location::caller(), std_unix::UnixDatagram::unbound)
            .map(|inner| UnixDatagram { inner })
    }

    /// Two connected sockets, as std's `pair`.
    #[track_caller]
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let site = Location::caller();
        let (a, b) = if super::core::from_log() {
            (None, None)
        } else {
            let (a, b) = std_unix::UnixDatagram::pair()?;
            (Some(a), Some(b))
        };
        let first = Datagram::paired(a, None, site)?;
        let second = Datagram::paired(b, Some(first.id()), site)?;
        Ok((
            UnixDatagram { inner: first },
            UnixDatagram { inner: second },
        ))
    }

    /// Sets the socket that `send` sends to and `recv` receives from.
    #[track_caller]
    pub fn connect<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        self.inner
            .connect(SocketAddr::from_pathname(path), Location::caller())
    }

    /// Sends a datagram to the socket at `path`.
    #[track_caller]
    pub fn send_to<P: AsRef<Path>>(&self, buf: &[u8], path: P) -> io::Result<usize> {
        self.inner
            .send_to(buf, SocketAddr::from_pathname(path), Location::caller())
    }

    /// Sends to the connected socket.
    #[track_caller]
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.send(buf, Location::caller())
    }

    /// Receives a datagram: its length and source.
    #[track_caller]
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.recv_from(buf, false, Location::caller())
    }

    /// Receives a datagram.
    #[track_caller]
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .recv_from(buf, false, Location::caller())
            .map(|(n, _)| n)
    }

    /// The bound address (replayed: as logged).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The connected socket's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }

    /// Another handle to the same socket.
    pub fn try_clone(&self) -> io::Result<UnixDatagram> {
        self.inner.try_clone().map(|inner| UnixDatagram { inner })
    }

    super::options::timeout_methods!("a receipt");

    /// Switches receipts to non-blocking.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.inner.options().set_nonblocking(nonblocking)
    }

    /// The socket's pending error (replayed: none).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.options().take_error()
    }
}
