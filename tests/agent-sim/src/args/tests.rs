//! A test per step type: the arguments assisted-core's own step builder sends pass the checks
//! the real agent makes (and the simulator answers them), and what the real agent refuses is
//! refused here too, with exit code -1.

use std::collections::BTreeSet;

use assisted_core::domain as dom;
use jiff::Timestamp;
use serde_json::json;

use super::*;
use crate::profile::inventory_json;
use crate::reply::{ReplyCtx, step_reply};

const NET: &str = "192.168.111.0/24";
const CLUSTER: &str = "5a2c8f9e-1b7d-4e3a-9c6f-0d8e7b6a5c4d";
const INFRA_ENV: &str = "7e1f3a5b-9c2d-4b8e-a6f0-1d3c5e7a9b2f";

fn profiles() -> Vec<HostProfile> {
    let mut v: Vec<HostProfile> = (0..3)
        .map(|i| HostProfile::master_like(i, NET).unwrap())
        .collect();
    v[2] = v[2].clone().with_second_nic();
    v
}

fn host_of(p: &HostProfile, c: &dom::ClusterSnapshot) -> dom::HostSnapshot {
    let mut h =
        dom::HostSnapshot::new_registered(&p.uuid, INFRA_ENV, Some(c), Timestamp::UNIX_EPOCH);
    h.inventory = Some(dom::Inventory::parse(
        inventory_json(p).to_string().as_bytes(),
    ));
    h.status = dom::HostStatus::Known;
    h.approved = true;
    h
}

/// A 3-master cluster of the simulator's hosts, every step turned on.
fn cluster(profiles: &[HostProfile]) -> dom::ClusterSnapshot {
    let mut c = dom::ClusterSnapshot::new(CLUSTER, "test", Timestamp::UNIX_EPOCH);
    c.base_domain = "example.com".into();
    c.openshift_version = "4.20.0".into();
    c.pull_secret_set = true;
    c.control_plane_count = 3;
    c.machine_networks = vec![NET.into()];
    c.api_vips = vec!["192.168.111.5".into()];
    c.ingress_vips = vec!["192.168.111.6".into()];
    c.vip_dhcp_allocation = true;
    c.additional_ntp_source = "clock.example.com,10.0.0.1".into();
    c.disk_encryption = Some(dom::DiskEncryption {
        enable_on: "all".into(),
        mode: "tang".into(),
        tang_servers: r#"[{"url":"http://tang.example.com:7500","thumbprint":"abc"}]"#.into(),
    });
    c.release = dom::ReleaseInfo {
        release_image: "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64".into(),
        mco_image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0123abcd".into(),
        must_gather_image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:4567ef".into(),
        coreos_image: String::new(),
    };
    c.hosts = profiles.iter().map(|p| host_of(p, &c)).collect();
    c
}

/// The steps assisted-core sends `host`, as the simulator receives them.
fn core_steps(c: &dom::ClusterSnapshot, host: &dom::HostSnapshot, cfg: &dom::Config) -> Vec<Step> {
    let urls = dom::BootArtifactUrls {
        kernel_url: "https://images.example.com/boot/kernel".into(),
        initrd_url: "https://images.example.com/boot/initrd".into(),
        rootfs_url: "https://images.example.com/boot/rootfs".into(),
    };
    let ntp = dom::NtpSourcesByInfraEnv::from([(
        INFRA_ENV.to_string(),
        vec!["ntp.example.com".to_string()],
    )]);
    let steps = dom::next_steps_with_ntp(
        &dom::NextStepsInput {
            host,
            cluster: host.cluster_id.as_ref().map(|_| c),
            cfg,
            seed: 7,
            boot_artifacts: Some(&urls),
            connectivity_check: true,
        },
        &ntp,
    );
    // Through the wire, as the agent reads them.
    let wire = serde_json::to_string(&steps).unwrap();
    serde_json::from_str::<crate::wire::Steps>(&wire)
        .unwrap()
        .instructions
}

