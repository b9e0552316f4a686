//! The discovery agent's check of a step's arguments, done before it runs anything.
//!
//! The real agent (openshift/assisted-installer-agent, `src/commands/actions/`) builds an action
//! per step type and validates its arguments first: the number of arguments, the request document
//! decoded into the swagger model (wrong JSON types are refused), the model's own rules (required
//! fields, patterns, formats, enums), then a few per-step rules. A step that fails this is never
//! run: the agent answers exit code -1 with the reason in `error`. [`check`] does the same checks
//! so that the simulator refuses exactly what a real host refuses.
//!
//! Written from the agent's and the models' behaviour; the wording of the reasons is our own.

use std::net::IpAddr;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::profile::HostProfile;
use crate::wire::{Step, StepKind};

/// Exit code of a step the agent refused before running it.
pub const REFUSED_EXIT_CODE: i64 = -1;

/// Why the agent refuses to run a step (its `error` text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

fn refuse(msg: impl Into<String>) -> Refusal {
    Refusal(msg.into())
}

/// Checks `step`'s arguments as the real agent does before running it on `host`.
pub fn check(step: &Step, host: &HostProfile) -> Result<(), Refusal> {
    let Some(kind) = step.kind() else {
        return Err(refuse(format!(
            "no action for step type {:?}",
            step.step_type
        )));
    };
    let a = &step.args;
    match kind {
        StepKind::Inventory => {
            count("inventory", 1, a)?;
            if !is_uuid(&a[0]) {
                return Err(refuse(format!(
                    "inventory takes the host's UUID as its only argument, got {a:?}"
                )));
            }
        }
        StepKind::ConnectivityCheck => {
            let hosts: Vec<Option<ConnHost>> = decode("connectivity check", 1, a)?;
            for h in hosts.iter().flatten() {
                optional_format(&h.host_id, "host_id", is_uuid, "a UUID")?;
                for n in h.nics.iter().flatten().flatten() {
                    optional_format(&n.mac, "mac", is_mac, "a MAC address")?;
                    for ip in n.ip_addresses.iter().flatten() {
                        pattern(ip, "ip_addresses", ip_pattern, "an IP address")?;
                    }
                }
            }
        }
        StepKind::FreeNetworkAddresses => {
            let nets: Vec<String> = decode("free addresses", 1, a)?;
            for n in &nets {
                pattern(n, "network", free_addresses_pattern, "an IPv4 CIDR")?;
            }
        }
        StepKind::NtpSynchronizer => {
            let r: Ntp = decode("ntp synchronizer", 1, a)?;
            let source = required(r.ntp_source, "ntp_source")?;
            if !source.is_empty() && !source.split(',').all(is_ntp_source) {
                return Err(refuse(format!("invalid NTP source {source:?}")));
            }
        }
        StepKind::InstallationDiskSpeedCheck => {
            let r: DiskSpeed = decode("disk speed check", 2, a)?;
            required(r.path, "path")?;
            if a[1].trim().parse::<f64>().is_err() {
                return Err(refuse(format!(
                    "disk speed check: timeout {:?} is not a number",
                    a[1]
                )));
            }
        }
        StepKind::ApiVipConnectivityCheck => {
            let r: ApiVip = decode("api vip connectivity check", 1, a)?;
            required(r.url, "url")?;
        }
        StepKind::TangConnectivityCheck => {
            let r: Tang = decode("tang connectivity check", 1, a)?;
            required(r.tang_servers, "tang_servers")?;
        }
        StepKind::DhcpLeaseAllocate => {
            let r: Dhcp = decode("dhcp leases", 1, a)?;
            let api = required(r.api_vip_mac, "api_vip_mac")?;
            format(&api, "api_vip_mac", is_mac, "a MAC address")?;
            let ingress = required(r.ingress_vip_mac, "ingress_vip_mac")?;
            format(&ingress, "ingress_vip_mac", is_mac, "a MAC address")?;
            required(r.interface, "interface")?;
        }
        StepKind::DomainResolution => {
            let r: Domains = decode("domain resolution", 1, a)?;
            for d in required(r.domains, "domains")? {
                required(d.domain_name, "domain_name")?;
            }
        }
        StepKind::ContainerImageAvailability => {
            let r: Images = decode("image availability", 1, a)?;
            for i in required(r.images, "images")? {
                pattern(&i, "images", is_image, "an image reference")?;
            }
        }
        StepKind::StopInstallation => count("stop installation", 0, a)?,
        StepKind::LogsGather => {
            let r: Logs = decode("logs gather", 1, a)?;
            required(r.bootstrap, "bootstrap")?;
            for (v, name) in [
                (r.cluster_id, "cluster_id"),
                (r.host_id, "host_id"),
                (r.infra_env_id, "infra_env_id"),
            ] {
                format(&required(v, name)?, name, is_uuid, "a UUID")?;
            }
            // A required boolean of the model: false reads as missing.
            if !r.installer_gather.unwrap_or(false) {
                return Err(refuse("logs gather: installer_gather is required"));
            }
            for ip in r.master_ips.iter().flatten() {
                pattern(ip, "master_ips", ip_pattern, "an IP address")?;
            }
        }
        StepKind::Install => install(a, host)?,
        StepKind::UpgradeAgent => {
            let _: UpgradeAgent = decode("upgrade agent", 1, a)?;
        }
        StepKind::DownloadBootArtifacts => {
            let r: BootArtifacts = decode("download boot artifacts", 1, a)?;
            required(r.host_fs_mount_dir, "host_fs_mount_dir")?;
            required(r.initrd_url, "initrd_url")?;
            required(r.kernel_url, "kernel_url")?;
            required(r.rootfs_url, "rootfs_url")?;
        }
        StepKind::RebootForReclaim => {
            let r: Reclaim = decode("reboot for reclaim", 1, a)?;
            required(r.host_fs_mount_dir, "host_fs_mount_dir")?;
        }
        StepKind::VerifyVips => {
            let vips: Vec<Option<Vip>> = decode("verify vips", 1, a)?;
            for v in vips.iter().flatten() {
                if let Some(ip) = v.vip.as_deref().filter(|s| !s.is_empty()) {
                    pattern(ip, "vip", ip_pattern, "an IP address")?;
                }
                if let Some(t) = v.vip_type.as_deref().filter(|s| !s.is_empty())
                    && t != "api"
                    && t != "ingress"
                {
                    return Err(refuse(format!(
                        "vip_type {t:?} is neither \"api\" nor \"ingress\""
                    )));
                }
            }
        }
        // The agent has no action for these: the service never sends them to it.
        StepKind::NextStepRunner | StepKind::Execute => {
            return Err(refuse(format!(
                "no action for step type {:?}",
                step.step_type
            )));
        }
    }
    Ok(())
}

