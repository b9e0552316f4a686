//! Where a cluster that did not finish is stuck: the objects of the step it waits for, each
//! with its state and the condition that blocks it.

use kube::ResourceExt as _;

use crate::observe::{Snapshot, conditions};
use crate::site::Site;
use crate::steps::Step;
/// A step that did not finish.
#[derive(Debug, Clone)]
pub struct Stuck {
    pub step: String,
    pub waiting_for: String,
    pub objects: Vec<ObjectState>,
}

/// An object a stuck step depends on, as last seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectState {
    pub kind: String,
    pub name: String,
    pub state: String,
    /// `Type=Status Reason: message`, the ones not True first.
    pub conditions: Vec<String>,
}

impl ObjectState {
    /// What it waits on: its first condition that is not True and says why (has a message),
    /// else its first one not True.
    pub fn blocking(&self) -> Option<&str> {
        let not_true = || self.conditions.iter().filter(|c| !c.contains("=True "));
        not_true()
            .find(|c| {
                c.split_once(": ")
                    .is_some_and(|(_, m)| !m.trim().is_empty())
            })
            .or_else(|| not_true().next())
            .map(String::as_str)
    }
}

/// The objects a step depends on, with their last conditions (not-True ones first).
pub(crate) fn stuck_objects(step: Step, s: &Snapshot, site: &Site) -> Vec<ObjectState> {
    let mut out = Vec::new();
    let mut push = |kind: &str, name: String, state: String, conditions: Vec<String>| {
        out.push(ObjectState {
            kind: kind.into(),
            name,
            state,
            conditions,
        })
    };
    let (bmhs, infraenvs, machines, agents, aci, hosts) = match step {
        Step::HostsAvailable => (true, false, false, false, false, false),
        Step::InfraEnvsReady => (false, true, false, false, false, false),
        Step::HostsProvisioned => (true, false, true, false, false, false),
        Step::AgentsApproved => (false, false, false, true, false, true),
        Step::InstallStarted | Step::Installed => (false, false, false, true, true, true),
        Step::NodesRegistered => (false, false, false, false, false, true),
        Step::MachinesRunning
        | Step::Day2Installed
        | Step::ScaleDownDone
        | Step::HostFailed
        | Step::Remediated
        | Step::Replaced
        | Step::ControlPlaneScaleRequested
        | Step::ControlPlaneScaledUp
        | Step::ControlPlaneScaleRefused
        | Step::ControlPlaneScaledBack => (true, false, true, true, false, true),
        Step::UpgradeRequested
        | Step::Upgraded
        | Step::UpgradeFailed
        | Step::DowngradeRefused
        | Step::RemediationReported
        | Step::RemediationHeld => (false, false, true, false, false, false),
        Step::MirrorConfigRefused | Step::ImageModeRefused => {
            (false, false, false, true, true, false)
        }
        Step::ImageModeRolledOut | Step::ImageModeDay2Counted | Step::ImageModeInstallFailed => {
            (false, false, false, false, false, true)
        }
    };
    if let Some(cp) = &s.control_plane {
        let conditions = cp["status"]["conditions"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        format!(
                            "{}={} {}: {}",
                            c["type"].as_str().unwrap_or_default(),
                            c["status"].as_str().unwrap_or_default(),
                            c["reason"].as_str().unwrap_or_default(),
                            c["message"].as_str().unwrap_or_default()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        push(
            "OpenshiftAssistedControlPlane",
            cp["metadata"]["name"].as_str().unwrap_or_default().into(),
            format!(
                "distributionVersion {} (spec {}), version {}",
                cp["status"]["distributionVersion"].as_str().unwrap_or("-"),
                cp["spec"]["distributionVersion"].as_str().unwrap_or("-"),
                cp["status"]["version"].as_str().unwrap_or("-")
            ),
            conditions,
        );
    }
    if infraenvs {
        for i in &s.infraenvs {
            let state = if i
                .status
                .as_ref()
                .is_some_and(|s| s.iso_download_url.is_some())
            {
                "ISO ready"
            } else {
                "no ISO URL yet"
            };
            push("InfraEnv", i.name_any(), state.into(), conditions(i));
        }
    }
    if machines {
        for m in &s.machines {
            let phase = serde_json::to_value(m.status.as_ref().map(|s| &s.phase))
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            push("Machine", m.name_any(), phase, conditions(m));
        }
    }
    if aci && let Some(a) = &s.aci {
        push(
            "AgentClusterInstall",
            a.name_any(),
            s.aci_state().into(),
            conditions(a),
        );
    }
    if agents {
        for a in &s.agents {
            push(
                "Agent",
                a.name_any(),
                format!(
                    "{} (approved {}, hostname {})",
                    Snapshot::agent_state(a),
                    a.spec.approved,
                    a.spec.hostname.as_deref().unwrap_or("-")
                ),
                conditions(a),
            );
        }
    }
    if bmhs {
        for b in &s.bmhs {
            let err = b
                .status
                .as_ref()
                .map(|s| s.error_message.clone())
                .unwrap_or_default();
            let state = if err.is_empty() {
                Snapshot::bmh_state(b).to_string()
            } else {
                format!("{} (error: {err})", Snapshot::bmh_state(b))
            };
            push("BareMetalHost", b.name_any(), state, Vec::new());
        }
    }
    if hosts {
        for h in site.host_states() {
            let (name, state) = h.split_once(": ").unwrap_or((h.as_str(), ""));
            push("simulated host", name.into(), state.into(), Vec::new());
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn object(conditions: &[&str]) -> ObjectState {
        ObjectState {
            kind: "Machine".into(),
            name: "m".into(),
            state: "Provisioning".into(),
            conditions: conditions.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn the_blocking_condition_is_the_first_not_true_one_that_says_why() {
        let o = object(&[
            "Available=False NotReady: ",
            "Ready=Unknown ReadyUnknown: Metal3DataReady: not yet reported",
            "BootstrapConfigReady=True Ready: available",
        ]);
        assert_eq!(
            o.blocking(),
            Some("Ready=Unknown ReadyUnknown: Metal3DataReady: not yet reported")
        );
        assert_eq!(
            object(&["Available=False NotReady: "]).blocking(),
            Some("Available=False NotReady: ")
        );
        assert_eq!(object(&["Ready=True Ready: fine"]).blocking(), None);
        assert_eq!(object(&[]).blocking(), None);
    }
}
