//! What every ppd socket does under a backend, whatever its kind.
//!
//! A socket is an object of the process that opens it. Its opening logs a `NetOpen` with the
//! addresses the operating system gives its two ends (what pairs the ends of a connection when
//! the recording is read, `ppd_formats::net`); every operation whose result the run decides
//! logs that result:
//!
//! * a stream write logs where its bytes went in the stream (`NetWrite`), a read the bytes it
//!   got (`NetRead`): the bytes are logged once, where they arrive, so a replay of the reading
//!   process needs nothing else;
//! * a datagram's send logs a digest of it (`NetSendTo`), its receipt its bytes and source
//!   (`NetRecvFrom`);
//! * an operation that fails, or cannot go on now (`WouldBlock`, a timeout, a refused
//!   connection), logs the error (`NetFail`).
//!
//! A read or accept that is about to wait logs `Blocked` first, so a run killed while a
//! process waits for a peer says where it waits. Reads of one socket (and its clones) are
//! serialized, as are its writes, so that offsets are exact.
//!
//! Replaying or re-executing, no socket is opened at all: each operation gives back its logged
//! result, so replay needs no network, no free port and no peer.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::panic::Location;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::sys::socket::{self, MsgFlags};
use ppd_formats::event::{NetError, NetOp, OpenHow, SocketKind, datagram_digest};
use ppd_formats::{Event, EventKind, ObjectId};

use crate::runtime::backend::{Mode, Op};
use crate::runtime::{self, diverged};

/// Site of a socket operation.
pub(crate) type Site = &'static Location<'static>;

/// A socket under a backend: its id, its addresses, and where its stream (or datagrams) are.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) id: ObjectId,
    /// Its address, and its peer's, as logged (`""`: none or unnamed).
    pub(crate) local: String,
    pub(crate) peer: String,
    /// Writes (or datagrams) so far, and the stream bytes written.
    writes: Mutex<(u64, u64)>,
    /// The stream bytes read so far.
    reads: Mutex<u64>,
    /// Set by the program: reads and accepts return `WouldBlock` rather than wait (and so log
    /// no `Blocked`).
    nonblocking: AtomicBool,
    /// The timeouts the program set, which a replay, having no socket, keeps here.
    timeouts: Mutex<(Option<Duration>, Option<Duration>)>,
}

/// What opening a socket on the operating system gave.
pub(crate) struct Opened<S> {
    pub(crate) os: S,
    pub(crate) local: String,
    pub(crate) peer: String,
    pub(crate) peer_pid: Option<u32>,
}

/// The operation a failed opening was.
fn failed_op(how: OpenHow) -> NetOp {
    match how {
        OpenHow::Bind | OpenHow::Pair => NetOp::Bind,
        OpenHow::Connect => NetOp::Connect,
        OpenHow::Accept => NetOp::Accept,
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() * 1_000_000_000 + u64::from(d.subsec_nanos()))
        .unwrap_or(0)
}

/// Logs `event` for the current process (a no-op outside one).
fn log(event: &Event<ppd_formats::Borrowed<'_>>) {
    runtime::done(event);
}

fn fail(socket: ObjectId, op: NetOp, error: &io::Error, site: Site) {
    log(&Event::NetFail {
        socket,
        op,
        error: NetError::of(error),
        site: Some(site),
    });
}

/// Whether the run is replayed or re-executed: sockets are served from the log.
pub(crate) fn from_log() -> bool {
    matches!(runtime::mode(), Mode::Replay | Mode::Emulate)
}

/// Where a write taken from the log stands in its end's stream: `(writes before, bytes
/// before)`. Replay counts them itself from the start, so that the check of each write against
/// the log verifies the count; a re-executed instance starts in the middle of the stream with a
/// handle that counted nothing, and continues from the logged write `(seq, offset)`.
fn in_stream(counted: (u64, u64), (seq, offset): (u64, u64)) -> (u64, u64) {
    if runtime::mode() == Mode::Emulate {
        (seq.saturating_sub(1), offset)
    } else {
        counted
    }
}

impl Core {
    fn new(id: ObjectId, local: String, peer: String) -> Core {
        Core {
            id,
            local,
            peer,
            writes: Mutex::new((0, 0)),
            reads: Mutex::new(0),
            nonblocking: AtomicBool::new(false),
            timeouts: Mutex::new((None, None)),
        }
    }

    /// A socket rebuilt for re-executing an e-block that took it as an argument: its logged
    /// id, its operations served from the e-block's log interval.
    pub(crate) fn emulated(id: ObjectId) -> Core {
        Core::new(id, String::new(), String::new())
    }

