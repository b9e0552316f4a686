//! The lab backend: no installer binary. It fabricates artifacts that are structurally what
//! `openshift-install` writes (real PKI, Ignition 3.2, metadata, admin kubeconfig), for test
//! beds where hosts never boot RHCOS but the rest of the flow must run unchanged.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256,
    SerialNumber,
};
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Value, json};

use super::backend::{GenerateFuture, GenerateRequest, InstallArtifacts, InstallBackend};
use super::error::InstallError;
use super::ignition::{IGNITION_VERSION, file_entry, pointer_ignition};

/// A CA and the admin client certificate it signed, all PEM.
#[derive(Clone)]
pub struct LabPki {
    pub ca_cert_pem: String,
    pub ca_key_pem: String,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
}

impl std::fmt::Debug for LabPki {
    // Keys stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabPki")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("admin_cert_pem", &self.admin_cert_pem)
            .finish_non_exhaustive()
    }
}

fn pki_err(what: &str) -> impl Fn(rcgen::Error) -> InstallError + '_ {
    move |e| InstallError::Pki(format!("{what}: {e}"))
}

fn random_bytes<const N: usize>(rng: &dyn SecureRandom) -> Result<[u8; N], InstallError> {
    let mut b = [0u8; N];
    rng.fill(&mut b).map_err(|_| InstallError::Random)?;
    Ok(b)
}

/// Validity window: from yesterday (tolerates clock skew) for ten years.
fn set_validity(p: &mut CertificateParams, now: jiff::Timestamp) -> Result<(), InstallError> {
    let today = now.to_zoned(jiff::tz::TimeZone::UTC).date();
    let bad = |e: jiff::Error| InstallError::Pki(format!("validity dates: {e}"));
    let from = today.yesterday().map_err(bad)?;
    let to = today
        .checked_add(jiff::Span::new().years(10))
        .map_err(bad)?;
    let ymd = |d: jiff::civil::Date| {
        let month = u8::try_from(d.month()).unwrap_or(1);
        let day = u8::try_from(d.day()).unwrap_or(1);
        rcgen::date_time_ymd(i32::from(d.year()), month, day)
    };
    p.not_before = ymd(from);
    p.not_after = ymd(to);
    Ok(())
}

/// Generates an ECDSA P-256 CA and an admin client certificate (`system:admin` in
/// `system:masters`) signed by it.
pub fn generate_lab_pki(cluster_name: &str, now: jiff::Timestamp) -> Result<LabPki, InstallError> {
    let rng = SystemRandom::new();

    let mut ca_params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "assisted-core");
    dn.push(DnType::CommonName, format!("{cluster_name} lab root CA"));
    ca_params.distinguished_name = dn;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut ca_params, now)?;
    ca_params.serial_number = Some(SerialNumber::from_slice(&random_bytes::<16>(&rng)?));
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(pki_err("CA key"))?;
    let ca_key_pem = ca_key.serialize_pem();
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).map_err(pki_err("CA certificate"))?;

    let (admin_cert_pem, admin_key_pem) = admin_cert(&ca, now, &rng)?;
    Ok(LabPki {
        ca_cert_pem: ca.pem(),
        ca_key_pem,
        admin_cert_pem,
        admin_key_pem,
    })
}

/// An admin client certificate (`system:admin` in `system:masters`) signed by `issuer`:
/// (certificate PEM, key PEM).
fn admin_cert(
    issuer: &Issuer<'_, KeyPair>,
    now: jiff::Timestamp,
    rng: &dyn SecureRandom,
) -> Result<(String, String), InstallError> {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "system:masters");
    dn.push(DnType::CommonName, "system:admin");
    params.distinguished_name = dn;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, now)?;
    params.serial_number = Some(SerialNumber::from_slice(&random_bytes::<16>(rng)?));
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(pki_err("admin key"))?;
    let cert = params
        .signed_by(&key, issuer)
        .map_err(pki_err("admin certificate"))?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A CA of an existing API server's client certificates (PEM): the lab signs the admin
