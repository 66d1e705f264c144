//! The two ends of a connection, found in the logs of the processes that opened them.
//!
//! Nothing crosses the wire for ppd: a recorded program's socket carries only the program's
//! bytes, so a peer that is not recorded (a database, `curl`) sees what it would see without
//! ppd, and nothing it sends can be mistaken for ppd's. Each end logs instead, at its `NetOpen`,
//! what the operating system says about it: its address and its peer's, and for a Unix socket
//! the peer's OS process. Reading the logs, the ends pair up:
//!
//! * of a pair made together (`UnixStream::pair`), the second end names the first;
//! * a TCP connection's ends see the same two addresses from either side: the connecting end's
//!   local address is the accepting end's peer, and the other way round;
//! * a Unix connection's ends see the listener's path, and each the other's OS process
//!   (`SO_PEERCRED`), since the connecting end has no address of its own.
//!
//! Ends that share their key (an address reused after a connection closed, two connections
//! between the same two processes to one Unix path) pair in the order they were opened. An
//! end whose peer is in no log of the recording (a peer that is not recorded, a process whose
//! recording was not merged) stays unpaired: its reads came from outside.
//!
//! A read then names the writes it consumed by stream offset: the bytes from `offset` to
//! `offset + len` of what the other end wrote. A datagram pairs with its send by the two
//! addresses and its bytes' digest.

use std::collections::HashMap;

use crate::event::{Event, OpenHow, SocketKind};
use crate::ids::ObjectId;

/// One end of a connection, as its `NetOpen` and its process's log describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct End {
    /// The socket.
    pub socket: ObjectId,
    /// What it is.
    pub kind: SocketKind,
    /// How it was made.
    pub how: OpenHow,
    /// The listener it was accepted from, or the other end of a pair.
    pub from: Option<ObjectId>,
    /// Its local address.
    pub local: String,
    /// Its peer's address.
    pub peer: String,
    /// A Unix socket's peer OS process.
    pub peer_pid: Option<u32>,
    /// The OS process that opened it.
    pub os_pid: u32,
    /// When it was opened, Unix nanoseconds.
    pub unix_ns: u64,
}

impl End {
    /// The end a `NetOpen` made in OS process `os_pid`; `None` for any other event.
    pub fn opened(event: &Event, os_pid: u32) -> Option<End> {
        let Event::NetOpen {
            socket,
            kind,
            how,
            from,
            local,
            peer,
            peer_pid,
            unix_ns,
            ..
        } = event
        else {
            return None;
        };
        Some(End {
            socket: *socket,
            kind: *kind,
            how: *how,
            from: *from,
            local: local.to_string(),
            peer: peer.to_string(),
            peer_pid: *peer_pid,
            os_pid,
            unix_ns: *unix_ns,
        })
    }
}

/// The ends of stream connections that `ends` holds both of, as pairs of indexes into `ends`
/// (connecting or first end first).
pub fn pair_streams(ends: &[End]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let by_socket: HashMap<ObjectId, usize> = ends
        .iter()
        .enumerate()
        .map(|(i, e)| (e.socket, i))
        .collect();
    // Made together: the second names the first.
    for (j, end) in ends.iter().enumerate() {
        if end.how == OpenHow::Pair
            && let Some(&i) = end.from.and_then(|other| by_socket.get(&other))
            && ends[i].how == OpenHow::Pair
            && i != j
        {
            pairs.push((i, j));
        }
    }
    // Connected through a listener: group both sides by the key they share, then pair each
    // group's ends in the order they were opened.
    let mut groups: HashMap<Key, (Vec<usize>, Vec<usize>)> = HashMap::new();
    for (i, end) in ends.iter().enumerate() {
        let side = match end.how {
            OpenHow::Connect => 0,
            OpenHow::Accept => 1,
            OpenHow::Bind | OpenHow::Pair => continue,
        };
        let Some(key) = key(end) else { continue };
        let group = groups.entry(key).or_default();
        if side == 0 {
            group.0.push(i);
        } else {
            group.1.push(i);
        }
    }
    let mut groups: Vec<_> = groups.into_values().collect();
    groups.sort();
    for (mut connecting, mut accepting) in groups {
        connecting.sort_by_key(|&i| (ends[i].unix_ns, i));
        accepting.sort_by_key(|&i| (ends[i].unix_ns, i));
        pairs.extend(connecting.into_iter().zip(accepting));
    }
    pairs.sort_unstable();
    pairs
}