// ---- the install step ----------------------------------------------------------------------

fn install(a: &[String], host: &HostProfile) -> Result<(), Refusal> {
    let r: Install = decode("install", 1, a)?;
    let boot = required(r.boot_device, "boot_device")?;
    for (v, name) in [
        (r.cluster_id, "cluster_id"),
        (r.host_id, "host_id"),
        (r.infra_env_id, "infra_env_id"),
    ] {
        format(&required(v, name)?, name, is_uuid, "a UUID")?;
    }
    for (v, name) in [
        (r.controller_image, "controller_image"),
        (r.installer_image, "installer_image"),
    ] {
        pattern(&required(v, name)?, name, is_image, "an image reference")?;
    }
    if let Some(mco) = r.mco_image.as_deref().filter(|s| !s.is_empty()) {
        pattern(mco, "mco_image", is_image, "an image reference")?;
    }
    let role = required(r.role, "role")?;
    if !["master", "worker", "auto-assign", "bootstrap", "arbiter"].contains(&role.as_str()) {
        return Err(refuse(format!("install: role {role:?} is not a host role")));
    }
    for ip in r.service_ips.iter().flatten() {
        pattern(ip, "service_ips", ip_pattern, "an IP address")?;
    }
    if let Some(mg) = r.must_gather_image.as_deref().filter(|s| !s.is_empty()) {
        must_gather(mg)?;
    }
    if let Some(p) = &r.proxy {
        for url in [&p.http_proxy, &p.https_proxy].into_iter().flatten() {
            if !url.is_empty() && !url.starts_with("http://") {
                return Err(refuse(format!(
                    "install: proxy {url:?} is not an http:// URL"
                )));
            }
        }
    }
    if let Some(args) = r.installer_args.as_deref().filter(|s| !s.is_empty()) {
        installer_args(args)?;
    }
    if let Some(v) = r.openshift_version.as_deref().filter(|s| !s.is_empty())
        && !is_version(v)
    {
        return Err(refuse(format!(
            "install: cannot parse OpenShift version {v:?}"
        )));
    }
    for disk in r.disks_to_format.iter().flatten().chain([&boot]) {
        if !disk.starts_with("/dev/") {
            return Err(refuse(format!("install: disk {disk:?} is not under /dev/")));
        }
        if !has_disk(host, disk) {
            return Err(refuse(format!("install: no disk {disk} on this host")));
        }
    }
    Ok(())
}