/// certificate with it so the published kubeconfig really authenticates there.
#[derive(Clone)]
pub struct LabClientCa {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for LabClientCa {
    // Keys stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabClientCa")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

/// Letters and digits without look-alikes (0/O/o, 1/l/I).
const PASSWORD_ALPHABET: &[u8] = b"23456789abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ";

/// A kubeadmin password in the installer's style: four dash-separated groups of five (23
/// characters).
pub fn generate_kubeadmin_password() -> Result<String, InstallError> {
    password_from(&SystemRandom::new())
}

fn password_from(rng: &dyn SecureRandom) -> Result<String, InstallError> {
    let n = PASSWORD_ALPHABET.len();
    // Reject bytes past the last full multiple of the alphabet so every character is
    // equally likely.
    let limit = 256 - 256 % n;
    let mut chars = Vec::with_capacity(20);
    while chars.len() < 20 {
        for b in random_bytes::<32>(rng)? {
            if usize::from(b) < limit && chars.len() < 20 {
                chars.push(PASSWORD_ALPHABET[usize::from(b) % n]);
            }
        }
    }
    let groups: Vec<String> = chars
        .chunks(5)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    Ok(groups.join("-"))
}

/// A random (version 4) UUID in the canonical 8-4-4-4-12 form.
pub fn random_uuid_v4() -> Result<String, InstallError> {
    uuid_from(&SystemRandom::new())
}

fn uuid_from(rng: &dyn SecureRandom) -> Result<String, InstallError> {
    let mut b = random_bytes::<16>(rng)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// `<name, cut to 27 chars>-<5 random lowercase letters/digits>`, like the installer's infraID.
fn infra_id(cluster_name: &str, rng: &dyn SecureRandom) -> Result<String, InstallError> {
    const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let base: String = cluster_name.chars().take(27).collect();
    let base = base.trim_end_matches(['-', '.']);
    let suffix: String = random_bytes::<5>(rng)?
        .iter()
        .map(|b| char::from(ALPHA[usize::from(*b) % ALPHA.len()]))
        .collect();
    Ok(format!("{base}-{suffix}"))
}

/// Admin kubeconfig (YAML) for `server`, trusting `server_ca_pem`.
pub(crate) fn admin_kubeconfig(
    cluster_name: &str,
    server: &str,
    server_ca_pem: &str,
    pki: &LabPki,
) -> Result<String, InstallError> {
    let b64 = |s: &str| STANDARD.encode(s.as_bytes());
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": cluster_name,
            "cluster": {
                "server": server,
                "certificate-authority-data": b64(server_ca_pem),
            },
        }],
        "users": [{
            "name": "admin",
            "user": {
                "client-certificate-data": b64(&pki.admin_cert_pem),
                "client-key-data": b64(&pki.admin_key_pem),
            },
        }],
        "contexts": [{
            "name": "admin",
            "context": { "cluster": cluster_name, "user": "admin" },
        }],
        "current-context": "admin",
        "preferences": {},
    });
    serde_yaml::to_string(&doc).map_err(|source| InstallError::Yaml {
        context: "rendering the admin kubeconfig".into(),
        source,
    })
}

/// A full (non-pointer) bootstrap config: a marker file, an MOTD and a oneshot unit.
fn bootstrap_ignition(req: &GenerateRequest, cluster_id: &str, ca_pem: &str) -> Value {
    let info = json!({
        "clusterName": req.cluster_name,
        "baseDomain": req.base_domain,
        "clusterID": cluster_id,
        "releaseImage": req.release_image,
        "apiURL": req.api_url,
    });
    let motd = format!(
        "This is the lab bootstrap node of {}.{} (assisted-core lab backend).\n",
        req.cluster_name, req.base_domain
    );
    let unit = "[Unit]\nDescription=assisted-core lab bootstrap marker\n\
                ConditionPathExists=/opt/openshift/lab-cluster.json\n\n\
                [Service]\nType=oneshot\nExecStart=/usr/bin/cat /opt/openshift/lab-cluster.json\n\n\
                [Install]\nWantedBy=multi-user.target\n";
    json!({
        "ignition": { "version": IGNITION_VERSION },
        "storage": { "files": [
            file_entry("/opt/openshift/lab-cluster.json", info.to_string().as_bytes(), 0o644),
            file_entry("/etc/motd", motd.as_bytes(), 0o644),
            file_entry("/opt/openshift/tls/lab-root-ca.crt", ca_pem.as_bytes(), 0o644),
        ]},
        "systemd": { "units": [
            { "name": "lab-bootstrap.service", "enabled": true, "contents": unit },
        ]},
    })
}

/// Backend for test beds: see the module docs.
#[derive(Debug, Clone, Default)]
pub struct LabBackend {
    /// CA of the API server the admin kubeconfig points at (e.g. the test bed's
    /// kube-apiserver); `None` trusts the generated lab CA.
    pub server_ca_pem: Option<String>,
    /// Signs the admin client certificate instead of the generated lab CA.
    pub client_ca: Option<LabClientCa>,
}

