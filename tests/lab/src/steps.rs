//! The scenario's steps: what each milestone is called, what it waits for (said when a run is
//! stuck), and when it is reached, read from one [`Snapshot`] of the clusters and the site.

use kube::ResourceExt;

use crate::cluster_ops::{control_plane_condition, topology_settled, upgrade_to};
use crate::manifests::ClusterSpec;
use crate::observe::Snapshot;
use crate::site::Site;
use crate::{Upgrade, control_plane_scaling, cvo};

/// The scenario's steps, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    HostsAvailable,
    InfraEnvsReady,
    HostsProvisioned,
    AgentsApproved,
    InstallStarted,
    Installed,
    NodesRegistered,
    MachinesRunning,
    Day2Installed,
    ScaleDownDone,
    UpgradeRequested,
    Upgraded,
    UpgradeFailed,
    DowngradeRefused,
    HostFailed,
    Remediated,
    Replaced,
    RemediationReported,
    RemediationHeld,
    ControlPlaneScaleRequested,
    ControlPlaneScaledUp,
    ControlPlaneScaleRefused,
    ControlPlaneScaledBack,
    MirrorConfigRefused,
    ImageModeRolledOut,
    ImageModeDay2Counted,
    ImageModeInstallFailed,
    ImageModeRefused,
}

/// What `--fail-host` breaks, and so what the run waits for after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failing {
    /// A worker: Cluster API's MachineSet replaces it.
    Worker,
    /// One master of several: the control plane replaces it.
    Master,
    /// The only master: reported, never replaced.
    OnlyMaster,
    /// Two masters at once: held back to keep etcd's quorum.
    TwoMasters,
}

impl Step {
    /// `failing`: what `--fail-host` breaks; `downgrade`: `--upgrade-to` names an older
    /// release than the cluster's; `control_plane`: `--scale-control-plane`, and whether the
    /// cluster can have that many masters.
    pub(crate) fn all(
        day2: bool,
        upgrade: Option<&Upgrade>,
        failing: Option<Failing>,
        downgrade: bool,
        control_plane: Option<bool>,
    ) -> Vec<Step> {
        use Step::*;
        let mut s = vec![
            HostsAvailable,
            InfraEnvsReady,
            HostsProvisioned,
            AgentsApproved,
            InstallStarted,
            Installed,
            NodesRegistered,
            MachinesRunning,
        ];
        if day2 {
            s.extend([Day2Installed, ScaleDownDone]);
        }
        match control_plane {
            Some(true) => s.extend([
                ControlPlaneScaleRequested,
                ControlPlaneScaledUp,
                ControlPlaneScaledBack,
            ]),
            Some(false) => s.extend([
                ControlPlaneScaleRequested,
                ControlPlaneScaleRefused,
                ControlPlaneScaledBack,
            ]),
            None => {}
        }
        match failing {
            Some(Failing::Worker | Failing::Master) => {
                s.extend([HostFailed, Remediated, Replaced]);
            }
            Some(Failing::OnlyMaster) => s.extend([HostFailed, RemediationReported]),
            Some(Failing::TwoMasters) => s.extend([HostFailed, RemediationHeld]),
            None => {}
        }
        match upgrade {
            Some(_) if downgrade => s.extend([UpgradeRequested, DowngradeRefused]),
            Some(u) if u.fails => s.extend([UpgradeRequested, UpgradeFailed]),
            Some(_) => s.extend([UpgradeRequested, Upgraded]),
            None => {}
        }
        s
    }

