//! `--disconnected`: the site's mirror registry and what pulls through it. The test bed's real
//! OCI registry (`crane registry serve`) behind an https front with its own CA and Basic auth
//! ([`testbed::registry::Gate`]) holds, only under mirror paths, the release the clusters
//! install and the assisted images our core hands out (by digest). Each cluster gets a mirror
//! ConfigMap in CAPOA's format named by its control plane's `imageRegistryRef`, and its pull
//! secret gets the mirror's credentials. Each simulated host pulls as its podman would, through
//! the `registries.conf` and CA of its discovery ignition ([`HostRuntime`]): the agent image at
//! boot, the images of the availability check, the installer image at the install step. A
//! wrong mirror or CA fails there, as it would on a site.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use assisted_core::domain::mirrors::{self, MirrorConfig};
use assisted_core::service::release::{ImageRef, PullSecret, RegistryClient};
use base64::Engine;
use serde_json::{Value, json};
use testbed::registry::{Gate, Registry, push_file_image};

/// The ConfigMap each cluster's control plane names in `spec.config.imageRegistryRef`.
pub const CONFIG_MAP: &str = "mirror-registries";
/// The mirror's Basic-auth user (its password is made per run).
pub const USER: &str = "mirror";

/// Where the sources live in the mirror, as `oc-mirror` lays a release out.
const RELEASE_SOURCE: &str = "quay.io/openshift-release-dev/ocp-release";
const COMPONENTS_SOURCE: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev";
const RELEASE_MIRROR_PATH: &str = "ocp4/openshift4";
const ASSISTED_SOURCE: &str = "quay.io/edge-infrastructure";
const ASSISTED_MIRROR_PATH: &str = "edge-infrastructure";

/// The images the mirror holds, named as a user's cluster names them (their sources).
#[derive(Debug, Clone)]
pub struct MirrorImages {
    /// The release by tag, what `distributionVersion` becomes (the control plane pins it).
    pub release: String,
    /// The release by digest, what the pinned ClusterImageSet must name.
    pub release_by_digest: String,
    /// The core's agent, installer and installer-controller images, by digest.
    pub agent: String,
    pub installer: String,
    pub controller: String,
}

/// The site's registry with the images loaded, its https front not open yet.
pub struct Loaded {
    registry: Registry,
    pub images: MirrorImages,
}

/// The site's mirror registry, running; gone when dropped.
pub struct Mirror {
    gate: Gate,
    _registry: Registry,
    password: String,
    pub images: MirrorImages,
}

impl Loaded {
    /// Starts the registry and pushes the release of `version` (x86_64) and the assisted
    /// images under their mirror paths.
    pub fn start(version: &str) -> Result<Loaded> {
        let registry = Registry::start()?;
        let local = |path: &str| format!("{}/{path}", registry.host);
        let digest_of = |pushed: &str| -> Result<String> {
            pushed
                .split_once('@')
                .map(|(_, d)| d.to_string())
                .with_context(|| format!("crane gave {pushed:?}, not a pull spec by digest"))
        };
        let tag = format!("{version}-x86_64");
        let metadata = json!({"kind": "cincinnati-metadata-v0", "version": version,
                              "previous": [], "metadata": {}});
        let release = push_file_image(
            &local(&format!("{RELEASE_MIRROR_PATH}:{tag}")),
            "release-metadata",
            metadata.to_string().as_bytes(),
        )?;
        let mut assisted = BTreeMap::new();
        for name in [
            "assisted-installer-agent",
            "assisted-installer",
            "assisted-installer-controller",
        ] {
            let pushed = push_file_image(
                &local(&format!("{ASSISTED_MIRROR_PATH}/{name}:latest")),
                "name",
                name.as_bytes(),
            )?;
            assisted.insert(
                name,
                format!("{ASSISTED_SOURCE}/{name}@{}", digest_of(&pushed)?),
            );
        }
        let images = MirrorImages {
            release: format!("{RELEASE_SOURCE}:{tag}"),
            release_by_digest: format!("{RELEASE_SOURCE}@{}", digest_of(&release)?),
            agent: assisted["assisted-installer-agent"].clone(),
            installer: assisted["assisted-installer"].clone(),
            controller: assisted["assisted-installer-controller"].clone(),
        };
        Ok(Loaded { registry, images })
    }

