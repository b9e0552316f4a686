//! Test fixtures: well-formed hosts and clusters, and a small simulated agent.

use jiff::Timestamp;

use crate::domain::inventory::*;
use crate::domain::*;

pub fn t0() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

pub fn mins(t: Timestamp, m: i64) -> Timestamp {
    t.checked_add(jiff::SignedDuration::from_secs(m * 60))
        .unwrap()
}

pub const GIB: u64 = 1 << 30;

/// A healthy x86 host: `cpu` cores, `mem_gib` RAM, one 200 GB SSD, one NIC in 192.168.1.0/24.
pub fn inventory(hostname: &str, ip_last: u8, cpu: u32, mem_gib: u64) -> Inventory {
    Inventory {
        hostname: hostname.into(),
        interfaces: vec![Interface {
            name: "eth0".into(),
            mac_address: format!("52:54:00:00:00:{ip_last:02x}"),
            ipv4_addresses: vec![format!("192.168.1.{ip_last}/24")],
            mtu: 1500,
            has_carrier: true,
            ..Default::default()
        }],
        disks: vec![Disk {
            id: "/dev/disk/by-id/wwn-0x01".into(),
            name: "sda".into(),
            path: "/dev/sda".into(),
            by_id: "/dev/disk/by-id/wwn-0x01".into(),
            drive_type: "SSD".into(),
            size_bytes: 200_000_000_000,
            bootable: true,
            ..Default::default()
        }],
        memory: Memory {
            physical_bytes: mem_gib * GIB,
            usable_bytes: mem_gib * GIB,
            physical_bytes_method: "dmidecode".into(),
        },
        cpu: Cpu {
            count: cpu,
            architecture: "x86_64".into(),
            ..Default::default()
        },
        routes: vec![Route {
            interface: "eth0".into(),
            gateway: "192.168.1.1".into(),
            destination: "0.0.0.0".into(),
            family: 2,
            metric: 100,
        }],
        system_vendor: SystemVendor {
            manufacturer: "Dell Inc.".into(),
            product_name: "PowerEdge R650".into(),
            ..Default::default()
        },
        tpm_version: "2.0".into(),
        ..Default::default()
    }
}

/// A discovered, validated host in `status` (approved, checked in at `now`).
pub fn host(id: &str, ip_last: u8, cluster: &ClusterSnapshot, now: Timestamp) -> HostSnapshot {
    let mut h = HostSnapshot::new_registered(id, "infra-1", Some(cluster), now);
    h.inventory = Some(inventory(id, ip_last, 8, 32));
    h.approved = true;
    h.ntp_sources = vec![NtpSource {
        source_name: "pool.ntp.org".into(),
        source_state: "synced".into(),
    }];
    h.domain_resolutions = Some(resolutions(cluster));
    h
}

/// DNS answers for the cluster names (api → API VIP, apps → ingress VIP, no wildcard).
pub fn resolutions(c: &ClusterSnapshot) -> Vec<DomainResolution> {
    let api = c.api_vips.first().cloned().unwrap_or("192.168.1.10".into());
    let apps = c
        .ingress_vips
        .first()
        .cloned()
        .unwrap_or("192.168.1.10".into());
    let d = c.domain();
    vec![
        DomainResolution {
            domain_name: format!("api.{d}"),
            ipv4_addresses: vec![api.clone()],
            ..Default::default()
        },
        DomainResolution {
            domain_name: format!("api-int.{d}"),
            ipv4_addresses: vec![api],
            ..Default::default()
        },
        DomainResolution {
            domain_name: format!("console-openshift-console.apps.{d}"),
            ipv4_addresses: vec![apps],
            ..Default::default()
        },
    ]
}

/// Every host reports full L3 connectivity to every other host.
pub fn connect_all(c: &mut ClusterSnapshot) {
    let ids: Vec<String> = c.hosts.iter().map(|h| h.id.clone()).collect();
    for h in c.hosts.iter_mut() {
        h.connectivity = ids
            .iter()
            .filter(|i| **i != h.id)
            .map(|i| ConnectivityRemoteHost {
                host_id: i.clone(),
                l3_connectivity: vec![L3Connectivity {
                    remote_ip_address: "192.168.1.1".into(),
                    successful: true,
                    average_rtt_ms: 0.5,
                    packet_loss_percentage: 0.0,
                }],
                ..Default::default()
            })
            .collect();
    }
}

