//! Agent tokens: ES256 JWTs scoped to one infra-env or one cluster, as assisted-service's
//! `local` auth issues them. Signed and verified with ring directly, so no JWT crate is needed.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, PostParams};
use ring::rand::SystemRandom;
use ring::signature::{
    self, ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
};
use serde::{Deserialize, Serialize};

/// Secret keys, as upstream's `EC_PRIVATE_KEY_PEM` / `EC_PUBLIC_KEY_PEM`.
pub const PRIVATE_KEY_FIELD: &str = "ec-private-key.pem";
pub const PUBLIC_KEY_FIELD: &str = "ec-public-key.pem";

/// DER prefix of a P-256 SubjectPublicKeyInfo; the 65-byte uncompressed point follows it.
const SPKI_P256_PREFIX: &[u8] = &[
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The token subject: exactly one of the two ids is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra_env_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
}

impl Claims {
    pub fn infra_env(id: impl Into<String>) -> Claims {
        Claims {
            infra_env_id: Some(id.into()),
            cluster_id: None,
        }
    }
    pub fn cluster(id: impl Into<String>) -> Claims {
        Claims {
            infra_env_id: None,
            cluster_id: Some(id.into()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    #[error("unsupported token algorithm {0:?}")]
    Algorithm(String),
    #[error("invalid token signature")]
    Signature,
    #[error("token must name exactly one of infra_env_id or cluster_id")]
    Subject,
    #[error("invalid key: {0}")]
    Key(String),
}

#[derive(Serialize, Deserialize)]
struct Header {
    alg: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    typ: Option<String>,
}

/// An ES256 (P-256) key pair.
pub struct Keys {
    pair: EcdsaKeyPair,
    pkcs8: Vec<u8>,
    rng: SystemRandom,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the private key.
        f.debug_struct("Keys").finish_non_exhaustive()
    }
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn pem_decode(label: &str, pem: &str) -> Result<Vec<u8>, AuthError> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem
        .find(&begin)
        .ok_or_else(|| AuthError::Key(format!("no {label} PEM block")))?
        + begin.len();
    let stop = pem[start..]
        .find(&end)
        .ok_or_else(|| AuthError::Key(format!("unterminated {label} PEM block")))?
        + start;
    let body: String = pem[start..stop]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    STANDARD
        .decode(body)
        .map_err(|e| AuthError::Key(format!("bad base64 in {label} PEM: {e}")))
}

fn b64_json<T: Serialize>(v: &T) -> String {
    // These are plain structs of strings: serializing cannot fail.
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap_or_default())
}

fn b64_decode(part: &str) -> Result<Vec<u8>, AuthError> {
    // Some encoders pad base64url; the JWS form has no padding, so accept both.
    URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| AuthError::Malformed("bad base64url"))
}

impl Keys {
    /// A fresh random key pair.
    pub fn generate() -> Result<Keys, AuthError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| AuthError::Key("key generation failed".into()))?;
        Keys::from_pkcs8_der(doc.as_ref())
    }

    fn from_pkcs8_der(der: &[u8]) -> Result<Keys, AuthError> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|e| AuthError::Key(format!("not a P-256 PKCS#8 key: {e}")))?;
        Ok(Keys {
            pair,
            pkcs8: der.to_vec(),
            rng,
        })
    }

    /// Loads a `-----BEGIN PRIVATE KEY-----` (PKCS#8) P-256 key.
    pub fn from_pkcs8_pem(pem: &str) -> Result<Keys, AuthError> {
        Keys::from_pkcs8_der(&pem_decode("PRIVATE KEY", pem)?)
    }

    /// Loads the private key and checks the public key PEM belongs to it.
    pub fn from_pems(private_pem: &str, public_pem: &str) -> Result<Keys, AuthError> {
        let keys = Keys::from_pkcs8_pem(private_pem)?;
        if public_key_from_pem(public_pem)? != keys.public_key_bytes() {
            return Err(AuthError::Key(
                "the public key does not match the private key".into(),
            ));
        }
        Ok(keys)
    }

    pub fn private_key_pem(&self) -> String {
        pem_encode("PRIVATE KEY", &self.pkcs8)
    }

    /// `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo).
    pub fn public_key_pem(&self) -> String {
        let mut der = SPKI_P256_PREFIX.to_vec();
        der.extend_from_slice(self.public_key_bytes());
        pem_encode("PUBLIC KEY", &der)
    }

    fn public_key_bytes(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// `base64url(header).base64url(claims).base64url(r||s)`.
    pub fn sign(&self, claims: &Claims) -> String {
        let header = Header {
            alg: "ES256".into(),
            typ: Some("JWT".into()),
        };
        let msg = format!("{}.{}", b64_json(&header), b64_json(claims));
        // Signing with a valid key only fails if the system RNG fails; an empty signature
        // then simply never verifies.
        let sig = self
            .pair
            .sign(&self.rng, msg.as_bytes())
            .map(|s| URL_SAFE_NO_PAD.encode(s.as_ref()))
            .unwrap_or_default();
        format!("{msg}.{sig}")
    }

    pub fn verify(&self, token: &str) -> Result<Claims, AuthError> {
        verify_with(self.public_key_bytes(), token)
    }
}

fn public_key_from_pem(pem: &str) -> Result<Vec<u8>, AuthError> {
    let der = pem_decode("PUBLIC KEY", pem)?;
    match der.strip_prefix(SPKI_P256_PREFIX) {
        Some(point) if point.len() == 65 => Ok(point.to_vec()),
        _ => Err(AuthError::Key("not a P-256 public key".into())),
    }
}

