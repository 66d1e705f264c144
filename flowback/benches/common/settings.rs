//! Settings a benchmark takes from its environment.

/// The number in the environment variable `name`, or `default` when it is unset or not one.
pub(crate) fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
