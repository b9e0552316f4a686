//! Host validations: one check per [`HostValidationId`], run in table order, and the gates the
//! host state machine reads from their results.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;

use jiff::Timestamp;

use super::super::hardware::{RoleRequirements, VersionRequirements};
use super::super::inventory::{Disk, Inventory, Truncation};
use super::super::net::{Cidr, parse_ip};
use super::super::roles::{resolve_role, suggest_roles};
use super::super::snapshot::*;
use super::super::types::*;
use super::super::validation_ids::*;
use super::{Check, HostValidations, Validations, fail, ok, pending};

use ValidationStatus::{Disabled, Success};

// ---- gates ---------------------------------------------------------------------------------

/// `hasMinRequiredHardware`.
pub const MIN_HW_GATE: &[HostValidationId] = &[
    HostValidationId::HasMinValidDisks,
    HostValidationId::HasMinCpuCores,
    HostValidationId::HasMinMemory,
    HostValidationId::CompatibleWithClusterPlatform,
    HostValidationId::DiskEncryptionRequirementsSatisfied,
];

/// `requiredInputFieldsExist`.
pub const INPUT_GATE: &[HostValidationId] = &[HostValidationId::MachineCidrDefined];

/// `isSufficientForInstall` (non-gating: ntp-synced, mtu-valid, inventory-not-partially-truncated).
pub const SUFFICIENT_GATE: &[HostValidationId] = {
    use HostValidationId::*;
    &[
        HasMemoryForRole,
        HasCpuCoresForRole,
        BelongsToMachineCidr,
        HostnameUnique,
        HostnameValid,
        IgnitionDownloadable,
        BelongsToMajorityGroup,
        LsoRequirementsSatisfied,
        OdfRequirementsSatisfied,
        OcsRequirementsSatisfied,
        CnvRequirementsSatisfied,
        LvmRequirementsSatisfied,
        MceRequirementsSatisfied,
        MtvRequirementsSatisfied,
        OscRequirementsSatisfied,
        NodeFeatureDiscoveryRequirementsSatisfied,
        NvidiaGpuRequirementsSatisfied,
        PipelinesRequirementsSatisfied,
        ServicemeshRequirementsSatisfied,
        ServerlessRequirementsSatisfied,
        OpenshiftAiRequirementsSatisfied,
        AuthorinoRequirementsSatisfied,
        NmstateRequirementsSatisfied,
        AmdGpuRequirementsSatisfied,
        KmmRequirementsSatisfied,
        NodeHealthcheckRequirementsSatisfied,
        SelfNodeRemediationRequirementsSatisfied,
        FenceAgentsRemediationRequirementsSatisfied,
        NodeMaintenanceRequirementsSatisfied,
        KubeDeschedulerRequirementsSatisfied,
        ClusterObservabilityRequirementsSatisfied,
        NumaResourcesRequirementsSatisfied,
        OadpRequirementsSatisfied,
        MetallbRequirementsSatisfied,
        LokiRequirementsSatisfied,
        OpenshiftLoggingRequirementsSatisfied,
        SufficientNetworkLatencyRequirementForRole,
        SufficientPacketLossRequirementForRole,
        HasDefaultRoute,
        ApiDomainNameResolvedCorrectly,
        ApiIntDomainNameResolvedCorrectly,
        AppsDomainNameResolvedCorrectly,
        DnsWildcardNotConfigured,
        ValidPlatformNetworkSettings,
        SufficientInstallationDiskSpeed,
        NonOverlappingSubnets,
        CompatibleAgent,
        TimeSyncedBetweenHostAndService,
        NoSkipInstallationDisk,
        NoSkipMissingDisk,
        NoIpCollisionsInNetwork,
        NoIscsiNicBelongsToMachineCidr,
        VsphereDiskUuidEnabled,
    ]
};

/// Pool (unbound) hosts: hardware and hostname only.
pub const POOL_GATE: &[HostValidationId] = &[
    HostValidationId::HasMinValidDisks,
    HostValidationId::HasMinCpuCores,
    HostValidationId::HasMinMemory,
    HostValidationId::HostnameValid,
];

// ---- cluster-wide precomputation -----------------------------------------------------------

/// Data shared by all host validations of one cluster, computed once per refresh.
pub struct ClusterContext<'a> {
    pub cluster: &'a ClusterSnapshot,
    pub req: VersionRequirements,
    machine_nets: Vec<Cidr>,
    hostnames: HashMap<&'a str, usize>,
    /// Addresses answered by more than one MAC in the hosts' ARP checks, with those MACs
    /// (sorted): [`ip_collisions`].
    ip_collisions: BTreeMap<IpAddr, Vec<&'a str>>,
    /// (from, to) pairs with successful L3 connectivity.
    l3: HashSet<(&'a str, &'a str)>,
    /// Day-1 bound hosts (connectivity peers).
    day1_hosts: Vec<&'a HostSnapshot>,
    /// The same hosts by id: a host's peers are looked up from its own reports, so a pass
    /// stays linear in the hosts (a set of peers per host made 1,000 hosts cost 0.24 s).
    day1_by_id: HashMap<&'a str, &'a HostSnapshot>,
    suggested: HashMap<&'a str, HostRole>,
}

