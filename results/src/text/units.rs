//! Figures with units for the terminal: bytes, sizes, durations, shares.

/// Bytes as a human figure with decimal units (MB = 10^6 bytes, as in the scores).
pub fn bytes(n: u64) -> String {
    let f = n as f64;
    if n < 1000 {
        format!("{n} B")
    } else if f < 1e6 {
        format!("{:.1} kB", f / 1e3)
    } else if f < 1e9 {
        format!("{:.1} MB", f / 1e6)
    } else if f < 1e12 {
        format!("{:.2} GB", f / 1e9)
    } else {
        format!("{:.2} TB", f / 1e12)
    }
}

/// Binary size for request sizes and histogram bounds (4 KiB, 1 MiB).
pub fn size_bound(n: u64) -> String {
    if n >= 1 << 30 && n.is_multiple_of(1 << 30) {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// A duration in nanoseconds, with a unit that fits.
pub fn duration_ns(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.1} ms", f / 1e6)
    } else {
        format!("{:.3} s", f / 1e9)
    }
}

/// A share as a percentage.
pub fn percent(part: f64, whole: f64) -> String {
    if whole <= 0.0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * part / whole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_naturally() {
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500_000), "1.5 MB");
        assert_eq!(size_bound(4096), "4 KiB");
        assert_eq!(size_bound(1 << 20), "1 MiB");
        assert_eq!(duration_ns(1_500), "1.5 µs");
        assert_eq!(duration_ns(2_000_000_000), "2.000 s");
        assert_eq!(percent(1.0, 4.0), "25.0%");
    }
}
