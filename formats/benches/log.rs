//! Benchmark of the log writer and reader: `cargo bench -p ppd-formats --bench log`.
//!
//! Prints write throughput from one thread, sequential read throughput against it,
//! compressed bytes per event for a regular and a random receive order, random-access read
//! latency for two log sizes, and the writer's peak memory for two run lengths. Every figure is
//! measured in this run; each says how.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ppd_formats::event::{AtomicOp, ClockSource, MemOrdering};
use ppd_formats::{
    Borrowed, Event, LogIdentity, LogReader, LogWriter, ObjectId, ProcessId, WriterOptions,
    WriterStats,
};

/// Argument that makes the binary the child of the memory measurement.
const CHILD: &str = "--writer-memory-child";
/// Header region plus ring: the part of a log that is not frames, index or footer.
const FIXED_BYTES: u64 = 4096 + 128 * 1024 * 8;

fn identity() -> LogIdentity {
    LogIdentity {
        process_id: ProcessId(1),
        parent: Some(ProcessId(0)),
        name: "bench".into(),
        os_pid: std::process::id(),
    }
}

/// Receive `i` of a server taking messages round-robin from 4 senders on one channel, each
/// with the channel's next sequence number.
fn regular(i: u64) -> Event<Borrowed<'static>> {
    Event::Recv {
        channel: ObjectId::new(ProcessId(0), 1),
        sender: ProcessId(1 + (i % 4) as u32),
        seq: i + 1,
        site: None,
        payload: None,
    }
}

/// A small event of a mixed workload: receives, sends, locks, atomics and clock reads, with
/// source locations, on a handful of objects.
fn mixed(i: u64) -> Event<Borrowed<'static>> {
    let object = ObjectId::new(ProcessId(0), (i % 6) as u32);
    let site = Some(std::panic::Location::caller());
    match i % 5 {
        0 => Event::Recv {
            channel: object,
            sender: ProcessId((i % 3) as u32),
            seq: i / 5,
            site,
            payload: None,
        },
        1 => Event::Send {
            channel: object,
            seq: i / 5,
            site,
            payload: None,
        },
        2 => Event::Lock {
            object,
            version: i / 5,
            prev: Some(ProcessId(2)),
            site,
            value: None,
        },
        3 => Event::Atomic {
            object,
            version: i / 5,
            prev: None,
            op: AtomicOp::Load,
            ordering: MemOrdering::Acquire,
            failure: None,
            site,
            value: None,
        },
        _ => Event::Clock {
            source: ClockSource::Monotonic,
            nanos: i * 37,
        },
    }
}

/// Writes `n` events; returns the time spent in `append` and the writer's statistics.
fn write(
    path: &Path,
    n: u64,
    event: impl Fn(u64) -> Event<Borrowed<'static>>,
) -> (Duration, WriterStats) {
    let mut w = LogWriter::create(path, &identity(), WriterOptions::default()).unwrap();
    let start = Instant::now();
    for i in 0..n {
        w.append(&event(i)).unwrap();
    }
    let elapsed = start.elapsed();
    (elapsed, w.close().unwrap())
}

/// Copies `n` records of `len` bytes into a block-sized buffer, wrapping around: what the
/// writer does at the very least for each event, with no encoding and no compression.
fn memcpy_floor(n: u64, len: usize) -> Duration {
    let mut block = vec![0u8; 128 * 1024];
    let mut source = vec![0u8; len.max(1)];
    let mut pos = 0;
    let start = Instant::now();
    for i in 0..n {
        source[0] = i as u8;
        let record = black_box(source.as_slice());
        if pos + record.len() > block.len() {
            pos = 0;
        }
        block[pos..pos + record.len()].copy_from_slice(record);
        pos += record.len();
    }
    black_box(&block);
    start.elapsed()
}

fn rate(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn million(x: f64) -> String {
    format!("{:.1} M", x / 1e6)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == CHILD) {
        let n: u64 = args[at + 1].parse().unwrap();
        return writer_memory_child(n);
    }
    let dir = tempfile::tempdir().unwrap();
    println!(
        "ppd-formats log benchmark (one writer thread; zstd level 3 on the compressor thread)"
    );
    println!("default options: blocks of 128 KiB, a ring of 8");
    println!();
    throughput(dir.path());
    sequential_read(dir.path());
    compression(dir.path());
    random_access(dir.path());
    writer_memory();
}

