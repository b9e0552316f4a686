//! Every step type the core can emit, decoded with upstream's request models. The installs in
//! wire.rs reach most of them over HTTP; the rest (DHCP VIP leases, tang, agent upgrade,
//! reclaim) need settings the kube-API flow does not set today, so their `steps` documents are
//! computed here with the core's own next-steps function and handed to the Go program.

use assisted_core::domain::*;
use jiff::Timestamp;

const CLUSTER: &str = "5f0f2d6c-1d0e-4c1a-9e55-000000000001";
const INFRA_ENV: &str = "5f0f2d6c-1d0e-4c1a-9e55-000000000002";
const AGENT_IMAGE: &str = "quay.io/edge-infrastructure/assisted-installer-agent:v2.40";

fn host_id(i: u8) -> String {
    format!("5f0f2d6c-1d0e-4c1a-9e55-0000000000{:02x}", 0x10 + i)
}

fn inventory(i: u8) -> Inventory {
    let doc = serde_json::json!({
        "hostname": format!("host-{i}"),
        "interfaces": [{
            "name": "eth0",
            "mac_address": format!("52:54:00:00:00:{i:02x}"),
            "ipv4_addresses": [format!("192.168.1.{}/24", 10 + i)],
            "ipv6_addresses": [],
            "mtu": 1500,
            "has_carrier": true,
        }],
        "disks": [{
            "id": "/dev/disk/by-id/wwn-0x01",
            "name": "sda",
            "path": "/dev/sda",
            "by_id": "/dev/disk/by-id/wwn-0x01",
            "drive_type": "SSD",
            "size_bytes": 200_000_000_000u64,
            "installation_eligibility": {"eligible": true, "not_eligible_reasons": []},
        }],
        "memory": {"physical_bytes": 32u64 << 30, "usable_bytes": 32u64 << 30},
        "cpu": {"count": 8, "architecture": "x86_64"},
    });
    Inventory::parse(doc.to_string().as_bytes())
}

fn cluster(t: Timestamp) -> ClusterSnapshot {
    let mut c = ClusterSnapshot::new(CLUSTER, "offline", t);
    c.base_domain = "example.com".into();
    c.openshift_version = "4.17.3".into();
    c.control_plane_count = 3;
    c.machine_networks = vec!["192.168.1.0/24".into()];
    c.api_vips = vec!["192.168.1.100".into()];
    c.ingress_vips = vec!["192.168.1.101".into()];
    c.vip_dhcp_allocation = true;
    c.disk_encryption = Some(DiskEncryption {
        enable_on: "all".into(),
        mode: "tang".into(),
        tang_servers:
            r#"[{"url":"http://tang.example.com:7500","thumbprint":"PLjNyRdGw03zlRoGjQYMahSZGu9"}]"#
                .into(),
    });
    c.release = ReleaseInfo {
        release_image: "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64".into(),
        mco_image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev:mco".into(),
        must_gather_image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev:must-gather".into(),
        coreos_image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev:coreos".into(),
    };
    for i in 0..3 {
        let mut h = HostSnapshot::new_registered(host_id(i), INFRA_ENV, Some(&c), t);
        h.inventory = Some(inventory(i));
        h.status = HostStatus::Known;
        h.role = HostRole::Master;
        h.discovery_agent_version = AGENT_IMAGE.into();
        c.hosts.push(h);
    }
    c.hosts[0].bootstrap = true;
    c
}

/// `steps` documents covering every step type the core emits.
fn steps_documents() -> Vec<serde_json::Value> {
    let t = Timestamp::from_second(1_800_000_000).unwrap();
    let cfg = Config {
        enable_upgrade_agent: true,
        agent_image: AGENT_IMAGE.into(),
        installer_image: "quay.io/edge-infrastructure/assisted-installer:v2.40".into(),
        controller_image: "quay.io/edge-infrastructure/assisted-installer-controller:v2.40".into(),
        ..Config::default()
    };
    let urls = BootArtifactUrls {
        kernel_url: "http://images.example.com/boot-artifacts/kernel".into(),
        initrd_url: "http://images.example.com/images/initrd".into(),
        rootfs_url: "http://images.example.com/boot-artifacts/rootfs".into(),
    };
    let mut docs = Vec::new();
    let mut emit = |c: &ClusterSnapshot, i: usize| {
        let steps = next_steps(&NextStepsInput {
            host: &c.hosts[i],
            cluster: Some(c),
            cfg: &cfg,
            seed: 7,
            boot_artifacts: Some(&urls),
            connectivity_check: true,
        });
        docs.push(serde_json::to_value(&steps).expect("steps serialize"));
    };
    let base = cluster(t);
    // Discovery (connectivity, tang, free addresses, DHCP, inventory, NTP, DNS, VIPs), then
    // preparation, install, failure and reclaim of the same hosts.
    for (status, host) in [
        (HostStatus::Known, 1),
        (HostStatus::PreparingForInstallation, 1),
        (HostStatus::Installing, 0),
        (HostStatus::Installing, 1),
        (HostStatus::Error, 0),
        (HostStatus::Error, 1),
        (HostStatus::Reclaiming, 1),
        (HostStatus::ReclaimingRebooting, 1),
    ] {
        let mut c = base.clone();
        c.hosts[host].status = status;
        emit(&c, host);
    }
    // An agent older than the service's image is upgraded first.
    let mut c = base.clone();
    c.hosts[1].discovery_agent_version =
        "quay.io/edge-infrastructure/assisted-installer-agent:v2.39".into();
    emit(&c, 1);
    // A day-2 host checks that it can reach the cluster's ignition endpoint.
    let mut c = base;
    c.kind = ClusterKind::AddHostsCluster;
    c.hosts[2].kind = HostKind::AddToExistingClusterHost;
    emit(&c, 2);
    docs
}