/// Every step assisted-core sends, over the states that send them, with the host it went to.
fn every_core_step() -> Vec<(Step, HostProfile)> {
    use dom::HostStatus as S;
    let ps = profiles();
    let base = cluster(&ps);
    let mut cfg = dom::Config::default();
    let mut out = Vec::new();
    let mut run = |c: &dom::ClusterSnapshot, i: usize, cfg: &dom::Config| {
        for s in core_steps(c, &c.hosts[i], cfg) {
            out.push((s, ps[i].clone()));
        }
    };
    for (status, bootstrap) in [
        (S::Known, false),
        (S::PreparingForInstallation, false),
        (S::Installing, true),
        (S::Installing, false),
        (S::Error, true),
        (S::Error, false),
    ] {
        for i in 0..ps.len() {
            let mut c = base.clone();
            c.hosts[i].status = status;
            c.hosts[i].role = dom::HostRole::Master;
            c.hosts[i].bootstrap = bootstrap;
            run(&c, i, &cfg);
        }
    }
    // Day-2: the API connectivity check.
    let mut day2 = base.clone();
    day2.kind = dom::ClusterKind::AddHostsCluster;
    day2.hosts[2].kind = dom::HostKind::AddToExistingClusterHost;
    run(&day2, 2, &cfg);
    // Unbound hosts, reclaim.
    for status in [S::KnownUnbound, S::Reclaiming, S::ReclaimingRebooting] {
        let mut c = base.clone();
        c.hosts[0].cluster_id = None;
        c.hosts[0].status = status;
        run(&c, 0, &cfg);
    }
    // The agent upgrade.
    cfg.enable_upgrade_agent = true;
    cfg.agent_image = "quay.io/edge-infrastructure/assisted-installer-agent:v2".into();
    run(&base, 1, &cfg);
    out
}

#[test]
fn the_core_sends_every_step_type_the_agent_runs() {
    let sent: BTreeSet<&str> = every_core_step()
        .iter()
        .map(|(s, _)| s.step_type.clone())
        .collect::<Vec<_>>()
        .iter()
        .map(|t| StepKind::parse(t).unwrap().as_str())
        .collect();
    for kind in StepKind::ALL {
        if matches!(kind, StepKind::NextStepRunner | StepKind::Execute) {
            continue;
        }
        assert!(
            sent.contains(kind.as_str()),
            "no {} step built",
            kind.as_str()
        );
    }
}

/// One test per step type: the arguments the core builds pass the agent's checks and the
/// simulator answers them (exit code 0).
macro_rules! accepts_core_args {
    ($($test:ident: $kind:ident),+ $(,)?) => {$(
        #[test]
        fn $test() {
            let all = every_core_step();
            let mine: Vec<&(Step, HostProfile)> = all
                .iter()
                .filter(|(s, _)| s.kind() == Some(StepKind::$kind))
                .collect();
            assert!(!mine.is_empty(), "the core built no {} step", StepKind::$kind.as_str());
            let ps = profiles();
            for (step, host) in mine {
                check(step, host).unwrap_or_else(|e| {
                    panic!("{} refused: {e}; args {:?}", step.step_type, step.args)
                });
                let r = step_reply(step, host, &ps, &ReplyCtx::default());
                assert_eq!(r.exit_code, 0, "{}: {}", step.step_type, r.error);
            }
        }
    )+};
}

accepts_core_args! {
    accepts_inventory: Inventory,
    accepts_connectivity_check: ConnectivityCheck,
    accepts_free_network_addresses: FreeNetworkAddresses,
    accepts_ntp_synchronizer: NtpSynchronizer,
    accepts_domain_resolution: DomainResolution,
    accepts_verify_vips: VerifyVips,
    accepts_dhcp_lease_allocate: DhcpLeaseAllocate,
    accepts_tang_connectivity_check: TangConnectivityCheck,
    accepts_api_vip_connectivity_check: ApiVipConnectivityCheck,
    accepts_installation_disk_speed_check: InstallationDiskSpeedCheck,
    accepts_container_image_availability: ContainerImageAvailability,
    accepts_install: Install,
    accepts_logs_gather: LogsGather,
    accepts_stop_installation: StopInstallation,
    accepts_download_boot_artifacts: DownloadBootArtifacts,
    accepts_reboot_for_reclaim: RebootForReclaim,
    accepts_upgrade_agent: UpgradeAgent,
}

