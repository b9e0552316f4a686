//! The install backend trait and the `openshift-install` implementation.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;

use serde_json::Value;

use super::bootstrap::{BootstrapInput, GenerateHost, post_process_bootstrap};
use super::error::InstallError;
use super::manifests::{Manifest, apply_patches_in_dir, split_multi_document, valid_manifest_name};
use crate::domain::ReleaseInfo;

/// Input of [`InstallBackend::generate`].
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateRequest {
    /// assisted-core's cluster id (not the OpenShift cluster id, which the backend creates).
    pub cluster_id: String,
    pub cluster_name: String,
    pub base_domain: String,
    pub install_config_yaml: String,
    pub sno: bool,
    pub release_image: String,
    /// `https://api.<name>.<domain>:6443` for a real cluster; the lab API server otherwise.
    pub api_url: String,
    /// Day-1 hosts of the cluster (BareMetalHost manifests are filled from them).
    pub hosts: Vec<GenerateHost>,
    pub machine_networks: Vec<String>,
    /// The cluster's pull secret: reads the release payload for the installer.
    pub pull_secret: String,
    /// `OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP`: where the bootstrap kubelet and etcd listen.
    pub bootstrap_node_ip: Option<String>,
    /// Manifests added between `create manifests` and the ignition step: the core's, then
    /// the user's (ACI `manifestsConfigMapRefs`); `.patch*` files patch what is there.
    pub manifests: Vec<Manifest>,
    /// The ACI's `mirrorRegistryRef` configuration: the release payload is read through its
    /// mirrors first, trusting their CA, as the hosts pull it.
    pub mirrors: Option<crate::domain::mirrors::MirrorConfig>,
}

/// The files an install produces, plus the ids parsed from them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InstallArtifacts {
    pub bootstrap_ign: Vec<u8>,
    pub master_ign: Vec<u8>,
    pub worker_ign: Vec<u8>,
    pub metadata_json: Vec<u8>,
    /// Admin kubeconfig before the ingress CA is known.
    pub kubeconfig_noingress: Vec<u8>,
    pub kubeadmin_password: Vec<u8>,
    pub install_config_yaml: Vec<u8>,
    /// OpenShift cluster id, read from metadata.json `clusterID`. Upstream parses it out of
    /// bootstrap.ign; metadata.json carries the same value and is simpler to read.
    pub openshift_cluster_id: String,
    /// metadata.json `infraID`.
    pub infra_id: String,
    /// What the installer warned about (see [`installer_warnings`]): an unknown install-config
    /// field is dropped with only a warning, so the core logs these and the tests refuse them.
    pub warnings: Vec<String>,
    /// The release's component images, when the installer came from its payload.
    pub release: Option<crate::domain::ReleaseInfo>,
}

impl InstallArtifacts {
    /// File-store names and contents, as upstream uploads them.
    pub fn files(&self) -> [(&'static str, &[u8]); 7] {
        [
            ("bootstrap.ign", &self.bootstrap_ign),
            ("master.ign", &self.master_ign),
            ("worker.ign", &self.worker_ign),
            ("metadata.json", &self.metadata_json),
            ("kubeconfig-noingress", &self.kubeconfig_noingress),
            ("kubeadmin-password", &self.kubeadmin_password),
            ("install-config.yaml", &self.install_config_yaml),
        ]
    }
}

/// Reads `clusterID` and `infraID` from metadata.json.
pub(crate) fn metadata_ids(metadata: &[u8]) -> Result<(String, String), InstallError> {
    let bad = |reason: String| InstallError::BadOutput {
        file: "metadata.json".into(),
        reason,
    };
    let doc: Value = serde_json::from_slice(metadata).map_err(|e| bad(e.to_string()))?;
    let field = |k: &str| {
        doc.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| bad(format!("no {k}")))
    };
    Ok((field("clusterID")?, field("infraID")?))
}