impl LabBackend {
    /// Builds the artifacts without touching the disk.
    pub fn build(&self, req: &GenerateRequest) -> Result<(InstallArtifacts, LabPki), InstallError> {
        let rng = SystemRandom::new();
        let now = jiff::Timestamp::now();
        let mut pki = generate_lab_pki(&req.cluster_name, now)?;
        if let Some(ca) = &self.client_ca {
            let key = KeyPair::from_pem(&ca.key_pem).map_err(pki_err("client CA key"))?;
            let issuer =
                Issuer::from_ca_cert_pem(&ca.cert_pem, key).map_err(pki_err("client CA"))?;
            (pki.admin_cert_pem, pki.admin_key_pem) = admin_cert(&issuer, now, &rng)?;
        }
        let server_ca = self
            .server_ca_pem
            .as_deref()
            .filter(|c| !c.trim().is_empty())
            .unwrap_or(&pki.ca_cert_pem);
        let kubeconfig = admin_kubeconfig(&req.cluster_name, &req.api_url, server_ca, &pki)?;
        let cluster_id = uuid_from(&rng)?;
        let infra_id = infra_id(&req.cluster_name, &rng)?;
        let metadata = json!({
            "clusterName": req.cluster_name,
            "clusterID": cluster_id,
            "infraID": infra_id,
        });
        let pointer = |pool: &str| {
            let src = format!(
                "https://api-int.{}.{}:22623/config/{pool}",
                req.cluster_name, req.base_domain
            );
            pointer_ignition(&src, Some(&pki.ca_cert_pem), &[])
                .to_string()
                .into_bytes()
        };
        let artifacts = InstallArtifacts {
            bootstrap_ign: bootstrap_ignition(req, &cluster_id, &pki.ca_cert_pem)
                .to_string()
                .into_bytes(),
            master_ign: pointer("master"),
            worker_ign: pointer("worker"),
            metadata_json: metadata.to_string().into_bytes(),
            kubeconfig_noingress: kubeconfig.into_bytes(),
            kubeadmin_password: password_from(&rng)?.into_bytes(),
            install_config_yaml: req.install_config_yaml.clone().into_bytes(),
            openshift_cluster_id: cluster_id,
            infra_id,
            warnings: Vec::new(),
            release: None,
        };
        Ok((artifacts, pki))
    }

    async fn generate_impl(
        &self,
        req: &GenerateRequest,
        dir: &Path,
    ) -> Result<InstallArtifacts, InstallError> {
        let (artifacts, pki) = self.build(req)?;
        // Same layout as the installer leaves behind, so operators can inspect either.
        tokio::fs::create_dir_all(dir.join("tls"))
            .await
            .map_err(|e| InstallError::io("creating the work directory", dir, e))?;
        let extra = [
            ("tls/lab-root-ca.crt", pki.ca_cert_pem.as_bytes()),
            ("tls/lab-root-ca.key", pki.ca_key_pem.as_bytes()),
        ];
        for (name, bytes) in artifacts.files().into_iter().chain(extra) {
            let path = dir.join(name);
            tokio::fs::write(&path, bytes)
                .await
                .map_err(|e| InstallError::io("writing a lab artifact", path, e))?;
        }
        Ok(artifacts)
    }
}

