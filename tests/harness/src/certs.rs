//! Certificates for one testbed: a throwaway CA, serving certificates for loopback and client
//! certificates, all ECDSA P-256 made with rcgen.

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// A certificate and its private key, PEM encoded.
#[derive(Debug, Clone)]
pub struct CertPair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// A certificate authority that signs serving and client certificates.
pub struct Ca {
    pub cert_pem: String,
    /// The CA's private key, for tests that sign certificates elsewhere (a lab installer).
    pub key_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(common_name: &str) -> Result<Ca> {
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(common_name, None);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().context("generating CA key")?;
        let cert = params.self_signed(&key).context("self-signing CA")?;
        Ok(Ca {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// A serving certificate for 127.0.0.1 and localhost.
    pub fn serving(&self, common_name: &str) -> Result<CertPair> {
        self.serving_for(common_name, &["127.0.0.1", "localhost"])
    }

    /// A serving certificate for `names` (IP addresses or DNS names).
    pub fn serving_for(&self, common_name: &str, names: &[&str]) -> Result<CertPair> {
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .context("serving certificate names")?;
        params.distinguished_name = dn(common_name, None);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate for user `user` in group `group` (the organisation).
    pub fn client(&self, user: &str, group: Option<&str>) -> Result<CertPair> {
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(user, group);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Result<CertPair> {
        let key = KeyPair::generate().context("generating key")?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .context("signing certificate")?;
        Ok(CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A key pair for signing service-account tokens: (public key PEM, private key PEM).
pub fn service_account_keys() -> Result<(String, String)> {
    let key = KeyPair::generate().context("generating service-account key")?;
    Ok((key.public_key_pem(), key.serialize_pem()))
}

fn dn(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(o) = organization {
        dn.push(DnType::OrganizationName, o);
    }
    dn
}
