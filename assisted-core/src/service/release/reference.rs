//! Image pull specs (`registry/repository[:tag][@digest]`) as registries address them.

use std::fmt;
use std::str::FromStr;

/// Docker Hub's API host: what `docker.io/...` and registry-less specs talk to.
pub const DOCKER_HUB: &str = "registry-1.docker.io";

/// Why a pull spec cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid image reference {spec:?}: {reason}")]
pub struct ReferenceError {
    pub spec: String,
    pub reason: String,
}

/// What is wrong with one part of a pull spec (the reason of a [`ReferenceError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceProblem {
    #[error("registry {0:?} has an unclosed '['")]
    UnclosedBracket(String),
    #[error("registry {0:?} is not a valid IPv6 address")]
    BadIpv6(String),
    #[error("registry {0:?} has junk after ']'")]
    JunkAfterBracket(String),
    #[error("registry {0:?} is not a valid host name")]
    BadHost(String),
    #[error("registry port {0:?} is not a number")]
    BadPort(String),
    #[error("no repository")]
    NoRepository,
    #[error(
        "repository component {0:?} must be lowercase letters, digits and . _ - \
         (starting and ending with a letter or digit)"
    )]
    BadRepositoryComponent(String),
    #[error("tag {0:?} is not valid")]
    BadTag(String),
    #[error("digest {0:?} is not sha256:<64 hex> or sha512:<128 hex>")]
    BadDigest(String),
}

