//! InfraEnv controller: builds the discovery ignition from the InfraEnv, its pull secret and the
//! NMStateConfigs it selects, publishes the image URLs, and registers the infra-env with the
//! REST API. Any content change moves the ISO URL and `createdTime`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use manager::controller::{PlannedEvent, set_finalizer};

use super::conditions::{Cond, openshift_conditions};
use super::unsupported;
use super::{Context, Error, FinalizerStep, finalizer_step};
use crate::api::infraenv::{
    BootArtifacts, INFRAENV_NAME_LABEL, ImageType, InfraEnv, InfraEnvDebugInfo, InfraEnvStatus,
    IpxeScriptType, KernelArgumentOperation,
};
use crate::api::nmstateconfig::NMStateConfig;
use crate::service::auth::{Claims, Keys};
use crate::service::images::{
    DiscoveryIgnitionParams, MacInterface, ProxySettings, StaticNetworkConfig, discovery_ignition,
    ipxe_boot_order_control_script, ipxe_script, minimal_initrd,
};
use crate::service::store::InfraEnvRecord;
use crate::service::tls::{AgentTrust, ServingCertificate, agent_trust};
use crate::service::urls::ServiceUrls;

pub const INFRAENV_FINALIZER: &str = "infraenv.agent-install.openshift.io/ai-deprovision";
const STATUS_MANAGER: &str = "assisted-core-infraenv";
/// OpenShift version of images for infra-envs without a cluster or `osImageVersion`.
pub const DEFAULT_OS_VERSION: &str = "4.20";

/// The URLs of one infra-env's image revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUrls {
    pub iso: String,
    pub boot: BootArtifacts,
    pub static_network: String,
    /// `status.debugInfo.eventsURL`: upstream's events URL, which carries the infra-env's
    /// token (CAPOA reads the token and id from it).
    pub events: String,
}

/// What one image revision is: OS version, architecture, `full`/`minimal`, content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRevision<'a> {
    pub version: &'a str,
    pub arch: &'a str,
    pub image_type: &'a str,
    pub rev: &'a str,
    pub ipxe_boot_order: bool,
}

/// Image and file URLs; `rev` (a content hash) makes every content change a new URL.
pub fn image_urls(urls: &ServiceUrls, id: &str, token: &str, r: &ImageRevision) -> ImageUrls {
    let ImageRevision {
        version,
        arch,
        image_type,
        rev,
        ipxe_boot_order,
    } = *r;
    let files = |name: &str| {
        format!(
            "{}/api/assisted-install/v2/infra-envs/{id}/downloads/files?file_name={name}&api_key={token}",
            urls.agent_api
        )
    };
    let mut ipxe = files("ipxe-script");
    if ipxe_boot_order {
        ipxe.push_str("&ipxe_script_type=boot-order-control");
    }
    ImageUrls {
        iso: format!(
            "{}/byapikey/{token}/{version}/{arch}/{image_type}.iso?rev={rev}",
            urls.images
        ),
        boot: BootArtifacts {
            initrd: format!(
                "{}/images/{id}/pxe-initrd?api_key={token}&arch={arch}&version={version}&rev={rev}",
                urls.images
            ),
            rootfs: format!(
                "{}/boot-artifacts/rootfs?arch={arch}&version={version}",
                urls.images
            ),
            kernel: format!(
                "{}/boot-artifacts/kernel?arch={arch}&version={version}",
                urls.images
            ),
            ipxe_script: ipxe,
            discovery_ignition_url: files("discovery.ign"),
        },
        static_network: files("static-network-config"),
        events: format!(
            "{}/api/assisted-install/v2/events?api_key={token}&infra_env_id={id}",
            urls.agent_api
        ),
    }
}

/// The token in the InfraEnv's current ISO URL, if it is still a valid token for this
/// infra-env. ES256 signatures are randomised, so reusing it keeps the URL stable across
/// reconciles and restarts: a new URL makes Metal3 re-provision the hosts.
pub fn current_token(ie: &InfraEnv, keys: &Keys, id: &str) -> Option<String> {
    let url = ie.status.as_ref()?.iso_download_url.as_deref()?;
    let token = url.split("/byapikey/").nth(1)?.split('/').next()?;
    let claims = keys.verify(token).ok()?;
    (claims.infra_env_id.as_deref() == Some(id)).then(|| token.to_string())
}

