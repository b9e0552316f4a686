//! Domain model benchmarks: monitor refresh passes and next-steps.
//!
//! Run: `cargo bench -p assisted-core --bench domain -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use assisted_core::domain::inventory::*;
use assisted_core::domain::*;
use criterion::{Criterion, criterion_group, criterion_main};
use jiff::Timestamp;

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

fn inventory(name: &str, ip: &str) -> Inventory {
    Inventory {
        hostname: name.into(),
        interfaces: vec![Interface {
            name: "eth0".into(),
            mac_address: "52:54:00:00:00:01".into(),
            ipv4_addresses: vec![format!("{ip}/16")],
            mtu: 1500,
            has_carrier: true,
            ..Default::default()
        }],
        disks: vec![Disk {
            id: "/dev/disk/by-id/wwn-0x01".into(),
            path: "/dev/sda".into(),
            by_id: "/dev/disk/by-id/wwn-0x01".into(),
            drive_type: "SSD".into(),
            size_bytes: 200_000_000_000,
            bootable: true,
            ..Default::default()
        }],
        memory: Memory {
            physical_bytes: 32 << 30,
            usable_bytes: 32 << 30,
            physical_bytes_method: "dmidecode".into(),
        },
        cpu: Cpu {
            count: 8,
            architecture: "x86_64".into(),
            ..Default::default()
        },
        routes: vec![Route {
            interface: "eth0".into(),
            gateway: "10.0.0.1".into(),
            destination: "0.0.0.0".into(),
            family: 2,
            metric: 100,
        }],
        tpm_version: "2.0".into(),
        ..Default::default()
    }
}

fn base_cluster() -> ClusterSnapshot {
    let mut c = ClusterSnapshot::new("c1", "bench", now());
    c.base_domain = "example.com".into();
    c.openshift_version = "4.20.0".into();
    c.pull_secret_set = true;
    c.worker_count = 2;
    c.machine_networks = vec!["10.0.0.0/16".into()];
    c.api_vips = vec!["10.0.255.100".into()];
    c.ingress_vips = vec!["10.0.255.101".into()];
    c.status = ClusterStatus::Ready;
    c
}

fn resolutions(c: &ClusterSnapshot) -> Vec<DomainResolution> {
    ["api", "api-int", "console-openshift-console.apps"]
        .iter()
        .map(|p| DomainResolution {
            domain_name: format!("{p}.{}", c.domain()),
            ipv4_addresses: vec!["10.0.255.100".into()],
            ..Default::default()
        })
        .collect()
}

fn add_host(c: &mut ClusterSnapshot, i: usize) {
    let id = format!("host-{i:04}");
    let ip = format!("10.0.{}.{}", i / 250, i % 250 + 2);
    let mut h = HostSnapshot::new_registered(id.clone(), "infra", Some(c), now());
    h.inventory = Some(inventory(&id, &ip));
    h.status = HostStatus::Known;
    h.approved = true;
    h.api_vip_connectivity = Some(true);
    h.domain_resolutions = Some(resolutions(c));
    h.ntp_sources = vec![NtpSource {
        source_name: "pool".into(),
        source_state: "synced".into(),
    }];
    c.hosts.push(h);
}

/// Ready 3+2 cluster with full-mesh connectivity reports.
fn cluster_5() -> ClusterSnapshot {
    let mut c = base_cluster();
    for i in 0..5 {
        add_host(&mut c, i);
    }
    let ids: Vec<String> = c.hosts.iter().map(|h| h.id.clone()).collect();
    for h in c.hosts.iter_mut() {
        h.connectivity = ids
            .iter()
            .filter(|x| **x != h.id)
            .map(|x| ConnectivityRemoteHost {
                host_id: x.clone(),
                l3_connectivity: vec![L3Connectivity {
                    successful: true,
                    average_rtt_ms: 0.3,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect();
    }
    c
}

/// Installed cluster turned adding-hosts with 500 known day-2 workers.
fn cluster_day2_500() -> ClusterSnapshot {
    let mut c = base_cluster();
    c.status = ClusterStatus::AddingHosts;
    c.kind = ClusterKind::AddHostsCluster;
    for i in 0..500 {
        add_host(&mut c, i);
    }
    c
}

/// A day-1 cluster as 1,000 hosts leave it right after registering: inventories in, no
/// connectivity reports yet (what the end-to-end benchmark's 1 × 1,000 scenario holds).
fn cluster_day1_1000() -> ClusterSnapshot {
    let mut c = base_cluster();
    c.status = ClusterStatus::Insufficient;
    for i in 0..1000 {
        add_host(&mut c, i);
    }
    for h in c.hosts.iter_mut() {
        h.status = HostStatus::Insufficient;
    }
    c
}

fn benches(cr: &mut Criterion) {
    let cfg = Config::default();
    let c5 = cluster_5();
    let r = refresh_all(&c5, now(), &cfg);
    assert_eq!(
        r.cluster.status,
        ClusterStatus::Ready,
        "{}",
        r.cluster.status_info
    );
    cr.bench_function("refresh_all 5-host day-1 cluster", |b| {
        b.iter(|| refresh_all(black_box(&c5), now(), &cfg))
    });

    let c500 = cluster_day2_500();
    let r = refresh_all(&c500, now(), &cfg);
    assert!(r.hosts.iter().all(|h| h.status == HostStatus::Known));
    cr.bench_function("refresh_all 500-host day-2 cluster", |b| {
        b.iter(|| refresh_all(black_box(&c500), now(), &cfg))
    });

    let c1000 = cluster_day1_1000();
    cr.bench_function("refresh_all 1000-host day-1 cluster", |b| {
        b.iter(|| refresh_all(black_box(&c1000), now(), &cfg))
    });

    cr.bench_function("refresh_host 1 host of 500-host day-2 cluster", |b| {
        b.iter(|| refresh_host(black_box(&c500.hosts[250]), Some(&c500), now(), &cfg))
    });

    let mut seed = 0u64;
    cr.bench_function("next_steps known host (5-host cluster)", |b| {
        b.iter(|| {
            seed += 1;
            next_steps(&NextStepsInput {
                host: black_box(&c5.hosts[0]),
                cluster: Some(&c5),
                cfg: &cfg,
                seed,
                boot_artifacts: None,
                connectivity_check: true,
            })
        })
    });

    cr.bench_function("next_steps known day-2 host (500-host cluster)", |b| {
        b.iter(|| {
            next_steps(&NextStepsInput {
                host: black_box(&c500.hosts[10]),
                cluster: Some(&c500),
                cfg: &cfg,
                seed: 9,
                boot_artifacts: None,
                connectivity_check: true,
            })
        })
    });

    let mut installing = c5.clone();
    installing.status = ClusterStatus::Installing;
    installing.hosts[0].status = HostStatus::Installing;
    installing.hosts[0].role = HostRole::Master;
    cr.bench_function("next_steps installing host (install_cmd_request)", |b| {
        b.iter(|| {
            next_steps(&NextStepsInput {
                host: black_box(&installing.hosts[0]),
                cluster: Some(&installing),
                cfg: &cfg,
                seed: 7,
                boot_artifacts: None,
                connectivity_check: true,
            })
        })
    });

    let inv_json = serde_json::to_vec(&c5.hosts[0].inventory).unwrap_or_default();
    cr.bench_function("Inventory::parse (lenient)", |b| {
        b.iter(|| Inventory::parse(black_box(&inv_json)))
    });
}

criterion_group!(domain, benches);
criterion_main!(domain);
