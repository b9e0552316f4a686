//! Step replies: what a healthy host on a healthy network answers to each instruction.
//!
//! [`step_reply`] is pure: the same step, profile, peers and context always give the same reply,
//! so tests can assert on replies without a server. Failures are opt-in through [`ReplyCtx`].

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Value, json};

use crate::net::{Ipv4Cidr, strip_prefix_len};
use crate::profile::{HostProfile, inventory_json};
use crate::wire::*;

/// Exit code the agent uses when the discovery media is gone.
pub const MEDIA_DISCONNECTED_EXIT_CODE: i64 = 256;

/// The name resolved to detect a wildcard DNS record (`<probe>.<cluster>.<domain>`).
pub const WILDCARD_PROBE: &str = "validateNoWildcardDNS";

/// Environment knobs for replies. `Default` is a healthy host on a healthy network.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyCtx {
    /// `api.` / `api-int.` names resolve to these when set (user-managed networking setups).
    pub api_vips: Vec<String>,
    /// `*.apps.` names resolve to these when set.
    pub ingress_vips: Vec<String>,
    /// NTP source reported when the request names none.
    pub ntp_server: String,
    /// fsync p99 reported by the disk speed check, in ms.
    pub disk_sync_ms: i64,
    /// Resolve the wildcard probe too (simulates a forbidden `*.<cluster>` record).
    pub wildcard_dns: bool,
    /// Treat requested hosts that are not in `peers` as reachable too.
    pub reach_unknown_peers: bool,
    /// Round-trip time reported for reachable peers.
    pub rtt_ms: f64,
    /// These step types fail with exit code 1.
    pub failing_steps: HashSet<StepKind>,
    /// Every step fails with exit code 256 (media disconnected).
    pub media_disconnected: bool,
}

impl Default for ReplyCtx {
    fn default() -> Self {
        ReplyCtx {
            api_vips: Vec::new(),
            ingress_vips: Vec::new(),
            ntp_server: "clock.example.com".into(),
            disk_sync_ms: 5,
            wildcard_dns: false,
            reach_unknown_peers: false,
            rtt_ms: 0.4,
            failing_steps: HashSet::new(),
            media_disconnected: false,
        }
    }
}

fn ok(step: &Step, output: String) -> StepReply {
    StepReply {
        step_type: step.step_type.clone(),
        step_id: step.step_id.clone(),
        exit_code: 0,
        output,
        error: String::new(),
    }
}

fn failed(step: &Step, code: i64, error: String) -> StepReply {
    StepReply {
        step_type: step.step_type.clone(),
        step_id: step.step_id.clone(),
        exit_code: code,
        output: String::new(),
        error,
    }
}

/// Builds the reply to one instruction. Arguments the real agent would refuse are refused the
/// same way (exit code -1, the reason in `error`, see [`crate::args`]); a step that cannot be
/// carried out on this host fails with exit code 1, as a real agent whose command failed.
pub fn step_reply(
    step: &Step,
    profile: &HostProfile,
    peers: &[HostProfile],
    ctx: &ReplyCtx,
) -> StepReply {
    if ctx.media_disconnected {
        return failed(
            step,
            MEDIA_DISCONNECTED_EXIT_CODE,
            "cannot access the discovery media".into(),
        );
    }
    // The agent checks the arguments before it runs anything, and refuses what fails.
    if let Err(refusal) = crate::args::check(step, profile) {
        return failed(step, crate::args::REFUSED_EXIT_CODE, refusal.0);
    }
    let Some(kind) = step.kind() else {
        return failed(
            step,
            crate::args::REFUSED_EXIT_CODE,
            format!("no action for step type {:?}", step.step_type),
        );
    };
    if ctx.failing_steps.contains(&kind) {
        return failed(step, 1, format!("simulated failure of {}", kind.as_str()));
    }
    match output(kind, step, profile, peers, ctx) {
        Ok(v) => ok(step, v.map(|v| v.to_string()).unwrap_or_default()),
        Err(e) => failed(step, 1, e),
    }
}

