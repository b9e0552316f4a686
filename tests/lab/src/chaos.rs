//! `--chaos`: while the clusters install, the lab SIGKILLs our two managers (and, once, the
//! management kube-apiserver) at random points and starts them again. The points are drawn from
//! a seeded generator, so a run can be repeated with `--chaos-seed`. What is killed when is
//! planned up front ([`plan`]) as "once the first cluster has reached milestone k, wait d, kill,
//! start again after a downtime"; the lab carries it out pass by pass ([`Chaos::due`]) and
//! records what happened ([`Kill`]). See docs/lab.md "Chaos".

use std::time::Duration;

/// `--chaos`: the seed of the random points, and whether the apiserver is restarted too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub seed: u64,
    /// Kill and restart the management kube-apiserver once (`--chaos all`, the default);
    /// `--chaos managers` kills only our managers.
    pub apiserver: bool,
}

/// What is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// One of our managers, by its index in [`crate::managers::Managers`] (control plane 0,
    /// bootstrap 1).
    Manager(usize),
    /// The management cluster's kube-apiserver (etcd keeps running).
    ApiServer,
}

/// A small deterministic generator (SplitMix64): the same seed draws the same plan.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi` (`lo` when the range is empty).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.next_u64() % (hi - lo)
        }
    }

    /// One of `items` (`None` when empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        let i = self.range(0, items.len() as u64) as usize;
        items.get(i).copied()
    }

    /// Uniform in `lo..hi`, in milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.range(lo, hi))
    }
}

/// One planned kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub target: Target,
    /// Fires once the first cluster has reached this many milestones (1: its manifests were
    /// applied, the `hosts available` milestone) ...
    pub after_milestones: usize,
    /// ... and this much longer,
    pub delay: Duration,
    /// but at the latest once it has reached this many (the delay cut short), so that a fast
    /// install does not leave the window: a mid-install kill stays mid-install.
    pub latest: Option<usize>,
    /// Started again this long after the kill.
    pub downtime: Duration,
}

/// The steps (milestone indexes) of the scenario the plan may use, by their meaning. The lab's
/// milestones are: 0 hosts available (then the manifests are applied), 1 InfraEnvs ready,
/// 2 hosts provisioned, 3 Agents approved, 4 install started, 5 installed, 6 Nodes registered,
/// 7 Machines Running, 8 day-2 worker installed, 9 scale-down done.
pub const INSTALLED: usize = 5;

/// Draws the plan for a run of `milestones` milestones.
///
/// - each manager once mid-install, after the manifests were applied and before the cluster is
///   installed: the bootstrap provider once the first cluster has reached milestone 1..=3
///   (`hosts available` .. `hosts provisioned`), then 0-2 s but at the latest at `Agents
///   approved` (4); the control-plane provider once it has reached 1..=2 (`hosts available`,
///   `InfraEnvs ready`), then 0-0.5 s but at the latest at `hosts provisioned` (3), so that it
///   is down before the hosts' installers run (the core holds the install back until it is
///   back);
/// - with a day-2 step, the bootstrap provider once more when the day-2 scale-up begins
///   (`Machines Running` reached), then 0-3 s, and the control-plane provider once after the
///   cluster is installed (`Nodes registered` reached), then 0-2 s;
/// - with `apiserver`, the management kube-apiserver once, after milestone 1..=2, then 0-1 s;
/// - the control-plane provider (with its embedded core) once more while the hosts' installers
///   run: once `install started` is reached, then 0-0.3 s, at the latest at `installed`. The
///   installers retry their progress reports and ignition downloads while the core is down
///   (agent-sim's `INSTALLER_RETRY_WINDOW`, as upstream's installer retries).
///
/// Downtimes are 0.5-4 s for the managers (0.5-3 s during the installers), 1-3 s for the
/// apiserver (plus its start-up). The last kill is drawn last, so a seed draws the same earlier
/// kills as before it was added (seed 779218 still restarts the apiserver where it stalled).
pub fn plan(seed: u64, milestones: usize, apiserver: bool) -> Vec<Planned> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let day2 = milestones > INSTALLED + 3;
    // Control plane (0), mid-install.
    out.push(Planned {
        target: Target::Manager(0),
        after_milestones: rng.pick(&[1, 2]).unwrap_or(1),
        delay: rng.millis(0, 500),
        latest: Some(3),
        downtime: rng.millis(500, 4000),
    });
    // Bootstrap (1), mid-install.
    out.push(Planned {
        target: Target::Manager(1),
        after_milestones: rng.pick(&[1, 2, 3]).unwrap_or(1),
        delay: rng.millis(0, 2000),
        latest: Some(4),
        downtime: rng.millis(500, 4000),
    });
    if day2 {
        out.push(Planned {
            target: Target::Manager(1),
            after_milestones: INSTALLED + 3,
            delay: rng.millis(0, 3000),
            latest: None,
            downtime: rng.millis(500, 4000),
        });
        out.push(Planned {
            target: Target::Manager(0),
            after_milestones: INSTALLED + 2,
            delay: rng.millis(0, 2000),
            latest: None,
            downtime: rng.millis(500, 4000),
        });
    }
    if apiserver {
        out.push(Planned {
            target: Target::ApiServer,
            after_milestones: rng.pick(&[1, 2]).unwrap_or(1),
            delay: rng.millis(0, 1000),
            latest: Some(3),
            downtime: rng.millis(1000, 3000),
        });
    }
    out.push(Planned {
        target: Target::Manager(0),
        after_milestones: INSTALLED,
        delay: rng.millis(0, 300),
        latest: Some(INSTALLED + 1),
        downtime: rng.millis(500, 3000),
    });
    out
}