/// An empty 3+2 baremetal cluster with networking filled in.
pub fn cluster_3_2(now: Timestamp) -> ClusterSnapshot {
    let mut c = ClusterSnapshot::new("c1", "test", now);
    c.base_domain = "example.com".into();
    c.openshift_version = "4.20.0".into();
    c.pull_secret_set = true;
    c.control_plane_count = 3;
    c.worker_count = 2;
    c.machine_networks = vec!["192.168.1.0/24".into()];
    c.api_vips = vec!["192.168.1.100".into()];
    c.ingress_vips = vec!["192.168.1.101".into()];
    c.release = ReleaseInfo {
        release_image: "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64".into(),
        mco_image: "quay.io/mco".into(),
        must_gather_image: "quay.io/must-gather".into(),
        coreos_image: "quay.io/coreos".into(),
    };
    c
}

/// A 3+2 cluster with five valid, approved, auto-assign hosts.
pub fn cluster_3_2_with_hosts(now: Timestamp) -> ClusterSnapshot {
    let mut c = cluster_3_2(now);
    for i in 1..=5u8 {
        let h = host(&format!("h{i}"), 10 + i, &c, now);
        c.hosts.push(h);
    }
    connect_all(&mut c);
    c
}

/// Fixes the roles instead of auto-assigning them: the first three hosts masters, the rest workers.
pub fn masters_then_workers(c: &mut ClusterSnapshot) {
    for (i, h) in c.hosts.iter_mut().enumerate() {
        h.role = if i < 3 {
            HostRole::Master
        } else {
            HostRole::Worker
        };
    }
}

/// An SNO cluster (4.22, user-managed networking) with one host.
pub fn sno_with_host(now: Timestamp) -> ClusterSnapshot {
    let mut c = cluster_3_2(now);
    c.openshift_version = "4.22.0".into();
    c.control_plane_count = 1;
    c.worker_count = 0;
    c.machine_networks.clear();
    c.api_vips.clear();
    c.ingress_vips.clear();
    c.platform = PlatformType::None;
    let h = host("sno1", 20, &c, now);
    c.hosts.push(h);
    c
}

/// Simulated agent answers to the steps it receives.
pub fn agent_reply(c: &ClusterSnapshot, hw: &Inventory, step: &Step) -> Option<StepReply> {
    let ok = |output: String| {
        Some(StepReply {
            step_type: step.step_type.as_str().into(),
            step_id: step.step_id.clone(),
            exit_code: 0,
            output,
            error: String::new(),
        })
    };
    match step.step_type {
        StepType::Inventory => ok(serde_json::to_string(hw).unwrap()),
        StepType::ConnectivityCheck => {
            let peers: Vec<serde_json::Value> = serde_json::from_str(&step.args[0]).unwrap();
            let remote: Vec<serde_json::Value> = peers
                .iter()
                .map(|p| {
                    serde_json::json!({"host_id": p["host_id"], "l3_connectivity": [
                        {"remote_ip_address": "192.168.1.1", "successful": true,
                         "average_rtt_ms": 0.4, "packet_loss_percentage": 0.0}]})
                })
                .collect();
            ok(serde_json::json!({ "remote_hosts": remote }).to_string())
        }
        StepType::NtpSynchronizer => ok(
            serde_json::json!({"ntp_sources":[{"source_name":"pool","source_state":"synced"}]})
                .to_string(),
        ),
        StepType::DomainResolution => {
            ok(serde_json::json!({ "resolutions": resolutions(c) }).to_string())
        }
        StepType::InstallationDiskSpeedCheck => {
            ok(r#"{"io_sync_duration": 2, "path": "/dev/sda"}"#.into())
        }
        StepType::ContainerImageAvailability => {
            let req: ContainerImageAvailabilityRequest =
                serde_json::from_str(&step.args[0]).unwrap();
            let images: Vec<serde_json::Value> = req
                .images
                .iter()
                .map(|i| serde_json::json!({"name": i, "result": "success", "download_rate": 50.0}))
                .collect();
            ok(serde_json::json!({ "images": images }).to_string())
        }
        StepType::ApiVipConnectivityCheck => ok(r#"{"is_success": true}"#.into()),
        _ => None,
    }
}
