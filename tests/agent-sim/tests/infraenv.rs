//! InfraEnv on the real testbed: ImageCreated conditions for bad and good input, a new ISO URL
//! when a selected NMStateConfig appears, and the ISO served with HEAD and Range carrying the
//! static network configuration in its embedded ignition, and the PXE kernel, rootfs and
//! initrd (with the discovery ignition appended as `config.ign`) served from the same ISO.

use std::time::Duration;

use assisted_core::api::infraenv::InfraEnv;
use assisted_core::service::images::miniso::write_minimal_iso;
use assisted_core::service::images::test_iso::embedded_kernel_arguments;
use assisted_core::service::images::{cpio, extract_embedded_ignition, parse_discovery_ignition};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use testbed::Testbed;

mod common;
use common::{LabFlags, start_core, test_iso, wait_for};

const NS: &str = "images";

fn image_created(ie: &InfraEnv) -> Option<(String, String, String)> {
    let c = ie
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "ImageCreated")?;
    Some((
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    ))
}

/// Raw HTTP request to the image server (method, URL, optional Range) → status, headers, body.
async fn request(method: &str, url: &str, range: Option<&str>) -> (u16, http::HeaderMap, Vec<u8>) {
    use http_body_util::{BodyExt, Empty};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<bytes::Bytes>>();
    let mut req = http::Request::builder().method(method).uri(url);
    if let Some(r) = range {
        req = req.header("range", r);
    }
    let resp = client
        .request(req.body(Empty::new()).unwrap())
        .await
        .expect("request");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, headers, body)
}