/// A kill that happened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Kill {
    /// What was killed: `controlplane-provider`, `bootstrap-provider` or `kube-apiserver`.
    pub target: String,
    #[serde(skip)]
    pub what: Target,
    #[serde(serialize_with = "seconds")]
    pub killed_at: Duration,
    /// When it was started again.
    #[serde(serialize_with = "seconds_opt")]
    pub started_at: Option<Duration>,
    /// When it answered `/readyz` again.
    #[serde(serialize_with = "seconds_opt")]
    pub ready_at: Option<Duration>,
    /// The first cluster's next milestone when it was killed (what it was doing).
    pub during: String,
    /// Its AgentClusterInstall was not installed yet (the kill was mid-install).
    pub mid_install: bool,
    /// From the target being back (ready) to the first cluster's next milestone: the longest
    /// the kill can have stalled the install (it includes the step's own work).
    #[serde(serialize_with = "seconds_opt")]
    pub next_milestone_after: Option<Duration>,
}

/// The first milestone at or after `back` (times since the lab started), as a wait after it.
pub fn wait_for_next(back: Duration, milestone_times: &[Duration]) -> Option<Duration> {
    milestone_times
        .iter()
        .filter(|at| **at >= back)
        .min()
        .map(|at| at.saturating_sub(back))
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 10.0).round() / 10.0)
}

fn seconds_opt<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => seconds(d, s),
        None => s.serialize_none(),
    }
}

/// The plan being carried out.
#[derive(Debug, Clone)]
pub struct Chaos {
    pub seed: u64,
    pending: Vec<Planned>,
    /// Since the lab started: when a planned kill's milestone was reached.
    armed: Vec<Option<Duration>>,
    /// Killed, waiting to be started again: (index into `kills`, when).
    pub down: Vec<(usize, Target, Duration)>,
    pub kills: Vec<Kill>,
}

impl Chaos {
    pub fn new(seed: u64, plan: Vec<Planned>) -> Chaos {
        Chaos {
            seed,
            armed: vec![None; plan.len()],
            pending: plan,
            down: Vec::new(),
            kills: Vec::new(),
        }
    }

    /// The planned kills not carried out yet.
    pub fn pending(&self) -> &[Planned] {
        &self.pending
    }

    /// The kills due now (removed from the plan): the first cluster has reached `reached`
    /// milestones, `now` since the lab started. A target that is down is not killed again
    /// until it is back.
    pub fn due(&mut self, reached: usize, now: Duration) -> Vec<Planned> {
        let mut due = Vec::new();
        let mut i = 0;
        while i < self.pending.len() {
            let p = &self.pending[i];
            if reached >= p.after_milestones && self.armed[i].is_none() {
                self.armed[i] = Some(now);
            }
            let busy = self.down.iter().any(|(_, t, _)| *t == p.target)
                || due.iter().any(|d: &Planned| d.target == p.target);
            let cut_short = p.latest.is_some_and(|l| reached >= l);
            if !busy && self.armed[i].is_some_and(|at| now >= at + p.delay || cut_short) {
                due.push(self.pending.remove(i));
                self.armed.remove(i);
            } else {
                i += 1;
            }
        }
        due
    }

