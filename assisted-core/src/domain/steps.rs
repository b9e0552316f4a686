//! Next-steps computation: which steps the agent runs in each host state, with step ids and the
//! JSON request documents (upstream snake_case field names) as args.

use serde::{Deserialize, Serialize};

use super::net::{Cidr, parse_ip};
use super::snapshot::*;
use super::types::*;
use super::validations::{WILDCARD_PROBE, installation_disk};

/// Response of GET next-steps (`steps`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Steps {
    pub next_instruction_seconds: u32,
    pub post_step_action: PostStepAction,
    pub instructions: Vec<Step>,
}

/// One step (`step`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub step_type: StepType,
    pub step_id: String,
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proxy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
}

/// `install_cmd_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallCmdRequest {
    pub cluster_id: String,
    pub infra_env_id: String,
    pub host_id: String,
    pub role: HostRole,
    pub boot_device: String,
    pub controller_image: String,
    pub installer_image: String,
    pub control_plane_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    pub check_cvo: bool,
    pub disks_to_format: Vec<String>,
    pub must_gather_image: String,
    pub mco_image: String,
    pub openshift_version: String,
    pub service_ips: Vec<String>,
    /// Upstream's model declares a string: the host's installer arguments as a JSON array.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub installer_args: String,
    /// `Full`, or `None` for a single-node cluster (upstream's enum).
    pub high_availability_mode: String,
    pub skip_installation_disk_cleanup: bool,
    pub enable_skip_mco_reboot: bool,
    pub notify_num_reboots: bool,
    pub coreos_image: String,
}

/// `logs_gather_cmd_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogsGatherCmdRequest {
    pub cluster_id: String,
    pub infra_env_id: String,
    pub host_id: String,
    pub bootstrap: bool,
    pub installer_gather: bool,
    pub master_ips: Vec<String>,
}

/// `upgrade_agent_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpgradeAgentRequest {
    pub agent_image: String,
}

/// `dhcp_allocation_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DhcpAllocationRequest {
    pub interface: String,
    pub api_vip_mac: String,
    pub ingress_vip_mac: String,
}

/// `api_vip_connectivity_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiVipConnectivityRequest {
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_certificate: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignition_endpoint_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainResolutionRequestDomain {
    pub domain_name: String,
}

/// `domain_resolution_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainResolutionRequest {
    pub domains: Vec<DomainResolutionRequestDomain>,
}

/// `ntp_synchronization_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NtpSynchronizationRequest {
    pub ntp_source: String,
}

/// `container_image_availability_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerImageAvailabilityRequest {
    pub images: Vec<String>,
    pub timeout: u64,
}

/// `disk_speed_check_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskSpeedCheckRequest {
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyVip {
    pub vip: String,
    /// `api` or `ingress`
    pub vip_type: String,
}

/// `verify_vips_request`: upstream's model is a bare array of `verify_vip`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VerifyVipsRequest {
    pub vips: Vec<VerifyVip>,
}

/// `tang_connectivity_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TangConnectivityRequest {
    pub tang_servers: String,
}

/// `download_boot_artifacts_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DownloadBootArtifactsRequest {
    pub host_fs_mount_dir: String,
    pub initrd_url: String,
    pub kernel_url: String,
    pub rootfs_url: String,
}

/// `reboot_for_reclaim_request`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebootForReclaimRequest {
    pub host_fs_mount_dir: String,
}

/// One peer in the connectivity-check request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectivityCheckHost {
    pub host_id: String,
    pub nics: Vec<ConnectivityCheckNic>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectivityCheckNic {
    pub name: String,
    pub mac: String,
    pub ip_addresses: Vec<String>,
}

/// [`ConnectivityCheckHost`] borrowing from the snapshot (same JSON).
#[derive(Serialize)]
struct PeerRef<'a> {
    host_id: &'a str,
    nics: Vec<NicRef<'a>>,
}

