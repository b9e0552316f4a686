//! Cluster validations as a table of rows: each row names its validation id, says in one line why
//! it exists, and holds its check. Rows run in table order, which is the order of the results
//! (and of `validations_info`); the operator validations follow, all disabled.

use std::collections::HashSet;
use std::net::IpAddr;

use super::super::net::{Cidr, parse_ip};
use super::super::roles::HostView;
use super::super::snapshot::*;
use super::super::types::*;
use super::super::validation_ids::*;
use super::{Check, ClusterValidations, Validations, fail, ok, pending};

/// Cluster validations whose failure means the user must provide input.
pub const CLUSTER_PENDING_GATE: &[ClusterValidationId] = &[
    ClusterValidationId::MachineCidrDefined,
    ClusterValidationId::ClusterCidrDefined,
    ClusterValidationId::ServiceCidrDefined,
    ClusterValidationId::DnsDomainDefined,
    ClusterValidationId::PullSecretSet,
    ClusterValidationId::ApiVipsDefined,
    ClusterValidationId::IngressVipsDefined,
];

/// One row of the cluster validation table.
pub struct ClusterValidation {
    pub id: ClusterValidationId,
    /// Why the check exists, in one sentence. Documentation only; the check never reads it.
    pub why: &'static str,
    check: fn(&ClusterCheck) -> Check,
}

/// What every cluster check may look at: the snapshot, the host views and the networks, parsed
/// once per validation pass.
struct ClusterCheck<'a> {
    cl: &'a ClusterSnapshot,
    cfg: &'a Config,
    /// Day-1 hosts: day-2 hosts join an installed cluster and count for none of these checks.
    day1: Vec<&'a HostView>,
    /// User-managed networking or a day-2 cluster: no machine network or VIPs are required.
    no_vips_needed: bool,
    machine: Vec<Cidr>,
    /// Cluster (pod) networks with their host prefix.
    clusters: Vec<(Cidr, u8)>,
    services: Vec<Cidr>,
    /// Every address the hosts report: a VIP must not be one of them.
    host_ips: HashSet<IpAddr>,
}