#[tokio::test]
async fn every_step_type_the_core_emits_decodes_with_upstream_models() {
    // The testbed's opt-out: these tests need the same Go toolchain.
    if testbed::skip() {
        return;
    }
    let program = wire_conformance::program().expect("the wire-conformance program");
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("steps.json");
    std::fs::write(&file, serde_json::to_vec(&steps_documents()).unwrap()).unwrap();
    let args = vec![
        "steps".to_string(),
        "-file".into(),
        file.display().to_string(),
    ];
    let run = wire_conformance::run(&program, &args, dir.path())
        .await
        .expect("run the wire-conformance program");
    let s = &run.summary;
    assert!(s.fatal.is_none(), "{:?}\n{}", s.fatal, run.stderr);
    let missing: Vec<&str> = StepType::ALL
        .iter()
        .filter(|t| !matches!(t, StepType::Execute | StepType::NextStepRunner))
        .map(|t| t.as_str())
        .filter(|t| !s.steps.contains_key(*t))
        .collect();
    assert!(missing.is_empty(), "step types never emitted: {missing:?}");
    if let Err(e) = s.check(wire_conformance::ALLOWED) {
        panic!("step arguments that do not conform:\n{e}");
    }
}

/// The checks themselves: a document with a renamed field, a wrong type, a value outside an
/// enum, a bad format and an unknown step type is reported, each as what it is.
#[tokio::test]
async fn broken_documents_are_reported() {
    if testbed::skip() {
        return;
    }
    let program = wire_conformance::program().expect("the wire-conformance program");
    let dir = tempfile::tempdir().expect("temporary directory");
    let install = serde_json::json!({
        "cluster_id": "not-a-uuid",
        "host_id": host_id(0),
        "infra_env_id": INFRA_ENV,
        "role": "captain",
        "boot_devise": "/dev/sda",
        "controller_image": "quay.io/edge-infrastructure/assisted-installer-controller:v2.40",
        "installer_image": "quay.io/edge-infrastructure/assisted-installer:v2.40",
        "high_availability_mode": "Full",
    });
    let doc = serde_json::json!([{
        "next_instruction_seconds": 60,
        "post_step_action": "continue",
        "instructions": [
            {"step_type": "install", "step_id": "install-1", "args": [install.to_string()]},
            {"step_type": "ntp-synchronizer", "step_id": "ntp-1", "args": [r#"{"ntp_source": 5}"#]},
            {"step_type": "reboot", "step_id": "reboot-1", "args": []},
        ],
    }]);
    let file = dir.path().join("broken.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let args = vec![
        "steps".to_string(),
        "-file".into(),
        file.display().to_string(),
    ];
    let run = wire_conformance::run(&program, &args, dir.path())
        .await
        .expect("run the wire-conformance program");
    assert_eq!(run.exit_code, Some(1), "{}", run.stderr);
    let mut got: Vec<(String, String, String)> = run
        .summary
        .failures
        .iter()
        .map(|f| (f.at.clone(), f.kind.clone(), f.field.clone()))
        .collect();
    got.sort();
    let want = [
        ("step install args", "unknown-field", "boot_devise"),
        ("step install args", "validate", "boot_device"),
        ("step install args", "validate", "cluster_id"),
        ("step install args", "validate", "role"),
        ("step ntp-synchronizer args", "decode", "ntp_source"),
        ("step reboot args", "validate", "step_type"),
        ("steps document", "validate", "instructions.*.step_type"),
    ]
    .map(|(a, k, f)| (a.to_string(), k.to_string(), f.to_string()));
    assert_eq!(got, want, "{}", run.stderr);
}