/// [`ConnectivityCheckNic`] borrowing from the snapshot (same JSON).
#[derive(Serialize)]
struct NicRef<'a> {
    name: &'a str,
    mac: &'a str,
    ip_addresses: Vec<&'a str>,
}

/// Boot artifact URLs for the reclaim flow (from the host's InfraEnv).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootArtifactUrls {
    pub kernel_url: String,
    pub initrd_url: String,
    pub rootfs_url: String,
}

/// `next_step_cmd_request`, `args[0]` of the registration response's runner command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextStepCmdRequest {
    pub infra_env_id: String,
    pub host_id: String,
    pub agent_version: String,
}

/// `next_step_runner_command` of `host_registration_response`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextStepRunnerCommand {
    pub command: String,
    pub args: Vec<String>,
    pub retry_seconds: u32,
}

/// The runner command returned on registration: the agent keeps polling next-steps with it.
pub fn next_step_runner_command(host: &HostSnapshot, agent_image: &str) -> NextStepRunnerCommand {
    NextStepRunnerCommand {
        command: String::new(),
        args: vec![json(&NextStepCmdRequest {
            infra_env_id: host.infra_env_id.clone(),
            host_id: host.id.clone(),
            agent_version: agent_image.to_string(),
        })],
        retry_seconds: 60,
    }
}

/// Where the agent mounts the installed host filesystem for reclaim.
pub const HOST_FS_MOUNT_DIR: &str = "/host";
/// Upstream image-availability timeout (16 minutes).
pub const IMAGE_AVAILABILITY_TIMEOUT_SECS: u64 = 960;
/// Upstream disk-speed-check timeout (`DISK_CHECK_TIMEOUT`, 8 minutes): the agent runs the
/// check under `timeout <seconds>` and refuses the step without it.
pub const DISK_SPEED_CHECK_TIMEOUT_SECS: f64 = 480.0;

/// `additionalNTPSources` of each InfraEnv (by InfraEnv id), for the NTP step's fallback.
pub type NtpSourcesByInfraEnv = std::collections::BTreeMap<String, Vec<String>>;

/// Inputs of [`next_steps`].
pub struct NextStepsInput<'a> {
    pub host: &'a HostSnapshot,
    /// The host's cluster (`None` when unbound).
    pub cluster: Option<&'a ClusterSnapshot>,
    pub cfg: &'a Config,
    /// Entropy for step ids (a random number or request counter); same seed, same ids.
    pub seed: u64,
    pub boot_artifacts: Option<&'a BootArtifactUrls>,
    /// Whether this answer carries the connectivity check (upstream's pace in clusters over 150
    /// hosts, `connectivity_pace.rs`).
    pub connectivity_check: bool,
}

/// `<type>-<8 hex>` derived from the host, step type, position and seed (FNV-1a).
pub fn step_id(step_type: StepType, host_id: &str, seed: u64, index: usize) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u32;
            h = h.wrapping_mul(0x0100_0193);
        }
    };
    eat(step_type.as_str().as_bytes());
    eat(host_id.as_bytes());
    eat(&seed.to_le_bytes());
    eat(&(index as u64).to_le_bytes());
    format!("{}-{:08x}", step_type.as_str(), h)
}

fn json<T: Serialize>(v: &T) -> String {
    // Serializing these plain structs cannot fail; an empty document is a safe fallback.
    serde_json::to_string(v).unwrap_or_default()
}

/// Computes the steps for the host's current state (no InfraEnv NTP sources known: see
/// [`next_steps_with_ntp`]).
pub fn next_steps(input: &NextStepsInput) -> Steps {
    next_steps_with_ntp(input, &NtpSourcesByInfraEnv::new())
}

