//! Cross-check against the server's pure domain (no HTTP): the steps the server computes are
//! answered by the simulator's replies and fed back through the server's own parsers, and the
//! simulator's stage sequences are applied with the server's progress rules. A 3+2 cluster and
//! an SNO cluster must go from registration to installed.

use std::collections::HashMap;

use agent_sim::controller::{all_hosts_done, host_update};
use agent_sim::stages::{InstallRole, installer_stages};
use agent_sim::wire::{HostView, InstallCmdRequest, ProgressView};
use agent_sim::{HostProfile, ReplyCtx, step_reply};
use assisted_core::domain as dom;
use jiff::Timestamp;

const NET: &str = "192.168.111.0/24";

struct Sim {
    c: dom::ClusterSnapshot,
    now: Timestamp,
    cfg: dom::Config,
    profiles: Vec<HostProfile>,
    ctx: ReplyCtx,
    seed: u64,
    install: HashMap<String, InstallCmdRequest>,
}

impl Sim {
    fn new(c: dom::ClusterSnapshot, profiles: Vec<HostProfile>, ctx: ReplyCtx) -> Sim {
        let now = c.status_updated_at;
        let mut sim = Sim {
            c,
            now,
            cfg: dom::Config::default(),
            profiles,
            ctx,
            seed: 0,
            install: HashMap::new(),
        };
        for p in &sim.profiles {
            let mut h = dom::HostSnapshot::new_registered(
                &p.uuid,
                "11111111-1111-4111-8111-111111111111",
                Some(&sim.c),
                now,
            );
            h.approved = true;
            sim.c.hosts.push(h);
        }
        sim
    }

    /// Each agent checks in and answers its steps through the server's parsers.
    fn agent_round(&mut self) {
        for i in 0..self.c.hosts.len() {
            if self.c.hosts[i].rebooted() {
                continue;
            }
            self.seed += 1;
            self.c.hosts[i].checked_in_at = Some(self.now);
            self.c.hosts[i].host_timestamp = Some(self.now);
            let steps = dom::next_steps(&dom::NextStepsInput {
                host: &self.c.hosts[i],
                cluster: Some(&self.c),
                cfg: &self.cfg,
                seed: self.seed,
                boot_artifacts: None,
                connectivity_check: true,
            });
            // Over the wire: the server's JSON into the simulator's own types.
            let wire = serde_json::to_string(&steps).unwrap();
            let steps: agent_sim::wire::Steps = serde_json::from_str(&wire).unwrap();
            let me = &self.profiles[i];
            for s in &steps.instructions {
                if s.step_type == "install" {
                    let req: InstallCmdRequest = s.request().unwrap();
                    self.install.insert(me.uuid.clone(), req);
                }
                let reply = step_reply(s, me, &self.profiles, &self.ctx);
                assert_eq!(reply.exit_code, 0, "{}: {}", s.step_type, reply.error);
                let body = serde_json::to_vec(&reply).unwrap();
                let parsed = dom::StepReply::parse(&body).unwrap();
                let out = dom::apply_step_reply(&mut self.c.hosts[i], &parsed, &self.cfg);
                assert!(out.error.is_none(), "{}: {:?}", s.step_type, out.error);
            }
        }
    }

    fn tick(&mut self) {
        self.now = self
            .now
            .checked_add(jiff::SignedDuration::from_secs(10))
            .unwrap();
        self.agent_round();
        let r = dom::refresh_all(&self.c, self.now, &self.cfg);
        dom::apply_refresh(&mut self.c, &r, self.now);
    }

    fn tick_until(&mut self, what: &str, max: usize, pred: impl Fn(&Sim) -> bool) {
        for _ in 0..max {
            if pred(self) {
                return;
            }
            self.tick();
        }
        let hosts: Vec<_> = self
            .c
            .hosts
            .iter()
            .map(|h| {
                let v = dom::validate_host(h, Some(&self.c), self.now, &self.cfg);
                (h.status, h.status_info.clone(), v.to_validations_info())
            })
            .collect();
        panic!(
            "timed out waiting for {what}: cluster {} ({}), hosts {hosts:#?}",
            self.c.status, self.c.status_info
        );
    }

    fn progress(&mut self, id: &str, stage: &str) {
        let st = dom::HostStage::parse(stage).unwrap_or_else(|| panic!("unknown stage {stage}"));
        let h = self.c.host(id).unwrap();
        let out = dom::update_host_progress(h, Some(&self.c), st, "", self.now, &self.cfg)
            .unwrap_or_else(|e| panic!("{id} {stage}: {e:?}"));
        let now = self.now;
        dom::apply_host_outcome(self.c.host_mut(id).unwrap(), &out, now);
    }

    fn host_views(&self) -> Vec<HostView> {
        self.c
            .hosts
            .iter()
            .map(|h| HostView {
                id: h.id.clone(),
                infra_env_id: h.infra_env_id.clone(),
                status: h.status.as_str().into(),
                role: h.effective_role().as_str().into(),
                bootstrap: h.bootstrap,
                progress: ProgressView {
                    current_stage: h
                        .progress
                        .current_stage
                        .map(|s| s.as_str().to_string())
                        .unwrap_or_default(),
                    progress_info: String::new(),
                },
                ..Default::default()
            })
            .collect()
    }