    /// The core's flags naming the assisted images by digest.
    pub fn core_args(&self) -> Vec<String> {
        vec![
            format!("--agent-image={}", self.images.agent),
            format!("--installer-image={}", self.images.installer),
            format!("--controller-image={}", self.images.controller),
        ]
    }

    /// Opens the https front on `ip` (where the managers and the hosts reach it).
    pub async fn open(self, ip: &str) -> Result<Mirror> {
        let password = format!("{:016x}", rand_u64());
        let gate = Gate::start_on(ip, &self.registry, USER, &password).await?;
        Ok(Mirror {
            gate,
            _registry: self.registry,
            password,
            images: self.images,
        })
    }
}

impl Mirror {
    /// `host:port` of the mirror (https).
    pub fn host(&self) -> &str {
        &self.gate.host
    }

    /// The mirror's CA (the ConfigMap's `ca-bundle.crt`).
    pub fn ca_pem(&self) -> &str {
        &self.gate.ca_pem
    }

    /// The `registries.conf` a user writes for this mirror.
    pub fn registries_conf(&self) -> String {
        registries_conf(&self.gate.host)
    }

    /// The pull-secret entry for the mirror: (`host:port`, base64 of `user:password`).
    pub fn auth(&self) -> (String, String) {
        (
            self.gate.host.clone(),
            base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{}", self.password)),
        )
    }

    /// What the mirror served so far: (manifests by digest, manifests by tag with their
    /// references, refused requests).
    pub fn served(&self) -> Served {
        Served::of(&self.gate.served())
    }
}

/// A summary of what the mirror served.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Served {
    pub manifests_by_digest: usize,
    /// `repository:tag` of each manifest asked for by tag, each once.
    pub tags: Vec<String>,
    pub blobs: usize,
    /// Requests answered 401 (a client without the credentials, or the first request of
    /// one that sends them only when challenged).
    pub unauthorized: usize,
}

impl Served {
    fn of(served: &[testbed::registry::Served]) -> Served {
        let mut out = Served::default();
        for s in served {
            if s.status == 401 {
                out.unauthorized += 1;
                continue;
            }
            match s.manifest() {
                Some((_, reference)) if reference.starts_with("sha256:") => {
                    out.manifests_by_digest += 1
                }
                Some((repo, tag)) => {
                    let t = format!("{repo}:{tag}");
                    if !out.tags.contains(&t) {
                        out.tags.push(t);
                    }
                }
                None if s.path.contains("/blobs/") => out.blobs += 1,
                None => {}
            }
        }
        out
    }
}

/// A per-run value (the password only keeps other clients out of the test bed's mirror).
fn rand_u64() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(Instant::now())
}

/// The `registries.conf` for a mirror at `host`: the release, its components and the
/// assisted images, each source to its mirror path (pulls by digest and by tag).
pub fn registries_conf(host: &str) -> String {
    [
        (RELEASE_SOURCE, RELEASE_MIRROR_PATH),
        (COMPONENTS_SOURCE, RELEASE_MIRROR_PATH),
        (ASSISTED_SOURCE, ASSISTED_MIRROR_PATH),
    ]
    .iter()
    .map(|(source, path)| {
        format!(
            "[[registry]]\nlocation = \"{source}\"\n\n[[registry.mirror]]\nlocation = \"{host}/{path}\"\n"
        )
    })
    .collect::<Vec<_>>()
    .join("\n")
}

