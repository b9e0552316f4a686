//! Replay tests: clusters driven end to end through the model with a simulated clock and agents.

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;

use super::fixtures::*;
use crate::domain::inventory::Inventory;
use crate::domain::*;

/// A simulated service loop: agents check in and answer steps, the monitor refreshes.
pub struct Sim {
    pub c: ClusterSnapshot,
    pub now: Timestamp,
    pub cfg: Config,
    pub hw: HashMap<String, Inventory>,
    pub offline: HashSet<String>,
    pub seed: u64,
    /// Install steps handed out, by host.
    pub install_steps: HashMap<String, InstallCmdRequest>,
}

impl Sim {
    pub fn new(c: ClusterSnapshot) -> Sim {
        Sim {
            now: c.status_updated_at,
            c,
            cfg: Config::default(),
            hw: HashMap::new(),
            offline: HashSet::new(),
            seed: 0,
            install_steps: HashMap::new(),
        }
    }

    /// A host boots the discovery image and registers (approved, as BMAC would do).
    pub fn register(&mut self, id: &str, ip_last: u8, cpu: u32, mem_gib: u64) {
        let mut h = HostSnapshot::new_registered(id, "infra-1", Some(&self.c), self.now);
        h.approved = true;
        self.c.hosts.push(h);
        self.hw
            .insert(id.into(), inventory(id, ip_last, cpu, mem_gib));
    }

    fn agent_round(&mut self) {
        for i in 0..self.c.hosts.len() {
            let h = &self.c.hosts[i];
            if self.offline.contains(&h.id) || h.rebooted() {
                continue;
            }
            self.seed += 1;
            self.c.hosts[i].checked_in_at = Some(self.now);
            self.c.hosts[i].host_timestamp = Some(self.now);
            let steps = next_steps(&NextStepsInput {
                host: &self.c.hosts[i],
                cluster: Some(&self.c),
                cfg: &self.cfg,
                seed: self.seed,
                boot_artifacts: None,
                connectivity_check: true,
            });
            for s in &steps.instructions {
                assert!(s.step_id.starts_with(s.step_type.as_str()));
                if s.step_type == StepType::Install {
                    let req: InstallCmdRequest = serde_json::from_str(&s.args[0]).unwrap();
                    self.install_steps.insert(self.c.hosts[i].id.clone(), req);
                }
            }
            let hw = &self.hw[&self.c.hosts[i].id];
            let replies: Vec<StepReply> = steps
                .instructions
                .iter()
                .filter_map(|s| agent_reply(&self.c, hw, s))
                .collect();
            for r in replies {
                let out = apply_step_reply(&mut self.c.hosts[i], &r, &self.cfg);
                assert!(out.error.is_none(), "{:?}", out.error);
            }
        }
    }

    pub fn monitor(&mut self) {
        let r = refresh_all(&self.c, self.now, &self.cfg);
        apply_refresh(&mut self.c, &r, self.now);
    }

    /// 10 simulated seconds: agents act, then the monitor runs.
    pub fn tick(&mut self) {
        self.now = self
            .now
            .checked_add(jiff::SignedDuration::from_secs(10))
            .unwrap();
        self.agent_round();
        self.monitor();
    }

    pub fn tick_until(&mut self, what: &str, max: usize, pred: impl Fn(&Sim) -> bool) {
        for _ in 0..max {
            if pred(self) {
                return;
            }
            self.tick();
        }
        assert!(
            pred(self),
            "timed out waiting for {what}: cluster {} ({}), hosts {:?}",
            self.c.status,
            self.c.status_info,
            self.c
                .hosts
                .iter()
                .map(|h| (h.id.as_str(), h.status, h.status_info.as_str()))
                .collect::<Vec<_>>()
        );
    }

    pub fn host(&self, id: &str) -> &HostSnapshot {
        self.c.host(id).unwrap()
    }

    pub fn progress(&mut self, id: &str, stage: HostStage) -> Result<(), HostEventError> {
        let out =
            update_host_progress(self.host(id), Some(&self.c), stage, "", self.now, &self.cfg)?;
        let now = self.now;
        apply_host_outcome(self.c.host_mut(id).unwrap(), &out, now);
        Ok(())
    }

