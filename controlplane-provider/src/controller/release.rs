//! Which OpenShift or OKD release a control plane installs: `spec.distributionVersion` parsed and
//! checked, the release image it names, the CPU architecture of that image, and the name of the
//! per-cluster ClusterImageSet that carries it. Pure: no client, no clock.

use std::fmt;
use std::str::FromStr;

use kube::ResourceExt;
use provider_api::controlplane::api::{
    OpenshiftAssistedControlPlane, RELEASE_IMAGE_REPOSITORY_OVERRIDE_ANNOTATION,
};
use thiserror::Error;

use super::blocked::Blocked;

/// Repository of OpenShift (OCP) release images; tags are `<version>-<arch>`.
pub const OCP_REPOSITORY: &str = "quay.io/openshift-release-dev/ocp-release";
/// Repository of OKD (SCOS) release images; tags are `<version>`, one multi-arch manifest each.
pub const OKD_REPOSITORY: &str = "quay.io/okd/scos-release";
/// The pre-release prefix that marks an OKD version, e.g. `4.19.0-okd-scos.ec.6`.
pub const OKD_PRERELEASE_PREFIX: &str = "okd-scos";
/// The architecture when the cluster's configs disagree or do not exist yet: a multi-arch
/// payload installs on every host.
pub const MULTI_ARCH: &str = "multi";
/// What an OpenshiftAssistedConfig without `cpuArchitecture` means (its CRD default).
pub const DEFAULT_CONFIG_ARCH: &str = "x86_64";

/// The oldest release the assisted installer installs.
pub const MINIMUM_VERSION: Version = Version {
    major: 4,
    minor: 14,
    patch: 0,
    pre: None,
};

const VERSION_HINT: &str = "use MAJOR.MINOR.PATCH with an optional pre-release, e.g. 4.20.0, 4.20.0-rc.1 or 4.19.0-okd-scos.ec.6";

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ReleaseError {
    /// CAPOA accepts values such as `latest` and builds an image that does not exist; we stop here.
    #[error("distributionVersion {value:?} is not a release version ({reason}): {VERSION_HINT}")]
    InvalidVersion { value: String, reason: &'static str },
    #[error(
        "distributionVersion {version} is older than {MINIMUM_VERSION}, the oldest release the assisted installer installs"
    )]
    UnsupportedVersion { version: String },
    #[error(
        "cpuArchitecture {value:?} has no OpenShift release image: use x86_64, aarch64, ppc64le, s390x or multi"
    )]
    UnknownArchitecture { value: String },
    #[error(
        "release image repository override {value:?} is not a repository: give it without tag or digest, e.g. registry.example.com/ocp/release"
    )]
    InvalidRepositoryOverride { value: String },
}

/// A release version: `MAJOR.MINOR.PATCH[-PRE]`, printed without the optional leading `v`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    /// The pre-release after the first `-` (`rc.1`, `okd-scos.ec.6`).
    pub pre: Option<String>,
}

impl Version {
    /// OKD when a pre-release identifier starts with `okd-scos` (as CAPOA's `IsOKD`).
    pub fn is_okd(&self) -> bool {
        self.pre.as_deref().is_some_and(|pre| {
            pre.split('.')
                .any(|id| id.starts_with(OKD_PRERELEASE_PREFIX))
        })
    }

    /// Whether the assisted installer can install it. Only MAJOR.MINOR.PATCH is compared: a
    /// pre-release of 4.14.0 is a 4.14 payload, although semver orders it before 4.14.0.
    pub fn is_supported(&self) -> bool {
        (self.major, self.minor, self.patch)
            >= (
                MINIMUM_VERSION.major,
                MINIMUM_VERSION.minor,
                MINIMUM_VERSION.patch,
            )
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(pre) = &self.pre {
            write!(f, "-{pre}")?;
        }
        Ok(())
    }
}

impl FromStr for Version {
    type Err = ReleaseError;

