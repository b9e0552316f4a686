//! A small file store for cluster artifacts, keyed `<cluster_id>/<file_name>`.
//!
//! Both key parts come from REST callers, so each must be a single plain path component;
//! writes go to a temp file that is renamed into place so readers never see half a file.

use std::path::{Path, PathBuf};

use super::backend::InstallArtifacts;
use super::error::InstallError;
use crate::service::private_fs;

/// Files under `root/<cluster_id>/<file_name>`.
#[derive(Debug, Clone)]
pub struct FileStore {
    pub root: PathBuf,
}

/// One key part: non-empty, no separators, no `..`, not hidden (temp files are hidden).
fn check_part(part: &str) -> Result<(), InstallError> {
    let err = |reason| {
        Err(InstallError::InvalidKey {
            key: part.to_string(),
            reason,
        })
    };
    if part.is_empty() {
        return err("empty");
    }
    if part.contains(['/', '\\', '\0']) {
        return err("contains a path separator or NUL");
    }
    if part.contains("..") {
        return err("contains ..");
    }
    if part.starts_with('.') {
        return err("starts with a dot");
    }
    Ok(())
}

impl FileStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileStore { root: root.into() }
    }

    fn cluster_dir(&self, cluster_id: &str) -> Result<PathBuf, InstallError> {
        check_part(cluster_id)?;
        Ok(self.root.join(cluster_id))
    }

    fn path(&self, cluster_id: &str, name: &str) -> Result<PathBuf, InstallError> {
        let dir = self.cluster_dir(cluster_id)?;
        check_part(name)?;
        Ok(dir.join(name))
    }

    /// Writes `<cluster_id>/<name>` atomically (temp file in the same directory + rename).
    pub async fn put(
        &self,
        cluster_id: &str,
        name: &str,
        bytes: &[u8],
    ) -> Result<(), InstallError> {
        let path = self.path(cluster_id, name)?;
        let dir = self.cluster_dir(cluster_id)?;
        private_fs::create_dir_all(&dir)
            .await
            .map_err(|e| InstallError::io("creating the cluster directory", &dir, e))?;
        let tmp = dir.join(format!(".{name}.{}.tmp", temp_suffix()));
        if let Err(e) = write_synced(&tmp, bytes).await {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(InstallError::io("writing a stored file", &tmp, e));
        }
        if let Err(e) = tokio::fs::rename(&tmp, &path).await {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(InstallError::io(
                "renaming a stored file into place",
                &path,
                e,
            ));
        }
        Ok(())
    }

    /// Stores every file of `artifacts` under `cluster_id`.
    pub async fn put_artifacts(
        &self,
        cluster_id: &str,
        artifacts: &InstallArtifacts,
    ) -> Result<(), InstallError> {
        for (name, bytes) in artifacts.files() {
            self.put(cluster_id, name, bytes).await?;
        }
        Ok(())
    }

    /// The file's contents, or `None` when it does not exist.
    pub async fn get(&self, cluster_id: &str, name: &str) -> Result<Option<Vec<u8>>, InstallError> {
        let path = self.path(cluster_id, name)?;
        match tokio::fs::read(&path).await {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(InstallError::io("reading a stored file", path, e)),
        }
    }

    pub async fn exists(&self, cluster_id: &str, name: &str) -> Result<bool, InstallError> {
        let path = self.path(cluster_id, name)?;
        tokio::fs::try_exists(&path)
            .await
            .map_err(|e| InstallError::io("checking a stored file", path, e))
    }

    /// Removes all files of a cluster; a missing cluster is not an error.
    pub async fn remove_cluster(&self, cluster_id: &str) -> Result<(), InstallError> {
        let dir = self.cluster_dir(cluster_id)?;
        match tokio::fs::remove_dir_all(&dir).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(InstallError::io("removing the cluster directory", dir, e)),
        }
    }
}

async fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut f = private_fs::create_file(path).await?;
    f.write_all(bytes).await?;
    // Flush to disk before the rename so a crash cannot leave an empty file in place.
    f.sync_all().await
}

/// Unique enough for concurrent writers of the same key within one process and across them.
fn temp_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn put_get_exists_remove() {
        let tmp = tempfile::tempdir().unwrap();
        let store = FileStore::new(tmp.path());
        assert_eq!(store.get("c1", "master.ign").await.unwrap(), None);
        assert!(!store.exists("c1", "master.ign").await.unwrap());
        store.put("c1", "master.ign", b"one").await.unwrap();
        store.put("c1", "master.ign", b"two").await.unwrap();
        store.put("c2", "master.ign", b"other").await.unwrap();
        assert_eq!(
            store.get("c1", "master.ign").await.unwrap().unwrap(),
            b"two"
        );
        assert!(store.exists("c1", "master.ign").await.unwrap());
        // No temp files left behind.
        let names: Vec<_> = std::fs::read_dir(tmp.path().join("c1"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["master.ign"]);
        store.remove_cluster("c1").await.unwrap();
        store.remove_cluster("c1").await.unwrap();
        assert_eq!(store.get("c1", "master.ign").await.unwrap(), None);
        assert_eq!(
            store.get("c2", "master.ign").await.unwrap().unwrap(),
            b"other"
        );
    }

    #[tokio::test]
    async fn keys_cannot_escape_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let store = FileStore::new(tmp.path().join("store"));
        for (cluster, name) in [
            ("c1", ""),
            ("c1", "../x"),
            ("c1", ".."),
            ("c1", "a/b"),
            ("c1", ".hidden"),
            ("", "f"),
            ("..", "f"),
            ("c/../..", "f"),
        ] {
            let err = store.put(cluster, name, b"x").await.unwrap_err();
            assert!(
                matches!(err, InstallError::InvalidKey { .. }),
                "{cluster}/{name}: {err}"
            );
            assert!(store.get(cluster, name).await.is_err());
        }
        assert!(store.remove_cluster("..").await.is_err());
        assert!(!tmp.path().join("x").exists());
    }

    #[tokio::test]
    async fn put_artifacts_stores_all_files() {
        let tmp = tempfile::tempdir().unwrap();
        let store = FileStore::new(tmp.path());
        let a = InstallArtifacts {
            kubeadmin_password: b"pw".to_vec(),
            ..Default::default()
        };
        store.put_artifacts("c", &a).await.unwrap();
        for (name, _) in a.files() {
            assert!(store.exists("c", name).await.unwrap(), "{name}");
        }
        assert_eq!(
            store.get("c", "kubeadmin-password").await.unwrap().unwrap(),
            b"pw"
        );
        // Secrets at rest: 0600 files in a 0700 directory.
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&tmp.path().join("c")), 0o700);
        for (name, _) in a.files() {
            assert_eq!(mode(&tmp.path().join("c").join(name)), 0o600, "{name}");
        }
    }
}