impl<'a> ClusterContext<'a> {
    pub fn new(cluster: &'a ClusterSnapshot, cfg: &Config) -> ClusterContext<'a> {
        let mut hostnames: HashMap<&str, usize> = HashMap::new();
        let mut l3 = HashSet::new();
        let mut day1_hosts = Vec::new();
        for h in &cluster.hosts {
            let name = h.hostname();
            if !name.is_empty() {
                *hostnames.entry(name).or_default() += 1;
            }
            for r in &h.connectivity {
                if r.l3_ok() || r.l2_ok() {
                    l3.insert((h.id.as_str(), r.host_id.as_str()));
                }
            }
            if !h.is_day2() {
                day1_hosts.push(h);
            }
        }
        let day1_by_id = day1_hosts.iter().map(|h| (h.id.as_str(), *h)).collect();
        ClusterContext {
            cluster,
            req: cfg.hw.for_version(&cluster.openshift_version),
            machine_nets: cluster
                .machine_networks
                .iter()
                .filter_map(|c| Cidr::parse(c))
                .collect(),
            hostnames,
            ip_collisions: ip_collisions(&cluster.hosts),
            l3,
            day1_hosts,
            day1_by_id,
            suggested: suggest_roles(cluster, cfg).into_iter().collect(),
        }
    }

    /// Effective role with auto-assignment applied.
    pub fn role_of(&self, h: &HostSnapshot) -> HostRole {
        resolve_role(h, self.suggested.get(h.id.as_str()).copied())
    }

    /// Suggested role for an auto-assign host, if one was computed.
    pub fn suggested_role(&self, host_id: &str) -> Option<HostRole> {
        self.suggested.get(host_id).copied()
    }

    fn role_req(&self, role: HostRole) -> Option<RoleRequirements> {
        Some(match role {
            HostRole::Master | HostRole::Bootstrap if self.cluster.is_sno() => self.req.sno,
            HostRole::Master | HostRole::Bootstrap => self.req.master,
            HostRole::Worker => self.req.worker,
            HostRole::Arbiter => self.req.arbiter,
            HostRole::AutoAssign => return None,
        })
    }
}

// ---- host validations ----------------------------------------------------------------------

struct HostCheck<'a> {
    host: &'a HostSnapshot,
    inv: Option<&'a Inventory>,
    ctx: Option<&'a ClusterContext<'a>>,
    now: Timestamp,
    cfg: &'a Config,
    /// Requirement for the host's role, or the any-role minimum while undecided.
    role: HostRole,
    role_req: RoleRequirements,
    min_req: RoleRequirements,
}

impl HostCheck<'_> {
    fn cluster(&self) -> Option<&ClusterSnapshot> {
        self.ctx.map(|c| c.cluster)
    }
    fn umn(&self) -> bool {
        self.cluster().is_none_or(|c| c.umn())
    }
}

const NOT_BOUND: &str = "Host is not bound to a cluster";
const NO_INVENTORY: &str = "Missing inventory";

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Memory check with the upstream tolerance: 100 MiB, plus 2% when measured via meminfo.
fn memory_sufficient(inv: &Inventory, required_mib: u64) -> bool {
    let required = required_mib.saturating_mul(1 << 20);
    let mut tolerance: u64 = 100 << 20;
    if inv
        .memory
        .physical_bytes_method
        .eq_ignore_ascii_case("meminfo")
    {
        tolerance = tolerance.saturating_add(required / 50);
    }
    inv.memory.physical_bytes.saturating_add(tolerance) >= required
}

const VALID_DRIVE_TYPES: &[&str] = &[
    "HDD",
    "SSD",
    "Multipath",
    "iSCSI",
    "FC",
    "RAID",
    "ECKD",
    "FBA",
    "ECKD (ESE)",
    "LVM",
];

/// Why a disk is not eligible for installation, or `None` if it is.
pub fn disk_ineligibility(disk: &Disk, inv: &Inventory, min_disk_gb: u64) -> Option<String> {
    let min_bytes = min_disk_gb.saturating_mul(1_000_000_000);
    if disk.size_bytes < min_bytes {
        return Some(format!(
            "Disk is too small (disk only has {}, but {} GB are required)",
            gb(disk.size_bytes),
            min_disk_gb
        ));
    }
    if !VALID_DRIVE_TYPES
        .iter()
        .any(|t| t.eq_ignore_ascii_case(&disk.drive_type))
    {
        return Some(format!(
            "Drive type is {}, it must be one of HDD, SSD, Multipath, iSCSI, FC, RAID.",
            disk.drive_type
        ));
    }
    if !disk.installation_eligibility.eligible {
        let reasons = disk
            .installation_eligibility
            .not_eligible_reasons
            .join(", ");
        return Some(if reasons.is_empty() {
            "Disk is not eligible".into()
        } else {
            reasons
        });
    }
    if !disk.holders.is_empty() && !disk.drive_type.eq_ignore_ascii_case("Multipath") {
        return Some("Disk is part of a multipath device".into());
    }
    if disk.drive_type.eq_ignore_ascii_case("iSCSI") {
        let via_default = disk
            .iscsi
            .as_ref()
            .and_then(|i| parse_ip(&i.host_ip_address))
            .is_some_and(|ip| {
                inv.interfaces.iter().any(|nic| {
                    nic.addresses().filter_map(parse_ip).any(|a| a == ip)
                        && inv
                            .routes
                            .iter()
                            .any(|r| r.is_default() && r.interface == nic.name)
                })
            });
        if via_default {
            return Some("iSCSI host IP is routed through the default route interface".into());
        }
    }
    None
}

fn gb(bytes: u64) -> String {
    format!("{:.2} GB", bytes as f64 / 1e9)
}

/// Eligible disks in inventory order.
pub fn eligible_disks(inv: &Inventory, min_disk_gb: u64) -> impl Iterator<Item = &Disk> {
    inv.disks
        .iter()
        .filter(move |d| disk_ineligibility(d, inv, min_disk_gb).is_none())
}

/// The disk the host installs to: the selected one if eligible, else the first eligible disk.
pub fn installation_disk(host: &HostSnapshot, min_disk_gb: u64) -> Option<&Disk> {
    let inv = host.inventory.as_ref()?;
    if let Some(sel) = host.installation_disk_id.as_deref()
        && let Some(d) = inv
            .disks
            .iter()
            .find(|d| d.key() == sel || d.install_path() == sel)
    {
        return Some(d);
    }
    eligible_disks(inv, min_disk_gb).next()
}