    /// Tolerant where it is harmless (surrounding spaces, a leading `v`), strict where the
    /// result names an image: release tags always carry the full MAJOR.MINOR.PATCH and cannot
    /// contain `+`.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let invalid = |reason| ReleaseError::InvalidVersion {
            value: value.to_string(),
            reason,
        };
        let s = value.trim();
        let s = s.strip_prefix('v').unwrap_or(s);
        if s.is_empty() {
            return Err(invalid("it is empty"));
        }
        if s.contains('+') {
            return Err(invalid(
                "build metadata (+...) cannot be part of an image tag",
            ));
        }
        let (core, pre) = match s.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (s, None),
        };
        let parts: Vec<&str> = core.split('.').collect();
        let [major, minor, patch] = parts.as_slice() else {
            return Err(invalid("expected MAJOR.MINOR.PATCH"));
        };
        let number = |part: &str| -> Result<u64, ReleaseError> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid("MAJOR, MINOR and PATCH must be numbers"));
            }
            if part.len() > 1 && part.starts_with('0') {
                return Err(invalid("numbers cannot have leading zeros"));
            }
            part.parse().map_err(|_| invalid("a number is too large"))
        };
        let (major, minor, patch) = (number(major)?, number(minor)?, number(patch)?);
        let pre = match pre {
            None => None,
            Some(pre) => {
                let valid_id = |id: &str| {
                    !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                };
                if !pre.split('.').all(valid_id) {
                    return Err(invalid(
                        "the pre-release must be dot-separated identifiers of letters, digits and '-'",
                    ));
                }
                Some(pre.to_string())
            }
        };
        Ok(Version {
            major,
            minor,
            patch,
            pre,
        })
    }
}

/// The first release with 4- and 5-node control planes (assisted-service's rule for
/// `control_plane_count`; the core checks `controlPlaneAgents` against the same).
pub const MANY_MASTERS_SINCE: (u64, u64) = (4, 18);

/// `spec.distributionVersion` parsed and checked against the assisted installer's minimum.
pub fn parse_distribution_version(value: &str) -> Result<Version, ReleaseError> {
    let version: Version = value.parse()?;
    if !version.is_supported() {
        return Err(ReleaseError::UnsupportedVersion {
            version: version.to_string(),
        });
    }
    Ok(version)
}

/// Whether `distribution_version` is an OKD release; false when it does not parse (the release
/// image reports that).
pub fn is_okd(distribution_version: &str) -> bool {
    distribution_version
        .parse::<Version>()
        .is_ok_and(|v| v.is_okd())
}

/// The release-image tag suffix for a CPU architecture. Release tags use the names assisted
/// uses for `cpuArchitecture`; the Go names (`amd64`, `arm64`) the agent also reports map onto them.
pub fn release_arch(architecture: &str) -> Result<&'static str, ReleaseError> {
    match architecture {
        "x86_64" | "amd64" => Ok("x86_64"),
        "aarch64" | "arm64" => Ok("aarch64"),
        "ppc64le" => Ok("ppc64le"),
        "s390x" => Ok("s390x"),
        "multi" => Ok(MULTI_ARCH),
        other => Err(ReleaseError::UnknownArchitecture {
            value: other.to_string(),
        }),
    }
}

/// The release image of `distribution_version`, as CAPOA's `GetReleaseImage` builds it:
/// an override repository gets `<override>:<ver>-<arch>`, OKD `quay.io/okd/scos-release:<ver>`
/// (no arch: OKD tags are multi-arch manifests), OCP `ocp-release:<ver>-<arch>`. Unlike CAPOA the
/// tag uses the parsed version, so `v4.20.0` names `4.20.0`, and a bad version is an error.
pub fn release_image(
    distribution_version: &str,
    architecture: &str,
    repository_override: Option<&str>,
) -> Result<String, ReleaseError> {
    let version = parse_distribution_version(distribution_version)?;
    let arch = release_arch(architecture)?;
    if let Some(repository) = repository_override.map(str::trim).filter(|r| !r.is_empty()) {
        let last = repository.rsplit('/').next().unwrap_or(repository);
        if last.contains([':', '@']) || repository.contains(char::is_whitespace) {
            return Err(ReleaseError::InvalidRepositoryOverride {
                value: repository.to_string(),
            });
        }
        return Ok(format!("{repository}:{version}-{arch}"));
    }
    if version.is_okd() {
        return Ok(format!("{OKD_REPOSITORY}:{version}"));
    }
    Ok(format!("{OCP_REPOSITORY}:{version}-{arch}"))
}

