//! The file store side of the API: allow-lists, streaming downloads, atomic writes and the
//! kubeconfig merge done when the controller uploads the ingress CA.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use tokio::io::AsyncReadExt;

use crate::service::error::ApiError;

/// Cluster files the installer may download by name.
const CLUSTER_FILES: &[&str] = &[
    "bootstrap.ign",
    "master.ign",
    "worker.ign",
    "arbiter.ign",
    "metadata.json",
    "install-config.yaml",
];

/// Credentials by name.
pub const CREDENTIALS: &[&str] = &["kubeadmin-password", "kubeconfig", "kubeconfig-noingress"];

/// A lowercase-or-uppercase hex UUID, the shape of every id we put in a path on disk.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Ids come from URL paths, which are percent-decoded: never let one name a directory.
pub fn safe_id(id: &str) -> Result<&str, ApiError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        && !id.starts_with('-');
    if ok {
        Ok(id)
    } else {
        Err(ApiError::bad_request(format!("invalid id {id:?}")))
    }
}

/// The allow-list: fixed names plus per-host ignitions `<role>-<uuid>.ign`.
pub fn is_allowed_cluster_file(name: &str) -> bool {
    if CLUSTER_FILES.contains(&name) {
        return true;
    }
    let Some(stem) = name.strip_suffix(".ign") else {
        return false;
    };
    ["master-", "worker-", "arbiter-"]
        .iter()
        .any(|role| stem.strip_prefix(role).is_some_and(is_uuid))
}

/// `files_root/<cluster_id>/<name>`, for an allow-listed or fixed name.
pub fn cluster_path(root: &Path, cluster_id: &str, name: &str) -> Result<PathBuf, ApiError> {
    Ok(root.join(safe_id(cluster_id)?).join(name))
}

/// Streams a file from disk; a missing file is a 404 "file not found".
pub async fn stream_file(path: &Path, download_name: &str) -> Result<Response, ApiError> {
    let file = match tokio::fs::File::open(path).await {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ApiError::not_found("file not found"));
        }
        Err(e) => return Err(ApiError::internal(format!("cannot open file: {e}"))),
    };
    stream_open_file(file, download_name).await
}

/// Streams a file already open (one whose name may be gone: a bundle made for one download).
pub async fn stream_open_file(
    file: tokio::fs::File,
    download_name: &str,
) -> Result<Response, ApiError> {
    let meta = file
        .metadata()
        .await
        .map_err(|e| ApiError::internal(format!("cannot stat file: {e}")))?;
    if !meta.is_file() {
        return Err(ApiError::not_found("file not found"));
    }
    // After a read error the stream ends: the client sees a truncated body, not a loop.
    let stream = futures::stream::unfold(Some(file), |state| async move {
        let mut f = state?;
        let mut buf = vec![0u8; 64 * 1024];
        match f.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), Some(f)))
            }
            Err(e) => Some((Err(e), None)),
        }
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_LENGTH, meta.len().to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename={download_name}"),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// A temporary file name next to `path`, unique per call: concurrent uploads of the same file
/// each write their own and the last rename wins (one shared name made parallel uploads race).
pub fn temp_path(path: &Path) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}-{n}.tmp-upload", std::process::id()))
}

/// Writes through a temporary file and a rename, so readers never see half a file.
pub async fn write_atomic(path: &Path, data: &[u8]) -> Result<(), ApiError> {
    let dir = path
        .parent()
        .ok_or_else(|| ApiError::internal("file path has no parent"))?;
    crate::service::private_fs::create_dir_all(dir)
        .await
        .map_err(|e| ApiError::internal(format!("cannot create {}: {e}", dir.display())))?;
    let tmp = temp_path(path);
    crate::service::private_fs::write(&tmp, data)
        .await
        .map_err(|e| ApiError::internal(format!("cannot write file: {e}")))?;
    tokio::fs::rename(&tmp, path)
        .await
        .map_err(|e| ApiError::internal(format!("cannot rename file: {e}")))
}

