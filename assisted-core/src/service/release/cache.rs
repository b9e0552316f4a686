//! Extracted installers on disk, one directory per release digest, least recently used
//! evicted first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::auth::PullSecret;
use super::payload::{ReleasePayload, extract_installer, read_payload_in};
use super::reference::ImageRef;
use super::registry::RegistryClient;
use super::{ReleaseError, unique_name};

const BINARY: &str = "openshift-install";
const PAYLOAD: &str = "payload.json";
/// Prefix of directories being filled; leftovers of a crash are removed by eviction.
const STAGING_PREFIX: &str = ".tmp-";

type Locks = Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>;

/// Installers of the `capacity` most recently used releases under `root`:
/// `<root>/<sha256-hex>/openshift-install` and `payload.json` (the [`ReleasePayload`]).
#[derive(Debug)]
pub struct InstallerCache {
    root: PathBuf,
    capacity: usize,
    /// Directory name → lock held while the directory is filled, used or evicted.
    locks: Locks,
}

impl InstallerCache {
    pub fn new(root: impl Into<PathBuf>, capacity: usize) -> Self {
        Self {
            root: root.into(),
            capacity,
            locks: Mutex::default(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The installer binary and payload of `release`, extracted on first use. Concurrent
    /// calls for the same release share one extraction. A release named by tag costs
    /// one manifest request to learn its digest.
    ///
    /// The binary stays until `capacity` other releases were used since; callers run (or
    /// copy) it right away.
    pub async fn get(
        &self,
        client: &RegistryClient,
        release: &ImageRef,
        secret: &PullSecret,
    ) -> Result<(PathBuf, ReleasePayload), ReleaseError> {
        let digest = match &release.digest {
            Some(d) => d.clone(),
            None => {
                let creds = secret.credentials_for(&release.registry);
                client.manifest(release, creds).await?.2
            }
        };
        // Pinned, so the payload read is the one this directory is named after.
        let pinned = release.with_digest(&digest);
        let name = dir_name(&digest);
        let lock = self.lock_for(&name);
        let _guard = lock.lock().await;
        let dir = self.root.join(&name);
        let payload = match read_entry(&dir).await {
            Some(payload) => payload,
            None => self.fill(client, &pinned, secret, &name).await?,
        };
        touch(&dir).await;
        // Our own directory is locked, so it is never a victim.
        self.evict().await;
        Ok((dir.join(BINARY), payload))
    }

    fn lock_for(&self, name: &str) -> Arc<tokio::sync::Mutex<()>> {
        // A poisoned map only means a panic elsewhere; the map is still consistent.
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(name.to_string()).or_default().clone()
    }

    /// Whether `name`'s lock is held (being filled or used) right now.
    fn in_use(&self, name: &str) -> bool {
        let locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.get(name).is_some_and(|l| l.try_lock().is_err())
    }

    /// Extracts `release` into a staging directory, then renames it into place so a
    /// crash never leaves a half-filled entry under its final name.
    async fn fill(
        &self,
        client: &RegistryClient,
        release: &ImageRef,
        secret: &PullSecret,
        name: &str,
    ) -> Result<ReleasePayload, ReleaseError> {
        let staging = self
            .root
            .join(unique_name(&format!("{STAGING_PREFIX}{name}")));
        tokio::fs::create_dir_all(&staging)
            .await
            .map_err(ReleaseError::io(format!("creating {}", staging.display())))?;
        let result = async {
            let payload = read_payload_in(client, release, secret, &staging).await?;
            extract_installer(client, &payload, release, secret, &staging).await?;
            let json = serde_json::to_vec_pretty(&payload).unwrap_or_default();
            let payload_path = staging.join(PAYLOAD);
            tokio::fs::write(&payload_path, json)
                .await
                .map_err(ReleaseError::io(format!(
                    "writing {}",
                    payload_path.display()
                )))?;
            let dir = self.root.join(name);
            // An entry without a readable payload.json is junk from an older layout.
            let _ = tokio::fs::remove_dir_all(&dir).await;
            tokio::fs::rename(&staging, &dir)
                .await
                .map_err(ReleaseError::io(format!(
                    "moving {} into place",
                    dir.display()
                )))?;
            Ok(payload)
        }
        .await;
        if result.is_err() {
            let _ = tokio::fs::remove_dir_all(&staging).await;
        }
        result
    }

    /// Removes the least recently used entries beyond `capacity` and stale staging
    /// directories, skipping whatever is in use. Failures only leave more on disk.
    async fn evict(&self) {
        let entries = match list_entries(&self.root).await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(root = %self.root.display(), error = %e, "listing the installer cache");
                return;
            }
        };
        let mut candidates = Vec::new();
        for entry in entries {
            match entry {
                Entry::Release { name, mtime } => {
                    let in_use = self.in_use(&name);
                    candidates.push((name, mtime, in_use));
                }
                Entry::Staging { dir_name, release } => {
                    if !self.in_use(&release) {
                        self.remove_locked(&release, &dir_name).await;
                    }
                }
            }
        }
        for victim in choose_evictions(&candidates, self.capacity) {
            tracing::info!(release = %victim, "evicting the installer from the cache");
            self.remove_locked(&victim, &victim).await;
        }
        // Forget locks nobody holds a handle to; `lock_for` recreates them on demand.
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.retain(|_, l| Arc::strong_count(l) > 1);
    }

    /// Removes `<root>/<dir_name>` while holding `release`'s lock, unless it is taken.
    async fn remove_locked(&self, release: &str, dir_name: &str) {
        let lock = self.lock_for(release);
        let Ok(_guard) = lock.try_lock() else {
            return;
        };
        let path = self.root.join(dir_name);
        if let Err(e) = tokio::fs::remove_dir_all(&path).await {
            tracing::warn!(path = %path.display(), error = %e, "removing a cached installer");
        }
    }
}

/// The directory name for a release digest: the hex of a sha256, else `<alg>-<hex>`.
fn dir_name(digest: &str) -> String {
    match digest.split_once(':') {
        Some(("sha256", hex)) => hex.to_string(),
        Some((alg, hex)) => format!("{alg}-{hex}"),
        None => digest.to_string(),
    }
}

fn is_release_dir_name(name: &str) -> bool {
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    hex(name, 64) || name.strip_prefix("sha512-").is_some_and(|h| hex(h, 128))
}

/// The payload of a complete entry, or None (missing, or left half-written).
async fn read_entry(dir: &Path) -> Option<ReleasePayload> {
    let binary = tokio::fs::metadata(dir.join(BINARY)).await.ok()?;
    if !binary.is_file() {
        return None;
    }
    let json = tokio::fs::read(dir.join(PAYLOAD)).await.ok()?;
    serde_json::from_slice(&json).ok()
}

/// Marks an entry as just used: eviction goes by the directory's mtime.
async fn touch(dir: &Path) {
    let dir = dir.to_path_buf();
    let result = tokio::task::spawn_blocking(move || {
        std::fs::File::open(&dir)?.set_modified(SystemTime::now())
    })
    .await;
    if let Ok(Err(e)) = result {
        tracing::warn!(error = %e, "touching a cached installer");
    }
}

enum Entry {
    Release { name: String, mtime: SystemTime },
    Staging { dir_name: String, release: String },
}

async fn list_entries(root: &Path) -> std::io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut dir = match tokio::fs::read_dir(root).await {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    while let Some(entry) = dir.next_entry().await? {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(meta) = entry.metadata().await else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        if is_release_dir_name(&name) {
            let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            out.push(Entry::Release { name, mtime });
        } else if let Some(release) = staging_release(&name) {
            out.push(Entry::Staging {
                release,
                dir_name: name,
            });
        }
    }
    Ok(out)
}

/// The release a staging directory (`.tmp-<name>-<pid>-<n>`) is for.
fn staging_release(dir_name: &str) -> Option<String> {
    let rest = dir_name.strip_prefix(STAGING_PREFIX)?;
    let mut parts = rest.rsplitn(3, '-');
    let (_n, _pid, name) = (parts.next()?, parts.next()?, parts.next()?);
    is_release_dir_name(name).then(|| name.to_string())
}

/// Which entries to remove: all but the `capacity` most recently used, except those in
/// use (so more than `capacity` may remain while old entries are busy).
/// Entries are `(name, last use, in use)`.
pub fn choose_evictions(entries: &[(String, SystemTime, bool)], capacity: usize) -> Vec<String> {
    let mut newest_first: Vec<&(String, SystemTime, bool)> = entries.iter().collect();
    newest_first.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut victims: Vec<String> = newest_first
        .into_iter()
        .skip(capacity)
        .filter(|(_, _, in_use)| !in_use)
        .map(|(name, _, _)| name.clone())
        .collect();
    // Oldest first, the order they are removed in.
    victims.reverse();
    victims
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn e(name: &str, secs: u64, in_use: bool) -> (String, SystemTime, bool) {
        (name.to_string(), at(secs), in_use)
    }

    #[test]
    fn evicts_least_recently_used_beyond_capacity() {
        let entries = [
            e("c", 30, false),
            e("a", 10, false),
            e("d", 40, false),
            e("b", 20, false),
        ];
        assert_eq!(choose_evictions(&entries, 2), ["a", "b"]);
        assert_eq!(choose_evictions(&entries, 3), ["a"]);
        assert_eq!(choose_evictions(&entries, 4), Vec::<String>::new());
        assert_eq!(choose_evictions(&entries, 10), Vec::<String>::new());
        assert_eq!(choose_evictions(&entries, 0), ["a", "b", "c", "d"]);
        assert_eq!(choose_evictions(&[], 0), Vec::<String>::new());
    }

    #[test]
    fn never_evicts_entries_in_use() {
        let entries = [
            e("a", 10, true),
            e("b", 20, false),
            e("c", 30, false),
            e("d", 40, true),
        ];
        // The most recent ones stay even when an older one is kept busy.
        assert_eq!(choose_evictions(&entries, 2), ["b"]);
        assert_eq!(choose_evictions(&entries, 3), Vec::<String>::new());
        assert_eq!(choose_evictions(&entries, 1), ["b", "c"]);
        assert_eq!(choose_evictions(&entries, 0), ["b", "c"]);
        let busy = [e("a", 1, true), e("b", 2, true)];
        assert_eq!(choose_evictions(&busy, 0), Vec::<String>::new());
    }

    #[test]
    fn ties_break_by_name() {
        let entries = [e("b", 10, false), e("a", 10, false), e("c", 10, false)];
        // Equal times: the first by name counts as the most recent.
        assert_eq!(choose_evictions(&entries, 1), ["c", "b"]);
    }

    #[test]
    fn directory_names() {
        let hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(dir_name(&format!("sha256:{hex}")), hex);
        assert!(is_release_dir_name(hex));
        let long = format!("{hex}{hex}");
        let d = dir_name(&format!("sha512:{long}"));
        assert_eq!(d, format!("sha512-{long}"));
        assert!(is_release_dir_name(&d));
        assert!(!is_release_dir_name("lost+found"));
        assert!(!is_release_dir_name(&hex.to_uppercase()));
        assert_eq!(
            staging_release(&format!(".tmp-{hex}-12-3")).as_deref(),
            Some(hex)
        );
        assert_eq!(
            staging_release(&format!(".tmp-sha512-{long}-1-0")),
            Some(format!("sha512-{long}"))
        );
        assert_eq!(staging_release(".tmp-zzz-1-2"), None);
        assert_eq!(staging_release(&format!("{hex}-1-2")), None);
    }

    #[tokio::test]
    async fn eviction_on_disk_skips_locked_entries_and_removes_stale_staging() {
        let root = tempfile::tempdir().unwrap();
        let name = |c: char| c.to_string().repeat(64);
        let (a, b, c) = (name('a'), name('b'), name('c'));
        for (n, secs) in [(&a, 100), (&b, 200), (&c, 300)] {
            let dir = root.path().join(n);
            std::fs::create_dir(&dir).unwrap();
            std::fs::File::open(&dir)
                .unwrap()
                .set_modified(at(secs))
                .unwrap();
        }
        std::fs::create_dir(root.path().join(format!(".tmp-{b}-1-1"))).unwrap();
        std::fs::create_dir(root.path().join("unrelated")).unwrap();
        let cache = InstallerCache::new(root.path(), 1);
        // `c` is the most recent and stays; `a` is older but busy; `b` goes.
        let lock = cache.lock_for(&a);
        let guard = lock.lock().await;
        cache.evict().await;
        let mut left: Vec<String> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [a.clone(), c.clone(), "unrelated".to_string()]);
        drop(guard);
        cache.evict().await;
        assert!(!root.path().join(&a).exists());
        assert!(root.path().join(&c).exists());
    }
}
