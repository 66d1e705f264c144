//! Networking, mirroring `std::net` and `std::os::unix::net`: TCP and UDP sockets
//! ([`TcpListener`], [`TcpStream`], [`UdpSocket`]) and Unix-domain ones ([`unix`]).
//!
//! Without `ppd record` around the program these are std's sockets under a thin wrapper.
//! Recorded, every socket is an object of the process that opens it, and what the run decides
//! is logged: the addresses at each connect, accept and bind; where each write's bytes went in
//! the stream and the bytes each read got (logged once, where they arrive); each datagram's
//! bytes at its receiver and a digest at its sender; every error, timeout and `WouldBlock`.
//! Nothing is added to what goes over the wire, so a peer that is not recorded (a database,
//! `curl`, a plain std server) talks to the program as it would without ppd.
//!
//! The two ends of a connection are paired when the recording is read, by the addresses each
//! end saw (`ppd_formats::net`): when both ends were recorded — in one program, in several
//! programs under one `ppd record`, or in recordings merged from several hosts — a read
//! happens after the write its bytes came from, across OS processes and hosts, and `ppd why`
//! follows a value that arrived over a socket to the statement that wrote it.
//!
//! Replayed, no socket is opened: binds, connects and accepts give back their logged outcome,
//! reads their logged bytes, writes their logged counts. A replay needs no network, no free
//! port and no peer, so any OS process of a recording replays alone.

mod core;
mod datagram;
mod listener;
mod options;
mod stream;
mod tcp;
mod udp;
pub mod unix;

pub use std::net::{
    AddrParseError, IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, SocketAddrV4, SocketAddrV6,
    ToSocketAddrs,
};
pub use tcp::{Incoming, TcpListener, TcpStream};
pub use udp::UdpSocket;
