//! Latency statistics.

use std::time::Duration;

/// Nearest-rank percentile of ascending `sorted`; zero when empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Milliseconds with three decimals.
pub fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms_list(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn nearest_rank() {
        let v = ms_list(&(1..=100).collect::<Vec<_>>());
        assert_eq!(percentile(&v, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&v, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&v, 100.0), Duration::from_millis(100));
        assert_eq!(percentile(&v, 0.0), Duration::from_millis(1));
        let few = ms_list(&[3, 7]);
        assert_eq!(percentile(&few, 50.0), Duration::from_millis(3));
        assert_eq!(percentile(&few, 99.0), Duration::from_millis(7));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
    }

    #[test]
    fn milliseconds() {
        assert_eq!(ms(Duration::from_micros(1234)), 1.234);
        assert_eq!(ms(Duration::from_nanos(1_500_400)), 1.5);
    }
}
