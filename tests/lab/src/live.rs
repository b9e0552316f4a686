//! The live view: when stdout is a terminal, the bottom of the output is one line per cluster
//! (its phase, its hosts by state, the install's percentage), redrawn in place after every pass;
//! the lab's other lines (object changes, site events, milestones) scroll above it. When stdout
//! is not a terminal (CI, a pipe, a file) nothing of this is printed and the lab prints its
//! plain progress lines instead.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};

use crate::observe::Snapshot;

/// Most clusters shown; the others are summed up in one line.
pub const MAX_LINES: usize = 20;

/// The block at the bottom of the terminal.
#[derive(Debug, Default)]
pub struct Live {
    on: bool,
    /// Lines drawn last, to be erased before anything else is printed.
    drawn: usize,
}

impl Live {
    /// On when stdout is a terminal (and `TERM` is not `dumb`); `LAB_PLAIN=1` turns it off.
    pub fn detect() -> Live {
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        let plain = std::env::var_os("LAB_PLAIN").is_some_and(|v| v != "0");
        Live::new(std::io::stdout().is_terminal() && !dumb && !plain)
    }

    pub fn new(on: bool) -> Live {
        Live { on, drawn: 0 }
    }

    pub fn on(&self) -> bool {
        self.on
    }

    /// Erases the block, so that the pass's own lines print where it was.
    pub fn clear(&mut self) {
        if self.on && self.drawn > 0 {
            print!("{}", erase(self.drawn));
            let _ = std::io::stdout().flush();
        }
        self.drawn = 0;
    }

    /// Draws the block below what was printed.
    pub fn draw(&mut self, lines: &[String]) {
        if !self.on {
            return;
        }
        let text = block(lines);
        print!("{text}");
        let _ = std::io::stdout().flush();
        self.drawn = lines.len();
    }
}

/// Moves the cursor up `n` lines to the start of the first one and clears to the end of the
/// screen.
pub fn erase(n: usize) -> String {
    format!("\r\x1b[{n}A\x1b[J")
}

/// The lines, with line wrapping off while they are written (a line longer than the terminal is
/// cut at its edge instead of taking two rows, so that [`erase`] erases exactly them).
pub fn block(lines: &[String]) -> String {
    let mut out = String::from("\x1b[?7l");
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str("\x1b[?7h");
    out
}

/// One cluster's line: name, phase (the milestone it waits for, or `done`), hosts by state,
/// Agents, install state and percentage, Machines, Nodes.
pub fn line(name: &str, phase: &str, s: &Snapshot) -> String {
    let by_state = |states: Vec<&str>| {
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        for st in states {
            *m.entry(if st.is_empty() { "new" } else { st }).or_default() += 1;
        }
        m.iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let hosts = by_state(s.bmhs.iter().map(Snapshot::bmh_state).collect());
    let agents = by_state(s.agents.iter().map(Snapshot::agent_state).collect());
    let install = match s.aci_state() {
        "" => "-".to_string(),
        st => format!("{:>3}% {st}", s.aci_percent()),
    };
    format!(
        "{name:<10} {phase:<24} install {install:<20} hosts [{hosts}]  Agents [{agents}]  Machines {}/{}  Nodes {}/{}",
        s.machines_running(),
        s.machines.len(),
        s.nodes_ready(),
        s.nodes.len(),
    )
}

/// The block for every cluster: at most [`MAX_LINES`] (the unfinished ones first), then one
/// line for the rest.
pub fn lines(clusters: &[(String, bool)]) -> Vec<String> {
    let mut order: Vec<&(String, bool)> = clusters.iter().filter(|(_, done)| !done).collect();
    order.extend(clusters.iter().filter(|(_, done)| *done));
    let mut out: Vec<String> = order
        .iter()
        .take(MAX_LINES)
        .map(|(l, _)| l.clone())
        .collect();
    if clusters.len() > MAX_LINES {
        let rest = &order[MAX_LINES..];
        out.push(format!(
            "... and {} more clusters ({} done)",
            rest.len(),
            rest.iter().filter(|(_, d)| *d).count()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_is_erased_by_as_many_lines_as_it_has() {
        let l = vec!["a".to_string(), "b".to_string()];
        assert_eq!(block(&l), "\x1b[?7la\nb\n\x1b[?7h");
        assert_eq!(erase(2), "\r\x1b[2A\x1b[J");
        // Off: nothing is drawn or erased.
        let mut live = Live::new(false);
        live.draw(&l);
        assert_eq!(live.drawn, 0);
    }

    #[test]
    fn a_cluster_line_has_its_phase_hosts_and_install() {
        let s = Snapshot::default();
        let l = line("bm", "hosts available", &s);
        assert!(l.starts_with("bm         hosts available"), "{l}");
        assert!(l.contains("install -"), "{l}");
        assert!(l.contains("Machines 0/0  Nodes 0/0"), "{l}");
    }

    #[test]
    fn many_clusters_are_cut_unfinished_first() {
        let clusters: Vec<(String, bool)> =
            (0..25).map(|i| (format!("c{i}"), i % 2 == 0)).collect();
        let out = lines(&clusters);
        assert_eq!(out.len(), MAX_LINES + 1);
        assert_eq!(out[0], "c1");
        assert_eq!(out[11], "c23");
        assert_eq!(out[12], "c0");
        assert_eq!(out[MAX_LINES], "... and 5 more clusters (5 done)");
        assert_eq!(lines(&clusters[..2]), ["c1", "c0"]);
    }
}