fn throughput(dir: &Path) {
    const N: u64 = 20_000_000;
    println!(
        "== write throughput, one thread ({} events per run, best of 3) ==",
        million(N as f64)
    );
    let mut lines = Vec::new();
    for (name, event) in [
        (
            "regular receives",
            regular as fn(u64) -> Event<Borrowed<'static>>,
        ),
        ("mixed small events", mixed),
    ] {
        let mut best = Duration::MAX;
        let mut stats = WriterStats::default();
        for run in 0..3 {
            let path = dir.join(format!("throughput-{run}.log"));
            let (elapsed, s) = write(&path, N, event);
            std::fs::remove_file(&path).unwrap();
            if elapsed < best {
                (best, stats) = (elapsed, s);
            }
        }
        let record = stats.raw_bytes as f64 / stats.events as f64;
        let floor = (0..3)
            .map(|_| memcpy_floor(N, record.round() as usize))
            .min()
            .unwrap();
        lines.push((name, rate(N, best), record, stats.stalls, rate(N, floor)));
    }
    for (name, events_per_s, record, stalls, floor) in lines {
        println!(
            "{name:>20}: {}events/s  ({record:.1} encoded bytes per event, {stalls} stalls; \
             goal >= 20 M/s)",
            million(events_per_s)
        );
        println!(
            "{:>20}  baseline: copying {:.0}-byte records into a 128 KiB buffer: {}records/s, \
             so the writer runs at {:.0}% of a bare copy",
            "",
            record.round(),
            million(floor),
            100.0 * events_per_s / floor
        );
    }
    println!("   measured: time spent in `append` for the whole run (close not included)");
    println!();
}

fn compression(dir: &Path) {
    const N: u64 = 4_000_000;
    println!("== compressed size ({} events each) ==", million(N as f64));
    let path = dir.join("regular.log");
    let (_, regular_stats) = write(&path, N, regular);
    let regular_file = std::fs::metadata(&path).unwrap().len() - FIXED_BYTES;
    std::fs::remove_file(&path).unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    let random: Vec<(u32, u32, u64)> = (0..N)
        .map(|_| (rng.u32(0..64), rng.u32(0..64), rng.u64(..1 << 40)))
        .collect();
    let path = dir.join("random.log");
    let (_, random_stats) = write(&path, N, |i| {
        let (sender, channel, seq) = random[i as usize];
        Event::Recv {
            channel: ObjectId::new(ProcessId(0), channel),
            sender: ProcessId(sender),
            seq,
            site: None,
            payload: None,
        }
    });
    let random_file = std::fs::metadata(&path).unwrap().len() - FIXED_BYTES;
    std::fs::remove_file(&path).unwrap();
    for (name, stats, file) in [
        ("regular receive order", &regular_stats, regular_file),
        ("random receive order", &random_stats, random_file),
    ] {
        println!(
            "{name:>22}: {:.3} bytes/event in frames, {:.3} with index and footer \
             (raw encoding {:.2} bytes/event, compression {:.0}x)",
            stats.compressed_bytes as f64 / N as f64,
            file as f64 / N as f64,
            stats.raw_bytes as f64 / N as f64,
            stats.raw_bytes as f64 / stats.compressed_bytes as f64
        );
    }
    println!(
        "   regular: 4 senders round-robin on one channel, consecutive sequence numbers (goal <= 1 byte/event)"
    );
    println!("   random: sender and channel uniform in 0..64, sequence numbers uniform in 0..2^40");
    println!(
        "   measured: frame bytes (headers included) the writer reports; file length less the 4 KiB header and the ring"
    );
    println!();
}

/// Reading a log through, as replay and every analysis do: each process's replay decodes its
/// own log event by event, so decoding sits on the replayed program's path.
fn sequential_read(dir: &Path) {
    const N: u64 = 5_000_000;
    println!(
        "== sequential read, one thread ({} events per log, best of 3) ==",
        million(N as f64)
    );
    for (name, event) in [
        (
            "regular receives",
            regular as fn(u64) -> Event<Borrowed<'static>>,
        ),
        ("mixed small events", mixed),
    ] {
        let path = dir.join("sequential.log");
        let (wrote, _) = write(&path, N, event);
        let reader = LogReader::open(&path).unwrap();
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let start = Instant::now();
            let mut read = 0u64;
            for item in reader.events() {
                black_box(item.unwrap());
                read += 1;
            }
            assert_eq!(read, N);
            best = best.min(start.elapsed());
        }
        let per_event = |d: Duration| d.as_nanos() as f64 / N as f64;
        println!(
            "{name:>20}: {:.1} ns/event read ({} events/s), {:.1} ns/event written: read / write {:.2}",
            per_event(best),
            million(rate(N, best)),
            per_event(wrote),
            best.as_secs_f64() / wrote.as_secs_f64()
        );
        std::fs::remove_file(&path).unwrap();
    }
    println!(
        "   measured: reader.events() over a closed log: frames read, decompressed and every event \
         decoded to an owned event; written: the time in append of the same events"
    );
    println!();
}

