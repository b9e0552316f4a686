//! The test bed's real OCI registry (`crane registry serve`, built by
//! tests/openshift-install/payload.sh) for the tests that read images from one: included with
//! `#[path]` by the tests that need it.
#![allow(dead_code)]

use std::path::PathBuf;

/// `${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/<dir>`.
pub fn cache(dir: &str) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    base.join("capoa-rs").join(dir)
}

/// The real OCI registry of the test bed (`crane registry serve`, built by
/// tests/openshift-install/payload.sh), on a loopback port, in memory; gone when dropped.
pub struct Registry {
    child: std::process::Child,
    pub host: String,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn crane() -> PathBuf {
    let bin = cache("crane-v0.22.1/bin/crane");
    assert!(
        bin.exists(),
        "crane is not built: run `bash tests/openshift-install/payload.sh` (make test does)"
    );
    bin
}

pub fn start_registry() -> Registry {
    use std::io::BufRead;
    let mut child = std::process::Command::new(crane())
        .args(["registry", "serve", "--address", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start crane registry serve");
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let port = loop {
        let line = lines
            .next()
            .expect("crane registry serve exited")
            .expect("read crane's log");
        if let Some(port) = line.split("serving on port ").nth(1) {
            break port.trim().to_string();
        }
    };
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Registry {
        child,
        host: format!("127.0.0.1:{port}"),
    }
}

/// Runs crane, giving back its stdout (a pushed image's pull spec by digest).
pub fn crane_run(args: &[&str]) -> String {
    let out = std::process::Command::new(crane())
        .args(args)
        .output()
        .expect("run crane");
    assert!(
        out.status.success(),
        "crane {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Pushes a one-layer image (a small file) as `reference`; gives back its pull spec by digest.
pub fn push_small_image(reference: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("release-metadata"), "{}").unwrap();
    let layer = dir.path().join("layer.tar");
    let status = std::process::Command::new("tar")
        .arg("-C")
        .arg(dir.path())
        .arg("-cf")
        .arg(&layer)
        .arg("release-metadata")
        .status()
        .expect("run tar");
    assert!(status.success());
    crane_run(&[
        "append",
        "--oci-empty-base",
        "-f",
        layer.to_str().unwrap(),
        "-t",
        reference,
    ]);
    crane_run(&["digest", "--full-ref", reference])
}