/// Boxed future so the trait stays object safe (`Arc<dyn InstallBackend>`).
pub type GenerateFuture<'a> =
    Pin<Box<dyn Future<Output = Result<InstallArtifacts, InstallError>> + Send + 'a>>;

/// Produces a cluster's install artifacts in `work_dir`, a fresh (absent or empty) directory
/// the caller owns and removes afterwards.
pub trait InstallBackend: Send + Sync {
    fn generate<'a>(&'a self, req: &'a GenerateRequest, work_dir: &'a Path) -> GenerateFuture<'a>;
}

/// Where the installer binary comes from.
#[derive(Debug, Clone)]
pub enum InstallerSource {
    /// One binary for every release (`--openshift-install-binary`).
    Binary(PathBuf),
    /// The `installer` image of each cluster's release payload, read with the cluster's pull
    /// secret, as `oc adm release extract --command=openshift-install` does; kept per release.
    ReleasePayload {
        client: crate::service::release::RegistryClient,
        cache: Arc<crate::service::release::InstallerCache>,
    },
}

/// Runs the real `openshift-install` binary.
#[derive(Debug, Clone)]
pub struct OpenshiftInstallBackend {
    pub source: InstallerSource,
    /// Added to the installer's environment (e.g. `HOME`); it inherits the core's own.
    pub extra_env: Vec<(String, String)>,
    /// Bounds the installers running at once (see [`MAX_CONCURRENT_INSTALLERS`]).
    running: Arc<tokio::sync::Semaphore>,
}

/// Releases whose installer stays extracted (about 220 MiB each for 4.17).
pub const CACHED_RELEASES: usize = 3;

/// Installers running at once. One run peaks at about 160 MiB resident (4.17, a 3+2
/// baremetal cluster, `create ignition-configs`; docs/benchmarks.md) and takes about a
/// second, inside the manager's memory limit: more clusters queue rather than run together.
pub const MAX_CONCURRENT_INSTALLERS: usize = 2;

/// How much of the installer's stderr an error keeps.
const STDERR_TAIL_BYTES: usize = 2048;

