//! The release image's digest, read from its registry with the cluster's pull secret: a
//! ClusterImageSet and an upgrade name the release by digest (mirrors match digests only, and
//! the CVO verifies a digest's signature), and a release that does not exist is said before
//! any host boots. Answers are kept a while per image and pull secret, so a reconcile rarely
//! costs a registry request, and an unreachable registry is not asked in a loop.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use assisted_core::service::release::registry::{RegistryClient, RegistryError, sha256_digest};
use assisted_core::service::release::{ImageRef, PullSecret};

/// What the registry said of a release image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// `repository@sha256:...`, the same repository as the tag.
    Pinned(String),
    /// The registry has no such repository or tag (its answer).
    NotFound(String),
    /// The registry refused the pull secret's credentials (its answer).
    Refused(String),
    /// No answer (network, DNS, TLS, timeout): the tag is used as it is.
    Unreachable(String),
}

impl Lookup {
    /// How long an answer is kept: a digest an hour (the tag is read again then), a refusal a
    /// minute (the user may push the release or fix the secret), no answer ten minutes.
    fn lifetime(&self) -> Duration {
        match self {
            Lookup::Pinned(_) => Duration::from_secs(3600),
            Lookup::NotFound(_) | Lookup::Refused(_) => Duration::from_secs(60),
            Lookup::Unreachable(_) => Duration::from_secs(600),
        }
    }
}

/// What a registry error means for the release.
pub fn classify(error: &RegistryError) -> Lookup {
    let message = error.to_string();
    match error {
        RegistryError::Status { status, code, .. } => {
            let code = code.as_deref().unwrap_or_default();
            if status.as_u16() == 404 || matches!(code, "MANIFEST_UNKNOWN" | "NAME_UNKNOWN") {
                Lookup::NotFound(message)
            } else if matches!(status.as_u16(), 401 | 403)
                || matches!(code, "UNAUTHORIZED" | "DENIED")
            {
                Lookup::Refused(message)
            } else {
                Lookup::Unreachable(message)
            }
        }
        RegistryError::Auth { .. } => Lookup::Refused(message),
        _ => Lookup::Unreachable(message),
    }
}

/// Resolves release tags to digests, with the answers kept (see [`Lookup::lifetime`]).
pub struct Resolver {
    registry: Option<RegistryClient>,
    answers: Mutex<HashMap<String, (Lookup, Instant)>>,
}

impl Resolver {
    pub fn new() -> Resolver {
        Resolver {
            // Without the system's CA certificates every lookup is Unreachable (said so).
            registry: RegistryClient::new().ok(),
            answers: Mutex::default(),
        }
    }

    /// The lookup of `image` (a tag) with `pull_secret` (`.dockerconfigjson`); an image
    /// already pinned is taken as it is.
    pub async fn resolve(&self, image: &str, pull_secret: Option<&str>) -> Lookup {
        let reference = match ImageRef::parse(image) {
            Ok(r) => r,
            Err(e) => return Lookup::NotFound(e.to_string()),
        };
        if reference.digest.is_some() {
            return Lookup::Pinned(image.to_string());
        }
        let key = format!(
            "{image} {}",
            sha256_digest(pull_secret.unwrap_or_default().as_bytes())
        );
        if let Ok(answers) = self.answers.lock()
            && let Some((answer, at)) = answers.get(&key)
            && at.elapsed() < answer.lifetime()
        {
            return answer.clone();
        }
        let answer = self.ask(&reference, pull_secret).await;
        if let Ok(mut answers) = self.answers.lock() {
            answers.retain(|_, (a, at)| at.elapsed() < a.lifetime());
            answers.insert(key, (answer.clone(), Instant::now()));
        }
        answer
    }

    async fn ask(&self, reference: &ImageRef, pull_secret: Option<&str>) -> Lookup {
        let Some(registry) = &self.registry else {
            return Lookup::Unreachable("the system's CA certificates could not be loaded".into());
        };
        let secret = pull_secret.and_then(|s| PullSecret::parse(s).ok());
        let credentials = secret
            .as_ref()
            .and_then(|s| s.credentials_for(&reference.registry));
        match registry.manifest(reference, credentials).await {
            Ok((_, _, digest)) => Lookup::Pinned(pinned(reference, &digest)),
            Err(e) => classify(&e),
        }
    }
}

impl Default for Resolver {
    fn default() -> Self {
        Resolver::new()
    }
}

/// `registry/repository@digest`.
pub fn pinned(reference: &ImageRef, digest: &str) -> String {
    format!("{}/{}@{digest}", reference.registry, reference.repository)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_answers_are_told_apart() {
        let status = |code: u16, error: Option<&str>| RegistryError::Status {
            url: "https://r/v2/x/manifests/4.99.0".into(),
            status: http::StatusCode::from_u16(code).unwrap(),
            code: error.map(str::to_string),
            detail: String::new(),
        };
        assert!(matches!(classify(&status(404, None)), Lookup::NotFound(_)));
        assert!(matches!(
            classify(&status(400, Some("MANIFEST_UNKNOWN"))),
            Lookup::NotFound(_)
        ));
        assert!(matches!(classify(&status(401, None)), Lookup::Refused(_)));
        assert!(matches!(
            classify(&status(400, Some("DENIED"))),
            Lookup::Refused(_)
        ));
        assert!(matches!(
            classify(&status(503, None)),
            Lookup::Unreachable(_)
        ));
        let connect = RegistryError::Connect {
            url: "https://quay.io/v2/".into(),
            reason: "dns error".into(),
        };
        assert!(matches!(classify(&connect), Lookup::Unreachable(_)));
    }

    #[tokio::test]
    async fn a_pinned_image_is_not_looked_up_and_answers_are_kept() {
        let resolver = Resolver::new();
        let pinned = "quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000";
        assert_eq!(
            resolver.resolve(pinned, None).await,
            Lookup::Pinned(pinned.into())
        );
        // A registry nobody listens on: Unreachable, and the answer is kept (no second try).
        let image = "127.0.0.1:9/ocp/release:4.99.0-x86_64";
        let first = resolver.resolve(image, None).await;
        assert!(matches!(first, Lookup::Unreachable(_)), "{first:?}");
        assert_eq!(resolver.answers.lock().unwrap().len(), 1);
        assert_eq!(resolver.resolve(image, None).await, first);
    }
}