    pub fn host_event(&mut self, id: &str, ev: HostEvent) -> HostOutcome {
        let out = apply_host_event(self.host(id), Some(&self.c), &ev, self.now, &self.cfg).unwrap();
        let now = self.now;
        apply_host_outcome(self.c.host_mut(id).unwrap(), &out, now);
        out
    }

    /// Kube-API auto-start followed by InstallClusterInternal.
    pub fn auto_start(&mut self) -> AutoStartDecision {
        let d = auto_start_day1(&self.c, &AutoStartParams::default(), &self.cfg);
        if d.start {
            let plan = start_install(&self.c, self.now, &self.cfg).unwrap();
            apply_install_plan(&mut self.c, &plan, self.now);
        }
        d
    }

    /// Install backend finished install-config + ignitions.
    pub fn preparation_done(&mut self) {
        self.c.preparation = PreparationStatus::Success;
    }

    /// Walks a host through its remaining stages, up to and including `last`.
    pub fn walk(&mut self, id: &str, last: HostStage) {
        let sno = self.c.is_sno();
        let role = self.host(id).install_role();
        for st in stages_for(role, sno) {
            let cur = self.host(id).progress.current_stage;
            if cur.is_some_and(|c| {
                stages_for(role, sno).iter().position(|x| *x == c)
                    >= stages_for(role, sno).iter().position(|x| x == st)
            }) {
                continue;
            }
            self.progress(id, *st).unwrap();
            if *st == last {
                return;
            }
        }
    }

    /// The controller uploads the ingress CA and reports the console available.
    pub fn finish_finalizing(&mut self) {
        self.c.kubeconfig_uploaded = true;
        for o in self.c.monitored_operators.iter_mut() {
            o.status = Some(OperatorStatus::Available);
        }
    }
}

fn ids(sim: &Sim) -> Vec<String> {
    sim.c.hosts.iter().map(|h| h.id.clone()).collect()
}

/// Registers 3+2 hosts and waits for a ready cluster.
fn ready_3_2() -> Sim {
    let mut sim = Sim::new(cluster_3_2(t0()));
    for i in 1..=5u8 {
        sim.register(
            &format!("h{i}"),
            10 + i,
            if i <= 3 { 8 } else { 4 },
            if i <= 3 { 32 } else { 16 },
        );
    }
    sim.tick_until("ready", 20, |s| s.c.status == ClusterStatus::Ready);
    for h in &sim.c.hosts {
        assert_eq!(h.status, HostStatus::Known, "{}", h.status_info);
    }
    sim
}

/// Drives a ready cluster to `installing` and all hosts to `installing`.
fn start(sim: &mut Sim) {
    let d = sim.auto_start();
    assert!(d.start, "{:?}", d);
    assert_eq!(sim.c.status, ClusterStatus::PreparingForInstallation);
    sim.tick_until("hosts prepared", 10, |s| {
        s.c.hosts
            .iter()
            .all(|h| h.status == HostStatus::PreparingSuccessful)
    });
    sim.preparation_done();
    sim.tick_until("cluster installing", 5, |s| {
        s.c.status == ClusterStatus::Installing
    });
    sim.tick_until("hosts installing", 5, |s| {
        s.c.hosts.iter().all(|h| h.status == HostStatus::Installing)
    });
    sim.tick();
    assert_eq!(
        sim.install_steps.len(),
        sim.c.hosts.len(),
        "every host got an install step"
    );
}

/// [`ready_3_2`] driven to `installing` by [`start`].
fn installing_3_2() -> Sim {
    let mut sim = ready_3_2();
    start(&mut sim);
    sim
}

