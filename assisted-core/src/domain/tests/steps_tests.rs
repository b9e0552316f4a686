//! Next-steps per host state, request documents, step ids and step replies.

use super::fixtures::*;
use crate::domain::*;

use HostStatus as S;
use StepType as T;

fn steps_for(c: &ClusterSnapshot, i: usize, cfg: &Config) -> Steps {
    next_steps(&NextStepsInput {
        host: &c.hosts[i],
        cluster: Some(c),
        cfg,
        seed: 42,
        boot_artifacts: None,
        connectivity_check: true,
    })
}

fn types(s: &Steps) -> Vec<StepType> {
    s.instructions.iter().map(|i| i.step_type).collect()
}

fn in_state(st: HostStatus) -> ClusterSnapshot {
    let mut c = cluster_3_2_with_hosts(t0());
    c.hosts[0].status = st;
    c
}

#[test]
fn known_host_discovery_steps() {
    let cfg = Config::default();
    let s = steps_for(&in_state(S::Known), 0, &cfg);
    assert_eq!(
        types(&s),
        vec![
            T::ConnectivityCheck,
            T::FreeNetworkAddresses,
            T::Inventory,
            T::NtpSynchronizer,
            T::DomainResolution,
            T::VerifyVips
        ]
    );
    assert_eq!(
        (s.next_instruction_seconds, s.post_step_action),
        (60, PostStepAction::Continue)
    );
    // Same set for insufficient and pending-for-input.
    assert_eq!(
        types(&steps_for(&in_state(S::Insufficient), 0, &cfg)),
        types(&s)
    );
    assert_eq!(
        types(&steps_for(&in_state(S::PendingForInput), 0, &cfg)),
        types(&s)
    );
    // verify-vips takes upstream's `verify_vips_request`: a bare array, not an object.
    let vips: serde_json::Value = serde_json::from_str(&s.instructions[5].args[0]).unwrap();
    assert_eq!(
        vips,
        serde_json::json!([
            {"vip": "192.168.1.100", "vip_type": "api"},
            {"vip": "192.168.1.101", "vip_type": "ingress"}
        ])
    );
    let peers: Vec<ConnectivityCheckHost> =
        serde_json::from_str(&s.instructions[0].args[0]).unwrap();
    assert_eq!(peers.len(), 4);
    assert_eq!(peers[0].nics[0].ip_addresses, vec!["192.168.1.12"]);
    let free: Vec<String> = serde_json::from_str(&s.instructions[1].args[0]).unwrap();
    assert_eq!(free, vec!["192.168.1.0/24"]);
    assert_eq!(s.instructions[2].args, vec!["h1".to_string()]);
    let dr: DomainResolutionRequest = serde_json::from_str(&s.instructions[4].args[0]).unwrap();
    assert_eq!(dr.domains[0].domain_name, "api.test.example.com");
}

#[test]
fn step_ids_are_type_dash_8_hex_and_deterministic() {
    let cfg = Config::default();
    let c = in_state(S::Known);
    let a = steps_for(&c, 0, &cfg);
    let b = steps_for(&c, 0, &cfg);
    assert_eq!(a, b);
    for s in &a.instructions {
        let (ty, hex) = s.step_id.rsplit_once('-').unwrap();
        assert_eq!(ty, s.step_type.as_str());
        assert_eq!(hex.len(), 8);
        assert!(
            hex.chars()
                .all(|ch| ch.is_ascii_hexdigit() && !ch.is_ascii_uppercase())
        );
    }
    assert_ne!(
        step_id(T::Inventory, "h1", 1, 0),
        step_id(T::Inventory, "h1", 2, 0)
    );
}

#[test]
fn discovering_disconnected_and_terminal_states() {
    let cfg = Config::default();
    assert_eq!(
        types(&steps_for(&in_state(S::Discovering), 0, &cfg)),
        vec![T::Inventory]
    );
    let d = steps_for(&in_state(S::Disconnected), 0, &cfg);
    assert_eq!(
        (types(&d), d.next_instruction_seconds),
        (vec![T::Inventory], 120)
    );
    for st in [
        S::Installed,
        S::InstallingPendingUserAction,
        S::AddedToExistingCluster,
    ] {
        assert!(
            steps_for(&in_state(st), 0, &cfg).instructions.is_empty(),
            "{st}"
        );
    }
    let e = steps_for(&in_state(S::Cancelled), 0, &cfg);
    assert_eq!(
        (types(&e), e.next_instruction_seconds),
        (vec![T::LogsGather, T::StopInstallation], 120)
    );
    let mut c = in_state(S::Error);
    c.hosts[0].logs_state = LogsState::Completed;
    assert_eq!(types(&steps_for(&c, 0, &cfg)), vec![T::StopInstallation]);
    for st in [S::Binding, S::Unbinding, S::UnbindingPendingUserAction] {
        let s = steps_for(&in_state(st), 0, &cfg);
        assert_eq!(
            (s.instructions.len(), s.post_step_action),
            (0, PostStepAction::Exit),
            "{st}"
        );
    }
}