impl<'a> ClusterCheck<'a> {
    fn new(cl: &'a ClusterSnapshot, cfg: &'a Config, hosts: &'a [HostView]) -> ClusterCheck<'a> {
        ClusterCheck {
            cl,
            cfg,
            day1: hosts.iter().filter(|h| !h.day2).collect(),
            no_vips_needed: cl.umn() || cl.is_day2(),
            machine: cl
                .machine_networks
                .iter()
                .filter_map(|c| Cidr::parse(c))
                .collect(),
            clusters: cl
                .cluster_networks
                .iter()
                .filter_map(|c| Some((Cidr::parse(&c.cidr)?, c.host_prefix)))
                .collect(),
            services: cl
                .service_networks
                .iter()
                .filter_map(|c| Cidr::parse(c))
                .collect(),
            host_ips: cl
                .hosts
                .iter()
                .filter_map(|h| h.inventory.as_ref())
                .flat_map(|i| i.all_addresses().filter_map(parse_ip))
                .collect(),
        }
    }
}

use ClusterValidationId as Id;

/// `row(id, why, check)`.
const fn row(
    id: ClusterValidationId,
    why: &'static str,
    check: fn(&ClusterCheck) -> Check,
) -> ClusterValidation {
    ClusterValidation { id, why, check }
}

/// The cluster validation table, in upstream's order.
pub static CLUSTER_VALIDATIONS: &[ClusterValidation] = &[
    row(
        Id::MachineCidrDefined,
        "The hosts and the virtual IPs are placed in the machine network, so it must be known",
        v_machine_cidr_defined,
    ),
    row(
        Id::ClusterCidrDefined,
        "The install config needs the pod network",
        v_cluster_cidr_defined,
    ),
    row(
        Id::ServiceCidrDefined,
        "The install config needs the service network",
        v_service_cidr_defined,
    ),
    row(
        Id::NoCidrsOverlapping,
        "Overlapping machine, pod and service networks would make the cluster's routes ambiguous",
        v_no_cidrs_overlapping,
    ),
    row(
        Id::NetworksSameAddressFamilies,
        "Single or dual stack must be the same on the machine, pod and service networks",
        v_same_address_families,
    ),
    row(
        Id::NetworkPrefixValid,
        "Each host takes one host-prefix subnet of the pod network, so the prefix must leave room for every host",
        v_network_prefix_valid,
    ),
    row(
        Id::MachineCidrEqualsToCalculatedCidr,
        "The virtual IPs must sit in the machine network the hosts share",
        v_machine_cidr_matches_vips,
    ),
    row(
        Id::ApiVipsDefined,
        "Without user-managed networking, the cluster serves its API on the API virtual IPs",
        v_api_vips_defined,
    ),
    row(
        Id::ApiVipsValid,
        "An API virtual IP must be a free address of the machine network",
        v_api_vips_valid,
    ),
    row(
        Id::IngressVipsDefined,
        "Without user-managed networking, the cluster serves its routes on the Ingress virtual IPs",
        v_ingress_vips_defined,
    ),
    row(
        Id::IngressVipsValid,
        "An Ingress virtual IP must be a free address of the machine network",
        v_ingress_vips_valid,
    ),
    row(
        Id::AllHostsAreReadyToInstall,
        "The install starts only when every day-1 host passed its own validations",
        v_all_hosts_ready,
    ),
    row(
        Id::SufficientMastersCount,
        "The control plane needs exactly the requested number of masters (one, without workers, for SNO)",
        v_masters_count,
    ),
    row(
        Id::DnsDomainDefined,
        "The cluster's DNS names (api, *.apps) are built on the base domain",
        v_dns_domain_defined,
    ),
    row(
        Id::PullSecretSet,
        "The release images cannot be pulled without the pull secret",
        v_pull_secret_set,
    ),
    row(
        Id::NtpServerConfigured,
        "Host clocks far apart break certificates and etcd during the install",
        v_ntp,
    ),
    row(
        Id::NetworkTypeValid,
        "Only known network plugins install, and OpenShiftSDN only on IPv4 multi-node clusters",
        v_network_type,
    ),
    row(
        Id::CustomManifestsRequirementsSatisfied,
        "Broken image-mode manifests would otherwise fail only mid-install, in the bootstrap MCO",
        v_custom_manifests,
    ),
    row(
        Id::PlatformRequirementsSatisfied,
        "Upstream reports this validation; the platforms supported here add no requirement to check",
        v_platform_requirements,
    ),
];

/// Runs every cluster validation over the snapshot's hosts.
pub fn validate_cluster(cluster: &ClusterSnapshot, cfg: &Config) -> ClusterValidations {
    validate_cluster_with(cluster, cfg, &HostView::from_cluster(cluster, cfg))
}

/// [`validate_cluster`] with explicit host views (e.g. statuses just computed by a host refresh).
pub(crate) fn validate_cluster_with(
    cl: &ClusterSnapshot,
    cfg: &Config,
    hosts: &[HostView],
) -> ClusterValidations {
    let c = ClusterCheck::new(cl, cfg, hosts);
    let checks = CLUSTER_VALIDATIONS
        .iter()
        .map(|row| (row.id, (row.check)(&c)));
    // Operators cannot be selected through the kube API yet: none is enabled.
    let operators = ClusterValidationId::ALL
        .iter()
        .filter(|i| i.category() == "operators")
        .map(|id| {
            (
                *id,
                ok(format!("{} is disabled", operator_name(id.as_str()))),
            )
        });
    let ignored = |id: ClusterValidationId| {
        cl.ignored_cluster_validations
            .iter()
            .any(|s| s == id.as_str() || s == "all")
            && !CLUSTER_PENDING_GATE.contains(&id)
    };
    Validations {
        results: checks
            .chain(operators)
            .map(|(id, (status, message))| ValidationResult {
                id,
                status,
                message,
                ignored: ignored(id),
            })
            .collect(),
    }
}

// ---- networks ------------------------------------------------------------------------------

fn v_machine_cidr_defined(c: &ClusterCheck) -> Check {
    if c.no_vips_needed {
        ok("Machine Network CIDR is not required: User Managed Networking")
    } else if c.machine.is_empty() {
        fail(
            "The Machine Network CIDR is undefined; setting the API or Ingress virtual IPs will set the Machine Network CIDR",
        )
    } else {
        ok("The Machine Network CIDR is defined.")
    }
}

fn v_cluster_cidr_defined(c: &ClusterCheck) -> Check {
    if c.clusters.is_empty() {
        fail("The Cluster Network CIDR is undefined.")
    } else {
        ok("The Cluster Network CIDR is defined.")
    }
}

fn v_service_cidr_defined(c: &ClusterCheck) -> Check {
    if c.services.is_empty() {
        fail("The Service Network CIDR is undefined.")
    } else {
        ok("The Service Network CIDR is defined.")
    }
}

/// A cluster or service network overlapping any other network (machine networks may overlap
/// each other).
fn v_no_cidrs_overlapping(c: &ClusterCheck) -> Check {
    let all_nets: Vec<Cidr> = c
        .machine
        .iter()
        .copied()
        .chain(c.clusters.iter().map(|c| c.0))
        .chain(c.services.iter().copied())
        .collect();
    let overlap = (c.machine.len()..all_nets.len()).any(|i| {
        all_nets
            .iter()
            .enumerate()
            .any(|(j, n)| j != i && n.overlaps(&all_nets[i]))
    });
    if overlap {
        fail("The cluster, service and machine networks must not overlap")
    } else {
        ok("No CIDRS are overlapping.")
    }
}

fn v_same_address_families(c: &ClusterCheck) -> Check {
    let families = |v: &mut dyn Iterator<Item = bool>| {
        let s: HashSet<bool> = v.collect();
        s
    };
    let cf = families(&mut c.clusters.iter().map(|c| c.0.is_v6()));
    let sf = families(&mut c.services.iter().map(|c| c.is_v6()));
    let mf = families(&mut c.machine.iter().map(|c| c.is_v6()));
    if cf == sf && (c.machine.is_empty() || mf == cf) {
        ok("Same address families for all networks.")
    } else {
        fail("Address families of networks (machine, cluster, service) are not the same")
    }
}

fn v_network_prefix_valid(c: &ClusterCheck) -> Check {
    let day1_hosts = c.day1.len().max(1);
    let prefix_problem = c.clusters.iter().find_map(|(c, hp)| {
        let max = if c.is_v6() { 128 } else { 32 };
        if *hp <= c.prefix() || *hp > max || (!c.is_v6() && *hp > 30) {
            return Some(format!("Host prefix /{hp} is not valid for cluster network /{}", c.prefix()));
        }
        let bits = (hp - c.prefix()) as u32;
        if bits < 64 && (1u64 << bits) < day1_hosts as u64 {
            return Some(format!(
                "The cluster network with host prefix /{hp} only has room for {} hosts, fewer than the {day1_hosts} hosts in the cluster",
                1u64 << bits
            ));
        }
        None
    });
    match prefix_problem {
        Some(p) => fail(p),
        None => ok("The Cluster Network prefix is valid."),
    }
}

fn v_machine_cidr_matches_vips(c: &ClusterCheck) -> Check {
    let cl = c.cl;
    let vips_in_machine = cl
        .api_vips
        .iter()
        .chain(cl.ingress_vips.iter())
        .filter_map(|v| parse_ip(v))
        .all(|ip| c.machine.iter().any(|n| n.contains(ip)));
    if c.no_vips_needed {
        ok("The Cluster Machine CIDR is not required: User Managed Networking")
    } else if c.machine.is_empty() {
        pending("The Machine Network CIDR, API virtual IPs, or Ingress virtual IPs are undefined.")
    } else if vips_in_machine {
        ok("The Cluster Machine CIDR is equivalent to the calculated CIDR.")
    } else {
        fail("The virtual IPs do not belong to the machine network")
    }
}

// ---- virtual IPs ---------------------------------------------------------------------------

/// The two kinds of virtual IPs, checked alike.
#[derive(Clone, Copy)]
enum Vip {
    Api,
    Ingress,
}

impl ClusterCheck<'_> {
    /// The VIPs of one kind, the other kind's (none may be reused) and the name in messages.
    fn vips(&self, vip: Vip) -> (&[String], &[String], &'static str) {
        match vip {
            Vip::Api => (&self.cl.api_vips, &self.cl.ingress_vips, "API"),
            Vip::Ingress => (&self.cl.ingress_vips, &self.cl.api_vips, "Ingress"),
        }
    }
}