/// The reply document for a step, or `None` for steps that answer with empty output.
fn output(
    kind: StepKind,
    step: &Step,
    profile: &HostProfile,
    peers: &[HostProfile],
    ctx: &ReplyCtx,
) -> Result<Option<Value>, String> {
    Ok(Some(match kind {
        StepKind::Inventory => inventory_json(profile),
        StepKind::ConnectivityCheck => connectivity(
            &step.request::<Vec<ConnectivityCheckHost>>()?,
            profile,
            peers,
            ctx,
        ),
        StepKind::NtpSynchronizer => {
            let req: NtpSynchronizationRequest = step.request().unwrap_or_default();
            let name = req
                .ntp_source
                .split(',')
                .map(str::trim)
                .find(|s| !s.is_empty())
                .unwrap_or(&ctx.ntp_server)
                .to_string();
            json!({"ntp_sources": [{"source_name": name, "source_state": "synced"}]})
        }
        StepKind::DomainResolution => {
            domain_resolution(&step.request::<DomainResolutionRequest>()?, profile, ctx)
        }
        StepKind::ContainerImageAvailability => {
            let req: ContainerImageAvailabilityRequest = step.request()?;
            let images: Vec<Value> = req
                .images
                .iter()
                .map(|name| {
                    // 400 MB in 8 s: a plausible pull, well above the slow-download threshold.
                    json!({"name": name, "result": "success", "size_bytes": 400_000_000.0,
                           "time": 8.0, "download_rate": 50.0})
                })
                .collect();
            json!({"images": images})
        }
        StepKind::InstallationDiskSpeedCheck => {
            let req: DiskSpeedCheckRequest = step.request()?;
            json!({"io_sync_duration": ctx.disk_sync_ms, "path": req.path})
        }
        StepKind::FreeNetworkAddresses => {
            free_addresses(&step.request::<Vec<String>>()?, profile, peers)
        }
        StepKind::DhcpLeaseAllocate => dhcp(&step.request()?, profile, ctx)?,
        StepKind::ApiVipConnectivityCheck => {
            let req: ApiVipConnectivityRequest = step.request()?;
            json!({
                "is_success": true,
                "download_success": true,
                "url": req.url,
                "ignition": r#"{"ignition":{"version":"3.2.0"}}"#,
            })
        }
        StepKind::VerifyVips => {
            let req: VerifyVipsRequest = step.request()?;
            let vips: Vec<Value> = req
                .vips
                .iter()
                .map(|v| json!({"vip": v.vip, "vip_type": v.vip_type, "verification": "succeeded"}))
                .collect();
            // `verify_vips_response` is a bare array, as the request is.
            Value::Array(vips)
        }
        StepKind::TangConnectivityCheck => json!({"is_success": true, "tang_server_response": []}),
        StepKind::UpgradeAgent => {
            let req: UpgradeAgentRequest = step.request()?;
            json!({"agent_image": req.agent_image, "result": "success"})
        }
        StepKind::Install
        | StepKind::StopInstallation
        | StepKind::LogsGather
        | StepKind::NextStepRunner
        | StepKind::Execute
        | StepKind::DownloadBootArtifacts
        | StepKind::RebootForReclaim => return Ok(None),
    }))
}

/// The peer profile a requested host stands for: same MAC or same IP on any NIC.
fn find_peer<'a>(
    remote: &ConnectivityCheckHost,
    peers: &'a [HostProfile],
) -> Option<&'a HostProfile> {
    peers.iter().find(|p| {
        remote
            .nics
            .iter()
            .any(|n| p.owns(&n.mac) || n.ip_addresses.iter().any(|ip| p.owns(ip)))
    })
}

fn connectivity(
    req: &[ConnectivityCheckHost],
    me: &HostProfile,
    peers: &[HostProfile],
    ctx: &ReplyCtx,
) -> Value {
    let remote_hosts: Vec<Value> = req
        .iter()
        .filter(|r| r.host_id != me.uuid)
        .map(|r| {
            let reachable = ctx.reach_unknown_peers || find_peer(r, peers).is_some();
            let mut l2 = Vec::new();
            let mut l3 = Vec::new();
            let mut mtu = Vec::new();
            for nic in &r.nics {
                for ip in &nic.ip_addresses {
                    let bare = strip_prefix_len(ip);
                    l3.push(json!({
                        "remote_ip_address": bare,
                        "successful": reachable,
                        "average_rtt_ms": if reachable { ctx.rtt_ms } else { 0.0 },
                        "packet_loss_percentage": if reachable { 0.0 } else { 100.0 },
                    }));
                    // L2 only makes sense towards addresses on one of our own subnets.
                    let local = bare
                        .parse::<Ipv4Addr>()
                        .ok()
                        .and_then(|a| me.nic_for(a).map(|(n, net)| (a, n, net)));
                    if let Some((_, my_nic, net)) = local {
                        let outgoing = my_nic
                            .ipv4
                            .iter()
                            .map(|a| strip_prefix_len(a))
                            .find(|a| a.parse().is_ok_and(|x| net.contains(x)))
                            .unwrap_or_default();
                        l2.push(json!({
                            "outgoing_ip_address": outgoing,
                            "outgoing_nic": my_nic.name,
                            "remote_ip_address": bare,
                            "remote_mac": nic.mac,
                            "successful": reachable,
                        }));
                        mtu.push(json!({
                            "remote_ip": bare,
                            "outgoing_nic": my_nic.name,
                            "mtu_successful": reachable,
                        }));
                    }
                }
            }
            json!({
                "host_id": r.host_id,
                "l2_connectivity": l2,
                "l3_connectivity": l3,
                "mtu_report": mtu,
            })
        })
        .collect();
    json!({"remote_hosts": remote_hosts})
}

