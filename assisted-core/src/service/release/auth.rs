//! Registry credentials from a pull secret, and the registry's `WWW-Authenticate` challenges.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Why a pull secret cannot be used. Never carries secret material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("the pull secret is not valid JSON of the form {{\"auths\":{{...}}}}: {0}")]
    Malformed(String),
    #[error("the pull secret's entry for {registry} is not usable: {reason}")]
    BadEntry { registry: String, reason: String },
}

/// A user name and password (or token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl Credentials {
    /// The `Authorization` header value for HTTP Basic.
    pub fn basic_header(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password);
        format!("Basic {}", STANDARD.encode(raw))
    }
}

// Logs must never show the password.
impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The credentials of a `.dockerconfigjson` pull secret, keyed by normalized registry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullSecret {
    auths: BTreeMap<String, Credentials>,
}

#[derive(serde::Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(serde::Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

impl PullSecret {
    /// Parses the pull secret JSON. Entries with neither `auth` nor `username` (e.g. only
    /// an `email`) are skipped; a malformed `auth` is an error naming the registry.
    pub fn parse(json: &str) -> Result<Self, AuthError> {
        // serde_json's message has the position only, never the input.
        let config: DockerConfig =
            serde_json::from_str(json).map_err(|e| AuthError::Malformed(e.to_string()))?;
        let mut auths = BTreeMap::new();
        for (key, entry) in config.auths {
            if let Some(creds) = entry_credentials(&key, entry)? {
                auths.insert(normalize_registry(&key), creds);
            }
        }
        Ok(Self { auths })
    }

    /// The credentials for `registry` (host[:port], as in [`super::ImageRef::registry`]).
    pub fn credentials_for(&self, registry: &str) -> Option<&Credentials> {
        self.auths.get(&normalize_registry(registry))
    }

    /// The registries this secret has credentials for (normalized).
    pub fn registries(&self) -> impl Iterator<Item = &str> {
        self.auths.keys().map(String::as_str)
    }
}

fn entry_credentials(key: &str, entry: AuthEntry) -> Result<Option<Credentials>, AuthError> {
    let bad = |reason: &str| AuthError::BadEntry {
        registry: key.to_string(),
        reason: reason.to_string(),
    };
    if let Some(auth) = entry.auth.filter(|a| !a.is_empty()) {
        let decoded = STANDARD
            .decode(auth.trim())
            .map_err(|_| bad("\"auth\" is not base64"))?;
        let decoded = String::from_utf8(decoded).map_err(|_| bad("\"auth\" is not UTF-8"))?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| bad("\"auth\" does not decode to user:password"))?;
        return Ok(Some(Credentials {
            username: username.to_string(),
            password: password.to_string(),
        }));
    }
    match entry.username.filter(|u| !u.is_empty()) {
        Some(username) => Ok(Some(Credentials {
            username,
            password: entry.password.unwrap_or_default(),
        })),
        None => Ok(None),
    }
}

/// The form pull secret keys and registry hosts are compared in: no scheme, no path,
/// lowercase host, and Docker Hub's aliases folded into `docker.io`.
fn normalize_registry(key: &str) -> String {
    let key = key.trim();
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key.split('/').next().unwrap_or(key).to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "docker.io" => "docker.io".to_string(),
        _ => host,
    }
}

/// One challenge of a `WWW-Authenticate` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// Token auth: fetch a token from `realm` for `service` and `scope`.
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
    /// HTTP Basic with the pull secret's credentials.
    Basic { realm: Option<String> },
    /// A scheme we do not speak (its name, lowercase).
    Other(String),
}

/// Parses a `WWW-Authenticate` header value into its challenges, e.g.
/// `Bearer realm="https://quay.io/v2/auth",service="quay.io",scope="repository:a/b:pull"`.
/// Values may be quoted (with `\` escapes, commas inside) or bare tokens.
pub fn parse_www_authenticate(header: &str) -> Vec<Challenge> {
    parse_raw_challenges(header)
        .into_iter()
        .map(|(scheme, mut params)| match scheme.as_str() {
            "bearer" => match params.remove("realm") {
                Some(realm) => Challenge::Bearer {
                    realm,
                    service: params.remove("service"),
                    scope: params.remove("scope"),
                },
                // A Bearer challenge without a realm gives nowhere to get a token.
                None => Challenge::Other(scheme),
            },
            "basic" => Challenge::Basic {
                realm: params.remove("realm"),
            },
            _ => Challenge::Other(scheme),
        })
        .collect()
}

/// `(lowercase scheme, lowercase param name → value)` for each challenge.
fn parse_raw_challenges(header: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let mut p = Parser {
        s: header.as_bytes(),
        i: 0,
    };
    let mut out: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    loop {
        p.skip(|c| c == b',' || c.is_ascii_whitespace());
        if p.peek().is_none() {
            break;
        }
        if let Some((_, params)) = out.last_mut().filter(|_| p.at_param()) {
            // `name = value` continues the current challenge.
            let name = p.token().unwrap_or_default();
            p.skip(is_space);
            p.i += 1;
            p.skip(is_space);
            params.insert(name.to_ascii_lowercase(), p.value());
        } else if let Some(scheme) = p.token() {
            out.push((scheme.to_ascii_lowercase(), BTreeMap::new()));
            p.skip(is_space);
            // A token68 (`Negotiate abc==`) is not a parameter: skip it.
            if !p.at_param() {
                p.skip(|c| c != b',');
            }
        } else {
            // Not a token: skip to the next comma (at least one byte, so this ends).
            p.skip(|c| c != b',');
        }
    }
    out
}

fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Whether a `name=value` parameter starts here (`name==` is a token68's padding).
    fn at_param(&self) -> bool {
        let mut q = Parser {
            s: self.s,
            i: self.i,
        };
        if q.token().is_none() {
            return false;
        }
        q.skip(is_space);
        q.peek() == Some(b'=') && q.s.get(q.i + 1) != Some(&b'=')
    }

    fn skip(&mut self, f: impl Fn(u8) -> bool) {
        while self.peek().is_some_and(&f) {
            self.i += 1;
        }
    }

    /// An HTTP token (RFC 9110 tchar).
    fn token(&mut self) -> Option<String> {
        let start = self.i;
        self.skip(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c));
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    /// A quoted string (unescaped) or a bare value up to the next comma or space.
    fn value(&mut self) -> String {
        if self.peek() != Some(b'"') {
            let start = self.i;
            self.skip(|c| c != b',' && !c.is_ascii_whitespace());
            return String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        }
        self.i += 1;
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    if let Some(escaped) = self.peek() {
                        out.push(escaped);
                        self.i += 1;
                    }
                }
                _ => out.push(c),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        STANDARD.encode(s)
    }

    #[test]
    fn pull_secret_credentials_by_registry() {
        let json = serde_json::json!({"auths": {
            "quay.io": {"auth": b64("quser:qpass:with:colons"), "email": "a@b"},
            "https://registry.example.com:5000/v2/": {"auth": b64("e:p")},
            "index.docker.io": {"auth": b64("d:h")},
            "mirror.local": {"username": "m", "password": "pw"},
            "email-only.example.com": {"email": "x@y"},
            "empty.example.com": {"auth": ""},
        }})
        .to_string();
        let secret = PullSecret::parse(&json).unwrap();
        let creds = |r: &str| {
            secret
                .credentials_for(r)
                .map(|c| (c.username.clone(), c.password.clone()))
        };
        let pair = |u: &str, p: &str| Some((u.to_string(), p.to_string()));
        assert_eq!(creds("quay.io"), pair("quser", "qpass:with:colons"));
        assert_eq!(creds("QUAY.IO"), pair("quser", "qpass:with:colons"));
        assert_eq!(creds("registry.example.com:5000"), pair("e", "p"));
        // host:port must match exactly.
        assert_eq!(creds("registry.example.com"), None);
        assert_eq!(creds("registry-1.docker.io"), pair("d", "h"));
        assert_eq!(creds("docker.io"), pair("d", "h"));
        assert_eq!(creds("mirror.local"), pair("m", "pw"));
        assert_eq!(creds("email-only.example.com"), None);
        assert_eq!(creds("empty.example.com"), None);
        assert_eq!(creds("other.io"), None);
        assert_eq!(secret.registries().count(), 4);
    }

    #[test]
    fn bad_pull_secrets_never_echo_secrets() {
        let e =
            PullSecret::parse("{\"auths\": {\"quay.io\": {\"auth\": \"s3cr3t!!\"}}}").unwrap_err();
        assert!(matches!(&e, AuthError::BadEntry { registry, .. } if registry == "quay.io"));
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        let e = PullSecret::parse(&format!(
            "{{\"auths\": {{\"quay.io\": {{\"auth\": \"{}\"}}}}}}",
            b64("nocolon")
        ))
        .unwrap_err();
        assert!(e.to_string().contains("user:password"), "{e}");
        let e = PullSecret::parse("not json s3cr3t").unwrap_err();
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        assert!(matches!(e, AuthError::Malformed(_)));
        assert_eq!(PullSecret::parse("{}").unwrap(), PullSecret::default());
    }

    #[test]
    fn credentials_debug_is_redacted_and_basic_is_encoded() {
        let c = Credentials {
            username: "u".into(),
            password: "hunter2".into(),
        };
        assert!(!format!("{c:?}").contains("hunter2"));
        assert_eq!(c.basic_header(), format!("Basic {}", b64("u:hunter2")));
    }

    #[test]
    fn bearer_challenges() {
        let h = r#"Bearer realm="https://quay.io/v2/auth",service="quay.io",scope="repository:a/b:pull,push""#;
        assert_eq!(
            parse_www_authenticate(h),
            vec![Challenge::Bearer {
                realm: "https://quay.io/v2/auth".into(),
                service: Some("quay.io".into()),
                scope: Some("repository:a/b:pull,push".into()),
            }]
        );
        // Spaces after commas, bare values, mixed-case names, escapes.
        let h = r#"bearer Realm=https://r.example/token , service = "svc \"x\"""#;
        assert_eq!(
            parse_www_authenticate(h),
            vec![Challenge::Bearer {
                realm: "https://r.example/token".into(),
                service: Some("svc \"x\"".into()),
                scope: None,
            }]
        );
        assert_eq!(
            parse_www_authenticate(r#"Bearer service="x""#),
            vec![Challenge::Other("bearer".into())]
        );
    }

    #[test]
    fn basic_and_several_challenges() {
        assert_eq!(
            parse_www_authenticate(r#"Basic realm="Registry Realm""#),
            vec![Challenge::Basic {
                realm: Some("Registry Realm".into())
            }]
        );
        assert_eq!(
            parse_www_authenticate("Basic"),
            vec![Challenge::Basic { realm: None }]
        );
        assert_eq!(
            parse_www_authenticate(
                r#"Negotiate abc123==, Basic realm="r, with comma", Bearer realm="https://t""#
            ),
            vec![
                Challenge::Other("negotiate".into()),
                Challenge::Basic {
                    realm: Some("r, with comma".into())
                },
                Challenge::Bearer {
                    realm: "https://t".into(),
                    service: None,
                    scope: None
                },
            ]
        );
        assert_eq!(parse_www_authenticate(""), vec![]);
        assert_eq!(parse_www_authenticate(" , ,"), vec![]);
    }
}