/// Computes the steps for the host's current state; `infra_env_ntp` holds the InfraEnvs' NTP
/// sources, which the NTP step asks for when the cluster names none ([`ntp_source`]).
/// Whether a host in this state gets the connectivity check when it is due: the discovery states,
/// the ones whose validations read connectivity. The store asks the cluster's connectivity pace
/// only for these, as upstream asks its rate limiter only from the connectivity command: a host
/// still discovering or already installing must not use up one of the cluster's admissions.
pub fn state_carries_connectivity_check(status: HostStatus) -> bool {
    matches!(
        status,
        HostStatus::Known | HostStatus::Insufficient | HostStatus::PendingForInput
    )
}

pub fn next_steps_with_ntp(input: &NextStepsInput, infra_env_ntp: &NtpSourcesByInfraEnv) -> Steps {
    let h = input.host;
    let mut interval = 60;
    let mut action = PostStepAction::Continue;
    let mut plan: Vec<(StepType, Vec<String>)> = Vec::new();
    if let Some(upgrade) = agent_upgrade_step(input) {
        // An outdated agent is upgraded before it does anything else.
        plan.push(upgrade);
        return finish(input, interval, action, plan);
    }
    use HostStatus as S;
    match h.status {
        // The states of `state_carries_connectivity_check`.
        S::Known | S::Insufficient | S::PendingForInput => {
            discovery_steps(input, infra_env_ntp, &mut plan)
        }
        S::Discovering => plan.push(inventory_step(input)),
        S::Disconnected => {
            interval = 120;
            plan.push(inventory_step(input));
        }
        S::PreparingForInstallation => {
            dhcp_step(input, &mut plan);
            preparation_steps(input, &mut plan);
        }
        S::PreparingSuccessful | S::PreparingFailed | S::InstallingInProgress => {
            dhcp_step(input, &mut plan)
        }
        S::Installing => {
            if let Some(step) = install_step(input) {
                plan.push(step);
            }
            dhcp_step(input, &mut plan);
        }
        S::Error | S::Cancelled => {
            interval = 120;
            if let (Some(c), LogsState::NotRequested | LogsState::Requested) =
                (input.cluster, h.logs_state)
            {
                plan.push((StepType::LogsGather, vec![json(&logs_request(h, c))]));
            }
            plan.push((StepType::StopInstallation, Vec::new()));
        }
        S::Binding | S::Unbinding | S::UnbindingPendingUserAction => action = PostStepAction::Exit,
        S::Reclaiming => plan.extend(input.boot_artifacts.map(download_boot_artifacts_step)),
        S::ReclaimingRebooting => {
            action = PostStepAction::Exit;
            plan.push((
                StepType::RebootForReclaim,
                vec![json(&RebootForReclaimRequest {
                    host_fs_mount_dir: HOST_FS_MOUNT_DIR.into(),
                })],
            ));
        }
        S::DiscoveringUnbound | S::KnownUnbound | S::InsufficientUnbound | S::DisabledUnbound => {
            plan.push(inventory_step(input));
            plan.push(ntp_step(input, infra_env_ntp));
        }
        S::DisconnectedUnbound => {
            interval = 120;
            plan.push(inventory_step(input));
        }
        S::InstallingPendingUserAction
        | S::ResettingPendingUserAction
        | S::Resetting
        | S::Installed
        | S::AddedToExistingCluster
        | S::Disabled => {}
    }
    finish(input, interval, action, plan)
}

/// The agent upgrade, when the host runs another agent image than the configured one (only
/// before installation: an installing host keeps its agent).
fn agent_upgrade_step(input: &NextStepsInput) -> Option<(StepType, Vec<String>)> {
    let h = input.host;
    let cfg = input.cfg;
    let pre_install = h.status.is_pre_install() || h.status.is_unbound_state();
    // A disabled upgrade-agent step means no upgrade: the host gets its normal steps (upstream
    // does the same), not an answer emptied by the filter.
    let outdated = cfg.enable_upgrade_agent
        && !cfg.disabled_steps.contains(&StepType::UpgradeAgent)
        && !cfg.agent_image.is_empty()
        && h.discovery_agent_version != cfg.agent_image;
    (pre_install && outdated).then(|| {
        (
            StepType::UpgradeAgent,
            vec![json(&UpgradeAgentRequest {
                agent_image: cfg.agent_image.clone(),
            })],
        )
    })
}