/// The architecture of the release image for a cluster whose configs (the cluster's
/// OpenshiftAssistedConfigs) declare `config_archs`, as CAPOA's `getArchitecture`: the one
/// architecture they share, else `multi`.
///
/// - No configs yet (the first reconciles, before any Machine exists): `multi`, as CAPOA; that
///   payload installs on any host, so nothing is assumed about hosts not yet seen.
/// - A config without `cpuArchitecture` counts as `x86_64`, the OpenshiftAssistedConfig CRD
///   default the API server fills in (CAPOA compares the raw strings, so `""` next to `x86_64`
///   would make it `multi`).
/// - `amd64`/`arm64` count as `x86_64`/`aarch64`, so spelling differences do not make a
///   single-arch cluster `multi`.
pub fn architecture(config_archs: &[Option<String>]) -> String {
    let mut archs = config_archs.iter().map(|arch| {
        match arch.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
            None => DEFAULT_CONFIG_ARCH.to_string(),
            Some(a) => release_arch(a).map_or_else(|_| a.to_string(), str::to_string),
        }
    });
    let Some(first) = archs.next() else {
        return MULTI_ARCH.to_string();
    };
    if archs.all(|a| a == first) {
        first
    } else {
        MULTI_ARCH.to_string()
    }
}

/// Longest name of a cluster-scoped object (a DNS-1123 subdomain).
const MAX_NAME: usize = 253;

/// The ClusterImageSet of one control plane. ClusterImageSets are cluster-scoped, so CAPOA's
/// `<ClusterDeployment name>` collides between namespaces; this name is `<namespace>.<name>`.
/// Namespaces never contain a dot, so the first dot splits the pair unambiguously (a `-` join
/// would not: `a-b`/`c` and `a`/`b-c`). Past 253 characters it is cut and suffixed with a
/// hash of the full pair, so it stays unique, stable and a valid subdomain.
pub fn cluster_image_set_name(namespace: &str, oacp_name: &str) -> String {
    let name = format!("{namespace}.{oacp_name}");
    if name.len() <= MAX_NAME {
        return name;
    }
    let hash = format!(
        "{:016x}",
        manager::names::fnv1a64(format!("{namespace}/{oacp_name}").as_bytes())
    );
    // Namespaces and names are ASCII, so any byte index is a char boundary.
    let keep = MAX_NAME - hash.len() - 1;
    let prefix = name
        .get(..keep)
        .unwrap_or(&name)
        .trim_end_matches(['.', '-']);
    format!("{prefix}-{hash}")
}