    /// Records a kill carried out; it is started again `downtime` later.
    pub fn killed(&mut self, p: &Planned, name: &str, now: Duration, during: &str, mid: bool) {
        self.kills.push(Kill {
            target: name.into(),
            what: p.target,
            killed_at: now,
            started_at: None,
            ready_at: None,
            during: during.into(),
            mid_install: mid,
            next_milestone_after: None,
        });
        self.down
            .push((self.kills.len() - 1, p.target, now + p.downtime));
    }

    /// The targets to start again now (removed from `down`, with their kill's index).
    pub fn to_start(&mut self, now: Duration) -> Vec<(usize, Target)> {
        let (due, wait): (Vec<_>, Vec<_>) = self.down.iter().partition(|(_, _, at)| now >= *at);
        self.down = wait;
        due.into_iter().map(|(k, t, _)| (k, t)).collect()
    }

    /// Kill `k`'s target was started again by the caller itself.
    pub fn back(&mut self, k: usize) {
        self.down.retain(|(i, _, _)| *i != k);
    }

    /// Whether every planned kill was carried out and every target is back.
    pub fn finished(&self) -> bool {
        self.pending.is_empty() && self.down.is_empty()
    }

    /// Fills each kill's [`Kill::next_milestone_after`] from the first cluster's milestones.
    pub fn measure_waits(&mut self, milestone_times: &[Duration]) {
        for k in &mut self.kills {
            k.next_milestone_after = k.ready_at.and_then(|r| wait_for_next(r, milestone_times));
        }
    }