fn v_api_vips_defined(c: &ClusterCheck) -> Check {
    vips_defined(c, Vip::Api)
}
fn v_api_vips_valid(c: &ClusterCheck) -> Check {
    vips_valid(c, Vip::Api)
}
fn v_ingress_vips_defined(c: &ClusterCheck) -> Check {
    vips_defined(c, Vip::Ingress)
}
fn v_ingress_vips_valid(c: &ClusterCheck) -> Check {
    vips_valid(c, Vip::Ingress)
}

fn vips_defined(c: &ClusterCheck, vip: Vip) -> Check {
    let (vips, _, what) = c.vips(vip);
    if c.no_vips_needed {
        ok(format!(
            "{what} virtual IPs are not required: User Managed Networking"
        ))
    } else if vips.is_empty() {
        fail(format!(
            "{what} virtual IPs are undefined and must be provided."
        ))
    } else {
        ok(format!("{what} virtual IPs are defined."))
    }
}

fn vips_valid(c: &ClusterCheck, vip: Vip) -> Check {
    let (vips, other, what) = c.vips(vip);
    if c.no_vips_needed {
        return ok(format!(
            "{what} virtual IPs are not required: User Managed Networking"
        ));
    }
    if vips.is_empty() {
        return pending(format!("{what} virtual IPs are undefined."));
    }
    let problem = vips.iter().find_map(|v| vip_problem(c, v, other, what));
    match (problem, c.machine.is_empty()) {
        (Some(p), _) => fail(p),
        (None, true) => pending(format!(
            "{what} virtual IPs cannot be validated before the machine network is defined."
        )),
        (None, false) => ok(format!(
            "{} {}",
            what, "virtual IPs belong to the Machine CIDR and are not in use."
        )),
    }
}