    /// Opens a socket: `attempt` on the operating system when recording, the logged outcome
    /// when replaying. `from` is the listener accepted from or the other end of a pair.
    /// Returns the OS socket (none when replaying) and the core.
    pub(crate) fn open<S>(
        kind: SocketKind,
        how: OpenHow,
        from: Option<ObjectId>,
        site: Site,
        attempt: impl FnOnce() -> io::Result<Opened<S>>,
    ) -> io::Result<(Option<S>, Core)> {
        let id = runtime::allocate_object().unwrap_or(ObjectId(0));
        if from_log() {
            return match runtime::expect(Op::on(EventKind::NetOpen, id, Some(site))) {
                Some(Event::NetOpen {
                    socket,
                    local,
                    peer,
                    peer_pid,
                    unix_ns,
                    ..
                }) => {
                    // Re-executing starts a process mid-run: the logged id is the one.
                    let id = if runtime::mode() == Mode::Emulate {
                        socket
                    } else {
                        id
                    };
                    log(&Event::NetOpen {
                        socket: id,
                        kind,
                        how,
                        from,
                        local: &local,
                        peer: &peer,
                        peer_pid,
                        unix_ns,
                        site: Some(site),
                    });
                    Ok((None, Core::new(id, local.into(), peer.into())))
                }
                Some(Event::NetFail { socket, error, .. }) => {
                    fail(socket, failed_op(how), &error.to_io(), site);
                    Err(error.to_io())
                }
                _ => diverged(&format!(
                    "opened a {} at {}:{} where the log has something else",
                    kind.name(),
                    site.file(),
                    site.line()
                )),
            };
        }
        match attempt() {
            Ok(opened) => {
                log(&Event::NetOpen {
                    socket: id,
                    kind,
                    how,
                    from,
                    local: &opened.local,
                    peer: &opened.peer,
                    peer_pid: opened.peer_pid,
                    unix_ns: unix_now(),
                    site: Some(site),
                });
                Ok((Some(opened.os), Core::new(id, opened.local, opened.peer)))
            }
            Err(e) => {
                fail(id, failed_op(how), &e, site);
                Err(e)
            }
        }
    }

    /// Before an accept or a datagram receipt on a socket that may wait: logs `Blocked` when
    /// nothing is ready (the operation is about to wait).
    pub(crate) fn before_wait(&self, fd: RawFd, site: Site) {
        if self.nonblocking.load(Ordering::Relaxed) || ready(fd) {
            return;
        }
        log(&Event::Blocked {
            object: self.id,
            site: Some(site),
        });
    }

    /// A stream read (or peek) into `buf`. Recording, `fd` is the socket's: a read that would
    /// wait logs `Blocked` first; replaying, the logged bytes.
    pub(crate) fn read(
        &self,
        fd: Option<RawFd>,
        buf: &mut [u8],
        peek: bool,
        site: Site,
    ) -> io::Result<usize> {
        let mut offset = self.reads.lock().unwrap_or_else(|p| p.into_inner());
        let got = match fd {
            None => return self.read_logged(&mut offset, buf, peek, site),
            Some(fd) => {
                let flags = if peek {
                    MsgFlags::MSG_PEEK
                } else {
                    MsgFlags::empty()
                };
                match recv(fd, buf, flags | MsgFlags::MSG_DONTWAIT) {
                    Err(e)
                        if e.kind() == io::ErrorKind::WouldBlock
                            && !self.nonblocking.load(Ordering::Relaxed) =>
                    {
                        log(&Event::Blocked {
                            object: self.id,
                            site: Some(site),
                        });
                        recv(fd, buf, flags)
                    }
                    other => other,
                }
            }
        };
        match got {
            Ok(n) => {
                log(&Event::NetRead {
                    socket: self.id,
                    offset: *offset,
                    peek,
                    data: &buf[..n],
                    site: Some(site),
                });
                if !peek {
                    *offset += n as u64;
                }
                Ok(n)
            }
            Err(e) => {
                fail(self.id, NetOp::Read, &e, site);
                Err(e)
            }
        }
    }

