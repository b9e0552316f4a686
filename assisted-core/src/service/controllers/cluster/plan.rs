//! The decide phase (pure): what the spec asks of the cluster record, and Hive's part.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;

use super::config::{
    ClusterConfig, cluster_config, fixed_names, ignition_ca_of, image_mode_of, manifests_of,
};
use super::credentials::{Credentials, credentials};
use super::dereference::Dereferenced;
use super::input_error::InputError;
use super::ours::ACI_FINALIZER;
use crate::api::agentclusterinstall::{
    AgentClusterInstall, INSTALL_CONFIG_OVERRIDES_ANNOTATION, LoadBalancerType,
};
use crate::api::hive::ClusterDeployment;
use crate::domain::ClusterStatus;
use crate::service::controllers::finalizer::{FinalizerStep, finalizer_step};
use crate::service::controllers::release_info::ReleaseInfoSource;
use crate::service::controllers::unsupported;
use crate::service::install::ExternalPlatformInput;
use crate::service::store::ClusterSettings;

const PAUSE_ANNOTATION: &str = "hive.openshift.io/reconcile-pause";

/// What the decide phase asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// No AgentClusterInstall yet; its creation reconciles the ClusterDeployment.
    WaitForAci,
    /// The AgentClusterInstall is being deleted: deregister the cluster, release its finalizer.
    Deregister {
        release_finalizer: bool,
    },
    Sync(Box<SyncPlan>),
}

/// The cluster record to follow the spec, and Hive's part once the install runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncPlan {
    pub add_aci_finalizer: bool,
    pub settings: ClusterSettings,
    /// `None` when the spec cannot be applied (`spec_error` says why).
    pub config: Option<ClusterConfig>,
    pub spec_error: Option<String>,
    pub credentials: Option<Credentials>,
    /// The store is not watched: install progress is followed by looking again.
    pub recheck: Duration,
}

/// The pull secret's `.dockerconfigjson`, or the input error to show.
pub(super) fn pull_secret_of(
    cd: &ClusterDeployment,
    secret: Option<&Secret>,
) -> Result<String, InputError> {
    let name = cd
        .spec
        .pull_secret_ref
        .as_ref()
        .map(|r| r.name.clone())
        .filter(|n| !n.is_empty())
        .ok_or(InputError::NoPullSecretRef)?;
    let secret = secret.ok_or_else(|| InputError::PullSecretMissing(name.clone()))?;
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(".dockerconfigjson"))
        .ok_or_else(|| InputError::PullSecretNoKey(name.clone()))?;
    let text = String::from_utf8(bytes.0.clone())
        .map_err(|_| InputError::PullSecretNotUtf8(name.clone()))?;
    // The shape the installer and every registry client need (`{"auths": {...}}`, each entry
    // `auth` or `username`/`password`): caught here, not when the install or an image read fails.
    crate::service::release::PullSecret::parse(&text).map_err(|e| InputError::PullSecretShape {
        name,
        problem: e.to_string(),
    })?;
    Ok(text)
}

/// The decide phase (pure).
pub fn plan(cd: &ClusterDeployment, read: &Dereferenced, release: &dyn ReleaseInfoSource) -> Plan {
    let Some(aci) = &read.aci else {
        return Plan::WaitForAci;
    };
    // The ACI carries its own deregistration finalizer: deleting it (alone, or with its
    // namespace) deregisters the cluster before the object goes.
    if aci.metadata.deletion_timestamp.is_some() {
        return Plan::Deregister {
            release_finalizer: finalizer_step(aci, ACI_FINALIZER) == FinalizerStep::Cleanup,
        };
    }
    let pull = pull_secret_of(cd, read.pull_secret.as_ref());
    let version = release_version(cd, aci, read, release);
    let manifests = user_manifests(read);
    let mirrors = crate::service::controllers::mirror_config::parse(&read.mirror_registry);
    let (config, release_image, spec_error) = match (&pull, &version) {
        (Ok(secret), Ok((v, image))) => {
            let manifests = manifests.as_deref().unwrap_or_default();
            match spec_config(cd, aci, read, v.clone(), image, secret, manifests) {
                Ok(c) => (Some(c), image.clone(), None),
                Err(e) => (None, image.clone(), Some(e)),
            }
        }
        (Err(e), _) | (_, Err(e)) => (None, String::new(), Some(e.clone())),
    };
    // A field set that the core would ignore changes what gets installed: an input error
    // (after the real ones), which also keeps the install from starting. The spec still
    // applies, so validations go on.
    let spec_error = spec_error
        .or_else(|| manifests.as_ref().err().cloned())
        .or_else(|| mirrors.as_ref().err().cloned().map(InputError::from))
        .map(|e| e.to_string())
        .or_else(|| unsupported::input_error(unsupported::ACI_ROWS, &aci.spec));
    let mut settings = settings(cd, aci, pull.unwrap_or_default(), release_image);
    settings.manifests = manifests.unwrap_or_default();
    settings.mirrors = mirrors.ok().flatten();
    let status = read.record.as_ref().map(|r| r.status);
    let recheck = match status {
        Some(ClusterStatus::Installed | ClusterStatus::AddingHosts) => Duration::from_secs(60),
        _ => Duration::from_secs(10),
    };
    Plan::Sync(Box::new(SyncPlan {
        add_aci_finalizer: finalizer_step(aci, ACI_FINALIZER) == FinalizerStep::Add,
        settings,
        config,
        spec_error,
        credentials: read
            .record
            .as_ref()
            .and_then(|rec| credentials(cd, aci, rec, &read.files)),
        recheck,
    }))
}

