//! The console view of many clusters at once: how many clusters wait at each step while they
//! run, and each milestone's percentiles over the clusters at the end, instead of a line per
//! cluster (each cluster's own lines go to `logs/lab.log` then).

use std::time::Duration;

use serde::Serialize;

/// Up to this many clusters the console has a line per cluster; above, the fleet view.
pub const LINE_PER_CLUSTER_UP_TO: u32 = 10;

/// How often the fleet's progress line is printed.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// True when `clusters` are too many for a line each.
pub fn fleet_view(clusters: u32) -> bool {
    clusters > LINE_PER_CLUSTER_UP_TO
}

/// Prints one cluster's line, or with the fleet view of `clusters` logs it to `logs/lab.log`.
pub fn say(clusters: u32, line: String) {
    if fleet_view(clusters) {
        tracing::info!("{line}");
    } else {
        println!("{line}");
    }
}

/// One line: how many clusters are done and where the others wait, the busiest step first.
/// `next` holds each cluster's next step (an index into `steps`; `steps.len()` when done).
pub fn progress(steps: &[&str], next: &[usize]) -> String {
    let mut waiting = vec![0usize; steps.len()];
    let mut done = 0;
    for &i in next {
        match waiting.get_mut(i) {
            Some(w) => *w += 1,
            None => done += 1,
        }
    }
    let mut at: Vec<(usize, &str)> = waiting
        .iter()
        .zip(steps)
        .filter(|(w, _)| **w > 0)
        .map(|(w, s)| (*w, *s))
        .collect();
    // The busiest first; among equals the earlier step (stable sort keeps step order).
    at.sort_by_key(|(w, _)| std::cmp::Reverse(*w));
    let mut line = format!("fleet: {done}/{} done", next.len());
    if !at.is_empty() {
        let waits: Vec<String> = at.iter().map(|(w, s)| format!("{w} at `{s}`")).collect();
        line.push_str(&format!("; waiting: {}", waits.join(", ")));
    }
    line
}

/// One milestone over the clusters that reached it, seconds since the lab started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Percentiles {
    pub name: String,
    pub reached: usize,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// Each step's percentiles over `reached` (per cluster, the time of each step it reached, in
/// step order); steps no cluster reached are left out.
pub fn percentiles(steps: &[&str], reached: &[&[Duration]]) -> Vec<Percentiles> {
    steps
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let mut at: Vec<Duration> = reached.iter().filter_map(|r| r.get(i).copied()).collect();
            at.sort();
            let max = *at.last()?;
            Some(Percentiles {
                name: name.to_string(),
                reached: at.len(),
                p50: secs(nearest_rank(&at, 50)),
                p90: secs(nearest_rank(&at, 90)),
                p99: secs(nearest_rank(&at, 99)),
                max: secs(max),
            })
        })
        .collect()
}

/// The `p`th percentile of sorted, non-empty `v` by the nearest-rank method.
fn nearest_rank(v: &[Duration], p: usize) -> Duration {
    let rank = (p * v.len()).div_ceil(100).max(1);
    v[rank - 1]
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// The percentiles as the console shows them, one milestone a line.
pub fn table(p: &[Percentiles], clusters: usize) -> String {
    let width = p.iter().map(|m| m.name.len()).max().unwrap_or(0);
    let mut out = format!(
        "Milestones over {clusters} clusters (seconds since start: p50 / p90 / p99 / max):\n"
    );
    for m in p {
        let short = if m.reached < clusters {
            format!("  (reached by {} only)", m.reached)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  {:<width$} {:>7.1} {:>7.1} {:>7.1} {:>7.1}{short}\n",
            m.name, m.p50, m.p90, m.p99, m.max
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: u64) -> Duration {
        Duration::from_secs(x)
    }

    #[test]
    fn progress_counts_the_done_and_the_busiest_step_first() {
        let steps = ["applied", "registered", "installed"];
        assert_eq!(
            progress(&steps, &[3, 1, 2, 2, 3, 0]),
            "fleet: 2/6 done; waiting: 2 at `installed`, 1 at `applied`, 1 at `registered`"
        );
        assert_eq!(progress(&steps, &[3, 3]), "fleet: 2/2 done");
    }

    #[test]
    fn percentiles_by_nearest_rank_over_the_clusters_that_reached_each_step() {
        let steps = ["applied", "installed", "day-2"];
        // 100 clusters: applied at 1..=100 s, installed by all but one at 101..=199 s.
        let runs: Vec<Vec<Duration>> = (1..=100)
            .map(|i| {
                if i == 100 {
                    vec![s(i)]
                } else {
                    vec![s(i), s(100 + i)]
                }
            })
            .collect();
        let refs: Vec<&[Duration]> = runs.iter().map(Vec::as_slice).collect();
        let p = percentiles(&steps, &refs);
        assert_eq!(p.len(), 2, "nobody reached day-2: left out");
        assert_eq!(
            (p[0].reached, p[0].p50, p[0].p90, p[0].p99, p[0].max),
            (100, 50.0, 90.0, 99.0, 100.0)
        );
        assert_eq!(
            (p[1].reached, p[1].p50, p[1].p99, p[1].max),
            (99, 150.0, 199.0, 199.0)
        );
        let t = table(&p, 100);
        assert!(t.contains("(reached by 99 only)"), "{t}");
        assert!(t.starts_with("Milestones over 100 clusters"), "{t}");
    }

    #[test]
    fn one_cluster_is_its_own_percentile() {
        let one = [s(7)];
        let p = percentiles(&["applied"], &[&one]);
        assert_eq!((p[0].p50, p[0].p99, p[0].max), (7.0, 7.0, 7.0));
    }

    #[test]
    fn ten_clusters_keep_a_line_each() {
        assert!(!fleet_view(10));
        assert!(fleet_view(11));
    }
}
