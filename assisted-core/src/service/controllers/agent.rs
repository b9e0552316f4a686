//! Agent controller: Agent spec → host record (role, hostname, approval, disk, pool), and
//! deregistration on delete. Status is written by the persister from the store.

use std::sync::Arc;

use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event, finalizer};

use super::{Context, Error};
use crate::api::agent::{Agent, AgentSpec, HostRole as SpecRole};
use crate::api::hive::ClusterDeployment;
use crate::domain::HostRole;
use crate::service::install::parse_ignition_override;
use crate::service::store::HostSpec;

pub const AGENT_FINALIZER: &str = "agent.agent-install.openshift.io/ai-deprovision";

/// Agent spec → host spec; an input error names the field.
pub fn host_spec(spec: &AgentSpec) -> (HostSpec, Option<String>) {
    let mut error = None;
    if let Some(args) = &spec.installer_args
        && !args.trim().is_empty()
        && serde_json::from_str::<Vec<String>>(args).is_err()
    {
        error = Some(format!(
            "installerArgs must be a JSON array of strings, got {args:?}"
        ));
    }
    // An override the install would refuse is reported now, not when the install starts.
    let ignition_config_overrides = match spec
        .ignition_config_overrides
        .as_deref()
        .filter(|o| !o.trim().is_empty())
    {
        Some(ov) => match parse_ignition_override(ov, "ignitionConfigOverrides") {
            Ok(_) => Some(ov.to_string()),
            Err(e) => {
                error = Some(e.to_string());
                None
            }
        },
        None => None,
    };
    let role = match spec.role {
        SpecRole::Master | SpecRole::Bootstrap => HostRole::Master,
        SpecRole::Worker => HostRole::Worker,
        SpecRole::Arbiter => HostRole::Arbiter,
        SpecRole::AutoAssign | SpecRole::Unset => HostRole::AutoAssign,
    };
    (
        HostSpec {
            role,
            hostname: spec.hostname.clone().filter(|h| !h.is_empty()),
            approved: spec.approved,
            installation_disk_id: spec
                .installation_disk_id
                .clone()
                .or_else(|| spec.installation_disk_path.clone())
                .filter(|d| !d.is_empty()),
            machine_config_pool: spec.machine_config_pool.clone().filter(|p| !p.is_empty()),
            // Only a valid JSON array reaches the install command (an invalid one is the
            // input error above).
            installer_args: spec
                .installer_args
                .clone()
                .filter(|a| serde_json::from_str::<Vec<String>>(a).is_ok()),
            ignition_config_overrides,
            node_labels: spec.node_labels.clone(),
        },
        error,
    )
}

/// Where `spec.clusterDeploymentName` points against where the host is bound: the error to
/// show on SpecSynced, if any. `bound` is the `(namespace, name)` of the host's
/// ClusterDeployment; `wanted_exists` whether the one the spec names exists. Binding, unbinding
/// and moving hosts between clusters (upstream's late binding) are not supported, so each of
/// them is reported rather than ignored.
pub fn binding_error(
    wanted: Option<(&str, &str)>,
    bound: Option<(&str, &str)>,
    wanted_exists: bool,
) -> Option<String> {
    match (wanted, bound) {
        (Some(w), Some(b)) if w == b => None,
        (Some((ns, name)), _) if !wanted_exists => Some(format!(
            "failed to get clusterDeployment with name {name} in namespace {ns}: not found"
        )),
        (Some((ns, name)), Some((bns, bname))) => Some(format!(
            "the host is bound to ClusterDeployment {bns}/{bname}; moving it to {ns}/{name} is \
             not supported: delete the Agent and boot the host with {ns}/{name}'s discovery image"
        )),
        (Some((ns, name)), None) => Some(format!(
            "binding a host to ClusterDeployment {ns}/{name} through the Agent is not supported: \
             boot it with an InfraEnv whose clusterRef names that ClusterDeployment"
        )),
        (None, Some((bns, bname))) => Some(format!(
            "clusterDeploymentName was removed, but unbinding a host from ClusterDeployment \
             {bns}/{bname} is not supported; set it back"
        )),
        (None, None) => None,
    }
}

fn pair(p: &Option<(String, String)>) -> Option<(&str, &str)> {
    p.as_ref().map(|(a, b)| (a.as_str(), b.as_str()))
}