    fn read_logged(
        &self,
        offset: &mut u64,
        buf: &mut [u8],
        peek: bool,
        site: Site,
    ) -> io::Result<usize> {
        match runtime::expect(Op::on(EventKind::NetRead, self.id, Some(site))) {
            Some(Event::NetRead {
                offset: at,
                peek: was_peek,
                data,
                ..
            }) if was_peek == peek && data.len() <= buf.len() => {
                buf[..data.len()].copy_from_slice(&data);
                log(&Event::NetRead {
                    socket: self.id,
                    offset: at,
                    peek,
                    data: &data,
                    site: Some(site),
                });
                if !peek {
                    *offset = at + data.len() as u64;
                }
                Ok(data.len())
            }
            Some(Event::NetFail { error, .. }) => {
                fail(self.id, NetOp::Read, &error.to_io(), site);
                Err(error.to_io())
            }
            Some(Event::NetRead {
                data,
                peek: logged_peek,
                ..
            }) => diverged(&format!(
                "{} at most {} bytes from {} at {}:{}, where the log has a {} of {} bytes",
                if peek { "peeked" } else { "read" },
                buf.len(),
                self.id,
                site.file(),
                site.line(),
                if logged_peek { "peek" } else { "read" },
                data.len()
            )),
            _ => diverged(&format!(
                "read from {} at {}:{} where the log has something else",
                self.id,
                site.file(),
                site.line()
            )),
        }
    }

    /// A stream write of `buf`: `live` writes it when recording; replaying, the logged count.
    /// Recording, `fd` is the socket's: a write that would wait (its peer reads too slowly)
    /// logs `Blocked` first, as a read does, so that a run cut short there says where the
    /// process waited.
    pub(crate) fn write(
        &self,
        fd: Option<RawFd>,
        buf: &[u8],
        site: Site,
        live: impl FnOnce(&[u8]) -> io::Result<usize>,
    ) -> io::Result<usize> {
        let mut cursor = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        if from_log() {
            return match runtime::expect(Op::on(EventKind::NetWrite, self.id, Some(site))) {
                Some(Event::NetWrite {
                    len,
                    seq: logged_seq,
                    offset: logged_offset,
                    ..
                }) if len as usize <= buf.len() => {
                    let (seq, offset) = in_stream(*cursor, (logged_seq, logged_offset));
                    log(&Event::NetWrite {
                        socket: self.id,
                        seq: seq + 1,
                        offset,
                        len,
                        site: Some(site),
                    });
                    *cursor = (seq + 1, offset + len);
                    Ok(len as usize)
                }
                Some(Event::NetFail { error, .. }) => {
                    fail(self.id, NetOp::Write, &error.to_io(), site);
                    Err(error.to_io())
                }
                _ => diverged(&format!(
                    "wrote {} bytes to {} at {}:{} where the log has something else",
                    buf.len(),
                    self.id,
                    site.file(),
                    site.line()
                )),
            };
        }
        let (seq, offset) = *cursor;
        runtime::before_socket_write(self.id, offset);
        let written = match fd {
            Some(fd) if !self.nonblocking.load(Ordering::Relaxed) => {
                match send(fd, buf, MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        log(&Event::Blocked {
                            object: self.id,
                            site: Some(site),
                        });
                        live(buf)
                    }
                    // As much as there was room for: a write may write less than it is given.
                    other => other,
                }
            }
            _ => live(buf),
        };
        match written {
            Ok(n) => {
                log(&Event::NetWrite {
                    socket: self.id,
                    seq: seq + 1,
                    offset,
                    len: n as u64,
                    site: Some(site),
                });
                *cursor = (seq + 1, offset + n as u64);
                Ok(n)
            }
            Err(e) => {
                fail(self.id, NetOp::Write, &e, site);
                Err(e)
            }
        }
    }

    /// A datagram sent: `live` resolves where to and sends it when recording; replaying, the
    /// logged count and destination.
    pub(crate) fn send_to(
        &self,
        buf: &[u8],
        site: Site,
        live: impl FnOnce(&[u8]) -> io::Result<(usize, String)>,
    ) -> io::Result<usize> {
        let mut cursor = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        let mut seq = cursor.0 + 1;
        let sent = if from_log() {
            match runtime::expect(Op::on(EventKind::NetSendTo, self.id, Some(site))) {
                Some(Event::NetSendTo {
                    len,
                    to,
                    seq: logged_seq,
                    ..
                }) if len as usize <= buf.len() => {
                    seq = in_stream(*cursor, (logged_seq, 0)).0 + 1;
                    Ok((len as usize, to.into()))
                }
                Some(Event::NetFail { error, .. }) => Err(error.to_io()),
                _ => diverged(&format!(
                    "sent a datagram on {} at {}:{} where the log has something else",
                    self.id,
                    site.file(),
                    site.line()
                )),
            }
        } else {
            live(buf)
        };
        match sent {
            Ok((n, to)) => {
                log(&Event::NetSendTo {
                    socket: self.id,
                    seq,
                    to: &to,
                    len: n as u64,
                    digest: datagram_digest(&buf[..n]),
                    site: Some(site),
                });
                cursor.0 = seq;
                Ok(n)
            }
            Err(e) => {
                fail(self.id, NetOp::SendTo, &e, site);
                Err(e)
            }
        }
    }

    /// A datagram received (or peeked) into `buf`: `live` receives it when recording, giving
    /// its length and source; replaying, the logged bytes and source.
    pub(crate) fn recv_from<A>(
        &self,
        buf: &mut [u8],
        peek: bool,
        site: Site,
        live: impl FnOnce(&mut [u8]) -> io::Result<(usize, A)>,
        show: impl Fn(&A) -> String,
        parse: impl Fn(&str) -> io::Result<A>,
    ) -> io::Result<(usize, A)> {
        let got = if from_log() {
            match runtime::expect(Op::on(EventKind::NetRecvFrom, self.id, Some(site))) {
                Some(Event::NetRecvFrom {
                    from,
                    peek: was_peek,
                    data,
                    ..
                }) if was_peek == peek && data.len() <= buf.len() => {
                    buf[..data.len()].copy_from_slice(&data);
                    parse(&from).map(|a| (data.len(), a))
                }
                Some(Event::NetFail { error, .. }) => Err(error.to_io()),
                _ => diverged(&format!(
                    "received a datagram on {} at {}:{} where the log has something else",
                    self.id,
                    site.file(),
                    site.line()
                )),
            }
        } else {
            live(buf)
        };
        match got {
            Ok((n, from)) => {
                log(&Event::NetRecvFrom {
                    socket: self.id,
                    from: &show(&from),
                    peek,
                    data: &buf[..n],
                    site: Some(site),
                });
                Ok((n, from))
            }
            Err(e) => {
                fail(self.id, NetOp::RecvFrom, &e, site);
                Err(e)
            }
        }
    }

    /// A `shutdown`: `live` shuts the OS socket down when recording; its error, if any, is
    /// logged and replay gives it back.
    /// An operation that chooses nothing when it succeeds (a shutdown, a datagram socket's
    /// connect): logged only when it fails, and replayed as failing only where it did.
    pub(crate) fn unless_failed(
        &self,
        op: NetOp,
        site: Site,
        live: impl FnOnce() -> io::Result<()>,
    ) -> io::Result<()> {
        if from_log() {
            return match runtime::expect_if(Op::on(EventKind::NetFail, self.id, Some(site))) {
                Some(Event::NetFail { error, .. }) => {
                    fail(self.id, op, &error.to_io(), site);
                    Err(error.to_io())
                }
                _ => Ok(()),
            };
        }
        live().inspect_err(|e| fail(self.id, op, e, site))
    }

    pub(crate) fn set_nonblocking(&self, nonblocking: bool) {
        self.nonblocking.store(nonblocking, Ordering::Relaxed);
    }

    /// The read and write timeouts the program set.
    pub(crate) fn timeouts(&self) -> (Option<Duration>, Option<Duration>) {
        *self.timeouts.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) {
        self.timeouts.lock().unwrap_or_else(|p| p.into_inner()).0 = t;
    }

    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) {
        self.timeouts.lock().unwrap_or_else(|p| p.into_inner()).1 = t;
    }
}

