//! A CPU-bound loop with no annotation: `work` runs `rounds` rounds, each `round` a thousand
//! steps of `mix`. Under `ppd build`, `work` and `round` are e-blocks and `mix`, a small leaf,
//! is left to its caller (PPD §5.4): the log grows by one instance per `round` call, not by one
//! per step. `cpu_loop [ROUNDS]` (default 2000) on two threads.

use ppd::thread;

fn mix(x: u64) -> u64 {
    let y = x ^ (x >> 31);
    y.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn round(state: u64, steps: u64) -> u64 {
    let mut x = state;
    for step in 0..steps {
        x = mix(x.wrapping_add(step));
    }
    x
}

fn work(seed: u64, rounds: u64) -> u64 {
    let mut state = seed;
    for _ in 0..rounds {
        state = round(state, 1000);
    }
    state
}

#[ppd::main]
fn main() {
    let rounds: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let workers: Vec<_> = (1..=2)
        .map(|seed| {
            thread::Builder::new()
                .name(format!("worker-{seed}"))
                .spawn(move || work(seed, rounds))
                .unwrap()
        })
        .collect();
    let mut total = 0u64;
    for worker in workers {
        total ^= worker.join().unwrap();
    }
    println!("{total}");
}
