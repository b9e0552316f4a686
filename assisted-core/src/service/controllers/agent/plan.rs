//! The decide phase (pure): the host spec the store follows and the error to show.

use super::dereference::Dereferenced;
use crate::api::agent::{AgentSpec, HostRole as SpecRole};
use crate::domain::HostRole;
use crate::service::controllers::unsupported;
use crate::service::install::parse_ignition_override;
use crate::service::store::HostSpec;

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

/// What the store should follow, and when to look again.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub spec: HostSpec,
    /// Shown as SpecSynced=False on the Agent.
    pub spec_error: Option<String>,
    /// A missing ClusterDeployment may appear; it is not watched from here.
    pub recheck: Option<std::time::Duration>,
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
    let unsupported = unsupported::input_error(unsupported::AGENT_ROWS, spec);
    Plan {
        spec: host,
        spec_error: binding.or(input_error).or(unsupported),
        recheck: (!read.wanted_exists).then_some(std::time::Duration::from_secs(60)),
    }
}