impl OpenshiftInstallBackend {
    /// One binary for every release.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self::with_source(InstallerSource::Binary(binary.into()))
    }

    /// The installer of each cluster's release, extracted into `cache_dir` (the last
    /// [`CACHED_RELEASES`] kept).
    pub fn from_release_payloads(
        cache_dir: impl Into<PathBuf>,
    ) -> Result<Self, crate::service::release::RegistryError> {
        Ok(Self::with_source(InstallerSource::ReleasePayload {
            client: crate::service::release::RegistryClient::new()?,
            cache: Arc::new(crate::service::release::InstallerCache::new(
                cache_dir.into(),
                CACHED_RELEASES,
            )),
        }))
    }

    fn with_source(source: InstallerSource) -> Self {
        OpenshiftInstallBackend {
            source,
            extra_env: Vec::new(),
            running: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_INSTALLERS)),
        }
    }

    /// The binary for this request's release, and what its payload says of the release
    /// (nothing for a pinned binary).
    async fn installer(
        &self,
        req: &GenerateRequest,
    ) -> Result<(PathBuf, Option<ReleaseInfo>), InstallError> {
        use crate::service::release::{ImageRef, PullSecret};
        let (client, cache) = match &self.source {
            InstallerSource::Binary(path) => return Ok((path.clone(), None)),
            InstallerSource::ReleasePayload { client, cache } => (client, cache),
        };
        let release_error = |e: String| InstallError::Release {
            release: req.release_image.clone(),
            reason: e,
        };
        ImageRef::parse(&req.release_image).map_err(|e| release_error(e.to_string()))?;
        let secret =
            PullSecret::parse(&req.pull_secret).map_err(|e| release_error(e.to_string()))?;
        // Through the mirrors first, as a host's registries.conf pulls it; a client that
        // trusts the mirrors' CA when there is one.
        let sources = match &req.mirrors {
            Some(m) => crate::domain::mirrors::pull_sources(&req.release_image, m),
            None => vec![req.release_image.clone()],
        };
        let mirror_client = match req.mirrors.as_ref().and_then(|m| m.ca_bundle.as_deref()) {
            Some(ca) => Some(
                crate::service::release::RegistryClient::with_extra_roots(ca)
                    .map_err(|e| release_error(e.to_string()))?,
            ),
            None => None,
        };
        let client = mirror_client.as_ref().unwrap_or(client);
        let mut failures: Vec<String> = Vec::new();
        let mut found = None;
        for source in &sources {
            let attempt = match ImageRef::parse(source) {
                Ok(reference) => cache.get(client, &reference, &secret).await,
                Err(e) => Err(e.into()),
            };
            match attempt {
                Ok(got) => {
                    found = Some(got);
                    break;
                }
                Err(e) => failures.push(format!("{source}: {e}")),
            }
        }
        let (binary, payload) = match (found, failures.as_slice()) {
            (Some(got), _) => got,
            // The release alone: its error as it is.
            (None, [only]) => {
                let why = only.split_once(": ").map_or(only.as_str(), |(_, e)| e);
                return Err(release_error(why.to_string()));
            }
            (None, _) => return Err(release_error(failures.join("; "))),
        };
        let info = ReleaseInfo {
            release_image: req.release_image.clone(),
            mco_image: payload.mco_image().unwrap_or_default().to_string(),
            must_gather_image: payload.must_gather_image().unwrap_or_default().to_string(),
            coreos_image: payload.coreos_image().unwrap_or_default().to_string(),
        };
        tracing::info!(
            release = %req.release_image,
            version = %payload.version,
            binary = %binary.display(),
            "installer from the release payload"
        );
        Ok((binary, Some(info)))
    }

    async fn run(
        &self,
        binary: &Path,
        req: &GenerateRequest,
        dir: &Path,
        args: &[&str],
    ) -> Result<Vec<String>, InstallError> {
        let mut cmd = tokio::process::Command::new(binary);
        cmd.args(args)
            .arg("--dir")
            .arg(dir)
            .env("OPENSHIFT_INSTALL_INVOKER", "assisted-core")
            .envs(self.extra_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(ip) = &req.bootstrap_node_ip {
            cmd.env("OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP", ip);
        }
        if !req.release_image.is_empty() {
            cmd.env(
                "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
                &req.release_image,
            );
        }
        let args_text = format!("{} --dir {}", args.join(" "), dir.display());
        tracing::info!(binary = %binary.display(), args = %args_text, "running installer");
        let mut attempt = 0;
        let out = loop {
            match cmd.output().await {
                Ok(out) => break out,
                // A binary written just before (extracted, or by a test) can still be open
                // for writing in a concurrently forked child; that clears within moments.
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && attempt < 5 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(50 * attempt)).await;
                }
                Err(source) => {
                    return Err(InstallError::Spawn {
                        binary: binary.to_path_buf(),
                        args: args_text,
                        source,
                    });
                }
            }
        };
        if out.status.success() {
            return Ok(installer_warnings(&String::from_utf8_lossy(&out.stderr)));
        }
        Err(InstallError::CommandFailed {
            binary: binary.to_path_buf(),
            args: args_text,
            status: out.status.to_string(),
            stderr_tail: tail(&out.stderr, STDERR_TAIL_BYTES),
        })
    }

    async fn generate_impl(
        &self,
        req: &GenerateRequest,
        dir: &Path,
    ) -> Result<InstallArtifacts, InstallError> {
        // Never closed, so acquiring only waits.
        let _running = self.running.acquire().await.ok();
        let (binary, release) = self.installer(req).await?;
        fresh_work_dir(dir).await?;
        // The installer consumes (deletes) install-config.yaml, so keep our own copy.
        let cfg_path = dir.join("install-config.yaml");
        crate::service::private_fs::write(&cfg_path, req.install_config_yaml.as_bytes())
            .await
            .map_err(|e| InstallError::io("writing install-config.yaml", &cfg_path, e))?;
        let mut warnings = self
            .run(&binary, req, dir, &["create", "manifests"])
            .await?;
        write_manifests(dir, &req.manifests).await?;
        let bootstrap_name = if req.sno {
            warnings.extend(
                self.run(
                    &binary,
                    req,
                    dir,
                    &["create", "single-node-ignition-config"],
                )
                .await?,
            );
            "bootstrap-in-place-for-live-iso.ign"
        } else {
            warnings.extend(
                self.run(&binary, req, dir, &["create", "ignition-configs"])
                    .await?,
            );
            "bootstrap.ign"
        };
        let metadata_json = read_output(dir, "metadata.json").await?;
        let (openshift_cluster_id, infra_id) = metadata_ids(&metadata_json)?;
        let worker_ign = read_output(dir, "worker.ign").await?;
        let master_ign = if req.sno {
            // Single-node output has no master pointer (the host bootstraps in place); one
            // for a later control-plane host points the same way as the worker's, same CA.
            sno_master_pointer(&worker_ign)?
        } else {
            read_output(dir, "master.ign").await?
        };
        let bootstrap_ign = post_process_bootstrap(
            &read_output(dir, bootstrap_name).await?,
            &BootstrapInput {
                sno: req.sno,
                hosts: &req.hosts,
                machine_networks: &req.machine_networks,
            },
        )?;
        Ok(InstallArtifacts {
            bootstrap_ign,
            master_ign,
            worker_ign,
            metadata_json,
            kubeconfig_noingress: read_output(dir, "auth/kubeconfig").await?,
            kubeadmin_password: read_output(dir, "auth/kubeadmin-password").await?,
            install_config_yaml: req.install_config_yaml.clone().into_bytes(),
            openshift_cluster_id,
            infra_id,
            warnings,
            release,
        })
    }
}