/// True when the body is one or more PEM `CERTIFICATE` blocks with base64 DER inside.
pub fn is_pem_certificate(body: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(body) else {
        return false;
    };
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut rest = text.trim();
    let mut blocks = 0;
    while !rest.is_empty() {
        let Some(after) = rest.strip_prefix(BEGIN) else {
            return false;
        };
        let Some(end) = after.find(END) else {
            return false;
        };
        let b64: String = after[..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        match STANDARD.decode(b64) {
            // A DER certificate is a SEQUENCE.
            Ok(der) if der.first() == Some(&0x30) => {}
            _ => return false,
        }
        blocks += 1;
        rest = after[end + END.len()..].trim_start();
    }
    blocks > 0
}

/// Appends the ingress CA to every cluster's `certificate-authority-data`.
pub fn merge_ingress_ca(kubeconfig: &str, ingress_pem: &str) -> Result<String, ApiError> {
    let bad = |m: &str| ApiError::internal(format!("kubeconfig-noingress: {m}"));
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(kubeconfig).map_err(|e| bad(&e.to_string()))?;
    let clusters = doc
        .get_mut("clusters")
        .and_then(|c| c.as_sequence_mut())
        .ok_or_else(|| bad("no clusters"))?;
    let mut merged = 0;
    for entry in clusters {
        let Some(cluster) = entry.get_mut("cluster").and_then(|c| c.as_mapping_mut()) else {
            continue;
        };
        let key = serde_yaml::Value::from("certificate-authority-data");
        let existing = match cluster.get(&key).and_then(|v| v.as_str()) {
            Some(d) => STANDARD
                .decode(d.trim())
                .map_err(|_| bad("certificate-authority-data is not base64"))?,
            None => Vec::new(),
        };
        let mut pem = existing;
        if !pem.is_empty() && !pem.ends_with(b"\n") {
            pem.push(b'\n');
        }
        pem.extend_from_slice(ingress_pem.trim().as_bytes());
        pem.push(b'\n');
        cluster.insert(key, serde_yaml::Value::from(STANDARD.encode(pem)));
        merged += 1;
    }
    if merged == 0 {
        return Err(bad("no cluster entries"));
    }
    serde_yaml::to_string(&doc).map_err(|e| bad(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "33333333-3333-3333-3333-333333333333";

    fn cert(der: &[u8]) -> String {
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            STANDARD.encode(der)
        )
    }

    #[test]
    fn allow_list() {
        for ok in ["bootstrap.ign", "metadata.json", &format!("master-{H}.ign")] {
            assert!(is_allowed_cluster_file(ok), "{ok}");
        }
        for bad in [
            "kubeconfig",
            "../x/bootstrap.ign",
            "master-.ign",
            &format!("master-{H}.ign/.."),
            &format!("bootstrap-{H}.ign"),
            "master-../../../etc/passwd.ign",
            "",
        ] {
            assert!(!is_allowed_cluster_file(bad), "{bad}");
        }
        assert!(safe_id("..").is_err());
        assert!(safe_id("a/b").is_err());
        assert!(safe_id(H).is_ok());
    }

    #[test]
    fn pem_detection() {
        let c = cert(&[0x30, 0x03, 0x02, 0x01, 0x01]);
        assert!(is_pem_certificate(c.as_bytes()));
        assert!(is_pem_certificate(format!("{c}{c}").as_bytes()));
        assert!(!is_pem_certificate(b"hello"));
        assert!(!is_pem_certificate(b""));
        assert!(!is_pem_certificate(
            b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----"
        ));
        assert!(!is_pem_certificate(format!("{c}junk").as_bytes()));
        assert!(!is_pem_certificate(&[0xff, 0xfe]));
    }

    #[test]
    fn merge_appends_the_ingress_ca() {
        let ca = "-----BEGIN CERTIFICATE-----\nAAA=\n-----END CERTIFICATE-----\n";
        let kc = format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: https://api:6443\n  name: c\n",
            STANDARD.encode(ca)
        );
        let ingress = cert(&[0x30, 0x00]);
        let out = merge_ingress_ca(&kc, &ingress).unwrap();
        let v: serde_yaml::Value = serde_yaml::from_str(&out).unwrap();
        let data = v["clusters"][0]["cluster"]["certificate-authority-data"]
            .as_str()
            .unwrap();
        let pem = String::from_utf8(STANDARD.decode(data).unwrap()).unwrap();
        assert_eq!(pem, format!("{ca}{ingress}"));
        assert_eq!(v["clusters"][0]["cluster"]["server"], "https://api:6443");
        assert!(merge_ingress_ca("clusters: []", &ingress).is_err());
        assert!(merge_ingress_ca(": : :", &ingress).is_err());
    }
}