/// Times `get(k)` for each `k`; returns the median and the 99th percentile.
fn time_gets(reader: &LogReader, ks: impl Iterator<Item = u64>) -> (Duration, Duration) {
    let mut times: Vec<Duration> = ks
        .map(|k| {
            let start = Instant::now();
            black_box(reader.get(k).unwrap());
            start.elapsed()
        })
        .collect();
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

fn random_access(dir: &Path) {
    const SAMPLES: usize = 2_000;
    println!("== random access: get(k) on a freshly opened log, {SAMPLES} samples each ==");
    let mut medians = Vec::new();
    for n in [1_000_000u64, 10_000_000] {
        let path = dir.join(format!("read-{n}.log"));
        write(&path, n, mixed);
        let start = Instant::now();
        let reader = LogReader::open(&path).unwrap();
        let open = start.elapsed();
        let mut rng = fastrand::Rng::with_seed(n);
        let (median, p99) = time_gets(&reader, (0..SAMPLES).map(|_| rng.u64(0..n)));
        let starts: Vec<u64> = reader.block_times().unwrap().iter().map(|b| b.0).collect();
        let (first_median, first_p99) = time_gets(
            &reader,
            (0..SAMPLES).map(|_| starts[rng.usize(..starts.len())]),
        );
        println!(
            "{:>10} events ({} blocks, open {open:.1?}): random k: median {median:.1?}, p99 {p99:.1?}; \
             first event of a random block: median {first_median:.1?}, p99 {first_p99:.1?}",
            million(n as f64),
            reader.block_count(),
        );
        medians.push((median, first_median));
        std::fs::remove_file(&path).unwrap();
    }
    println!(
        "   10x more events: median x{:.2} for a random k, x{:.2} for a block's first event",
        medians[1].0.as_secs_f64() / medians[0].0.as_secs_f64(),
        medians[1].1.as_secs_f64() / medians[0].1.as_secs_f64()
    );
    println!(
        "   measured: each get(k) alone: binary search over the blocks, one frame read and decompressed, \
         its events decoded up to k (a block's first event: search, read and decompression only)"
    );
    println!();
}

/// Writes `n` regular events and prints the process's peak resident memory.
fn writer_memory_child(n: u64) {
    let dir = tempfile::tempdir().unwrap();
    let (_, stats) = write(&dir.path().join("memory.log"), n, regular);
    assert_eq!(stats.events, n);
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim();
    println!("{hwm} {}", stats.blocks);
}

fn writer_memory() {
    println!("== writer peak memory (a child process per run, VmHWM from /proc/self/status) ==");
    let exe = std::env::current_exe().unwrap();
    let (mut peaks, mut blocks_sealed) = (Vec::new(), Vec::new());
    for n in [0u64, 10_000_000, 100_000_000] {
        let out = Command::new(&exe)
            .args([CHILD, &n.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let (kb, blocks) = text.trim().split_once(' ').unwrap();
        let (kb, blocks): (u64, u64) = (kb.parse().unwrap(), blocks.parse().unwrap());
        println!(
            "{:>10} events: peak {:.1} MiB ({blocks} blocks sealed)",
            million(n as f64),
            kb as f64 / 1024.0
        );
        peaks.push(kb);
        blocks_sealed.push(blocks);
    }
    println!(
        "   100 M vs 10 M events: x{:.3} peak memory; writing adds {:.1} MiB to an idle process",
        peaks[2] as f64 / peaks[1] as f64,
        (peaks[2] as f64 - peaks[0] as f64) / 1024.0
    );
    println!(
        "   from 10 M to 100 M events the peak grows by {:.0} bytes per sealed block",
        (peaks[2] as f64 - peaks[1] as f64) * 1024.0 / (blocks_sealed[2] - blocks_sealed[1]) as f64
    );
    println!(
        "   measured: whole-process peak (binary, allocator, ring mapping, compressor) after writing and closing a log of regular receives"
    );
    println!(
        "   what grows with the run: the index entries of the sealed blocks, kept for the close \
         (each 128 KiB block of regular receives holds about 32 K events)"
    );
}