    /// The milestone's name in the timeline.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Step::HostsAvailable => "hosts available",
            Step::InfraEnvsReady => "InfraEnvs ready",
            Step::HostsProvisioned => "hosts provisioned",
            Step::AgentsApproved => "Agents approved",
            Step::InstallStarted => "install started",
            Step::Installed => "installed",
            Step::NodesRegistered => "Nodes registered",
            Step::MachinesRunning => "Machines Running",
            Step::Day2Installed => "day-2 worker installed",
            Step::ScaleDownDone => "scale-down done",
            Step::UpgradeRequested => "upgrade requested",
            Step::Upgraded => "upgraded",
            Step::UpgradeFailed => "upgrade failure reported",
            Step::DowngradeRefused => "downgrade refused",
            Step::HostFailed => "host failed",
            Step::Remediated => "unhealthy Machine remediated",
            Step::Replaced => "replacement installed",
            Step::RemediationReported => "remediation reported",
            Step::RemediationHeld => "remediation held",
            Step::ControlPlaneScaleRequested => "control-plane scaling requested",
            Step::ControlPlaneScaledUp => "control plane scaled up",
            Step::ControlPlaneScaleRefused => "control-plane scaling refused",
            Step::ControlPlaneScaledBack => "control plane scaled back",
            Step::MirrorConfigRefused => "mirror ConfigMap refused",
            Step::ImageModeRolledOut => "image mode rolled out",
            Step::ImageModeDay2Counted => "day-2 worker on its image",
            Step::ImageModeInstallFailed => "image mode install failed",
            Step::ImageModeRefused => "image mode refused",
        }
    }

    /// What the step waits for, said so that a stuck run names it.
    pub(crate) fn waiting_for(self, spec: &ClusterSpec) -> String {
        let n = spec.hosts_day1();
        match self {
            Step::HostsAvailable => {
                "every BareMetalHost `available` (baremetal-operator, fixture provisioner)".into()
            }
            Step::InfraEnvsReady => format!(
                "{} InfraEnv(s) with an ISO URL (bootstrap provider + assisted-core)",
                spec.infraenvs
            ),
            Step::HostsProvisioned => {
                format!("{n} BareMetalHosts `provisioned` by CAPM3 and booted by the site")
            }
            Step::AgentsApproved => format!("{n} Agents approved by the bootstrap provider"),
            Step::InstallStarted => "the AgentClusterInstall `installing`".into(),
            Step::Installed => {
                "the AgentClusterInstall `installed`/`adding-hosts` (installer-controller done)"
                    .into()
            }
            Step::NodesRegistered => format!("{n} Nodes in the workload apiserver"),
            Step::MachinesRunning => {
                format!("{n} Machines in phase Running (CAPM3 sets providerID, CAPI the nodeRef)")
            }
            Step::Day2Installed => format!(
                "{} Machines Running and the day-2 Agent `added-to-existing-cluster`",
                n + 1
            ),
            Step::ScaleDownDone => format!(
                "back to {n} Machines, Agents and Nodes, the removed BareMetalHost `available`"
            ),
            Step::UpgradeRequested => "the control plane's distributionVersion set".into(),
            Step::Upgraded => format!(
                "the control plane's status.distributionVersion {} with UpgradeCompleted True and every control-plane Node's kubelet {}",
                upgrade_to(spec),
                cvo::kubernetes_of(upgrade_to(spec))
            ),
            Step::UpgradeFailed => format!(
                "the control plane's UpgradeCompleted False/UpgradeFailed with the CVO's message ({})",
                cvo::FAILURE_MESSAGE
            ),
            Step::DowngradeRefused => format!(
                "the control plane still at {} and UpgradeCompleted True after admission refused {}",
                spec.installed_version,
                upgrade_to(spec)
            ),
            Step::HostFailed => "the MachineHealthCheck applied and the host's kubelet stopped".into(),
            Step::Remediated => "the remediation: the failed host's Machine deleted (by its MachineSet, or by the control plane after removing its etcd member), its Agent and Node gone, its BareMetalHost deprovisioned".into(),
            Step::Replaced => format!(
                "{n} Machines Running again, the replacement's Agent `added-to-existing-cluster` (day-2) and its Node Ready (a master: etcd back to {} members, the new Node among them)",
                spec.masters
            ),
            Step::RemediationReported => "the control plane's Remediating True naming the failed host's Machine".into(),
            Step::RemediationHeld => format!(
                "the control plane's Remediating True/EtcdQuorumAtRisk, every Machine still there and etcd still {} members",
                spec.masters
            ),
            Step::ControlPlaneScaleRequested => "the control plane's spec.replicas set".into(),
            Step::ControlPlaneScaledUp => format!(
                "{} control-plane Machines Running, the new ones day-2 control-plane hosts whose Nodes are Ready and etcd members",
                spec.control_plane_to.unwrap_or_default()
            ),
            Step::ControlPlaneScaleRefused => "the control plane's ScalingUp False/ScalingNotSupported, no Machine made".into(),
            Step::ImageModeRolledOut => "the control plane's ImageMode True/RolledOut: every pool's MachineOSConfig seeded and all its Nodes on its pre-built image (the simulated machine-config operator moves one Node at a time)".into(),
            Step::ImageModeDay2Counted => format!(
                "the control plane's ImageMode True/RolledOut again with the day-2 worker counted: worker {0}/{0} nodes on the worker pool's image",
                spec.workers + 1
            ),
            Step::ImageModeInstallFailed => "the control plane's Available False/ImageModeInstallFailed naming the pool's failed MachineOSBuild, and ImageMode False/RolloutFailed".into(),
            Step::ImageModeRefused => "the control plane's Available False/InstallValidationsFailing naming a pre-built image not pinned by digest, the install not started".into(),
            Step::MirrorConfigRefused => format!(
                "the control plane's Available False/InvalidImageRegistryConfig naming ConfigMap {} and its registries.conf line, no AgentClusterInstall and no Agent",
                crate::mirror::CONFIG_MAP
            ),
            Step::ControlPlaneScaledBack => format!(
                "back to {} masters: the extra Machines gone one at a time (etcd member and certificate Secrets first), Agents and Nodes gone, BareMetalHosts `available`, etcd {} members",
                spec.masters, spec.masters
            ),
        }
    }

    // One match over every step, each arm the step's condition: splitting it would scatter
    // the table (the long conditions are functions below).
    pub(crate) fn done(
        self,
        spec: &ClusterSpec,
        s: &Snapshot,
        site: &Site,
        servers: usize,
    ) -> bool {
        let n = spec.hosts_day1();
        let installed = ["installed", "adding-hosts"].contains(&s.aci_state());
        match self {
            Step::HostsAvailable => s.bmhs.len() == servers && s.bmhs_in("available") == servers,
            Step::InfraEnvsReady => s.infraenvs_ready() >= spec.infraenvs,
            Step::HostsProvisioned => s.bmhs_in("provisioned") >= n && site.powered_on() >= n,
            Step::AgentsApproved => s.agents_approved() >= n,
            Step::InstallStarted => {
                installed || ["installing", "finalizing"].contains(&s.aci_state())
            }
            Step::Installed => installed,
            Step::NodesRegistered => s.nodes_ready() >= n,
            Step::MachinesRunning => s.machines.len() == n && s.machines_running() == n,
            Step::Day2Installed => {
                s.machines.len() == n + 1
                    && s.machines_running() == n + 1
                    && s.agents.iter().any(|a| {
                        Snapshot::is_day2(a)
                            && Snapshot::agent_state(a) == "added-to-existing-cluster"
                    })
            }
            Step::ScaleDownDone => {
                s.machines.len() == n
                    && s.machines_running() == n
                    && s.agents.len() == n
                    && s.nodes.len() == n
                    && s.bmhs_in("provisioned") == n
                    && s.bmhs_in("available") == servers - n
            }
            Step::UpgradeRequested => true,
            Step::Upgraded => upgraded(spec, s),
            // The edit was refused (the action checked the answer); nothing moved.
            Step::DowngradeRefused => s.control_plane.as_ref().is_some_and(|c| {
                c["spec"]["distributionVersion"] == spec.installed_version.as_str()
                    && c["status"]["distributionVersion"] == spec.installed_version.as_str()
                    && control_plane_condition(c, "UpgradeCompleted")
                        .is_some_and(|(st, _, _)| st == "True")
            }),
            Step::HostFailed | Step::ControlPlaneScaleRequested => true,
            Step::ControlPlaneScaledUp => control_plane_scaling::scaled_up(
                spec,
                s,
                site,
                spec.control_plane_to.unwrap_or_default(),
            ),
            Step::ControlPlaneScaleRefused => control_plane_scaling::refused(spec, s),
            // Every master counted (and every day-1 worker when the workers have a pool).
            Step::ImageModeRolledOut => image_mode_rolled_out(s, spec.masters, spec.workers),
            Step::ImageModeInstallFailed => s.control_plane.as_ref().is_some_and(|c| {
                control_plane_condition(c, "Available").is_some_and(|(st, r, m)| {
                    st == "False" && r == "ImageModeInstallFailed" && m.contains("MachineOSBuild")
                }) && control_plane_condition(c, "ImageMode")
                    .is_some_and(|(st, r, _)| st == "False" && r == "RolloutFailed")
            }),
            // The day-2 worker joined the worker pool's count.
            Step::ImageModeDay2Counted => image_mode_rolled_out(s, spec.masters, spec.workers + 1),
            Step::ImageModeRefused => {
                !installed
                    && !["installing", "finalizing"].contains(&s.aci_state())
                    && s.control_plane.as_ref().is_some_and(|c| {
                        control_plane_condition(c, "Available").is_some_and(|(st, r, m)| {
                            st == "False"
                                && r == "InstallValidationsFailing"
                                && m.contains("is not a fully qualified image pinned by digest")
                        })
                    })
            }
            Step::MirrorConfigRefused => {
                s.aci.is_none()
                    && s.agents.is_empty()
                    && s.control_plane.as_ref().is_some_and(|c| {
                        control_plane_condition(c, "Available").is_some_and(|(st, r, m)| {
                            st == "False"
                                && r == "InvalidImageRegistryConfig"
                                && m.contains(crate::mirror::CONFIG_MAP)
                                && m.contains("registries.conf line")
                        })
                    })
            }
            Step::ControlPlaneScaledBack => {
                control_plane_scaling::scaled_back(spec, s, site, servers)
            }
            Step::Remediated => remediated(s, site),
            Step::Replaced => replaced(spec, s, site),
            Step::RemediationHeld => {
                s.machines.len() == n
                    && site.etcd.names().len() == spec.masters as usize
                    && s.control_plane.as_ref().is_some_and(|c| {
                        control_plane_condition(c, "Remediating")
                            .is_some_and(|(st, r, _)| st == "True" && r == "EtcdQuorumAtRisk")
                    })
            }
            Step::RemediationReported => remediation_reported(s, site),
            Step::UpgradeFailed => s.control_plane.as_ref().is_some_and(|c| {
                control_plane_condition(c, "UpgradeCompleted").is_some_and(|(st, r, m)| {
                    st == "False" && r == "UpgradeFailed" && m.contains(cvo::FAILURE_MESSAGE)
                })
            }),
        }
    }
}