/// What both ends of one connection know alike: the kind, and the two addresses (TCP) or the
/// path and the two OS processes (Unix), written from the connecting side.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Tcp {
        client: String,
        server: String,
    },
    Unix {
        path: String,
        client: u32,
        server: u32,
    },
}

fn key(end: &End) -> Option<Key> {
    match (end.kind, end.how) {
        (SocketKind::TcpStream, OpenHow::Connect) => Some(Key::Tcp {
            client: end.local.clone(),
            server: end.peer.clone(),
        }),
        (SocketKind::TcpStream, OpenHow::Accept) => Some(Key::Tcp {
            client: end.peer.clone(),
            server: end.local.clone(),
        }),
        (SocketKind::UnixStream, OpenHow::Connect) if !end.peer.is_empty() => Some(Key::Unix {
            path: end.peer.clone(),
            client: end.os_pid,
            server: end.peer_pid?,
        }),
        (SocketKind::UnixStream, OpenHow::Accept) if !end.local.is_empty() => Some(Key::Unix {
            path: end.local.clone(),
            client: end.peer_pid?,
            server: end.os_pid,
        }),
        _ => None,
    }
}

/// One end's writes in stream order: where each ends, and its number.
#[derive(Debug, Clone, Default)]
pub struct Writes {
    /// `(offset after the write, write number)`, by offset.
    ends: Vec<(u64, u64)>,
}

impl Writes {
    /// Adds write `seq` of `len` bytes at `offset` (writes are logged in stream order).
    pub fn push(&mut self, seq: u64, offset: u64, len: u64) {
        if len > 0 {
            self.ends.push((offset.saturating_add(len), seq));
        }
    }

    /// Adds the writes of `later`, all logged after these.
    pub fn append(&mut self, later: Writes) {
        self.ends.extend(later.ends);
    }

    /// The write that holds the stream byte at `offset`: its number.
    pub fn holding(&self, offset: u64) -> Option<u64> {
        let at = self.ends.partition_point(|&(end, _)| end <= offset);
        self.ends.get(at).map(|&(_, seq)| seq)
    }

    /// The writes that hold any of the bytes from `from` to `to`: their numbers.
    pub fn spanning(&self, from: u64, to: u64) -> impl Iterator<Item = u64> + '_ {
        let first = self.ends.partition_point(|&(end, _)| end <= from);
        let last = self.ends.partition_point(|&(end, _)| end < to);
        self.ends[first..(last + 1).min(self.ends.len())]
            .iter()
            .map(|&(_, seq)| seq)
    }
}

/// A datagram's send or receipt, as datagram pairing reads it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Datagram {
    /// The sending socket's address.
    pub from: String,
    /// The receiving socket's address.
    pub to: String,
    /// Its digest (`event::datagram_digest`).
    pub digest: u64,
}

