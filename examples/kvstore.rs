//! `kvstore`: a replicated key-value store in three OS processes over TCP, started by
//! `examples/kvstore.sh`:
//!
//! * `kvstore backup` keeps a copy of the store. Its `replication` thread applies the
//!   updates the primary forwards (`put KEY VERSION VALUE`), each only if it is newer than the
//!   version it has, and acknowledges each; its `reads` thread answers `get KEY`.
//! * `kvstore primary BACKUP` takes a client's `put KEY VALUE`s in a `session` thread: it stores
//!   the value under the key's next version, forwards the update to the backup, waits for the
//!   backup's acknowledgement, and answers the client with the version.
//! * `kvstore client PRIMARY BACKUP PUTS` counts `hits` from 1 to PUTS on the primary, then
//!   reads `hits` from the primary and from the backup, and exits with code 1 if they differ.
//!
//! The backup and the primary listen on a free port and print its address first thing; the
//! launcher passes it on as an argument. (Not through a file: replay runs each program with its
//! recorded arguments and does not record files, while the address a listener got is logged.)
//!
//! The bug: the backup keeps versions as the text it received, and compares them as text. From
//! version 10 on, `"10" > "9"` is false: the backup takes every later update for an old one and
//! ignores it, while acknowledging it. The client then reads 9 from the backup and 12 from the
//! primary.
//!
//! Try it (README, "Several OS processes and hosts"): `ppd record -- sh examples/kvstore.sh`, then
//! `ppd replay --stop 'backup/replication: mark ignored'` and
//! `ppd why backup/replication newer --at 'mark ignored'`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use ppd::io::{BufRead, BufReader, Write};
use ppd::net::{TcpListener, TcpStream};
use ppd::sync::{Arc, Mutex};

/// A key's value and the version it was written at, as the backup keeps them.
type Copies = BTreeMap<String, (String, String)>;

fn spawn<F: FnOnce() + Send + 'static>(name: &str, f: F) -> ppd::thread::JoinHandle<()> {
    ppd::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .expect("spawn a thread")
}

/// Listens on a free loopback port and prints its address for the launcher.
fn listen() -> TcpListener {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("{}", listener.local_addr().expect("the bound address"));
    listener
}

fn connect(addr: &str) -> TcpStream {
    TcpStream::connect(addr).expect("connect")
}

/// Sends one request line on `conn` and returns the answer line.
fn ask(conn: &TcpStream, request: &str) -> String {
    writeln!(&*conn, "{request}").expect("send a request");
    let mut answer = String::new();
    BufReader::new(conn)
        .read_line(&mut answer)
        .expect("read an answer");
    answer.trim().to_owned()
}

fn backup() {
    let listener = listen();
    let copies = Arc::new(Mutex::named("copies", Copies::new()));
    let (primary, _) = listener.accept().expect("the primary connects");
    let replication = {
        let copies = Arc::clone(&copies);
        spawn("replication", move || {
            replicate(&primary, &copies);
        })
    };
    let (client, _) = listener.accept().expect("a reader connects");
    let reads = {
        let copies = Arc::clone(&copies);
        spawn("reads", move || {
            for line in BufReader::new(&client).lines() {
                let line = line.expect("a request");
                let key = line.trim_start_matches("get ");
                let copies = copies.lock().expect("copies");
                let value = copies.get(key).map_or("none", |(_, value)| value.as_str());
                writeln!(&client, "{value}").expect("answer");
            }
        })
    };
    replication.join().expect("replication");
    reads.join().expect("reads");
}

/// Applies the updates the primary forwards until it closes the connection; how many it
/// applied.
#[ppd::eblock]
fn replicate(primary: &TcpStream, copies: &Mutex<Copies>) -> usize {
    let mut applied = 0;
    for line in BufReader::new(primary).lines() {
        let line = line.expect("an update");
        let mut words = line.split_whitespace().skip(1);
        let key = words.next().unwrap_or_default().to_owned();
        let version = words.next().unwrap_or_default().to_owned();
        let value = words.next().unwrap_or_default().to_owned();
        let mut copies = copies.lock().expect("copies");
        let current = copies.get(&key).map_or("", |(version, _)| version.as_str());
        // The bug: versions compared as text.
        let newer = version.as_str() > current;
        if newer {
            copies.insert(key, (version, value));
            applied += 1;
        } else {
            ppd::mark!("ignored", line.clone());
        }
        drop(copies);
        writeln!(&*primary, "ok").expect("acknowledge");
    }
    applied
}

fn primary(backup: &str) {
    let replica = Arc::new(Mutex::named("replica", connect(backup)));
    let listener = listen();
    let store = Arc::new(Mutex::named(
        "store",
        BTreeMap::<String, (u64, String)>::new(),
    ));
    let (client, _) = listener.accept().expect("a client connects");
    let session = spawn("session", move || {
        serve(&client, &store, &replica);
    });
    session.join().expect("session");
}

/// Serves one client until it disconnects: stores each `put`, forwards it to the backup and
/// waits for the backup to acknowledge it; answers each `get`. How many requests it served.
#[ppd::eblock]
fn serve(
    client: &TcpStream,
    store: &Mutex<BTreeMap<String, (u64, String)>>,
    replica: &Mutex<TcpStream>,
) -> usize {
    let mut served = 0;
    for line in BufReader::new(client).lines() {
        let line = line.expect("a request");
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["put", key, value] => {
                let mut store = store.lock().expect("store");
                let version = store.get(*key).map_or(0, |(version, _)| *version) + 1;
                store.insert((*key).to_owned(), (version, (*value).to_owned()));
                drop(store);
                let replica = replica.lock().expect("replica");
                let acknowledged = ask(&replica, &format!("put {key} {version} {value}"));
                format!("{acknowledged} {version}")
            }
            ["get", key] => {
                let store = store.lock().expect("store");
                store
                    .get(*key)
                    .map_or("none".to_owned(), |(_, value)| value.clone())
            }
            _ => "what?".to_owned(),
        };
        writeln!(&*client, "{answer}").expect("answer");
        served += 1;
    }
    served
}

/// Counts `hits` up to `puts` on the primary; then whether the primary and the backup agree.
fn client(primary: &str, backup: &str, puts: u64) -> ExitCode {
    let primary = connect(primary);
    for n in 1..=puts {
        count(&primary, n);
    }
    let on_primary = ask(&primary, "get hits");
    let on_backup = ask(&connect(backup), "get hits");
    println!("primary: hits = {on_primary}");
    println!("backup:  hits = {on_backup}");
    if on_primary == on_backup {
        ExitCode::SUCCESS
    } else {
        println!("the backup is stale");
        ExitCode::FAILURE
    }
}

/// Sets `hits` to `n` on the primary; the primary's answer.
#[ppd::eblock]
fn count(primary: &TcpStream, n: u64) -> String {
    ask(primary, &format!("put hits {n}"))
}

#[ppd::main]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["backup"] => backup(),
        ["primary", backup] => primary(backup),
        ["client", primary, backup, puts] => match puts.parse() {
            Ok(puts) => return client(primary, backup, puts),
            Err(_) => return usage(),
        },
        _ => return usage(),
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: kvstore backup | primary BACKUP | client PRIMARY BACKUP PUTS");
    ExitCode::from(2)
}