#[test]
fn preparing_steps() {
    let cfg = Config::default();
    let s = steps_for(&in_state(S::PreparingForInstallation), 0, &cfg);
    assert_eq!(
        types(&s),
        vec![T::InstallationDiskSpeedCheck, T::ContainerImageAvailability]
    );
    let ds: DiskSpeedCheckRequest = serde_json::from_str(&s.instructions[0].args[0]).unwrap();
    assert_eq!(ds.path, "/dev/disk/by-id/wwn-0x01");
    let img: serde_json::Value = serde_json::from_str(&s.instructions[1].args[0]).unwrap();
    assert_eq!(img["timeout"], 960);
    assert_eq!(
        img["images"][0],
        "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"
    );
    // DHCP VIP allocation adds the dhcp step.
    let mut c = in_state(S::PreparingForInstallation);
    c.vip_dhcp_allocation = true;
    assert_eq!(types(&steps_for(&c, 0, &cfg))[0], T::DhcpLeaseAllocate);
}

#[test]
fn install_step_document() {
    let cfg = Config::default();
    let mut c = in_state(S::Installing);
    c.hosts[0].role = HostRole::Master;
    c.hosts[0].bootstrap = true;
    let s = steps_for(&c, 0, &cfg);
    assert_eq!(types(&s), vec![T::Install]);
    let v: serde_json::Value = serde_json::from_str(&s.instructions[0].args[0]).unwrap();
    for key in [
        "cluster_id",
        "infra_env_id",
        "host_id",
        "role",
        "boot_device",
        "controller_image",
        "installer_image",
        "control_plane_count",
        "check_cvo",
        "disks_to_format",
        "must_gather_image",
        "mco_image",
        "openshift_version",
        "service_ips",
        "high_availability_mode",
        "skip_installation_disk_cleanup",
        "enable_skip_mco_reboot",
        "notify_num_reboots",
        "coreos_image",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["role"], "bootstrap");
    assert_eq!(v["boot_device"], "/dev/disk/by-id/wwn-0x01");
    assert_eq!(v["control_plane_count"], 3);
    assert_eq!(v["high_availability_mode"], "Full");
    assert!(
        v.get("installer_args").is_none(),
        "omitted when the host has none"
    );
    // The Agent's installerArgs reach the install command as upstream's string.
    c.hosts[0].installer_args = Some(r#"["--append-karg","ip=dhcp"]"#.into());
    let s = steps_for(&c, 0, &cfg);
    let v: serde_json::Value = serde_json::from_str(&s.instructions[0].args[0]).unwrap();
    assert_eq!(v["installer_args"], r#"["--append-karg","ip=dhcp"]"#);
    assert_eq!(
        types(&steps_for(&in_state(S::InstallingInProgress), 0, &cfg)),
        Vec::<StepType>::new()
    );
}

#[test]
fn day2_steps() {
    let cfg = Config::default();
    let mut c = cluster_3_2(t0());
    c.status = ClusterStatus::AddingHosts;
    c.kind = ClusterKind::AddHostsCluster;
    c.hosts.push(host("d1", 60, &c, t0()));
    c.hosts[0].status = S::Known;
    let s = steps_for(&c, 0, &cfg);
    let t = types(&s);
    assert!(t.contains(&T::ApiVipConnectivityCheck));
    assert!(!t.contains(&T::FreeNetworkAddresses) && !t.contains(&T::DhcpLeaseAllocate));
    let i = t
        .iter()
        .position(|x| *x == T::ApiVipConnectivityCheck)
        .unwrap();
    let req: ApiVipConnectivityRequest = serde_json::from_str(&s.instructions[i].args[0]).unwrap();
    assert_eq!(req.url, "http://api.test.example.com:22624/config/worker");
    c.ignition_endpoint.ca_certificate = Some("PEM".into());
    assert_eq!(
        day2_ignition_url(&c, "worker"),
        "https://api-int.test.example.com:22623/config/worker"
    );
}

/// A day-2 control-plane host (assisted-service allows `master` on day-2 hosts): it checks the
/// master pool's ignition and installs as `master`; without a role it is a worker.
#[test]
fn day2_master_steps() {
    let cfg = Config::default();
    let mut c = cluster_3_2_with_hosts(t0());
    c.status = ClusterStatus::AddingHosts;
    c.kind = ClusterKind::AddHostsCluster;
    let h = &mut c.hosts[0];
    h.kind = HostKind::AddToExistingClusterHost;
    h.status = S::Known;
    h.role = HostRole::Master;
    h.machine_config_pool = Some("master".into());
    assert_eq!(h.day2_role(), HostRole::Master);
    let s = steps_for(&c, 0, &cfg);
    let i = types(&s)
        .iter()
        .position(|x| *x == T::ApiVipConnectivityCheck)
        .unwrap();
    let req: ApiVipConnectivityRequest = serde_json::from_str(&s.instructions[i].args[0]).unwrap();
    assert!(req.url.ends_with("/config/master"), "{}", req.url);
    c.hosts[0].status = S::Installing;
    let s = steps_for(&c, 0, &cfg);
    let v: serde_json::Value = serde_json::from_str(&s.instructions[0].args[0]).unwrap();
    assert_eq!(v["role"], "master");
    c.hosts[0].role = HostRole::AutoAssign;
    assert_eq!(c.hosts[0].day2_role(), HostRole::Worker);
}

#[test]
fn pool_reclaim_and_upgrade_steps() {
    let mut cfg = Config::default();
    let mut h = HostSnapshot::new_registered("p1", "e", None, t0());
    let input = |h: &HostSnapshot, cfg: &Config| {
        next_steps(&NextStepsInput {
            host: h,
            cluster: None,
            cfg,
            seed: 1,
            boot_artifacts: None,
            connectivity_check: true,
        })
    };
    assert_eq!(
        types(&input(&h, &cfg)),
        vec![T::Inventory, T::NtpSynchronizer]
    );
    cfg.enable_upgrade_agent = true;
    cfg.agent_image = "quay.io/agent:new".into();
    assert_eq!(types(&input(&h, &cfg)), vec![T::UpgradeAgent]);
    h.discovery_agent_version = "quay.io/agent:new".into();
    cfg.disabled_steps = vec![T::NtpSynchronizer];
    assert_eq!(types(&input(&h, &cfg)), vec![T::Inventory]);
    h.status = S::ReclaimingRebooting;
    let s = input(&h, &cfg);
    assert_eq!(
        (types(&s), s.post_step_action),
        (vec![T::RebootForReclaim], PostStepAction::Exit)
    );
    h.status = S::Reclaiming;
    let urls = BootArtifactUrls {
        kernel_url: "k".into(),
        initrd_url: "i".into(),
        rootfs_url: "r".into(),
    };
    let s = next_steps(&NextStepsInput {
        host: &h,
        cluster: None,
        cfg: &cfg,
        seed: 1,
        boot_artifacts: Some(&urls),
        connectivity_check: true,
    });
    assert_eq!(types(&s), vec![T::DownloadBootArtifacts]);
}

#[test]
fn a_disabled_upgrade_step_leaves_the_normal_steps() {
    let cfg = Config {
        enable_upgrade_agent: true,
        agent_image: "quay.io/agent:new".into(),
        disabled_steps: vec![T::UpgradeAgent],
        ..Config::default()
    };
    let h = HostSnapshot::new_registered("p1", "e", None, t0());
    let s = next_steps(&NextStepsInput {
        host: &h,
        cluster: None,
        cfg: &cfg,
        seed: 1,
        boot_artifacts: None,
        connectivity_check: true,
    });
    // Was an empty answer: the upgrade replaced every step, then the filter removed it.
    assert_eq!(types(&s), vec![T::Inventory, T::NtpSynchronizer]);
}

#[test]
fn only_the_discovery_states_carry_the_connectivity_check() {
    let carrying: Vec<S> = [
        S::Discovering,
        S::Known,
        S::Insufficient,
        S::PendingForInput,
        S::Disconnected,
        S::PreparingForInstallation,
        S::Installing,
        S::InstallingInProgress,
        S::Installed,
        S::Error,
    ]
    .into_iter()
    .filter(|s| state_carries_connectivity_check(*s))
    .collect();
    assert_eq!(
        carrying,
        vec![S::Known, S::Insufficient, S::PendingForInput]
    );
}

#[test]
fn steps_json_wire_shape() {
    let s = steps_for(&in_state(S::Discovering), 0, &Config::default());
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["next_instruction_seconds"], 60);
    assert_eq!(v["post_step_action"], "continue");
    assert_eq!(v["instructions"][0]["step_type"], "inventory");
    assert!(
        v["instructions"][0]["step_id"]
            .as_str()
            .unwrap()
            .starts_with("inventory-")
    );
}

#[test]
fn step_replies() {
    let cfg = Config::default();
    let mut h = cluster_3_2_with_hosts(t0()).hosts[0].clone();
    let r = StepReply::parse(br#"{"step_type":"inventory","step_id":"inventory-1","exit_code":256,"output":"","error":"io"}"#).unwrap();
    assert!(apply_step_reply(&mut h, &r, &cfg).media_disconnected);
    let r = StepReply {
        step_type: "installation-disk-speed-check".into(),
        exit_code: 0,
        output: r#"{"io_sync_duration": 25}"#.into(),
        ..Default::default()
    };
    apply_step_reply(&mut h, &r, &cfg);
    assert_eq!(h.disk_speed, DiskSpeed::Insufficient);
    let r = StepReply {
        step_type: "installation-disk-speed-check".into(),
        exit_code: 0,
        output: r#"{"io_sync_duration": 10}"#.into(),
        ..Default::default()
    };
    apply_step_reply(&mut h, &r, &cfg);
    assert_eq!(h.disk_speed, DiskSpeed::Sufficient);
    let r = StepReply {
        step_type: "bogus".into(),
        ..Default::default()
    };
    assert!(apply_step_reply(&mut h, &r, &cfg).error.is_some());
    let r = StepReply {
        step_type: "inventory".into(),
        output: "{not json".into(),
        ..Default::default()
    };
    apply_step_reply(&mut h, &r, &cfg);
    assert_eq!(
        h.inventory.as_ref().unwrap().truncation,
        inventory::Truncation::Full
    );
    assert!(StepReply::parse(b"[1,2]").is_none());
}

#[test]
fn media_disconnect_flow() {
    // exit code 256 → MediaDisconnect event → disconnected, and refresh keeps it there.
    let cfg = Config::default();
    let c = in_state(S::Known);
    let mut h = c.hosts[0].clone();
    let out = apply_host_event(&h, Some(&c), &HostEvent::MediaDisconnect, t0(), &cfg).unwrap();
    apply_host_outcome(&mut h, &out, t0());
    assert!(!h.media_connected);
    let out = refresh_host(&h, Some(&c), t0(), &cfg);
    assert_eq!(out.status, S::Disconnected);
    // Re-registering (the ISO is back) restores media and rediscovers.
    let out = apply_host_event(&h, Some(&c), &HostEvent::Register, t0(), &cfg).unwrap();
    apply_host_outcome(&mut h, &out, t0());
    assert!(h.media_connected && h.inventory.is_none());
}

#[test]
fn orchestration_helpers() {
    let cfg = Config::default();
    let mut c = cluster_3_2_with_hosts(t0());
    // Weak hosts are not picked as masters.
    c.hosts[0].inventory.as_mut().unwrap().cpu.count = 2;
    let roles = suggest_roles(&c, &cfg);
    let r = |id: &str| roles.iter().find(|(h, _)| *h == id).unwrap().1;
    assert_eq!(r("h1"), HostRole::Worker);
    assert_eq!([r("h2"), r("h3"), r("h4")], [HostRole::Master; 3]);
    assert!(!schedulable_masters_forced_true(&c, &cfg));
    c.hosts.truncate(4);
    assert!(
        schedulable_masters_forced_true(&c, &cfg),
        "one worker: masters must be schedulable"
    );
    let cfg2 = Config {
        bootstrap_host_mac: Some("52:54:00:00:00:0C".into()),
        ..Default::default()
    };
    let roles: Vec<(String, HostRole)> = suggest_roles(&c, &cfg)
        .into_iter()
        .map(|(a, b)| (a.to_string(), b))
        .collect();
    assert_eq!(select_bootstrap(&c, &roles, &cfg), Some("h4"));
    assert_eq!(select_bootstrap(&c, &roles, &cfg2), Some("h2"));
}

#[test]
fn auto_start_rule() {
    let cfg = Config::default();
    let mut c = cluster_3_2_with_hosts(t0());
    c.status = ClusterStatus::Ready;
    let p = AutoStartParams::default();
    assert!(auto_start_day1(&c, &p, &cfg).start);
    let held = AutoStartParams {
        hold: true,
        ..Default::default()
    };
    assert_eq!(
        auto_start_day1(&c, &held, &cfg).reason,
        RequirementsReason::InstallationOnHold
    );
    let unsynced = AutoStartParams {
        unsynced_agents: 1,
        ..Default::default()
    };
    assert_eq!(
        auto_start_day1(&c, &unsynced, &cfg).reason,
        RequirementsReason::UnsyncedAgents
    );
    let spec_unsynced = AutoStartParams {
        spec_unsynced: true,
        ..Default::default()
    };
    let d = auto_start_day1(&c, &spec_unsynced, &cfg);
    assert_eq!(d.reason, RequirementsReason::ClusterNotReady);
    assert!(
        !d.start && d.message.contains("SpecSynced"),
        "{}",
        d.message
    );
    c.hosts[1].approved = false;
    let d = auto_start_day1(&c, &p, &cfg);
    assert_eq!(
        (d.reason, d.message.as_str()),
        (
            RequirementsReason::UnapprovedAgents,
            "The installation is pending on the approval of 1 agents"
        )
    );
    c.hosts[1].approved = true;
    c.worker_count = 3;
    let d = auto_start_day1(&c, &p, &cfg);
    assert_eq!(d.reason, RequirementsReason::InsufficientAgents);
    assert!(d.message.starts_with("The cluster currently requires exactly 3 master agents, 0 arbiter agents and 3 worker agents"));
    c.worker_count = 2;
    for h in c.hosts.iter_mut().take(3) {
        h.role = HostRole::Worker;
    }
    assert_eq!(
        auto_start_day1(&c, &p, &cfg).reason,
        RequirementsReason::InsufficientAgents,
        "role counts must match"
    );
    for h in c.hosts.iter_mut() {
        h.role = HostRole::AutoAssign;
    }
    c.status = ClusterStatus::Insufficient;
    assert_eq!(
        auto_start_day1(&c, &p, &cfg).reason,
        RequirementsReason::ClusterNotReady
    );
    c.status = ClusterStatus::Installing;
    assert_eq!(
        auto_start_day1(&c, &p, &cfg).reason,
        RequirementsReason::ClusterAlreadyInstalling
    );
    c.status = ClusterStatus::Insufficient;
    assert!(
        start_install(&c, t0(), &cfg).is_err(),
        "only a ready cluster starts"
    );
}

#[test]
fn step_replies_are_checked_as_upstream_checks_them() {
    use crate::domain::step_reply::{StepReply, StepReplyError as E};
    let parse = |body: &str| StepReply::parse_checked(body.as_bytes());
    // (body, expected error; None = accepted)
    let rows: [(&str, Option<E>); 7] = [
        (
            r#"{"step_type":"inventory","exit_code":0,"output":"{}"}"#,
            None,
        ),
        (
            r#"{"step_type":"inventory","exit_code":1,"output":"","error":"boom"}"#,
            None,
        ),
        (
            r#"{"step_type":"free-network-addresses","exit_code":0,"output":"[]"}"#,
            None,
        ),
        ("[1]", Some(E::NotAnObject)),
        (
            r#"{"step_type":"nope","exit_code":0}"#,
            Some(E::UnknownStepType("nope".into())),
        ),
        (
            r#"{"step_type":"inventory","exit_code":9223372036854775808}"#,
            Some(E::BadExitCode),
        ),
        (
            r#"{"step_type":"inventory","exit_code":0,"output":"\"x\""}"#,
            Some(E::InventoryNotAnObject),
        ),
    ];
    for (body, expected) in rows {
        assert_eq!(parse(body).err(), expected, "{body}");
    }
    assert!(E::UnknownStepType("x".into()).is_validation());
    assert!(!E::BadExitCode.is_validation());
}

/// As upstream's logs command: `installer_gather` is always true, and only the bootstrap host
/// gets the other masters' addresses.
#[test]
fn logs_gather_request_follows_upstream() {
    let cfg = Config::default();
    let mut c = in_state(S::Error);
    for h in c.hosts.iter_mut().take(3) {
        h.role = HostRole::Master;
    }
    c.hosts[0].bootstrap = true;
    c.hosts[1].status = S::Error;
    let args = |c: &ClusterSnapshot, i: usize| -> serde_json::Value {
        let s = steps_for(c, i, &cfg);
        let step = s
            .instructions
            .iter()
            .find(|s| s.step_type == T::LogsGather)
            .expect("a logs-gather step");
        serde_json::from_str(&step.args[0]).unwrap()
    };
    let bootstrap = args(&c, 0);
    assert_eq!(bootstrap["installer_gather"], true);
    assert_eq!(bootstrap["bootstrap"], true);
    let ips = bootstrap["master_ips"].as_array().unwrap();
    assert_eq!(ips.len(), 2, "the two other masters: {ips:?}");
    let other = args(&c, 1);
    assert_eq!(other["installer_gather"], true);
    assert_eq!(other["bootstrap"], false);
    assert!(
        other["master_ips"].as_array().is_none_or(|a| a.is_empty()),
        "{other}"
    );
}

/// The agent refuses a disk speed check without its second argument, the timeout in seconds
/// with two decimals (upstream sends its 8-minute default as `480.00`).
#[test]
fn disk_speed_check_sends_request_and_timeout() {
    let s = steps_for(
        &in_state(S::PreparingForInstallation),
        0,
        &Config::default(),
    );
    let step = &s.instructions[0];
    assert_eq!(step.step_type, T::InstallationDiskSpeedCheck);
    assert_eq!(
        step.args,
        [r#"{"path":"/dev/disk/by-id/wwn-0x01"}"#, "480.00"]
    );
    assert_eq!(disk_speed_check_args("/dev/sda")[1], "480.00");
}

fn ntp_arg(s: &Steps) -> String {
    let step = s
        .instructions
        .iter()
        .find(|i| i.step_type == T::NtpSynchronizer)
        .expect("an NTP step");
    let req: NtpSynchronizationRequest = serde_json::from_str(&step.args[0]).unwrap();
    req.ntp_source
}

/// Without sources of the cluster's own, the NTP step asks for the union of the sources of
/// the InfraEnvs the cluster's hosts booted from; the cluster's own win when it has some; an
/// unbound host gets its InfraEnv's.
#[test]
fn ntp_step_falls_back_to_the_infra_envs_sources() {
    let cfg = Config::default();
    let mut c = in_state(S::Known);
    c.hosts[1].infra_env_id = "infra-2".into();
    let by_ie = NtpSourcesByInfraEnv::from([
        (
            "infra-1".to_string(),
            vec!["clock.example.com".to_string(), "10.0.0.1".to_string()],
        ),
        (
            "infra-2".to_string(),
            vec!["10.0.0.1, ntp.example.org".to_string()],
        ),
        (
            "infra-other".to_string(),
            vec!["elsewhere.example.com".to_string()],
        ),
    ]);
    let steps = |c: &ClusterSnapshot, h: Option<&HostSnapshot>| {
        next_steps_with_ntp(
            &NextStepsInput {
                host: h.unwrap_or(&c.hosts[0]),
                cluster: h.is_none().then_some(c),
                cfg: &cfg,
                seed: 1,
                boot_artifacts: None,
                connectivity_check: true,
            },
            &by_ie,
        )
    };
    assert_eq!(
        ntp_arg(&steps(&c, None)),
        "clock.example.com,10.0.0.1,ntp.example.org"
    );
    c.additional_ntp_source = "cluster.example.com".into();
    assert_eq!(ntp_arg(&steps(&c, None)), "cluster.example.com");

    let mut unbound = HostSnapshot::new_registered("u1", "infra-2", None, t0());
    unbound.status = S::KnownUnbound;
    assert_eq!(
        ntp_arg(&steps(&c, Some(&unbound))),
        "10.0.0.1,ntp.example.org"
    );
    unbound.infra_env_id = "infra-none".into();
    assert_eq!(ntp_arg(&steps(&c, Some(&unbound))), "");
}
