//! ClusterDeployment + AgentClusterInstall controller: validates the references, mirrors the
//! spec into the cluster record, and does Hive's part after the install (admin Secrets,
//! `clusterMetadata`, `spec.installed`, then the day-2 cluster).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event, finalizer};
use kube::{Resource, ResourceExt};

use super::{Context, Error};
use crate::api::agentclusterinstall::{
    AgentClusterInstall, INSTALL_CONFIG_OVERRIDES_ANNOTATION, NetworkType,
    PlatformType as AciPlatform,
};
use crate::api::hive::{ClusterDeployment, ClusterImageSet};
use crate::domain::{ClusterNetwork, ClusterSnapshot, ClusterStatus, PlatformType};
use crate::service::store::ClusterSettings;

pub const CD_FINALIZER: &str = "clusterdeployments.agent-install.openshift.io/ai-deprovision";
pub const ACI_FINALIZER: &str = "agentclusterinstall.agent-install.openshift.io/ai-deprovision";
const PAUSE_ANNOTATION: &str = "hive.openshift.io/reconcile-pause";
/// Explicit OpenShift version of a ClusterImageSet whose image tag does not carry one.
pub const RELEASE_VERSION_ANNOTATION: &str = "assisted-core.openshift.io/openshift-version";
const FIELD_MANAGER: &str = "assisted-core-cluster";

/// Learns a release image's OpenShift version and architecture. The real lookup
/// (`oc adm release info`) can replace the tag parser behind this trait.
pub trait ReleaseInfoSource: Send + Sync {
    fn version(&self, image_set: &ClusterImageSet) -> Result<(String, String), String>;
}

/// Reads the version from the annotation, else from the image tag (`...:4.17.3-x86_64`).
pub struct TagReleaseInfo;

impl ReleaseInfoSource for TagReleaseInfo {
    fn version(&self, cis: &ClusterImageSet) -> Result<(String, String), String> {
        let image = &cis.spec.release_image;
        let (tag_version, arch) = release_from_tag(image);
        let version = cis
            .annotations()
            .get(RELEASE_VERSION_ANNOTATION)
            .cloned()
            .or(tag_version)
            .ok_or_else(|| {
                format!(
                    "cannot tell the OpenShift version of release image {image:?}: use a tag like :4.17.3-x86_64 or set the {RELEASE_VERSION_ANNOTATION} annotation"
                )
            })?;
        Ok((version, arch))
    }
}

/// `quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64` → ("4.17.3", "x86_64").
pub fn release_from_tag(image: &str) -> (Option<String>, String) {
    let name = image.split('@').next().unwrap_or(image);
    let Some((_, tag)) = name
        .rsplit_once(':')
        .filter(|(repo, _)| !repo.ends_with('/') && !repo.is_empty())
    else {
        return (None, "x86_64".into());
    };
    if tag.contains('/') || !tag.starts_with(|c: char| c.is_ascii_digit()) {
        return (None, "x86_64".into());
    }
    for arch in ["x86_64", "aarch64", "arm64", "ppc64le", "s390x", "multi"] {
        if let Some(v) = tag.strip_suffix(&format!("-{arch}")) {
            return (Some(v.to_string()), arch.to_string());
        }
    }
    (Some(tag.to_string()), "x86_64".into())
}

/// Spec-derived cluster fields (everything the user sets; no state).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    pub name: String,
    pub base_domain: String,
    pub openshift_version: String,
    pub cpu_architecture: String,
    pub control_plane_count: u32,
    pub worker_count: u32,
    pub arbiter_count: u32,
    pub platform: PlatformType,
    pub user_managed_networking: bool,
    pub machine_networks: Vec<String>,
    pub cluster_networks: Vec<ClusterNetwork>,
    pub service_networks: Vec<String>,
    pub api_vips: Vec<String>,
    pub ingress_vips: Vec<String>,
    pub network_type: Option<String>,
    pub schedulable_masters: Option<bool>,
    pub ntp: String,
}