/// Preparing for installation: the installation disk's speed and the availability of the
/// images the install pulls.
fn preparation_steps(input: &NextStepsInput, plan: &mut Vec<(StepType, Vec<String>)>) {
    let (h, cfg) = (input.host, input.cfg);
    let Some(c) = input.cluster else { return };
    let gb = cfg
        .hw
        .for_version(&c.openshift_version)
        .min_any_role(c.is_sno())
        .disk_size_gb;
    if let Some(d) = installation_disk(h, gb) {
        plan.push((
            StepType::InstallationDiskSpeedCheck,
            disk_speed_check_args(d.install_path()),
        ));
    }
    let images: Vec<String> = [
        c.release.release_image.as_str(),
        c.release.mco_image.as_str(),
        c.release.must_gather_image.as_str(),
        cfg.installer_image.as_str(),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .map(str::to_string)
    .collect();
    plan.push((
        StepType::ContainerImageAvailability,
        vec![json(&ContainerImageAvailabilityRequest {
            images,
            timeout: IMAGE_AVAILABILITY_TIMEOUT_SECS,
        })],
    ));
}

/// Reclaiming: download the discovery boot artifacts onto the installed host.
fn download_boot_artifacts_step(urls: &BootArtifactUrls) -> (StepType, Vec<String>) {
    (
        StepType::DownloadBootArtifacts,
        vec![json(&DownloadBootArtifactsRequest {
            host_fs_mount_dir: HOST_FS_MOUNT_DIR.into(),
            initrd_url: urls.initrd_url.clone(),
            kernel_url: urls.kernel_url.clone(),
            rootfs_url: urls.rootfs_url.clone(),
        })],
    )
}

fn finish(
    input: &NextStepsInput,
    interval: u32,
    action: PostStepAction,
    plan: Vec<(StepType, Vec<String>)>,
) -> Steps {
    let instructions = plan
        .into_iter()
        .filter(|(t, _)| !input.cfg.disabled_steps.contains(t))
        .enumerate()
        .map(|(i, (t, args))| Step {
            step_type: t,
            step_id: step_id(t, &input.host.id, input.seed, i),
            args,
        })
        .collect();
    Steps {
        next_instruction_seconds: interval,
        post_step_action: action,
        instructions,
    }
}

fn inventory_step(input: &NextStepsInput) -> (StepType, Vec<String>) {
    let mut args = vec![input.host.id.clone()];
    if let Some(n) = input.cfg.inventory_output_max_size {
        args.push(format!("--output-max-size={n}"));
    }
    (StepType::Inventory, args)
}

/// The disk speed check's arguments, as the agent requires them: the request, then the
/// timeout in seconds with two decimals (upstream's `GetArgs`).
pub fn disk_speed_check_args(path: &str) -> Vec<String> {
    vec![
        json(&DiskSpeedCheckRequest {
            path: path.to_string(),
        }),
        format!("{DISK_SPEED_CHECK_TIMEOUT_SECS:.2}"),
    ]
}

fn ntp_step(
    input: &NextStepsInput,
    by_infra_env: &NtpSourcesByInfraEnv,
) -> (StepType, Vec<String>) {
    let source = ntp_source(input.host, input.cluster, by_infra_env);
    (
        StepType::NtpSynchronizer,
        vec![json(&NtpSynchronizationRequest { ntp_source: source })],
    )
}

/// The NTP sources a host is asked to add, comma-separated (upstream's `GetHostNTPSources`):
/// a bound host gets the cluster's sources, or when it names none the union of the sources of
/// every InfraEnv its cluster's hosts booted from; an unbound host gets its own InfraEnv's.
/// Each source once, in the order first met (hosts in cluster order).
pub fn ntp_source(
    host: &HostSnapshot,
    cluster: Option<&ClusterSnapshot>,
    by_infra_env: &NtpSourcesByInfraEnv,
) -> String {
    let infra_envs: Vec<&str> = match cluster {
        Some(c) if !c.additional_ntp_source.trim().is_empty() => {
            return c.additional_ntp_source.clone();
        }
        Some(c) => c.hosts.iter().map(|h| h.infra_env_id.as_str()).collect(),
        None => vec![host.infra_env_id.as_str()],
    };
    let mut out: Vec<&str> = Vec::new();
    for ie in infra_envs {
        let sources = by_infra_env.get(ie).into_iter().flatten();
        for s in sources.flat_map(|s| s.split(',')).map(str::trim) {
            if !s.is_empty() && !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out.join(",")
}

fn dhcp_step(input: &NextStepsInput, plan: &mut Vec<(StepType, Vec<String>)>) {
    let Some(c) = input.cluster else { return };
    if !c.vip_dhcp_allocation || input.host.is_day2() || c.umn() {
        return;
    }
    let Some(inv) = &input.host.inventory else {
        return;
    };
    let nets: Vec<Cidr> = c
        .machine_networks
        .iter()
        .filter_map(|n| Cidr::parse(n))
        .collect();
    let nic = inv.interfaces.iter().find(|i| {
        i.addresses()
            .filter_map(parse_ip)
            .any(|ip| nets.iter().any(|n| n.contains(ip)))
    });
    if let Some(nic) = nic {
        // Deterministic locally administered MACs derived from the cluster id.
        let mac = |salt: u8| {
            let b = c.id.as_bytes();
            let x = |i: usize| b.get(i).copied().unwrap_or(0) ^ salt;
            format!("00:1a:4a:{:02x}:{:02x}:{:02x}", x(0), x(1), x(2))
        };
        plan.push((
            StepType::DhcpLeaseAllocate,
            vec![json(&DhcpAllocationRequest {
                interface: nic.name.clone(),
                api_vip_mac: mac(0x11),
                ingress_vip_mac: mac(0x22),
            })],
        ));
    }
}

/// The api-int/api/apps/wildcard names a host must resolve.
pub fn domain_names(c: &ClusterSnapshot) -> Vec<String> {
    if c.base_domain.is_empty() {
        return Vec::new();
    }
    let d = c.domain();
    vec![
        format!("api.{d}"),
        format!("api-int.{d}"),
        format!("console-openshift-console.apps.{d}"),
        format!("{WILDCARD_PROBE}.{d}"),
    ]
}

/// The URL day-2 hosts fetch their ignition from (pointer ignition source).
pub fn day2_ignition_url(c: &ClusterSnapshot, pool: &str) -> String {
    if let Some(url) = c.ignition_endpoint.url.as_deref().filter(|u| !u.is_empty()) {
        return format!("{}/config/{pool}", url.trim_end_matches('/'));
    }
    if c.ignition_endpoint.ca_certificate.is_some() {
        format!("https://api-int.{}:22623/config/{pool}", c.domain())
    } else {
        format!("http://api.{}:22624/config/{pool}", c.domain())
    }
}

/// Known, insufficient and pending-input hosts: the checks their validations read.
fn discovery_steps(
    input: &NextStepsInput,
    infra_env_ntp: &NtpSourcesByInfraEnv,
    plan: &mut Vec<(StepType, Vec<String>)>,
) {
    let h = input.host;
    let Some(c) = input.cluster else {
        plan.push(inventory_step(input));
        return;
    };
    let day2 = h.is_day2() || c.is_day2();
    if input.connectivity_check {
        plan.extend(connectivity_check_step(h, c));
    }
    plan.extend(tang_connectivity_step(c));
    if day2 {
        plan.push(api_vip_connectivity_step(h, c));
    } else {
        plan.extend(free_addresses_step(c));
        dhcp_step(input, plan);
    }
    plan.push(inventory_step(input));
    plan.push(ntp_step(input, infra_env_ntp));
    plan.extend(domain_resolution_step(c));
    if !day2 {
        plan.extend(verify_vips_step(c));
    }
}

/// Connectivity to every peer not yet installing, by the peers' NICs and addresses.
fn connectivity_check_step(
    h: &HostSnapshot,
    c: &ClusterSnapshot,
) -> Option<(StepType, Vec<String>)> {
    // Borrowed views: with hundreds of peers this request dominates next-steps, and copying
    // every name and address first doubled its cost.
    let peers: Vec<PeerRef> = c
        .hosts
        .iter()
        .filter(|p| p.id != h.id && !p.status.is_installing_or_later())
        .filter_map(|p| {
            let inv = p.inventory.as_ref()?;
            Some(PeerRef {
                host_id: &p.id,
                nics: inv
                    .interfaces
                    .iter()
                    .map(|n| NicRef {
                        name: &n.name,
                        mac: &n.mac_address,
                        ip_addresses: n
                            .addresses()
                            .map(|a| a.split('/').next().unwrap_or(a))
                            .collect(),
                    })
                    .collect(),
            })
        })
        .collect();
    (!peers.is_empty()).then(|| (StepType::ConnectivityCheck, vec![json(&peers)]))
}

/// Tang disk encryption: the host must reach the Tang servers.
fn tang_connectivity_step(c: &ClusterSnapshot) -> Option<(StepType, Vec<String>)> {
    let enc = c.disk_encryption.as_ref().filter(|e| e.mode == "tang")?;
    Some((
        StepType::TangConnectivityCheck,
        vec![json(&TangConnectivityRequest {
            tang_servers: enc.tang_servers.clone(),
        })],
    ))
}

/// Day-1 with cluster-managed networking: free addresses of the IPv4 machine networks (for VIPs).
fn free_addresses_step(c: &ClusterSnapshot) -> Option<(StepType, Vec<String>)> {
    if c.umn() || c.machine_networks.is_empty() {
        return None;
    }
    let v4: Vec<&String> = c
        .machine_networks
        .iter()
        .filter(|n| Cidr::parse(n).is_some_and(|x| !x.is_v6()))
        .collect();
    (!v4.is_empty()).then(|| (StepType::FreeNetworkAddresses, vec![json(&v4)]))
}

/// Day-2: the host must reach the installed cluster's ignition endpoint for its pool.
fn api_vip_connectivity_step(h: &HostSnapshot, c: &ClusterSnapshot) -> (StepType, Vec<String>) {
    let pool = h.machine_config_pool.as_deref().unwrap_or("worker");
    (
        StepType::ApiVipConnectivityCheck,
        vec![json(&ApiVipConnectivityRequest {
            url: day2_ignition_url(c, pool),
            ca_certificate: c.ignition_endpoint.ca_certificate.clone(),
            ignition_endpoint_token: c.ignition_endpoint.token.clone(),
        })],
    )
}

/// The cluster's DNS names the host must resolve.
fn domain_resolution_step(c: &ClusterSnapshot) -> Option<(StepType, Vec<String>)> {
    let names = domain_names(c);
    (!names.is_empty()).then(|| {
        (
            StepType::DomainResolution,
            vec![json(&DomainResolutionRequest {
                domains: names
                    .into_iter()
                    .map(|domain_name| DomainResolutionRequestDomain { domain_name })
                    .collect(),
            })],
        )
    })
}

/// Day-1 with cluster-managed networking: the API and Ingress VIPs must be free.
fn verify_vips_step(c: &ClusterSnapshot) -> Option<(StepType, Vec<String>)> {
    if c.umn() || (c.api_vips.is_empty() && c.ingress_vips.is_empty()) {
        return None;
    }
    let vips = c
        .api_vips
        .iter()
        .map(|v| VerifyVip {
            vip: v.clone(),
            vip_type: "api".into(),
        })
        .chain(c.ingress_vips.iter().map(|v| VerifyVip {
            vip: v.clone(),
            vip_type: "ingress".into(),
        }))
        .collect();
    Some((
        StepType::VerifyVips,
        vec![json(&VerifyVipsRequest { vips })],
    ))
}

/// Builds the install request for a host in `installing`.
pub fn install_request(
    h: &HostSnapshot,
    c: &ClusterSnapshot,
    cfg: &Config,
) -> Option<InstallCmdRequest> {
    let req = cfg.hw.for_version(&c.openshift_version);
    let gb = match h.effective_role() {
        HostRole::Arbiter => req.arbiter.disk_size_gb,
        _ => req.min_any_role(c.is_sno()).disk_size_gb,
    };
    let disk = installation_disk(h, gb)?;
    let boot = disk.install_path().to_string();
    let disks_to_format = h
        .inventory
        .as_ref()
        .map(|inv| {
            inv.disks
                .iter()
                .filter(|d| d.bootable && d.install_path() != boot)
                .filter(|d| !h.skip_formatting_disks.iter().any(|s| s == d.key()))
                .map(|d| d.install_path().to_string())
                .collect()
        })
        .unwrap_or_default();
    Some(InstallCmdRequest {
        cluster_id: c.id.clone(),
        infra_env_id: h.infra_env_id.clone(),
        host_id: h.id.clone(),
        role: if h.is_day2() {
            h.day2_role()
        } else {
            h.install_role()
        },
        boot_device: boot,
        controller_image: cfg.controller_image.clone(),
        installer_image: cfg.installer_image.clone(),
        control_plane_count: c.control_plane_count,
        proxy: None,
        check_cvo: cfg.check_cluster_version,
        disks_to_format,
        must_gather_image: c.release.must_gather_image.clone(),
        mco_image: c.release.mco_image.clone(),
        openshift_version: c.openshift_version.clone(),
        service_ips: Vec::new(),
        installer_args: h.installer_args.clone().unwrap_or_default(),
        high_availability_mode: if c.control_plane_count == 1 {
            "None"
        } else {
            "Full"
        }
        .into(),
        skip_installation_disk_cleanup: false,
        enable_skip_mco_reboot: false,
        notify_num_reboots: true,
        coreos_image: c.release.coreos_image.clone(),
    })
}

fn install_step(input: &NextStepsInput) -> Option<(StepType, Vec<String>)> {
    let c = input.cluster?;
    let req = install_request(input.host, c, input.cfg)?;
    Some((StepType::Install, vec![json(&req)]))
}

/// As upstream's logs command: the installer's logs are always gathered, and only the bootstrap
/// host gets the other masters' addresses (it collects their logs too).
fn logs_request(h: &HostSnapshot, c: &ClusterSnapshot) -> LogsGatherCmdRequest {
    let peers: &[HostSnapshot] = if h.bootstrap { &c.hosts } else { &[] };
    let master_ips = peers
        .iter()
        .filter(|p| !p.bootstrap)
        .filter(|p| matches!(p.effective_role(), HostRole::Master | HostRole::Bootstrap))
        .filter_map(|p| p.inventory.as_ref())
        .filter_map(|i| {
            // Every inventory lists `lo` first: its address is no way to reach a master.
            i.interfaces
                .iter()
                .flat_map(|n| n.ipv4_addresses.iter())
                .find(|a| parse_ip(a).is_some_and(|ip| !ip.is_loopback()))
        })
        .map(|a| a.split('/').next().unwrap_or(a).to_string())
        .collect();
    LogsGatherCmdRequest {
        cluster_id: c.id.clone(),
        infra_env_id: h.infra_env_id.clone(),
        host_id: h.id.clone(),
        bootstrap: h.bootstrap,
        installer_gather: true,
        master_ips,
    }
}