/// The release's (version, architecture) and image: from the ClusterImageSet, or none for an
/// installed cluster adopted without one.
fn release_version(
    cd: &ClusterDeployment,
    aci: &AgentClusterInstall,
    read: &Dereferenced,
    release: &dyn ReleaseInfoSource,
) -> Result<((String, String), String), InputError> {
    match &aci.spec.image_set_ref {
        Some(r) => match &read.image_set {
            Some(cis) => release
                .version(cis)
                .map(|v| (v, cis.spec.release_image.clone()))
                .map_err(InputError::from),
            None => Err(InputError::ImageSetMissing(r.name.clone())),
        },
        None if cd.spec.installed => Ok((("".into(), "x86_64".into()), String::new())),
        None => Err(InputError::NoImageSetRef),
    }
}

/// The files of the manifests ConfigMaps, in order; a missing one is an input error.
fn user_manifests(read: &Dereferenced) -> Result<Vec<(String, Vec<u8>)>, InputError> {
    read.manifests
        .iter()
        .try_fold(Vec::new(), |mut out, (name, cm)| {
            let cm = cm
                .as_ref()
                .ok_or_else(|| InputError::ManifestsMissing(name.clone()))?;
            out.extend(manifests_of(cm)?);
            Ok(out)
        })
}

/// The cluster config, completed with what the read phase found (ignition CA, image mode,
/// release image) and checked against the record's fixed names.
fn spec_config(
    cd: &ClusterDeployment,
    aci: &AgentClusterInstall,
    read: &Dereferenced,
    version: (String, String),
    release_image: &str,
    pull_secret: &str,
    manifests: &[(String, Vec<u8>)],
) -> Result<ClusterConfig, InputError> {
    let mut c = cluster_config(cd, aci, version)?;
    c.ignition_endpoint.ca_certificate = ignition_ca_of(aci, read.ignition_ca.as_ref())?;
    fixed_names(read.record.as_ref(), &c)?;
    c.image_mode = image_mode_of(manifests, &c.openshift_version, pull_secret, aci);
    c.release_image = release_image.to_string();
    Ok(c)
}

/// The cluster record's settings from the spec (manifests and mirrors are added by `plan`).
fn settings(
    cd: &ClusterDeployment,
    aci: &AgentClusterInstall,
    pull_secret: String,
    release_image: String,
) -> ClusterSettings {
    ClusterSettings {
        namespace: cd.namespace().unwrap_or_default(),
        cluster_deployment: cd.name_any(),
        agent_cluster_install: aci.name_any(),
        pull_secret,
        ssh_public_key: aci.spec.ssh_public_key.clone().unwrap_or_default(),
        install_config_overrides: aci
            .annotations()
            .get(INSTALL_CONFIG_OVERRIDES_ANNOTATION)
            .cloned(),
        hold: aci.spec.hold_installation
            || cd
                .annotations()
                .get(PAUSE_ANNOTATION)
                .is_some_and(|v| v == "true"),
        unsynced_agents: 0,
        release_image,
        manifests: Vec::new(),
        proxy: aci.spec.proxy.as_ref().map(|p| crate::domain::Proxy {
            http_proxy: p.http_proxy.clone(),
            https_proxy: p.https_proxy.clone(),
            no_proxy: p.no_proxy.clone(),
        }),
        user_managed_load_balancer: aci
            .spec
            .load_balancer
            .as_ref()
            .is_some_and(|lb| lb.type_ == LoadBalancerType::UserManaged),
        external_platform: aci
            .spec
            .external
            .as_ref()
            .map(|e| ExternalPlatformInput {
                platform_name: e.platform_name.clone(),
                cloud_controller_manager: e.cloud_controller_manager.clone(),
            })
            .unwrap_or_default(),
        unsupported_fields: unsupported::unsupported(
            unsupported::CLUSTER_DEPLOYMENT_ROWS,
            &cd.spec,
        ),
        mirrors: None,
    }
}