fn refused(kind: StepKind, args: &[&str]) -> String {
    let ps = profiles();
    let step = Step::new(kind, "s-1", args.iter().map(|a| a.to_string()).collect());
    let r = step_reply(&step, &ps[0], &ps, &ReplyCtx::default());
    assert_eq!(
        r.exit_code,
        REFUSED_EXIT_CODE,
        "{} was not refused",
        kind.as_str()
    );
    assert!(r.output.is_empty());
    r.error
}

/// Issue 24 item 7: the request alone, as the core sent it, is refused.
#[test]
fn disk_speed_check_needs_the_timeout() {
    let e = refused(
        StepKind::InstallationDiskSpeedCheck,
        &[r#"{"path":"/dev/sda"}"#],
    );
    assert!(e.contains("takes 2 argument(s), got 1"), "{e}");
    let e = refused(
        StepKind::InstallationDiskSpeedCheck,
        &[r#"{"path":"/dev/sda"}"#, "soon"],
    );
    assert!(e.contains("not a number"), "{e}");
    refused(StepKind::InstallationDiskSpeedCheck, &["{}", "480.00"]);
}

#[test]
fn wrong_counts_types_and_values_are_refused() {
    use StepKind as K;
    let host = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
    // Inventory takes the host id only: the service's extra size flags are refused.
    refused(K::Inventory, &[host, "--output-max-size=1000"]);
    refused(K::Inventory, &["not-a-uuid"]);
    refused(K::StopInstallation, &["{}"]);
    refused(K::NtpSynchronizer, &["{}"]);
    refused(
        K::NtpSynchronizer,
        &[r#"{"ntp_source":"Clock.Example.com"}"#],
    );
    refused(K::NtpSynchronizer, &[r#"{"ntp_source":"a b"}"#]);
    refused(K::NtpSynchronizer, &[]);
    refused(K::ConnectivityCheck, &[r#"{"x":1}"#]);
    refused(K::ConnectivityCheck, &[r#"[{"host_id":"h1","nics":[]}]"#]);
    refused(
        K::ConnectivityCheck,
        &[r#"[{"nics":[{"mac":"zz","ip_addresses":[]}]}]"#],
    );
    refused(
        K::ConnectivityCheck,
        &[r#"[{"nics":[{"ip_addresses":["127.0.0.1/8"]}]}]"#],
    );
    refused(K::DomainResolution, &["{}"]);
    refused(K::DomainResolution, &[r#"{"domains":[{}]}"#]);
    refused(
        K::ContainerImageAvailability,
        &[r#"{"images":["Quay.io/UPPER/case"]}"#],
    );
    refused(
        K::ContainerImageAvailability,
        &[r#"{"images":["quay.io/a:1"],"timeout":1.5}"#],
    );
    refused(
        K::DhcpLeaseAllocate,
        &[r#"{"interface":"ens3","api_vip_mac":"","ingress_vip_mac":"00:1a:4a:00:00:02"}"#],
    );
    refused(
        K::VerifyVips,
        &[r#"[{"vip":"192.168.111.5","vip_type":"API"}]"#],
    );
    refused(
        K::LogsGather,
        &[
            &json!({"cluster_id": host, "host_id": host, "infra_env_id": host,
        "bootstrap": false, "installer_gather": false})
            .to_string(),
        ],
    );
    refused(
        K::LogsGather,
        &[
            &json!({"cluster_id": "c1", "host_id": host, "infra_env_id": host,
        "bootstrap": false, "installer_gather": true})
            .to_string(),
        ],
    );
    refused(
        K::DownloadBootArtifacts,
        &[r#"{"host_fs_mount_dir":"/host"}"#],
    );
    refused(K::RebootForReclaim, &["{}"]);
    refused(K::ApiVipConnectivityCheck, &["{}"]);
    refused(K::TangConnectivityCheck, &["{}"]);
    let e = refused(K::Execute, &[]);
    assert!(e.contains("no action"), "{e}");
    refused(K::NextStepRunner, &["{}"]);
    let unknown = refused_unknown();
    assert!(unknown.contains("frobnicate"), "{unknown}");
}

fn refused_unknown() -> String {
    let ps = profiles();
    let step = Step {
        step_type: "frobnicate".into(),
        step_id: "f-1".into(),
        args: vec![],
    };
    let r = step_reply(&step, &ps[0], &ps, &ReplyCtx::default());
    assert_eq!(r.exit_code, REFUSED_EXIT_CODE);
    r.error
}

/// The install step: the disks must exist on this host, the flags be allowed, the images match.
#[test]
fn install_requests_are_checked_like_the_agent() {
    let ps = profiles();
    let c = cluster(&ps);
    let mut h = c.hosts[0].clone();
    h.status = dom::HostStatus::Installing;
    h.role = dom::HostRole::Master;
    let cfg = dom::Config::default();
    let good = dom::install_request(&h, &c, &cfg).unwrap();
    let args = |r: &dom::InstallCmdRequest| vec![serde_json::to_string(r).unwrap()];
    let step = |r: &dom::InstallCmdRequest| Step::new(StepKind::Install, "i-1", args(r));
    check(&step(&good), &ps[0]).unwrap();
    // Another host's disk is not on this one.
    assert!(
        check(&step(&good), &ps[1])
            .unwrap_err()
            .0
            .contains("no disk")
    );
    let mut r = good.clone();
    r.installer_args = r#"["--append-karg","nosmt"]"#.into();
    check(&step(&r), &ps[0]).unwrap();
    r.installer_args = r#"["--firstboot-args","x"]"#.into();
    assert!(check(&step(&r), &ps[0]).is_err());
    r.installer_args = r#""--append-karg""#.into();
    assert!(check(&step(&r), &ps[0]).is_err());
    let mut r = good.clone();
    r.must_gather_image = r#"{"ocp":"quay.io/mg:1","cnv":"quay.io/cnv-mg:1"}"#.into();
    check(&step(&r), &ps[0]).unwrap();
    r.must_gather_image = r#"{"nope":"quay.io/mg:1"}"#.into();
    assert!(check(&step(&r), &ps[0]).is_err());
    let mut r = good.clone();
    r.cluster_id = "c1".into();
    assert!(check(&step(&r), &ps[0]).is_err());
    let mut r = good.clone();
    r.boot_device = "sda".into();
    assert!(check(&step(&r), &ps[0]).is_err());
    let mut r = good.clone();
    r.openshift_version = "four".into();
    assert!(check(&step(&r), &ps[0]).is_err());
    let mut r = good;
    r.controller_image = String::new();
    assert!(check(&step(&r), &ps[0]).is_err());
}

#[test]
fn patterns() {
    for ok in [
        "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64",
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0123abcd",
        "127.0.0.1:5000/ocp/release:4.20.0",
        "Registry.Example.com:443/x/y:TAG",
        "ab",
    ] {
        assert!(is_image(ok), "{ok}");
    }
    for bad in ["", "a", "quay.io/UPPER/x", "x y", "reg:port/x:1"] {
        assert!(!is_image(bad), "{bad}");
    }
    for ok in ["192.168.1.1", "999.1.1.1", "fe80::1", "::1", "::"] {
        assert!(ip_pattern(ok), "{ok}");
    }
    for bad in ["127.0.0.1/8", "1.2.3", "host", "fe80::1%eth0"] {
        assert!(!ip_pattern(bad), "{bad}");
    }
    assert!(free_addresses_pattern("192.168.111.0/24"));
    assert!(free_addresses_pattern("not-a-cidr-but-13"));
    assert!(!free_addresses_pattern("not-a-cidr"));
    assert!(is_mac("02:01:00:00:00:00") && is_mac("02-01-00-00-00-00") && is_mac("0201.0000.0000"));
    assert!(!is_mac("") && !is_mac("02:01:00:00:00"));
    assert!(is_uuid("5A2C8F9E-1B7D-4E3A-9C6F-0D8E7B6A5C4D") && !is_uuid("h1"));
    assert!(is_ntp_source("10.0.0.1") && is_ntp_source("clock.example.com"));
    assert!(!is_ntp_source("x") && !is_ntp_source("-a.com") && !is_ntp_source("Clock"));
    for ok in [
        "4.20.0",
        "v4.20",
        "4.20.0-ec.1",
        "4.20.0-0.nightly-2026-01-01-000000",
        "4.20.0+b1",
    ] {
        assert!(is_version(ok), "{ok}");
    }
    for bad in ["", "four", "4..1", "4.20.0-"] {
        assert!(!is_version(bad), "{bad}");
    }
}
