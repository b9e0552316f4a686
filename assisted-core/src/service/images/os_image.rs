//! Base OS (RHCOS live ISO) images: choosing one for an infra-env and caching it on disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::io::AsyncWriteExt;

use super::ImageError;

/// One entry of the OS images list (AgentServiceConfig `osImages`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OsImage {
    pub openshift_version: String,
    pub cpu_architecture: String,
    pub url: String,
    pub version: String,
}

fn normalize_arch(a: &str) -> &str {
    match a {
        "amd64" | "x86-64" => "x86_64",
        "arm64" => "aarch64",
        "ppc64le" | "ppc64el" => "ppc64le",
        other => other,
    }
}

/// Numeric components of a version for ordering ("4.18.0-rc.1" → [4, 18, 0, 1]).
fn version_key(v: &str) -> Vec<u64> {
    v.split(['.', '-', '+'])
        .filter_map(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

fn major_minor(v: &str) -> Option<(u64, u64)> {
    match version_key(v)[..] {
        [a, b, ..] => Some((a, b)),
        _ => None,
    }
}

/// The image for `openshift_version` on `arch`: an exact version match, else the newest
/// with the same major.minor, else the newest for the architecture.
pub fn select<'a>(
    images: &'a [OsImage],
    openshift_version: &str,
    arch: &str,
) -> Option<&'a OsImage> {
    let arch = normalize_arch(arch);
    let for_arch = || {
        images
            .iter()
            .filter(|i| normalize_arch(&i.cpu_architecture) == arch)
    };
    let newest = |it: &mut dyn Iterator<Item = &'a OsImage>| {
        it.max_by(|a, b| {
            version_key(&a.openshift_version)
                .cmp(&version_key(&b.openshift_version))
                .then_with(|| version_key(&a.version).cmp(&version_key(&b.version)))
        })
    };
    if let Some(exact) =
        newest(&mut for_arch().filter(|i| i.openshift_version == openshift_version))
    {
        return Some(exact);
    }
    let wanted = major_minor(openshift_version);
    if wanted.is_some()
        && let Some(same) =
            newest(&mut for_arch().filter(|i| major_minor(&i.openshift_version) == wanted))
    {
        return Some(same);
    }
    newest(&mut for_arch())
}

/// Base ISOs on local disk, downloaded once per image.
#[derive(Debug)]
pub struct OsImageCache {
    pub dir: PathBuf,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);
const MAX_REDIRECTS: usize = 5;

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl OsImageCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            locks: Mutex::default(),
        }
    }

    /// Where `image` is cached; the URL hash makes a changed URL a new entry.
    pub fn path_for(&self, image: &OsImage) -> PathBuf {
        let name = format!(
            "rhcos-{}-{}-{}-{:016x}.iso",
            sanitize(&image.openshift_version),
            sanitize(normalize_arch(&image.cpu_architecture)),
            sanitize(&image.version),
            // FNV-1a: cache names survive restarts and toolchain upgrades.
            manager::names::fnv1a64(image.url.as_bytes())
        );
        self.dir.join(name)
    }

    /// One lock per cached file, so that concurrent calls wait for one writer.
    fn lock_for(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let key = path.to_string_lossy().into_owned();
        // A poisoned map only means another thread panicked mid-insert; the map is still
        // consistent.
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(key).or_default().clone()
    }

    /// A temporary name beside `path`, renamed into place once complete.
    fn temp_for(&self, path: &Path) -> PathBuf {
        self.dir.join(format!(
            ".{}.{}.{}.part",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("image"),
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// The minimal ISO of `image` ([`super::miniso`]), rebuilt once from the cached full ISO
    /// and kept beside it; `None` when the image carries no minimal-ISO data (CoreOS before
    /// 2021-12), which leaves the full ISO as the only one to serve.
    pub async fn minimal(&self, image: &OsImage) -> Result<Option<PathBuf>, ImageError> {
        let full = self.get(image).await?;
        let path = full.with_extension("minimal.iso");
        let lock = self.lock_for(&path);
        let _guard = lock.lock().await;
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            return Ok(Some(path));
        }
        let tmp = self.temp_for(&path);
        let source = full.clone();
        let target = tmp.clone();
        // A few hundred megabytes copied and hashed: on a blocking thread.
        let written =
            tokio::task::spawn_blocking(move || super::miniso::write_minimal_iso(&source, &target))
                .await
                .map_err(|e| {
                    ImageError::MalformedIso(format!("building the minimal ISO stopped: {e}"))
                })?;
        match written {
            Ok(true) => {
                tokio::fs::rename(&tmp, &path)
                    .await
                    .map_err(ImageError::io(format!(
                        "renaming {} into place",
                        tmp.display()
                    )))?;
                Ok(Some(path))
            }
            Ok(false) => Ok(None),
            Err(e) => {
                let _ = tokio::fs::remove_file(&tmp).await;
                Err(e)
            }
        }
    }

    /// The cached file for `image`, downloading it first if needed. Concurrent calls for
    /// the same image wait for one download.
    pub async fn get(&self, image: &OsImage) -> Result<PathBuf, ImageError> {
        let path = self.path_for(image);
        let lock = self.lock_for(&path);
        let _guard = lock.lock().await;
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            return Ok(path);
        }
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(ImageError::io(format!("creating {}", self.dir.display())))?;
        let tmp = self.temp_for(&path);
        let result = async {
            fetch(&image.url, &tmp).await?;
            tokio::fs::rename(&tmp, &path)
                .await
                .map_err(ImageError::io(format!(
                    "renaming {} into place",
                    tmp.display()
                )))
        }
        .await;
        if result.is_err() {
            let _ = tokio::fs::remove_file(&tmp).await;
        }
        result.map(|()| path)
    }
}