fn split_family(addrs: &[String]) -> (Vec<&str>, Vec<&str>) {
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    for a in addrs {
        match a.parse::<IpAddr>() {
            Ok(IpAddr::V4(_)) => v4.push(a.as_str()),
            Ok(IpAddr::V6(_)) => v6.push(a.as_str()),
            Err(_) => {}
        }
    }
    (v4, v6)
}

fn domain_resolution(req: &DomainResolutionRequest, me: &HostProfile, ctx: &ReplyCtx) -> Value {
    let own: Vec<String> = me.primary_ipv4().map(str::to_string).into_iter().collect();
    let resolutions: Vec<Value> = req
        .domains
        .iter()
        .map(|d| {
            let name = d.domain_name.as_str();
            let wildcard_probe = name.starts_with(&format!("{WILDCARD_PROBE}."));
            let addrs: &[String] = if wildcard_probe && !ctx.wildcard_dns {
                &[]
            } else if (name.starts_with("api.") || name.starts_with("api-int."))
                && !ctx.api_vips.is_empty()
            {
                &ctx.api_vips
            } else if name.contains(".apps.") && !ctx.ingress_vips.is_empty() {
                &ctx.ingress_vips
            } else {
                // Without VIPs the names point at a host of the machine network (as a load
                // balancer in front of the nodes would).
                &own
            };
            let (v4, v6) = split_family(addrs);
            json!({"domain_name": name, "ipv4_addresses": v4, "ipv6_addresses": v6, "cnames": []})
        })
        .collect();
    json!({"resolutions": resolutions})
}

/// At most this many free addresses per network, to keep replies small on big networks.
const MAX_FREE_PER_NETWORK: usize = 1024;

fn free_addresses(networks: &[String], me: &HostProfile, peers: &[HostProfile]) -> Value {
    let used: HashSet<&str> = std::iter::once(me)
        .chain(peers.iter())
        .flat_map(|p| p.ipv4_addresses())
        .chain(me.gateway.as_deref())
        .collect();
    let out: Vec<Value> = networks
        .iter()
        .filter_map(|n| n.parse::<Ipv4Cidr>().ok().map(|c| (n, c)))
        .map(|(n, net)| {
            let free: Vec<String> = net
                .hosts()
                .map(|a| a.to_string())
                .filter(|a| !used.contains(a.as_str()))
                .take(MAX_FREE_PER_NETWORK)
                .collect();
            json!({"network": n, "free_addresses": free})
        })
        .collect();
    Value::Array(out)
}

fn dhcp(req: &DhcpAllocationRequest, me: &HostProfile, ctx: &ReplyCtx) -> Result<Value, String> {
    let nic = me
        .nics
        .iter()
        .find(|n| n.name == req.interface)
        .ok_or_else(|| format!("no interface named {:?}", req.interface))?;
    let net = nic
        .ipv4
        .iter()
        .find_map(|a| crate::net::parse_interface_v4(a))
        .map(|(_, net)| net)
        .ok_or_else(|| format!("interface {} has no IPv4 address", nic.name))?;
    // A configured VIP in this network wins; otherwise a fixed slot near the top of the network
    // (what a DHCP server reserving for the cluster would plausibly hand out).
    let pick = |configured: &[String], from_top: u64| -> Result<String, String> {
        if let Some(v) = configured
            .iter()
            .find(|v| v.parse().is_ok_and(|ip| net.contains(ip)))
        {
            return Ok(v.clone());
        }
        let offset = net
            .size()
            .checked_sub(from_top)
            .and_then(|o| u32::try_from(o).ok())
            .ok_or_else(|| format!("network {net} is too small for VIP leases"))?;
        net.host(offset)
            .map(|a| a.to_string())
            .map_err(|e| e.to_string())
    };
    let api = pick(&ctx.api_vips, 10)?;
    let ingress = pick(&ctx.ingress_vips, 9)?;
    let lease = |ip: &str, mac: &str| {
        format!(
            "lease {{\n  interface \"{}\";\n  fixed-address {ip};\n  option dhcp-client-identifier {mac};\n}}\n",
            nic.name
        )
    };
    Ok(json!({
        "api_vip_address": api,
        "ingress_vip_address": ingress,
        "api_vip_lease": lease(&api, &req.api_vip_mac),
        "ingress_vip_lease": lease(&ingress, &req.ingress_vip_mac),
    }))
}

#[cfg(test)]
mod tests;
