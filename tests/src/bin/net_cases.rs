//! Programs that talk over sockets with `ppd::net`, chosen by the first argument:
//!
//! * `echo`: `server` accepts one TCP connection on a loopback port and echoes each line it
//!   reads; `main` connects, writes three lines and prints what comes back;
//! * `unix`: the same over a Unix socket at the path given as the second argument;
//! * `udp`: `main` sends three datagrams to `answerer`, which answers each with its length;
//! * `outside ADDR`: `main` talks to the echo server at ADDR, which is not recorded
//!   (`plain-echo-server`, a std program): its replies come from outside the recording;
//! * `refused`: a connect to a port nobody listens on fails, and the error is printed;
//! * `shared`: `main` and `writer` write to one connection (a clone each), `server` reads
//!   what they wrote; the writes are ordered by a lock, the reader sees both;
//! * `total-server tcp|tcp-any|unix PORTFILE CLIENTS`: a server in an OS process of its own:
//!   it listens on a loopback port, a port of every address, or the Unix socket
//!   `PORTFILE.sock`, writes its address to
//!   PORTFILE, serves CLIENTS connections (a process each), adds what each asks to a total
//!   under a lock, answers with the total and prints the final total;
//! * `total-client ADDR NAME AMOUNT`: a client in an OS process of its own: asks the server
//!   at ADDR (a Unix socket path if it starts with `/`) to add ten times AMOUNT for NAME and
//!   prints the answer;
//! * `udp-collector PORTFILE`: collects datagrams from any senders, starting late, until none
//!   comes for a second, and prints how many it got;
//! * `udp-sender ADDR NAME COUNT`: sends COUNT kilobyte datagrams to ADDR;
//! * `sites`: `main` writes to `server` with `write_all`, `writeln!` and `write!`, `server`
//!   reads with `read_exact`, a `ppd::io::BufReader`'s `read_line` and `lines`, and
//!   `read_to_string`, each on a line of its own.

use std::io::{BufRead, BufReader, Read, Write};

use ppd::net::unix::{UnixListener, UnixStream};
use ppd::net::{TcpListener, TcpStream, UdpSocket};
use ppd::sync::{Arc, Mutex};

fn spawn<F: FnOnce() + Send + 'static>(name: &str, f: F) -> ppd::thread::JoinHandle<()> {
    ppd::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .expect("spawn")
}

/// Echoes every line of `stream` back until it closes.
fn echo_lines(stream: impl Read + Write + Clone) {
    let mut out = stream.clone();
    for line in BufReader::new(stream).lines() {
        let line = line.expect("a line");
        writeln!(out, "{line}").expect("echo");
    }
}

/// Writes three lines to `stream` and prints the lines that come back.
fn talk(stream: impl Read + Write + Clone) {
    let mut out = stream.clone();
    let mut replies = BufReader::new(stream).lines();
    for word in ["alpha", "beta", "gamma"] {
        writeln!(out, "{word}").expect("write");
        let reply = replies.next().expect("a reply").expect("readable");
        println!("sent {word}, got {reply}");
    }
}

/// Shared references to a stream are streams too (as `&TcpStream` is in std).
struct Shared<'a, S>(&'a S);

impl<S> Clone for Shared<'_, S> {
    fn clone(&self) -> Self {
        Shared(self.0)
    }
}

impl<S> Read for Shared<'_, S>
where
    for<'b> &'b S: Read,
{
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        (&mut &*self.0).read(buf)
    }
}

impl<S> Write for Shared<'_, S>
where
    for<'b> &'b S: Write,
{
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (&mut &*self.0).write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        (&mut &*self.0).flush()
    }
}

fn echo() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let server = spawn("server", move || {
        let (stream, _) = listener.accept().expect("accept");
        echo_lines(Shared(&stream));
    });
    let stream = TcpStream::connect(addr).expect("connect");
    talk(Shared(&stream));
    drop(stream);
    server.join().expect("server");
}

fn unix(path: &str) {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path).expect("bind");
    let server = spawn("server", move || {
        let (stream, _) = listener.accept().expect("accept");
        echo_lines(Shared(&stream));
    });
    let stream = UnixStream::connect(path).expect("connect");
    talk(Shared(&stream));
    drop(stream);
    server.join().expect("server");
    let _ = std::fs::remove_file(path);
}

fn udp() {
    let answerer_socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let to = answerer_socket.local_addr().expect("address");
    let answerer = spawn("answerer", move || {
        let mut buf = [0u8; 64];
        for _ in 0..3 {
            let (n, from) = answerer_socket.recv_from(&mut buf).expect("receive");
            answerer_socket
                .send_to(format!("{n}").as_bytes(), from)
                .expect("answer");
        }
    });
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut buf = [0u8; 64];
    for word in ["one", "three", "seventeen"] {
        socket.send_to(word.as_bytes(), to).expect("send");
        let (n, _) = socket.recv_from(&mut buf).expect("answer");
        println!("{word}: {}", String::from_utf8_lossy(&buf[..n]));
    }
    answerer.join().expect("answerer");
}