/// Copies `url` into `dest`.
async fn fetch(url: &str, dest: &Path) -> Result<(), ImageError> {
    if let Some(src) = url.strip_prefix("file://") {
        tokio::fs::copy(src, dest)
            .await
            .map_err(ImageError::io(format!("copying {src}")))?;
        return Ok(());
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return http_download(url, dest).await;
    }
    Err(ImageError::Download {
        url: url.to_string(),
        reason: "only file://, http:// and https:// URLs are supported".into(),
    })
}

async fn http_download(url: &str, dest: &Path) -> Result<(), ImageError> {
    let fail = |u: &str, reason: String| ImageError::Download {
        url: u.to_string(),
        reason,
    };
    // https with the system's trust store (the RHCOS mirrors are https), http as is.
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| fail(url, format!("loading the system CA certificates: {e}")))?
        .https_or_http()
        .enable_http1()
        .build();
    let client = Client::builder(TokioExecutor::new()).build::<_, Empty<Bytes>>(connector);
    let mut current = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        let uri: http::Uri = current
            .parse()
            .map_err(|e| fail(&current, format!("bad URL: {e}")))?;
        let resp = client
            .get(uri)
            .await
            .map_err(|e| fail(&current, e.to_string()))?;
        let status = resp.status();
        if status.is_redirection() {
            let location = resp
                .headers()
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| fail(&current, format!("{status} without a Location")))?;
            current = if location.starts_with('/') {
                let base: http::Uri = current
                    .parse()
                    .map_err(|e| fail(&current, format!("bad URL: {e}")))?;
                let authority = base.authority().map(|a| a.as_str()).unwrap_or_default();
                let scheme = base.scheme_str().unwrap_or("http");
                format!("{scheme}://{authority}{location}")
            } else {
                location.to_string()
            };
            if !(current.starts_with("http://") || current.starts_with("https://")) {
                return Err(fail(&current, "redirect to a non-HTTP URL".into()));
            }
            continue;
        }
        if status != http::StatusCode::OK {
            return Err(fail(&current, format!("server answered {status}")));
        }
        let ctx = format!("writing {}", dest.display());
        let mut out = tokio::fs::File::create(dest)
            .await
            .map_err(ImageError::io(&ctx))?;
        let mut body = resp.into_body();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| fail(&current, format!("reading the body: {e}")))?;
            if let Some(data) = frame.data_ref() {
                out.write_all(data).await.map_err(ImageError::io(&ctx))?;
            }
        }
        out.sync_all().await.map_err(ImageError::io(&ctx))?;
        return Ok(());
    }
    Err(fail(url, format!("more than {MAX_REDIRECTS} redirects")))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use axum::Router;
    use axum::extract::State;
    use axum::routing::get;

    use super::*;

    fn img(v: &str, arch: &str, url: &str) -> OsImage {
        OsImage {
            openshift_version: v.into(),
            cpu_architecture: arch.into(),
            url: url.into(),
            version: format!("{v}.0-rhcos"),
        }
    }

    #[test]
    fn selection() {
        let images = vec![
            img("4.16", "x86_64", "a"),
            img("4.18", "x86_64", "b"),
            img("4.18", "aarch64", "c"),
            img("4.17", "x86_64", "d"),
            img("4.9", "x86_64", "e"),
        ];
        let url = |v: &str, a: &str| select(&images, v, a).map(|i| i.url.as_str());
        assert_eq!(url("4.17", "x86_64"), Some("d"));
        assert_eq!(url("4.18.7", "amd64"), Some("b"));
        assert_eq!(url("4.18.0-rc.1", "arm64"), Some("c"));
        // Unknown minor: the newest for the arch (4.18 > 4.9 numerically).
        assert_eq!(url("4.99", "x86_64"), Some("b"));
        assert_eq!(url("", "x86_64"), Some("b"));
        assert_eq!(url("4.18", "s390x"), None);
    }

    #[tokio::test]
    async fn file_url_is_copied_once() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.iso");
        std::fs::write(&src, b"iso bytes").unwrap();
        let cache = OsImageCache::new(dir.path().join("cache"));
        let image = img("4.18", "x86_64", &format!("file://{}", src.display()));
        let p = cache.get(&image).await.unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"iso bytes");
        // A second get serves the cached copy even when the source is gone.
        std::fs::remove_file(&src).unwrap();
        assert_eq!(cache.get(&image).await.unwrap(), p);
        let missing = img("4.17", "x86_64", "file:///nonexistent/x.iso");
        let err = cache.get(&missing).await.unwrap_err();
        assert!(err.to_string().contains("/nonexistent/x.iso"), "{err}");
        let err = cache
            .get(&img("4.17", "x86_64", "ftp://x/y.iso"))
            .await
            .unwrap_err();
        assert!(matches!(err, ImageError::Download { .. }), "{err}");
        // Failed downloads leave no partial files behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("cache"))
            .unwrap()
            .collect();
        assert_eq!(names.len(), 1);
    }

    #[tokio::test]
    async fn https_is_spoken_and_other_schemes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        // A plain-HTTP listener: an https download must fail in the TLS handshake (so TLS is
        // attempted), not as an unsupported scheme.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(
            axum::serve(
                listener,
                Router::new().route("/x.iso", get(|| async { "x" })),
            )
            .into_future(),
        );
        let e = fetch(&format!("https://{addr}/x.iso"), &dir.path().join("x"))
            .await
            .unwrap_err();
        assert!(!e.to_string().contains("supported"), "{e}");
        let e = fetch("ftp://example.com/x.iso", &dir.path().join("y"))
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("only file://, http:// and https://"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn http_concurrent_gets_download_once() {
        let hits = Arc::new(AtomicUsize::new(0));
        let payload: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        let body = Bytes::from(payload.clone());
        let app = Router::new()
            .route(
                "/rhcos.iso",
                get(
                    |State((hits, body)): State<(Arc<AtomicUsize>, Bytes)>| async move {
                        hits.fetch_add(1, Ordering::SeqCst);
                        // Slow enough that the second get has to wait on the lock.
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        body
                    },
                ),
            )
            .route(
                "/old.iso",
                get(|| async { axum::response::Redirect::temporary("/rhcos.iso") }),
            )
            .with_state((hits.clone(), body));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move { axum::serve(listener, app).await });

        let dir = tempfile::tempdir().unwrap();
        let cache = OsImageCache::new(dir.path());
        let image = img("4.18", "x86_64", &format!("http://{addr}/rhcos.iso"));
        let (a, b) = tokio::join!(cache.get(&image), cache.get(&image));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a, b);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert!(std::fs::read(&a).unwrap() == payload);

        let redirected = img("4.17", "x86_64", &format!("http://{addr}/old.iso"));
        assert!(std::fs::read(cache.get(&redirected).await.unwrap()).unwrap() == payload);
        assert_eq!(hits.load(Ordering::SeqCst), 2);

        let missing = img("4.16", "x86_64", &format!("http://{addr}/missing.iso"));
        let err = cache.get(&missing).await.unwrap_err();
        assert!(err.to_string().contains("404"), "{err}");
        server.abort();
    }
}