/// RFC 1123 hostname check plus the forbidden localhost names.
pub fn hostname_problem(name: &str) -> Option<String> {
    const FORBIDDEN: &[&str] = &[
        "localhost",
        "localhost.localdomain",
        "localhost4",
        "localhost4.localdomain4",
        "localhost6",
        "localhost6.localdomain6",
    ];
    if name.is_empty() {
        return Some("Hostname is empty".into());
    }
    if FORBIDDEN.contains(&name) {
        return Some(format!("The host name {name} is forbidden"));
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() > 253 || !name.split('.').all(label_ok) {
        return Some(format!(
            "Hostname {name} does not match the allowed pattern (lowercase RFC 1123 subdomain)"
        ));
    }
    None
}

/// One row of the host validation table.
pub struct HostValidation {
    pub id: HostValidationId,
    /// Why the check exists, in one sentence. Documentation only; the check never reads it.
    pub why: &'static str,
    check: fn(&HostCheck) -> Check,
}

use HostValidationId as Id;

/// `row(id, why, check)`.
const fn row(
    id: HostValidationId,
    why: &'static str,
    check: fn(&HostCheck) -> Check,
) -> HostValidation {
    HostValidation { id, why, check }
}

/// The host validation table, in upstream's order (the order of the results).
pub static HOST_VALIDATIONS: &[HostValidation] = &[
    row(
        Id::Connected,
        "A host that stopped checking in receives no steps, so nothing can be installed on it",
        v_connected,
    ),
    row(
        Id::MediaConnected,
        "The agent runs from the discovery image; steps fail once that media is gone",
        v_media_connected,
    ),
    row(
        Id::HasInventory,
        "Every hardware check reads the inventory the agent reports",
        v_has_inventory,
    ),
    row(
        Id::InventoryNotPartiallyTruncated,
        "A partly truncated inventory may hide disks or NICs the other checks read",
        v_not_partially_truncated,
    ),
    row(
        Id::InventoryNotFullyTruncated,
        "Without a readable inventory no hardware detail of the host is known",
        v_not_fully_truncated,
    ),
    row(
        Id::HasMinCpuCores,
        "A host below the smallest CPU minimum of any role can take no role",
        v_min_cpu,
    ),
    row(
        Id::HasMinValidDisks,
        "The install needs at least one disk eligible as installation disk",
        v_min_disks,
    ),
    row(
        Id::HasMinMemory,
        "A host below the smallest RAM minimum of any role can take no role",
        v_min_memory,
    ),
    row(
        Id::MachineCidrDefined,
        "A day-1 host with cluster-managed networking is placed in the machine network, so it must be set",
        v_machine_cidr_defined,
    ),
    row(
        Id::HasCpuCoresForRole,
        "The host's role may need more CPU cores than the any-role minimum",
        v_cpu_for_role,
    ),
    row(
        Id::HasMemoryForRole,
        "The host's role may need more RAM than the any-role minimum",
        v_memory_for_role,
    ),
    row(
        Id::HostnameUnique,
        "Nodes are named after their hostname, so two hosts with one name collide",
        v_hostname_unique,
    ),
    row(
        Id::HostnameValid,
        "A node name must be a lowercase RFC 1123 subdomain",
        v_hostname_valid,
    ),
    row(
        Id::BelongsToMachineCidr,
        "With cluster-managed networking the host needs an address in every machine network",
        v_belongs_to_machine_cidr,
    ),
    row(
        Id::IgnitionDownloadable,
        "A day-2 host boots from the ignition the installed cluster's API serves",
        v_ignition_downloadable,
    ),
    row(
        Id::BelongsToMajorityGroup,
        "A host that cannot reach most of its day-1 peers cannot join them in one cluster",
        v_majority_group,
    ),
    row(
        Id::ValidPlatformNetworkSettings,
        "OpenStack Compute VMs are supported only for SNO or with user-managed networking",
        v_platform_network,
    ),
    row(
        Id::NtpSynced,
        "Reports whether the host found an NTP source (it gates nothing)",
        v_ntp_synced,
    ),
    row(
        Id::TimeSyncedBetweenHostAndService,
        "Certificates issued for the install are time-bound, so the host clock must agree with the service's",
        v_time_synced,
    ),
    row(
        Id::ContainerImagesAvailable,
        "A host that cannot pull the release images during preparation would fail mid-install",
        v_images_available,
    ),
    row(
        Id::SufficientNetworkLatencyRequirementForRole,
        "Hosts of one role (masters above all) need low latency between them",
        v_latency,
    ),
    row(
        Id::SufficientPacketLossRequirementForRole,
        "Packet loss between hosts of one role destabilizes what they run together",
        v_packet_loss,
    ),
    row(
        Id::HasDefaultRoute,
        "Without a default route the host reaches neither registries nor the outside",
        v_default_route,
    ),
    row(
        Id::ApiDomainNameResolvedCorrectly,
        "Where the user runs DNS (user-managed networking, day 2) the API name must resolve, to the API VIP",
        v_dns_api,
    ),
    row(
        Id::ApiIntDomainNameResolvedCorrectly,
        "With user-managed networking the nodes reach the internal API name during the install",
        v_dns_api_int,
    ),
    row(
        Id::AppsDomainNameResolvedCorrectly,
        "With user-managed networking the routes under *.apps must resolve, to the Ingress VIP",
        v_dns_apps,
    ),
    row(
        Id::ReleaseDomainNameResolvedCorrectly,
        "Upstream reports this validation; nothing here needs the release domain resolved",
        v_dns_release,
    ),
    row(
        Id::CompatibleWithClusterPlatform,
        "A vSphere, Nutanix or OCI cluster needs hosts that run on that platform",
        v_platform_compatible,
    ),
    row(
        Id::DnsWildcardNotConfigured,
        "A wildcard DNS record over the cluster domain would answer for names that must not resolve",
        v_dns_wildcard,
    ),
    row(
        Id::DiskEncryptionRequirementsSatisfied,
        "Disk encryption needs a TPM 2.0, or reachable Tang servers, on the hosts whose role it covers",
        v_disk_encryption,
    ),
    row(
        Id::NonOverlappingSubnets,
        "Two NICs in overlapping subnets make the host's routing ambiguous",
        v_non_overlapping_subnets,
    ),
    row(
        Id::VsphereDiskUuidEnabled,
        "vSphere VMs need disk.EnableUUID for their disks to be mounted by id",
        v_vsphere_disk_uuid,
    ),
    row(
        Id::CompatibleAgent,
        "An agent of another image than the service's may not speak its protocol",
        v_compatible_agent,
    ),
    row(
        Id::NoSkipInstallationDisk,
        "The installation disk is always formatted, so skipping its formatting is refused",
        v_no_skip_installation_disk,
    ),
    row(
        Id::NoSkipMissingDisk,
        "A disk named to skip formatting must exist, or the request is a mistake",
        v_no_skip_missing_disk,
    ),
    row(
        Id::NoIpCollisionsInNetwork,
        "An address that answers from two MACs is used twice in the network",
        v_no_ip_collisions,
    ),
    row(
        Id::NoIscsiNicBelongsToMachineCidr,
        "The NIC of an iSCSI installation disk must stay out of the machine network",
        v_iscsi_nic,
    ),
    row(
        Id::MtuValid,
        "Packets of the configured MTU dropped between peers break cluster traffic",
        v_mtu,
    ),
    row(
        Id::SufficientInstallationDiskSpeed,
        "A disk found too slow while preparing an earlier install would fail the install again",
        v_disk_speed,
    ),
];

/// Runs every host validation. `cluster` is `None` for unbound hosts.
pub fn validate_host(
    host: &HostSnapshot,
    cluster: Option<&ClusterSnapshot>,
    now: Timestamp,
    cfg: &Config,
) -> HostValidations {
    match cluster {
        Some(c) => validate_host_in(host, Some(&ClusterContext::new(c, cfg)), now, cfg),
        None => validate_host_in(host, None, now, cfg),
    }
}

/// Runs every host validation with a precomputed cluster context (for whole-cluster refresh).
pub fn validate_host_in(
    host: &HostSnapshot,
    ctx: Option<&ClusterContext<'_>>,
    now: Timestamp,
    cfg: &Config,
) -> HostValidations {
    let req = match ctx {
        Some(c) => c.req,
        None => cfg.hw.for_version(""),
    };
    let sno = ctx.is_some_and(|c| c.cluster.is_sno());
    let role = ctx.map(|c| c.role_of(host)).unwrap_or(HostRole::AutoAssign);
    let min_req = req.min_any_role(sno);
    let role_req = ctx.and_then(|c| c.role_req(role)).unwrap_or(min_req);
    let chk = HostCheck {
        host,
        inv: host.inventory.as_ref(),
        ctx,
        now,
        cfg,
        role,
        role_req,
        min_req,
    };
    let ignored = |id: HostValidationId| {
        id.ignorable()
            && ctx.is_some_and(|c| {
                c.cluster
                    .ignored_host_validations
                    .iter()
                    .any(|s| s == id.as_str() || s == "all")
            })
    };
    let mut results = Vec::with_capacity(HOST_VALIDATIONS.len() + 29);
    for row in HOST_VALIDATIONS {
        let id = row.id;
        let (status, message) = if cfg
            .disabled_host_validations
            .iter()
            .any(|d| d == id.as_str())
        {
            (Disabled, "Validation is disabled".to_string())
        } else {
            (row.check)(&chk)
        };
        results.push(ValidationResult {
            id,
            status,
            message,
            ignored: ignored(id),
        });
    }
    for id in HostValidationId::ALL
        .iter()
        .filter(|i| i.category() == "operators")
    {
        // Operators cannot be selected through the kube API yet: none is enabled.
        results.push(ValidationResult {
            id: *id,
            status: Success,
            message: format!("{} is disabled", operator_name(id.as_str())),
            ignored: false,
        });
    }
    Validations { results }
}

fn v_connected(c: &HostCheck) -> Check {
    if c.host.rebooted() {
        return ok("Host is connected");
    }
    let mut limit = c.cfg.host_disconnection_timeout;
    if c.host.bootstrap {
        limit += c.cfg.bootstrap_extra_disconnection;
    }
    match c.host.checked_in_at {
        Some(t) if elapsed(c.now, t) <= limit => ok("Host is connected"),
        _ => fail("Host is disconnected"),
    }
}

fn v_media_connected(c: &HostCheck) -> Check {
    if c.host.media_connected {
        ok("Media device is connected")
    } else {
        fail("Media device is disconnected")
    }
}

fn v_has_inventory(c: &HostCheck) -> Check {
    match c.inv {
        Some(_) => ok("Valid inventory exists for the host"),
        None => fail("Inventory has not been received for the host"),
    }
}

fn v_not_partially_truncated(c: &HostCheck) -> Check {
    match c.inv.map(|i| i.truncation) {
        None => pending(NO_INVENTORY),
        Some(Truncation::Partial) => fail("Inventory has been partially truncated by the agent"),
        Some(_) => ok("Inventory has not been truncated"),
    }
}

fn v_not_fully_truncated(c: &HostCheck) -> Check {
    match c.inv.map(|i| i.truncation) {
        None => pending(NO_INVENTORY),
        Some(Truncation::Full) => fail(
            "Inventory has been fully truncated or could not be parsed; hardware details are unavailable",
        ),
        Some(_) => ok("Inventory has not been fully truncated"),
    }
}

fn v_min_cpu(c: &HostCheck) -> Check {
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    if inv.cpu.count >= c.min_req.cpu_cores {
        ok("Sufficient CPU cores")
    } else {
        fail(format!(
            "The host is not eligible to participate in Openshift Cluster because the minimum required CPU cores for any role is {}, found only {}",
            c.min_req.cpu_cores, inv.cpu.count
        ))
    }
}

fn v_min_memory(c: &HostCheck) -> Check {
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    if memory_sufficient(inv, c.min_req.ram_mib) {
        ok("Sufficient minimum RAM")
    } else {
        fail(format!(
            "The host is not eligible to participate in Openshift Cluster because the minimum required RAM for any role is {}, found only {}",
            gib(c.min_req.ram_mib << 20),
            gib(inv.memory.physical_bytes)
        ))
    }
}

fn v_min_disks(c: &HostCheck) -> Check {
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    let min_gb = c.role_req.disk_size_gb.min(c.min_req.disk_size_gb);
    if eligible_disks(inv, min_gb).next().is_some() {
        ok("Sufficient disk capacity")
    } else {
        fail(
            "No eligible disks were found, please check specific disks to see why they are not eligible",
        )
    }
}

fn v_machine_cidr_defined(c: &HostCheck) -> Check {
    let Some(cl) = c.cluster() else {
        return ok(NOT_BOUND);
    };
    if cl.is_day2() || c.host.is_day2() {
        ok("No Machine Network CIDR validation needed: Day2 cluster")
    } else if cl.umn() {
        ok("No Machine Network CIDR needed: User Managed Networking")
    } else if cl.machine_networks.is_empty() {
        fail(
            "Machine Network CIDR is undefined; the Machine Network CIDR can be defined by setting either the API or Ingress virtual IPs",
        )
    } else {
        ok("Machine Network CIDR is defined")
    }
}

fn v_cpu_for_role(c: &HostCheck) -> Check {
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    if c.role == HostRole::AutoAssign {
        return ok("Sufficient CPU cores for any role");
    }
    if inv.cpu.count >= c.role_req.cpu_cores {
        ok(format!("Sufficient CPU cores for role {}", c.role))
    } else {
        fail(format!(
            "Require at least {} CPU cores for {} role, found only {}",
            c.role_req.cpu_cores, c.role, inv.cpu.count
        ))
    }
}

fn v_memory_for_role(c: &HostCheck) -> Check {
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    if c.role == HostRole::AutoAssign {
        return ok("Sufficient RAM for any role");
    }
    if memory_sufficient(inv, c.role_req.ram_mib) {
        ok(format!("Sufficient RAM for role {}", c.role))
    } else {
        fail(format!(
            "Require at least {} RAM for role {}, found only {}",
            gib(c.role_req.ram_mib << 20),
            c.role,
            gib(inv.memory.physical_bytes)
        ))
    }
}

fn v_hostname_unique(c: &HostCheck) -> Check {
    let Some(ctx) = c.ctx else {
        return ok(NOT_BOUND);
    };
    let name = c.host.hostname();
    if name.is_empty() {
        return pending(NO_INVENTORY);
    }
    if ctx.hostnames.get(name).copied().unwrap_or(0) > 1 {
        fail(format!("Hostname {name} is not unique in cluster"))
    } else {
        ok(format!("Hostname {name} is unique in cluster"))
    }
}

fn v_hostname_valid(c: &HostCheck) -> Check {
    let name = c.host.hostname();
    if name.is_empty() && c.inv.is_none() {
        return pending(NO_INVENTORY);
    }
    match hostname_problem(name) {
        None => ok(format!("Hostname {name} is allowed")),
        Some(p) => fail(p),
    }
}

fn v_belongs_to_machine_cidr(c: &HostCheck) -> Check {
    let Some(ctx) = c.ctx else {
        return ok(NOT_BOUND);
    };
    if ctx.cluster.umn() || ctx.cluster.is_day2() || c.host.is_day2() {
        return ok("No machine network CIDR validation needed: User Managed Networking");
    }
    let Some(inv) = c.inv else {
        return pending("Missing inventory or machine network CIDR");
    };
    if ctx.machine_nets.is_empty() {
        return pending("Missing inventory or machine network CIDR");
    }
    let all = ctx.machine_nets.iter().all(|net| {
        inv.all_addresses()
            .filter_map(Cidr::parse_interface)
            .any(|(ip, _)| net.contains(ip))
    });
    if all {
        ok("Host belongs to all machine network CIDRs")
    } else {
        fail(
            "Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks",
        )
    }
}

fn v_ignition_downloadable(c: &HostCheck) -> Check {
    if !c.host.is_day2() {
        return ok("Ignition is downloadable");
    }
    match c.host.api_vip_connectivity {
        None => pending("Ignition is not ready, pending API connectivity check"),
        Some(true) => ok("Ignition is downloadable"),
        Some(false) => fail(
            "Ignition is not downloadable. Please ensure host connectivity to the cluster's API",
        ),
    }
}

fn v_majority_group(c: &HostCheck) -> Check {
    let Some(ctx) = c.ctx else {
        return ok(NOT_BOUND);
    };
    if ctx.cluster.is_sno() || c.host.is_day2() || ctx.cluster.is_day2() {
        return ok("Host has connectivity to the majority of hosts in the cluster");
    }
    let peers: Vec<&str> = ctx
        .day1_hosts
        .iter()
        .filter(|p| p.id != c.host.id)
        .map(|p| p.id.as_str())
        .collect();
    if peers.len() < 2 {
        return pending("Not enough hosts in cluster to calculate connectivity groups");
    }
    if c.host.connectivity.is_empty() {
        return pending("Waiting for connectivity check results");
    }
    let me = c.host.id.as_str();
    let mutual = peers
        .iter()
        .filter(|p| ctx.l3.contains(&(me, **p)) && ctx.l3.contains(&(**p, me)))
        .count();
    if mutual * 2 >= peers.len() {
        ok("Host has connectivity to the majority of hosts in the cluster")
    } else {
        fail("No connectivity to the majority of hosts in the cluster")
    }
}

fn v_platform_network(c: &HostCheck) -> Check {
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    let openstack = inv
        .system_vendor
        .product_name
        .eq_ignore_ascii_case("OpenStack Compute");
    if openstack && !c.umn() {
        fail(
            "Platform OpenStack Compute is allowed only for Single Node OpenShift or user-managed networking",
        )
    } else {
        ok(format!(
            "Platform {} is allowed",
            if inv.system_vendor.product_name.is_empty() {
                "unknown"
            } else {
                &inv.system_vendor.product_name
            }
        ))
    }
}

fn v_ntp_synced(c: &HostCheck) -> Check {
    if c.host.ntp_sources.is_empty() {
        return pending("Waiting for NTP synchronization results");
    }
    if c.host
        .ntp_sources
        .iter()
        .any(|s| s.source_state == "synced")
    {
        ok("Host NTP is synced")
    } else {
        fail("Host couldn't synchronize with any NTP server")
    }
}

fn v_time_synced(c: &HostCheck) -> Check {
    let (Some(host_ts), Some(checked)) = (c.host.host_timestamp, c.host.checked_in_at) else {
        return pending("Waiting for the host to report its clock");
    };
    let service_ahead = elapsed(checked, host_ts);
    let host_ahead = elapsed(host_ts, checked);
    if service_ahead > c.cfg.service_ahead_max_skew || host_ahead > c.cfg.host_ahead_max_skew {
        fail("Host clock is not synchronized with the service; configure NTP on the host")
    } else {
        ok("Host clock is synchronized with service")
    }
}

fn v_images_available(c: &HostCheck) -> Check {
    let failed: Vec<&str> = c
        .host
        .images_status
        .iter()
        .filter(|i| i.result == "failure")
        .map(|i| i.name.as_str())
        .collect();
    if failed.is_empty() {
        ok(
            "All required container images were either pulled successfully or no attempt was made to pull them",
        )
    } else {
        fail(format!(
            "Failed to fetch container images needed for installation from {}. This may be due to a network hiccup. Retry to install again. If this problem persists, check your network settings to make sure you’re not blocked.",
            failed.join(",")
        ))
    }
}

/// Same-role peers' L3 results as (rtt ms, loss %).
fn same_role_links(c: &HostCheck) -> Option<Vec<(f64, f64)>> {
    let ctx = c.ctx?;
    if ctx.cluster.is_sno() || c.host.is_day2() || c.role == HostRole::AutoAssign {
        return None;
    }
    let is_peer = |id: &str| {
        id != c.host.id
            && ctx
                .day1_by_id
                .get(id)
                .is_some_and(|p| ctx.role_of(p) == c.role)
    };
    Some(
        c.host
            .connectivity
            .iter()
            .filter(|r| is_peer(&r.host_id))
            .flat_map(|r| r.l3_connectivity.iter())
            .map(|l| (l.average_rtt_ms, l.packet_loss_percentage))
            .collect(),
    )
}

fn v_latency(c: &HostCheck) -> Check {
    let (Some(links), Some(max)) = (same_role_links(c), c.role_req.network_latency_threshold_ms)
    else {
        return ok("Network latency requirement has been satisfied.");
    };
    let worst = links.iter().map(|l| l.0).fold(0.0, f64::max);
    if worst.is_nan() || worst > max {
        fail(format!(
            "Network latency requirement of less than or equal to {max} ms not met by the connectivity between the {} host and its peers: {worst} ms",
            c.role
        ))
    } else {
        ok("Network latency requirement has been satisfied.")
    }
}

fn v_packet_loss(c: &HostCheck) -> Check {
    let (Some(links), Some(max)) = (same_role_links(c), c.role_req.packet_loss_percentage) else {
        return ok("Packet loss requirement has been satisfied.");
    };
    let worst = links.iter().map(|l| l.1).fold(0.0, f64::max);
    if worst.is_nan() || worst > max {
        fail(format!(
            "Packet loss percentage requirement of less than or equal to {max}% not met by the connectivity between the {} host and its peers: {worst}%",
            c.role
        ))
    } else {
        ok("Packet loss requirement has been satisfied.")
    }
}

fn v_default_route(c: &HostCheck) -> Check {
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    if inv.routes.iter().any(|r| r.is_default()) {
        ok("Host has been configured with at least one default route.")
    } else {
        fail("Host has not yet been configured with a default route.")
    }
}

/// DNS names are checked when networking is user-managed (day-1) or for day-2 hosts (API only).
fn dns_check(c: &HostCheck, prefix: &str, day2_too: bool, what: &str) -> Check {
    let Some(cl) = c.cluster() else {
        return ok(NOT_BOUND);
    };
    let day2 = c.host.is_day2() || cl.is_day2();
    let required = if day2 { day2_too } else { cl.umn() };
    let name = format!("{prefix}.{}", cl.domain());
    if !required || cl.base_domain.is_empty() {
        return ok(format!(
            "Domain name resolution for the {name} domain was successful or not required"
        ));
    }
    let Some(res) = &c.host.domain_resolutions else {
        return pending(format!("Waiting for the domain name resolution of {name}"));
    };
    let found = res.iter().find(|r| r.domain_name == name && r.resolved());
    match found {
        Some(r) => {
            let vips: &[String] = match what {
                "api" => &cl.api_vips,
                "apps" => &cl.ingress_vips,
                _ => &[],
            };
            let matches_vip = vips.is_empty()
                || r.ipv4_addresses
                    .iter()
                    .chain(r.ipv6_addresses.iter())
                    .any(|a| vips.iter().any(|v| parse_ip(v) == parse_ip(a)));
            if matches_vip {
                ok(format!(
                    "Domain name resolution for the {name} domain was successful or not required"
                ))
            } else {
                fail(format!(
                    "Domain {name} must resolve to the {what} virtual IP address"
                ))
            }
        }
        None => fail(format!(
            "Couldn't resolve domain name {name} on the host. To continue installation, create the necessary DNS entries to resolve this domain name to your cluster's {what} address"
        )),
    }
}

fn v_dns_api(c: &HostCheck) -> Check {
    dns_check(c, "api", true, "api")
}
fn v_dns_api_int(c: &HostCheck) -> Check {
    dns_check(c, "api-int", false, "api-int")
}
fn v_dns_apps(c: &HostCheck) -> Check {
    dns_check(c, "console-openshift-console.apps", false, "apps")
}
fn v_dns_release(_: &HostCheck) -> Check {
    ok("Release domain name resolution is not required")
}

/// The name resolved to detect a wildcard DNS record (`*.<cluster>.<domain>`).
pub const WILDCARD_PROBE: &str = "validateNoWildcardDNS";

fn v_dns_wildcard(c: &HostCheck) -> Check {
    let Some(cl) = c.cluster() else {
        return ok(NOT_BOUND);
    };
    if cl.is_day2() || c.host.is_day2() || cl.base_domain.is_empty() {
        return ok("DNS wildcard check is not required for day2");
    }
    let name = format!("{WILDCARD_PROBE}.{}", cl.domain());
    let Some(res) = &c.host.domain_resolutions else {
        return pending(
            "DNS wildcard check cannot be performed yet because the host has not yet performed DNS resolution",
        );
    };
    if res.iter().any(|r| r.domain_name == name && r.resolved()) {
        fail(format!(
            "DNS wildcard configuration was detected for domain *.{} - the installation will not be able to complete while this record exists. Please remove it to proceed.",
            cl.domain()
        ))
    } else {
        ok("DNS wildcard check was successful")
    }
}

fn v_platform_compatible(c: &HostCheck) -> Check {
    let Some(cl) = c.cluster() else {
        return ok(NOT_BOUND);
    };
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    let vendor = &inv.system_vendor;
    let compatible = match cl.platform {
        PlatformType::VSphere => vendor.manufacturer.to_ascii_lowercase().contains("vmware"),
        PlatformType::Nutanix => vendor.product_name.eq_ignore_ascii_case("AHV"),
        PlatformType::Oci => vendor.manufacturer.to_ascii_lowercase().contains("oracle"),
        _ => true,
    };
    if compatible {
        ok(format!(
            "Host is compatible with cluster platform {}",
            cl.platform
        ))
    } else {
        fail(format!(
            "Host is not compatible with cluster platform {}; either disable this host or choose a compatible cluster platform",
            cl.platform
        ))
    }
}

fn v_disk_encryption(c: &HostCheck) -> Check {
    let Some(cl) = c.cluster() else {
        return ok(NOT_BOUND);
    };
    let Some(enc) = &cl.disk_encryption else {
        return ok("Installation disk encryption is not enabled");
    };
    let applies = enc.enable_on.split(',').map(str::trim).any(|on| match on {
        "all" => true,
        "masters" => matches!(c.role, HostRole::Master | HostRole::Bootstrap),
        "workers" => c.role == HostRole::Worker,
        "arbiters" => c.role == HostRole::Arbiter,
        _ => false,
    });
    if !applies {
        return ok("Installation disk encryption is not enabled for this host's role");
    }
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    match enc.mode.as_str() {
        "tang" => match c.host.tang_connectivity {
            None => pending("Waiting for the Tang connectivity check"),
            Some(true) => ok("Installation disk can be encrypted using tang"),
            Some(false) => {
                fail("Could not validate that all Tang servers are reachable and working")
            }
        },
        _ if inv.tpm_version == "2.0" => ok("Installation disk can be encrypted using tpmv2"),
        _ if inv.tpm_version.is_empty() || inv.tpm_version == "none" => {
            fail("TPM version could not be found, make sure TPM is enabled in host's BIOS")
        }
        _ => fail(format!(
            "The host's TPM version is not supported, expected-version: 2.0, actual-version: {}",
            inv.tpm_version
        )),
    }
}

fn v_non_overlapping_subnets(c: &HostCheck) -> Check {
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    let mut nets: Vec<(&str, Cidr)> = Vec::new();
    for nic in &inv.interfaces {
        for a in nic.addresses() {
            if let Some((_, n)) = Cidr::parse_interface(a) {
                if let Some((other, on)) = nets
                    .iter()
                    .find(|(name, on)| *name != nic.name && on.overlaps(&n))
                {
                    return fail(format!(
                        "Address networks are overlapping: {} ({}) and {} ({})",
                        nic.name,
                        a,
                        other,
                        on.prefix()
                    ));
                }
                nets.push((nic.name.as_str(), n));
            }
        }
    }
    ok("Host subnets are not overlapping")
}

fn v_vsphere_disk_uuid(c: &HostCheck) -> Check {
    let vsphere = c
        .cluster()
        .is_some_and(|cl| cl.platform == PlatformType::VSphere);
    let Some(inv) = c.inv else {
        return pending(NO_INVENTORY);
    };
    if !vsphere || !inv.system_vendor.is_virtual {
        return ok("VSphere disk.EnableUUID is not relevant for this host");
    }
    if inv.disks.iter().any(|d| !d.by_id.is_empty()) {
        ok("VSphere disk.EnableUUID is enabled for this virtual machine")
    } else {
        fail(
            "VSphere disk.EnableUUID isn't enabled for this virtual machine, it's necessary for disks to be mounted properly",
        )
    }
}

fn v_compatible_agent(c: &HostCheck) -> Check {
    if c.cfg.agent_image.is_empty() {
        return ok("Host agent compatibility checking is disabled");
    }
    if c.host.discovery_agent_version == c.cfg.agent_image {
        ok("Host agent is compatible with the service")
    } else {
        fail(
            "This host's agent is not compatible with the service. Restart the host with a freshly downloaded discovery image",
        )
    }
}

fn v_no_skip_installation_disk(c: &HostCheck) -> Check {
    let disk = installation_disk(c.host, c.role_req.disk_size_gb);
    match disk {
        Some(d) if c.host.skip_formatting_disks.iter().any(|s| s == d.key()) => fail(
            "Requesting to skip the formatting of the installation disk is not allowed. The installation disk must be formatted. Please either change this host's installation disk or do not skip the formatting of the installation disk",
        ),
        _ => ok("No request to skip formatting of the installation disk"),
    }
}

fn v_no_skip_missing_disk(c: &HostCheck) -> Check {
    let Some(inv) = c.inv else {
        return ok("All disks that have skipped formatting are present in the host inventory");
    };
    let missing = c
        .host
        .skip_formatting_disks
        .iter()
        .any(|s| !inv.disks.iter().any(|d| d.key() == s));
    if missing {
        fail(
            "One or more disks that were requested to skip formatting are missing from the host inventory",
        )
    } else {
        ok("All disks that have skipped formatting are present in the host inventory")
    }
}

/// Addresses that answered ARP with more than one MAC, and those MACs (sorted), as upstream's
/// cluster manager derives them (`getCollidingIPs`): only the connectivity check's L2 answers
/// count, never the addresses hosts list (every host lists loopback, link-local addresses
/// repeat on every link). Within one host's report, the same address answering on the same
/// outgoing NIC with two different MACs is a collision. Upstream keeps the last host's
/// collisions only; here every host's count.
pub fn ip_collisions(hosts: &[HostSnapshot]) -> BTreeMap<IpAddr, Vec<&str>> {
    let mut out: BTreeMap<IpAddr, Vec<&str>> = BTreeMap::new();
    for h in hosts {
        // (outgoing NIC, remote address) → the MAC that answered last.
        let mut seen: HashMap<(&str, &str), &str> = HashMap::new();
        let answers = h.connectivity.iter().flat_map(|r| &r.l2_connectivity);
        for a in answers {
            let key = (a.outgoing_nic.as_str(), a.remote_ip_address.as_str());
            let previous = seen.insert(key, a.remote_mac.as_str());
            if let Some(prev) = previous
                && !prev.is_empty()
                && prev != a.remote_mac
                && let Some(ip) = parse_ip(&a.remote_ip_address)
            {
                let mut macs = vec![prev, a.remote_mac.as_str()];
                macs.sort_unstable();
                out.insert(ip, macs);
            }
        }
    }
    out
}

fn v_no_ip_collisions(c: &HostCheck) -> Check {
    let Some(ctx) = c.ctx else {
        return ok("Cluster has not yet been defined, skipping validation.");
    };
    let Some(inv) = c.inv else {
        return ok("Host inventory has not yet been defined, skipping validation.");
    };
    if ctx.cluster.is_day2() {
        return ok(format!("Skipping validation for day 2 host {}", c.host.id));
    }
    let own: HashSet<IpAddr> = inv.all_addresses().filter_map(parse_ip).collect();
    let lines: Vec<String> = ctx
        .ip_collisions
        .iter()
        .filter(|(ip, _)| own.contains(ip))
        .map(|(ip, macs)| {
            format!(
                "Collisions detected for host ID {}, IP address: {ip} Mac addresses: {}\n",
                c.host.id,
                macs.join(",")
            )
        })
        .collect();
    if lines.is_empty() {
        ok(format!(
            "No IP collisions were detected by host {}",
            c.host.id
        ))
    } else {
        fail(lines.concat())
    }
}

fn v_iscsi_nic(c: &HostCheck) -> Check {
    let Some(ctx) = c.ctx else {
        return ok(NOT_BOUND);
    };
    let disk = installation_disk(c.host, c.role_req.disk_size_gb);
    let in_machine_net = disk
        .filter(|d| d.drive_type.eq_ignore_ascii_case("iSCSI"))
        .and_then(|d| d.iscsi.as_ref())
        .and_then(|i| parse_ip(&i.host_ip_address))
        .is_some_and(|ip| ctx.machine_nets.iter().any(|n| n.contains(ip)));
    if in_machine_net {
        fail("Network interface connected to iSCSI disk cannot belong to machine network CIDRs")
    } else {
        ok(
            "Installation disk is not iSCSI or its network interface does not belong to machine network CIDRs",
        )
    }
}

fn v_mtu(c: &HostCheck) -> Check {
    let bad = c
        .host
        .connectivity
        .iter()
        .flat_map(|r| r.mtu_report.iter())
        .any(|m| !m.mtu_successful);
    if bad {
        fail(
            "MTU is not consistent with the connectivity peers; packets of the configured size are dropped",
        )
    } else {
        ok("MTU is ok")
    }
}

fn v_disk_speed(c: &HostCheck) -> Check {
    match c.host.disk_speed {
        DiskSpeed::NotMeasured => ok("Speed of installation disk has not yet been measured"),
        DiskSpeed::Sufficient => ok("Speed of installation disk is sufficient"),
        DiskSpeed::Insufficient => fail(
            "While preparing the previous installation the installation disk speed measurement failed or was found to be insufficient",
        ),
    }
}