fn outside(addr: &str) {
    let stream = TcpStream::connect(addr).expect("connect");
    talk(Shared(&stream));
}

/// An echo server that is not recorded: std's sockets, no `ppd record` around it. It prints
/// its address, serves one connection (upper-casing each line) and exits.
fn plain_echo_server() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("{}", listener.local_addr().expect("address"));
    let (stream, _) = listener.accept().expect("accept");
    let mut out = stream.try_clone().expect("clone");
    for line in BufReader::new(stream).lines() {
        let line = line.expect("a line");
        writeln!(out, "{}", line.to_uppercase()).expect("echo");
    }
}

fn refused() {
    // Bind and drop: nobody listens on the port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    match TcpStream::connect(("127.0.0.1", port)) {
        Ok(_) => println!("connected?"),
        Err(e) => println!("refused: {:?}", e.kind()),
    }
}

fn shared() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let server = spawn("server", move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut all = String::new();
        stream.read_to_string(&mut all).expect("read");
        let mut lines: Vec<&str> = all.lines().collect();
        lines.sort_unstable();
        println!("server read {}", lines.join(" "));
    });
    let stream = TcpStream::connect(addr).expect("connect");
    let turn = Arc::new(Mutex::new(stream));
    let writer = {
        let turn = Arc::clone(&turn);
        spawn("writer", move || {
            let stream = turn.lock().expect("turn");
            writeln!(&*stream, "from-writer").expect("write");
        })
    };
    {
        let stream = turn.lock().expect("turn");
        writeln!(&*stream, "from-main").expect("write");
    }
    writer.join().expect("writer");
    let stream = turn.lock().expect("turn");
    stream
        .shutdown(std::net::Shutdown::Write)
        .expect("shutdown");
    drop(stream);
    server.join().expect("server");
}

/// A connection of the total server or a client: over TCP or a Unix socket.
#[derive(serde::Serialize, serde::Deserialize)]
enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Read for &Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => (&*s).read(buf),
            Conn::Unix(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => (&*s).write(buf),
            Conn::Unix(s) => (&*s).write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where the total server listens: a loopback port, or a Unix socket path.
enum Listening {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listening {
    fn accept(&self) -> Conn {
        match self {
            Listening::Tcp(l) => Conn::Tcp(l.accept().expect("accept").0),
            Listening::Unix(l) => Conn::Unix(l.accept().expect("accept").0),
        }
    }
}

fn total_server(transport: &str, port_file: &str, clients: usize) {
    let (listener, addr) = match transport {
        "unix" => {
            let path = format!("{port_file}.sock");
            let listener = UnixListener::bind(&path).expect("bind");
            (Listening::Unix(listener), path)
        }
        "tcp-any" => {
            let listener = TcpListener::bind("0.0.0.0:0").expect("bind");
            let addr = listener.local_addr().expect("address").to_string();
            (Listening::Tcp(listener), addr)
        }
        _ => {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = listener.local_addr().expect("address").to_string();
            (Listening::Tcp(listener), addr)
        }
    };
    // Written where a launcher waits for it (rename: it appears whole).
    let part = format!("{port_file}.part");
    std::fs::write(&part, addr).expect("write the address");
    std::fs::rename(&part, port_file).expect("publish the address");
    let total = Arc::new(Mutex::new(0u64));
    let handlers: Vec<_> = (0..clients)
        .map(|k| {
            let conn = listener.accept();
            let total = Arc::clone(&total);
            spawn(&format!("handler-{k}"), move || {
                handle(&conn, &total);
            })
        })
        .collect();
    for h in handlers {
        h.join().expect("handler");
    }
    println!("final total {}", *total.lock().expect("total"));
}

/// Serves one request `add NAME AMOUNT`: adds the amount to `total` and answers with the total
/// after it, which it returns.
#[ppd::eblock]
fn handle(conn: &Conn, total: &Mutex<u64>) -> u64 {
    let mut line = String::new();
    BufReader::new(conn)
        .read_line(&mut line)
        .expect("a request");
    let amount: u64 = line
        .split_whitespace()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let mut total = total.lock().expect("total");
    *total += amount;
    let answer = *total;
    writeln!(&*conn, "total {answer}").expect("answer");
    answer
}

/// Connects to the total server at ADDR (a Unix socket path if it starts with `/`), asks it
/// to add AMOUNT for NAME, and prints the answer.
fn total_client(addr: &str, name: &str, amount: u64) {
    let conn = if addr.starts_with('/') {
        Conn::Unix(UnixStream::connect(addr).expect("connect"))
    } else {
        Conn::Tcp(TcpStream::connect(addr).expect("connect"))
    };
    let answer = request(&conn, name.to_owned(), amount);
    println!("{name}: {}", answer.trim());
}

/// Asks the server on `conn` to add ten times `amount` for `name`; its answer.
#[ppd::eblock]
fn request(conn: &Conn, name: String, amount: u64) -> String {
    let asked = amount * 10;
    let line = format!("add {name} {asked}\n");
    (&*conn).write_all(line.as_bytes()).expect("request");
    let mut answer = String::new();
    BufReader::new(conn)
        .read_line(&mut answer)
        .expect("an answer");
    answer
}

/// Collects the datagrams `NAME K VALUE PADDING` any number of senders send until none comes
/// for a second. It starts reading late: what does not fit in its receive buffer meanwhile is
/// dropped by the kernel. Prints how many it received and how often the sender changed from one
/// datagram to the next.
fn udp_collector(port_file: &str) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let part = format!("{port_file}.part");
    let addr = socket.local_addr().expect("address").to_string();
    std::fs::write(&part, addr).expect("write the address");
    std::fs::rename(&part, port_file).expect("publish the address");
    ppd::thread::sleep(std::time::Duration::from_millis(300));
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(1)))
        .expect("timeout");
    let mut received = 0;
    let mut switches = 0;
    let mut last = String::new();
    while let Some((name, _, _)) = collect(&socket) {
        received += 1;
        if !last.is_empty() && name != last {
            switches += 1;
        }
        last = name;
    }
    println!("received {received}, sender switched {switches} times");
}