/// Why the virtual IP `v` cannot be used, if it cannot.
fn vip_problem(c: &ClusterCheck, v: &str, other: &[String], what: &str) -> Option<String> {
    let Some(ip) = parse_ip(v) else {
        return Some(format!("{what} virtual IP {v} is not a valid IP address"));
    };
    if c.machine.is_empty() {
        return None;
    }
    let Some(net) = c.machine.iter().find(|n| n.contains(ip)) else {
        return Some(format!(
            "{what} virtual IP {v} does not belong to machine-network-cidr"
        ));
    };
    if net.is_network_or_broadcast(ip) {
        return Some(format!(
            "{what} virtual IP {v} is the network or broadcast address of the machine network"
        ));
    }
    if c.host_ips.contains(&ip) {
        return Some(format!(
            "{what} virtual IP {v} is already in use in the machine network"
        ));
    }
    if other.iter().any(|o| parse_ip(o) == Some(ip)) {
        return Some(format!(
            "{what} virtual IP {v} must not be the same as another virtual IP"
        ));
    }
    None
}

// ---- hosts and settings --------------------------------------------------------------------

/// Every day-1 host is ready; once the install started (any other cluster status) host
/// statuses no longer gate it.
fn v_all_hosts_ready(c: &ClusterCheck) -> Check {
    let cl = c.cl;
    let all_ready = !c.day1.is_empty()
        && c.day1.iter().all(|h| {
            matches!(
                h.status,
                HostStatus::Known
                    | HostStatus::PreparingForInstallation
                    | HostStatus::PreparingSuccessful
            ) || (cl.status != ClusterStatus::Ready
                && cl.status != ClusterStatus::Insufficient
                && cl.status != ClusterStatus::PendingForInput)
        });
    if all_ready {
        ok("All hosts in the cluster are ready to install.")
    } else {
        fail("The cluster has hosts that are not ready to install.")
    }
}

fn v_masters_count(c: &ClusterCheck) -> Check {
    masters_count_check(c.cl, &c.day1)
}

fn v_dns_domain_defined(c: &ClusterCheck) -> Check {
    if c.cl.base_domain.is_empty() {
        fail("The base domain is undefined and must be provided.")
    } else {
        ok("The base domain is defined.")
    }
}

fn v_pull_secret_set(c: &ClusterCheck) -> Check {
    if c.cl.pull_secret_set {
        ok("The pull secret is set.")
    } else {
        fail("The pull secret is not set.")
    }
}

