//! Small helpers for human-readable output.

/// Bytes as `12.3 KiB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Prints a value as pretty JSON on stdout.
pub(crate) fn json<T: serde::Serialize>(value: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("our reports always serialize")
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_are_human_readable() {
        assert_eq!(super::bytes(12), "12 B");
        assert_eq!(super::bytes(2048), "2.0 KiB");
        assert_eq!(super::bytes(5 * 1024 * 1024 + 1024 * 512), "5.5 MiB");
    }
}
