//! The assisted-installer-controller as seen by the service: once the new control plane runs,
//! it reports the post-reboot stages of every host, the finalizing stages, the ingress CA and
//! the monitored operators, until the service declares the cluster installed.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use http::Method;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::agent::scaled;
use crate::client::{CallError, Trust, api_url, body_excerpt, call};
use crate::stages::{self, InstallRole};
use crate::wire::{ClusterView, HostView, OperatorView};

/// Finalizing stages reported before "Done" (upstream names).
pub const FINALIZING_STAGES: &[&str] = &["Waiting for cluster operators", "Adding router ca"];
pub const FINALIZING_DONE: &str = "Done";

#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("controller configuration error: {0}")]
    Config(String),
    #[error("cluster reached {status:?}: {info}")]
    ClusterFailed { status: String, info: String },
    #[error("the server refused {what}: {status}: {body}")]
    Refused {
        what: String,
        status: u16,
        body: String,
    },
    #[error("cluster not installed after {0:?}")]
    Timeout(Duration),
    #[error("cannot generate the ingress certificate: {0}")]
    Cert(String),
}

/// What the controller did, for assertions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControllerReport {
    /// `(host_id, stage)` in the order reported.
    pub host_stages: Vec<(String, String)>,
    pub finalizing_stages: Vec<String>,
    pub ingress_cert_uploaded: bool,
    pub operators_reported: Vec<String>,
}

/// The simulated in-cluster controller. Build with [`InstallerController::new`].
#[derive(Clone)]
pub struct InstallerController {
    pub base_url: String,
    pub cluster_id: String,
    pub token: String,
    /// Multiplier on the polling interval; 0 = as fast as `min_poll_interval` allows.
    pub speed: f64,
    pub min_poll_interval: Duration,
    pub max_poll_interval: Duration,
    /// Give up when the cluster is not installed by then.
    pub timeout: Duration,
    /// Version reported for operators the server lists without one.
    pub operator_version: String,
    /// The new cluster's API, to put each host's `node_labels` on its Node (as upstream's
    /// controller does). Without it no Node is labelled.
    pub workload: Option<kube::Client>,
    /// The CA an https service is verified with.
    pub trust: Trust,
}

/// The Node name of a host: its requested hostname, else the inventory's, lowercased (as the
/// kubelet registers it).
pub fn node_name(h: &HostView) -> Option<String> {
    let name = if h.requested_hostname.is_empty() {
        serde_json::from_str::<Value>(&h.inventory)
            .ok()?
            .get("hostname")?
            .as_str()?
            .to_string()
    } else {
        h.requested_hostname.clone()
    };
    (!name.is_empty()).then(|| name.to_ascii_lowercase())
}

/// The labels of a host's `node_labels` JSON the Node lacks or has with another value.
pub fn labels_to_apply(h: &HostView, node: &Node) -> BTreeMap<String, String> {
    let wanted: BTreeMap<String, String> = serde_json::from_str(&h.node_labels).unwrap_or_default();
    let present = node.metadata.labels.as_ref();
    wanted
        .into_iter()
        .filter(|(k, v)| present.and_then(|l| l.get(k)) != Some(v))
        .collect()
}

/// The progress update the controller should send for one host, if any.
pub fn host_update(h: &HostView, sno: bool) -> Option<&'static str> {
    if matches!(h.status.as_str(), "error" | "cancelled" | "installed") {
        return None;
    }
    let role = InstallRole::from_host(&h.role, h.bootstrap);
    stages::next_controller_stage(role, sno, &h.progress.current_stage)
}

/// True when the cluster is single-node, from whatever the server exposes.
pub fn is_sno(c: &ClusterView, host_count: usize) -> bool {
    match (c.control_plane_count, c.high_availability_mode.as_deref()) {
        (Some(n), _) => n == 1,
        (None, Some(mode)) => mode == "None",
        (None, None) => host_count == 1,
    }
}

/// The new control plane serves the controller only once the bootstrap host has handed over,
/// i.e. reached "Rebooting"; without a bootstrap flag there is nothing to wait for.
pub fn control_plane_up(hosts: &[HostView]) -> bool {
    hosts.iter().filter(|h| h.bootstrap).all(|h| {
        stages::is_rebooting_or_later(&h.progress.current_stage) || h.status == "installed"
    })
}

