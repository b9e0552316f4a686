//! Drives the wire-conformance Go program (`tests/wire-conformance/go`): it plays the discovery
//! agent, the installer and the installer-controller with assisted-service's published client
//! and models, and reports every response that does not decode into, validate as, or match the
//! fields of upstream's model. See docs/wire-conformance.md.
//!
//! This crate builds the program (through `build.sh`, a no-op when cached), runs it, reads its
//! JSON summary and compares the mismatches with an allow-list.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// `build.sh` beside this crate's manifest.
fn build_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("build.sh")
}

/// Builds the program when its cache entry is missing and returns the binary's path. Runs
/// `build.sh` once per process (tests in one binary run in parallel). A missing Go toolchain
/// is an error, never a skip.
pub fn program() -> Result<PathBuf> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = built.as_ref() {
        return Ok(p.clone());
    }
    let out = Command::new("bash")
        .arg(build_script())
        .output()
        .context("running tests/wire-conformance/build.sh")?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!(
            "tests/wire-conformance/build.sh failed ({}); it needs Go >= 1.26 on PATH and the Go \
             module proxy (see docs/wire-conformance.md):\n{log}",
            out.status
        );
    }
    // Captured by the test harness: shown for failed tests.
    eprint!("{log}");
    let path = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(|l| PathBuf::from(l.trim()))
        .context("build.sh printed no binary path")?;
    *built = Some(path.clone());
    Ok(path)
}

/// The program's JSON summary.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Summary {
    pub scenario: String,
    /// Requests sent per operation id.
    pub requests: std::collections::BTreeMap<String, u64>,
    /// Responses decoded per `<operation id> <status>`.
    pub responses: std::collections::BTreeMap<String, u64>,
    /// Instructions whose arguments were decoded, per step type.
    pub steps: std::collections::BTreeMap<String, u64>,
    /// Step replies the server accepted, per step type.
    pub replies: std::collections::BTreeMap<String, u64>,
    pub failures: Vec<Finding>,
    /// Set when the scenario could not run to its end.
    #[serde(default)]
    pub fatal: Option<String>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One distinct mismatch.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Finding {
    /// `<operation id> <status>`, `step <type> args`, `reply <type> output`, ...
    #[serde(rename = "where")]
    pub at: String,
    /// status, decode, validate, unknown-field, request (the Go program), stored (the Rust test).
    pub kind: String,
    /// The JSON path, array positions as `*`.
    pub field: String,
    pub message: String,
    pub count: u64,
}

/// Every mismatch the suite tolerates, shared by all tests. Each entry must still occur wherever
/// a run exercises its place (a stale entry fails the test), so the list only shrinks. Why each
/// one is here: docs/wire-conformance.md, "Allow-list".
pub const ALLOWED: &[Allowed] = &[
    // --- The pinned models (2024-02) predate what upstream's server sends today; we follow
    // --- the server.
    Allowed {
        kind: "unknown-field",
        fields: &["control_plane_count", "coreos_image", "notify_num_reboots"],
        at: &["step install args"],
        why: "install_cmd_request fields upstream added after the pinned models",
    },
    Allowed {
        kind: "unknown-field",
        fields: &["control_plane_count", "progress.finalizing_stage"],
        at: &["v2GetCluster 200", "v2CompleteInstallation 202"],
        why: "cluster fields upstream added after the pinned models",
    },
    Allowed {
        kind: "validate",
        fields: &["progress_stages.*"],
        at: &[
            "ListClusterHosts 200",
            "v2GetCluster 200",
            "v2CompleteInstallation 202",
        ],
        why: "\"Copying registry data to disk\" joined upstream's host-stage enum and stage \
              lists after the pinned models",
    },
    // --- Upstream's models contradict upstream's own server; we follow the server. ---
    Allowed {
        kind: "validate",
        fields: &["created_at", "updated_at"],
        at: &[
            "v2RegisterHost 201",
            "ListClusterHosts 200",
            "v2GetCluster 200",
            "v2CompleteInstallation 202",
        ],
        why: "host.created_at/updated_at are timeext.Time, whose generated Validate checks \
              Time.String() (\"2006-01-02 15:04:05 +0000 UTC\") as date-time: no value passes",
    },
    Allowed {
        kind: "validate",
        fields: &[""],
        at: &["step domain-resolution args"],
        why: "upstream's server asks to resolve validateNoWildcardDNS.<cluster>.<domain>, which \
              the model's domain-name check rejects (capital letters)",
    },
];

/// A mismatch the suite tolerates for now: one fact, every place it shows, and why.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    pub kind: &'static str,
    /// Field paths (array positions as `*`); a finding whose path ends with one of them at a
    /// path segment boundary matches (`created_at` covers `hosts.*.created_at`).
    pub fields: &'static [&'static str],
    /// The places (`Finding::at`) where it occurs.
    pub at: &'static [&'static str],
    pub why: &'static str,
}

impl Allowed {
    pub fn matches(&self, f: &Finding) -> bool {
        self.kind == f.kind
            && self.at.contains(&f.at.as_str())
            && self
                .fields
                .iter()
                .any(|field| field_matches(field, &f.field))
    }
}

