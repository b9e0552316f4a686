//! Formats the installer checks, checked where the user writes them (admission, the ACI): a
//! cluster name is a DNS label, a base domain a DNS subdomain, an SSH key an OpenSSH
//! authorized key. Each check gives `None` or what is wrong, without the field name (the
//! caller knows where the value came from).

use base64::Engine;

/// RFC 1123 label: 1–63 of `a-z`, `0-9`, `-`, starting and ending alphanumeric.
pub fn dns_label_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".into());
    }
    if s.len() > 63 {
        return Some(format!("{s:?} is longer than 63 characters"));
    }
    let ok_chars = s
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let ok_ends = !s.starts_with('-') && !s.ends_with('-');
    (!ok_chars || !ok_ends).then(|| {
        format!(
            "{s:?} is not a DNS label: lowercase letters, digits and '-', starting and ending \
             with a letter or digit"
        )
    })
}

/// RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub fn dns_subdomain_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".into());
    }
    if s.len() > 253 {
        return Some(format!("{s:?} is longer than 253 characters"));
    }
    s.split('.')
        .any(|label| dns_label_problem(label).is_some())
        .then(|| {
            format!(
                "{s:?} is not a DNS subdomain: dot-separated labels of lowercase letters, digits \
                 and '-', each starting and ending with a letter or digit"
            )
        })
}

/// Key types OpenSSH and the installer accept in authorized keys.
const SSH_KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "ssh-dss",
];

/// One or more OpenSSH public keys, one per line (`<type> <base64 blob> [comment]`, blank
/// lines and `#` comments allowed): the blob must decode and name the same key type.
pub fn ssh_keys_problem(s: &str) -> Option<String> {
    let lines: Vec<&str> = s
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if lines.is_empty() {
        return Some("holds no SSH public key".into());
    }
    lines.iter().enumerate().find_map(|(i, line)| {
        ssh_key_problem(line).map(|p| {
            if lines.len() == 1 {
                p
            } else {
                format!("key {}: {p}", i + 1)
            }
        })
    })
}

fn ssh_key_problem(line: &str) -> Option<String> {
    let mut parts = line.split_whitespace();
    let kind = parts.next().unwrap_or_default();
    if !SSH_KEY_TYPES.contains(&kind) {
        let shown: String = kind.chars().take(40).collect();
        return Some(format!(
            "{shown:?} is not an SSH public key type (expected e.g. ssh-ed25519 or ssh-rsa)"
        ));
    }
    let Some(blob) = parts.next() else {
        return Some(format!("the {kind} key has no key data"));
    };
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(blob) else {
        return Some(format!("the {kind} key data is not base64"));
    };
    // The blob starts with the key type as an SSH string (u32 length, bytes).
    let named = bytes
        .get(..4)
        .map(|l| u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize)
        .and_then(|n| bytes.get(4..4 + n));
    match named {
        Some(t) if t == kind.as_bytes() && bytes.len() > 4 + t.len() => None,
        _ => Some(format!("the {kind} key data is not a {kind} public key")),
    }
}

/// A proxy URL refused by [`check_proxy`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    #[error(
        "proxy.{field} {value:?} is not a valid proxy URL: use {}://<host>[:<port>]",
        .schemes.join(":// or ")
    )]
    NotAProxyUrl {
        field: &'static str,
        value: String,
        schemes: &'static [&'static str],
    },
}

/// Upstream's proxy rules: `httpProxy` an `http://` URL, `httpsProxy` an `http://` or
/// `https://` URL, each with a host and no spaces. A bad one is refused, not baked into images.
pub fn check_proxy(http: Option<&str>, https: Option<&str>) -> Result<(), ProxyError> {
    fn url(
        field: &'static str,
        value: &str,
        schemes: &'static [&'static str],
    ) -> Result<(), ProxyError> {
        if value.is_empty() {
            return Ok(());
        }
        let refused = || ProxyError::NotAProxyUrl {
            field,
            value: value.to_string(),
            schemes,
        };
        let uri: http::Uri = value.parse().map_err(|_| refused())?;
        let scheme_ok = uri.scheme_str().is_some_and(|s| schemes.contains(&s));
        let host_ok = uri.host().is_some_and(|h| !h.is_empty());
        if scheme_ok && host_ok && !value.contains(char::is_whitespace) {
            Ok(())
        } else {
            Err(refused())
        }
    }
    url("httpProxy", http.unwrap_or_default(), &["http"])?;
    url("httpsProxy", https.unwrap_or_default(), &["http", "https"])
}

