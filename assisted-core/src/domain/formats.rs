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