/// The mirror ConfigMap of a cluster in `ns`, in CAPOA's format.
pub fn config_map(ns: &str, registries_conf: &str, ca_pem: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": ns},
        "data": {
            mirrors::REGISTRIES_CONF_KEY: registries_conf,
            mirrors::CA_BUNDLE_KEY: ca_pem,
        },
    })
}

/// A cluster's manifests made disconnected: the control plane names the mirror ConfigMap
/// (added before the cluster's objects), the pull secret it names gains `auth` for the mirror.
/// Errors when the manifests have no control plane or no such pull secret.
pub fn make_disconnected(
    objects: &mut Vec<Value>,
    config_map: Value,
    (mirror_host, auth): (&str, &str),
) -> Result<()> {
    crate::manifests::control_plane_mut(objects)?["spec"]["config"]["imageRegistryRef"] =
        json!({"name": CONFIG_MAP});
    crate::manifests::add_pull_secret_auth(objects, mirror_host, auth)?;
    objects.insert(0, config_map);
    Ok(())
}

/// The typo `--disconnected broken-config-map` puts in the ConfigMap: an unquoted location.
pub fn broken_registries_conf(host: &str) -> String {
    registries_conf(host).replacen(
        &format!("location = \"{RELEASE_SOURCE}\""),
        &format!("location = {RELEASE_SOURCE}"),
        1,
    )
}

/// What the disconnected run saw of the mirror, checked at its end.
#[derive(Debug, Clone, Default)]
pub struct MirrorReport {
    /// `host:port` of the mirror.
    pub host: String,
    pub served: Served,
    /// The release the clusters were asked with (a tag), and where the control plane pinned
    /// it (the expected digest).
    pub release_tag: String,
    pub release_by_digest: String,
    /// Every host pull: image and where from (or why not).
    pub pulls: Vec<PullRecord>,
}

impl MirrorReport {
    pub fn new(mirror: &Mirror, pulls: Vec<PullRecord>) -> MirrorReport {
        MirrorReport {
            host: mirror.host().to_string(),
            served: mirror.served(),
            release_tag: mirror.images.release.clone(),
            release_by_digest: mirror.images.release_by_digest.clone(),
            pulls,
        }
    }

    /// Pulls that did not come from the mirror (failed, or from a source).
    pub fn astray(&self) -> Vec<String> {
        self.pulls
            .iter()
            .filter_map(|p| match &p.result {
                Ok(from) if from.starts_with(&format!("{}/", self.host)) => None,
                Ok(from) => Some(format!("{} pulled {} from {from}", p.host, p.image)),
                Err(e) => Some(format!("{} could not pull {}: {e}", p.host, p.image)),
            })
            .collect()
    }

    /// Images the hosts pulled by tag.
    pub fn pulled_by_tag(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .pulls
            .iter()
            .filter(|p| !p.image.contains("@sha256:"))
            .map(|p| p.image.clone())
            .collect();
        out.dedup();
        out
    }

    /// What is wrong with a run that installed through the mirror, or `None`: a host pull
    /// that failed or went elsewhere, an image pulled by tag, no pull at all, a tag asked of
    /// the mirror other than the release's (the control plane's pin).
    pub fn problem(&self) -> Option<String> {
        if self.pulls.is_empty() {
            return Some("disconnected: no host pulled anything through the mirror".into());
        }
        let astray = self.astray();
        if !astray.is_empty() {
            return Some(format!("disconnected: {}", astray.join("; ")));
        }
        let by_tag = self.pulled_by_tag();
        if !by_tag.is_empty() {
            return Some(format!(
                "disconnected: hosts pulled by tag: {}",
                by_tag.join(", ")
            ));
        }
        let release_tag = self.release_tag.rsplit(':').next().unwrap_or_default();
        let other_tags: Vec<&String> = self
            .served
            .tags
            .iter()
            .filter(|t| !t.ends_with(&format!(":{release_tag}")))
            .collect();
        if !other_tags.is_empty() {
            return Some(format!(
                "disconnected: the mirror was asked for tags other than the release's: {other_tags:?}"
            ));
        }
        None
    }

