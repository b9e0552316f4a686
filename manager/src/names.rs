//! One home for the names both providers and the core derive: the Kubernetes label-value rule,
//! the three ways a string is made into a label value (each named for the rule it follows, each
//! keeping its outputs: they are stored in clusters and matched on), and the FNV-1a hashes names
//! are derived with (stable across releases and platforms: a derived name must not change when
//! the binary is rebuilt).

use base64::Engine as _;

/// Kubernetes' longest label value.
pub const LABEL_VALUE_MAX: usize = 63;

/// Kubernetes' label-value rule: at most 63 characters, alphanumerics, `-`, `_`, `.`, starting
/// and ending with an alphanumeric (or empty).
pub fn is_label_value(value: &str) -> bool {
    value.len() <= LABEL_VALUE_MAX
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && value
            .chars()
            .next()
            .is_none_or(|c| c.is_ascii_alphanumeric())
        && value
            .chars()
            .last()
            .is_none_or(|c| c.is_ascii_alphanumeric())
}

/// 32-bit FNV-1a.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// 64-bit FNV-1a.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Cluster API's `format.MustFormatValue`: the value itself when it is a valid label value, else
/// `hash_<base64url(FNV-32a)>_z`, so other CAPI tooling computes the same value.
pub fn capi_label_value(value: &str) -> String {
    if is_label_value(value) {
        return value.to_string();
    }
    let hash = fnv1a32(value.as_bytes()).to_be_bytes();
    format!(
        "hash_{}_z",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hash)
    )
}

/// The value itself when it is a valid label value, else a readable prefix plus the FNV-1a hash
/// of the whole value: deterministic, at most 63 characters, distinct for distinct inputs in
/// practice, and also a DNS-1123 name (the bootstrap provider names InfraEnvs with it).
pub fn readable_label_value(value: &str) -> String {
    if is_label_value(value) {
        return value.to_string();
    }
    let hash = format!("{:08x}", fnv1a32(value.as_bytes()));
    let room = LABEL_VALUE_MAX - hash.len() - 1;
    let prefix: String = value
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(room)
        .collect();
    let prefix = prefix.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if prefix.is_empty() {
        format!("h-{hash}")
    } else {
        format!("{prefix}-{hash}")
    }
}

/// What upstream's inventory labels do: every character a label value does not take becomes `_`,
/// then the first 63 are kept, trimmed to alphanumerics at both ends (no hash: these describe
/// hardware, and `Dell Inc.` must read `Dell_Inc`).
pub fn sanitized_label_value(raw: &str) -> String {
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(LABEL_VALUE_MAX)
        .collect();
    cleaned
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_reference_vectors() {
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn capi_label_values_are_cluster_apis() {
        let rows = [
            ("test-multinode", "test-multinode"),
            ("", ""),
            ("a.b_c-d", "a.b_c-d"),
            (&"a".repeat(63), &"a".repeat(63)),
            // Go: fmt.Sprintf("hash_%s_z", base64.RawURLEncoding.EncodeToString(fnv32a(long)))
            (&"a".repeat(64), "hash_2W8PhQ_z"),
            // FNV-32a of "a" is e40c292c: base64url "5AwpLA".
            ("-a", "hash_"),
        ];
        for (input, want) in rows {
            let got = capi_label_value(input);
            if want == "hash_" {
                assert!(
                    got.starts_with("hash_") && got.ends_with("_z"),
                    "{input}: {got}"
                );
                assert!(is_label_value(&got), "{got}");
            } else {
                assert_eq!(got, want, "{input}");
            }
        }
        assert_eq!(
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0xe4, 0x0c, 0x29, 0x2c]),
            "5AwpLA"
        );
    }

    #[test]
    fn readable_label_values_are_deterministic_and_short() {
        let long = format!("{}.example", "a".repeat(300));
        let v = readable_label_value(&long);
        assert_eq!(v, readable_label_value(&long));
        assert!(v.len() <= 63 && is_label_value(&v), "{v}");
        assert_ne!(
            v,
            readable_label_value(&format!("{}.example2", "a".repeat(300)))
        );
        assert_eq!(readable_label_value(&"b".repeat(63)), "b".repeat(63));
        assert_eq!(readable_label_value(&"b".repeat(64)).len(), 63);
        assert!(readable_label_value("---").starts_with("h-"));
        assert!(!is_label_value("-a"));
        assert!(is_label_value(""));
    }

    #[test]
    fn sanitized_label_values_read_like_the_hardware() {
        assert_eq!(sanitized_label_value("Dell Inc."), "Dell_Inc");
        assert_eq!(sanitized_label_value("x86_64"), "x86_64");
        assert_eq!(sanitized_label_value(&"a".repeat(80)).len(), 63);
        assert_eq!(sanitized_label_value("(none)"), "none");
    }
}