fn field_matches(allowed: &str, field: &str) -> bool {
    field == allowed || (!allowed.is_empty() && field.ends_with(&format!(".{allowed}")))
}

impl Summary {
    /// Mismatches no allow-list entry covers.
    pub fn unexpected<'a>(&'a self, allow: &[Allowed]) -> Vec<&'a Finding> {
        self.failures
            .iter()
            .filter(|f| !allow.iter().any(|a| a.matches(f)))
            .collect()
    }

    /// `(place, field)` pairs of the allow-list that this run exercised without seeing the
    /// mismatch: fixed on our side, to be removed from the list.
    pub fn stale(&self, allow: &[Allowed]) -> Vec<(&'static str, &'static str)> {
        let mut out = Vec::new();
        for a in allow {
            for at in a.at.iter().filter(|at| self.exercised(at)) {
                for field in a.fields {
                    let seen = self
                        .failures
                        .iter()
                        .any(|f| f.kind == a.kind && f.at == *at && field_matches(field, &f.field));
                    if !seen {
                        out.push((*at, *field));
                    }
                }
            }
        }
        out
    }

    /// True when this run did what a finding's place is about.
    pub fn exercised(&self, at: &str) -> bool {
        if let Some(t) = at.strip_prefix("step ") {
            return self.steps.contains_key(t.trim_end_matches(" args"));
        }
        if let Some(t) = at.strip_prefix("reply ") {
            return self.replies.contains_key(t.trim_end_matches(" output"));
        }
        self.responses.contains_key(at) || self.requests.contains_key(at)
    }

    /// Fails with a readable report when a mismatch is not allowed or an entry is stale.
    pub fn check(&self, allow: &[Allowed]) -> std::result::Result<(), String> {
        let unexpected = self.unexpected(allow);
        let stale = self.stale(allow);
        if unexpected.is_empty() && stale.is_empty() {
            return Ok(());
        }
        let mut msg = String::new();
        for f in unexpected {
            msg.push_str(&format!(
                "not allowed: {} [{}] {}: {} (x{})\n",
                f.at, f.kind, f.field, f.message, f.count
            ));
        }
        for (at, field) in stale {
            msg.push_str(&format!(
                "allowed but no longer seen (remove it from ALLOWED): {at} {field}\n"
            ));
        }
        Err(msg)
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct Run {
    pub summary: Summary,
    /// 0 conformed, 1 mismatches, 2 the scenario did not finish.
    pub exit_code: Option<i32>,
    pub stderr: String,
}

/// Runs the program with `args` (a subcommand and its flags) and reads its summary.
pub async fn run(program: &Path, args: &[String], dir: &Path) -> Result<Run> {
    let summary_path = dir.join(format!(
        "wire-conformance-{}.json",
        args.first().map(String::as_str).unwrap_or("run")
    ));
    let out = tokio::process::Command::new(program)
        .args(args)
        .arg("-summary")
        .arg(&summary_path)
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running {}", program.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&summary_path)
        .with_context(|| format!("the program wrote no summary; stderr:\n{stderr}"))?;
    let summary: Summary = serde_json::from_str(&text).context("parsing the summary")?;
    Ok(Run {
        summary,
        exit_code: out.status.code(),
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(at: &str, kind: &str, field: &str) -> Finding {
        Finding {
            at: at.into(),
            kind: kind.into(),
            field: field.into(),
            message: String::new(),
            count: 1,
        }
    }

    #[test]
    fn allow_list_matches_fields_at_segment_boundaries_and_goes_stale() {
        let mut s = Summary {
            failures: vec![
                finding("v2GetCluster 200", "validate", "hosts.*.created_at"),
                finding("v2GetCluster 200", "validate", "hosts.*.not_created_at"),
                finding("v2GetCluster 200", "validate", "id"),
            ],
            ..Summary::default()
        };
        s.responses.insert("v2GetCluster 200".into(), 3);
        s.responses.insert("ListClusterHosts 200".into(), 1);
        let allow = [Allowed {
            kind: "validate",
            fields: &["created_at"],
            at: &[
                "v2GetCluster 200",
                "ListClusterHosts 200",
                "v2RegisterHost 201",
            ],
            why: "",
        }];
        let unexpected: Vec<&str> = s
            .unexpected(&allow)
            .iter()
            .map(|f| f.field.as_str())
            .collect();
        assert_eq!(unexpected, ["hosts.*.not_created_at", "id"]);
        // Exercised without the mismatch: stale. Not exercised (v2RegisterHost): not judged.
        assert_eq!(s.stale(&allow), [("ListClusterHosts 200", "created_at")]);
        assert!(s.check(&allow).is_err());
    }

    #[test]
    fn empty_field_matches_only_itself() {
        assert!(field_matches("", ""));
        assert!(!field_matches("", "x"));
        assert!(field_matches("a.b", "x.a.b"));
        assert!(!field_matches("a.b", "xa.b"));
    }
}