impl InstallBackend for LabBackend {
    fn generate<'a>(&'a self, req: &'a GenerateRequest, work_dir: &'a Path) -> GenerateFuture<'a> {
        Box::pin(self.generate_impl(req, work_dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::install::ignition::decode_data_url;
    use std::sync::Arc;

    /// Minimal DER reader: (tag, header+content slice, content slice, rest).
    fn tlv(d: &[u8]) -> (u8, &[u8], &[u8], &[u8]) {
        let tag = d[0];
        let (len, hdr) = if d[1] < 0x80 {
            (usize::from(d[1]), 2)
        } else {
            let n = usize::from(d[1] & 0x7f);
            let len = d[2..2 + n]
                .iter()
                .fold(0usize, |a, b| (a << 8) | usize::from(*b));
            (len, 2 + n)
        };
        (tag, &d[..hdr + len], &d[hdr..hdr + len], &d[hdr + len..])
    }

    /// (tbs raw, signature, issuer raw, subject raw, public key point).
    type CertParts = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);

    fn split_cert(der: &[u8]) -> CertParts {
        let (_, _, cert, _) = tlv(der);
        let (_, tbs_raw, tbs, rest) = tlv(cert);
        let (_, _, _alg, rest) = tlv(rest);
        let (tag, _, sig, _) = tlv(rest);
        assert_eq!(tag, 0x03);
        let (_, _, _ver, r) = tlv(tbs); // [0] version
        let (_, _, _serial, r) = tlv(r);
        let (_, _, _sigalg, r) = tlv(r);
        let (_, issuer, _, r) = tlv(r);
        let (_, _, _validity, r) = tlv(r);
        let (_, subject, _, r) = tlv(r);
        let (_, _, spki, _) = tlv(r);
        let (_, _, _alg, r) = tlv(spki);
        let (_, _, point, _) = tlv(r);
        (
            tbs_raw.to_vec(),
            sig[1..].to_vec(),
            issuer.to_vec(),
            subject.to_vec(),
            point[1..].to_vec(),
        )
    }

    fn pem_to_der(pem: &str) -> Vec<u8> {
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        STANDARD.decode(body).unwrap()
    }

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    fn req() -> GenerateRequest {
        GenerateRequest {
            manifests: vec![],
            cluster_id: "cid".into(),
            cluster_name: "lab".into(),
            base_domain: "example.com".into(),
            install_config_yaml: "apiVersion: v1\n".into(),
            sno: false,
            release_image: "quay.io/x/release:4.16".into(),
            api_url: "https://127.0.0.1:6443".into(),
            hosts: vec![],
            machine_networks: vec![],
            pull_secret: String::new(),
            bootstrap_node_ip: None,
            mirrors: None,
        }
    }

    #[test]
    fn admin_cert_chains_to_the_ca() {
        let pki = generate_lab_pki("lab", jiff::Timestamp::now()).unwrap();
        let ca = pem_to_der(&pki.ca_cert_pem);
        let admin = pem_to_der(&pki.admin_cert_pem);
        let (ca_tbs, ca_sig, ca_issuer, ca_subject, ca_point) = split_cert(&ca);
        let (tbs, sig, issuer, subject, _) = split_cert(&admin);
        assert_eq!(issuer, ca_subject);
        assert_eq!(ca_issuer, ca_subject, "CA is self-signed");
        let key = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_ASN1,
            &ca_point,
        );
        key.verify(&tbs, &sig).expect("admin cert signed by the CA");
        key.verify(&ca_tbs, &ca_sig).expect("CA self-signature");
        assert!(contains(&subject, b"system:admin"));
        assert!(contains(&subject, b"system:masters"));
        assert!(pki.admin_key_pem.contains("PRIVATE KEY"));
        assert!(format!("{pki:?}").contains("..") && !format!("{pki:?}").contains("PRIVATE"));
    }

    #[tokio::test]
    async fn lab_artifacts_are_structurally_valid() {
        let tmp = tempfile::tempdir().unwrap();
        let backend: Arc<dyn InstallBackend> = Arc::new(LabBackend::default());
        let a = backend.generate(&req(), tmp.path()).await.unwrap();

        // kubeconfig
        let kc: serde_yaml::Value = serde_yaml::from_slice(&a.kubeconfig_noingress).unwrap();
        assert_eq!(kc["kind"], "Config");
        assert_eq!(kc["current-context"], "admin");
        assert_eq!(kc["clusters"][0]["name"], "lab");
        assert_eq!(
            kc["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:6443"
        );
        assert_eq!(kc["contexts"][0]["context"]["cluster"], "lab");
        let field = |v: &serde_yaml::Value| {
            String::from_utf8(STANDARD.decode(v.as_str().unwrap()).unwrap()).unwrap()
        };
        let ca_pem = field(&kc["clusters"][0]["cluster"]["certificate-authority-data"]);
        let cert_pem = field(&kc["users"][0]["user"]["client-certificate-data"]);
        let key_pem = field(&kc["users"][0]["user"]["client-key-data"]);
        assert!(key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let (tbs, sig, issuer, _, _) = split_cert(&pem_to_der(&cert_pem));
        let (_, _, _, ca_subject, ca_point) = split_cert(&pem_to_der(&ca_pem));
        assert_eq!(issuer, ca_subject);
        ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_ASN1,
            &ca_point,
        )
        .verify(&tbs, &sig)
        .unwrap();

        // password, metadata
        let pw = String::from_utf8(a.kubeadmin_password.clone()).unwrap();
        assert_eq!(pw.len(), 23);
        let meta: Value = serde_json::from_slice(&a.metadata_json).unwrap();
        assert_eq!(meta["clusterName"], "lab");
        assert_eq!(meta["clusterID"], a.openshift_cluster_id.as_str());
        assert_eq!(meta["infraID"], a.infra_id.as_str());
        assert!(a.infra_id.starts_with("lab-") && a.infra_id.len() == 9);

        // ignition
        for (pool, bytes) in [("master", &a.master_ign), ("worker", &a.worker_ign)] {
            let ign: Value = serde_json::from_slice(bytes).unwrap();
            assert_eq!(ign["ignition"]["version"], "3.2.0");
            assert_eq!(
                ign["ignition"]["config"]["merge"][0]["source"],
                format!("https://api-int.lab.example.com:22623/config/{pool}")
            );
            let src = ign["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"]
                .as_str()
                .unwrap();
            assert_eq!(decode_data_url(src).unwrap(), ca_pem.as_bytes());
        }
        let boot: Value = serde_json::from_slice(&a.bootstrap_ign).unwrap();
        assert_eq!(boot["ignition"]["version"], "3.2.0");
        assert!(boot["ignition"].get("config").is_none());
        assert!(!boot["storage"]["files"].as_array().unwrap().is_empty());
        assert_eq!(boot["systemd"]["units"][0]["enabled"], true);
        let info = decode_data_url(
            boot["storage"]["files"][0]["contents"]["source"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        let info: Value = serde_json::from_slice(&info).unwrap();
        assert_eq!(info["clusterID"], a.openshift_cluster_id.as_str());

        // files on disk mirror the artifacts
        assert_eq!(
            std::fs::read(tmp.path().join("master.ign")).unwrap(),
            a.master_ign
        );
        assert!(tmp.path().join("tls/lab-root-ca.key").exists());
    }

    #[test]
    fn caller_server_ca_is_used_in_the_kubeconfig() {
        let server_ca = "-----BEGIN CERTIFICATE-----\nSERVER\n-----END CERTIFICATE-----\n";
        let backend = LabBackend {
            server_ca_pem: Some(server_ca.into()),
            client_ca: None,
        };
        let (a, pki) = backend.build(&req()).unwrap();
        let kc: serde_yaml::Value = serde_yaml::from_slice(&a.kubeconfig_noingress).unwrap();
        let data = kc["clusters"][0]["cluster"]["certificate-authority-data"]
            .as_str()
            .unwrap();
        assert_eq!(STANDARD.decode(data).unwrap(), server_ca.as_bytes());
        // Ignition still trusts the lab CA (it stands in for the MCS CA).
        let ign: Value = serde_json::from_slice(&a.worker_ign).unwrap();
        let src = ign["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"]
            .as_str()
            .unwrap();
        assert_eq!(decode_data_url(src).unwrap(), pki.ca_cert_pem.as_bytes());
    }

    #[test]
    fn a_given_client_ca_signs_the_admin_certificate() {
        let other = generate_lab_pki("workload", jiff::Timestamp::now()).unwrap();
        let backend = LabBackend {
            server_ca_pem: Some(other.ca_cert_pem.clone()),
            client_ca: Some(LabClientCa {
                cert_pem: other.ca_cert_pem.clone(),
                key_pem: other.ca_key_pem.clone(),
            }),
        };
        let (_, pki) = backend.build(&req()).unwrap();
        let ca = pem_to_der(&other.ca_cert_pem);
        let (_, _, _, ca_subject, ca_point) = split_cert(&ca);
        let admin = pem_to_der(&pki.admin_cert_pem);
        let (tbs, sig, issuer, _, _) = split_cert(&admin);
        assert_eq!(issuer, ca_subject);
        ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_ASN1,
            &ca_point,
        )
        .verify(&tbs, &sig)
        .expect("admin cert signed by the given CA");
        assert!(format!("{:?}", backend.client_ca).contains(".."));
    }

    #[test]
    fn password_and_uuid_shapes() {
        let pw = generate_kubeadmin_password().unwrap();
        let groups: Vec<&str> = pw.split('-').collect();
        assert_eq!(groups.len(), 4);
        assert!(
            groups
                .iter()
                .all(|g| g.len() == 5 && g.bytes().all(|b| PASSWORD_ALPHABET.contains(&b)))
        );
        assert_ne!(pw, generate_kubeadmin_password().unwrap());
        let id = random_uuid_v4().unwrap();
        assert_eq!(id.len(), 36);
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'));
        assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
        let long = infra_id(&"x".repeat(40), &SystemRandom::new()).unwrap();
        assert_eq!(long.len(), 27 + 6);
    }
}