/// The `level=warning` lines of the installer's log, message only. The release-image override
/// warning is left out: the core sets `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE` on every run
/// on purpose (as upstream does), so it says nothing about the input.
pub fn installer_warnings(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains("level=warning"))
        .map(|l| match l.split_once("msg=") {
            Some((_, msg)) => unquote_logfmt(msg.trim()),
            None => l.trim().to_string(),
        })
        .filter(|m| !m.starts_with("Found override for release image"))
        .collect()
}

/// A logfmt value: `"a \"quoted\" text"` → `a "quoted" text`; a bare value as is.
fn unquote_logfmt(v: &str) -> String {
    let Some(inner) = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) else {
        return v.to_string();
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some(n @ ('"' | '\\'))) => {
                out.push(n);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// Writes the manifests into `openshift/` and `manifests/` (a user's multi-document YAML as
/// one file per document, as the installer reads one object per file), then applies the
/// `.patch*` files to what the installer and the user wrote.
async fn write_manifests(dir: &Path, manifests: &[Manifest]) -> Result<(), InstallError> {
    for manifest in manifests {
        if !valid_manifest_name(&manifest.name) {
            return Err(InstallError::InvalidInput(format!(
                "manifest name {:?} must be a plain .yaml, .yml, .json or .patch file name",
                manifest.name
            )));
        }
        let parts = split_multi_document(manifest.clone())
            .map_err(|e| InstallError::InvalidInput(e.to_string()))?;
        for part in parts {
            let folder = dir.join(part.folder.dir_name());
            crate::service::private_fs::create_dir_all(&folder)
                .await
                .map_err(|e| InstallError::io("creating a manifests folder", &folder, e))?;
            let path = folder.join(&part.name);
            crate::service::private_fs::write(&path, &part.content)
                .await
                .map_err(|e| InstallError::io("writing a manifest", &path, e))?;
        }
    }
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || apply_patches_in_dir(&dir))
        .await
        .map_err(|e| InstallError::InvalidInput(format!("applying manifest patches: {e}")))?
        .map_err(|e| InstallError::InvalidInput(e.to_string()))
}