/// The operators a must-gather image may be given for.
const MUST_GATHER_OPERATORS: &[&str] = &["cnv", "lso", "ocs", "odf", "ocp"];

fn must_gather(value: &str) -> Result<(), Refusal> {
    // Either one image, or a JSON object of operator → image.
    let images: Vec<(String, String)> =
        match serde_json::from_str::<std::collections::BTreeMap<String, String>>(value) {
            Ok(m) => m.into_iter().collect(),
            Err(_) => vec![("ocp".into(), value.into())],
        };
    for (op, image) in images {
        if !is_image(&image) {
            return Err(refuse(format!(
                "install: must-gather image {image:?} is not an image reference"
            )));
        }
        if !MUST_GATHER_OPERATORS.contains(&op.as_str()) {
            return Err(refuse(format!(
                "install: no must-gather for operator {op:?}"
            )));
        }
    }
    Ok(())
}

/// The coreos-installer flags a host may be given.
const INSTALLER_FLAGS: &[&str] = &[
    "--append-karg",
    "--delete-karg",
    "-n",
    "--copy-network",
    "--network-dir",
    "--save-partlabel",
    "--save-partindex",
    "--image-url",
    "--image-file",
];

fn installer_args(json: &str) -> Result<(), Refusal> {
    let args: Vec<String> = serde_json::from_str(json).map_err(|e| {
        refuse(format!(
            "install: installer_args is no list of strings: {e}"
        ))
    })?;
    for a in &args {
        if a.starts_with('-') {
            if !INSTALLER_FLAGS.contains(&a.as_str()) {
                return Err(refuse(format!(
                    "install: installer flag {a} is not allowed"
                )));
            }
        } else if a.is_empty() || !a.chars().all(installer_value_char) {
            return Err(refuse(format!(
                "install: installer argument {a:?} has characters not allowed"
            )));
        }
    }
    Ok(())
}

/// Characters an installer argument value may hold (the model's class, ranges included: the
/// class's `+-=` is a range from `+` to `=`).
fn installer_value_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || ('+'..='=').contains(&c) || "@!#$%*()_/\";':{}[]".contains(c)
}

/// The disk exists on the host: by kernel path, by-id or by-path link.
fn has_disk(host: &HostProfile, disk: &str) -> bool {
    host.disks
        .iter()
        .enumerate()
        .any(|(i, d)| d.path == disk || d.by_id == disk || crate::profile::by_path(i) == disk)
}

// ---- decoding ------------------------------------------------------------------------------

fn count(name: &str, n: usize, args: &[String]) -> Result<(), Refusal> {
    if args.len() == n {
        Ok(())
    } else {
        Err(refuse(format!(
            "{name} takes {n} argument(s), got {}: {args:?}",
            args.len()
        )))
    }
}

/// The argument count, then `args[0]` decoded as the model (JSON `null` reads as an empty
/// document, as Go's decoder leaves the model untouched).
fn decode<T: DeserializeOwned + Default>(
    name: &str,
    n: usize,
    args: &[String],
) -> Result<T, Refusal> {
    count(name, n, args)?;
    let v: Option<T> = serde_json::from_str(&args[0])
        .map_err(|e| refuse(format!("{name}: cannot decode the request: {e}")))?;
    Ok(v.unwrap_or_default())
}

fn required<T>(v: Option<T>, name: &str) -> Result<T, Refusal> {
    v.ok_or_else(|| refuse(format!("{name} is required")))
}

fn format(v: &str, name: &str, ok: fn(&str) -> bool, what: &str) -> Result<(), Refusal> {
    if ok(v) {
        Ok(())
    } else {
        Err(refuse(format!("{name} {v:?} is not {what}")))
    }
}