/// Pairs received datagrams with sent ones: the same two addresses and digest, in the order
/// each side logged them. A datagram lost on the way has no receipt; a duplicated one pairs with
/// the next send of the same bytes, or with none. Returns, for each receipt, the index of its
/// send.
pub fn pair_datagrams(sends: &[Datagram], receipts: &[Datagram]) -> Vec<Option<usize>> {
    let mut waiting: HashMap<&Datagram, std::collections::VecDeque<usize>> = HashMap::new();
    for (i, send) in sends.iter().enumerate() {
        waiting.entry(send).or_default().push_back(i);
    }
    receipts
        .iter()
        .map(|r| waiting.get_mut(r).and_then(|q| q.pop_front()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ProcessId;

    fn end(socket: u32, kind: SocketKind, how: OpenHow, local: &str, peer: &str) -> End {
        End {
            socket: ObjectId::new(ProcessId(socket), 0),
            kind,
            how,
            from: None,
            local: local.into(),
            peer: peer.into(),
            peer_pid: None,
            os_pid: 1,
            unix_ns: 0,
        }
    }

    #[test]
    fn tcp_ends_pair_by_their_two_addresses_and_reuse_pairs_in_order() {
        let mut ends = vec![
            end(
                0,
                SocketKind::TcpStream,
                OpenHow::Accept,
                "10.0.0.1:80",
                "10.0.0.2:5000",
            ),
            end(
                1,
                SocketKind::TcpStream,
                OpenHow::Connect,
                "10.0.0.2:5000",
                "10.0.0.1:80",
            ),
            end(
                2,
                SocketKind::TcpStream,
                OpenHow::Connect,
                "10.0.0.3:6000",
                "10.0.0.1:80",
            ),
            // A later connection from the same port: pairs with the later accept.
            end(
                3,
                SocketKind::TcpStream,
                OpenHow::Connect,
                "10.0.0.2:5000",
                "10.0.0.1:80",
            ),
            end(
                4,
                SocketKind::TcpStream,
                OpenHow::Accept,
                "10.0.0.1:80",
                "10.0.0.2:5000",
            ),
            // Nobody recorded accepted this one.
            end(
                5,
                SocketKind::TcpStream,
                OpenHow::Connect,
                "10.0.0.2:7000",
                "1.1.1.1:443",
            ),
        ];
        for (i, t) in [(0, 10), (1, 11), (2, 12), (3, 20), (4, 21), (5, 1)] {
            ends[i].unix_ns = t;
        }
        assert_eq!(pair_streams(&ends), vec![(1, 0), (3, 4)]);
    }

    #[test]
    fn unix_ends_pair_by_path_and_each_others_process() {
        let mut client = end(
            0,
            SocketKind::UnixStream,
            OpenHow::Connect,
            "",
            "/run/s.sock",
        );
        client.os_pid = 100;
        client.peer_pid = Some(200);
        let mut server = end(
            1,
            SocketKind::UnixStream,
            OpenHow::Accept,
            "/run/s.sock",
            "",
        );
        server.os_pid = 200;
        server.peer_pid = Some(100);
        let mut stranger = end(
            2,
            SocketKind::UnixStream,
            OpenHow::Accept,
            "/run/s.sock",
            "",
        );
        stranger.os_pid = 200;
        stranger.peer_pid = Some(300);
        assert_eq!(pair_streams(&[client, server, stranger]), vec![(0, 1)]);
    }

    #[test]
    fn the_second_end_of_a_pair_names_the_first() {
        let a = end(0, SocketKind::UnixStream, OpenHow::Pair, "", "");
        let mut b = end(1, SocketKind::UnixStream, OpenHow::Pair, "", "");
        b.from = Some(a.socket);
        assert_eq!(pair_streams(&[a, b]), vec![(0, 1)]);
    }

    #[test]
    fn a_read_names_the_writes_holding_its_bytes() {
        let mut w = Writes::default();
        w.push(1, 0, 5);
        w.push(2, 5, 0);
        w.push(3, 5, 10);
        assert_eq!(w.holding(0), Some(1));
        assert_eq!(w.holding(4), Some(1));
        assert_eq!(w.holding(5), Some(3));
        assert_eq!(w.holding(15), None);
        assert_eq!(w.spanning(3, 7).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(w.spanning(5, 15).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn datagrams_pair_by_addresses_and_digest_in_order() {
        let d = |from: &str, to: &str, digest| Datagram {
            from: from.into(),
            to: to.into(),
            digest,
        };
        let sends = [d("a", "b", 1), d("a", "b", 2), d("a", "b", 1)];
        let receipts = [
            d("a", "b", 2),
            d("a", "b", 1),
            d("a", "b", 1),
            d("a", "b", 1),
        ];
        assert_eq!(
            pair_datagrams(&sends, &receipts),
            vec![Some(1), Some(0), Some(2), None]
        );
    }
}