#[test]
fn replay_3_plus_2_to_installed() {
    let mut sim = ready_3_2();
    // Auto-assign: the three strong hosts become masters, h3 (last master id) bootstrap.
    start(&mut sim);
    let roles: Vec<(String, HostRole, bool)> = sim
        .c
        .hosts
        .iter()
        .map(|h| (h.id.clone(), h.effective_role(), h.bootstrap))
        .collect();
    assert_eq!(roles[0].1, HostRole::Master);
    assert_eq!(roles[3].1, HostRole::Worker);
    assert!(roles[2].2 && !roles[0].2);
    assert_eq!(sim.install_steps["h3"].role, HostRole::Bootstrap);
    assert_eq!(sim.install_steps["h4"].role, HostRole::Worker);
    assert_eq!(
        sim.install_steps["h1"].boot_device,
        "/dev/disk/by-id/wwn-0x01"
    );
    for id in ids(&sim) {
        sim.walk(&id, HostStage::Rebooting);
        sim.tick();
    }
    assert_eq!(sim.c.status, ClusterStatus::Installing);
    // Rebooted hosts no longer check in; that must not disconnect them.
    for _ in 0..30 {
        sim.tick();
    }
    assert!(
        sim.c
            .hosts
            .iter()
            .all(|h| h.status == HostStatus::InstallingInProgress)
    );
    for id in ids(&sim) {
        sim.walk(&id, HostStage::Done);
        sim.tick();
    }
    sim.tick_until("finalizing", 3, |s| s.c.status == ClusterStatus::Finalizing);
    assert!(sim.c.hosts.iter().all(|h| h.status == HostStatus::Installed && h.progress.installation_percentage == 100));
    sim.tick();
    assert_eq!(
        sim.c.status,
        ClusterStatus::Finalizing,
        "waits for kubeconfig and console"
    );
    sim.finish_finalizing();
    sim.tick();
    assert_eq!(
        (sim.c.status, sim.c.status_info.as_str()),
        (ClusterStatus::Installed, "Cluster is installed")
    );
    assert_eq!(cluster_progress(&sim.c), 100);
}

#[test]
fn replay_sno_to_installed() {
    let mut c = sno_with_host(t0());
    c.hosts.clear();
    let mut sim = Sim::new(c);
    sim.register("sno1", 20, 4, 16);
    sim.tick_until("ready", 10, |s| s.c.status == ClusterStatus::Ready);
    start(&mut sim);
    let h = sim.host("sno1");
    assert!(h.bootstrap);
    assert_eq!(sim.install_steps["sno1"].role, HostRole::Bootstrap);
    assert_eq!(sim.install_steps["sno1"].control_plane_count, 1);
    sim.walk("sno1", HostStage::Rebooting);
    // SNO reboot timeout is 80 minutes: 60 minutes of silence are fine.
    for _ in 0..360 {
        sim.tick();
    }
    assert_eq!(sim.host("sno1").status, HostStatus::InstallingInProgress);
    sim.walk("sno1", HostStage::Done);
    sim.tick();
    assert_eq!(sim.c.status, ClusterStatus::Finalizing);
    sim.finish_finalizing();
    sim.tick();
    assert_eq!(sim.c.status, ClusterStatus::Installed);
}

#[test]
fn replay_sno_4_21_needs_8_cores() {
    let mut c = sno_with_host(t0());
    c.hosts.clear();
    c.openshift_version = "4.21.3".into();
    let mut sim = Sim::new(c);
    sim.register("sno1", 20, 4, 16);
    for _ in 0..5 {
        sim.tick();
    }
    assert_eq!(sim.host("sno1").status, HostStatus::Insufficient);
    assert!(
        sim.host("sno1")
            .status_info
            .starts_with("Host does not meet the minimum hardware requirements: ")
    );
    assert_ne!(sim.c.status, ClusterStatus::Ready);
}

fn installed_3_2() -> Sim {
    let mut sim = installing_3_2();
    for id in ids(&sim) {
        sim.walk(&id, HostStage::Done);
    }
    sim.tick_until("finalizing", 3, |s| s.c.status == ClusterStatus::Finalizing);
    sim.finish_finalizing();
    sim.tick_until("installed", 3, |s| s.c.status == ClusterStatus::Installed);
    sim
}

