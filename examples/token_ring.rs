//! `token_ring`: mutual exclusion by a circulating token. Four nodes (`node-0` … `node-3`)
//! pass a token around a ring; only the holder may enter its critical section.
//!
//! The injected bug: a node that waits too long for the token assumes it was lost and makes a
//! new one. When a critical section happens to be slow, the timeout fires while the token still
//! exists, two tokens circulate, and two nodes can be in their critical sections at once — in
//! some runs (the program then exits with code 1), not in others.
//!
//! Each node marks `holding` with the number of nodes inside (itself included) when it enters,
//! and with 0 when it leaves.
//!
//! Try: `ppd record -- cargo run --example token_ring`, then
//! `ppd replay --stop 'node-0: mark holding if value > 0 == node-2: mark holding if value > 0'`
//! (both hold the token at once, and stay holding it) or
//! `ppd replay --stop 'node-1: mark holding if value > 1'` (a node enters while another is in).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use ppd::sync::atomic::{AtomicU32, Ordering};
use ppd::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use serde::{Deserialize, Serialize};

const NODES: usize = 4;
const ROUNDS: u32 = 25;
const PATIENCE: Duration = Duration::from_millis(30);

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Token {
    /// Which token this is: 0 is the original, later ones were regenerated.
    generation: u32,
    /// How many times it has been passed.
    hops: u32,
}

struct Node {
    next: Sender<Token>,
    inbox: Receiver<Token>,
    in_critical: Arc<AtomicU32>,
    worst: Arc<AtomicU32>,
}

impl Node {
    fn critical_section(&self) {
        let inside = self.in_critical.fetch_add(1, Ordering::SeqCst) + 1;
        self.worst.fetch_max(inside, Ordering::SeqCst);
        ppd::mark!("holding", inside);
        // Usually quick; now and then very slow.
        let work = if ppd::rand::u32(0..200) == 0 {
            Duration::from_millis(40)
        } else {
            Duration::from_micros(ppd::rand::u64(0..1500))
        };
        ppd::thread::sleep(work);
        ppd::mark!("holding", 0);
        self.in_critical.fetch_sub(1, Ordering::SeqCst);
    }

    fn run(self, start_with_token: bool) {
        let mut handled = 0;
        let mut generations = 0;
        let mut token = start_with_token.then_some(Token {
            generation: 0,
            hops: 0,
        });
        while handled < ROUNDS {
            let mut held = match token.take() {
                Some(t) => t,
                None => match self.inbox.recv_timeout(PATIENCE) {
                    Ok(t) => t,
                    Err(RecvTimeoutError::Timeout) => {
                        // The bug: the token is late, not lost.
                        generations += 1;
                        ppd::mark!("regenerate", generations);
                        Token {
                            generation: generations,
                            hops: 0,
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                },
            };
            self.critical_section();
            handled += 1;
            held.hops += 1;
            if self.next.send(held).is_err() {
                return;
            }
        }
    }
}

#[ppd::main]
fn main() -> ExitCode {
    let in_critical = Arc::new(AtomicU32::named("in_critical", 0));
    let worst = Arc::new(AtomicU32::named("worst", 0));
    let mut senders = Vec::new();
    let mut inboxes = Vec::new();
    for _ in 0..NODES {
        let (tx, rx) = channel();
        senders.push(tx);
        inboxes.push(rx);
    }
    // Node i sends to node i+1.
    senders.rotate_left(1);
    let nodes: Vec<_> = senders
        .into_iter()
        .zip(inboxes)
        .enumerate()
        .map(|(id, (next, inbox))| {
            let node = Node {
                next,
                inbox,
                in_critical: Arc::clone(&in_critical),
                worst: Arc::clone(&worst),
            };
            ppd::thread::Builder::new()
                .name(format!("node-{id}"))
                .spawn(move || node.run(id == 0))
                .expect("spawn node")
        })
        .collect();
    for n in nodes {
        n.join().expect("node");
    }
    let worst = worst.load(Ordering::SeqCst);
    if worst > 1 {
        println!("mutual exclusion violated: {worst} nodes in their critical sections at once");
        ExitCode::FAILURE
    } else {
        println!("mutual exclusion held");
        ExitCode::SUCCESS
    }
}
