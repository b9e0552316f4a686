use serde_json::{Value, json};

use super::*;
use assisted_core::domain as dom;

const NET: &str = "192.168.111.0/24";

fn masters() -> Vec<HostProfile> {
    (0..3)
        .map(|i| HostProfile::master_like(i, NET).unwrap())
        .collect()
}

fn step(kind: StepKind, arg: Option<Value>) -> Step {
    Step::new(
        kind,
        &format!("{}-0000abcd", kind.as_str()),
        // A JSON string stands for a bare argument (the inventory's host id).
        arg.map(|a| match a {
            Value::String(s) => s,
            other => other.to_string(),
        })
        .into_iter()
        .collect(),
    )
}

fn reply_of(kind: StepKind, arg: Option<Value>) -> (StepReply, Value) {
    let ms = masters();
    let r = step_reply(&step(kind, arg), &ms[0], &ms, &ReplyCtx::default());
    assert_eq!(r.exit_code, 0, "{}: {}", kind.as_str(), r.error);
    assert_eq!(r.step_type, kind.as_str());
    assert_eq!(r.step_id, format!("{}-0000abcd", kind.as_str()));
    let v = if r.output.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&r.output).unwrap()
    };
    (r, v)
}

/// The reply as the server sees it: through its own request parser.
fn server_view(r: &StepReply) -> dom::StepReply {
    dom::StepReply::parse(serde_json::to_string(r).unwrap().as_bytes()).unwrap()
}

fn conn_request(peers: &[HostProfile]) -> Value {
    Value::Array(
        peers
            .iter()
            .map(|p| {
                json!({"host_id": p.uuid, "nics": p.nics.iter().map(|n| json!({
                    "name": n.name, "mac": n.mac,
                    "ip_addresses": n.ipv4.iter().map(|a| crate::net::strip_prefix_len(a)).collect::<Vec<_>>(),
                })).collect::<Vec<_>>()})
            })
            .collect(),
    )
}

#[test]
fn inventory_reply_parses_on_server() {
    let uuid = masters()[0].uuid.clone();
    let (r, v) = reply_of(StepKind::Inventory, Some(json!(uuid)));
    assert_eq!(v["hostname"], "master-0");
    let inv = dom::Inventory::parse(server_view(&r).output.as_bytes());
    assert_eq!(inv.truncation, dom::inventory::Truncation::None);
    assert_eq!(inv.hostname, "master-0");
    assert_eq!(inv.cpu.count, 4);
    assert_eq!(inv.memory.physical_bytes, 16 * crate::profile::GIB);
    // `lo` first, as every real inventory.
    assert_eq!(inv.interfaces[0].name, "lo");
    assert_eq!(inv.interfaces[0].ipv4_addresses, vec!["127.0.0.1/8"]);
    assert_eq!(inv.interfaces[1].ipv4_addresses, vec!["192.168.111.10/24"]);
    assert!(inv.cpu.flags.iter().any(|f| f == "vmx"));
    assert!(inv.routes.iter().any(|r| r.is_default()));
    let eligible = dom::eligible_disks(&inv, 100).collect::<Vec<_>>();
    assert_eq!(eligible.len(), 1);
    assert_eq!(eligible[0].drive_type, "SSD");
    assert!(inv.has_mac("02:01:00:00:00:00"));
}