fn optional_format(
    v: &Option<String>,
    name: &str,
    ok: fn(&str) -> bool,
    what: &str,
) -> Result<(), Refusal> {
    match v.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => format(s, name, ok, what),
        None => Ok(()),
    }
}

fn pattern(v: &str, name: &str, ok: fn(&str) -> bool, what: &str) -> Result<(), Refusal> {
    format(v, name, ok, what)
}

// ---- the models' formats and patterns ------------------------------------------------------

/// strfmt's `uuid`: 8-4-4-4-12 hex digits of any case, or 32 hex digits.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    match b.len() {
        32 => b.iter().all(u8::is_ascii_hexdigit),
        36 => b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        }),
        _ => false,
    }
}

/// strfmt's `mac`: 6, 8 or 20 bytes as pairs of hex digits separated by `:` or `-`, or as
/// groups of four separated by `.`.
pub fn is_mac(s: &str) -> bool {
    let sizes = [6usize, 8, 20];
    for sep in [':', '-'] {
        let parts: Vec<&str> = s.split(sep).collect();
        if sizes.contains(&parts.len())
            && parts
                .iter()
                .all(|p| p.len() == 2 && p.bytes().all(|c| c.is_ascii_hexdigit()))
        {
            return true;
        }
    }
    let groups: Vec<&str> = s.split('.').collect();
    sizes.iter().any(|n| n / 2 == groups.len())
        && groups
            .iter()
            .all(|g| g.len() == 4 && g.bytes().all(|c| c.is_ascii_hexdigit()))
}

/// The models' IP pattern: four dot-separated groups of 1-3 digits, or hex digits and colons
/// with at least two colons.
pub fn ip_pattern(s: &str) -> bool {
    let quad = {
        let parts: Vec<&str> = s.split('.').collect();
        parts.len() == 4
            && parts
                .iter()
                .all(|p| (1..=3).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()))
    };
    let v6ish = s.bytes().all(|c| c == b':' || c.is_ascii_hexdigit())
        && s.bytes().filter(|c| *c == b':').count() >= 2;
    quad || v6ish
}

/// The free-addresses request's pattern as the model writes it: its alternation has no group,
/// so it accepts a string that starts with `a.b.c.d/<digit>`, or holds a `1`/`2` followed by a
/// digit anywhere, or ends in `3`, `30`, `31` or `32`.
pub fn free_addresses_pattern(s: &str) -> bool {
    let b = s.as_bytes();
    let starts_cidr = s.split_once('/').is_some_and(|(addr, rest)| {
        let parts: Vec<&str> = addr.split('.').collect();
        parts.len() == 4
            && parts
                .iter()
                .all(|p| (1..=3).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()))
            && rest.bytes().next().is_some_and(|c| c.is_ascii_digit())
    });
    let one_or_two_then_digit = b
        .windows(2)
        .any(|w| matches!(w[0], b'1' | b'2') && w[1].is_ascii_digit());
    let ends_in_3x = match b {
        [.., b'3'] => true,
        [.., b'3', last] => matches!(last, b'0'..=b'2'),
        _ => false,
    };
    starts_cidr || one_or_two_then_digit || ends_in_3x
}

/// The models' image pattern: an optional `registry[:port]/`, then one or more of
/// `[a-z0-9._-/@]`, then one or more of `[?:a-zA-Z0-9_.-]` to the end.
pub fn is_image(s: &str) -> bool {
    let registry_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
    let path_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-/@".contains(c);
    let tail_char = |c: char| c.is_ascii_alphanumeric() || "?:_-.".contains(c);
    // `rest` splits into a non-empty run of path characters and a non-empty tail.
    let body = |rest: &str| {
        let chars: Vec<char> = rest.chars().collect();
        let lead = chars.iter().take_while(|c| path_char(**c)).count();
        let tail_from = chars.len() - chars.iter().rev().take_while(|c| tail_char(**c)).count();
        let from = tail_from.max(1);
        !chars.is_empty() && from <= lead.min(chars.len() - 1)
    };
    if body(s) {
        return true;
    }
    // With a registry prefix: every `/` may end it.
    s.match_indices('/').any(|(i, _)| {
        let (prefix, rest) = (&s[..i], &s[i + 1..]);
        let (host, port) = match prefix.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (prefix, None),
        };
        !host.is_empty()
            && host.chars().all(registry_char)
            && port.is_none_or(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
            && body(rest)
    })
}