fn v_ntp(c: &ClusterCheck) -> Check {
    ntp_check(c.cl, c.cfg)
}

fn v_network_type(c: &ClusterCheck) -> Check {
    network_type_check(c.cl, &c.clusters)
}

fn v_custom_manifests(c: &ClusterCheck) -> Check {
    custom_manifests_check(c.cl)
}

fn v_platform_requirements(_: &ClusterCheck) -> Check {
    ok("Platform requirements satisfied")
}

/// The custom manifests' requirements: upstream's validation, which here also carries image mode
/// at install (MachineOSConfig manifests, `osImageStream`), whose problems the bootstrap MCO would
/// only find mid-install.
fn custom_manifests_check(cl: &ClusterSnapshot) -> Check {
    let image_mode = &cl.image_mode;
    if !image_mode.problems.is_empty() {
        return fail(format!(
            "Image mode at install: {}.",
            image_mode.problems.join("; ")
        ));
    }
    if image_mode.pools.is_empty() {
        return ok("Custom manifests requirements are satisfied");
    }
    let pools: Vec<String> = image_mode
        .pools
        .iter()
        .map(|p| format!("{} on {}", p.pool, p.image))
        .collect();
    ok(format!(
        "Custom manifests requirements are satisfied; image mode at install: {}",
        pools.join(", ")
    ))
}

fn masters_count_check(cl: &ClusterSnapshot, day1: &[&HostView]) -> Check {
    if cl.is_day2() {
        return ok("The cluster has the exact amount of dedicated control plane nodes.");
    }
    let masters = day1
        .iter()
        .filter(|h| matches!(h.role, HostRole::Master | HostRole::Bootstrap))
        .count() as u32;
    let auto = day1
        .iter()
        .filter(|h| h.role == HostRole::AutoAssign)
        .count() as u32;
    let workers = day1.iter().filter(|h| h.role == HostRole::Worker).count() as u32;
    let cp = cl.control_plane_count;
    if cl.is_sno() {
        return if masters + auto == 1 && workers == 0 && day1.len() == 1 {
            ok("The cluster has the exact amount of dedicated control plane nodes.")
        } else {
            fail("Single-node clusters must have a single control plane node and no workers.")
        };
    }
    if masters <= cp && masters + auto >= cp {
        ok("The cluster has the exact amount of dedicated control plane nodes.")
    } else {
        fail(format!(
            "The cluster must have exactly {cp} dedicated control plane nodes. Add or remove hosts, or change their roles configurations to meet the requirement."
        ))
    }
}

fn ntp_check(cl: &ClusterSnapshot, cfg: &Config) -> Check {
    let offsets: Vec<i64> = cl
        .hosts
        .iter()
        .filter_map(|h| Some(h.host_timestamp?.as_second() - h.checked_in_at?.as_second()))
        .collect();
    let (Some(min), Some(max)) = (offsets.iter().min(), offsets.iter().max()) else {
        return ok("Host clocks are synchronized");
    };
    if (max - min) as u64 > cfg.cluster_max_host_time_diff.as_secs() {
        fail(format!(
            "Hosts' clocks are not synchronized (there's more than a {} minutes gap between clocks), please configure an NTP server via DHCP or set clocks manually.",
            cfg.cluster_max_host_time_diff.as_secs() / 60
        ))
    } else {
        ok("Host clocks are synchronized, there's no more than a 4 minute gap between clocks")
    }
}

fn network_type_check(cl: &ClusterSnapshot, clusters: &[(Cidr, u8)]) -> Check {
    const VALID: &[&str] = &[
        "OpenShiftSDN",
        "OVNKubernetes",
        "Cilium",
        "Calico",
        "CiscoACI",
        "None",
    ];
    let Some(nt) = cl.network_type.as_deref().filter(|s| !s.is_empty()) else {
        return ok("The cluster has a valid network type");
    };
    if !VALID.contains(&nt) {
        return fail(format!("Network type {nt} is not supported"));
    }
    if nt == "OpenShiftSDN" && (cl.is_sno() || clusters.iter().any(|c| c.0.is_v6())) {
        return fail("OpenShiftSDN is supported only for IPv4 multi-node clusters");
    }
    ok("The cluster has a valid network type")
}