/// Every host finished: Done (or installed), or failed for good.
pub fn all_hosts_done(hosts: &[HostView]) -> bool {
    !hosts.is_empty()
        && hosts
            .iter()
            .any(|h| h.progress.current_stage == stages::DONE || h.status == "installed")
        && hosts.iter().all(|h| {
            h.progress.current_stage == stages::DONE
                || matches!(h.status.as_str(), "installed" | "error" | "cancelled")
        })
}

/// A self-signed router CA in PEM, like the one the controller reads from the new cluster.
pub fn ingress_ca_pem() -> Result<String, ControllerError> {
    let ck = rcgen::generate_simple_self_signed(vec!["ingress-operator@sim".to_string()])
        .map_err(|e| ControllerError::Cert(e.to_string()))?;
    Ok(ck.cert.pem())
}

impl InstallerController {
    pub fn new(
        base_url: impl Into<String>,
        cluster_id: impl Into<String>,
        token: impl Into<String>,
    ) -> InstallerController {
        InstallerController {
            base_url: base_url.into(),
            cluster_id: cluster_id.into(),
            token: token.into(),
            speed: 0.0,
            min_poll_interval: Duration::from_millis(50),
            max_poll_interval: Duration::from_secs(10),
            timeout: Duration::from_secs(600),
            operator_version: "4.20.0".into(),
            workload: None,
            trust: Trust::none(),
        }
    }

    pub fn with_trust(mut self, trust: Trust) -> Self {
        self.trust = trust;
        self
    }

    pub fn with_workload(mut self, client: kube::Client) -> Self {
        self.workload = Some(client);
        self
    }