/// install-config fields the core writes itself: an override of them would install another
/// cluster than the objects describe (a different name, domain or pull secret), and a platform
/// other than the ones the core installs is not one it can set up.
const OWNED_OVERRIDES: &[(&str, &str)] = &[
    ("pullSecret", "set the ClusterDeployment's pullSecretRef"),
    ("baseDomain", "set the ClusterDeployment's baseDomain"),
    ("metadata", "set the ClusterDeployment's clusterName"),
];
const OVERRIDABLE_PLATFORMS: &[&str] = &["baremetal", "none", "external", "vsphere", "nutanix"];

/// Refuses install-config overrides of fields the core owns, naming the field and where to
/// set it instead.
pub fn owned_override_problem(overrides: &serde_json::Value) -> Option<String> {
    for (field, instead) in OWNED_OVERRIDES {
        if overrides.get(field).is_some() {
            return Some(format!("{field} cannot be overridden: {instead} instead"));
        }
    }
    let platforms = overrides.get("platform").and_then(|p| p.as_object())?;
    platforms
        .keys()
        .find(|k| !OVERRIDABLE_PLATFORMS.contains(&k.as_str()))
        .map(|k| {
            format!(
                "platform.{k} cannot be overridden: the assisted installer installs {}",
                OVERRIDABLE_PLATFORMS.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED25519: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOUoReQnS9x00eaicYi7jg0QQ9/1km0QlAyEpAiv3TR9 lab";

    #[test]
    fn labels_and_subdomains() {
        assert_eq!(dns_label_problem("sno-1"), None);
        for bad in ["", "Bad_Name!", "-x", "x-", &"a".repeat(64)] {
            assert!(dns_label_problem(bad).is_some(), "{bad:?}");
        }
        assert_eq!(dns_subdomain_problem("lab.example.com"), None);
        assert_eq!(dns_subdomain_problem("e.com"), None);
        for bad in ["bad_domain!.example", "a..b", ".a", "a.", "A.example.com"] {
            assert!(dns_subdomain_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn owned_overrides_are_refused() {
        use serde_json::json;
        assert_eq!(
            owned_override_problem(&json!({"fips": true, "platform": {"baremetal": {}}})),
            None
        );
        let e = owned_override_problem(&json!({"pullSecret": "{}"})).unwrap();
        assert!(e.starts_with("pullSecret cannot be overridden"), "{e}");
        let e = owned_override_problem(&json!({"metadata": {"name": "x"}})).unwrap();
        assert!(e.contains("clusterName"), "{e}");
        let e = owned_override_problem(&json!({"platform": {"aws": {}}})).unwrap();
        assert!(e.starts_with("platform.aws cannot be overridden"), "{e}");
    }

    #[test]
    fn proxies_follow_upstream_rules() {
        // (http, https, accepted)
        let rows = [
            (None, None, true),
            (
                Some("http://proxy.example.com:3128"),
                Some("https://proxy.example.com"),
                true,
            ),
            (
                Some("http://user:pw@10.0.0.1:8080"),
                Some("http://10.0.0.1:8080"),
                true,
            ),
            (Some(""), None, true),
            (Some("ht!tp://::bad url"), None, false),
            (Some("ftp://x"), None, false),
            (Some("https://proxy.example.com"), None, false),
            (None, Some("socks5://proxy"), false),
            (Some("proxy.example.com:3128"), None, false),
        ];
        for (http, https, ok) in rows {
            assert_eq!(check_proxy(http, https).is_ok(), ok, "{http:?} {https:?}");
        }
        let e = check_proxy(Some("ftp://x"), None).unwrap_err().to_string();
        assert!(
            e.contains("proxy.httpProxy") && e.contains("http://"),
            "{e}"
        );
    }

    #[test]
    fn ssh_keys() {
        assert_eq!(ssh_keys_problem(ED25519), None);
        assert_eq!(
            ssh_keys_problem(&format!("# ops\n{ED25519}\n\n{ED25519}\n")),
            None
        );
        assert!(ssh_keys_problem("").unwrap().contains("no SSH public key"));
        assert!(
            ssh_keys_problem("garbage")
                .unwrap()
                .contains("not an SSH public key type")
        );
        assert!(
            ssh_keys_problem("ssh-ed25519")
                .unwrap()
                .contains("no key data")
        );
        assert!(
            ssh_keys_problem("ssh-ed25519 !!!")
                .unwrap()
                .contains("not base64")
        );
        // Valid base64 whose blob names another type.
        let rsa_named =
            "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOUoReQnS9x00eaicYi7jg0QQ9/1km0QlAyEpAiv3TR9";
        assert!(
            ssh_keys_problem(rsa_named)
                .unwrap()
                .contains("not a ssh-rsa public key")
        );
        let two = format!("{ED25519}\nssh-ed25519 AAAA");
        assert!(ssh_keys_problem(&two).unwrap().starts_with("key 2: "));
    }
}