#[test]
fn connectivity_reports_known_peers_reachable() {
    let ms = masters();
    let (r, v) = reply_of(StepKind::ConnectivityCheck, Some(conn_request(&ms[1..])));
    let hosts = v["remote_hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[0]["host_id"], ms[1].uuid);
    assert_eq!(hosts[0]["l3_connectivity"][0]["successful"], true);
    assert_eq!(
        hosts[0]["l3_connectivity"][0]["remote_ip_address"],
        "192.168.111.11"
    );
    assert_eq!(
        hosts[0]["l2_connectivity"][0]["remote_mac"],
        ms[1].nics[0].mac
    );
    assert_eq!(
        hosts[0]["l2_connectivity"][0]["outgoing_ip_address"],
        "192.168.111.10"
    );
    assert_eq!(hosts[0]["l2_connectivity"][0]["outgoing_nic"], "ens3");
    let rep: dom::inventory::ConnectivityReport =
        dom::inventory::parse_lenient(server_view(&r).output.as_bytes());
    assert_eq!(rep.remote_hosts.len(), 2);
    assert!(rep.remote_hosts.iter().all(|h| h.l2_ok() && h.l3_ok()));
    assert!(
        rep.remote_hosts[0]
            .mtu_report
            .iter()
            .all(|m| m.mtu_successful)
    );
}

#[test]
fn connectivity_to_unknown_hosts_fails_unless_allowed() {
    let ms = masters();
    let stranger = HostProfile::worker_like(9, NET).unwrap();
    let s = step(StepKind::ConnectivityCheck, Some(conn_request(&[stranger])));
    let r = step_reply(&s, &ms[0], &ms, &ReplyCtx::default());
    let rep: dom::inventory::ConnectivityReport =
        dom::inventory::parse_lenient(r.output.as_bytes());
    assert!(!rep.remote_hosts[0].l3_ok() && !rep.remote_hosts[0].l2_ok());
    let ctx = ReplyCtx {
        reach_unknown_peers: true,
        ..Default::default()
    };
    let r = step_reply(&s, &ms[0], &ms, &ctx);
    let rep: dom::inventory::ConnectivityReport =
        dom::inventory::parse_lenient(r.output.as_bytes());
    assert!(rep.remote_hosts[0].l3_ok());
}

#[test]
fn connectivity_request_must_be_a_list() {
    let ms = masters();
    let r = step_reply(
        &step(StepKind::ConnectivityCheck, Some(json!({"x": 1}))),
        &ms[0],
        &ms,
        &ReplyCtx::default(),
    );
    assert_eq!(r.exit_code, crate::args::REFUSED_EXIT_CODE);
    assert!(r.error.contains("cannot decode"), "{}", r.error);
}

#[test]
fn ntp_reports_one_synced_source() {
    let (r, v) = reply_of(StepKind::NtpSynchronizer, Some(json!({"ntp_source": ""})));
    assert_eq!(v["ntp_sources"][0]["source_name"], "clock.example.com");
    let n: dom::inventory::NtpSynchronizationResponse =
        dom::inventory::parse_lenient(server_view(&r).output.as_bytes());
    assert_eq!(n.ntp_sources.len(), 1);
    assert_eq!(n.ntp_sources[0].source_state, "synced");
    let (_, v) = reply_of(
        StepKind::NtpSynchronizer,
        Some(json!({"ntp_source": "ntp1.lab,ntp2.lab"})),
    );
    assert_eq!(v["ntp_sources"][0]["source_name"], "ntp1.lab");
    // The agent refuses the step without its request.
    let ms = masters();
    let r = step_reply(
        &step(StepKind::NtpSynchronizer, None),
        &ms[0],
        &ms,
        &ReplyCtx::default(),
    );
    assert_eq!(r.exit_code, crate::args::REFUSED_EXIT_CODE);
}

#[test]
fn domain_resolution_resolves_all_but_the_wildcard_probe() {
    let names = [
        "api.test.example.com",
        "api-int.test.example.com",
        "console-openshift-console.apps.test.example.com",
        "validateNoWildcardDNS.test.example.com",
    ];
    let req =
        json!({"domains": names.iter().map(|n| json!({"domain_name": n})).collect::<Vec<_>>()});
    let (r, _) = reply_of(StepKind::DomainResolution, Some(req.clone()));
    let d: dom::inventory::DomainResolutionResponse =
        dom::inventory::parse_lenient(server_view(&r).output.as_bytes());
    assert_eq!(d.resolutions.len(), 4);
    for res in &d.resolutions[..3] {
        assert!(res.resolved(), "{}", res.domain_name);
        assert_eq!(res.ipv4_addresses, vec!["192.168.111.10"]);
    }
    assert!(!d.resolutions[3].resolved());

    let ms = masters();
    let ctx = ReplyCtx {
        api_vips: vec!["192.168.111.5".into()],
        ingress_vips: vec!["192.168.111.6".into()],
        wildcard_dns: true,
        ..Default::default()
    };
    let r = step_reply(
        &step(StepKind::DomainResolution, Some(req)),
        &ms[0],
        &ms,
        &ctx,
    );
    let d: dom::inventory::DomainResolutionResponse =
        dom::inventory::parse_lenient(r.output.as_bytes());
    assert_eq!(d.resolutions[0].ipv4_addresses, vec!["192.168.111.5"]);
    assert_eq!(d.resolutions[1].ipv4_addresses, vec!["192.168.111.5"]);
    assert_eq!(d.resolutions[2].ipv4_addresses, vec!["192.168.111.6"]);
    assert!(d.resolutions[3].resolved());
}

#[test]
fn image_availability_all_pulled() {
    let imgs = ["quay.io/a:1", "quay.io/b:2"];
    let (r, _) = reply_of(
        StepKind::ContainerImageAvailability,
        Some(json!({"images": imgs, "timeout": 960})),
    );
    let c: dom::inventory::ContainerImageAvailabilityResponse =
        dom::inventory::parse_lenient(server_view(&r).output.as_bytes());
    assert_eq!(c.images.len(), 2);
    assert_eq!(c.images[1].name, "quay.io/b:2");
    assert!(
        c.images
            .iter()
            .all(|i| i.result == "success" && i.size_bytes > 0.0 && i.time > 0.0)
    );
}

#[test]
fn disk_speed_is_fast() {
    let ms = masters();
    let s = Step::new(
        StepKind::InstallationDiskSpeedCheck,
        "d-1",
        vec![
            json!({"path": "/dev/disk/by-id/wwn-0x1"}).to_string(),
            "480.00".into(),
        ],
    );
    let r = step_reply(&s, &ms[0], &ms, &ReplyCtx::default());
    assert_eq!(r.exit_code, 0, "{}", r.error);
    let d: dom::inventory::DiskSpeedCheckResponse =
        dom::inventory::parse_lenient(server_view(&r).output.as_bytes());
    assert_eq!(d.io_sync_duration, 5);
    assert_eq!(d.path, "/dev/disk/by-id/wwn-0x1");
}

#[test]
fn free_addresses_exclude_hosts_and_gateway() {
    let (_, v) = reply_of(
        StepKind::FreeNetworkAddresses,
        // The agent's pattern lets a /33 through; the simulator skips what does not parse.
        Some(json!(["192.168.111.0/24", "10.0.0.0/33"])),
    );
    let nets = v.as_array().unwrap();
    assert_eq!(nets.len(), 1);
    assert_eq!(nets[0]["network"], "192.168.111.0/24");
    let free: Vec<&str> = nets[0]["free_addresses"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(free.len(), 254 - 4);
    for used in [
        "192.168.111.1",
        "192.168.111.10",
        "192.168.111.11",
        "192.168.111.12",
    ] {
        assert!(!free.contains(&used), "{used}");
    }
    assert!(free.contains(&"192.168.111.5"));
}

#[test]
fn dhcp_leases_vips_in_the_interface_network() {
    let req = json!({"interface": "ens3", "api_vip_mac": "00:1a:4a:00:00:01",
                     "ingress_vip_mac": "00:1a:4a:00:00:02"});
    let (_, v) = reply_of(StepKind::DhcpLeaseAllocate, Some(req.clone()));
    assert_eq!(v["api_vip_address"], "192.168.111.246");
    assert_eq!(v["ingress_vip_address"], "192.168.111.247");
    assert!(
        v["api_vip_lease"]
            .as_str()
            .unwrap()
            .contains("192.168.111.246")
    );

    let ms = masters();
    let ctx = ReplyCtx {
        api_vips: vec!["10.0.0.1".into(), "192.168.111.5".into()],
        ingress_vips: vec!["192.168.111.6".into()],
        ..Default::default()
    };
    let r = step_reply(
        &step(StepKind::DhcpLeaseAllocate, Some(req)),
        &ms[0],
        &ms,
        &ctx,
    );
    let v: Value = serde_json::from_str(&r.output).unwrap();
    assert_eq!(v["api_vip_address"], "192.168.111.5");
    assert_eq!(v["ingress_vip_address"], "192.168.111.6");

    let bad = json!({"interface": "eth9", "api_vip_mac": "00:1a:4a:00:00:01",
                     "ingress_vip_mac": "00:1a:4a:00:00:02"});
    let r = step_reply(
        &step(StepKind::DhcpLeaseAllocate, Some(bad)),
        &ms[0],
        &ms,
        &ctx,
    );
    assert_eq!(r.exit_code, 1);
    assert!(r.error.contains("eth9"));
}

#[test]
fn api_vip_connectivity_succeeds() {
    let (r, v) = reply_of(
        StepKind::ApiVipConnectivityCheck,
        Some(json!({"url": "http://api.test.example.com:22624/config/worker"})),
    );
    assert_eq!(v["url"], "http://api.test.example.com:22624/config/worker");
    let a: dom::inventory::ApiVipConnectivityResponse =
        dom::inventory::parse_lenient(server_view(&r).output.as_bytes());
    assert!(a.is_success);
    assert!(serde_json::from_str::<Value>(&a.ignition).is_ok());
}

#[test]
fn verify_vips_all_succeeded() {
    let (_, v) = reply_of(
        StepKind::VerifyVips,
        // upstream's verify_vips_request is a bare array
        Some(json!([{"vip": "192.168.111.5", "vip_type": "api"},
                    {"vip": "192.168.111.6", "vip_type": "ingress"}])),
    );
    // and so is its verify_vips_response
    assert_eq!(
        v,
        json!([
            {"vip": "192.168.111.5", "vip_type": "api", "verification": "succeeded"},
            {"vip": "192.168.111.6", "vip_type": "ingress", "verification": "succeeded"}])
    );
}

#[test]
fn tang_succeeds() {
    let (r, _) = reply_of(
        StepKind::TangConnectivityCheck,
        Some(json!({"tang_servers": "[{\"url\":\"http://tang\"}]"})),
    );
    let t: dom::inventory::TangConnectivityResponse =
        dom::inventory::parse_lenient(server_view(&r).output.as_bytes());
    assert!(t.is_success);
}

#[test]
fn upgrade_agent_reports_success() {
    let (_, v) = reply_of(
        StepKind::UpgradeAgent,
        Some(json!({"agent_image": "quay.io/agent:2"})),
    );
    assert_eq!(
        v,
        json!({"agent_image": "quay.io/agent:2", "result": "success"})
    );
}

#[test]
fn plain_steps_exit_zero_with_empty_output() {
    let id = masters()[0].uuid.clone();
    for (kind, arg) in [
        (StepKind::StopInstallation, None),
        (
            StepKind::LogsGather,
            Some(json!({"cluster_id": id, "host_id": id, "infra_env_id": id,
                        "bootstrap": false, "installer_gather": true, "master_ips": []})),
        ),
        (
            StepKind::DownloadBootArtifacts,
            Some(
                json!({"host_fs_mount_dir": "/host", "initrd_url": "http://x/initrd",
                        "kernel_url": "http://x/kernel", "rootfs_url": "http://x/rootfs"}),
            ),
        ),
        (
            StepKind::RebootForReclaim,
            Some(json!({"host_fs_mount_dir": "/host"})),
        ),
    ] {
        let (r, v) = reply_of(kind, arg);
        assert!(r.output.is_empty() && v.is_null(), "{}", kind.as_str());
        let s = server_view(&r);
        assert_eq!(s.exit_code, 0);
        assert_eq!(s.step_type, kind.as_str());
    }
}

#[test]
fn every_step_type_is_known_to_the_server() {
    for kind in StepKind::ALL {
        assert_eq!(
            dom::StepType::parse(kind.as_str()).map(|t| t.as_str()),
            Some(kind.as_str())
        );
    }
}

#[test]
fn injected_failures() {
    let ms = masters();
    let s = Step::new(
        StepKind::InstallationDiskSpeedCheck,
        "d-1",
        vec![json!({"path": "/dev/sda"}).to_string(), "480.00".into()],
    );
    let ctx = ReplyCtx {
        failing_steps: [StepKind::InstallationDiskSpeedCheck].into_iter().collect(),
        ..Default::default()
    };
    let r = step_reply(&s, &ms[0], &ms, &ctx);
    assert_eq!(r.exit_code, 1);
    assert!(r.error.contains("simulated"));
    let ctx = ReplyCtx {
        media_disconnected: true,
        ..Default::default()
    };
    let r = step_reply(&s, &ms[0], &ms, &ctx);
    assert_eq!(server_view(&r).exit_code, dom::MEDIA_DISCONNECTED_EXIT_CODE);
    let unknown = Step {
        step_type: "frobnicate".into(),
        step_id: "f-1".into(),
        args: vec![],
    };
    let r = step_reply(&unknown, &ms[0], &ms, &ReplyCtx::default());
    assert_eq!(r.exit_code, crate::args::REFUSED_EXIT_CODE);
    assert!(r.error.contains("frobnicate"));
}