/// The SNO master pointer: the installer's worker pointer (its CA included) aimed at the
/// master pool.
fn sno_master_pointer(worker_ign: &[u8]) -> Result<Vec<u8>, InstallError> {
    let bad = |reason: String| InstallError::BadOutput {
        file: "worker.ign".into(),
        reason,
    };
    let mut doc: Value = serde_json::from_slice(worker_ign).map_err(|e| bad(e.to_string()))?;
    let merges = doc
        .pointer_mut("/ignition/config/merge")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| bad("not a pointer config".into()))?;
    for merge in merges {
        if let Some(source) = merge["source"].as_str() {
            merge["source"] = Value::from(source.replace("/config/worker", "/config/master"));
        }
    }
    serde_json::to_vec(&doc).map_err(|e| bad(e.to_string()))
}

impl InstallBackend for OpenshiftInstallBackend {
    fn generate<'a>(&'a self, req: &'a GenerateRequest, work_dir: &'a Path) -> GenerateFuture<'a> {
        Box::pin(self.generate_impl(req, work_dir))
    }
}

async fn read_optional(dir: &Path, name: &str) -> Result<Option<Vec<u8>>, InstallError> {
    let path = dir.join(name);
    match tokio::fs::read(&path).await {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(InstallError::io("reading installer output", path, e)),
    }
}

async fn read_output(dir: &Path, name: &str) -> Result<Vec<u8>, InstallError> {
    read_optional(dir, name)
        .await?
        .ok_or_else(|| InstallError::MissingOutput {
            file: name.to_string(),
            dir: dir.to_path_buf(),
        })
}