impl ClusterConfig {
    pub fn apply(&self, c: &mut ClusterSnapshot) {
        c.name.clone_from(&self.name);
        c.base_domain.clone_from(&self.base_domain);
        c.openshift_version.clone_from(&self.openshift_version);
        c.cpu_architecture.clone_from(&self.cpu_architecture);
        c.control_plane_count = self.control_plane_count;
        c.worker_count = self.worker_count;
        c.arbiter_count = self.arbiter_count;
        c.platform = self.platform;
        c.user_managed_networking = self.user_managed_networking;
        // A machine network the monitor calculated from the API VIP (none was given) stays
        // while the VIP still lies in it, as upstream keeps its auto-assigned CIDR.
        let keep_calculated = self.machine_networks.is_empty()
            && c.machine_networks.len() == 1
            && self.api_vips.first().is_some_and(|vip| {
                crate::domain::net::parse_ip(vip).is_some_and(|ip| {
                    crate::domain::net::Cidr::parse(&c.machine_networks[0])
                        .is_some_and(|net| net.contains(ip))
                })
            });
        if !keep_calculated {
            c.machine_networks.clone_from(&self.machine_networks);
        }
        if !self.cluster_networks.is_empty() {
            c.cluster_networks.clone_from(&self.cluster_networks);
        }
        if !self.service_networks.is_empty() {
            c.service_networks.clone_from(&self.service_networks);
        }
        c.api_vips.clone_from(&self.api_vips);
        c.ingress_vips.clone_from(&self.ingress_vips);
        c.network_type.clone_from(&self.network_type);
        if let Some(s) = self.schedulable_masters {
            c.schedulable_masters = s;
        }
        c.pull_secret_set = true;
        c.additional_ntp_source.clone_from(&self.ntp);
    }
}

/// CD + ACI (+ the release version) → cluster config. Pure; errors are input errors.
pub fn cluster_config(
    cd: &ClusterDeployment,
    aci: &AgentClusterInstall,
    version: (String, String),
) -> Result<ClusterConfig, String> {
    let s = &aci.spec;
    check_networks(aci)?;
    if let Some(overrides) = aci.annotations().get(INSTALL_CONFIG_OVERRIDES_ANNOTATION)
        && !matches!(
            serde_json::from_str::<serde_json::Value>(overrides),
            Ok(serde_json::Value::Object(_))
        )
    {
        return Err(format!(
            "annotation {INSTALL_CONFIG_OVERRIDES_ANNOTATION} must be a JSON object"
        ));
    }
    let req = &s.provision_requirements;
    let cp = u32::try_from(req.control_plane_agents)
        .map_err(|_| "provisionRequirements.controlPlaneAgents must not be negative".to_string())?;
    if !(cp == 1 || (3..=5).contains(&cp)) {
        return Err(format!(
            "provisionRequirements.controlPlaneAgents must be 1 or 3 to 5, got {cp}"
        ));
    }
    let workers = u32::try_from(req.worker_agents)
        .map_err(|_| "provisionRequirements.workerAgents must not be negative".to_string())?;
    let arbiters = u32::try_from(req.arbiter_agents)
        .map_err(|_| "provisionRequirements.arbiterAgents must not be negative".to_string())?;
    let mut api_vips = s.api_vips.clone();
    if api_vips.is_empty() {
        api_vips.extend(s.api_vip.clone().filter(|v| !v.is_empty()));
    }
    let mut ingress_vips = s.ingress_vips.clone();
    if ingress_vips.is_empty() {
        ingress_vips.extend(s.ingress_vip.clone().filter(|v| !v.is_empty()));
    }
    let platform = match s.platform_type {
        Some(AciPlatform::None) => PlatformType::None,
        Some(AciPlatform::External) => PlatformType::External,
        Some(AciPlatform::VSphere) => PlatformType::VSphere,
        Some(AciPlatform::Nutanix) => PlatformType::Nutanix,
        Some(AciPlatform::BareMetal) => PlatformType::BareMetal,
        // Upstream: SNO or user-managed networking without a platform means "none".
        None if cp == 1 || s.networking.user_managed_networking == Some(true) => PlatformType::None,
        None => PlatformType::BareMetal,
    };
    if platform == PlatformType::BareMetal
        && cp > 1
        && (api_vips.is_empty() || ingress_vips.is_empty())
    {
        return Err(
            "apiVIPs and ingressVIPs are required for a multi-node baremetal cluster".into(),
        );
    }
    Ok(ClusterConfig {
        name: cd.spec.cluster_name.clone(),
        base_domain: cd.spec.base_domain.clone(),
        openshift_version: version.0,
        cpu_architecture: version.1,
        control_plane_count: cp,
        worker_count: workers,
        arbiter_count: arbiters,
        platform,
        user_managed_networking: s.networking.user_managed_networking.unwrap_or(cp == 1),
        machine_networks: s
            .networking
            .machine_network
            .iter()
            .map(|m| m.cidr.clone())
            .collect(),
        cluster_networks: s
            .networking
            .cluster_network
            .iter()
            .map(|c| ClusterNetwork {
                cidr: c.cidr.clone(),
                host_prefix: c
                    .host_prefix
                    .and_then(|p| u8::try_from(p).ok())
                    .unwrap_or(23),
            })
            .collect(),
        service_networks: s.networking.service_network.clone(),
        api_vips,
        ingress_vips,
        network_type: s.networking.network_type.as_ref().map(|n| match n {
            NetworkType::OpenShiftSDN => "OpenShiftSDN".to_string(),
            NetworkType::OVNKubernetes => "OVNKubernetes".to_string(),
        }),
        schedulable_masters: s.masters_schedulable,
        ntp: s.ntp_sources.join(","),
    })
}