    /// What the timeline prints for the kills.
    pub fn lines(&self) -> Vec<String> {
        self.kills
            .iter()
            .map(|k| {
                let back = match (k.started_at, k.ready_at) {
                    (Some(s), Some(r)) => format!(
                        "started again at {:.1}s, ready at {:.1}s ({:.1}s down)",
                        s.as_secs_f64(),
                        r.as_secs_f64(),
                        r.saturating_sub(k.killed_at).as_secs_f64()
                    ),
                    (Some(s), None) => {
                        format!("started again at {:.1}s, not ready", s.as_secs_f64())
                    }
                    _ => "not started again".into(),
                };
                let next = match k.next_milestone_after {
                    Some(d) => format!("; next milestone {:.1}s after", d.as_secs_f64()),
                    None => String::new(),
                };
                format!(
                    "[{:>6.1}s] chaos: {} killed (SIGKILL){} while waiting for `{}`; {back}{next}",
                    k.killed_at.as_secs_f64(),
                    k.target,
                    if k.mid_install { " mid-install" } else { "" },
                    k.during,
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_plan() {
        assert_eq!(plan(7, 10, true), plan(7, 10, true));
        let plans: std::collections::BTreeSet<String> = (0..20)
            .map(|s| format!("{:?}", plan(s, 10, true)))
            .collect();
        assert!(plans.len() > 10, "seeds draw different plans");
    }

    #[test]
    fn each_manager_is_killed_mid_install() {
        for seed in 0..200 {
            for (milestones, apiserver) in [(8, false), (10, true)] {
                let p = plan(seed, milestones, apiserver);
                for m in [0, 1] {
                    assert!(
                        p.iter().any(|k| k.target == Target::Manager(m)
                            && (1..INSTALLED).contains(&k.after_milestones)),
                        "seed {seed}: manager {m} has a kill before `installed`: {p:?}"
                    );
                }
                // Never before the manifests are applied.
                assert!(p.iter().all(|k| k.after_milestones >= 1));
                // The control plane (the core) once while the installers run: after `install
                // started`, at the latest at `installed`.
                assert!(p.iter().any(|k| k.target == Target::Manager(0)
                    && k.after_milestones == INSTALLED
                    && k.latest == Some(INSTALLED + 1)));
                assert_eq!(
                    p.iter().filter(|k| k.target == Target::ApiServer).count(),
                    usize::from(apiserver)
                );
                assert!(p.iter().all(|k| k.after_milestones < milestones));
                // The mid-install ones fire at the latest when the install is done.
                assert!(p.iter().all(|k| {
                    k.after_milestones > INSTALLED
                        || k.latest
                            .is_some_and(|l| l <= INSTALLED + 1 && l > k.after_milestones)
                }));
            }
        }
    }

    #[test]
    fn seed_779218_still_restarts_the_apiserver_as_when_it_stalled() {
        // The draws before the installers' kill are those of the plan that stalled (docs/lab.md).
        let apiserver = plan(779218, 8, true)
            .into_iter()
            .find(|k| k.target == Target::ApiServer)
            .unwrap();
        assert_eq!(
            (apiserver.after_milestones, apiserver.latest),
            (1, Some(3)),
            "{apiserver:?}"
        );
    }

    #[test]
    fn the_wait_after_a_kill_runs_to_the_next_milestone() {
        let s = Duration::from_secs;
        let times = [s(5), s(9), s(20)];
        assert_eq!(wait_for_next(s(7), &times), Some(s(2)));
        assert_eq!(wait_for_next(s(9), &times), Some(s(0)));
        assert_eq!(wait_for_next(s(21), &times), None);
        let mut c = Chaos::new(1, Vec::new());
        c.kills.push(Kill {
            target: "kube-apiserver".into(),
            what: Target::ApiServer,
            killed_at: s(3),
            started_at: Some(s(5)),
            ready_at: Some(s(6)),
            during: "x".into(),
            mid_install: true,
            next_milestone_after: None,
        });
        c.measure_waits(&times);
        assert_eq!(c.kills[0].next_milestone_after, Some(s(3)));
        assert!(
            c.lines()[0].ends_with("; next milestone 3.0s after"),
            "{}",
            c.lines()[0]
        );
    }

    #[test]
    fn kills_fire_after_their_milestone_and_delay_one_target_at_a_time() {
        let s = Duration::from_secs;
        let p = |t, after, delay| Planned {
            target: t,
            after_milestones: after,
            delay: s(delay),
            latest: None,
            downtime: s(2),
        };
        let mut c = Chaos::new(
            1,
            vec![
                p(Target::Manager(0), 1, 1),
                p(Target::Manager(0), 2, 0),
                p(Target::Manager(1), 2, 0),
            ],
        );
        assert!(c.due(0, s(10)).is_empty());
        // Armed at 11 s, fires 1 s later.
        assert!(c.due(1, s(11)).is_empty());
        let d = c.due(2, s(12));
        assert_eq!(
            d.iter().map(|k| k.target).collect::<Vec<_>>(),
            [Target::Manager(0), Target::Manager(1)]
        );
        for k in &d {
            c.killed(k, "m", s(12), "x", true);
        }
        // The second kill of manager 0 waits until it is back.
        assert!(c.due(3, s(13)).is_empty());
        assert!(c.to_start(s(13)).is_empty());
        assert_eq!(c.to_start(s(14)).len(), 2);
        assert_eq!(c.due(3, s(14)).len(), 1);
        c.killed(&p(Target::Manager(0), 2, 0), "m", s(14), "y", false);
        assert!(!c.finished());
        assert_eq!(c.to_start(s(16)), [(2, Target::Manager(0))]);
        assert!(c.finished());
        assert_eq!(c.kills.len(), 3);
        assert!(c.lines()[0].contains("killed (SIGKILL) mid-install while waiting for `x`"));
    }

    #[test]
    fn a_kill_fires_at_the_latest_milestone_even_before_its_delay() {
        let s = Duration::from_secs;
        let mut c = Chaos::new(
            1,
            vec![Planned {
                target: Target::Manager(1),
                after_milestones: 2,
                delay: s(10),
                latest: Some(4),
                downtime: s(1),
            }],
        );
        assert!(c.due(2, s(1)).is_empty());
        assert!(c.due(3, s(2)).is_empty());
        assert_eq!(c.due(4, s(3)).len(), 1);
    }

    #[test]
    fn kills_serialize_in_seconds() {
        let k = Kill {
            target: "bootstrap-provider".into(),
            what: Target::Manager(1),
            killed_at: Duration::from_millis(12_340),
            started_at: Some(Duration::from_millis(14_000)),
            ready_at: None,
            during: "Agents approved".into(),
            mid_install: true,
            next_milestone_after: Some(Duration::from_millis(2_460)),
        };
        let v = serde_json::to_value(&k).expect("JSON");
        assert_eq!(v["killed_at"], 12.3);
        assert_eq!(v["started_at"], 14.0);
        assert_eq!(v["ready_at"], serde_json::Value::Null);
        assert_eq!(v["mid_install"], true);
        assert_eq!(v["next_milestone_after"], 2.5);
    }
}
