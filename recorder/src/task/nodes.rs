//! The processor farm over OS processes (seed thesis §3.2 on a network of nodes): the calling
//! program generates and collects, and each worker is another program — on this host or
//! another — that connected to the farm's listener and serves with [`serve`].
//!
//! Each connection has a ppd process on the farm's side, its *proxy*, which the farm's pool
//! treats as a local worker: it writes the tasks it is handed to its worker node and hands back
//! what comes back. A worker node that dies (killed, crashed, its host gone) ends its
//! connection; the proxy ends with it, and the farm sees that worker gone as it sees a local
//! worker's process end. The task marks are the local farm's: the hand-out in the proxy's
//! place, begin and end in the worker node, so `ppd analyze tasks` reads one task's life across
//! the OS processes of a recording, and names the node when the worker's OS process died.
//!
//! Phase two re-executes a task in the worker node that computed it: the emulator runs that
//! node's binary natively up to its [`serve`], which hands its work over instead of
//! connecting.
//!
//! On the wire a frame is a little-endian `u32` length and a MessagePack body: a task is
//! `[run, task, input]`, a result `[task, result]`. Everything goes through `ppd::net`, so a
//! recorded run replays without the network.

use std::io::{self, Read, Write};
use std::net::ToSocketAddrs;
use std::panic::Location;
use std::sync::Mutex;

use ppd_formats::task::{TaskStep, WORK_EBLOCK};
use ppd_formats::value;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Pool, computation, log, logged, next_run, rerun_serving, result_bytes};
use crate::net::{TcpListener, TcpStream};

/// The largest frame a peer may announce: anything longer is taken for a stream that is not
/// a farm's.
const MAX_FRAME: u32 = 1 << 30;

/// Writes `value` as one frame.
fn write_frame<T: Serialize>(stream: &mut TcpStream, value: &T) -> io::Result<()> {
    let body = value::encode(value).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let len = u32::try_from(body.len())
        .ok()
        .filter(|&n| n <= MAX_FRAME)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "frame too long"))?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&body);
    stream.write_all(&frame)
}

/// Reads one frame; `None` at a clean end of the stream (before a frame begins).
fn read_frame<T: DeserializeOwned>(stream: &mut TcpStream) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < len.len() {
        match stream.read(&mut len[got..])? {
            0 if got == 0 => return Ok(None),
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => got += n,
        }
    }
    let len = u32::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes: not a ppd task farm's peer"),
        ));
    }
    let mut body = vec![0u8; len as usize];
    stream.read_exact(&mut body)?;
    value::decode_as(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The processor farm over OS processes: waits on `listener` for `workers` worker nodes (each
/// a program calling [`serve`]), hands out the tasks in the order given, numbered from 0, one
/// at a time per worker, and returns the results in task order. The farm's proxies are ppd
/// processes named `farm-node-N`.
///
/// # Panics
///
/// If a worker node ends (its work panicked, or its OS process died) while it holds a task:
/// after the other tasks are done, naming the task. If a worker cannot be accepted.
///
/// ```no_run
/// let listener = ppd::net::TcpListener::bind("127.0.0.1:7070").unwrap();
/// // ... start two programs that call `ppd::task::serve("127.0.0.1:7070", |x: u64| x * x)`
/// let squares: Vec<u64> = ppd::task::farm_nodes(&listener, 2, vec![1u64, 2, 3]);
/// ```
#[track_caller]
pub fn farm_nodes<T, R>(listener: &TcpListener, workers: usize, tasks: Vec<T>) -> Vec<R>
where
    T: Serialize + DeserializeOwned + Send + 'static,
    R: Serialize + DeserializeOwned + Send + 'static,
{
    let site = Location::caller();
    let total = tasks.len();
    let vm = next_run();
    log(TaskStep::Farm, (vm, 0), &[], total as u64, site);
    // Proxy `i` serves the `i`th node accepted: a choice the log holds (the accept order),
    // so replay pairs them the same way.
    let connections: Vec<Mutex<Option<TcpStream>>> = (0..workers.max(1))
        .map(|_| {
            let (stream, _) = listener
                .accept()
                .unwrap_or_else(|e| panic!("ppd::task::farm_nodes: cannot accept a worker: {e}"));
            Mutex::new(Some(stream))
        })
        .collect();
    let pool: Pool<(u64, T), (u64, R)> =
        Pool::start(vm, workers, "farm-node", move |i, inbox, outbox| {
            let taken = connections[i].lock().ok().and_then(|mut c| c.take());
            let Some(mut stream) = taken else {
                return;
            };
            for (task, input) in inbox.iter() {
                if write_frame(&mut stream, &(vm, task, input)).is_err() {
                    return;
                }
                match read_frame::<(u64, R)>(&mut stream) {
                    Ok(Some(answer)) => {
                        if outbox.send(answer).is_err() {
                            return;
                        }
                    }
                    // The node ended: the pool sees this proxy end with the task unanswered.
                    Ok(None) | Err(_) => return,
                }
            }
        });
    pool.farm_out("farm_nodes", tasks, site)
}

/// A worker node of [`farm_nodes`]: connects to the farm at `farm` and computes `work(task)`
/// for every task it is handed, until the farm closes the connection. Each computation runs
/// as the same e-block as a local farm's work, between the same begin and end marks.
///
/// # Errors
///
/// If the farm cannot be reached, or the connection fails or carries something that is not a
/// farm's task.
///
/// ```no_run
/// ppd::task::serve("127.0.0.1:7070", |x: u64| x * x).unwrap();
/// ```
#[track_caller]
pub fn serve<T, R, F>(farm: impl ToSocketAddrs, work: F) -> io::Result<()>
where
    T: Serialize + DeserializeOwned,
    R: Serialize + DeserializeOwned,
    F: Fn(T) -> R + Sync,
{
    let site = Location::caller();
    // Phase two: a task this node computed is re-executed here, from its log, without the
    // farm (nothing else of the node's run is needed, and the farm is long gone).
    rerun_serving(&mut |eblock, input| match eblock {
        WORK_EBLOCK => result_bytes(&work(logged(input)?)),
        other => Err(format!("a farm's worker node runs no {other}")),
    });
    let mut stream = TcpStream::connect(farm)?;
    while let Some((vm, task, input)) = read_frame::<(u64, u64, T)>(&mut stream)? {
        log(TaskStep::Begin, (vm, task), &[], 0, site);
        let result = computation(WORK_EBLOCK, site, input, &work);
        log(TaskStep::End, (vm, task), &[], 0, site);
        write_frame(&mut stream, &(task, result))?;
    }
    Ok(())
}
