//! A program written against ppd that also builds without it: `cargo run -p ppd --example
//! switched_off --no-default-features` runs it on std alone. It prints the types it got, so a
//! test can tell which build ran.

use ppd::collections::HashMap;
use ppd::sync::atomic::{AtomicU64, Ordering};
use ppd::sync::{Arc, Barrier, LazyLock, Mutex, Once, OnceLock, mpsc};
use ppd::thread;

#[ppd::eblock]
fn total(values: Vec<u64>) -> u64 {
    values.iter().sum()
}

#[ppd::main]
fn main() {
    let counter = Arc::new(AtomicU64::new(0));
    let sum = Arc::new(Mutex::new(0u64));
    let (tx, rx) = mpsc::channel();
    let workers: Vec<_> = (0..3u64)
        .map(|i| {
            let (counter, sum, tx) = (Arc::clone(&counter), Arc::clone(&sum), tx.clone());
            thread::spawn(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                *sum.lock().unwrap() += i;
                tx.send(i * 10).unwrap();
            })
        })
        .collect();
    drop(tx);
    for w in workers {
        w.join().unwrap();
    }
    let mut received: Vec<u64> = rx.iter().collect();
    received.sort();
    let mut squares = HashMap::new();
    thread::scope(|s| {
        s.spawn(|| squares.insert(3u64, 9u64));
    });
    ppd::mark!("squares", squares.len());
    let started = ppd::time::Instant::now();
    println!(
        "counter {} sum {} received {received:?} total {} squares {} clock {}",
        counter.load(Ordering::SeqCst),
        *sum.lock().unwrap(),
        total(received.clone()),
        squares[&3],
        started.elapsed() < ppd::time::Duration::from_secs(3600),
    );
    {
        let (tx, rx) = ppd::channel::bounded(1);
        tx.send(1u8).unwrap();
        println!("channel {}", rx.recv().unwrap());
        let (sync_tx, sync_rx) = mpsc::sync_channel(1);
        sync_tx.send(2u8).unwrap();
        let full = matches!(sync_tx.try_send(3), Err(mpsc::TrySendError::Full(3)));
        tx.send(sync_rx.recv().unwrap()).unwrap();
        let chosen = ppd::select! {
            recv(rx) -> msg => msg.unwrap(),
            default(ppd::time::Duration::from_secs(1)) => 0,
        };
        println!("sync channel full {full} selected {chosen}");
    }
    println!(
        "channel type {}",
        std::any::type_name::<ppd::channel::Sender<u8>>()
    );
    println!("mutex type {}", std::any::type_name::<Mutex<u64>>());
    println!("thread type {}", std::any::type_name::<thread::Thread>());
    println!("map type {}", std::any::type_name::<HashMap<u8, u8>>());
    static CONFIG: OnceLock<u64> = OnceLock::new();
    static SQUARE: LazyLock<u64> = LazyLock::new(|| 4);
    static INIT: Once = Once::new();
    static HITS: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    INIT.call_once(|| HITS.lock().unwrap().push(1));
    println!(
        "once {} lazy {} leader {} hits {:?} cell type {}",
        CONFIG.get_or_init(|| 5),
        *SQUARE,
        Barrier::new(1).wait().is_leader(),
        *HITS.lock().unwrap(),
        std::any::type_name::<OnceLock<u8>>()
    );
}