/// `recv(2)` on `fd` with `flags`, retried when interrupted, as std's read is.
fn recv(fd: RawFd, buf: &mut [u8], flags: MsgFlags) -> io::Result<usize> {
    uninterrupted(|| socket::recv(fd, buf, flags))
}

/// `send(2)` of `buf` on `fd` with `flags`, retried when interrupted, as std's write is.
fn send(fd: RawFd, buf: &[u8], flags: MsgFlags) -> io::Result<usize> {
    uninterrupted(|| socket::send(fd, buf, flags))
}

/// Runs a socket call again for as long as a signal interrupts it.
fn uninterrupted(mut call: impl FnMut() -> nix::Result<usize>) -> io::Result<usize> {
    loop {
        match call() {
            Err(Errno::EINTR) => continue,
            done => return done.map_err(io::Error::from),
        }
    }
}

/// Whether `fd` has something to read (or a connection to accept) now.
fn ready(fd: RawFd) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout does not wait.
    let n = unsafe { libc::poll(&mut poll, 1, 0) };
    n != 0
}

/// The OS process at the other end of a connected Unix socket (`SO_PEERCRED`).
pub(crate) fn peer_pid(fd: &impl AsRawFd) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            std::ptr::from_mut(&mut cred).cast(),
            &mut len,
        )
    };
    (r == 0 && cred.pid > 0).then_some(cred.pid as u32)
}