/// A parsed pull spec. `registry` is the host[:port] the registry API is served on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageRef {
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl ImageRef {
    /// Parses a pull spec such as `quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64`.
    pub fn parse(spec: &str) -> Result<Self, ReferenceError> {
        let fail = |reason: &str| ReferenceError {
            spec: spec.to_string(),
            reason: reason.to_string(),
        };
        if spec.is_empty() {
            return Err(fail("empty"));
        }
        if spec.contains("://") {
            return Err(fail("a pull spec has no URL scheme"));
        }
        if spec.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(fail("contains whitespace"));
        }
        let (name, digest) = match spec.split_once('@') {
            Some((name, digest)) => {
                check_digest(digest).map_err(|r| fail(&r.to_string()))?;
                (name, Some(digest.to_string()))
            }
            None => (spec, None),
        };
        // The tag is after the last ':' of the last path component, so a registry port
        // (`host:5000/repo`) is never taken for one.
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name[last_slash..].rfind(':') {
            Some(i) => {
                let tag = &name[last_slash + i + 1..];
                check_tag(tag).map_err(|r| fail(&r.to_string()))?;
                (&name[..last_slash + i], Some(tag.to_string()))
            }
            None => (name, None),
        };
        let (registry, repository) = split_registry(name);
        check_registry(&registry).map_err(|r| fail(&r.to_string()))?;
        check_repository(&repository).map_err(|r| fail(&r.to_string()))?;
        Ok(Self {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// The same image addressed by `digest` (no tag): how manifests of a list and mirrored
    /// component images are fetched.
    pub fn with_digest(&self, digest: &str) -> ImageRef {
        ImageRef {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: None,
            digest: Some(digest.to_string()),
        }
    }

    /// What goes after `/manifests/` in the registry API: the digest when pinned, else the
    /// tag, else `latest` (as `docker pull` does).
    pub fn reference(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// Local registries (tests, `crane registry serve`) speak plain HTTP.
    pub fn is_local(&self) -> bool {
        is_local_host(&self.registry)
    }

    /// `http` for a local registry, else `https`.
    pub fn scheme(&self) -> &'static str {
        if self.is_local() { "http" } else { "https" }
    }

    /// The registry API base, e.g. `https://quay.io/v2/openshift-release-dev/ocp-release`.
    pub fn api_base(&self) -> String {
        format!(
            "{}://{}/v2/{}",
            self.scheme(),
            self.registry,
            self.repository
        )
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl FromStr for ImageRef {
    type Err = ReferenceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Whether `registry` (host[:port]) is this machine.
pub fn is_local_host(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        // `[::1]:5000`: the host is what is inside the brackets.
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => registry.split(':').next().unwrap_or(""),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// Splits `name` into registry and repository with Docker's rule: the first component is
/// a registry when it has a `.` or `:` or is `localhost`, else the image is on Docker Hub.
fn split_registry(name: &str) -> (String, String) {
    let (registry, repository) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => {
            (first.to_string(), rest.to_string())
        }
        _ => (DOCKER_HUB.to_string(), name.to_string()),
    };
    let hub = matches!(
        registry.as_str(),
        "docker.io" | "index.docker.io" | DOCKER_HUB
    );
    if !hub {
        return (registry, repository);
    }
    // Official images live under `library/` on Docker Hub.
    let repository = if repository.contains('/') {
        repository
    } else {
        format!("library/{repository}")
    };
    (DOCKER_HUB.to_string(), repository)
}

fn check_registry(registry: &str) -> Result<(), ReferenceProblem> {
    let (host, port) = if let Some(rest) = registry.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or_else(|| ReferenceProblem::UnclosedBracket(registry.to_string()))?;
        if inside.is_empty() || !inside.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err(ReferenceProblem::BadIpv6(registry.to_string()));
        }
        match after {
            "" => (inside, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (inside, Some(port)),
                None => return Err(ReferenceProblem::JunkAfterBracket(registry.to_string())),
            },
        }
    } else {
        match registry.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (registry, None),
        }
    };
    let host_ok = !host.is_empty()
        && (registry.starts_with('[')
            || host.split('.').all(|l| {
                !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            }));
    if !host_ok {
        return Err(ReferenceProblem::BadHost(registry.to_string()));
    }
    if let Some(port) = port
        && port.parse::<u16>().is_err()
    {
        return Err(ReferenceProblem::BadPort(port.to_string()));
    }
    Ok(())
}

/// Repository components are lowercase alphanumerics joined by `.`, `_` or `-`.
fn check_repository(repository: &str) -> Result<(), ReferenceProblem> {
    if repository.is_empty() {
        return Err(ReferenceProblem::NoRepository);
    }
    for part in repository.split('/') {
        let edges_ok = part
            .chars()
            .next()
            .zip(part.chars().last())
            .is_some_and(|(a, b)| a.is_ascii_alphanumeric() && b.is_ascii_alphanumeric());
        let chars_ok = part
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
        if !edges_ok || !chars_ok {
            return Err(ReferenceProblem::BadRepositoryComponent(part.to_string()));
        }
    }
    Ok(())
}

fn check_tag(tag: &str) -> Result<(), ReferenceProblem> {
    let first_ok = tag
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let chars_ok = tag
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if first_ok && chars_ok && tag.len() <= 128 {
        Ok(())
    } else {
        Err(ReferenceProblem::BadTag(tag.to_string()))
    }
}

/// A content digest: `sha256:` + 64 hex digits (or `sha512:` + 128).
pub fn check_digest(digest: &str) -> Result<(), ReferenceProblem> {
    let bad = || ReferenceProblem::BadDigest(digest.to_string());
    let (algorithm, hex) = digest.split_once(':').ok_or_else(bad)?;
    let len = match algorithm {
        "sha256" => 64,
        "sha512" => 128,
        _ => return Err(bad()),
    };
    let hex_ok = hex
        .chars()
        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
    if hex.len() == len && hex_ok {
        Ok(())
    } else {
        Err(bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parts(spec: &str) -> (String, String, Option<String>, Option<String>) {
        let r = ImageRef::parse(spec).unwrap();
        (r.registry, r.repository, r.tag, r.digest)
    }

    fn s(v: &str) -> String {
        v.to_string()
    }

    #[test]
    fn release_pull_specs() {
        assert_eq!(
            parts("quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64"),
            (
                s("quay.io"),
                s("openshift-release-dev/ocp-release"),
                Some(s("4.17.3-x86_64")),
                None
            )
        );
        assert_eq!(
            parts(&format!("registry.example.com:5000/a/b@sha256:{HEX}")),
            (
                s("registry.example.com:5000"),
                s("a/b"),
                None,
                Some(format!("sha256:{HEX}"))
            )
        );
        assert_eq!(
            parts("127.0.0.1:5000/ocp/release:4.17"),
            (s("127.0.0.1:5000"), s("ocp/release"), Some(s("4.17")), None)
        );
        assert_eq!(
            parts("localhost/x:y"),
            (s("localhost"), s("x"), Some(s("y")), None)
        );
        assert_eq!(
            parts(&format!("[::1]:5000/ocp/release:4.17@sha256:{HEX}")),
            (
                s("[::1]:5000"),
                s("ocp/release"),
                Some(s("4.17")),
                Some(format!("sha256:{HEX}"))
            )
        );
        assert_eq!(parts("localhost:5000/x").2, None);
    }

    #[test]
    fn docker_hub_defaults() {
        assert_eq!(
            parts("busybox"),
            (s(DOCKER_HUB), s("library/busybox"), None, None)
        );
        assert_eq!(
            parts("docker.io/busybox:1.36"),
            (s(DOCKER_HUB), s("library/busybox"), Some(s("1.36")), None)
        );
        assert_eq!(
            parts("index.docker.io/org/img").1,
            s("org/img"),
            "an org path gets no library/ prefix"
        );
        assert_eq!(
            parts("org/img:1"),
            (s(DOCKER_HUB), s("org/img"), Some(s("1")), None)
        );
        // Only Docker Hub gets the prefix.
        assert_eq!(parts("quay.io/img").1, "img");
    }

    #[test]
    fn display_round_trips() {
        for spec in [
            "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64",
            "127.0.0.1:5000/ocp/release:4.17",
            "localhost/x:y",
            &format!("registry.example.com:5000/a/b@sha256:{HEX}"),
            &format!("quay.io/a/b:t@sha256:{HEX}"),
        ] {
            let r = ImageRef::parse(spec).unwrap();
            assert_eq!(r.to_string(), spec);
            assert_eq!(r.to_string().parse::<ImageRef>().unwrap(), r);
        }
        assert_eq!(
            ImageRef::parse("busybox").unwrap().to_string(),
            "registry-1.docker.io/library/busybox"
        );
    }

    #[test]
    fn with_digest_keeps_the_repository() {
        let r = ImageRef::parse("127.0.0.1:5000/ocp/release:4.17").unwrap();
        let d = r.with_digest(&format!("sha256:{HEX}"));
        assert_eq!(
            d.to_string(),
            format!("127.0.0.1:5000/ocp/release@sha256:{HEX}")
        );
        assert_eq!(d.reference(), format!("sha256:{HEX}"));
        assert_eq!(r.reference(), "4.17");
        assert_eq!(
            ImageRef::parse("quay.io/a/b").unwrap().reference(),
            "latest"
        );
    }

    #[test]
    fn schemes() {
        let scheme = |s: &str| ImageRef::parse(s).unwrap().scheme();
        assert_eq!(scheme("localhost:5000/a"), "http");
        assert_eq!(scheme("localhost/a"), "http");
        assert_eq!(scheme("127.0.0.1:5000/a"), "http");
        assert_eq!(scheme("[::1]:5000/a"), "http");
        assert_eq!(scheme("quay.io/a"), "https");
        assert_eq!(scheme("localhost.example.com/a"), "https");
        assert_eq!(scheme("127.0.0.10:5000/a"), "https");
        assert_eq!(
            ImageRef::parse("127.0.0.1:5000/ocp/release:4.17")
                .unwrap()
                .api_base(),
            "http://127.0.0.1:5000/v2/ocp/release"
        );
    }

    #[test]
    fn bad_specs_are_refused_with_a_reason() {
        let err = |spec: &str| ImageRef::parse(spec).unwrap_err().to_string();
        assert!(err("").contains("empty"));
        assert!(err("https://quay.io/a/b").contains("scheme"));
        assert!(err("quay.io/a/b@sha256:abc").contains("digest"));
        assert!(err(&format!("quay.io/a/b@md5:{HEX}")).contains("digest"));
        assert!(err("quay.io/A/b").contains("lowercase"));
        assert!(err("quay.io/a//b").contains("repository component"));
        assert!(err("quay.io/a/b:").contains("tag"));
        assert!(err("quay.io/a/b:-x").contains("tag"));
        assert!(err("quay.io:http/a").contains("port"));
        assert!(err("quay..io/a").contains("host name"));
        assert!(err("[::1/a").contains("'['"));
        assert!(err("quay.io/a b").contains("whitespace"));
        assert!(err("quay.io/").contains("no repository"));
        let e = ImageRef::parse("quay.io/a/b:").unwrap_err();
        assert_eq!(e.spec, "quay.io/a/b:");
    }
}