/// `--upgrade-to` done: the control plane on the new release (every control-plane Node on it:
/// one entry in status.versions), over a ClusterClass the topology settled, and
/// `UpgradeCompleted` True.
fn upgraded(spec: &ClusterSpec, s: &Snapshot) -> bool {
    let to = upgrade_to(spec);
    let cp = s.control_plane.as_ref();
    let status = |f: &str| {
        cp.and_then(|c| c["status"][f].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let versions = cp.map(|c| c["status"]["versions"].clone());
    status("distributionVersion") == to
        && status("version") == cvo::kubernetes_of(to)
        && (!spec.cluster_class || topology_settled(s, &cvo::kubernetes_of(to)))
        && versions
            .as_ref()
            .and_then(|v| v.as_array())
            .is_some_and(|v| v.len() == 1 && v[0]["version"] == cvo::kubernetes_of(to).as_str())
        && cp.is_some_and(|c| {
            control_plane_condition(c, "UpgradeCompleted").is_some_and(|(st, _, _)| st == "True")
        })
}

/// The failed host's Machine, Node and Agent gone, its BareMetalHost no longer provisioned
/// and its etcd member removed.
fn remediated(s: &Snapshot, site: &Site) -> bool {
    site.failed.first().is_some_and(|f| {
        let bmh_state = |name: &str| {
            s.bmhs
                .iter()
                .find(|b| b.name_any() == name)
                .and_then(|b| b.status.as_ref())
                .map(|st| st.provisioning.state.clone())
                .unwrap_or_default()
        };
        !s.machines
            .iter()
            .any(|m| Snapshot::node_of(m) == Some(f.node.as_str()))
            && !s.nodes.iter().any(|node| node.name_any() == f.node)
            && !s.agents.iter().any(|a| a.name_any() == f.agent)
            && bmh_state(&f.host) != "provisioned"
            && !f.etcd_member.is_some_and(|id| site.etcd.has(id))
    })
}

/// The failed host replaced by the spare: every Machine running, a day-2 Agent added, and a
/// master's replacement a new etcd member (it may take the failed Node's name, never its
/// member).
fn replaced(spec: &ClusterSpec, s: &Snapshot, site: &Site) -> bool {
    let n = spec.hosts_day1();
    let etcd_back = site.failed.first().is_none_or(|f| {
        !f.master
            || (site.etcd.names().len() == spec.masters as usize
                && !f.etcd_member.is_some_and(|id| site.etcd.has(id)))
    });
    s.machines.len() == n
        && s.machines_running() == n
        && s.agents.len() == n
        && s.nodes_ready() == n
        && s.agents.iter().any(|a| {
            Snapshot::is_day2(a) && Snapshot::agent_state(a) == "added-to-existing-cluster"
        })
        && etcd_back
}

/// The control plane's `Remediating` True naming the failed host's Machine.
fn remediation_reported(s: &Snapshot, site: &Site) -> bool {
    let failed_machine = site.failed.first().and_then(|f| {
        s.machines
            .iter()
            .find(|m| Snapshot::node_of(m) == Some(f.node.as_str()))
            .map(|m| m.name_any())
    });
    s.control_plane.as_ref().is_some_and(|c| {
        control_plane_condition(c, "Remediating").is_some_and(|(st, _, m)| {
            st == "True" && failed_machine.is_some_and(|name| m.contains(&name))
        })
    })
}

/// The control plane's `ImageMode` True/RolledOut with every master and `workers` workers
/// counted on their pools' images (workers only when the workers have a pool).
fn image_mode_rolled_out(s: &Snapshot, masters: u32, workers: u32) -> bool {
    s.control_plane.as_ref().is_some_and(|c| {
        control_plane_condition(c, "ImageMode").is_some_and(|(st, r, m)| {
            st == "True"
                && r == "RolledOut"
                && m.contains(&format!("master: {masters}/{masters} nodes"))
                && (workers == 0 || m.contains(&format!("worker: {workers}/{workers} nodes")))
        })
    })
}
