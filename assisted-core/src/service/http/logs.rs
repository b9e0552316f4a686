//! The cluster's logs bundle, `GET /clusters/{id}/logs` (the AgentClusterInstall's
//! `status.debugInfo.logsURL`): the archives the hosts and the installer controller uploaded,
//! the core's view of the cluster (`cluster.json`, what `GET /clusters/{id}` answers), and what
//! other controllers attach to the cluster: the data of every ConfigMap labelled
//! [`LOGS_OF_LABEL`] with the AgentClusterInstall's name, in its namespace (the control plane
//! attaches image mode's MachineOSConfigs and pools this way; it may run apart from the core).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::ConfigMap;

/// The label of a ConfigMap whose data belongs in a cluster's logs bundle; its value is the
/// AgentClusterInstall's name, in the same namespace.
pub const LOGS_OF_LABEL: &str = "assisted-core.openshift.io/logs-of";

/// What one file of the bundle holds.
#[derive(Debug, PartialEq)]
pub enum Content {
    File(PathBuf),
    Bytes(Vec<u8>),
}

/// One file of the bundle, by its name under the bundle's directory.
#[derive(Debug, PartialEq)]
pub struct Entry {
    pub name: String,
    pub content: Content,
}

/// The archives uploaded to `dir` (`<logs type>_<host id | controller>.tar.gz`) as
/// `uploads/<name>`, sorted; uploads still in progress (hidden temporary files) are left out.
pub fn uploads(dir: &Path) -> io::Result<Vec<Entry>> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in read {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type()?.is_file() {
            continue;
        }
        out.push(Entry {
            name: format!("uploads/{name}"),
            content: Content::File(entry.path()),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Each attached ConfigMap's keys (`data` and `binaryData`) as `<ConfigMap>/<key>`, sorted.
/// Kubernetes restricts both names to `[-._a-zA-Z0-9]`, so no name leaves its directory.
pub fn attachments(config_maps: &[ConfigMap]) -> Vec<Entry> {
    let mut out = Vec::new();
    for cm in config_maps {
        let Some(cm_name) = cm.metadata.name.as_deref().filter(|n| safe(n)) else {
            continue;
        };
        let text = cm.data.iter().flatten().map(|(k, v)| (k, v.as_bytes()));
        let binary = cm.binary_data.iter().flatten().map(|(k, v)| (k, &v.0[..]));
        for (key, value) in text.chain(binary).filter(|(k, _)| safe(k)) {
            out.push(Entry {
                name: format!("{cm_name}/{key}"),
                content: Content::Bytes(value.to_vec()),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn safe(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
}

/// Writes the bundle as a tar: every entry under `<prefix>/`, read-only regular files.
pub fn write_tar(out: impl Write, prefix: &str, entries: &[Entry], mtime: u64) -> io::Result<()> {
    let mut tar = tar::Builder::new(out);
    for entry in entries {
        let path = format!("{prefix}/{}", entry.name);
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        header.set_mtime(mtime);
        header.set_entry_type(tar::EntryType::Regular);
        match &entry.content {
            Content::Bytes(bytes) => {
                header.set_size(bytes.len() as u64);
                tar.append_data(&mut header, &path, &bytes[..])?;
            }
            Content::File(file) => {
                let f = std::fs::File::open(file)?;
                header.set_size(f.metadata()?.len());
                tar.append_data(&mut header, &path, f)?;
            }
        }
    }
    tar.into_inner()?.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn read_tar(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        for e in tar::Archive::new(bytes).entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut body = Vec::new();
            io::Read::read_to_end(&mut e, &mut body).unwrap();
            out.insert(name, body);
        }
        out
    }

    #[test]
    fn the_bundle_holds_the_uploads_the_cluster_and_the_attached_config_maps() {
        let dir = std::env::temp_dir().join(format!("logs-bundle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("host_h1.tar.gz"), b"host logs").unwrap();
        std::fs::write(dir.join("controller_controller.tar.gz"), b"controller").unwrap();
        // An upload still being written is not part of it yet.
        std::fs::write(dir.join(".host_h2.tar.gz.1-0.tmp-upload"), b"half").unwrap();
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "cp-image-mode-status"},
            "data": {"image-mode.yaml": "pools: []\n", "../escape": "no"},
            "binaryData": {"raw.bin": "AAE="},
        }))
        .unwrap();
        let mut entries = vec![Entry {
            name: "cluster.json".into(),
            content: Content::Bytes(b"{}".to_vec()),
        }];
        entries.extend(uploads(&dir).unwrap());
        entries.extend(attachments(&[cm]));
        let mut tar = Vec::new();
        write_tar(&mut tar, "c1_1234", &entries, 0).unwrap();
        let files = read_tar(&tar);
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            [
                "c1_1234/cluster.json",
                "c1_1234/cp-image-mode-status/image-mode.yaml",
                "c1_1234/cp-image-mode-status/raw.bin",
                "c1_1234/uploads/controller_controller.tar.gz",
                "c1_1234/uploads/host_h1.tar.gz",
            ]
        );
        assert_eq!(files["c1_1234/uploads/host_h1.tar.gz"], b"host logs");
        assert_eq!(files["c1_1234/cp-image-mode-status/raw.bin"], [0, 1]);
        assert_eq!(
            files["c1_1234/cp-image-mode-status/image-mode.yaml"],
            b"pools: []\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cluster_without_uploads_has_none() {
        assert_eq!(uploads(Path::new("/nonexistent/logs")).unwrap(), Vec::new());
    }
}
