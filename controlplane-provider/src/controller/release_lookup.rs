//! The release image's digest, read from its registry with the cluster's pull secret: a
//! ClusterImageSet and an upgrade name the release by digest (mirrors match digests only, and
//! the CVO verifies a digest's signature), and a release that does not exist is said before
//! any host boots. Answers are kept a while per image and pull secret, so a reconcile rarely
//! costs a registry request, and an unreachable registry is not asked in a loop.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use assisted_core::domain::mirrors::{self, MirrorConfig};
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

    /// The lookup of `image` (a tag) with `pull_secret` (`.dockerconfigjson`), through the
    /// `mirrors` that serve tags first (as a host's registries.conf pulls it), trusting their
    /// CA; an image already pinned is taken as it is. A digest found at a mirror pins the
    /// source's name (`repository@digest`), which the mirrors then serve.
    pub async fn resolve(
        &self,
        image: &str,
        pull_secret: Option<&str>,
        mirrors: Option<&MirrorConfig>,
    ) -> Lookup {
        let reference = match ImageRef::parse(image) {
            Ok(r) => r,
            Err(e) => return Lookup::NotFound(e.to_string()),
        };
        if reference.digest.is_some() {
            return Lookup::Pinned(image.to_string());
        }
        let mirrors_key = mirrors.map_or_else(String::new, |m| {
            sha256_digest(
                format!(
                    "{}\n{}",
                    m.registries_conf,
                    m.ca_bundle.as_deref().unwrap_or("")
                )
                .as_bytes(),
            )
        });
        let key = format!(
            "{image} {} {mirrors_key}",
            sha256_digest(pull_secret.unwrap_or_default().as_bytes())
        );
        if let Ok(answers) = self.answers.lock()
            && let Some((answer, at)) = answers.get(&key)
            && at.elapsed() < answer.lifetime()
        {
            return answer.clone();
        }
        let answer = self
            .ask_through(&reference, image, pull_secret, mirrors)
            .await;
        if let Ok(mut answers) = self.answers.lock() {
            answers.retain(|_, (a, at)| at.elapsed() < a.lifetime());
            answers.insert(key, (answer.clone(), Instant::now()));
        }
        answer
    }

    /// Asks each registry `image` may be pulled from, in order, until one gives its digest.
    async fn ask_through(
        &self,
        source: &ImageRef,
        image: &str,
        pull_secret: Option<&str>,
        mirrors: Option<&MirrorConfig>,
    ) -> Lookup {
        let client = match mirrors.and_then(|m| m.ca_bundle.as_deref()) {
            Some(ca) => RegistryClient::with_extra_roots(ca).ok(),
            None => self.registry.clone(),
        };
        let Some(client) = client else {
            return Lookup::Unreachable("the system's CA certificates could not be loaded".into());
        };
        let secret = pull_secret.and_then(|s| PullSecret::parse(s).ok());
        let sources = match mirrors {
            Some(m) => mirrors::pull_sources(image, m),
            None => vec![image.to_string()],
        };
        let mut answers: Vec<Lookup> = Vec::new();
        for candidate in &sources {
            let Ok(reference) = ImageRef::parse(candidate) else {
                continue;
            };
            let credentials = secret
                .as_ref()
                .and_then(|s| s.credentials_for(&reference.registry));
            match client.manifest(&reference, credentials).await {
                Ok((_, _, digest)) => return Lookup::Pinned(pinned(source, &digest)),
                Err(e) => answers.push(classify(&e)),
            }
        }
        settle(answers)
    }
}

/// No registry gave the digest: the first that knows better than "unreachable" (it has no such
/// tag, or refuses the pull secret) speaks, else the last (the source); the others' answers
/// follow in its message.
fn settle(answers: Vec<Lookup>) -> Lookup {
    let message = |l: &Lookup| match l {
        Lookup::Pinned(m) | Lookup::NotFound(m) | Lookup::Refused(m) | Lookup::Unreachable(m) => {
            m.clone()
        }
    };
    let chosen = answers
        .iter()
        .position(|a| matches!(a, Lookup::NotFound(_) | Lookup::Refused(_)))
        .or_else(|| answers.len().checked_sub(1));
    let Some(i) = chosen else {
        return Lookup::Unreachable("no registry to ask".into());
    };
    let others: Vec<String> = answers
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(_, a)| message(a))
        .collect();
    let with_others = |m: String| {
        if others.is_empty() {
            m
        } else {
            format!("{m} (also asked: {})", others.join("; "))
        }
    };
    match answers.into_iter().nth(i) {
        Some(Lookup::NotFound(m)) => Lookup::NotFound(with_others(m)),
        Some(Lookup::Refused(m)) => Lookup::Refused(with_others(m)),
        Some(Lookup::Unreachable(m)) => Lookup::Unreachable(with_others(m)),
        Some(pinned @ Lookup::Pinned(_)) => pinned,
        None => Lookup::Unreachable("no registry to ask".into()),
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

    #[test]
    fn without_a_digest_the_registry_that_knows_better_speaks() {
        use Lookup::*;
        let nf = || NotFound("mirror: no such tag".into());
        let un = |m: &str| Unreachable(m.into());
        // (answers in the order asked, the outcome)
        let rows = vec![
            (vec![un("source down")], un("source down")),
            // A mirror that has no such tag says more than an unreachable source.
            (
                vec![nf(), un("source down")],
                NotFound("mirror: no such tag (also asked: source down)".into()),
            ),
            (
                vec![un("mirror down"), Refused("source: denied".into())],
                Refused("source: denied (also asked: mirror down)".into()),
            ),
            (
                vec![un("mirror down"), un("source down")],
                un("source down (also asked: mirror down)"),
            ),
        ];
        for (answers, expected) in rows {
            assert_eq!(settle(answers.clone()), expected, "{answers:?}");
        }
        assert!(matches!(settle(Vec::new()), Unreachable(_)));
    }

    #[tokio::test]
    async fn a_pinned_image_is_not_looked_up_and_answers_are_kept() {
        let resolver = Resolver::new();
        let pinned = "quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000";
        assert_eq!(
            resolver.resolve(pinned, None, None).await,
            Lookup::Pinned(pinned.into())
        );
        // A registry nobody listens on: Unreachable, and the answer is kept (no second try).
        let image = "127.0.0.1:9/ocp/release:4.99.0-x86_64";
        let first = resolver.resolve(image, None, None).await;
        assert!(matches!(first, Lookup::Unreachable(_)), "{first:?}");
        assert_eq!(resolver.answers.lock().unwrap().len(), 1);
        assert_eq!(resolver.resolve(image, None, None).await, first);
    }
}