/// Every CIDR and VIP of the networking section must parse (upstream's ACI controller answers
/// SpecSynced False / InputError; they were dropped silently).
fn check_networks(aci: &AgentClusterInstall) -> Result<(), String> {
    use crate::domain::net::{Cidr, parse_ip};
    let n = &aci.spec.networking;
    let cidrs = n
        .cluster_network
        .iter()
        .map(|c| ("clusterNetwork", c.cidr.as_str()))
        .chain(
            n.service_network
                .iter()
                .map(|c| ("serviceNetwork", c.as_str())),
        )
        .chain(
            n.machine_network
                .iter()
                .map(|m| ("machineNetwork", m.cidr.as_str())),
        );
    for (field, cidr) in cidrs {
        if !cidr.contains('/') || Cidr::parse(cidr).is_none() {
            return Err(format!(
                "networking.{field} {cidr:?} is not a CIDR (address/prefix)"
            ));
        }
    }
    let vips = aci
        .spec
        .api_vips
        .iter()
        .map(|v| ("apiVIPs", v))
        .chain(aci.spec.ingress_vips.iter().map(|v| ("ingressVIPs", v)));
    for (field, vip) in vips {
        if vip.contains('/') || parse_ip(vip).is_none() {
            return Err(format!("{field} {vip:?} is not an IP address"));
        }
    }
    Ok(())
}

fn is_ours(cd: &ClusterDeployment) -> Option<String> {
    let r = cd.spec.cluster_install_ref.as_ref()?;
    (r.group == "extensions.hive.openshift.io" && r.kind == "AgentClusterInstall")
        .then(|| r.name.clone())
}