/// Receives one datagram: who sent it, its number and its value; `None` once none came for the
/// read timeout.
#[ppd::eblock]
fn collect(socket: &UdpSocket) -> Option<(String, u64, u64)> {
    let mut buf = vec![0u8; 2048];
    let (n, _) = socket.recv_from(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    let mut words = text.split_whitespace();
    let name = words.next()?.to_owned();
    let k: u64 = words.next()?.parse().ok()?;
    let value: u64 = words.next()?.parse().ok()?;
    Some((name, k, value))
}

/// Sends COUNT datagrams of a kilobyte to ADDR, a little apart.
fn udp_sender(addr: &str, name: &str, count: u64) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    for k in 0..count {
        send_one(&socket, addr.to_owned(), name.to_owned(), k);
        if k % 16 == 0 {
            ppd::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    println!("{name} sent {count}");
}

/// Sends datagram `k` of `name`: its value, padded to a kilobyte.
#[ppd::eblock]
fn send_one(socket: &UdpSocket, to: String, name: String, k: u64) -> usize {
    let value = k * 7 + 1;
    let text = format!("{name} {k} {value} {:>1000}", "");
    socket.send_to(text.as_bytes(), to.as_str()).expect("send")
}

/// Every way of reading and writing a stream the program itself names, each on a line of its
/// own: a logged operation is located at its line.
fn sites() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let server = spawn("server", move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut head = [0u8; 4];
        (&stream).read_exact(&mut head).expect("four bytes");
        let mut reader = ppd::io::BufReader::new(&stream);
        let mut first = String::new();
        reader.read_line(&mut first).expect("a line");
        let mut rest = Vec::new();
        for line in reader.lines() {
            rest.push(line.expect("a line"));
        }
        let (second, _) = listener.accept().expect("accept");
        let mut all = String::new();
        (&second).read_to_string(&mut all).expect("text");
        println!(
            "{} {} {rest:?} {all}",
            String::from_utf8_lossy(&head),
            first.trim()
        );
    });
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(b"head").expect("written");
    writeln!(stream, "first").expect("written");
    write!(&stream, "second\nthird\n").expect("written");
    drop(stream);
    let second = TcpStream::connect(addr).expect("connect");
    (&second).write_all(b"all of it").expect("written");
    drop(second);
    server.join().expect("server");
}

#[ppd::main]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("echo") => echo(),
        Some("unix") => unix(
            args.get(2)
                .map_or("/tmp/ppd-net-cases.sock", String::as_str),
        ),
        Some("udp") => udp(),
        Some("outside") => outside(args.get(2).map_or("127.0.0.1:1", String::as_str)),
        Some("plain-echo-server") => plain_echo_server(),
        Some("refused") => refused(),
        Some("shared") => shared(),
        Some("sites") => sites(),
        Some("total-server") => total_server(
            args.get(2).map_or("tcp", String::as_str),
            args.get(3).map_or("port", String::as_str),
            args.get(4).and_then(|n| n.parse().ok()).unwrap_or(1),
        ),
        Some("udp-collector") => udp_collector(args.get(2).map_or("port", String::as_str)),
        Some("udp-sender") => udp_sender(
            args.get(2).map_or("127.0.0.1:1", String::as_str),
            args.get(3).map_or("sender", String::as_str),
            args.get(4).and_then(|n| n.parse().ok()).unwrap_or(1),
        ),
        Some("total-client") => total_client(
            args.get(2).map_or("127.0.0.1:1", String::as_str),
            args.get(3).map_or("client", String::as_str),
            args.get(4).and_then(|n| n.parse().ok()).unwrap_or(1),
        ),
        other => {
            eprintln!("unknown case {other:?}");
            std::process::exit(2);
        }
    }
}
