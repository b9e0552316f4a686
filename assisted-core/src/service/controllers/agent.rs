//! Agent controller: Agent spec → host record (role, hostname, approval, disk, pool), and
//! deregistration on delete. Status is written by the persister from the store.

use std::sync::Arc;

use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use manager::controller::set_finalizer;

use super::{Context, Error, FinalizerStep, finalizer_step};
use crate::api::agent::{Agent, AgentSpec, HostRole as SpecRole};
use crate::api::hive::ClusterDeployment;
use crate::domain::HostRole;
use crate::service::install::parse_ignition_override;
use crate::service::store::HostSpec;

pub const AGENT_FINALIZER: &str = "agent.agent-install.openshift.io/ai-deprovision";
/// Owns the Agent's finalizer (the persister writes status under its own manager).
const FIELD_MANAGER: &str = "assisted-core-agent";

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

/// What one Agent reconcile reads: where its host is bound and whether the ClusterDeployment
/// the spec names exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dereferenced {
    /// `(namespace, name)` of the ClusterDeployment the spec names.
    pub wanted: Option<(String, String)>,
    /// `(namespace, name)` of the host's cluster in the store.
    pub bound: Option<(String, String)>,
    /// The host's approval in the store (kept while the binding is wrong).
    pub approved_now: bool,
    pub wanted_exists: bool,
}

/// What the store should follow, and when to look again.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub spec: HostSpec,
    /// Shown as SpecSynced=False on the Agent.
    pub spec_error: Option<String>,
    /// A missing ClusterDeployment may appear; it is not watched from here.
    pub recheck: Option<std::time::Duration>,
}

pub async fn reconcile(agent: Arc<Agent>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.metrics.agent.reconciled();
    match finalizer_step(agent.as_ref(), AGENT_FINALIZER) {
        FinalizerStep::Add => {
            set_finalizer(
                &ctx.client,
                agent.as_ref(),
                FIELD_MANAGER,
                AGENT_FINALIZER,
                true,
            )
            .await?
        }
        FinalizerStep::Proceed => {}
        FinalizerStep::Cleanup => {
            tracing::info!(agent = %agent.name_any(), "Agent deleted: deregistering the host");
            ctx.store.remove_host(&agent.name_any());
            release_finalizer(&ctx, agent.as_ref()).await?;
            return Ok(Action::await_change());
        }
        FinalizerStep::Gone => return Ok(Action::await_change()),
    }
    let read = dereference(&agent, &ctx).await?;
    let plan = plan(&agent.spec, &read);
    if !ctx
        .store
        .sync_host_spec(&agent.name_any(), &plan.spec, plan.spec_error)
    {
        tracing::debug!(agent = %agent.name_any(), "no host record for this Agent yet");
    }
    Ok(plan
        .recheck
        .map(Action::requeue)
        .unwrap_or_else(Action::await_change))
}

/// Drops the deregistration finalizer whoever added it: the persister creates Agents with it
/// (one write fewer per host), so it is not this controller's applied field. A merge patch of
/// the remaining list, conditional on the resourceVersion read, so a concurrent change of the
/// list fails (and is retried) instead of being overwritten.
async fn release_finalizer(ctx: &Context, agent: &Agent) -> Result<(), Error> {
    if !agent.finalizers().iter().any(|f| f == AGENT_FINALIZER) {
        return Ok(());
    }
    let rest: Vec<&String> = agent
        .finalizers()
        .iter()
        .filter(|f| *f != AGENT_FINALIZER)
        .collect();
    let patch = serde_json::json!({"metadata": {
        "finalizers": rest,
        "resourceVersion": agent.resource_version(),
    }});
    let api: Api<Agent> =
        Api::namespaced(ctx.client.clone(), &agent.namespace().unwrap_or_default());
    match api
        .patch(
            &agent.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(source) => Err(Error::Apply {
            what: format!("finalizer of Agent {}", agent.name_any()),
            source,
        }),
    }
}

/// The read phase: the host's binding from the store; the named ClusterDeployment is read only
/// when it is not the bound one.
async fn dereference(agent: &Agent, ctx: &Context) -> Result<Dereferenced, Error> {
    let ns = agent.namespace().unwrap_or_default();
    let wanted = agent.spec.cluster_deployment_name.as_ref().map(|r| {
        let wns = if r.namespace.is_empty() {
            ns.clone()
        } else {
            r.namespace.clone()
        };
        (wns, r.name.clone())
    });
    let (bound, approved_now) =
        ctx.store
            .view(|st| match st.host_with_cluster(&agent.name_any()) {
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
    let wanted_exists = match &wanted {
        Some(w) if Some(w) != bound.as_ref() => {
            Api::<ClusterDeployment>::namespaced(ctx.client.clone(), &w.0)
                .get_opt(&w.1)
                .await
                .map_err(Error::Read)?
                .is_some()
        }
        _ => true,
    };
    Ok(Dereferenced {
        wanted,
        bound,
        approved_now,
        wanted_exists,
    })
}

/// The decide phase (pure): the host spec the store follows and the error to show.
pub fn plan(spec: &AgentSpec, read: &Dereferenced) -> Plan {
    let (mut host, input_error) = host_spec(spec);
    let binding = binding_error(pair(&read.wanted), pair(&read.bound), read.wanted_exists);
    if binding.is_some() {
        // Approving a host for another cluster than the one it is bound to would install it
        // where the user no longer wants it: approval stays as it was.
        host.approved = read.approved_now;
    }
    // A field the core would ignore changes how the host is installed: an input error too.
    let unsupported = super::unsupported::input_error(super::unsupported::AGENT_ROWS, spec);
    Plan {
        spec: host,
        spec_error: binding.or(input_error).or(unsupported),
        recheck: (!read.wanted_exists).then_some(std::time::Duration::from_secs(60)),
    }
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

    #[test]
    fn plan_keeps_the_approval_while_the_binding_is_wrong() {
        let spec = AgentSpec {
            approved: true,
            ..Default::default()
        };
        let bound = Some(("ns".to_string(), "c1".to_string()));
        let read = Dereferenced {
            wanted: bound.clone(),
            bound: bound.clone(),
            approved_now: false,
            wanted_exists: true,
        };
        let p = plan(&spec, &read);
        assert!(p.spec.approved);
        assert_eq!((p.spec_error, p.recheck), (None, None));

        let moved = Dereferenced {
            wanted: Some(("ns".into(), "c2".into())),
            ..read.clone()
        };
        let p = plan(&spec, &moved);
        assert!(!p.spec.approved);
        assert!(p.spec_error.unwrap().contains("moving it to ns/c2"));

        let missing = Dereferenced {
            wanted_exists: false,
            ..moved
        };
        let p = plan(&spec, &missing);
        assert!(p.spec_error.unwrap().contains("not found"));
        assert_eq!(p.recheck, Some(std::time::Duration::from_secs(60)));
    }

    #[test]
    fn plan_reports_fields_the_core_ignores_on_spec_synced() {
        let spec = AgentSpec {
            approved: true,
            ignition_endpoint_token_reference: Some(Default::default()),
            ..Default::default()
        };
        let bound = Some(("ns".to_string(), "c1".to_string()));
        let read = Dereferenced {
            wanted: bound.clone(),
            bound,
            approved_now: false,
            wanted_exists: true,
        };
        let p = plan(&spec, &read);
        assert_eq!(
            p.spec_error.as_deref(),
            Some("spec.ignitionEndpointTokenReference is not supported yet")
        );
        // The rest of the spec still applies.
        assert!(p.spec.approved);
    }
}