    /// The summary line of the timeline.
    pub fn describe(&self) -> String {
        let hosts: std::collections::BTreeSet<&str> =
            self.pulls.iter().map(|p| p.host.as_str()).collect();
        format!(
            "mirror {}: {} pulls by {} hosts, all by digest from the mirror; the mirror served {} manifests by digest and {} blobs, and by tag only {} (the control plane pinning the release to {})",
            self.host,
            self.pulls.len(),
            hosts.len(),
            self.served.manifests_by_digest,
            self.served.blobs,
            if self.served.tags.is_empty() {
                "nothing".to_string()
            } else {
                self.served.tags.join(", ")
            },
            self.release_by_digest
        )
    }
}

/// One pull a host made, for the timeline.
#[derive(Debug, Clone)]
pub struct PullRecord {
    pub host: String,
    pub image: String,
    pub result: Result<String, String>,
}

/// A simulated host's container runtime: pulls through its discovery ignition's
/// `registries.conf` (the mirrors of the longest matching `[[registry]]` that serve that kind
/// of pull, in order, then the source), trusting its CA, with the credentials of its pull
/// secret, as podman does. A pull reads the image's manifest (and so checks it exists and is
/// readable); the layers are not downloaded.
#[derive(Debug)]
pub struct HostRuntime {
    host: String,
    mirrors: Option<MirrorConfig>,
    client: RegistryClient,
    secret: PullSecret,
    log: Arc<Mutex<Vec<PullRecord>>>,
}

impl HostRuntime {
    /// The runtime of `host` booted with these files of its discovery ignition; each pull is
    /// appended to `log`.
    pub fn new(
        host: &str,
        registries_conf: Option<&str>,
        mirror_ca: Option<&str>,
        pull_secret: Option<&str>,
        log: Arc<Mutex<Vec<PullRecord>>>,
    ) -> Result<HostRuntime> {
        let mirrors = match registries_conf {
            Some(conf) => {
                let mut data =
                    BTreeMap::from([(mirrors::REGISTRIES_CONF_KEY.to_string(), conf.to_string())]);
                if let Some(ca) = mirror_ca {
                    data.insert(mirrors::CA_BUNDLE_KEY.to_string(), ca.to_string());
                }
                Some(
                    mirrors::parse(&data)
                        .map_err(|e| anyhow::anyhow!("{host}'s registries.conf: {e}"))?,
                )
            }
            None => None,
        };
        let client = match mirror_ca {
            Some(ca) => RegistryClient::with_extra_roots(ca),
            None => RegistryClient::new(),
        }
        .map_err(|e| anyhow::anyhow!("{host}'s container runtime: {e}"))?;
        let secret = PullSecret::parse(pull_secret.unwrap_or("{\"auths\":{}}"))
            .map_err(|e| anyhow::anyhow!("{host}'s pull secret: {e}"))?;
        Ok(HostRuntime {
            host: host.to_string(),
            mirrors,
            client,
            secret,
            log,
        })
    }

    /// Pulls `image` without keeping the pull in the log.
    pub async fn pull_unrecorded(&self, image: &str) -> Result<agent_sim::Pulled, String> {
        let started = Instant::now();
        let sources = match &self.mirrors {
            Some(m) => mirrors::pull_sources(image, m),
            None => vec![image.to_string()],
        };
        let mut failures = Vec::new();
        for source in &sources {
            let r = match ImageRef::parse(source) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{source}: {e}"));
                    continue;
                }
            };
            let creds = self.secret.credentials_for(&r.registry);
            match self.client.manifest(&r, creds).await {
                Ok((bytes, _, _)) => {
                    return Ok(agent_sim::Pulled {
                        from: source.clone(),
                        size_bytes: image_size(&bytes),
                        seconds: started.elapsed().as_secs_f64(),
                    });
                }
                Err(e) => failures.push(format!("{source}: {e}")),
            }
        }
        Err(failures.join("; "))
    }
}

