//! Finds the binaries and manifests `tests/testbed/build.sh` put in the cache.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Files whose content makes the cache key, in this order. Keep in sync with `key_files` in
/// `tests/testbed/build.sh`.
const KEY_FILES: &[&str] = &[
    "go.mod",
    "go.sum",
    "cert-manager/go.mod",
    "cert-manager/go.sum",
    "metal3/go.mod",
    "metal3/go.sum",
    "helm/go.mod",
    "helm/go.sum",
    "cmd/etcd/main.go",
    "pause/pause.c",
    "../../images/oci-image.sh",
    "build.sh",
];

/// Environment variable that, when set to `1`, makes [`crate::skip`] return true so that tests
/// needing the testbed return early instead of failing when it is not built.
pub const SKIP_ENV: &str = "CAPOA_TESTBED_SKIP";

/// The repository root (this crate lives in `tests/harness`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The OCI archives `make images` writes for our two managers (`target/images/`), bootstrap
/// first; an error naming `make images` if one is missing.
pub fn our_images() -> Result<Vec<PathBuf>> {
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    let dir = repo_root().join("target/images");
    let images: Vec<PathBuf> = ["bootstrap-provider", "controlplane-provider"]
        .iter()
        .map(|n| dir.join(format!("{n}-{version}.tar")))
        .collect();
    if let Some(missing) = images.iter().find(|i| !i.exists()) {
        bail!("{} is missing: run `make images` first", missing.display());
    }
    Ok(images)
}

/// The cache key build.sh uses: the first 16 hex digits of the SHA-256 of [`KEY_FILES`].
pub fn key() -> Result<String> {
    let dir = repo_root().join("tests/testbed");
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for f in KEY_FILES {
        let path = dir.join(f);
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        ctx.update(&bytes);
    }
    let digest = ctx.finish();
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    Ok(hex[..16].to_owned())
}

/// `${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs`, where every build script of the tests writes.
fn cache_root() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => {
            let home = std::env::var_os("HOME").context("HOME is not set")?;
            PathBuf::from(home).join(".cache")
        }
    };
    Ok(base.join("capoa-rs"))
}

/// `${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/testbed/<key>`, exactly as build.sh computes it.
pub fn dir() -> Result<PathBuf> {
    Ok(cache_root()?.join("testbed").join(key()?))
}

/// The OpenShift CRDs `tests/openshift-api/fetch.sh` copied from the openshift/api module (into
/// the directory its `CACHE_KEY=` line names); an error naming the script when they are missing.
pub fn openshift_crds() -> Result<Vec<PathBuf>> {
    let script = repo_root().join("tests/openshift-api/fetch.sh");
    let text = std::fs::read_to_string(&script)
        .with_context(|| format!("reading {}", script.display()))?;
    let key = text
        .lines()
        .find_map(|l| l.strip_prefix("CACHE_KEY="))
        .and_then(|v| v.split_whitespace().next())
        .with_context(|| format!("no CACHE_KEY= line in {}", script.display()))?;
    let dir = cache_root()?.join(format!("openshift-api-{key}"));
    if !dir.join(".complete").exists() {
        bail!(
            "the OpenShift CRDs are not in {}: run `bash tests/openshift-api/fetch.sh` (make test and make lab do)",
            dir.display()
        );
    }
    let mut crds: Vec<PathBuf> = std::fs::read_dir(dir.join("crds"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    crds.sort();
    Ok(crds)
}

/// A complete testbed build.
#[derive(Debug, Clone)]
pub struct Cache {
    pub dir: PathBuf,
}

impl Cache {
    /// The current build, or an error telling the reader to run `make testbed`.
    pub fn locate() -> Result<Cache> {
        let dir = dir()?;
        if !dir.join(".complete").is_file() {
            bail!(
                "the testbed (kube-apiserver, etcd, kube-controller-manager, Cluster API, clusterctl, Metal3) \
                 is not built for the current tests/testbed/go.mod: {} is missing or incomplete.\n\
                 Run `make testbed` (bash tests/testbed/build.sh) first, or set {SKIP_ENV}=1 to skip \
                 the tests that need it.",
                dir.display()
            );
        }
        Ok(Cache { dir })
    }

    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("bin").join(name)
    }

    pub fn manifests(&self) -> PathBuf {
        self.dir.join("manifests")
    }

    /// An OCI archive build.sh wrote for the node (`images/<file>`).
    pub fn image(&self, file: &str) -> PathBuf {
        self.dir.join("images").join(file)
    }

    /// Every OCI archive build.sh wrote for the node but the sandbox image (`images/images.txt`).
    pub fn node_images(&self) -> Result<Vec<PathBuf>> {
        let list = self.dir.join("images/images.txt");
        let text = std::fs::read_to_string(&list)
            .with_context(|| format!("reading {}", list.display()))?;
        Ok(text
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .filter(|f| *f != "pause.tar")
            .map(|f| self.image(f))
            .collect())
    }

    /// A value from `versions.env` (e.g. `CLUSTER_API_VERSION`).
    pub fn version(&self, name: &str) -> Result<String> {
        let path = self.dir.join("versions.env");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
            .map(str::to_owned)
            .with_context(|| format!("{name} is not in {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    /// build.sh and the harness must agree on the key, or the tests never find the build.
    #[test]
    fn key_matches_build_sh() {
        let dir = super::repo_root().join("tests/testbed");
        let script = format!(
            "cat {} | sha256sum | cut -c1-16",
            super::KEY_FILES.join(" ")
        );
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(&dir)
            .output()
            .expect("run sha256sum");
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            super::key().unwrap()
        );
        let build_sh = std::fs::read_to_string(dir.join("build.sh")).unwrap();
        let listed = format!("key_files=({})", super::KEY_FILES.join(" "));
        assert!(build_sh.contains(&listed), "build.sh must list {listed}");
    }
}