pub async fn reconcile(cd: Arc<ClusterDeployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    if is_ours(&cd).is_none() {
        return Ok(Action::await_change());
    }
    let ns = cd.namespace().unwrap_or_default();
    let api: Api<ClusterDeployment> = Api::namespaced(ctx.client.clone(), &ns);
    finalizer(&api, CD_FINALIZER, cd, |event| async {
        match event {
            Event::Apply(cd) => apply(&cd, &ctx).await,
            Event::Cleanup(cd) => {
                let id = cd.uid().unwrap_or_default();
                tracing::info!(cluster = %cd.name_any(), "ClusterDeployment deleted: deregistering the cluster");
                ctx.store.remove_cluster(&id);
                ctx.forget_cluster(&id).await;
                release_aci(&cd, &ctx).await?;
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

/// With the ClusterDeployment gone nothing would release the ACI's finalizer: do it now.
async fn release_aci(cd: &ClusterDeployment, ctx: &Context) -> Result<(), Error> {
    let (Some(name), Some(ns)) = (is_ours(cd), cd.namespace()) else {
        return Ok(());
    };
    let acis: Api<AgentClusterInstall> = Api::namespaced(ctx.client.clone(), &ns);
    if let Some(aci) = acis.get_opt(&name).await?
        && aci.finalizers().iter().any(|f| f == ACI_FINALIZER)
    {
        remove_aci_finalizer(&acis, &name, &aci).await?;
    }
    Ok(())
}

/// Drops our deregistration finalizer from the ACI `name`, keeping any others.
async fn remove_aci_finalizer(
    acis: &Api<AgentClusterInstall>,
    name: &str,
    aci: &AgentClusterInstall,
) -> Result<(), Error> {
    let rest: Vec<&String> = aci
        .finalizers()
        .iter()
        .filter(|f| *f != ACI_FINALIZER)
        .collect();
    acis.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"finalizers": rest}})),
    )
    .await?;
    Ok(())
}

async fn pull_secret(ctx: &Context, ns: &str, cd: &ClusterDeployment) -> Result<String, String> {
    let name = cd
        .spec
        .pull_secret_ref
        .as_ref()
        .map(|r| r.name.clone())
        .filter(|n| !n.is_empty())
        .ok_or("spec.pullSecretRef is required")?;
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), ns);
    let secret = secrets
        .get_opt(&name)
        .await
        .map_err(|e| format!("reading pull secret {name}: {e}"))?
        .ok_or_else(|| format!("pull secret {name} not found"))?;
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(".dockerconfigjson"))
        .ok_or_else(|| format!("pull secret {name} has no .dockerconfigjson key"))?;
    String::from_utf8(bytes.0.clone()).map_err(|_| format!("pull secret {name} is not UTF-8"))
}

pub(crate) async fn apply(cd: &ClusterDeployment, ctx: &Context) -> Result<Action, Error> {
    let ns = cd.namespace().unwrap_or_default();
    let id = cd.uid().unwrap_or_default();
    let Some(aci_name) = is_ours(cd) else {
        return Ok(Action::await_change());
    };
    let acis: Api<AgentClusterInstall> = Api::namespaced(ctx.client.clone(), &ns);
    let Some(aci) = acis.get_opt(&aci_name).await? else {
        tracing::debug!(cluster = %cd.name_any(), "waiting for AgentClusterInstall {aci_name}");
        return Ok(Action::requeue(Duration::from_secs(5)));
    };
    // The ACI carries its own deregistration finalizer: deleting it (alone, or with its
    // namespace) deregisters the cluster before the object goes.
    if aci.metadata.deletion_timestamp.is_some() {
        if aci.finalizers().iter().any(|f| f == ACI_FINALIZER) {
            tracing::info!(cluster = %cd.name_any(), "AgentClusterInstall deleted: deregistering the cluster");
            ctx.store.remove_cluster(&id);
            ctx.forget_cluster(&id).await;
            remove_aci_finalizer(&acis, &aci_name, &aci).await?;
        }
        return Ok(Action::await_change());
    }
    if !aci.finalizers().iter().any(|f| f == ACI_FINALIZER) {
        let mut all = aci.finalizers().to_vec();
        all.push(ACI_FINALIZER.into());
        acis.patch(
            &aci_name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"finalizers": all}})),
        )
        .await?;
    }
    let installed_already = cd.spec.installed;
    let pull = pull_secret(ctx, &ns, cd).await;
    let version = match &aci.spec.image_set_ref {
        Some(r) => {
            let sets: Api<ClusterImageSet> = Api::all(ctx.client.clone());
            match sets.get_opt(&r.name).await? {
                Some(cis) => ctx
                    .release_info
                    .version(&cis)
                    .map(|v| (v, cis.spec.release_image.clone())),
                None => Err(format!("ClusterImageSet {} not found", r.name)),
            }
        }
        None if installed_already => Ok((("".into(), "x86_64".into()), String::new())),
        None => Err("spec.imageSetRef is required".into()),
    };
    let manifests = user_manifests(ctx, &ns, &aci).await;
    let (config, release_image, spec_error) = match (&pull, &version) {
        (Ok(_), Ok((v, image))) => match cluster_config(cd, &aci, v.clone()) {
            Ok(c) => (Some(c), image.clone(), None),
            Err(e) => (None, image.clone(), Some(e)),
        },
        (Err(e), _) | (_, Err(e)) => (None, String::new(), Some(e.clone())),
    };
    let spec_error = spec_error.or_else(|| manifests.as_ref().err().cloned());
    let settings = ClusterSettings {
        namespace: ns.clone(),
        cluster_deployment: cd.name_any(),
        agent_cluster_install: aci_name.clone(),
        pull_secret: pull.unwrap_or_default(),
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
        manifests: manifests.unwrap_or_default(),
        proxy: aci.spec.proxy.as_ref().map(|p| crate::domain::Proxy {
            http_proxy: p.http_proxy.clone(),
            https_proxy: p.https_proxy.clone(),
            no_proxy: p.no_proxy.clone(),
        }),
    };
    let now = Timestamp::now();
    ctx.store.upsert_cluster(
        &id,
        &cd.spec.cluster_name,
        settings,
        spec_error,
        now,
        |snap| {
            if let Some(c) = &config {
                c.apply(snap);
            }
        },
    );
    publish_credentials(cd, &aci, ctx).await?;
    let rec = ctx.store.cluster(&id).ok();
    let requeue = match rec.map(|r| r.snapshot.status) {
        Some(ClusterStatus::Installed | ClusterStatus::AddingHosts) => Duration::from_secs(60),
        Some(_) => Duration::from_secs(10),
        None => Duration::from_secs(30),
    };
    Ok(Action::requeue(requeue))
}