/// The release image (a tag) of a control plane's `distributionVersion` for its Machines'
/// architectures and the repository override annotation; what cannot be named is why it is
/// blocked.
pub fn control_plane_release_image(
    oacp: &OpenshiftAssistedControlPlane,
    architectures: &[Option<String>],
) -> Result<String, Blocked> {
    let architecture = architecture(architectures);
    let repository_override = oacp
        .annotations()
        .get(RELEASE_IMAGE_REPOSITORY_OVERRIDE_ANNOTATION)
        .map(String::as_str);
    release_image(
        &oacp.spec.distribution_version,
        &architecture,
        repository_override,
    )
    .map_err(|e| Blocked {
        reason: match e {
            ReleaseError::UnknownArchitecture { .. } => "InvalidArchitecture",
            ReleaseError::InvalidRepositoryOverride { .. } => "InvalidReleaseRepository",
            _ => "InvalidDistributionVersion",
        },
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Input, (major, minor, patch), pre-release, printed form.
    type VersionRow<'a> = (&'a str, (u64, u64, u64), Option<&'a str>, &'a str);

    #[test]
    fn versions_parse_tolerantly() {
        let rows: &[VersionRow] = &[
            ("4.20.0", (4, 20, 0), None, "4.20.0"),
            ("v4.20.0", (4, 20, 0), None, "4.20.0"),
            (" 4.20.0 ", (4, 20, 0), None, "4.20.0"),
            ("4.20.0-rc.1", (4, 20, 0), Some("rc.1"), "4.20.0-rc.1"),
            (
                "4.19.0-okd-scos.ec.6",
                (4, 19, 0),
                Some("okd-scos.ec.6"),
                "4.19.0-okd-scos.ec.6",
            ),
            (
                "4.18.0-okd-scos.9",
                (4, 18, 0),
                Some("okd-scos.9"),
                "4.18.0-okd-scos.9",
            ),
            ("10.0.0", (10, 0, 0), None, "10.0.0"),
        ];
        for (input, (major, minor, patch), pre, shown) in rows {
            let v: Version = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(
                (v.major, v.minor, v.patch),
                (*major, *minor, *patch),
                "{input}"
            );
            assert_eq!(v.pre.as_deref(), *pre, "{input}");
            assert_eq!(v.to_string(), *shown, "{input}");
        }
    }

    #[test]
    fn unparseable_versions_are_rejected_with_the_value_and_a_hint() {
        for input in [
            "latest",
            "",
            "  ",
            "v",
            "4.20",
            "4",
            "4.20.0.1",
            "4.20.x",
            "4..0",
            "04.20.0",
            "4.20.0-",
            "4.20.0-rc..1",
            "4.20.0-rc_1",
            "4.20.0+build.1",
            "4.20.0-x86_64:tag",
            "99999999999999999999.0.0",
        ] {
            let err = input.parse::<Version>().unwrap_err();
            assert!(
                matches!(&err, ReleaseError::InvalidVersion { value, .. } if value == input),
                "{input}: {err:?}"
            );
            let message = err.to_string();
            assert!(message.contains(&format!("{input:?}")), "{message}");
            assert!(message.contains("e.g. 4.20.0"), "{message}");
        }
    }

    #[test]
    fn versions_below_4_14_are_unsupported() {
        for input in ["4.13.0", "4.13.99", "3.11.0", "4.0.0-okd-scos.1"] {
            let err = parse_distribution_version(input).unwrap_err();
            assert!(
                matches!(&err, ReleaseError::UnsupportedVersion { .. }),
                "{input}: {err:?}"
            );
            assert!(err.to_string().contains("4.14.0"), "{err}");
        }
        // Only MAJOR.MINOR.PATCH counts: a 4.14.0 pre-release is a 4.14 payload.
        for input in ["4.14.0", "4.14.0-rc.0", "4.14.1", "4.20.0", "5.0.0"] {
            assert!(parse_distribution_version(input).is_ok(), "{input}");
        }
    }

    #[test]
    fn okd_is_a_pre_release_starting_with_okd_scos() {
        assert!(is_okd("4.19.0-okd-scos.ec.6"));
        assert!(is_okd("4.18.0-okd-scos.9"));
        assert!(is_okd("v4.18.0-okd-scos.9"));
        assert!(is_okd("4.18.0-0.okd-scos-2024"));
        assert!(!is_okd("4.20.0"));
        assert!(!is_okd("4.20.0-rc.1"));
        assert!(!is_okd("4.15.0-0.okd-2024-03-10-010116"));
        assert!(!is_okd("latest"));
    }

    #[test]
    fn release_images() {
        let rows: &[(&str, &str, Option<&str>, &str)] = &[
            (
                "4.20.0",
                "x86_64",
                None,
                "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64",
            ),
            (
                "4.20.0",
                "aarch64",
                None,
                "quay.io/openshift-release-dev/ocp-release:4.20.0-aarch64",
            ),
            (
                "4.20.0",
                "arm64",
                None,
                "quay.io/openshift-release-dev/ocp-release:4.20.0-aarch64",
            ),
            (
                "4.20.0",
                "amd64",
                None,
                "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64",
            ),
            (
                "4.20.0",
                "ppc64le",
                None,
                "quay.io/openshift-release-dev/ocp-release:4.20.0-ppc64le",
            ),
            (
                "4.20.0",
                "s390x",
                None,
                "quay.io/openshift-release-dev/ocp-release:4.20.0-s390x",
            ),
            (
                "4.20.0",
                "multi",
                None,
                "quay.io/openshift-release-dev/ocp-release:4.20.0-multi",
            ),
            (
                "4.20.0-rc.1",
                "x86_64",
                None,
                "quay.io/openshift-release-dev/ocp-release:4.20.0-rc.1-x86_64",
            ),
            (
                "v4.20.0",
                "x86_64",
                None,
                "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64",
            ),
            (
                "4.19.0-okd-scos.ec.6",
                "x86_64",
                None,
                "quay.io/okd/scos-release:4.19.0-okd-scos.ec.6",
            ),
            (
                "4.19.0-okd-scos.ec.6",
                "multi",
                None,
                "quay.io/okd/scos-release:4.19.0-okd-scos.ec.6",
            ),
            (
                "4.18.0-okd-scos.9",
                "aarch64",
                None,
                "quay.io/okd/scos-release:4.18.0-okd-scos.9",
            ),
            (
                "4.20.0",
                "x86_64",
                Some("registry.ci.openshift.org/ocp/release"),
                "registry.ci.openshift.org/ocp/release:4.20.0-x86_64",
            ),
            (
                "4.20.0",
                "multi",
                Some("mirror.lab:5000/ocp/release"),
                "mirror.lab:5000/ocp/release:4.20.0-multi",
            ),
            // The override wins over OKD, as in CAPOA.
            (
                "4.19.0-okd-scos.ec.6",
                "x86_64",
                Some("mirror.lab:5000/okd"),
                "mirror.lab:5000/okd:4.19.0-okd-scos.ec.6-x86_64",
            ),
            // An empty annotation is no override.
            (
                "4.20.0",
                "x86_64",
                Some(""),
                "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64",
            ),
        ];
        for (version, arch, repo, want) in rows {
            assert_eq!(
                release_image(version, arch, *repo).as_deref(),
                Ok(*want),
                "{version} {arch} {repo:?}"
            );
        }
    }

    #[test]
    fn release_image_errors() {
        let bad = |v, a, r| release_image(v, a, r).unwrap_err();
        assert!(matches!(
            bad("latest", "x86_64", None),
            ReleaseError::InvalidVersion { .. }
        ));
        assert!(matches!(
            bad("4.13.0", "x86_64", None),
            ReleaseError::UnsupportedVersion { .. }
        ));
        assert_eq!(
            bad("4.20.0", "sparc", None),
            ReleaseError::UnknownArchitecture {
                value: "sparc".into()
            }
        );
        assert!(
            bad("4.20.0", "X86_64", None)
                .to_string()
                .contains("x86_64, aarch64")
        );
        for repo in [
            "quay.io/x/release:4.20",
            "quay.io/x/release@sha256:abc",
            "quay.io/x y",
        ] {
            assert!(
                matches!(
                    bad("4.20.0", "x86_64", Some(repo)),
                    ReleaseError::InvalidRepositoryOverride { .. }
                ),
                "{repo}"
            );
        }
    }

    #[test]
    fn architecture_is_the_shared_one_else_multi() {
        let s = |a: &str| Some(a.to_string());
        let rows: &[(&[Option<String>], &str)] = &[
            (&[], "multi"),
            (&[s("x86_64")], "x86_64"),
            (&[s("aarch64"), s("aarch64"), s("aarch64")], "aarch64"),
            (&[s("arm64"), s("aarch64")], "aarch64"),
            (&[s("x86_64"), s("aarch64")], "multi"),
            (&[s("ppc64le"), s("ppc64le")], "ppc64le"),
            (&[s("s390x")], "s390x"),
            (&[s("multi")], "multi"),
            (&[None], "x86_64"),
            (&[None, s("")], "x86_64"),
            (&[None, s("x86_64")], "x86_64"),
            (&[None, s("aarch64")], "multi"),
            // Unknown names pass through so that release_image reports them.
            (&[s("sparc"), s("sparc")], "sparc"),
        ];
        for (archs, want) in rows {
            assert_eq!(architecture(archs), *want, "{archs:?}");
        }
    }

    /// The API server's check for object names (no per-label length limit).
    fn is_dns_subdomain(name: &str) -> bool {
        name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    }

    #[test]
    fn image_set_names_are_per_namespace_and_unambiguous() {
        assert_eq!(
            cluster_image_set_name("test-capi", "test-multinode"),
            "test-capi.test-multinode"
        );
        assert_ne!(
            cluster_image_set_name("a-b", "c"),
            cluster_image_set_name("a", "b-c")
        );
        assert_ne!(
            cluster_image_set_name("ns1", "cluster"),
            cluster_image_set_name("ns2", "cluster")
        );
        assert!(is_dns_subdomain(&cluster_image_set_name(
            "test-capi",
            "a.b.c"
        )));
    }

    #[test]
    fn long_image_set_names_are_cut_and_hashed() {
        let namespace = "n".repeat(63);
        let long = |fill: char| format!("{}.{}", "x".repeat(200), fill.to_string().repeat(52));
        let (a, b) = (long('a'), long('b'));
        let name_a = cluster_image_set_name(&namespace, &a);
        let name_b = cluster_image_set_name(&namespace, &b);
        assert_eq!(name_a.len(), 253, "{name_a}");
        assert!(is_dns_subdomain(&name_a), "{name_a}");
        assert!(is_dns_subdomain(&name_b), "{name_b}");
        assert_ne!(name_a, name_b);
        assert_eq!(name_a, cluster_image_set_name(&namespace, &a));
        // A cut that ends on a dot or dash does not leave an empty or dash-ended label.
        let dotted = format!("{}.{}", "y".repeat(171), "z".repeat(80));
        let name = cluster_image_set_name(&namespace, &dotted);
        assert!(is_dns_subdomain(&name), "{name}");
        // Exactly 253 characters: no hash.
        let fits = "f".repeat(253 - 64);
        assert_eq!(
            cluster_image_set_name(&namespace, &fits),
            format!("{namespace}.{fits}")
        );
    }
}