/// The last `max` bytes of `s` (cut at a char boundary), trimmed.
fn tail(s: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(s);
    let text = text.trim_end();
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

/// Creates the installer's work directory, which must be empty: the installer resumes from
/// any state file it finds, so a reused directory could silently mix two attempts.
async fn fresh_work_dir(dir: &Path) -> Result<(), InstallError> {
    crate::service::private_fs::create_dir_all(dir)
        .await
        .map_err(|e| InstallError::io("creating the work directory", dir, e))?;
    let mut entries = tokio::fs::read_dir(dir)
        .await
        .map_err(|e| InstallError::io("listing the work directory", dir, e))?;
    let first = entries
        .next_entry()
        .await
        .map_err(|e| InstallError::io("listing the work directory", dir, e))?;
    if first.is_some() {
        return Err(InstallError::InvalidInput(format!(
            "work directory {} is not empty",
            dir.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::os::unix::fs::PermissionsExt;

    /// A fake installer: logs argv and the two env vars, writes plausible outputs.
    const FAKE: &str = r#"#!/bin/sh
set -e
log="$(dirname "$0")/calls.log"
echo "ARGS $* | RELEASE=$OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE | INVOKER=$OPENSHIFT_INSTALL_INVOKER | EXTRA=$EXTRA_VAR | NODE_IP=$OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP" >> "$log"
dir="$4"
case "$2" in
  manifests)
    test -f "$dir/install-config.yaml"
    mkdir -p "$dir/manifests"; rm "$dir/install-config.yaml" ;;
  ignition-configs)
    ls "$dir/openshift" > "$(dirname "$0")/openshift.ls" 2>/dev/null || true
    echo '{"ignition":{"version":"3.2.0"}}' > "$dir/bootstrap.ign"
    echo '{"ignition":{"version":"3.2.0"},"m":1}' > "$dir/master.ign"
    echo '{"ignition":{"version":"3.2.0"},"w":1}' > "$dir/worker.ign" ;;
  single-node-ignition-config)
    ls "$dir/openshift" > "$(dirname "$0")/openshift.ls" 2>/dev/null || true
    echo '{"ignition":{"version":"3.2.0"},"sno":1}' > "$dir/bootstrap-in-place-for-live-iso.ign"
    echo '{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://api-int.c.example.com:22623/config/worker"}]}}}' > "$dir/worker.ign" ;;
esac
if [ "$2" != manifests ]; then
  mkdir -p "$dir/auth"
  echo 'apiVersion: v1' > "$dir/auth/kubeconfig"
  printf 'abcde-fghij-klmno-pqrst' > "$dir/auth/kubeadmin-password"
  echo '{"clusterName":"c","clusterID":"0f0e-id","infraID":"c-x1y2z"}' > "$dir/metadata.json"
fi
"#;

    fn script(dir: &Path, body: &str) -> PathBuf {
        let p = dir.join("openshift-install");
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn req(sno: bool) -> GenerateRequest {
        GenerateRequest {
            cluster_id: "cid".into(),
            cluster_name: "c".into(),
            base_domain: "example.com".into(),
            install_config_yaml: "apiVersion: v1\n".into(),
            sno,
            release_image: "quay.io/openshift-release-dev/ocp-release:4.16.0-x86_64".into(),
            api_url: "https://api.c.example.com:6443".into(),
            hosts: vec![],
            machine_networks: vec![],
            pull_secret: String::new(),
            bootstrap_node_ip: sno.then(|| "192.168.111.20".to_string()),
            manifests: vec![Manifest {
                folder: crate::service::install::ManifestFolder::Openshift,
                name: "50-extra.yaml".into(),
                content: b"kind: ConfigMap\n".to_vec(),
                user: true,
            }],
            mirrors: None,
        }
    }

    #[tokio::test]
    async fn runs_manifests_then_ignition_configs() {
        let tmp = tempfile::tempdir().unwrap();
        let backend: Arc<dyn InstallBackend> = Arc::new(OpenshiftInstallBackend {
            extra_env: vec![("EXTRA_VAR".into(), "yes".into())],
            ..OpenshiftInstallBackend::new(script(tmp.path(), FAKE))
        });
        let work = tmp.path().join("work");
        let a = backend.generate(&req(false), &work).await.unwrap();
        let log = std::fs::read_to_string(tmp.path().join("calls.log")).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2, "{log}");
        let w = work.display();
        assert!(
            lines[0].starts_with(&format!("ARGS create manifests --dir {w} |")),
            "{log}"
        );
        assert!(
            lines[1].starts_with(&format!("ARGS create ignition-configs --dir {w} |")),
            "{log}"
        );
        assert!(
            lines[0].contains("RELEASE=quay.io/openshift-release-dev/ocp-release:4.16.0-x86_64")
        );
        assert!(lines[0].contains("INVOKER=assisted-core"));
        assert!(lines[0].contains("EXTRA=yes"));
        // The user manifest was in openshift/ when the ignitions were made.
        let seen = std::fs::read_to_string(tmp.path().join("openshift.ls")).unwrap();
        assert_eq!(seen.trim(), "50-extra.yaml");
        assert_eq!(
            a.master_ign,
            b"{\"ignition\":{\"version\":\"3.2.0\"},\"m\":1}\n"
        );
        // Multi-node bootstrap gets the assisted marker.
        let bootstrap: Value = serde_json::from_slice(&a.bootstrap_ign).unwrap();
        assert_eq!(
            bootstrap["storage"]["files"][0]["path"],
            "/opt/openshift/assisted-install-bootstrap"
        );
        assert_eq!(a.kubeadmin_password, b"abcde-fghij-klmno-pqrst");
        assert_eq!(a.kubeconfig_noingress, b"apiVersion: v1\n");
        assert_eq!(a.install_config_yaml, b"apiVersion: v1\n");
        assert_eq!(a.openshift_cluster_id, "0f0e-id");
        assert_eq!(a.infra_id, "c-x1y2z");
        assert_eq!(a.files()[0].0, "bootstrap.ign");
    }

    #[tokio::test]
    async fn sno_uses_bootstrap_in_place_ignition() {
        let tmp = tempfile::tempdir().unwrap();
        let backend = OpenshiftInstallBackend::new(script(tmp.path(), FAKE));
        let a = backend
            .generate(&req(true), &tmp.path().join("w"))
            .await
            .unwrap();
        let log = std::fs::read_to_string(tmp.path().join("calls.log")).unwrap();
        assert!(
            log.contains("ARGS create single-node-ignition-config --dir"),
            "{log}"
        );
        assert!(!log.contains("ignition-configs --dir"), "{log}");
        assert!(log.contains("NODE_IP=192.168.111.20"), "{log}");
        let bootstrap: Value = serde_json::from_slice(&a.bootstrap_ign).unwrap();
        assert_eq!(bootstrap["sno"], 1);
        assert_eq!(bootstrap["storage"]["files"], serde_json::json!([]));
        let master: Value = serde_json::from_slice(&a.master_ign).unwrap();
        assert_eq!(
            master["ignition"]["config"]["merge"][0]["source"],
            "https://api-int.c.example.com:22623/config/master"
        );
    }

    #[tokio::test]
    async fn failure_reports_stderr_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let body = "#!/bin/sh\ni=0\nwhile [ $i -lt 500 ]; do echo \"noise line $i\" >&2; i=$((i+1)); done\necho 'FATAL failed to fetch Master Machines: bad platform' >&2\nexit 3\n";
        let backend = OpenshiftInstallBackend::new(script(tmp.path(), body));
        let err = backend
            .generate(&req(false), &tmp.path().join("w"))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, InstallError::CommandFailed { .. }), "{text}");
        assert!(text.contains("create manifests"), "{text}");
        assert!(
            text.ends_with("FATAL failed to fetch Master Machines: bad platform"),
            "{text}"
        );
        assert!(!text.contains("noise line 0\n"), "tail only: {text}");
        assert!(text.contains('3'), "{text}");
    }

    #[tokio::test]
    async fn missing_output_and_missing_binary() {
        let tmp = tempfile::tempdir().unwrap();
        let backend = OpenshiftInstallBackend::new(script(tmp.path(), "#!/bin/sh\nexit 0\n"));
        let err = backend
            .generate(&req(false), &tmp.path().join("w"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, InstallError::MissingOutput { file, .. } if file == "metadata.json"),
            "{err}"
        );
        // Reusing the directory of the failed attempt is refused.
        let err = backend
            .generate(&req(false), &tmp.path().join("w"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not empty"), "{err}");
        let backend = OpenshiftInstallBackend::new(tmp.path().join("nope"));
        let err = backend
            .generate(&req(false), &tmp.path().join("w2"))
            .await
            .unwrap_err();
        assert!(matches!(err, InstallError::Spawn { .. }), "{err}");
    }

    #[test]
    fn warnings_are_read_from_the_log_without_the_release_override() {
        let log = concat!(
            "level=info msg=Consuming Install Config from target directory\n",
            "level=warning msg=\"Found override for release image (quay.io/x:1). Please be warned, this is not advised\"\n",
            "level=warning msg=\"failed to parse first occurrence of unknown field: failed to unmarshal install-config.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field \\\"additionalNTPServers\\\"\"\n",
            "level=warning msg=Making control-plane schedulable\n",
        );
        assert_eq!(
            installer_warnings(log),
            [
                "failed to parse first occurrence of unknown field: failed to unmarshal install-config.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field \"additionalNTPServers\"",
                "Making control-plane schedulable",
            ]
        );
        assert!(installer_warnings("level=info msg=ok\n").is_empty());
    }

    #[test]
    fn tail_respects_char_boundaries() {
        assert_eq!(tail("ééé\n".as_bytes(), 3), "é");
        assert_eq!(tail(b"abc", 10), "abc");
    }
}