impl HostRuntime {
    /// Keeps a pull in the log.
    pub fn record(&self, image: &str, pulled: &Result<agent_sim::Pulled, String>) {
        if let Ok(mut log) = self.log.lock() {
            log.push(PullRecord {
                host: self.host.clone(),
                image: image.to_string(),
                result: pulled
                    .as_ref()
                    .map(|p| p.from.clone())
                    .map_err(Clone::clone),
            });
        }
    }
}

/// The bytes a pull downloads: the manifest's config and layers (or the manifest itself when
/// it names none).
fn image_size(manifest: &[u8]) -> f64 {
    let v: Value = serde_json::from_slice(manifest).unwrap_or_default();
    let size = |d: &Value| d["size"].as_f64().unwrap_or(0.0);
    let layers: f64 = v["layers"]
        .as_array()
        .map_or(0.0, |l| l.iter().map(size).sum());
    let total = layers + size(&v["config"]);
    if total > 0.0 {
        total
    } else {
        manifest.len() as f64
    }
}

impl agent_sim::ContainerRuntime for HostRuntime {
    fn pull<'a>(&'a self, image: &'a str) -> agent_sim::runtime::PullFuture<'a> {
        Box::pin(async move {
            let pulled = self.pull_unrecorded(image).await;
            self.record(image, &pulled);
            pulled
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects() -> Vec<Value> {
        let mut out = testbed::resources::parse_yaml(&crate::manifests::pull_secret_yaml(
            "lab",
            "pull-secret",
        ))
        .unwrap();
        out.push(json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3",
            "kind": "OpenshiftAssistedControlPlane",
            "metadata": {"name": "sno-cp", "namespace": "lab"},
            "spec": {"config": {"pullSecretRef": {"name": "pull-secret"}}},
        }));
        out
    }

    #[test]
    fn a_cluster_names_its_mirror_and_its_pull_secret_lets_it_in() {
        let mut o = objects();
        let cm = config_map("lab", &registries_conf("127.0.0.2:5000"), "CA");
        make_disconnected(&mut o, cm.clone(), ("127.0.0.2:5000", "bWlycm9yOnB3")).unwrap();
        assert_eq!(o[0], cm, "the ConfigMap comes first");
        let cp = o
            .iter()
            .find(|v| v["kind"] == "OpenshiftAssistedControlPlane")
            .unwrap();
        assert_eq!(
            cp["spec"]["config"]["imageRegistryRef"],
            json!({"name": CONFIG_MAP})
        );
        let secret = o.iter().find(|v| v["kind"] == "Secret").unwrap();
        let auths: Value =
            serde_json::from_str(secret["stringData"][".dockerconfigjson"].as_str().unwrap())
                .unwrap();
        assert_eq!(auths["auths"]["127.0.0.2:5000"]["auth"], "bWlycm9yOnB3");
        assert!(auths["auths"]["quay.io"].is_object(), "the rest kept");
    }

    #[test]
    fn manifests_without_the_pull_secret_are_refused() {
        let mut o = objects();
        o.remove(0);
        let e = make_disconnected(&mut o, json!({}), ("h", "a")).unwrap_err();
        assert!(e.to_string().contains("no Secret pull-secret"), "{e}");
        let e = make_disconnected(&mut Vec::new(), json!({}), ("h", "a")).unwrap_err();
        assert!(
            e.to_string().contains("OpenshiftAssistedControlPlane"),
            "{e}"
        );
    }

    #[test]
    fn the_registries_conf_mirrors_the_release_and_the_assisted_images() {
        let conf = registries_conf("127.0.0.2:5000");
        let m = mirrors::parse(&BTreeMap::from([(
            mirrors::REGISTRIES_CONF_KEY.to_string(),
            conf,
        )]))
        .unwrap();
        assert_eq!(
            mirrors::pull_sources("quay.io/openshift-release-dev/ocp-release@sha256:ab", &m)[0],
            "127.0.0.2:5000/ocp4/openshift4@sha256:ab"
        );
        assert_eq!(
            mirrors::pull_sources(
                "quay.io/edge-infrastructure/assisted-installer@sha256:cd",
                &m
            )[0],
            "127.0.0.2:5000/edge-infrastructure/assisted-installer@sha256:cd"
        );
    }

    #[test]
    fn the_broken_config_map_has_its_typo_on_a_line_the_parser_names() {
        let conf = broken_registries_conf("127.0.0.2:5000");
        let e = mirrors::parse(&BTreeMap::from([(
            mirrors::REGISTRIES_CONF_KEY.to_string(),
            conf,
        )]))
        .unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn a_disconnected_run_is_checked_pull_by_pull() {
        let pull = |image: &str, result: Result<&str, &str>| PullRecord {
            host: "master-0".into(),
            image: image.into(),
            result: result.map(String::from).map_err(String::from),
        };
        let mut r = MirrorReport {
            host: "127.0.0.2:5000".into(),
            release_tag: "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64".into(),
            release_by_digest: "quay.io/openshift-release-dev/ocp-release@sha256:ab".into(),
            ..MirrorReport::default()
        };
        assert!(r.problem().unwrap().contains("no host pulled"));
        r.pulls = vec![pull("quay.io/a@sha256:1", Ok("127.0.0.2:5000/a@sha256:1"))];
        r.served.tags = vec!["ocp4/openshift4:4.17.3-x86_64".into()];
        assert_eq!(r.problem(), None);
        r.served
            .tags
            .push("edge-infrastructure/assisted-installer:latest".into());
        assert!(r.problem().unwrap().contains("tags other than"));
        r.served.tags.pop();
        r.pulls
            .push(pull("quay.io/b:latest", Ok("127.0.0.2:5000/b:latest")));
        assert!(r.problem().unwrap().contains("by tag: quay.io/b:latest"));
        r.pulls.pop();
        r.pulls
            .push(pull("quay.io/c@sha256:2", Ok("quay.io/c@sha256:2")));
        assert!(r.problem().unwrap().contains("from quay.io/c@sha256:2"));
        r.pulls.pop();
        r.pulls.push(pull("quay.io/c@sha256:2", Err("401")));
        assert!(
            r.problem()
                .unwrap()
                .contains("could not pull quay.io/c@sha256:2: 401")
        );
    }

    #[test]
    fn what_the_mirror_served_is_counted_by_kind() {
        let s = |path: &str, status: u16| testbed::registry::Served {
            method: "GET".into(),
            path: path.into(),
            status,
        };
        let served = Served::of(&[
            s("/v2/", 401),
            s("/v2/ocp4/openshift4/manifests/4.17.3-x86_64", 200),
            s("/v2/ocp4/openshift4/manifests/4.17.3-x86_64", 200),
            s("/v2/ocp4/openshift4/manifests/sha256:ab", 200),
            s("/v2/ocp4/openshift4/blobs/sha256:cd", 200),
        ]);
        assert_eq!(
            served,
            Served {
                manifests_by_digest: 1,
                tags: vec!["ocp4/openshift4:4.17.3-x86_64".into()],
                blobs: 1,
                unauthorized: 1,
            }
        );
    }

    #[test]
    fn an_image_weighs_its_config_and_layers() {
        let m = json!({"config": {"size": 10}, "layers": [{"size": 100}, {"size": 1000}]});
        assert_eq!(image_size(m.to_string().as_bytes()), 1110.0);
        assert_eq!(image_size(b"{}"), 2.0);
    }
}
