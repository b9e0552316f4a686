//! CPU time and memory of a process from `/proc/<pid>/stat` and `/proc/<pid>/status`.

use std::time::Instant;

use anyhow::{Context, Result};

/// User plus system CPU time, in clock ticks, from the text of `/proc/<pid>/stat`.
pub fn cpu_ticks(stat: &str) -> Option<u64> {
    // Field 2 (comm) is in parentheses and may itself hold spaces and parentheses, so count
    // fields from the last ')': field 3 (state) comes first, utime (14) and stime (15) are
    // the 12th and 13th after it.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// A `kB` line of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, ...), in KiB.
pub fn status_kib(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let value = l.strip_prefix(key)?.strip_prefix(':')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// Average CPU use between two readings, in percent of one core.
pub fn cpu_percent(ticks_delta: u64, ticks_per_sec: u64, secs: f64) -> f64 {
    if secs <= 0.0 || ticks_per_sec == 0 {
        return 0.0;
    }
    ticks_delta as f64 / ticks_per_sec as f64 / secs * 100.0
}

/// One reading of one process.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at: Instant,
    pub ticks: u64,
    pub rss_kib: u64,
}

/// Reads `/proc/<pid>/stat` and `/proc/<pid>/status` now.
pub fn sample(pid: u32) -> Result<Sample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    Ok(Sample {
        at: Instant::now(),
        ticks: cpu_ticks(&stat).with_context(|| format!("parsing /proc/{pid}/stat"))?,
        rss_kib: status_kib(&status, "VmRSS").unwrap_or(0),
    })
}

/// Clock ticks per second (`USER_HZ`), the unit of `/proc/<pid>/stat` times.
pub fn ticks_per_sec() -> u64 {
    // SAFETY: sysconf reads a constant of the running kernel; no memory is touched.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|&h| h > 0).unwrap_or(100)
}

/// CPU and memory of one process over a window.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Usage {
    /// Percent of one core.
    pub cpu_percent: f64,
    /// RSS at the end of the window, MiB.
    pub rss_mib: f64,
}

pub fn usage(before: &Sample, after: &Sample, ticks_per_sec: u64) -> Usage {
    let secs = after.at.duration_since(before.at).as_secs_f64();
    Usage {
        cpu_percent: cpu_percent(
            after.ticks.saturating_sub(before.ticks),
            ticks_per_sec,
            secs,
        ),
        rss_mib: after.rss_kib as f64 / 1024.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_utime_plus_stime_even_with_odd_names() {
        let stat = "4242 (kube-apiserver) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 50 0 0 20 0 12 0 100 1000000 5000 18446744073709551615";
        assert_eq!(cpu_ticks(stat), Some(300));
        let odd = "7 (a b) (c)) R 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 1 0 5 0 0";
        assert_eq!(cpu_ticks(odd), Some(33));
        assert_eq!(cpu_ticks("7 (x) R 1 2"), None);
        assert_eq!(cpu_ticks(""), None);
    }

    #[test]
    fn status_lines_are_read_by_key() {
        let status = "Name:\tetcd\nVmHWM:\t  123456 kB\nVmRSS:\t   65536 kB\nThreads:\t12\n";
        assert_eq!(status_kib(status, "VmRSS"), Some(65536));
        assert_eq!(status_kib(status, "VmHWM"), Some(123_456));
        assert_eq!(status_kib(status, "VmSwap"), None);
        // A key that only prefixes another is not it.
        assert_eq!(status_kib("VmRSSx:\t1 kB\n", "VmRSS"), None);
    }

    #[test]
    fn cpu_percent_is_of_one_core() {
        assert_eq!(cpu_percent(100, 100, 1.0), 100.0);
        assert_eq!(cpu_percent(150, 100, 3.0), 50.0);
        assert_eq!(cpu_percent(5, 100, 0.0), 0.0);
    }

    #[test]
    fn our_own_process_can_be_read() {
        let s = sample(std::process::id()).unwrap();
        assert!(s.rss_kib > 0);
    }
}
