//! Hive's part once the install runs (pure): the admin Secrets, `clusterMetadata`,
//! `spec.installed` and the day-2 hand-over.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};
use manager::controller::PlannedEvent;

use super::record::{ClusterFiles, RecordFacts};
use crate::api::agentclusterinstall::AgentClusterInstall;
use crate::api::hive::ClusterDeployment;
use crate::domain::ClusterStatus;

/// Hive's job, ours here: admin kubeconfig during the install, the final kubeconfig and the
/// kubeadmin password once installed, `clusterMetadata`, then `spec.installed` and day-2.
#[derive(Debug, Clone, PartialEq)]
pub struct Credentials {
    /// Applied under the controller's field manager.
    pub secrets: Vec<Secret>,
    /// The ACI's `spec.clusterMetadata`, when it differs from the wanted one.
    pub aci_cluster_metadata: Option<serde_json::Value>,
    /// The ClusterDeployment's `spec.clusterMetadata` when it is to be marked installed now.
    pub mark_installed: Option<serde_json::Value>,
    pub event: Option<(ObjectReference, PlannedEvent)>,
    /// Hand the installed cluster over to day-2.
    pub day2: bool,
}

pub(super) fn publishes_credentials(status: ClusterStatus) -> bool {
    matches!(
        status,
        ClusterStatus::Installing
            | ClusterStatus::Finalizing
            | ClusterStatus::InstallingPendingUserAction
            | ClusterStatus::Installed
    )
}

/// Hive's part once the install runs (pure); `None` before, or while no kubeconfig exists.
pub fn credentials(
    cd: &ClusterDeployment,
    aci: &AgentClusterInstall,
    rec: &RecordFacts,
    files: &ClusterFiles,
) -> Option<Credentials> {
    let status = rec.status;
    if !publishes_credentials(status) {
        return None;
    }
    let installed = status == ClusterStatus::Installed;
    let ns = cd.namespace().unwrap_or_default();
    let (kubeconfig_name, password_name) = secret_names(cd);
    let kubeconfig = if installed && rec.kubeconfig_uploaded {
        files.kubeconfig.clone()
    } else {
        None
    }
    .or(files.kubeconfig_noingress.clone())?;
    let mut secrets = vec![secret(
        &kubeconfig_name,
        &ns,
        cd,
        "kubeconfig",
        BTreeMap::from([("kubeconfig".into(), ByteString(kubeconfig))]),
    )];
    let meta: serde_json::Value =
        serde_json::from_slice(files.metadata.as_deref().unwrap_or_default()).unwrap_or_default();
    let openshift_cluster_id = meta
        .get("clusterID")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let mut cluster_metadata = serde_json::json!({
        "clusterID": openshift_cluster_id,
        "infraID": cd.uid().unwrap_or_default(),
        "adminKubeconfigSecretRef": {"name": kubeconfig_name},
    });
    if installed {
        secrets.push(secret(
            &password_name,
            &ns,
            cd,
            "kubeadmincreds",
            BTreeMap::from([
                ("username".into(), ByteString(b"kubeadmin".to_vec())),
                (
                    "password".into(),
                    ByteString(files.kubeadmin_password.clone().unwrap_or_default()),
                ),
            ]),
        ));
        cluster_metadata["adminPasswordSecretRef"] = serde_json::json!({"name": password_name});
    }
    let aci_metadata = aci
        .spec
        .cluster_metadata
        .as_ref()
        .map(|m| serde_json::to_value(m).unwrap_or_default());
    let mark_installed = installed && !cd.spec.installed;
    Some(Credentials {
        secrets,
        aci_cluster_metadata: (aci_metadata.as_ref() != Some(&cluster_metadata))
            .then(|| cluster_metadata.clone()),
        event: mark_installed.then(|| installed_event(rec, &kubeconfig_name, &password_name)),
        mark_installed: mark_installed.then_some(cluster_metadata),
        day2: installed,
    })
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

/// The names of the admin kubeconfig and password Secrets: the ClusterDeployment's
/// `clusterMetadata` references, else `<name>-admin-kubeconfig` and `<name>-admin-password`.
fn secret_names(cd: &ClusterDeployment) -> (String, String) {
    let kubeconfig_name = cd
        .spec
        .cluster_metadata
        .as_ref()
        .map(|m| m.admin_kubeconfig_secret_ref.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| format!("{}-admin-kubeconfig", cd.name_any()));
    let password_name = cd
        .spec
        .cluster_metadata
        .as_ref()
        .and_then(|m| m.admin_password_secret_ref.as_ref())
        .map(|r| r.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| format!("{}-admin-password", cd.name_any()));
    (kubeconfig_name, password_name)
}

/// The event on the AgentClusterInstall when the install completes.
fn installed_event(
    rec: &RecordFacts,
    kubeconfig_name: &str,
    password_name: &str,
) -> (ObjectReference, PlannedEvent) {
    (
        rec.aci.clone(),
        PlannedEvent {
            warning: false,
            reason: "InstallationCompleted",
            note: format!(
                "The installation has completed; credentials are in Secrets {kubeconfig_name} and {password_name}"
            ),
        },
    )
}
