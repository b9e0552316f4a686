//! A test per validation, including hardware-table boundary values.

use super::fixtures::*;
use crate::domain::inventory::*;
use crate::domain::*;

use HostValidationId as H;
use ValidationStatus::*;

fn hv(c: &ClusterSnapshot, id: HostValidationId) -> ValidationStatus {
    validate_host(&c.hosts[0], Some(c), t0(), &Config::default())
        .status(id)
        .unwrap()
}

/// Base 3+2 cluster; `f` tweaks host h1 and the cluster.
fn with(f: impl FnOnce(&mut HostSnapshot, &mut ClusterSnapshot)) -> ClusterSnapshot {
    let mut c = cluster_3_2_with_hosts(t0());
    let mut h = c.hosts[0].clone();
    f(&mut h, &mut c);
    c.hosts[0] = h;
    c
}

fn inv(h: &mut HostSnapshot) -> &mut Inventory {
    h.inventory.as_mut().unwrap()
}

fn cv(c: &ClusterSnapshot, id: ClusterValidationId) -> ValidationStatus {
    validate_cluster(c, &Config::default()).status(id).unwrap()
}

macro_rules! host_validation_tests {
    ($($test:ident: $id:ident => $body:block)+) => {
        $(#[test] fn $test() $body)+
        const TESTED: &[HostValidationId] = &[$(H::$id),+];
    };
}

host_validation_tests! {
    connected: Connected => {
        assert_eq!(hv(&with(|_, _| {}), H::Connected), Success);
        assert_eq!(hv(&with(|h, _| h.checked_in_at = Some(mins(t0(), -3))), H::Connected), Success);
        assert_eq!(hv(&with(|h, _| h.checked_in_at = Some(mins(t0(), -4))), H::Connected), Failure);
        // The bootstrap host gets 2 extra minutes; rebooted hosts are never disconnected.
        assert_eq!(hv(&with(|h, _| { h.checked_in_at = Some(mins(t0(), -4)); h.bootstrap = true; }), H::Connected), Success);
        assert_eq!(hv(&with(|h, _| {
            h.checked_in_at = Some(mins(t0(), -40));
            h.progress.current_stage = Some(HostStage::Rebooting);
        }), H::Connected), Success);
    }
    media_connected: MediaConnected => {
        assert_eq!(hv(&with(|_, _| {}), H::MediaConnected), Success);
        assert_eq!(hv(&with(|h, _| h.media_connected = false), H::MediaConnected), Failure);
    }
    has_inventory: HasInventory => {
        assert_eq!(hv(&with(|_, _| {}), H::HasInventory), Success);
        assert_eq!(hv(&with(|h, _| h.inventory = None), H::HasInventory), Failure);
    }
    partially_truncated: InventoryNotPartiallyTruncated => {
        assert_eq!(hv(&with(|_, _| {}), H::InventoryNotPartiallyTruncated), Success);
        assert_eq!(hv(&with(|h, _| inv(h).truncation = Truncation::Partial), H::InventoryNotPartiallyTruncated), Failure);
    }
    fully_truncated: InventoryNotFullyTruncated => {
        assert_eq!(hv(&with(|_, _| {}), H::InventoryNotFullyTruncated), Success);
        assert_eq!(hv(&with(|h, _| h.inventory = Some(Inventory::parse(b"{\"cpu\":"))), H::InventoryNotFullyTruncated), Failure);
    }
    min_cpu: HasMinCpuCores => {
        // Any-role minimum is the worker's 2 cores.
        assert_eq!(hv(&with(|h, _| inv(h).cpu.count = 2), H::HasMinCpuCores), Success);
        assert_eq!(hv(&with(|h, _| inv(h).cpu.count = 1), H::HasMinCpuCores), Failure);
    }
    min_memory: HasMinMemory => {
        // 8 GiB minus the 100 MiB tolerance passes; one byte less fails.
        let edge = 8 * GIB - (100 << 20);
        assert_eq!(hv(&with(|h, _| inv(h).memory.physical_bytes = edge), H::HasMinMemory), Success);
        assert_eq!(hv(&with(|h, _| inv(h).memory.physical_bytes = edge - 1), H::HasMinMemory), Failure);
        // meminfo measurements get another 2%.
        assert_eq!(hv(&with(|h, _| {
            inv(h).memory.physical_bytes = edge - 100 * (1 << 20);
            inv(h).memory.physical_bytes_method = "meminfo".into();
        }), H::HasMinMemory), Success);
    }
    min_disks: HasMinValidDisks => {
        assert_eq!(hv(&with(|h, _| inv(h).disks[0].size_bytes = 100_000_000_000), H::HasMinValidDisks), Success);
        assert_eq!(hv(&with(|h, _| inv(h).disks[0].size_bytes = 99_999_999_999), H::HasMinValidDisks), Failure);
        assert_eq!(hv(&with(|h, _| inv(h).disks[0].drive_type = "ODD".into()), H::HasMinValidDisks), Failure);
        assert_eq!(hv(&with(|h, _| inv(h).disks[0].holders = "dm-0".into()), H::HasMinValidDisks), Failure);
        assert_eq!(hv(&with(|h, _| inv(h).disks[0].installation_eligibility.eligible = false), H::HasMinValidDisks), Failure);
        assert_eq!(hv(&with(|h, _| inv(h).disks.clear()), H::HasMinValidDisks), Failure);
    }
    machine_cidr_defined: MachineCidrDefined => {
        assert_eq!(hv(&with(|_, _| {}), H::MachineCidrDefined), Success);
        assert_eq!(hv(&with(|_, c| c.machine_networks.clear()), H::MachineCidrDefined), Failure);
        assert_eq!(hv(&with(|_, c| { c.machine_networks.clear(); c.user_managed_networking = true; }), H::MachineCidrDefined), Success);
    }
    cpu_for_role: HasCpuCoresForRole => {
        assert_eq!(hv(&with(|h, _| { h.role = HostRole::Master; inv(h).cpu.count = 4; }), H::HasCpuCoresForRole), Success);
        assert_eq!(hv(&with(|h, _| { h.role = HostRole::Master; inv(h).cpu.count = 3; }), H::HasCpuCoresForRole), Failure);
        assert_eq!(hv(&with(|h, _| { h.role = HostRole::Worker; inv(h).cpu.count = 2; }), H::HasCpuCoresForRole), Success);
        assert_eq!(hv(&with(|h, _| { h.role = HostRole::Arbiter; inv(h).cpu.count = 2; }), H::HasCpuCoresForRole), Success);
    }
    memory_for_role: HasMemoryForRole => {
        let edge = 16 * GIB - (100 << 20);
        assert_eq!(hv(&with(|h, _| { h.role = HostRole::Master; inv(h).memory.physical_bytes = edge; }), H::HasMemoryForRole), Success);
        assert_eq!(hv(&with(|h, _| { h.role = HostRole::Master; inv(h).memory.physical_bytes = edge - 1; }), H::HasMemoryForRole), Failure);
        assert_eq!(hv(&with(|h, _| { h.role = HostRole::Worker; inv(h).memory.physical_bytes = 8 * GIB; }), H::HasMemoryForRole), Success);
    }
    hostname_unique: HostnameUnique => {
        assert_eq!(hv(&with(|_, _| {}), H::HostnameUnique), Success);
        assert_eq!(hv(&with(|h, _| h.requested_hostname = Some("h2".into())), H::HostnameUnique), Failure);
    }
    hostname_valid: HostnameValid => {
        assert_eq!(hv(&with(|_, _| {}), H::HostnameValid), Success);
        for bad in ["localhost", "Upper", "-x", "a..b", &"a".repeat(64)] {
            assert_eq!(hv(&with(|h, _| h.requested_hostname = Some(bad.to_string())), H::HostnameValid), Failure, "{bad}");
        }
        assert_eq!(hv(&with(|h, _| h.requested_hostname = Some("master-0.lab.example".into())), H::HostnameValid), Success);
    }
    belongs_to_machine_cidr: BelongsToMachineCidr => {
        assert_eq!(hv(&with(|_, _| {}), H::BelongsToMachineCidr), Success);
        assert_eq!(hv(&with(|h, _| inv(h).interfaces[0].ipv4_addresses = vec!["10.0.0.5/24".into()]), H::BelongsToMachineCidr), Failure);
    }
    ignition_downloadable: IgnitionDownloadable => {
        assert_eq!(hv(&with(|_, _| {}), H::IgnitionDownloadable), Success);
        let day2 = |ok: Option<bool>| with(move |h, _| { h.kind = HostKind::AddToExistingClusterHost; h.api_vip_connectivity = ok; });
        assert_eq!(hv(&day2(Some(true)), H::IgnitionDownloadable), Success);
        assert_eq!(hv(&day2(Some(false)), H::IgnitionDownloadable), Failure);
        assert_eq!(hv(&day2(None), H::IgnitionDownloadable), Pending);
    }
    majority_group: BelongsToMajorityGroup => {
        assert_eq!(hv(&with(|_, _| {}), H::BelongsToMajorityGroup), Success);
        assert_eq!(hv(&with(|h, _| h.connectivity.clear()), H::BelongsToMajorityGroup), Pending);
        // h1 only sees h2: 1 of 4 peers.
        assert_eq!(hv(&with(|h, _| h.connectivity.truncate(1)), H::BelongsToMajorityGroup), Failure);
        let mut c = with(|_, _| {});
        c.hosts.truncate(2);
        assert_eq!(hv(&c, H::BelongsToMajorityGroup), Pending);
    }
    platform_network: ValidPlatformNetworkSettings => {
        assert_eq!(hv(&with(|_, _| {}), H::ValidPlatformNetworkSettings), Success);
        assert_eq!(hv(&with(|h, _| inv(h).system_vendor.product_name = "OpenStack Compute".into()), H::ValidPlatformNetworkSettings), Failure);
    }
    ntp_synced: NtpSynced => {
        assert_eq!(hv(&with(|_, _| {}), H::NtpSynced), Success);
        assert_eq!(hv(&with(|h, _| h.ntp_sources[0].source_state = "unreachable".into()), H::NtpSynced), Failure);
    }
    time_synced: TimeSyncedBetweenHostAndService => {
        assert_eq!(hv(&with(|h, _| h.host_timestamp = Some(mins(t0(), -20))), H::TimeSyncedBetweenHostAndService), Success);
        assert_eq!(hv(&with(|h, _| h.host_timestamp = Some(mins(t0(), -21))), H::TimeSyncedBetweenHostAndService), Failure);
        assert_eq!(hv(&with(|h, _| h.host_timestamp = Some(mins(t0(), 60))), H::TimeSyncedBetweenHostAndService), Success);
        assert_eq!(hv(&with(|h, _| h.host_timestamp = Some(mins(t0(), 61))), H::TimeSyncedBetweenHostAndService), Failure);
    }
    images_available: ContainerImagesAvailable => {
        assert_eq!(hv(&with(|_, _| {}), H::ContainerImagesAvailable), Success);
        assert_eq!(hv(&with(|h, _| h.images_status = vec![ContainerImageAvailability { name: "i".into(), result: "failure".into(), ..Default::default() }]), H::ContainerImagesAvailable), Failure);
    }
    latency: SufficientNetworkLatencyRequirementForRole => {
        let slow = |rtt: f64| with(move |h, c| {
            for o in c.hosts.iter_mut() { o.role = HostRole::Master; }
            h.role = HostRole::Master;
            for r in h.connectivity.iter_mut() { r.l3_connectivity[0].average_rtt_ms = rtt; }
        });
        assert_eq!(hv(&slow(100.0), H::SufficientNetworkLatencyRequirementForRole), Success);
        assert_eq!(hv(&slow(100.5), H::SufficientNetworkLatencyRequirementForRole), Failure);
    }
    packet_loss: SufficientPacketLossRequirementForRole => {
        let lossy = |loss: f64| with(move |h, c| {
            for o in c.hosts.iter_mut() { o.role = HostRole::Worker; }
            h.role = HostRole::Worker;
            for r in h.connectivity.iter_mut() { r.l3_connectivity[0].packet_loss_percentage = loss; }
        });
        assert_eq!(hv(&lossy(10.0), H::SufficientPacketLossRequirementForRole), Success);
        assert_eq!(hv(&lossy(10.1), H::SufficientPacketLossRequirementForRole), Failure);
    }
    default_route: HasDefaultRoute => {
        assert_eq!(hv(&with(|_, _| {}), H::HasDefaultRoute), Success);
        assert_eq!(hv(&with(|h, _| inv(h).routes.clear()), H::HasDefaultRoute), Failure);
    }
    dns_api: ApiDomainNameResolvedCorrectly => {
        // Managed networking: not required.
        assert_eq!(hv(&with(|h, _| h.domain_resolutions = None), H::ApiDomainNameResolvedCorrectly), Success);
        let umn = |f: fn(&mut HostSnapshot)| with(move |h, c| { c.user_managed_networking = true; f(h) });
        assert_eq!(hv(&umn(|_| {}), H::ApiDomainNameResolvedCorrectly), Success);
        assert_eq!(hv(&umn(|h| h.domain_resolutions = None), H::ApiDomainNameResolvedCorrectly), Pending);
        assert_eq!(hv(&umn(|h| h.domain_resolutions = Some(vec![])), H::ApiDomainNameResolvedCorrectly), Failure);
    }
    dns_api_int: ApiIntDomainNameResolvedCorrectly => {
        let umn = |f: fn(&mut HostSnapshot)| with(move |h, c| { c.user_managed_networking = true; f(h) });
        assert_eq!(hv(&umn(|_| {}), H::ApiIntDomainNameResolvedCorrectly), Success);
        assert_eq!(hv(&umn(|h| h.domain_resolutions.as_mut().unwrap().remove(1).domain_name.clear()), H::ApiIntDomainNameResolvedCorrectly), Failure);
    }
    dns_apps: AppsDomainNameResolvedCorrectly => {
        let umn = |f: fn(&mut HostSnapshot)| with(move |h, c| { c.user_managed_networking = true; f(h) });
        assert_eq!(hv(&umn(|_| {}), H::AppsDomainNameResolvedCorrectly), Success);
        assert_eq!(hv(&umn(|h| h.domain_resolutions.as_mut().unwrap()[2].ipv4_addresses = vec!["10.9.9.9".into()]), H::AppsDomainNameResolvedCorrectly), Failure);
    }
    dns_release: ReleaseDomainNameResolvedCorrectly => {
        // Disabled by default configuration, as upstream.
        assert_eq!(hv(&with(|_, _| {}), H::ReleaseDomainNameResolvedCorrectly), Disabled);
    }
    platform_compatible: CompatibleWithClusterPlatform => {
        assert_eq!(hv(&with(|_, _| {}), H::CompatibleWithClusterPlatform), Success);
        assert_eq!(hv(&with(|_, c| c.platform = PlatformType::VSphere), H::CompatibleWithClusterPlatform), Failure);
        assert_eq!(hv(&with(|h, c| { c.platform = PlatformType::VSphere; inv(h).system_vendor.manufacturer = "VMware, Inc.".into(); }), H::CompatibleWithClusterPlatform), Success);
    }
    dns_wildcard: DnsWildcardNotConfigured => {
        assert_eq!(hv(&with(|_, _| {}), H::DnsWildcardNotConfigured), Success);
        assert_eq!(hv(&with(|h, c| {
            let name = format!("validateNoWildcardDNS.{}", c.domain());
            h.domain_resolutions.as_mut().unwrap().push(DomainResolution { domain_name: name, ipv4_addresses: vec!["1.2.3.4".into()], ..Default::default() });
        }), H::DnsWildcardNotConfigured), Failure);
    }
    disk_encryption: DiskEncryptionRequirementsSatisfied => {
        let enc = |mode: &str| DiskEncryption { enable_on: "all".into(), mode: mode.into(), tang_servers: String::new() };
        assert_eq!(hv(&with(|_, _| {}), H::DiskEncryptionRequirementsSatisfied), Success);
        assert_eq!(hv(&with(|_, c| c.disk_encryption = Some(enc("tpmv2"))), H::DiskEncryptionRequirementsSatisfied), Success);
        assert_eq!(hv(&with(|h, c| { c.disk_encryption = Some(enc("tpmv2")); inv(h).tpm_version = "1.2".into(); }), H::DiskEncryptionRequirementsSatisfied), Failure);
        assert_eq!(hv(&with(|h, c| { c.disk_encryption = Some(enc("tang")); h.tang_connectivity = Some(false); }), H::DiskEncryptionRequirementsSatisfied), Failure);
    }
    non_overlapping: NonOverlappingSubnets => {
        assert_eq!(hv(&with(|_, _| {}), H::NonOverlappingSubnets), Success);
        assert_eq!(hv(&with(|h, _| {
            let mut nic = inv(h).interfaces[0].clone();
            nic.name = "eth1".into();
            nic.ipv4_addresses = vec!["192.168.1.200/25".into()];
            inv(h).interfaces.push(nic);
        }), H::NonOverlappingSubnets), Failure);
    }
    vsphere_uuid: VsphereDiskUuidEnabled => {
        assert_eq!(hv(&with(|_, _| {}), H::VsphereDiskUuidEnabled), Success);
        assert_eq!(hv(&with(|h, c| {
            c.platform = PlatformType::VSphere;
            inv(h).system_vendor.is_virtual = true;
            inv(h).disks[0].by_id.clear();
        }), H::VsphereDiskUuidEnabled), Failure);
    }
    compatible_agent: CompatibleAgent => {
        let cfg = Config {
            agent_image: "quay.io/agent:v2".into(),
            ..Default::default()
        };
        let c = with(|_, _| {});
        let st = |c: &ClusterSnapshot| validate_host(&c.hosts[0], Some(c), t0(), &cfg).status(H::CompatibleAgent).unwrap();
        assert_eq!(st(&c), Failure);
        assert_eq!(st(&with(|h, _| h.discovery_agent_version = "quay.io/agent:v2".into())), Success);
        assert_eq!(hv(&c, H::CompatibleAgent), Success);
    }
    no_skip_installation_disk: NoSkipInstallationDisk => {
        assert_eq!(hv(&with(|_, _| {}), H::NoSkipInstallationDisk), Success);
        assert_eq!(hv(&with(|h, _| h.skip_formatting_disks = vec!["/dev/disk/by-id/wwn-0x01".into()]), H::NoSkipInstallationDisk), Failure);
    }
    no_skip_missing_disk: NoSkipMissingDisk => {
        assert_eq!(hv(&with(|_, _| {}), H::NoSkipMissingDisk), Success);
        assert_eq!(hv(&with(|h, _| h.skip_formatting_disks = vec!["/dev/nope".into()]), H::NoSkipMissingDisk), Failure);
    }
    ip_collisions: NoIpCollisionsInNetwork => {
        assert_eq!(hv(&with(|_, _| {}), H::NoIpCollisionsInNetwork), Success);
        // An address two inventories list is no collision by itself: only ARP answers count.
        assert_eq!(hv(&with(|h, _| inv(h).interfaces[0].ipv4_addresses = vec!["192.168.1.12/24".into()]), H::NoIpCollisionsInNetwork), Success);
        assert_eq!(hv(&with(|_, c| arp_collision(c, "192.168.1.11")), H::NoIpCollisionsInNetwork), Failure);
        // A collision on another host's address is that host's.
        assert_eq!(hv(&with(|_, c| arp_collision(c, "192.168.1.12")), H::NoIpCollisionsInNetwork), Success);
        assert_eq!(hv(&with(|h, _| h.inventory = None), H::NoIpCollisionsInNetwork), Success);
    }
    iscsi_nic: NoIscsiNicBelongsToMachineCidr => {
        assert_eq!(hv(&with(|_, _| {}), H::NoIscsiNicBelongsToMachineCidr), Success);
        assert_eq!(hv(&with(|h, _| {
            let d = &mut inv(h).disks[0];
            d.drive_type = "iSCSI".into();
            d.iscsi = Some(Iscsi { host_ip_address: "192.168.1.250".into() });
        }), H::NoIscsiNicBelongsToMachineCidr), Failure);
    }
    mtu: MtuValid => {
        assert_eq!(hv(&with(|_, _| {}), H::MtuValid), Success);
        assert_eq!(hv(&with(|h, _| h.connectivity[0].mtu_report = vec![MtuReport { remote_ip: "x".into(), mtu_successful: false }]), H::MtuValid), Failure);
    }
    disk_speed: SufficientInstallationDiskSpeed => {
        assert_eq!(hv(&with(|_, _| {}), H::SufficientInstallationDiskSpeed), Success);
        assert_eq!(hv(&with(|h, _| h.disk_speed = DiskSpeed::Sufficient), H::SufficientInstallationDiskSpeed), Success);
        assert_eq!(hv(&with(|h, _| h.disk_speed = DiskSpeed::Insufficient), H::SufficientInstallationDiskSpeed), Failure);
    }
}

#[test]
fn every_host_validation_is_tested() {
    for id in HostValidationId::ALL
        .iter()
        .filter(|i| i.category() != "operators")
    {
        assert!(TESTED.contains(id), "{id} has no test");
    }
}

#[test]
fn operator_validations_report_disabled_operators() {
    let v = validate_host(&with(|_, _| {}).hosts[0], None, t0(), &Config::default());
    let r = v.get(H::LsoRequirementsSatisfied).unwrap();
    assert_eq!((r.status, r.message.as_str()), (Success, "lso is disabled"));
    assert_eq!(v.results.len(), HostValidationId::ALL.len());
}

#[test]
fn sno_cpu_boundary_by_version() {
    let mut c = sno_with_host(t0());
    inv(&mut c.hosts[0]).cpu.count = 4;
    assert_eq!(hv(&c, H::HasMinCpuCores), Success, "4.22 SNO needs 4 cores");
    c.openshift_version = "4.21.0".into();
    assert_eq!(
        hv(&c, H::HasMinCpuCores),
        Failure,
        "before 4.22 SNO needs 8 cores"
    );
    inv(&mut c.hosts[0]).cpu.count = 8;
    assert_eq!(hv(&c, H::HasMinCpuCores), Success);
    c.openshift_version = "4.22.0".into();
    inv(&mut c.hosts[0]).cpu.count = 3;
    assert_eq!(hv(&c, H::HasMinCpuCores), Failure);
}

#[test]
fn ignored_validations_pass_gates_but_keep_status() {
    let c = with(|h, c| {
        h.inventory.as_mut().unwrap().routes.clear();
        c.ignored_host_validations = vec!["has-default-route".into(), "hostname-valid".into()];
    });
    let v = validate_host(&c.hosts[0], Some(&c), t0(), &Config::default());
    assert_eq!(v.status(H::HasDefaultRoute), Some(Failure));
    assert!(v.ok(H::HasDefaultRoute));
    assert!(
        !v.get(H::HostnameValid).unwrap().ignored,
        "hostname-valid is not ignorable"
    );
}

#[test]
fn validations_info_json_shape() {
    let c = with(|_, _| {});
    let v = validate_host(&c.hosts[0], Some(&c), t0(), &Config::default());
    let j = v.to_validations_info();
    let hw = j["hardware"].as_array().unwrap();
    assert!(
        hw.iter()
            .any(|e| e["id"] == "has-inventory" && e["status"] == "success")
    );
    assert!(
        j["network"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == "connected")
    );
    assert!(j["operators"].is_array());
}

// ---- cluster validations -------------------------------------------------------------------

use ClusterValidationId as CV;

macro_rules! cluster_validation_tests {
    ($($test:ident: $id:ident => $body:block)+) => {
        $(#[test] fn $test() $body)+
        const CTESTED: &[ClusterValidationId] = &[$(CV::$id),+];
    };
}

fn base() -> ClusterSnapshot {
    let mut c = cluster_3_2_with_hosts(t0());
    for h in c.hosts.iter_mut() {
        h.status = HostStatus::Known;
    }
    c
}

fn cw(f: impl FnOnce(&mut ClusterSnapshot)) -> ClusterSnapshot {
    let mut c = base();
    f(&mut c);
    c
}

cluster_validation_tests! {
    c_machine_cidr: MachineCidrDefined => {
        assert_eq!(cv(&base(), CV::MachineCidrDefined), Success);
        assert_eq!(cv(&cw(|c| c.machine_networks.clear()), CV::MachineCidrDefined), Failure);
    }
    c_cluster_cidr: ClusterCidrDefined => {
        assert_eq!(cv(&base(), CV::ClusterCidrDefined), Success);
        assert_eq!(cv(&cw(|c| c.cluster_networks.clear()), CV::ClusterCidrDefined), Failure);
    }
    c_service_cidr: ServiceCidrDefined => {
        assert_eq!(cv(&base(), CV::ServiceCidrDefined), Success);
        assert_eq!(cv(&cw(|c| c.service_networks.clear()), CV::ServiceCidrDefined), Failure);
    }
    c_overlap: NoCidrsOverlapping => {
        assert_eq!(cv(&base(), CV::NoCidrsOverlapping), Success);
        assert_eq!(cv(&cw(|c| c.service_networks = vec!["10.128.0.0/16".into()]), CV::NoCidrsOverlapping), Failure);
    }
    c_families: NetworksSameAddressFamilies => {
        assert_eq!(cv(&base(), CV::NetworksSameAddressFamilies), Success);
        assert_eq!(cv(&cw(|c| c.service_networks = vec!["fd02::/112".into()]), CV::NetworksSameAddressFamilies), Failure);
    }
    c_prefix: NetworkPrefixValid => {
        assert_eq!(cv(&base(), CV::NetworkPrefixValid), Success);
        assert_eq!(cv(&cw(|c| c.cluster_networks[0].host_prefix = 12), CV::NetworkPrefixValid), Failure);
        // /24 with host prefix /23 is invalid; /22 with /24 has room for 4 hosts only.
        assert_eq!(cv(&cw(|c| { c.cluster_networks[0].cidr = "10.128.0.0/22".into(); c.cluster_networks[0].host_prefix = 24; }), CV::NetworkPrefixValid), Failure);
    }
    c_vips_in_machine: MachineCidrEqualsToCalculatedCidr => {
        assert_eq!(cv(&base(), CV::MachineCidrEqualsToCalculatedCidr), Success);
        assert_eq!(cv(&cw(|c| c.api_vips = vec!["10.0.0.1".into()]), CV::MachineCidrEqualsToCalculatedCidr), Failure);
    }
    c_api_defined: ApiVipsDefined => {
        assert_eq!(cv(&base(), CV::ApiVipsDefined), Success);
        assert_eq!(cv(&cw(|c| c.api_vips.clear()), CV::ApiVipsDefined), Failure);
        assert_eq!(cv(&cw(|c| { c.api_vips.clear(); c.user_managed_networking = true; }), CV::ApiVipsDefined), Success);
    }
    c_api_valid: ApiVipsValid => {
        assert_eq!(cv(&base(), CV::ApiVipsValid), Success);
        assert_eq!(cv(&cw(|c| c.api_vips = vec!["192.168.1.255".into()]), CV::ApiVipsValid), Failure);
        assert_eq!(cv(&cw(|c| c.api_vips = vec!["192.168.1.11".into()]), CV::ApiVipsValid), Failure, "in use by h1");
        assert_eq!(cv(&cw(|c| c.api_vips = vec!["nope".into()]), CV::ApiVipsValid), Failure);
    }
    c_ingress_defined: IngressVipsDefined => {
        assert_eq!(cv(&base(), CV::IngressVipsDefined), Success);
        assert_eq!(cv(&cw(|c| c.ingress_vips.clear()), CV::IngressVipsDefined), Failure);
    }
    c_ingress_valid: IngressVipsValid => {
        assert_eq!(cv(&base(), CV::IngressVipsValid), Success);
        assert_eq!(cv(&cw(|c| c.ingress_vips = vec!["192.168.1.100".into()]), CV::IngressVipsValid), Failure, "same as api");
    }
    c_all_ready: AllHostsAreReadyToInstall => {
        assert_eq!(cv(&base(), CV::AllHostsAreReadyToInstall), Success);
        assert_eq!(cv(&cw(|c| c.hosts[2].status = HostStatus::Insufficient), CV::AllHostsAreReadyToInstall), Failure);
        assert_eq!(cv(&cw(|c| c.hosts.clear()), CV::AllHostsAreReadyToInstall), Failure);
    }
    c_masters: SufficientMastersCount => {
        assert_eq!(cv(&base(), CV::SufficientMastersCount), Success);
        assert_eq!(cv(&cw(|c| for h in c.hosts.iter_mut() { h.role = HostRole::Master; }), CV::SufficientMastersCount), Failure);
        assert_eq!(cv(&cw(|c| for h in c.hosts.iter_mut() { h.role = HostRole::Worker; }), CV::SufficientMastersCount), Failure);
        let mut sno = sno_with_host(t0());
        assert_eq!(cv(&sno, CV::SufficientMastersCount), Success);
        let extra = host("sno2", 21, &sno, t0());
        sno.hosts.push(extra);
        assert_eq!(cv(&sno, CV::SufficientMastersCount), Failure);
    }
    c_dns_domain: DnsDomainDefined => {
        assert_eq!(cv(&base(), CV::DnsDomainDefined), Success);
        assert_eq!(cv(&cw(|c| c.base_domain.clear()), CV::DnsDomainDefined), Failure);
    }
    c_pull_secret: PullSecretSet => {
        assert_eq!(cv(&base(), CV::PullSecretSet), Success);
        assert_eq!(cv(&cw(|c| c.pull_secret_set = false), CV::PullSecretSet), Failure);
    }
    c_ntp: NtpServerConfigured => {
        assert_eq!(cv(&base(), CV::NtpServerConfigured), Success);
        assert_eq!(cv(&cw(|c| c.hosts[1].host_timestamp = Some(mins(t0(), 4))), CV::NtpServerConfigured), Success);
        assert_eq!(cv(&cw(|c| c.hosts[1].host_timestamp = Some(mins(t0(), 5))), CV::NtpServerConfigured), Failure);
    }
    c_network_type: NetworkTypeValid => {
        assert_eq!(cv(&base(), CV::NetworkTypeValid), Success);
        assert_eq!(cv(&cw(|c| c.network_type = Some("OVNKubernetes".into())), CV::NetworkTypeValid), Success);
        assert_eq!(cv(&cw(|c| c.network_type = Some("Flannel".into())), CV::NetworkTypeValid), Failure);
        let mut sno = sno_with_host(t0());
        sno.network_type = Some("OpenShiftSDN".into());
        assert_eq!(cv(&sno, CV::NetworkTypeValid), Failure);
    }
    c_manifests: CustomManifestsRequirementsSatisfied => {
        use crate::domain::image_mode::{ImageMode, PoolImage};
        assert_eq!(cv(&base(), CV::CustomManifestsRequirementsSatisfied), Success);
        // Image mode at install: its pools named when they pass, its problems when not.
        let on_images = cw(|c| c.image_mode = ImageMode {
            pools: vec![PoolImage { pool: "worker".into(), image: "r.example.com/os@sha256:1".into() }],
            ..Default::default()
        });
        let v = validate_cluster(&on_images, &Config::default());
        let r = v.results.iter().find(|r| r.id == CV::CustomManifestsRequirementsSatisfied).unwrap();
        assert_eq!(r.status, Success);
        assert!(r.message.contains("image mode at install: worker on r.example.com/os@sha256:1"), "{}", r.message);
        let refused = cw(|c| c.image_mode.problems = vec!["MachineOSConfig worker (m.yaml): pool worker: spec.renderedImagePushSpec is required".into()]);
        let v = validate_cluster(&refused, &Config::default());
        let r = v.results.iter().find(|r| r.id == CV::CustomManifestsRequirementsSatisfied).unwrap();
        assert_eq!(r.status, Failure);
        assert!(r.message.contains("pool worker: spec.renderedImagePushSpec is required"), "{}", r.message);
    }
    c_platform: PlatformRequirementsSatisfied => {
        assert_eq!(cv(&base(), CV::PlatformRequirementsSatisfied), Success);
    }
}

#[test]
fn every_cluster_validation_is_tested() {
    for id in ClusterValidationId::ALL
        .iter()
        .filter(|i| i.category() != "operators")
    {
        assert!(CTESTED.contains(id), "{id} has no test");
    }
}

#[test]
fn cluster_validations_info_groups() {
    let j = validate_cluster(&base(), &Config::default()).to_validations_info();
    for cat in ["network", "hosts-data", "configuration", "operators"] {
        assert!(j[cat].is_array(), "{cat}");
    }
}

#[test]
fn machine_network_is_calculated_from_the_api_vip_and_host_addresses() {
    use crate::domain::net::calculated_machine_network;
    let now = t0();
    let mut c = cluster_3_2_with_hosts(now);
    // Given by the user: kept.
    assert_eq!(calculated_machine_network(&c), None);
    c.machine_networks.clear();
    assert_eq!(
        calculated_machine_network(&c).as_deref(),
        Some("192.168.1.0/24")
    );
    // No host address in the VIP's network: nothing to calculate yet.
    c.api_vips = vec!["10.9.9.9".into()];
    assert_eq!(calculated_machine_network(&c), None);
    // Single node and user-managed networking have no machine network to calculate.
    let sno = sno_with_host(now);
    assert_eq!(calculated_machine_network(&sno), None);
}

/// Host h2's ARP check of `ip` was answered by h1's MAC and by a stranger's, on one NIC.
fn arp_collision(c: &mut ClusterSnapshot, ip: &str) {
    let answer = |mac: &str| L2Connectivity {
        outgoing_ip_address: "192.168.1.12".into(),
        outgoing_nic: "eth0".into(),
        remote_ip_address: ip.into(),
        remote_mac: mac.into(),
        successful: true,
    };
    let remote = c.hosts[1]
        .connectivity
        .iter_mut()
        .find(|r| r.host_id == "h1")
        .unwrap();
    remote.l2_connectivity = vec![answer("52:54:00:00:00:0b"), answer("52:54:00:de:ad:01")];
}

/// Real inventories list `lo` (127.0.0.1/8, ::1/128) and link-local addresses on every host,
/// and the connectivity check sends them to every peer: none of it is a collision.
#[test]
fn loopback_and_link_local_on_every_host_are_no_collision() {
    let mut c = cluster_3_2_with_hosts(t0());
    for h in &mut c.hosts {
        let inv = h.inventory.as_mut().unwrap();
        inv.interfaces.insert(
            0,
            Interface {
                name: "lo".into(),
                ipv4_addresses: vec!["127.0.0.1/8".into()],
                ipv6_addresses: vec!["::1/128".into()],
                mtu: 65536,
                ..Default::default()
            },
        );
        inv.interfaces[1]
            .ipv4_addresses
            .push("169.254.3.1/16".into());
        inv.interfaces[1]
            .ipv6_addresses
            .push("fe80::5054:ff:fe00:1/64".into());
    }
    assert!(crate::domain::validations::ip_collisions(&c.hosts).is_empty());
    for h in &c.hosts {
        let v = validate_host(h, Some(&c), t0(), &Config::default());
        let r = v.get(H::NoIpCollisionsInNetwork).unwrap();
        assert_eq!(r.status, Success, "{}: {}", h.id, r.message);
        assert_eq!(
            r.message,
            format!("No IP collisions were detected by host {}", h.id)
        );
    }
}

/// An address answered by two MACs on one NIC is a collision of the host that owns it,
/// worded as upstream's validation words it.
#[test]
fn arp_collision_is_reported_as_upstream_words_it() {
    let mut c = cluster_3_2_with_hosts(t0());
    arp_collision(&mut c, "192.168.1.11");
    let found = crate::domain::validations::ip_collisions(&c.hosts);
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        [(
            "192.168.1.11".parse().unwrap(),
            vec!["52:54:00:00:00:0b", "52:54:00:de:ad:01"]
        )]
    );
    let v = validate_host(&c.hosts[0], Some(&c), t0(), &Config::default());
    let r = v.get(H::NoIpCollisionsInNetwork).unwrap();
    assert_eq!(r.status, Failure);
    assert_eq!(
        r.message,
        "Collisions detected for host ID h1, IP address: 192.168.1.11 Mac addresses: 52:54:00:00:00:0b,52:54:00:de:ad:01\n"
    );
    // The same MAC answering twice, or answers on two different NICs, are no collision.
    let mut c = cluster_3_2_with_hosts(t0());
    arp_collision(&mut c, "192.168.1.11");
    let l2 = &mut c.hosts[1].connectivity[0].l2_connectivity;
    l2[1].outgoing_nic = "eth1".into();
    assert!(crate::domain::validations::ip_collisions(&c.hosts).is_empty());
}

#[test]
fn every_cluster_validation_row_says_why_and_covers_each_id_once() {
    for row in CLUSTER_VALIDATIONS {
        assert!(!row.why.trim().is_empty(), "row {} has no why", row.id);
        assert!(!row.why.contains('\n'), "row {}: why is one line", row.id);
    }
    // Operator validations are not rows: they follow the table, all disabled.
    let mut expected: Vec<ClusterValidationId> = ClusterValidationId::ALL
        .iter()
        .copied()
        .filter(|id| id.category() != "operators")
        .collect();
    let mut ids: Vec<ClusterValidationId> = CLUSTER_VALIDATIONS.iter().map(|r| r.id).collect();
    expected.sort_by_key(|id| id.as_str());
    ids.sort_by_key(|id| id.as_str());
    assert_eq!(ids, expected);
}

#[test]
fn every_host_validation_row_says_why_once() {
    for row in HOST_VALIDATIONS {
        assert!(!row.why.trim().is_empty(), "row {} has no why", row.id);
        assert!(!row.why.contains('\n'), "row {}: why is one line", row.id);
    }
    let mut ids: Vec<&str> = HOST_VALIDATIONS.iter().map(|r| r.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), HOST_VALIDATIONS.len(), "an id has two rows");
    let mut whys: Vec<&str> = HOST_VALIDATIONS.iter().map(|r| r.why).collect();
    whys.sort();
    whys.dedup();
    assert_eq!(whys.len(), HOST_VALIDATIONS.len(), "a why is copied");
}
