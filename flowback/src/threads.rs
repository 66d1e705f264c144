//! Work split over threads, with a panic on any of them carried to the caller.

/// Below this many events, work over a trace stays on one thread: starting one costs more.
pub(crate) const WORTH_A_THREAD: u64 = 200_000;

/// Runs `here` on this thread and `beside` on another; both results.
pub(crate) fn both<A: Send, B: Send>(
    here: impl FnOnce() -> A,
    beside: impl FnOnce() -> B + Send,
) -> (A, B) {
    std::thread::scope(|s| {
        let beside = s.spawn(beside);
        let here = here();
        (here, join(beside))
    })
}

/// `work` on each of `items`, each on a thread of its own; the results in the items' order.
pub(crate) fn each<I: Send, T: Send>(items: Vec<I>, work: impl Fn(I) -> T + Sync) -> Vec<T> {
    let work = &work;
    std::thread::scope(|s| {
        let running: Vec<_> = items
            .into_iter()
            .map(|item| s.spawn(move || work(item)))
            .collect();
        running.into_iter().map(join).collect()
    })
}

fn join<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