pub async fn reconcile(agent: Arc<Agent>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = agent.namespace().unwrap_or_default();
    let api: Api<Agent> = Api::namespaced(ctx.client.clone(), &ns);
    finalizer(&api, AGENT_FINALIZER, agent, |event| async {
        match event {
            Event::Apply(a) => {
                let (spec, err) = host_spec(&a.spec);
                let ns = a.namespace().unwrap_or_default();
                let wanted = a.spec.cluster_deployment_name.as_ref().map(|r| {
                    let wns = if r.namespace.is_empty() {
                        ns.clone()
                    } else {
                        r.namespace.clone()
                    };
                    (wns, r.name.clone())
                });
                let (bound, approved_now) =
                    ctx.store
                        .view(|st| match st.host_with_cluster(&a.name_any()) {
                            Some((h, rec)) => (
                                rec.map(|r| {
                                    (
                                        r.settings.namespace.clone(),
                                        r.settings.cluster_deployment.clone(),
                                    )
                                }),
                                h.approved,
                            ),
                            None => (None, false),
                        });
                // Read only when the spec names another ClusterDeployment than the bound one.
                let wanted_exists = match &wanted {
                    Some(w) if Some(w) != bound.as_ref() => {
                        Api::<ClusterDeployment>::namespaced(ctx.client.clone(), &w.0)
                            .get_opt(&w.1)
                            .await?
                            .is_some()
                    }
                    _ => true,
                };
                let binding = binding_error(pair(&wanted), pair(&bound), wanted_exists);
                let mut spec = spec;
                if binding.is_some() {
                    // Approving a host for another cluster than the one it is bound to would
                    // install it where the user no longer wants it: approval stays as it was.
                    spec.approved = approved_now;
                }
                if !ctx
                    .store
                    .sync_host_spec(&a.name_any(), &spec, binding.or(err))
                {
                    tracing::debug!(agent = %a.name_any(), "no host record for this Agent yet");
                }
                // A missing ClusterDeployment may appear; it is not watched from here.
                Ok(if wanted_exists {
                    Action::await_change()
                } else {
                    Action::requeue(std::time::Duration::from_secs(60))
                })
            }
            Event::Cleanup(a) => {
                tracing::info!(agent = %a.name_any(), "Agent deleted: deregistering the host");
                ctx.store.remove_host(&a.name_any());
                Ok::<_, Error>(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_maps_roles_and_disks() {
        let (s, e) = host_spec(&AgentSpec {
            role: SpecRole::Master,
            approved: true,
            installation_disk_path: Some("/dev/sda".into()),
            hostname: Some(String::new()),
            ..Default::default()
        });
        assert!(e.is_none());
        assert_eq!(s.role, HostRole::Master);
        assert!(s.approved);
        assert_eq!(s.installation_disk_id.as_deref(), Some("/dev/sda"));
        assert_eq!(s.hostname, None);
        let (s, _) = host_spec(&AgentSpec::default());
        assert_eq!(s.role, HostRole::AutoAssign);
    }

    #[test]
    fn bad_installer_args_are_an_input_error() {
        let (_, e) = host_spec(&AgentSpec {
            installer_args: Some("--append-karg foo".into()),
            ..Default::default()
        });
        assert!(e.unwrap().contains("installerArgs"));
        let (_, e) = host_spec(&AgentSpec {
            installer_args: Some(r#"["--append-karg","foo"]"#.into()),
            ..Default::default()
        });
        assert!(e.is_none());
    }

    #[test]
    fn ignition_overrides_and_node_labels_reach_the_host() {
        let ov = r#"{"ignition":{"version":"3.1.0"},"storage":{"files":[]}}"#;
        let (s, e) = host_spec(&AgentSpec {
            ignition_config_overrides: Some(ov.into()),
            node_labels: [("metal3.io/uuid".to_string(), "u1".to_string())].into(),
            ..Default::default()
        });
        assert!(e.is_none());
        assert_eq!(s.ignition_config_overrides.as_deref(), Some(ov));
        assert_eq!(s.node_labels["metal3.io/uuid"], "u1");
    }

    #[test]
    fn an_override_the_install_would_refuse_is_an_input_error_and_dropped() {
        for bad in [
            "{oops",
            "[1]",
            r#"{"storage":{}}"#,
            r#"{"ignition":{"version":"2.2.0"}}"#,
        ] {
            let (s, e) = host_spec(&AgentSpec {
                ignition_config_overrides: Some(bad.into()),
                ..Default::default()
            });
            let e = e.unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(e.contains("ignitionConfigOverrides"), "{e}");
            assert_eq!(s.ignition_config_overrides, None);
        }
    }

    #[test]
    fn binding_problems_are_reported_not_ignored() {
        let a = Some(("ns", "a"));
        let b = Some(("ns", "b"));
        assert_eq!(binding_error(a, a, true), None);
        assert_eq!(binding_error(None, None, true), None);
        let e = binding_error(b, a, false).unwrap();
        assert!(e.contains("name b in namespace ns: not found"), "{e}");
        let e = binding_error(b, a, true).unwrap();
        assert!(
            e.contains("bound to ClusterDeployment ns/a") && e.contains("not supported"),
            "{e}"
        );
        let e = binding_error(b, None, true).unwrap();
        assert!(e.contains("ns/b") && e.contains("clusterRef"), "{e}");
        let e = binding_error(b, None, false).unwrap();
        assert!(e.contains("not found"), "{e}");
        let e = binding_error(None, a, true).unwrap();
        assert!(e.contains("unbinding"), "{e}");
    }
}