    /// Discovery to installed, with the simulator's installer and controller stage logic.
    fn install_all(&mut self) {
        self.tick_until("ready", 20, |s| s.c.status == dom::ClusterStatus::Ready);
        let d = dom::auto_start_day1(&self.c, &dom::AutoStartParams::default(), &self.cfg);
        assert!(d.start, "{d:?}");
        let plan = dom::start_install(&self.c, self.now, &self.cfg).unwrap();
        dom::apply_install_plan(&mut self.c, &plan, self.now);
        self.tick_until("prepared", 10, |s| {
            s.c.hosts
                .iter()
                .all(|h| h.status == dom::HostStatus::PreparingSuccessful)
        });
        self.c.preparation = dom::PreparationStatus::Success;
        self.tick_until("install steps", 10, |s| s.install.len() == s.c.hosts.len());

        // Installer: every host walks its pre-reboot stages; the bootstrap host last, as it
        // waits for the other masters.
        let mut order: Vec<(String, InstallCmdRequest)> =
            self.install.clone().into_iter().collect();
        order.sort_by_key(|(_, r)| r.role == "bootstrap");
        for (id, req) in &order {
            assert_eq!(req.host_id, *id);
            assert!(
                req.boot_device.starts_with("/dev/disk/by-id/wwn-"),
                "{}",
                req.boot_device
            );
            let role = InstallRole::parse(&req.role).unwrap();
            for stage in installer_stages(role, req.control_plane_count == 1) {
                self.progress(id, stage);
            }
        }
        self.tick();

        // Controller: report until every host is done.
        let sno = self.c.is_sno();
        for _ in 0..10 {
            let views = self.host_views();
            if all_hosts_done(&views) {
                break;
            }
            for h in &views {
                if let Some(stage) = host_update(h, sno) {
                    self.progress(&h.id, stage);
                }
            }
        }
        assert!(all_hosts_done(&self.host_views()));
        self.tick_until("finalizing", 5, |s| {
            s.c.status == dom::ClusterStatus::Finalizing
        });
        // What the controller's ingress-cert upload and operator reports amount to.
        self.c.kubeconfig_uploaded = true;
        for o in self.c.monitored_operators.iter_mut() {
            o.status = Some(dom::OperatorStatus::Available);
        }
        self.tick_until("installed", 5, |s| {
            s.c.status == dom::ClusterStatus::Installed
        });
    }
}

fn release() -> dom::ReleaseInfo {
    dom::ReleaseInfo {
        release_image: "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64".into(),
        mco_image: "quay.io/mco:4.20".into(),
        must_gather_image: "quay.io/must-gather:4.20".into(),
        coreos_image: "quay.io/coreos:4.20".into(),
    }
}

#[test]
fn three_masters_two_workers_install() {
    let now = Timestamp::now();
    let mut c = dom::ClusterSnapshot::new("32323232-3232-4232-8232-323232323232", "test", now);
    c.base_domain = "example.com".into();
    c.openshift_version = "4.20.0".into();
    c.pull_secret_set = true;
    c.control_plane_count = 3;
    c.worker_count = 2;
    c.machine_networks = vec![NET.into()];
    c.api_vips = vec!["192.168.111.5".into()];
    c.ingress_vips = vec!["192.168.111.6".into()];
    c.release = release();
    let mut profiles: Vec<HostProfile> = (0..3)
        .map(|i| HostProfile::master_like(i, NET).unwrap())
        .collect();
    profiles.extend((0..2).map(|i| HostProfile::worker_like(i, NET).unwrap()));
    let mut sim = Sim::new(c, profiles, ReplyCtx::default());
    sim.install_all();
    let roles: Vec<&str> = sim.install.values().map(|r| r.role.as_str()).collect();
    assert_eq!(roles.iter().filter(|r| **r == "bootstrap").count(), 1);
    assert_eq!(roles.iter().filter(|r| **r == "master").count(), 2);
    assert_eq!(roles.iter().filter(|r| **r == "worker").count(), 2);
}

#[test]
fn single_node_installs() {
    let now = Timestamp::now();
    let mut c = dom::ClusterSnapshot::new("50505050-5050-4050-8050-505050505050", "sno", now);
    c.base_domain = "example.com".into();
    c.openshift_version = "4.20.0".into();
    c.pull_secret_set = true;
    c.control_plane_count = 1;
    c.worker_count = 0;
    c.platform = dom::PlatformType::None;
    c.user_managed_networking = true;
    c.release = release();
    let profiles = vec![HostProfile::sno_like(0, NET).unwrap()];
    let mut sim = Sim::new(c, profiles, ReplyCtx::default());
    sim.install_all();
    let req = sim.install.values().next().unwrap();
    assert_eq!(req.role, "bootstrap");
    assert_eq!(req.control_plane_count, 1);
}

#[test]
fn wildcard_dns_blocks_discovery() {
    let now = Timestamp::now();
    let mut c = dom::ClusterSnapshot::new("c-wc", "wc", now);
    c.base_domain = "example.com".into();
    c.openshift_version = "4.20.0".into();
    c.pull_secret_set = true;
    c.machine_networks = vec![NET.into()];
    c.api_vips = vec!["192.168.111.5".into()];
    c.ingress_vips = vec!["192.168.111.6".into()];
    c.release = release();
    let profiles: Vec<HostProfile> = (0..3)
        .map(|i| HostProfile::master_like(i, NET).unwrap())
        .collect();
    let ctx = ReplyCtx {
        wildcard_dns: true,
        ..Default::default()
    };
    let mut sim = Sim::new(c, profiles, ctx);
    for _ in 0..6 {
        sim.tick();
    }
    assert!(
        sim.c.hosts.iter().all(
            |h| h.status == dom::HostStatus::Insufficient && h.status_info.contains("wildcard")
        ),
        "{:?}",
        sim.c
            .hosts
            .iter()
            .map(|h| (h.status, &h.status_info))
            .collect::<Vec<_>>()
    );
}
