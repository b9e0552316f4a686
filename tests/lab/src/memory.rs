//! The managers' memory, read from `/proc/<pid>/status`: `VmRSS` (resident now) and `VmHWM`
//! (the kernel's high-water mark of the resident set, i.e. the peak RSS since the process
//! started, however briefly it lasted).

use std::fmt::Write as _;

/// One manager's figures, in KiB.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    pub name: String,
    /// `VmRSS` at the first sample (the manager ready, no cluster applied yet).
    pub idle_kib: u64,
    /// `VmRSS` at the last sample.
    pub last_kib: u64,
    /// The highest of `VmHWM` and every `VmRSS` read.
    pub peak_kib: u64,
}

/// Peak memory of the managers over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    pub managers: Vec<Usage>,
    /// The highest sum of the managers' `VmRSS` read at the same sample.
    pub peak_sum_sampled_kib: u64,
    pub samples: u64,
}

/// `VmRSS` and `VmHWM` of a `/proc/<pid>/status` text, in KiB.
pub fn parse_status(status: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn read(pid: u32) -> Option<(u64, u64)> {
    parse_status(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

impl Memory {
    pub fn new(names: &[&str]) -> Memory {
        Memory {
            managers: names
                .iter()
                .map(|n| Usage {
                    name: (*n).into(),
                    ..Usage::default()
                })
                .collect(),
            ..Memory::default()
        }
    }

    /// Reads every manager's status; `pids` in the order of the names given to [`Memory::new`].
    /// A process that cannot be read (exited) keeps its last figures.
    pub fn sample(&mut self, pids: &[u32]) {
        let mut sum = 0;
        for (u, pid) in self.managers.iter_mut().zip(pids) {
            if let Some((rss, hwm)) = read(*pid) {
                if self.samples == 0 {
                    u.idle_kib = rss;
                }
                u.last_kib = rss;
                u.peak_kib = u.peak_kib.max(rss).max(hwm);
                sum += rss;
            }
        }
        self.peak_sum_sampled_kib = self.peak_sum_sampled_kib.max(sum);
        self.samples += 1;
    }

    pub fn peak_sum_kib(&self) -> u64 {
        self.managers.iter().map(|u| u.peak_kib).sum()
    }

    /// The lines printed at the end of a run.
    pub fn report(&self) -> String {
        let mut out = String::from(
            "Memory of our managers (peak = VmHWM from /proc/<pid>/status; idle = VmRSS when ready, before any cluster):\n",
        );
        for u in &self.managers {
            let _ = writeln!(
                out,
                "  {:<58} peak {:>6.1} MiB  (idle {:.1} MiB, at the end {:.1} MiB)",
                u.name,
                mib(u.peak_kib),
                mib(u.idle_kib),
                mib(u.last_kib)
            );
        }
        let _ = writeln!(
            out,
            "  {:<58} peak {:>6.1} MiB  (highest sum sampled at once: {:.1} MiB, {} samples)",
            "together",
            mib(self.peak_sum_kib()),
            mib(self.peak_sum_sampled_kib),
            self.samples
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rss_and_hwm() {
        let s = "Name:\tx\nVmPeak:\t  100 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n";
        assert_eq!(parse_status(s), Some((1024, 2048)));
        assert_eq!(parse_status("Name: x\n"), None);
    }

    #[test]
    fn samples_this_process() {
        let mut m = Memory::new(&["me"]);
        m.sample(&[std::process::id()]);
        m.sample(&[std::process::id()]);
        let u = &m.managers[0];
        assert!(u.idle_kib > 0 && u.peak_kib >= u.last_kib);
        assert_eq!(m.samples, 2);
        assert!(m.report().contains("together"));
    }
}