    /// Puts each host's `node_labels` on its Node; true when every host that wants labels has
    /// them (a Node not registered yet counts as not labelled).
    async fn label_nodes(&self, hosts: &[HostView]) -> bool {
        let Some(client) = &self.workload else {
            return true;
        };
        let nodes = Api::<Node>::all(client.clone());
        let mut all = true;
        for h in hosts.iter().filter(|h| !h.node_labels.is_empty()) {
            let Some(name) = node_name(h) else {
                all = false;
                continue;
            };
            let node = match nodes.get_opt(&name).await {
                Ok(Some(n)) => n,
                Ok(None) => {
                    all = false;
                    continue;
                }
                Err(e) => {
                    tracing::warn!("controller: reading Node {name}: {e}");
                    all = false;
                    continue;
                }
            };
            let missing = labels_to_apply(h, &node);
            if missing.is_empty() {
                continue;
            }
            let patch = json!({"metadata": {"labels": missing}});
            if let Err(e) = nodes
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                tracing::warn!("controller: labelling Node {name}: {e}");
                all = false;
            }
        }
        all
    }

    pub fn with_speed(mut self, speed: f64) -> Self {
        self.speed = speed;
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn url(&self, path: &str) -> String {
        api_url(
            &self.base_url,
            &format!("/clusters/{}{path}", self.cluster_id),
        )
    }

    /// One call; transport errors and 5xx become `None` (retry next round), 4xx an error.
    async fn try_call(
        &self,
        what: &str,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Option<bytes::Bytes>, ControllerError> {
        match call(&self.trust, method, url, &self.token, body).await {
            Ok((s, b)) if s.is_success() => Ok(Some(b)),
            Ok((s, b)) if s.is_client_error() => Err(ControllerError::Refused {
                what: what.to_string(),
                status: s.as_u16(),
                body: body_excerpt(&b),
            }),
            Ok((s, b)) => {
                tracing::warn!("controller: {what}: {s}: {}", body_excerpt(&b));
                Ok(None)
            }
            Err(CallError::BadRequest { reason, .. }) => Err(ControllerError::Config(reason)),
            Err(e) => {
                tracing::warn!("controller: {what}: {e}");
                Ok(None)
            }
        }
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        path: &str,
    ) -> Result<Option<T>, ControllerError> {
        let Some(b) = self
            .try_call(what, Method::GET, &self.url(path), None)
            .await?
        else {
            return Ok(None);
        };
        match serde_json::from_slice(&b) {
            Ok(v) => Ok(Some(v)),
            Err(e) => {
                tracing::warn!(
                    "controller: {what}: unparseable ({e}): {}",
                    body_excerpt(&b)
                );
                Ok(None)
            }
        }
    }

    async fn report_host(
        &self,
        h: &HostView,
        stage: &str,
        report: &mut ControllerReport,
    ) -> Result<(), ControllerError> {
        let url = api_url(
            &self.base_url,
            &format!("/infra-envs/{}/hosts/{}/progress", h.infra_env_id, h.id),
        );
        let body = json!({"current_stage": stage, "progress_info": ""});
        let what = format!("progress {stage:?} of host {}", h.id);
        match self.try_call(&what, Method::PUT, &url, Some(&body)).await {
            Ok(Some(_)) => report.host_stages.push((h.id.clone(), stage.to_string())),
            Ok(None) => {}
            // A host that changed state under us (e.g. went to error) refuses with 409; the
            // next round sees its new state.
            Err(ControllerError::Refused {
                status: 409, body, ..
            }) => {
                tracing::warn!("controller: {what}: conflict: {body}");
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    async fn finalize(&self, report: &mut ControllerReport) -> Result<bool, ControllerError> {
        for stage in FINALIZING_STAGES {
            if report.finalizing_stages.iter().any(|s| s == stage) {
                continue;
            }
            let body = json!({"finalizing_stage": stage});
            let what = format!("finalizing stage {stage:?}");
            if self
                .try_call(&what, Method::PUT, &self.url("/progress"), Some(&body))
                .await?
                .is_none()
            {
                return Ok(false);
            }
            report.finalizing_stages.push(stage.to_string());
        }
        if !report.ingress_cert_uploaded {
            let pem = Value::String(ingress_ca_pem()?);
            let url = self.url("/uploads/ingress-cert");
            if self
                .try_call("ingress-cert upload", Method::POST, &url, Some(&pem))
                .await?
                .is_none()
            {
                return Ok(false);
            }
            report.ingress_cert_uploaded = true;
        }
        let listed: Vec<OperatorView> = self
            .get_json("monitored-operators list", "/monitored-operators")
            .await?
            .unwrap_or_default();
        let mut names: Vec<(String, String)> = listed
            .iter()
            .map(|o| (o.name.clone(), o.version.clone()))
            .collect();
        if !names.iter().any(|(n, _)| n == "console") {
            names.push(("console".into(), String::new()));
        }
        let done: HashSet<String> = report.operators_reported.iter().cloned().collect();
        for (name, version) in names {
            if name.is_empty() || done.contains(&name) {
                continue;
            }
            let version = if version.is_empty() {
                self.operator_version.clone()
            } else {
                version
            };
            let body = json!({
                "name": name,
                "version": version,
                "status": "available",
                "status_info": "All is well",
            });
            let what = format!("operator {name} report");
            if self
                .try_call(
                    &what,
                    Method::PUT,
                    &self.url("/monitored-operators"),
                    Some(&body),
                )
                .await?
                .is_none()
            {
                return Ok(false);
            }
            report.operators_reported.push(name);
        }
        if !report
            .finalizing_stages
            .iter()
            .any(|s| s == FINALIZING_DONE)
        {
            let body = json!({"finalizing_stage": FINALIZING_DONE});
            if self
                .try_call(
                    "finalizing stage \"Done\"",
                    Method::PUT,
                    &self.url("/progress"),
                    Some(&body),
                )
                .await?
                .is_none()
            {
                return Ok(false);
            }
            report.finalizing_stages.push(FINALIZING_DONE.into());
        }
        Ok(true)
    }

    /// Polls until the cluster is `installed`; fails on `error`/`cancelled`, on a refused
    /// request, or after `timeout`.
    pub async fn run(&self) -> Result<ControllerReport, ControllerError> {
        match tokio::time::timeout(self.timeout, self.run_inner()).await {
            Ok(r) => r,
            Err(_) => Err(ControllerError::Timeout(self.timeout)),
        }
    }

    async fn run_inner(&self) -> Result<ControllerReport, ControllerError> {
        let mut report = ControllerReport::default();
        let mut finalized = false;
        let pause = scaled(
            Duration::from_secs(5),
            self.speed,
            self.min_poll_interval,
            self.max_poll_interval,
        );
        loop {
            if let Some(c) = self.get_json::<ClusterView>("cluster", "").await? {
                match c.status.as_str() {
                    // In kube-API mode the core turns an installed cluster into the day-2
                    // `adding-hosts` cluster at once; a fast run can miss `installed`.
                    "installed" | "adding-hosts" => return Ok(report),
                    "error" | "cancelled" => {
                        return Err(ControllerError::ClusterFailed {
                            status: c.status,
                            info: c.status_info,
                        });
                    }
                    _ => {}
                }
                let hosts: Vec<HostView> = self
                    .get_json("hosts list", "/hosts")
                    .await?
                    .unwrap_or_default();
                if control_plane_up(&hosts) {
                    let sno = is_sno(&c, hosts.len());
                    for h in &hosts {
                        if let Some(stage) = host_update(h, sno) {
                            self.report_host(h, stage, &mut report).await?;
                        }
                    }
                    // Upstream's controller labels the Nodes while it waits for them; the
                    // cluster is not finished before they carry their labels.
                    let labelled = self.label_nodes(&hosts).await;
                    if !finalized && labelled && all_hosts_done(&hosts) {
                        finalized = self.finalize(&mut report).await?;
                    }
                }
            }
            tokio::time::sleep(pause).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ProgressView;

    fn hv(id: &str, role: &str, bootstrap: bool, status: &str, stage: &str) -> HostView {
        HostView {
            id: id.into(),
            infra_env_id: "ie".into(),
            status: status.into(),
            role: role.into(),
            bootstrap,
            progress: ProgressView {
                current_stage: stage.into(),
                progress_info: String::new(),
            },
            ..Default::default()
        }
    }

    #[test]
    fn host_updates_per_role() {
        let st = "installing-in-progress";
        assert_eq!(
            host_update(&hv("m", "master", false, st, "Rebooting"), false),
            Some("Configuring")
        );
        assert_eq!(
            host_update(&hv("m", "master", false, st, "Joined"), false),
            Some("Done")
        );
        assert_eq!(
            host_update(&hv("m", "master", false, st, "Installing"), false),
            None
        );
        assert_eq!(
            host_update(&hv("w", "worker", false, st, "Waiting for ignition"), false),
            Some("Configuring")
        );
        assert_eq!(
            host_update(&hv("s", "master", true, st, "Rebooting"), true),
            Some("Joined")
        );
        assert_eq!(
            host_update(&hv("m", "master", false, "error", "Rebooting"), false),
            None
        );
        assert_eq!(
            host_update(&hv("m", "master", false, st, "Done"), false),
            None
        );
    }

    #[test]
    fn walking_a_master_to_done() {
        let mut h = hv("m", "master", false, "installing-in-progress", "Rebooting");
        let mut seen = Vec::new();
        while let Some(s) = host_update(&h, false) {
            seen.push(s);
            h.progress.current_stage = s.into();
        }
        assert_eq!(seen, vec!["Configuring", "Joined", "Done"]);
    }

    #[test]
    fn sno_detection() {
        let mut c = ClusterView::default();
        assert!(is_sno(&c, 1));
        assert!(!is_sno(&c, 3));
        c.high_availability_mode = Some("None".into());
        assert!(is_sno(&c, 3));
        c.control_plane_count = Some(3);
        assert!(!is_sno(&c, 1));
    }

    #[test]
    fn gating_and_completion() {
        let mut hosts = vec![
            hv(
                "b",
                "master",
                true,
                "installing-in-progress",
                "Waiting for controller",
            ),
            hv("m", "master", false, "installing-in-progress", "Rebooting"),
        ];
        assert!(!control_plane_up(&hosts));
        hosts[0].progress.current_stage = "Rebooting".into();
        assert!(control_plane_up(&hosts));
        assert!(!all_hosts_done(&hosts));
        hosts[0].progress.current_stage = "Done".into();
        hosts[1].status = "error".into();
        assert!(all_hosts_done(&hosts));
        hosts[0].status = "error".into();
        hosts[0].progress.current_stage = "Failed".into();
        assert!(!all_hosts_done(&hosts), "nothing installed");
        assert!(!all_hosts_done(&[]));
    }

    #[test]
    fn ingress_ca_is_pem() {
        let pem = ingress_ca_pem().unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(pem.trim_end().ends_with("-----END CERTIFICATE-----"));
    }

    #[tokio::test]
    async fn unreachable_server_times_out() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let c = InstallerController::new(format!("http://127.0.0.1:{port}"), "c1", "t")
            .with_timeout(Duration::from_millis(300));
        assert!(matches!(c.run().await, Err(ControllerError::Timeout(_))));
        let c = InstallerController::new("bad url", "c1", "t");
        assert!(matches!(c.run().await, Err(ControllerError::Config(_))));
    }
}