/// The ACI's user manifests: every key of every referenced ConfigMap is one file.
async fn user_manifests(
    ctx: &Context,
    ns: &str,
    aci: &AgentClusterInstall,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut names: Vec<&str> = aci
        .spec
        .manifests_config_map_refs
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    names.extend(
        aci.spec
            .manifests_config_map_ref
            .as_ref()
            .map(|r| r.name.as_str()),
    );
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    let mut out = Vec::new();
    for name in names {
        let cm = cms
            .get_opt(name)
            .await
            .map_err(|e| format!("reading manifests ConfigMap {name}: {e}"))?
            .ok_or_else(|| format!("manifests ConfigMap {name} not found"))?;
        out.extend(manifests_of(&cm)?);
    }
    Ok(out)
}

/// ConfigMap → manifest files; a key that is not a plain YAML/JSON file name is an input error.
pub fn manifests_of(cm: &ConfigMap) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    for (key, value) in cm.data.iter().flatten() {
        if !crate::service::install::valid_manifest_name(key) {
            return Err(format!(
                "manifests ConfigMap {}: key {key:?} must be a .yaml, .yml or .json file name",
                cm.name_any()
            ));
        }
        out.push((key.clone(), value.clone().into_bytes()));
    }
    Ok(out)
}

fn secret(
    name: &str,
    ns: &str,
    cd: &ClusterDeployment,
    secret_type: &str,
    data: BTreeMap<String, ByteString>,
) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(BTreeMap::from([
                (
                    "hive.openshift.io/cluster-deployment-name".into(),
                    cd.name_any(),
                ),
                ("hive.openshift.io/secret-type".into(), secret_type.into()),
            ])),
            owner_references: cd.controller_owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// Hive's job, ours here: admin kubeconfig during the install, the final kubeconfig and the