#[tokio::test]
async fn infraenv_image_follows_its_inputs() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder()
        .our_crds()
        .start()
        .await
        .expect("testbed");
    let client = tb.client.clone();
    let dir = tempfile::tempdir().unwrap();
    let iso = test_iso(dir.path());
    let core = start_core(
        client.clone(),
        &dir.path().join("data"),
        &iso,
        0,
        0,
        &LabFlags::default(),
    )
    .await;

    // No pull secret yet: ImageCreated=False with the reason, no URL.
    tb.apply_yaml(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n---\n\
         apiVersion: agent-install.openshift.io/v1beta1\nkind: InfraEnv\n\
         metadata: {{name: pool, namespace: {NS}}}\n\
         spec:\n  pullSecretRef: {{name: pull-secret}}\n  osImageVersion: \"4.17\"\n"
    ))
    .await
    .unwrap();
    let ies: Api<InfraEnv> = Api::namespaced(client.clone(), NS);
    let (_, reason, msg) = wait_for("ImageCreated=False", Duration::from_secs(30), || async {
        image_created(&ies.get("pool").await.ok()?).filter(|c| c.0 == "False")
    })
    .await;
    assert_eq!(reason, "ImageCreationError");
    assert!(
        msg.starts_with("Failed to create image:") && msg.contains("pull-secret"),
        "{msg}"
    );
    assert!(
        ies.get("pool")
            .await
            .unwrap()
            .status
            .unwrap()
            .iso_download_url
            .is_none()
    );

    // The pull secret appears: the image is created.
    tb.apply_yaml(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: pull-secret, namespace: {NS}}}\n\
         stringData:\n  .dockerconfigjson: '{{\"auths\":{{}}}}'\n"
    ))
    .await
    .unwrap();
    let first = wait_for("ImageCreated=True", Duration::from_secs(30), || async {
        let ie = ies.get("pool").await.ok()?;
        let (st, reason, msg) = image_created(&ie)?;
        (st == "True").then(|| {
            assert_eq!(reason, "InfraEnvAvailable");
            assert_eq!(msg, "InfraEnv is available: Image has been created");
            ie.status.unwrap()
        })
    })
    .await;
    let url1 = first.iso_download_url.clone().unwrap();

    // An unrelated change (a label) reconciles again but keeps the URL: a new URL would make
    // Metal3 re-provision every host.
    ies.patch(
        "pool",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let st = ies.get("pool").await.unwrap().status.unwrap();
    assert_eq!(st.iso_download_url.as_deref(), Some(url1.as_str()));
    assert_eq!(st.created_time, first.created_time);

    // HEAD and Range on the ISO.
    let (status, headers, body) = request("HEAD", &url1, None).await;
    assert_eq!(status, 200);
    assert!(body.is_empty());
    let len: u64 = headers["content-length"].to_str().unwrap().parse().unwrap();
    // The kube API's default image type is the minimal ISO: CoreOS's own, rebuilt from the
    // base's miniso.dat, without the root filesystem (fetched by URL at boot, below).
    assert!(url1.contains("/minimal.iso?rev="), "{url1}");
    let minimal = dir.path().join("minimal.iso");
    assert!(write_minimal_iso(&iso, &minimal).unwrap());
    assert_eq!(len, std::fs::metadata(&minimal).unwrap().len());
    assert!(len < std::fs::metadata(&iso).unwrap().len());
    // The primary volume descriptor (today's live ISOs have nothing in the system area).
    let (status, headers, body) = request("GET", &url1, Some("bytes=32768-32791")).await;
    assert_eq!(status, 206);
    assert_eq!((body.len(), &body[..8]), (24, &b"\x01CD001\x01\0"[..]));
    assert_eq!(
        headers["content-range"],
        format!("bytes 32768-32791/{len}").as_str()
    );
    let (status, _, _) = request("GET", &url1, Some(&format!("bytes={len}-"))).await;
    assert_eq!(status, 416);
    let (status, _, body) = request("GET", &url1.replace("/byapikey/", "/byapikey/x"), None).await;
    assert_eq!(status, 401, "{}", String::from_utf8_lossy(&body));

    // PXE: kernel and rootfs straight out of the base ISO; the initrd is the base initrd
    // followed by a cpio holding the same discovery ignition as the ISO embeds.
    let boot = &first.boot_artifacts;
    for (url, want) in [(&boot.kernel, b"k"), (&boot.rootfs, b"r")] {
        let (status, _, body) = request("GET", url, None).await;
        assert_eq!((status, body.as_slice()), (200, &want[..]), "{url}");
    }
    let (status, _, iso_body) = request("GET", &url1, None).await;
    assert_eq!(status, 200);
    let kargs = embedded_kernel_arguments(std::io::Cursor::new(&iso_body))
        .unwrap()
        .unwrap();
    assert!(
        kargs.ends_with(&format!(" coreos.live.rootfs_url={}", boot.rootfs)),
        "{kargs}"
    );
    assert!(!kargs.contains("coreos.liveiso="), "{kargs}");
    let embedded = extract_embedded_ignition(std::io::Cursor::new(iso_body))
        .unwrap()
        .unwrap();
    // A host boots it: its agent, configured by the embedded ignition, registers with the core
    // and the core makes its Agent.
    let boot_config = parse_discovery_ignition(&embedded).unwrap();
    let profile = agent_sim::HostProfile::sno_like(0, "192.168.111.0/24").unwrap();
    let host = agent_sim::Host::spawn(
        agent_sim::AgentConfig::new(
            &boot_config.service_url,
            &boot_config.infra_env_id,
            &boot_config.token,
            profile,
        )
        .with_speed(0.0),
    );
    let agents: Api<assisted_core::api::agent::Agent> = Api::namespaced(client.clone(), NS);
    wait_for(
        "the Agent of the host booted from the minimal ISO",
        Duration::from_secs(30),
        || async {
            (!agents
                .list(&Default::default())
                .await
                .ok()?
                .items
                .is_empty())
            .then_some(())
        },
    )
    .await;
    drop(host);
    let (status, _, initrd) = request("GET", &boot.initrd, None).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&initrd));
    // b"i" plus zero padding to the 4-byte boundary the kernel needs between archives.
    assert_eq!(&initrd[..4], b"i\0\0\0");
    let config = cpio::read(&initrd[4..])
        .unwrap()
        .into_iter()
        .find_map(|e| match e {
            cpio::Entry::File { path, data, .. } if path == "config.ign" => Some(data),
            _ => None,
        })
        .expect("config.ign in the initrd");
    assert!(
        config == embedded.as_bytes(),
        "config.ign differs from the ISO's"
    );
    let token = boot
        .initrd
        .split("api_key=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    let wrong = boot.initrd.replace(token, "x.y.z");
    let (status, _, body) = request("GET", &wrong, None).await;
    assert_eq!(status, 401, "{}", String::from_utf8_lossy(&body));

    // A selected NMStateConfig changes the image: new URL, new createdTime, static network
    // files in the embedded ignition. (createdTime has one-second resolution.)
    tokio::time::sleep(Duration::from_millis(1100)).await;
    tb.apply_yaml(&format!(
        "apiVersion: agent-install.openshift.io/v1beta1\nkind: NMStateConfig\n\
         metadata: {{name: host0, namespace: {NS}, labels: {{pool: lab}}}}\n\
         spec:\n  interfaces: [{{name: eth0, macAddress: '52:54:00:00:00:01'}}]\n\
         \x20 config:\n    interfaces: [{{name: eth0, type: ethernet, state: up}}]\n"
    ))
    .await
    .unwrap();
    ies.patch(
        "pool",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"nmStateConfigLabelSelector": {"matchLabels": {"pool": "lab"}}}}),
        ),
    )
    .await
    .unwrap();
    let second = wait_for("a new ISO URL", Duration::from_secs(30), || async {
        let st = ies.get("pool").await.ok()?.status?;
        (st.iso_download_url.as_deref() != Some(url1.as_str())).then_some(st)
    })
    .await;
    assert_ne!(second.created_time, first.created_time);
    let (status, _, body) = request("GET", second.iso_download_url.as_deref().unwrap(), None).await;
    assert_eq!(status, 200);
    let ign = extract_embedded_ignition(std::io::Cursor::new(body))
        .unwrap()
        .unwrap();
    assert!(
        ign.contains("/etc/assisted/network/host0/"),
        "static network in the ignition: {}",
        ign.split("\"path\"")
            .skip(1)
            .map(|p| &p[..p.len().min(60)])
            .collect::<Vec<_>>()
            .join(" | ")
    );
    assert!(ign.contains("mac_interface.ini"));

    // Events tell the story too (`kubectl describe infraenv pool`).
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), NS);
    let reasons = wait_for("InfraEnv events", Duration::from_secs(30), || async {
        let l = events.list(&Default::default()).await.ok()?;
        let r: Vec<String> = l
            .items
            .iter()
            .filter(|e| e.regarding.as_ref().and_then(|o| o.name.as_deref()) == Some("pool"))
            .filter_map(|e| e.reason.clone())
            .collect();
        (r.iter().any(|x| x == "ImageCreated") && r.iter().any(|x| x == "ImageCreationError"))
            .then_some(r)
    })
    .await;
    assert!(!reasons.is_empty());

    // A clusterRef to a missing ClusterDeployment: ImageCreated=Unknown.
    ies.patch(
        "pool",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"clusterRef": {"name": "nope", "namespace": NS}}})),
    )
    .await
    .unwrap();
    let (_, reason, _) = wait_for(
        "MissingClusterDeployment",
        Duration::from_secs(30),
        || async { image_created(&ies.get("pool").await.ok()?).filter(|c| c.0 == "Unknown") },
    )
    .await;
    assert_eq!(reason, "MissingClusterDeployment");

    core.kill().await;
}