/// Short content hash (hex) of everything the image depends on.
pub fn content_rev(parts: &[&[u8]]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for p in parts {
        ctx.update(&(p.len() as u64).to_le_bytes());
        ctx.update(p);
    }
    ctx.finish().as_ref()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// NMStateConfig → static network entry (the YAML of `spec.config` and the MAC map).
pub fn static_network_of(nm: &NMStateConfig) -> StaticNetworkConfig {
    StaticNetworkConfig {
        network_yaml: nm
            .spec
            .config
            .as_ref()
            .and_then(|c| serde_yaml::to_string(c).ok())
            .unwrap_or_default(),
        mac_interface_map: nm
            .spec
            .interfaces
            .iter()
            .map(|i| MacInterface {
                mac_address: i.mac_address.clone(),
                logical_nic_name: i.name.clone(),
            })
            .collect(),
    }
}

/// The upstream `static_network_config` JSON list.
fn static_network_json(list: &[StaticNetworkConfig]) -> String {
    let v: Vec<serde_json::Value> = list
        .iter()
        .map(|s| {
            serde_json::json!({
                "network_yaml": s.network_yaml,
                "mac_interface_map": s.mac_interface_map.iter().map(|m| serde_json::json!({
                    "mac_address": m.mac_address, "logical_nic_name": m.logical_nic_name,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string(&v).unwrap_or_else(|_| "[]".into())
}

fn selector_string(sel: &LabelSelector) -> Option<String> {
    let labels = sel.match_labels.as_ref().filter(|m| !m.is_empty())?;
    Some(
        labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    )
}

pub async fn reconcile(ie: Arc<InfraEnv>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.metrics.infraenv.reconciled();
    match finalizer_step(ie.as_ref(), INFRAENV_FINALIZER) {
        FinalizerStep::Add => {
            set_finalizer(
                &ctx.client,
                ie.as_ref(),
                STATUS_MANAGER,
                INFRAENV_FINALIZER,
                true,
            )
            .await?
        }
        FinalizerStep::Proceed => {}
        FinalizerStep::Cleanup => {
            ctx.store.remove_infra_env(&ie.uid().unwrap_or_default());
            set_finalizer(
                &ctx.client,
                ie.as_ref(),
                STATUS_MANAGER,
                INFRAENV_FINALIZER,
                false,
            )
            .await?;
            return Ok(Action::await_change());
        }
        FinalizerStep::Gone => return Ok(Action::await_change()),
    }
    sync(&ie, &ctx).await
}

fn previous_reason(st: &InfraEnvStatus) -> Option<&str> {
    st.conditions
        .iter()
        .find(|c| c.type_ == "ImageCreated")
        .and_then(|c| c.reason.as_deref())
}

/// Why an InfraEnv has no image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// ImageCreated=False ImageCreationError: the InfraEnv or what it references is invalid.
    Error(String),
    /// ImageCreated=Unknown MissingClusterDeployment: the bound cluster is not there (yet).
    MissingCluster(String),
    /// ImageCreated=Unknown ServingCertificatePending: the agent API is https and cert-manager
    /// has not issued its certificate yet, so the CA the image must carry is not known.
    CertificatePending,
}

/// The cluster an InfraEnv's `clusterRef` names, as far as it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundCluster {
    /// No ClusterDeployment of that name.
    Missing { namespace: String, name: String },
    /// The ClusterDeployment exists but its cluster is not in the store yet.
    Unregistered { namespace: String, name: String },
    /// The cluster record: ClusterDeployment uid and name, OpenShift version.
    Registered {
        id: String,
        name: String,
        version: String,
    },
}

/// Everything one InfraEnv reconcile reads (the only phase with client calls).
#[derive(Debug, Clone)]
pub struct Dereferenced {
    /// The pull secret, when it exists.
    pub pull_secret: Option<Secret>,
    /// `None` without `clusterRef`.
    pub cluster: Option<BoundCluster>,
    /// The NMStateConfigs the selector selects, by name.
    pub nmstate_configs: Vec<NMStateConfig>,
    /// The agent token: the one already published (URLs stay stable) or a new one.
    pub token: String,
    /// How the agent verifies the agent API's certificate.
    pub agent_trust: AgentTrust,
    /// The ConfigMap `mirrorRegistryRef` names.
    pub mirror_registry: super::mirror_config::MirrorRead,
}

/// The service-wide inputs of every image: where agents reach the core, what they run and
/// the base live ISOs images are built on (`--os-images`).
#[derive(Debug, Clone, Default)]
pub struct ImageSettings {
    pub urls: ServiceUrls,
    /// The discovery agent image the ignition runs.
    pub agent_image: String,
    pub os_images: Vec<crate::service::images::OsImage>,
    /// The certificate the https listeners serve (`None`: every URL is http).
    pub serving: Option<Arc<ServingCertificate>>,
}

/// Read, decide, apply, status (`docs/architecture.md`, "How to add a controller").
pub(crate) async fn sync(ie: &InfraEnv, ctx: &Context) -> Result<Action, Error> {
    let now = Timestamp::now();
    let read = dereference(ie, ctx).await?;
    let outcome = decide(ie, &read, &ctx.images);
    let (status, event) = status(ie, &outcome, now);
    if let Ok((rec, _)) = &outcome {
        ctx.store.upsert_infra_env(rec.clone());
    }
    if let Some(event) = &event {
        let on = super::events::reference(
            "agent-install.openshift.io/v1beta1",
            "InfraEnv",
            &ie.namespace().unwrap_or_default(),
            &ie.name_any(),
        );
        ctx.events.planned(&on, event).await;
    }
    if ie.status.as_ref() != Some(&status) {
        write_status(ie, ctx, &status).await?;
    }
    Ok(match outcome {
        Ok(_) => Action::requeue(Duration::from_secs(300)),
        // The store is not watched: look again until the cluster registers.
        Err(Problem::MissingCluster(_)) => Action::requeue(Duration::from_secs(10)),
        // cert-manager usually issues within seconds of the core's start.
        Err(Problem::CertificatePending) => Action::requeue(Duration::from_secs(3)),
        // Invalid input: the InfraEnv, its Secret, NMStateConfigs and ClusterDeployments are
        // watched, so a fix reconciles it again; the mirror ConfigMap is not: looked at again
        // every minute.
        Err(Problem::Error(_)) if ie.spec.mirror_registry_ref.is_some() => {
            Action::requeue(Duration::from_secs(60))
        }
        Err(Problem::Error(_)) => Action::await_change(),
    })
}

/// The read phase: the pull secret, the bound cluster, the selected NMStateConfigs, the token.
async fn dereference(ie: &InfraEnv, ctx: &Context) -> Result<Dereferenced, Error> {
    let ns = ie.namespace().unwrap_or_default();
    let id = ie.uid().unwrap_or_default();
    let spec = &ie.spec;
    let pull_secret = ctx
        .secret(&ns, &spec.pull_secret_ref.name)
        .await
        .map_err(Error::Read)?;
    let cluster = match &spec.cluster_ref {
        Some(r) => {
            let cd = ctx
                .cluster_deployment(&r.namespace, &r.name)
                .await
                .map_err(Error::Read)?;
            let (namespace, name) = (r.namespace.clone(), r.name.clone());
            Some(match cd {
                None => BoundCluster::Missing { namespace, name },
                Some(cd) => {
                    let id = cd.uid().unwrap_or_default();
                    let version = ctx.store.view(|st| {
                        st.clusters
                            .get(&id)
                            .map(|c| c.snapshot.openshift_version.clone())
                    });
                    match version.filter(|v| !v.is_empty()) {
                        Some(version) => BoundCluster::Registered { id, name, version },
                        None => BoundCluster::Unregistered { namespace, name },
                    }
                }
            })
        }
        None => None,
    };
    // An empty selector selects none.
    let mut nmstate_configs = match spec
        .nm_state_config_label_selector
        .as_ref()
        .and_then(selector_string)
    {
        Some(sel) => {
            Api::<NMStateConfig>::namespaced(ctx.client.clone(), &ns)
                .list(&ListParams::default().labels(&sel))
                .await
                .map_err(Error::Read)?
                .items
        }
        None => Vec::new(),
    };
    nmstate_configs.sort_by_key(|n| n.name_any());
    // The published token, else the one this core already signed for the InfraEnv (a
    // reconcile may see the object before its own status write arrives), else a new one.
    let token = current_token(ie, &ctx.keys, &id)
        .or_else(|| {
            ctx.store
                .infra_env_record(&id)
                .ok()
                .map(|r| r.token)
                .filter(|t| !t.is_empty())
        })
        .unwrap_or_else(|| ctx.keys.sign(&Claims::infra_env(&id)));
    let mirror_registry =
        super::mirror_config::read(ctx, spec.mirror_registry_ref.as_ref(), &ns).await?;
    Ok(Dereferenced {
        pull_secret,
        cluster,
        nmstate_configs,
        token,
        agent_trust: agent_trust(&ctx.images.urls.agent_api, ctx.images.serving.as_deref()),
        mirror_registry,
    })
}

/// The decide phase (pure): the infra-env record the REST API serves and the image URLs, or
/// why there is no image.
pub fn decide(
    ie: &InfraEnv,
    read: &Dereferenced,
    settings: &ImageSettings,
) -> Result<(InfraEnvRecord, ImageUrls), Problem> {
    let ns = ie.namespace().unwrap_or_default();
    let id = ie.uid().unwrap_or_default();
    let spec = &ie.spec;
    let ps_name = &spec.pull_secret_ref.name;
    let pull_secret = read
        .pull_secret
        .as_ref()
        .and_then(|s| s.data.as_ref()?.get(".dockerconfigjson").cloned())
        .ok_or_else(|| {
            Problem::Error(format!(
                "pull secret {ps_name} not found or has no .dockerconfigjson key"
            ))
        })?;
    let pull_secret = String::from_utf8(pull_secret.0)
        .map_err(|_| Problem::Error(format!("pull secret {ps_name} is not UTF-8")))?;

    let (cluster_id, cd_name, cluster_version) = match &read.cluster {
        Some(BoundCluster::Missing { namespace, name }) => {
            return Err(Problem::MissingCluster(format!(
                "ClusterDeployment {namespace}/{name} not found"
            )));
        }
        Some(BoundCluster::Unregistered { namespace, name }) => {
            return Err(Problem::MissingCluster(format!(
                "ClusterDeployment {namespace}/{name} is not registered yet"
            )));
        }
        Some(BoundCluster::Registered { id, name, version }) => {
            (Some(id.clone()), Some(name.clone()), Some(version.clone()))
        }
        None => (None, None, None),
    };
    let version = cluster_version
        .or_else(|| spec.os_image_version.clone())
        .unwrap_or_else(|| DEFAULT_OS_VERSION.into());
    let arch = spec
        .cpu_architecture
        .map(|a| {
            serde_json::to_value(a)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        })
        .unwrap_or_else(|| "x86_64".into());
    // No base ISO, no image: a URL that answers 404 would send hosts after nothing.
    if crate::service::images::select(&settings.os_images, &version, &arch).is_none() {
        return Err(Problem::Error(format!(
            "no base OS image for OpenShift {version} on {arch}: assisted-core was started \
             without one; list the RHCOS live ISOs in --os-images \
             (OPENSHIFT_ASSISTED_CORE_OS_IMAGES when installed with clusterctl)"
        )));
    }
    let static_network: Vec<StaticNetworkConfig> =
        read.nmstate_configs.iter().map(static_network_of).collect();

    if let Some(p) = &spec.proxy {
        crate::domain::formats::check_proxy(p.http_proxy.as_deref(), p.https_proxy.as_deref())
            .map_err(|e| Problem::Error(e.to_string()))?;
    }
    let proxy = spec
        .proxy
        .as_ref()
        .map(|p| ProxySettings {
            http_proxy: p.http_proxy.clone(),
            https_proxy: p.https_proxy.clone(),
            no_proxy: p.no_proxy.clone(),
        })
        .unwrap_or_default();
    let mut ntp = spec.additional_ntp_sources.clone();
    ntp.extend(spec.ntp_sources.iter().cloned());
    let kernel_arguments: Vec<String> = spec
        .kernel_arguments
        .iter()
        .filter(|k| matches!(k.operation, None | Some(KernelArgumentOperation::Append)))
        .map(|k| k.value.clone())
        .collect();
    let token = read.token.clone();
    let service_ca_bundle = match &read.agent_trust {
        AgentTrust::Pending => return Err(Problem::CertificatePending),
        AgentTrust::Plain => None,
        AgentTrust::Verify(ca) => ca.clone(),
    };
    // The schema keeps it at 0 or more; anything else waits not at all.
    let discovery_delay = spec
        .network_discovery_delay_seconds
        .and_then(|d| u64::try_from(d).ok())
        .unwrap_or(0);
    // The mirrors the discovery agent pulls through (its registries.conf and CA).
    let mirror_files = super::mirror_config::parse(&read.mirror_registry)
        .map_err(Problem::Error)?
        .map(|c| crate::domain::mirrors::discovery_files(&c))
        .unwrap_or_default();
    let params = DiscoveryIgnitionParams {
        service_base_url: settings.urls.agent_api.clone(),
        infra_env_id: id.clone(),
        agent_token: token.clone(),
        agent_image: settings.agent_image.clone(),
        insecure: settings.urls.agent_api.starts_with("http://"),
        service_ca_bundle,
        pull_secret,
        ssh_authorized_key: spec.ssh_authorized_key.clone().unwrap_or_default(),
        ntp_sources: ntp.clone(),
        proxy: proxy.clone(),
        additional_trust_bundle: spec.additional_trust_bundle.clone(),
        static_network: static_network.clone(),
        network_discovery_delay_seconds: discovery_delay,
        ignition_config_override: spec
            .ignition_config_override
            .clone()
            .filter(|o| !o.is_empty()),
        kernel_arguments: kernel_arguments.clone(),
        openshift_version: Some(version.clone()),
        mirror_files,
    };
    let ignition = discovery_ignition(&params).map_err(|e| Problem::Error(e.to_string()))?;
    let initrd = minimal_initrd(&static_network, &proxy, discovery_delay)
        .map_err(|e| Problem::Error(e.to_string()))?;
    let image_type = match spec.image_type {
        Some(ImageType::FullIso) => "full",
        // Upstream's kube-API default is the minimal ISO; we serve both from one base ISO.
        Some(ImageType::MinimalIso) | None => "minimal",
    };
    let rev = content_rev(&[
        ignition.as_bytes(),
        initrd.as_deref().unwrap_or_default(),
        image_type.as_bytes(),
        version.as_bytes(),
        arch.as_bytes(),
        kernel_arguments.join(" ").as_bytes(),
    ]);
    let boot_order = spec.ipxe_script_type == Some(IpxeScriptType::BootOrderControl);
    let urls = image_urls(
        &settings.urls,
        &id,
        &token,
        &ImageRevision {
            version: &version,
            arch: &arch,
            image_type,
            rev: &rev,
            ipxe_boot_order: boot_order,
        },
    );
    let script = ipxe_script(
        &urls.boot.initrd,
        &urls.boot.kernel,
        &urls.boot.rootfs,
        &kernel_arguments,
    );
    let redirect_script = ipxe_boot_order_control_script(&urls.boot.ipxe_script);
    let rec = InfraEnvRecord {
        id,
        namespace: ns,
        name: ie.name_any(),
        cluster_id,
        cluster_deployment_name: cd_name,
        agent_labels: spec.agent_labels.clone(),
        auto_approve: spec.agent_approval.as_ref().is_some_and(|a| a.auto_approve),
        token,
        discovery_ignition: ignition.into(),
        static_network_config: static_network_json(&static_network),
        ipxe_script: script,
        ipxe_redirect_script: redirect_script,
        kernel_arguments,
        ntp_sources: ntp_names(&ntp),
        additional_trust_bundle: spec
            .additional_trust_bundle
            .clone()
            .filter(|b| !b.trim().is_empty()),
        minimal_initrd: initrd.map(Into::into),
        rootfs_url: urls.boot.rootfs.clone(),
        cpu_architecture: arch,
        openshift_version: version,
    };
    Ok((rec, urls))
}

/// One name or address per entry: an InfraEnv entry may list several, comma-separated (as the
/// discovery image's NTP unit reads them).
fn ntp_names(sources: &[String]) -> Vec<String> {
    sources
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The status phase (pure): the InfraEnv's status for `outcome`, and the event to publish when
/// the image URL moved or an error first appeared.
pub fn status(
    ie: &InfraEnv,
    outcome: &Result<(InfraEnvRecord, ImageUrls), Problem>,
    now: Timestamp,
) -> (InfraEnvStatus, Option<PlannedEvent>) {
    let previous = ie.status.clone().unwrap_or_default();
    let mut status = InfraEnvStatus {
        agent_label_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(
                INFRAENV_NAME_LABEL.into(),
                ie.name_any(),
            )])),
            match_expressions: None,
        }),
        ..Default::default()
    };
    let cond = match outcome {
        Ok((_, urls)) => {
            status.iso_download_url = Some(urls.iso.clone());
            status.created_time = if previous.iso_download_url.as_deref() == Some(urls.iso.as_str())
            {
                previous.created_time.clone()
            } else {
                Some(manager::conditions::api_time(now))
            };
            status.boot_artifacts = urls.boot.clone();
            status.debug_info = InfraEnvDebugInfo {
                events_url: urls.events.clone(),
                static_network_download_url: urls.static_network.clone(),
            };
            Cond {
                type_: "ImageCreated",
                status: "True",
                reason: "InfraEnvAvailable",
                message: "InfraEnv is available: Image has been created".into(),
            }
        }
        Err(Problem::Error(e)) => Cond {
            type_: "ImageCreated",
            status: "False",
            reason: "ImageCreationError",
            message: format!("Failed to create image: {e}"),
        },
        Err(Problem::MissingCluster(e)) => Cond {
            type_: "ImageCreated",
            status: "Unknown",
            reason: "MissingClusterDeployment",
            message: format!("ClusterDeployment is missing: {e}"),
        },
        Err(Problem::CertificatePending) => Cond {
            type_: "ImageCreated",
            status: "Unknown",
            reason: "ServingCertificatePending",
            message: "Waiting for cert-manager to issue the serving certificate of the https \
                      agent API: the image carries its CA, for hosts to verify the service"
                .into(),
        },
    };
    let mut conds = vec![cond];
    conds.extend(unsupported::fields_supported(&unsupported::unsupported(
        unsupported::INFRAENV_ROWS,
        &ie.spec,
    )));
    status.conditions = openshift_conditions(&conds, &previous.conditions, now);
    let event = match outcome {
        Ok(_) if previous.iso_download_url != status.iso_download_url => Some(PlannedEvent {
            warning: false,
            reason: "ImageCreated",
            note: "The discovery image was (re)created; its URL changed".into(),
        }),
        Err(Problem::Error(e)) if previous_reason(&previous) != Some("ImageCreationError") => {
            Some(PlannedEvent {
                warning: true,
                reason: "ImageCreationError",
                note: format!("Failed to create image: {e}"),
            })
        }
        _ => None,
    };
    (status, event)
}

async fn write_status(ie: &InfraEnv, ctx: &Context, status: &InfraEnvStatus) -> Result<(), Error> {
    let api: Api<InfraEnv> =
        Api::namespaced(ctx.client.clone(), &ie.namespace().unwrap_or_default());
    let body = serde_json::json!({
        "apiVersion": InfraEnv::api_version(&()),
        "kind": InfraEnv::kind(&()),
        "status": status,
    });
    api.patch_status(
        &ie.name_any(),
        &PatchParams::apply(STATUS_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await
    .map_err(Error::Status)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn urls_carry_token_and_revision() {
        let u = ServiceUrls {
            agent_api: "http://10.0.0.1:8090".into(),
            images: "http://10.0.0.1:8091".into(),
        };
        let rev = |rev, ipxe_boot_order| ImageRevision {
            version: "4.17",
            arch: "x86_64",
            image_type: "minimal",
            rev,
            ipxe_boot_order,
        };
        let a = image_urls(&u, "ie1", "tok", &rev("abc", false));
        assert_eq!(
            a.iso,
            "http://10.0.0.1:8091/byapikey/tok/4.17/x86_64/minimal.iso?rev=abc"
        );
        assert!(
            a.boot
                .ipxe_script
                .contains("file_name=ipxe-script&api_key=tok")
        );
        assert!(
            a.boot
                .discovery_ignition_url
                .contains("infra-envs/ie1/downloads/files?file_name=discovery.ign")
        );
        let b = image_urls(&u, "ie1", "tok", &rev("abd", true));
        assert_ne!(a.iso, b.iso);
        assert!(
            b.boot
                .ipxe_script
                .ends_with("&ipxe_script_type=boot-order-control")
        );
    }

    #[test]
    fn the_current_token_is_reused_only_for_the_same_infra_env() {
        let keys = Keys::generate().unwrap();
        let token = keys.sign(&Claims::infra_env("ie1"));
        let mut ie = InfraEnv::new("a", Default::default());
        ie.status = Some(InfraEnvStatus {
            iso_download_url: Some(format!(
                "http://x/byapikey/{token}/4.17/x86_64/full.iso?rev=1"
            )),
            ..Default::default()
        });
        assert_eq!(current_token(&ie, &keys, "ie1"), Some(token));
        assert_eq!(current_token(&ie, &keys, "ie2"), None);
        let other = Keys::generate().unwrap();
        assert_eq!(current_token(&ie, &other, "ie1"), None);
    }

    #[test]
    fn revision_changes_with_any_part() {
        let a = content_rev(&[b"x", b"y"]);
        assert_eq!(a, content_rev(&[b"x", b"y"]));
        assert_ne!(a, content_rev(&[b"xy", b""]));
        assert_eq!(a.len(), 12);
    }

    fn decide_fixture() -> (InfraEnv, Dereferenced, ImageSettings) {
        let mut ie = InfraEnv::new("ie", Default::default());
        ie.metadata.namespace = Some("ns".into());
        ie.metadata.uid = Some("ie-uid".into());
        ie.spec.pull_secret_ref.name = "pull".into();
        let pull = Secret {
            data: Some(BTreeMap::from([(
                ".dockerconfigjson".into(),
                k8s_openapi::ByteString(b"{\"auths\":{}}".to_vec()),
            )])),
            ..Default::default()
        };
        let read = Dereferenced {
            pull_secret: Some(pull),
            cluster: Some(BoundCluster::Registered {
                id: "cd-uid".into(),
                name: "c1".into(),
                version: "4.17.3".into(),
            }),
            nmstate_configs: Vec::new(),
            token: "tok".into(),
            agent_trust: AgentTrust::Plain,
            mirror_registry: None,
        };
        let settings = ImageSettings {
            urls: ServiceUrls {
                agent_api: "http://core:8090".into(),
                images: "http://core:8091".into(),
            },
            agent_image: "quay.io/edge-infrastructure/assisted-installer-agent:latest".into(),
            os_images: vec![crate::service::images::OsImage {
                openshift_version: "4.17".into(),
                cpu_architecture: "x86_64".into(),
                url: "file:///base.iso".into(),
                version: "417.94.202410090854-0".into(),
            }],
            serving: None,
        };
        (ie, read, settings)
    }

    #[test]
    fn no_base_iso_no_url_but_a_condition_saying_what_to_configure() {
        let (ie, read, mut settings) = decide_fixture();
        settings.os_images.clear();
        let Err(Problem::Error(why)) = decide(&ie, &read, &settings) else {
            panic!("an image without a base ISO")
        };
        assert!(
            why.contains("no base OS image for OpenShift 4.17.3 on x86_64")
                && why.contains("--os-images"),
            "{why}"
        );
        let (status, _) = status(&ie, &decide(&ie, &read, &settings), Timestamp::UNIX_EPOCH);
        assert!(status.iso_download_url.is_none());
        // Another architecture has none either.
        let (mut arm, read, settings) = decide_fixture();
        arm.spec.cpu_architecture =
            Some(serde_json::from_value(serde_json::json!("arm64")).unwrap());
        assert!(decide(&arm, &read, &settings).is_err());
    }

    #[test]
    fn an_https_agent_api_waits_for_its_certificate_then_the_image_carries_the_ca() {
        let (ie, mut read, mut settings) = decide_fixture();
        settings.urls.agent_api = "https://10.244.0.1:30890".into();
        read.agent_trust = AgentTrust::Pending;
        assert_eq!(
            decide(&ie, &read, &settings).unwrap_err(),
            Problem::CertificatePending
        );
        let (status, event) = status(&ie, &decide(&ie, &read, &settings), Timestamp::UNIX_EPOCH);
        let cond = &status.conditions[0];
        assert_eq!(
            (
                cond.type_.as_str(),
                cond.status.as_str(),
                cond.reason.as_deref()
            ),
            ("ImageCreated", "Unknown", Some("ServingCertificatePending"))
        );
        assert!(status.iso_download_url.is_none() && event.is_none());

        read.agent_trust = AgentTrust::Verify(Some("-----BEGIN CERTIFICATE-----\nCA\n".into()));
        let (rec, urls) = decide(&ie, &read, &settings).unwrap();
        let boot =
            crate::service::images::parse_discovery_ignition(&rec.discovery_ignition).unwrap();
        assert_eq!(boot.service_url, "https://10.244.0.1:30890");
        assert!(boot.cacert_path.is_some());
        assert!(!boot.insecure);
        // Another CA is another image.
        read.agent_trust = AgentTrust::Verify(Some("other".into()));
        assert_ne!(decide(&ie, &read, &settings).unwrap().1.iso, urls.iso);
    }

    #[test]
    fn the_mirror_config_map_reaches_the_discovery_ignition_or_names_its_error() {
        let (ie, mut read, settings) = decide_fixture();
        let before = decide(&ie, &read, &settings).unwrap().1.iso;
        let cm = ConfigMap {
            data: Some(BTreeMap::from([(
                "registries.conf".to_string(),
                "[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\nlocation = \"mirror.example.com/ocp\"\n".to_string(),
            )])),
            ..ConfigMap::default()
        };
        read.mirror_registry = Some(("mirrors".into(), Some(cm)));
        let (rec, urls) = decide(&ie, &read, &settings).unwrap();
        let ign = rec.discovery_ignition.to_string();
        assert!(ign.contains("/etc/containers/registries.conf"), "{ign}");
        // A new image: its URL moves.
        assert_ne!(urls.iso, before);

        read.mirror_registry = Some(("mirrors".into(), None));
        let Err(Problem::Error(why)) = decide(&ie, &read, &settings) else {
            panic!("a missing ConfigMap is an error");
        };
        assert_eq!(
            why,
            "mirror registry ConfigMap mirrors (spec.mirrorRegistryRef) not found"
        );
    }

    #[test]
    fn decide_builds_the_record_with_the_given_token() {
        let (ie, read, settings) = decide_fixture();
        let (rec, urls) = decide(&ie, &read, &settings).unwrap();
        assert_eq!(rec.token, "tok");
        assert_eq!(rec.cluster_id.as_deref(), Some("cd-uid"));
        assert_eq!(rec.openshift_version, "4.17.3");
        assert!(
            urls.iso
                .contains("/byapikey/tok/4.17.3/x86_64/minimal.iso?rev=")
        );
        // Same inputs, same URL: nothing moves between reconciles.
        assert_eq!(decide(&ie, &read, &settings).unwrap().1, urls);
    }

    #[test]
    fn the_record_carries_the_ntp_sources_and_kernel_arguments_the_image_gets() {
        let (mut ie, read, settings) = decide_fixture();
        ie.spec.additional_ntp_sources = vec!["clock.example.com, 10.0.0.1".into()];
        ie.spec.ntp_sources = vec!["pool.ntp.org".into()];
        ie.spec.kernel_arguments = serde_json::from_value(serde_json::json!([
            {"operation": "append", "value": "console=ttyS0"},
            {"value": "rd.neednet=1"},
        ]))
        .unwrap();
        let (rec, _) = decide(&ie, &read, &settings).unwrap();
        assert_eq!(
            rec.ntp_sources,
            ["clock.example.com", "10.0.0.1", "pool.ntp.org"]
        );
        assert_eq!(rec.kernel_arguments, ["console=ttyS0", "rd.neednet=1"]);
    }

    #[test]
    fn decide_names_what_is_missing() {
        let (ie, mut read, settings) = decide_fixture();
        read.pull_secret = None;
        assert!(matches!(
            decide(&ie, &read, &settings),
            Err(Problem::Error(e)) if e.contains("pull secret pull")
        ));
        let (ie, mut read, settings) = decide_fixture();
        read.cluster = Some(BoundCluster::Unregistered {
            namespace: "ns".into(),
            name: "c1".into(),
        });
        assert_eq!(
            decide(&ie, &read, &settings).unwrap_err(),
            Problem::MissingCluster("ClusterDeployment ns/c1 is not registered yet".into())
        );
    }

    #[test]
    fn status_announces_a_new_url_and_a_first_error_once() {
        let (mut ie, read, settings) = decide_fixture();
        let now = Timestamp::from_second(1_000).unwrap();
        let outcome = decide(&ie, &read, &settings);
        let (st, event) = status(&ie, &outcome, now);
        assert_eq!(event.unwrap().reason, "ImageCreated");
        assert_eq!(st.created_time, Some(Time(now)));
        ie.status = Some(st.clone());
        let later = Timestamp::from_second(2_000).unwrap();
        let (again, event) = status(&ie, &outcome, later);
        assert_eq!(event, None);
        assert_eq!(again.created_time, Some(Time(now)));

        let failed = Err(Problem::Error("bad proxy".into()));
        let (st, event) = status(&ie, &failed, later);
        assert!(event.unwrap().warning);
        ie.status = Some(st);
        assert_eq!(status(&ie, &failed, later).1, None);
    }

    #[test]
    fn a_field_not_supported_yet_gets_its_own_condition_and_the_image_stays() {
        let (mut ie, read, settings) = decide_fixture();
        let now = Timestamp::from_second(1_000).unwrap();
        let outcome = decide(&ie, &read, &settings);
        let (st, _) = status(&ie, &outcome, now);
        assert_eq!(
            st.conditions.len(),
            1,
            "only ImageCreated when nothing is unsupported"
        );

        ie.spec.approved_mac_address_config_map_label_selector = Some(Default::default());
        let outcome = decide(&ie, &read, &settings);
        let (st, _) = status(&ie, &outcome, now);
        let types: Vec<&str> = st.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["ImageCreated", "FieldsSupported"]);
        assert_eq!(
            st.conditions[0].reason.as_deref(),
            Some("InfraEnvAvailable")
        );
        let c = &st.conditions[1];
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref()),
            ("False", Some("UnsupportedFields"))
        );
        assert!(
            c.message
                .as_deref()
                .unwrap_or_default()
                .contains("spec.approvedMACAddressConfigMapLabelSelector is not supported yet"),
            "{c:?}"
        );
        assert!(st.iso_download_url.is_some());
    }
}