#[test]
fn replay_day2_worker_added() {
    let mut sim = installed_3_2();
    let out = transform_to_day2(&sim.c).unwrap();
    apply_cluster_outcome(&mut sim.c, &out, sim.now);
    assert_eq!(sim.c.status, ClusterStatus::AddingHosts);
    sim.register("w3", 40, 4, 16);
    assert!(sim.host("w3").is_day2());
    sim.tick_until("day-2 host known", 10, |s| {
        s.host("w3").status == HostStatus::Known
    });
    assert_eq!(sim.host("w3").api_vip_connectivity, Some(true));
    assert_eq!(day2_hosts_to_install(&sim.c), vec!["w3"]);
    sim.host_event("w3", HostEvent::Install);
    sim.tick();
    let req = &sim.install_steps["w3"];
    assert_eq!(req.role, HostRole::Worker);
    sim.walk("w3", HostStage::Rebooting);
    assert_eq!(sim.host("w3").status, HostStatus::InstallingInProgress);
    sim.tick();
    sim.walk("w3", HostStage::Joined);
    sim.progress("w3", HostStage::Done).unwrap();
    assert_eq!(sim.host("w3").status, HostStatus::AddedToExistingCluster);
    for _ in 0..5 {
        sim.tick();
    }
    assert_eq!(sim.host("w3").status, HostStatus::AddedToExistingCluster);
    assert_eq!(sim.c.status, ClusterStatus::AddingHosts);
}

#[test]
fn replay_disconnect_and_return() {
    let mut sim = ready_3_2();
    sim.offline.insert("h2".into());
    for _ in 0..18 {
        sim.tick(); // 3 minutes: still within the grace period
    }
    assert_eq!(sim.host("h2").status, HostStatus::Known);
    sim.tick_until("disconnected", 12, |s| {
        s.host("h2").status == HostStatus::Disconnected
    });
    assert_eq!(
        sim.host("h2").status_info,
        "Host has stopped communicating with the installation service"
    );
    sim.tick();
    assert_ne!(sim.c.status, ClusterStatus::Ready);
    assert!(!sim.auto_start().start);
    sim.offline.clear();
    sim.tick_until("back to known", 5, |s| {
        s.host("h2").status == HostStatus::Known
    });
    sim.tick_until("ready again", 5, |s| s.c.status == ClusterStatus::Ready);
}

#[test]
fn replay_wrong_boot_order() {
    let mut sim = installing_3_2();
    sim.walk("h4", HostStage::Rebooting);
    // The host boots the discovery ISO again and re-registers.
    let out = sim.host_event("h4", HostEvent::Register);
    assert_eq!(out.status, HostStatus::InstallingPendingUserAction);
    assert!(
        out.status_info
            .starts_with("Expected the host to boot from disk")
    );
    sim.tick();
    assert_eq!(sim.c.status, ClusterStatus::InstallingPendingUserAction);
    assert_eq!(sim.c.status_info, "Cluster has hosts pending user action");
    // The user fixes the boot order; the host reports progress again.
    sim.progress("h4", HostStage::WaitingForIgnition).unwrap();
    assert_eq!(sim.host("h4").status, HostStatus::InstallingInProgress);
    sim.tick();
    assert_eq!(sim.c.status, ClusterStatus::Installing);
}

#[test]
fn replay_reboot_timeout_pending_user_action() {
    let mut sim = installing_3_2();
    for id in ["h1", "h2", "h3", "h4"] {
        sim.walk(id, HostStage::Installing);
    }
    sim.walk("h5", HostStage::Rebooting);
    sim.tick_until("reboot timeout", 300, |s| {
        s.host("h5").status == HostStatus::InstallingPendingUserAction
    });
    assert!(
        sim.host("h5")
            .status_info
            .starts_with("Host timed out when pulling the configuration files.")
    );
}

#[test]
fn replay_host_failure_fails_cluster() {
    let mut sim = installing_3_2();
    sim.walk("h1", HostStage::WritingImageToDisk);
    sim.progress("h1", HostStage::Failed).unwrap();
    assert_eq!(sim.host("h1").status, HostStatus::Error);
    sim.tick();
    assert_eq!(
        (sim.c.status, sim.c.status_info.as_str()),
        (ClusterStatus::Error, "cluster has hosts in error")
    );
    sim.tick();
    let h2 = sim.host("h2");
    assert_eq!(
        (h2.status, h2.status_info.as_str()),
        (
            HostStatus::Error,
            "Host is part of a cluster that failed to install"
        )
    );
    // Error hosts are told to gather logs and stop.
    let steps = next_steps(&NextStepsInput {
        host: h2,
        cluster: Some(&sim.c),
        cfg: &sim.cfg,
        seed: 1,
        boot_artifacts: None,
        connectivity_check: true,
    });
    let types: Vec<StepType> = steps.instructions.iter().map(|s| s.step_type).collect();
    assert_eq!(
        types,
        vec![StepType::LogsGather, StepType::StopInstallation]
    );
    assert_eq!(steps.next_instruction_seconds, 120);
    // Reset brings the cluster back.
    let out = apply_cluster_event(&sim.c, ClusterEvent::ResetCluster, sim.now, &sim.cfg).unwrap();
    assert_eq!(out.status, ClusterStatus::Insufficient);
}