/// kubeadmin password once installed, `clusterMetadata`, then `spec.installed` and day-2.
async fn publish_credentials(
    cd: &ClusterDeployment,
    aci: &AgentClusterInstall,
    ctx: &Context,
) -> Result<(), Error> {
    let ns = cd.namespace().unwrap_or_default();
    let id = cd.uid().unwrap_or_default();
    let Ok(rec) = ctx.store.cluster(&id) else {
        return Ok(());
    };
    let status = rec.snapshot.status;
    let installing = matches!(
        status,
        ClusterStatus::Installing
            | ClusterStatus::Finalizing
            | ClusterStatus::InstallingPendingUserAction
    );
    let installed = status == ClusterStatus::Installed;
    if !(installing || installed) {
        return Ok(());
    }
    let kubeconfig_name = cd
        .spec
        .cluster_metadata
        .as_ref()
        .map(|m| m.admin_kubeconfig_secret_ref.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| format!("{}-admin-kubeconfig", cd.name_any()));
    let password_name = format!("{}-admin-password", cd.name_any());
    let kubeconfig = if installed && rec.snapshot.kubeconfig_uploaded {
        ctx.file(&id, "kubeconfig").await
    } else {
        None
    }
    .or(ctx.file(&id, "kubeconfig-noingress").await);
    let Some(kubeconfig) = kubeconfig else {
        return Ok(());
    };
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    let kc = secret(
        &kubeconfig_name,
        &ns,
        cd,
        "kubeconfig",
        BTreeMap::from([("kubeconfig".into(), ByteString(kubeconfig))]),
    );
    secrets
        .patch(&kubeconfig_name, &pp, &Patch::Apply(&with_kind(&kc)))
        .await?;
    let metadata = ctx.file(&id, "metadata.json").await.unwrap_or_default();
    let meta: serde_json::Value = serde_json::from_slice(&metadata).unwrap_or_default();
    let openshift_cluster_id = meta
        .get("clusterID")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let mut cluster_metadata = serde_json::json!({
        "clusterID": openshift_cluster_id,
        "infraID": id,
        "adminKubeconfigSecretRef": {"name": kubeconfig_name},
    });
    if installed {
        let password = ctx
            .file(&id, "kubeadmin-password")
            .await
            .unwrap_or_default();
        let pw = secret(
            &password_name,
            &ns,
            cd,
            "kubeadmincreds",
            BTreeMap::from([
                ("username".into(), ByteString(b"kubeadmin".to_vec())),
                ("password".into(), ByteString(password)),
            ]),
        );
        secrets
            .patch(&password_name, &pp, &Patch::Apply(&with_kind(&pw)))
            .await?;
        cluster_metadata["adminPasswordSecretRef"] = serde_json::json!({"name": password_name});
    }
    let acis: Api<AgentClusterInstall> = Api::namespaced(ctx.client.clone(), &ns);
    if aci
        .spec
        .cluster_metadata
        .as_ref()
        .map(|m| serde_json::to_value(m).unwrap_or_default())
        != Some(cluster_metadata.clone())
    {
        acis.patch(
            &aci.name_any(),
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"clusterMetadata": cluster_metadata}})),
        )
        .await?;
    }
    if installed {
        let cds: Api<ClusterDeployment> = Api::namespaced(ctx.client.clone(), &ns);
        if !cd.spec.installed {
            cds.patch(
                &cd.name_any(),
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"spec": {
                    "installed": true,
                    "clusterMetadata": cluster_metadata,
                }})),
            )
            .await?;
            tracing::info!(cluster = %cd.name_any(), "cluster installed: ClusterDeployment marked installed");
            ctx.events
                .normal(
                    &super::events::aci_reference(&rec),
                    "InstallationCompleted",
                    format!("The installation has completed; credentials are in Secrets {kubeconfig_name} and {password_name}"),
                )
                .await;
        }
        // Hive would now hand the cluster over to day-2.
        ctx.store.transform_to_day2(&id, Timestamp::now());
    }
    Ok(())
}