fn verify_with(public_key: &[u8], token: &str) -> Result<Claims, AuthError> {
    let mut parts = token.split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::Malformed("expected three dot-separated parts"));
    };
    let header: Header =
        serde_json::from_slice(&b64_decode(h)?).map_err(|_| AuthError::Malformed("bad header"))?;
    // Checking alg before the signature closes the alg=none / HS256 confusion attacks.
    if header.alg != "ES256" {
        return Err(AuthError::Algorithm(header.alg));
    }
    let sig = b64_decode(s)?;
    let signed_len = h.len() + 1 + c.len();
    signature::UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public_key)
        .verify(&token.as_bytes()[..signed_len], &sig)
        .map_err(|_| AuthError::Signature)?;
    let claims: Claims =
        serde_json::from_slice(&b64_decode(c)?).map_err(|_| AuthError::Malformed("bad claims"))?;
    match (&claims.infra_env_id, &claims.cluster_id) {
        (Some(id), None) | (None, Some(id)) if !id.is_empty() => Ok(claims),
        _ => Err(AuthError::Subject),
    }
}

/// Reads the signing keys from the Secret, creating it on first start. Two replicas may race
/// to create it: the loser reads the winner's keys.
pub async fn load_or_create_keys(
    client: kube::Client,
    namespace: &str,
    secret_name: &str,
) -> anyhow::Result<Keys> {
    let api: kube::Api<Secret> = kube::Api::namespaced(client, namespace);
    if let Some(s) = api.get_opt(secret_name).await? {
        return keys_from_secret(&s);
    }
    let keys = Keys::generate()?;
    let data = BTreeMap::from([
        (
            PRIVATE_KEY_FIELD.to_string(),
            ByteString(keys.private_key_pem().into_bytes()),
        ),
        (
            PUBLIC_KEY_FIELD.to_string(),
            ByteString(keys.public_key_pem().into_bytes()),
        ),
    ]);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(secret_name.to_string()),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        },
        data: Some(data),
        type_: Some("Opaque".into()),
        ..Default::default()
    };
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(keys),
        Err(kube::Error::Api(status)) if status.is_already_exists() => {
            keys_from_secret(&api.get(secret_name).await?)
        }
        Err(e) => Err(e.into()),
    }
}

fn keys_from_secret(s: &Secret) -> anyhow::Result<Keys> {
    let field = |k: &str| -> anyhow::Result<String> {
        let v = s
            .data
            .as_ref()
            .and_then(|d| d.get(k))
            .ok_or_else(|| anyhow::anyhow!("secret has no {k}"))?;
        Ok(String::from_utf8(v.0.clone())?)
    };
    Ok(Keys::from_pems(
        &field(PRIVATE_KEY_FIELD)?,
        &field(PUBLIC_KEY_FIELD)?,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IE: &str = "11111111-1111-1111-1111-111111111111";

    #[test]
    fn sign_then_verify_round_trips() {
        let k = Keys::generate().unwrap();
        let t = k.sign(&Claims::infra_env(IE));
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(k.verify(&t).unwrap(), Claims::infra_env(IE));
        let t = k.sign(&Claims::cluster("c"));
        assert_eq!(k.verify(&t).unwrap().cluster_id.as_deref(), Some("c"));
    }

    #[test]
    fn pem_round_trip_keeps_the_key() {
        let k = Keys::generate().unwrap();
        let k2 = Keys::from_pems(&k.private_key_pem(), &k.public_key_pem()).unwrap();
        let t = k.sign(&Claims::infra_env(IE));
        assert!(k2.verify(&t).is_ok());
        assert!(
            k.private_key_pem()
                .starts_with("-----BEGIN PRIVATE KEY-----\n")
        );
        let other = Keys::generate().unwrap();
        assert!(Keys::from_pems(&k.private_key_pem(), &other.public_key_pem()).is_err());
        assert!(Keys::from_pkcs8_pem("garbage").is_err());
    }

    #[test]
    fn tampered_claims_fail() {
        let k = Keys::generate().unwrap();
        let t = k.sign(&Claims::infra_env(IE));
        let parts: Vec<&str> = t.split('.').collect();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            b64_json(&Claims::infra_env("other")),
            parts[2]
        );
        assert_eq!(k.verify(&forged), Err(AuthError::Signature));
        let mut sig = b64_decode(parts[2]).unwrap();
        sig[0] ^= 1;
        let bad = format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode(sig));
        assert_eq!(k.verify(&bad), Err(AuthError::Signature));
    }

    #[test]
    fn another_key_fails() {
        let t = Keys::generate().unwrap().sign(&Claims::infra_env(IE));
        assert_eq!(
            Keys::generate().unwrap().verify(&t),
            Err(AuthError::Signature)
        );
    }

    #[test]
    fn other_algorithms_and_garbage_fail() {
        let k = Keys::generate().unwrap();
        let t = k.sign(&Claims::infra_env(IE));
        let parts: Vec<&str> = t.split('.').collect();
        for alg in ["none", "HS256", "RS256"] {
            let h = b64_json(&Header {
                alg: alg.into(),
                typ: None,
            });
            let forged = format!("{h}.{}.{}", parts[1], parts[2]);
            assert_eq!(k.verify(&forged), Err(AuthError::Algorithm(alg.into())));
        }
        for bad in ["", "a", "a.b", "a.b.c.d", "!!.??.**", &format!("{t}.x")] {
            assert!(
                matches!(k.verify(bad), Err(AuthError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn claims_need_exactly_one_subject() {
        let k = Keys::generate().unwrap();
        let both = Claims {
            infra_env_id: Some(IE.into()),
            cluster_id: Some(IE.into()),
        };
        assert_eq!(k.verify(&k.sign(&both)), Err(AuthError::Subject));
        assert_eq!(
            k.verify(&k.sign(&Claims::default())),
            Err(AuthError::Subject)
        );
    }
}