/// An NTP source the agent accepts: an IP address, or a lowercase host name of 2 to 63
/// characters (letters, digits, `-` and `.` inside).
pub fn is_ntp_source(s: &str) -> bool {
    if s.parse::<IpAddr>().is_ok() {
        return true;
    }
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (2..=63).contains(&b.len())
        && edge(&b[0])
        && edge(&b[b.len() - 1])
        && b.iter().all(|c| edge(c) || *c == b'-' || *c == b'.')
}

/// A version the agent's version parser accepts: `[v]N(.N)*`, then an optional pre-release
/// (`-x.y`, or letters right after the numbers) and an optional `+build`.
pub fn is_version(s: &str) -> bool {
    let s = s.strip_prefix('v').unwrap_or(s);
    let (s, build) = match s.split_once('+') {
        Some((v, b)) => (v, Some(b)),
        None => (s, None),
    };
    let ident = |x: &str| {
        !x.is_empty()
            && x.split('.').all(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '~')
            })
    };
    if build.is_some_and(|b| !ident(b)) {
        return false;
    }
    let numbers_end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (numbers, pre) = s.split_at(numbers_end);
    let numbers_ok = !numbers.is_empty()
        && numbers
            .split('.')
            .all(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
    numbers_ok && (pre.is_empty() || ident(pre.strip_prefix('-').unwrap_or(pre)))
}

// ---- the request models as the agent decodes them -------------------------------------------
// `Option` marks what the models hold as pointers: absent and `null` both read as missing.

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ConnHost {
    host_id: Option<String>,
    nics: Option<Vec<Option<ConnNic>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ConnNic {
    ip_addresses: Option<Vec<String>>,
    mac: Option<String>,
    #[allow(dead_code)]
    name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Ntp {
    ntp_source: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DiskSpeed {
    path: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ApiVip {
    url: Option<String>,
    #[allow(dead_code)]
    ca_certificate: Option<String>,
    #[allow(dead_code)]
    ignition_endpoint_token: Option<String>,
    #[allow(dead_code)]
    verify_cidr: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Tang {
    tang_servers: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Dhcp {
    api_vip_mac: Option<String>,
    ingress_vip_mac: Option<String>,
    interface: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Domains {
    domains: Option<Vec<Domain>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Domain {
    domain_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Images {
    images: Option<Vec<String>>,
    #[allow(dead_code)]
    timeout: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Logs {
    bootstrap: Option<bool>,
    cluster_id: Option<String>,
    host_id: Option<String>,
    infra_env_id: Option<String>,
    installer_gather: Option<bool>,
    master_ips: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct UpgradeAgent {
    #[allow(dead_code)]
    agent_image: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BootArtifacts {
    host_fs_mount_dir: Option<String>,
    initrd_url: Option<String>,
    kernel_url: Option<String>,
    rootfs_url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Reclaim {
    host_fs_mount_dir: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Vip {
    vip: Option<String>,
    vip_type: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Proxy {
    http_proxy: Option<String>,
    https_proxy: Option<String>,
    #[allow(dead_code)]
    no_proxy: Option<String>,
}

/// `install_cmd_request`, every field with its model type (a wrong type is refused).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
#[allow(dead_code)]
struct Install {
    boot_device: Option<String>,
    check_cvo: Option<bool>,
    cluster_id: Option<String>,
    control_plane_count: Option<i64>,
    controller_image: Option<String>,
    coreos_image: Option<String>,
    disks_to_format: Option<Vec<String>>,
    enable_skip_mco_reboot: Option<bool>,
    high_availability_mode: Option<String>,
    host_id: Option<String>,
    infra_env_id: Option<String>,
    installer_args: Option<String>,
    installer_image: Option<String>,
    mco_image: Option<String>,
    must_gather_image: Option<String>,
    notify_num_reboots: Option<bool>,
    openshift_version: Option<String>,
    proxy: Option<Proxy>,
    role: Option<String>,
    service_ips: Option<Vec<String>>,
    skip_installation_disk_cleanup: Option<bool>,
}

#[cfg(test)]
mod tests;