#[test]
fn replay_worker_failure_with_two_workers_fails_cluster() {
    // Losing one of exactly two workers leaves fewer than 2 workers: the cluster fails.
    let mut sim = installing_3_2();
    sim.progress("h4", HostStage::Failed).unwrap();
    sim.tick();
    assert_eq!(sim.c.status, ClusterStatus::Error);
}

#[test]
fn replay_cancel_and_reset() {
    let mut sim = installing_3_2();
    let out =
        apply_cluster_event(&sim.c, ClusterEvent::CancelInstallation, sim.now, &sim.cfg).unwrap();
    apply_cluster_outcome(&mut sim.c, &out, sim.now);
    for id in ids(&sim) {
        sim.host_event(&id, HostEvent::CancelInstallation);
    }
    assert_eq!(sim.c.status, ClusterStatus::Cancelled);
    assert!(
        sim.c
            .hosts
            .iter()
            .all(|h| h.status == HostStatus::Cancelled)
    );
    let out = apply_cluster_event(&sim.c, ClusterEvent::ResetCluster, sim.now, &sim.cfg).unwrap();
    apply_cluster_outcome(&mut sim.c, &out, sim.now);
    for id in ids(&sim) {
        sim.host_event(&id, HostEvent::ResetPendingUserAction);
    }
    // Hosts reboot into the ISO and re-register; the cluster becomes installable again.
    for id in ids(&sim) {
        sim.c.host_mut(&id).unwrap().status = HostStatus::Resetting;
        sim.host_event(&id, HostEvent::Register);
    }
    sim.tick_until("ready after reset", 20, |s| {
        s.c.status == ClusterStatus::Ready
    });
}

/// The steps of a pool (unbound) host.
fn pool_steps(h: &HostSnapshot, cfg: &Config) -> Steps {
    next_steps(&NextStepsInput {
        host: h,
        cluster: None,
        cfg,
        seed: 3,
        boot_artifacts: None,
        connectivity_check: true,
    })
}

#[test]
fn replay_late_binding() {
    let now = t0();
    let cfg = Config::default();
    let mut h = HostSnapshot::new_registered("p1", "pool-env", None, now);
    assert_eq!(h.status, HostStatus::DiscoveringUnbound);
    h.inventory = Some(inventory("p1", 70, 8, 32));
    let out = refresh_host(&h, None, now, &cfg);
    apply_host_outcome(&mut h, &out, now);
    assert_eq!(
        (h.status, h.status_info.as_str()),
        (
            HostStatus::KnownUnbound,
            "Host is ready to be bound to a cluster"
        )
    );
    let steps = pool_steps(&h, &cfg);
    assert_eq!(
        steps
            .instructions
            .iter()
            .map(|s| s.step_type)
            .collect::<Vec<_>>(),
        vec![StepType::Inventory, StepType::NtpSynchronizer]
    );
    let out = apply_host_event(
        &h,
        None,
        &HostEvent::Bind {
            cluster_id: "c1".into(),
        },
        now,
        &cfg,
    )
    .unwrap();
    apply_host_outcome(&mut h, &out, now);
    let steps = pool_steps(&h, &cfg);
    assert_eq!(steps.post_step_action, PostStepAction::Exit);
    let mut sim = Sim::new(cluster_3_2(now));
    let out = apply_host_event(&h, Some(&sim.c), &HostEvent::Register, now, &cfg).unwrap();
    apply_host_outcome(&mut h, &out, now);
    assert_eq!(h.status, HostStatus::Discovering);
    sim.hw.insert("p1".into(), inventory("p1", 70, 8, 32));
    sim.c.hosts.push(h);
    sim.tick_until("bound host discovered", 5, |s| {
        s.host("p1").inventory.is_some()
    });
}