/// Server-side apply bodies need apiVersion and kind.
fn with_kind(s: &Secret) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    v["apiVersion"] = "v1".into();
    v["kind"] = "Secret".into();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::agentclusterinstall::{AgentClusterInstallSpec, ProvisionRequirements};
    use crate::api::hive::ClusterDeploymentSpec;

    #[test]
    fn versions_come_from_release_tags() {
        assert_eq!(
            release_from_tag("quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64"),
            (Some("4.17.3".into()), "x86_64".into())
        );
        assert_eq!(
            release_from_tag("quay.io/okd/scos-release:4.18.0-okd-scos.9"),
            (Some("4.18.0-okd-scos.9".into()), "x86_64".into())
        );
        assert_eq!(
            release_from_tag("registry:5000/ocp-release:4.16.0-aarch64").1,
            "aarch64"
        );
        assert_eq!(release_from_tag("quay.io/x/y@sha256:abc").0, None);
        assert_eq!(release_from_tag("registry:5000/ocp-release").0, None);
    }

    fn cd() -> ClusterDeployment {
        ClusterDeployment::new(
            "c1",
            ClusterDeploymentSpec {
                cluster_name: "c1".into(),
                base_domain: "example.com".into(),
                ..Default::default()
            },
        )
    }

    fn aci(cp: i32, workers: i32) -> AgentClusterInstall {
        AgentClusterInstall::new(
            "c1",
            AgentClusterInstallSpec {
                provision_requirements: ProvisionRequirements {
                    control_plane_agents: cp,
                    worker_agents: workers,
                    arbiter_agents: 0,
                },
                api_vips: vec!["192.168.111.5".into()],
                ingress_vips: vec!["192.168.111.4".into()],
                ..Default::default()
            },
        )
    }

    #[test]
    fn config_maps_counts_vips_and_platform() {
        let c = cluster_config(&cd(), &aci(3, 2), ("4.17.3".into(), "x86_64".into())).unwrap();
        assert_eq!((c.control_plane_count, c.worker_count), (3, 2));
        assert_eq!(c.platform, PlatformType::BareMetal);
        assert_eq!(c.api_vips, vec!["192.168.111.5".to_string()]);
        let sno = cluster_config(&cd(), &aci(1, 0), ("4.17.3".into(), "x86_64".into())).unwrap();
        assert_eq!(sno.platform, PlatformType::None);
        assert!(sno.user_managed_networking);
    }

    #[test]
    fn manifests_come_from_config_map_keys() {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("m".into());
        cm.data = Some(BTreeMap::from([("50-a.yaml".into(), "kind: X".into())]));
        assert_eq!(
            manifests_of(&cm).unwrap(),
            vec![("50-a.yaml".to_string(), b"kind: X".to_vec())]
        );
        cm.data = Some(BTreeMap::from([("../a.yaml".into(), "x".into())]));
        assert!(manifests_of(&cm).unwrap_err().contains("../a.yaml"));
    }

    #[test]
    fn config_rejects_bad_counts_and_missing_vips() {
        let e = cluster_config(&cd(), &aci(2, 0), ("4.17".into(), "x86_64".into())).unwrap_err();
        assert!(e.contains("controlPlaneAgents"), "{e}");
        let mut a = aci(3, 0);
        a.spec.api_vips.clear();
        let e = cluster_config(&cd(), &a, ("4.17".into(), "x86_64".into())).unwrap_err();
        assert!(e.contains("apiVIPs"), "{e}");
    }

    #[test]
    fn config_rejects_networks_that_do_not_parse_and_bad_overrides() {
        let version = || ("4.17".to_string(), "x86_64".to_string());
        for bad in ["300.1.1.0/24", "banana", "10.0.0.0/33", "10.0.0.0"] {
            let mut a = aci(3, 2);
            a.spec.networking.service_network = vec![bad.into()];
            let e = cluster_config(&cd(), &a, version()).unwrap_err();
            assert!(e.contains("serviceNetwork") && e.contains(bad), "{e}");
        }
        let mut a = aci(3, 2);
        a.spec.api_vips = vec!["not-an-ip".into()];
        assert!(
            cluster_config(&cd(), &a, version())
                .unwrap_err()
                .contains("apiVIPs")
        );
        let mut a = aci(3, 2);
        a.metadata.annotations = Some(BTreeMap::from([(
            INSTALL_CONFIG_OVERRIDES_ANNOTATION.to_string(),
            "{not json".to_string(),
        )]));
        assert!(
            cluster_config(&cd(), &a, version())
                .unwrap_err()
                .contains(INSTALL_CONFIG_OVERRIDES_ANNOTATION)
        );
        assert!(cluster_config(&cd(), &aci(3, 2), version()).is_ok());
    }
}
