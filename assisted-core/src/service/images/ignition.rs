//! The discovery Ignition config: what a host booted from the discovery ISO runs.
//!
//! Rendered as Ignition spec 3.1.0 JSON (the oldest 3.x that every supported RHCOS
//! accepts); every file is a `data:` URL so the config is self-contained.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value, json};

use super::ImageError;

const IGNITION_VERSION: (u64, u64, u64) = (3, 1, 0);
const AGENT_UNIT: &str = "agent.service";
const PULL_SECRET_PATH: &str = "/root/.docker/config.json";
const SERVICE_CA_PATH: &str = "/etc/assisted-service/service-ca-cert.crt";
const ANCHORS: &str = "/etc/pki/ca-trust/source/anchors";
const NTP_SOURCES_PATH: &str = "/etc/assisted/ntp-sources";
pub(crate) const NETWORK_DIR: &str = "/etc/assisted/network";
pub(crate) const PRE_NM_SCRIPT_PATH: &str = "/usr/local/bin/pre-network-manager-config.sh";
pub(crate) const PRE_NM_UNIT: &str = "pre-network-manager-config.service";

/// Proxy settings of the infra-env; empty strings count as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxySettings {
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
}

impl ProxySettings {
    /// `(NAME, value)` for each set variable, upper and lower case (tools disagree on which
    /// they read).
    pub fn env_pairs(&self) -> Vec<(&'static str, &str)> {
        let mut out = Vec::new();
        for (upper, lower, v) in [
            ("HTTP_PROXY", "http_proxy", &self.http_proxy),
            ("HTTPS_PROXY", "https_proxy", &self.https_proxy),
            ("NO_PROXY", "no_proxy", &self.no_proxy),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                out.push((upper, v));
                out.push((lower, v));
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.env_pairs().is_empty()
    }
}

/// A MAC address and the NIC name the nmstate YAML uses for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MacInterface {
    pub mac_address: String,
    pub logical_nic_name: String,
}

/// One host's static network configuration (from an NMStateConfig).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StaticNetworkConfig {
    pub network_yaml: String,
    pub mac_interface_map: Vec<MacInterface>,
}

/// Everything the discovery ignition depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveryIgnitionParams {
    /// Base URL of the agent API, e.g. `https://assisted.example:8090`.
    pub service_base_url: String,
    pub infra_env_id: String,
    /// Passed to the agent as `PULL_SECRET_TOKEN` (the `X-Secret-Key` value).
    pub agent_token: String,
    pub agent_image: String,
    /// Skip TLS verification of the service.
    pub insecure: bool,
    /// PEM bundle the agent uses to verify the service (`--cacert`).
    pub service_ca_bundle: Option<String>,
    /// Docker config JSON.
    pub pull_secret: String,
    /// One or more public keys, one per line.
    pub ssh_authorized_key: String,
    /// NTP servers or pools; entries may also be comma-separated lists.
    pub ntp_sources: Vec<String>,
    pub proxy: ProxySettings,
    pub additional_trust_bundle: Option<String>,
    pub static_network: Vec<StaticNetworkConfig>,
    /// Seconds the static network script waits for NICs to appear before it maps MACs to
    /// interfaces (InfraEnv `networkDiscoveryDelaySeconds`); 0 means no wait.
    pub network_discovery_delay_seconds: u64,
    /// Ignition JSON merged last.
    pub ignition_config_override: Option<String>,
    /// Not part of the ignition: live ISOs take kernel arguments from the ISO's kargs
    /// area or the iPXE script; kept here so callers have one input struct.
    pub kernel_arguments: Vec<String>,
    /// Shown in `/etc/motd`.
    pub openshift_version: Option<String>,
    /// The mirror registry's files (`registries.conf`, its CA, ...): `(path, contents, mode)`.
    pub mirror_files: Vec<(String, String, u32)>,
}

#[cfg(any(test, feature = "test-support"))]
/// The values a discovery agent needs, read back from a discovery ignition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveredAgentConfig {
    pub service_url: String,
    pub infra_env_id: String,
    pub token: String,
    pub agent_image: String,
    pub insecure: bool,
    pub cacert_path: Option<String>,
    /// The file at `cacert_path`: the CA the agent verifies the service with.
    pub ca_bundle: Option<String>,
    pub pull_secret: Option<String>,
    pub ssh_authorized_keys: Vec<String>,
    pub proxy: ProxySettings,
    /// `/etc/containers/registries.conf`: the mirrors the host pulls through.
    pub registries_conf: Option<String>,
    /// The mirrors' CA (`domain.crt` among the host's trust anchors).
    pub mirror_ca: Option<String>,
}

/// Renders the discovery ignition, with the infra-env's override merged last.
pub fn discovery_ignition(p: &DiscoveryIgnitionParams) -> Result<String, ImageError> {
    let mut files = Vec::new();
    let mut units = Vec::new();

    serde_json::from_str::<Map<String, Value>>(&p.pull_secret)
        .map_err(|e| ImageError::input("pull secret", format!("not a JSON object: {e}")))?;
    files.push(file(PULL_SECRET_PATH, 0o600, p.pull_secret.as_bytes()));

    let motd = format!(
        "This host is running the Assisted Installer discovery image{}.\n\
         The agent reports it to the installer; see `journalctl -u agent.service`.\n",
        p.openshift_version
            .as_deref()
            .map(|v| format!(" for OpenShift {v}"))
            .unwrap_or_default()
    );
    files.push(file("/etc/motd", 0o644, motd.as_bytes()));

    let cacert = trust_files(p, &mut files);

    for (path, contents, mode) in &p.mirror_files {
        files.push(file(path, *mode, contents.as_bytes()));
    }

    if !p.proxy.is_empty() {
        files.push(file(
            "/etc/profile.d/proxy.sh",
            0o644,
            proxy_profile(&p.proxy).as_bytes(),
        ));
    }

    files.push(file(
        "/usr/local/bin/agent-pull-image",
        0o755,
        PULL_IMAGE_SCRIPT.as_bytes(),
    ));
    units.push(unit(AGENT_UNIT, &agent_unit(p, cacert)?));

    ntp_and_network(p, &mut files, &mut units)?;

    let keys = ssh_keys(&p.ssh_authorized_key);
    let mut user = json!({ "name": "core" });
    if !keys.is_empty() {
        user["sshAuthorizedKeys"] = json!(keys);
    }

    let mut config = json!({
        "ignition": { "version": version_string(IGNITION_VERSION) },
        "passwd": { "users": [user] },
        "storage": { "files": files },
        "systemd": { "units": units },
    });
    if let Some(ov) = p
        .ignition_config_override
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        merge_override(&mut config, ov)?;
    }
    serde_json::to_string(&config).map_err(|e| ImageError::input("ignition", e.to_string()))
}

/// The service's CA (also what the agent's `--cacert` names) and the InfraEnv's additional
/// trust bundle, as trust anchors; the CA path when there is one.
fn trust_files(p: &DiscoveryIgnitionParams, files: &mut Vec<Value>) -> Option<&'static str> {
    let mut cacert = None;
    if let Some(ca) = p
        .service_ca_bundle
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        files.push(file(SERVICE_CA_PATH, 0o644, ca.as_bytes()));
        files.push(file(
            &format!("{ANCHORS}/assisted-service-ca.crt"),
            0o644,
            ca.as_bytes(),
        ));
        cacert = Some(SERVICE_CA_PATH);
    }
    // coreos-update-ca-trust.service picks the anchors up at boot.
    if let Some(tb) = p
        .additional_trust_bundle
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        files.push(file(
            &format!("{ANCHORS}/assisted-infraenv-additional-trust-bundle.pem"),
            0o644,
            tb.as_bytes(),
        ));
    }
    cacert
}

/// The NTP sources and the static network configuration, with the units that apply them.
fn ntp_and_network(
    p: &DiscoveryIgnitionParams,
    files: &mut Vec<Value>,
    units: &mut Vec<Value>,
) -> Result<(), ImageError> {
    let ntp = ntp_sources(&p.ntp_sources)?;
    if !ntp.is_empty() {
        files.push(file(
            NTP_SOURCES_PATH,
            0o644,
            (ntp.join("\n") + "\n").as_bytes(),
        ));
        files.push(file(
            "/usr/local/bin/add-ntp-sources.sh",
            0o755,
            ADD_NTP_SCRIPT.as_bytes(),
        ));
        units.push(unit("add-ntp-sources.service", ADD_NTP_UNIT));
    }

    if !p.static_network.is_empty() {
        for (path, mode, data) in static_network_files(&p.static_network)? {
            files.push(file(&path, mode, data.as_bytes()));
        }
        units.push(unit(
            PRE_NM_UNIT,
            &with_discovery_delay(
                &pre_nm_unit(
                    "network-pre.target NetworkManager.service nmstate.service",
                    "multi-user.target",
                ),
                p.network_discovery_delay_seconds,
            ),
        ));
    }
    Ok(())
}

#[cfg(any(test, feature = "test-support"))]
/// Reads the agent settings back out of a discovery ignition (ours or upstream-shaped:
/// an `agent.service` whose ExecStart carries `--url`, `--infra-env-id`, ...).
// Over 80 lines: test support only (not built into the service), one read of the agent unit's flags.
pub fn parse_discovery_ignition(ign: &str) -> Result<DiscoveredAgentConfig, ImageError> {
    let bad = |m: &str| ImageError::NotDiscoveryIgnition(m.to_string());
    let v: Value = serde_json::from_str(ign).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let contents = v
        .pointer("/systemd/units")
        .and_then(Value::as_array)
        .and_then(|units| units.iter().find(|u| u["name"] == AGENT_UNIT))
        .and_then(|u| u["contents"].as_str())
        .ok_or_else(|| bad("no agent.service unit with contents"))?;

    let mut out = DiscoveredAgentConfig::default();
    let mut found_exec = false;
    for line in contents.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("Environment=") {
            for assignment in unit_words(rest) {
                let Some((k, v)) = assignment.split_once('=') else {
                    continue;
                };
                let v = v.to_string();
                match k {
                    "PULL_SECRET_TOKEN" => out.token = v,
                    "HTTP_PROXY" => out.proxy.http_proxy = Some(v),
                    "HTTPS_PROXY" => out.proxy.https_proxy = Some(v),
                    "NO_PROXY" => out.proxy.no_proxy = Some(v),
                    _ => {}
                }
            }
        } else if let Some(rest) = line.strip_prefix("ExecStart=") {
            found_exec = true;
            let words = unit_words(rest);
            let mut it = words.iter();
            while let Some(w) = it.next() {
                let (flag, inline) = match w.split_once('=') {
                    Some((f, v)) => (f, Some(v.to_string())),
                    None => (w.as_str(), None),
                };
                let mut value = || {
                    inline
                        .clone()
                        .or_else(|| it.next().cloned())
                        .unwrap_or_default()
                };
                match flag {
                    "--url" => out.service_url = value(),
                    "--infra-env-id" => out.infra_env_id = value(),
                    "--agent-version" => out.agent_image = value(),
                    "--cacert" => out.cacert_path = Some(value()),
                    "--insecure" => out.insecure = inline.as_deref().is_none_or(|v| v == "true"),
                    _ => {}
                }
            }
        }
    }
    if !found_exec || out.service_url.is_empty() || out.infra_env_id.is_empty() {
        return Err(bad(
            "agent.service has no ExecStart with --url and --infra-env-id",
        ));
    }

    let file_text = |path: &str, what: &str| -> Result<Option<String>, ImageError> {
        let Some(src) = v
            .pointer("/storage/files")
            .and_then(Value::as_array)
            .and_then(|files| files.iter().find(|f| f["path"] == path))
            .and_then(|f| f.pointer("/contents/source"))
            .and_then(Value::as_str)
        else {
            return Ok(None);
        };
        let data =
            decode_data_url(src).ok_or_else(|| bad(&format!("{what} is not a data: URL")))?;
        String::from_utf8(data)
            .map(Some)
            .map_err(|_| bad(&format!("{what} is not UTF-8")))
    };
    out.pull_secret = file_text(PULL_SECRET_PATH, "pull secret")?;
    out.registries_conf = file_text(
        crate::domain::mirrors::DISCOVERY_REGISTRIES_CONF_PATH,
        "registries.conf",
    )?;
    out.mirror_ca = file_text(crate::domain::mirrors::DISCOVERY_CA_PATH, "the mirrors' CA")?;
    if let Some(path) = out.cacert_path.clone() {
        out.ca_bundle = Some(
            file_text(&path, "the service CA")?
                .ok_or_else(|| bad(&format!("--cacert names {path}, which the ignition lacks")))?,
        );
    }
    if let Some(users) = v.pointer("/passwd/users").and_then(Value::as_array)
        && let Some(core) = users.iter().find(|u| u["name"] == "core")
    {
        out.ssh_authorized_keys = core["sshAuthorizedKeys"]
            .as_array()
            .map(|k| {
                k.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
    }
    Ok(out)
}

// --- rendering helpers -------------------------------------------------------------

fn version_string((a, b, c): (u64, u64, u64)) -> String {
    format!("{a}.{b}.{c}")
}

pub(crate) fn data_url(data: &[u8]) -> String {
    format!("data:text/plain;charset=utf-8;base64,{}", B64.encode(data))
}

#[cfg(any(test, feature = "test-support"))]
pub use crate::service::install::decode_data_url;

fn file(path: &str, mode: u32, data: &[u8]) -> Value {
    json!({
        "path": path,
        "mode": mode,
        "overwrite": true,
        "user": { "name": "root" },
        "contents": { "source": data_url(data) },
    })
}

fn unit(name: &str, contents: &str) -> Value {
    json!({ "name": name, "enabled": true, "contents": contents })
}

fn ssh_keys(raw: &str) -> Vec<String> {
    raw.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// A single ExecStart word: no quoting needed, so reject anything that would need it.
fn exec_word(field: &'static str, v: &str) -> Result<String, ImageError> {
    if v.is_empty() {
        return Err(ImageError::input(field, "must not be empty"));
    }
    if let Some(c) = v
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '\\' | ';'))
    {
        return Err(ImageError::input(field, format!("contains {c:?}")));
    }
    // systemd expands %specifiers and $VARIABLES in ExecStart.
    Ok(v.replace('%', "%%").replace('$', "$$"))
}

/// An `Environment="K=V"` line with systemd C-style quoting.
pub(crate) fn env_line(field: &'static str, key: &str, v: &str) -> Result<String, ImageError> {
    if v.chars().any(char::is_control) {
        return Err(ImageError::input(field, "contains a control character"));
    }
    let quoted = v
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('%', "%%");
    Ok(format!("Environment=\"{key}={quoted}\"\n"))
}

#[cfg(any(test, feature = "test-support"))]
/// Splits a unit-file value into words, honouring double and single quotes and
/// backslash escapes, and undoing `%%`/`$$`.
fn unit_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    in_word = true;
                }
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (_, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
        .into_iter()
        .map(|w| w.replace("%%", "%").replace("$$", "$"))
        .collect()
}

fn agent_unit(p: &DiscoveryIgnitionParams, cacert: Option<&str>) -> Result<String, ImageError> {
    let url = exec_word("service base URL", p.service_base_url.trim_end_matches('/'))?;
    let id = exec_word("infra-env id", &p.infra_env_id)?;
    let image = exec_word("agent image", &p.agent_image)?;
    let mut env = String::new();
    for (k, v) in p.proxy.env_pairs() {
        env += &env_line("proxy", k, v)?;
    }
    env += &env_line("agent token", "PULL_SECRET_TOKEN", &p.agent_token)?;
    let cacert = cacert.map(|c| format!(" --cacert {c}")).unwrap_or_default();
    Ok(format!(
        "[Unit]\n\
         Description=Assisted Installer discovery agent\n\
         Wants=network-online.target\n\
         After=network-online.target\n\
         StartLimitIntervalSec=0\n\
         \n\
         [Service]\n\
         Type=simple\n\
         Restart=always\n\
         RestartSec=3\n\
         TimeoutStartSec=600\n\
         {env}\
         ExecStartPre=/usr/local/bin/agent-pull-image {image}\n\
         ExecStartPre=/usr/bin/podman run --privileged --rm -v /usr/local/bin:/hostbin {image} cp /usr/bin/agent /hostbin\n\
         ExecStart=/usr/local/bin/agent --url {url} --infra-env-id {id} --agent-version {image} --insecure={insecure}{cacert}\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        insecure = p.insecure,
    ))
}

// Pulls with retries: the network may come up after the unit starts, and registries flake.
const PULL_IMAGE_SCRIPT: &str = r#"#!/bin/bash
# Usage: agent-pull-image IMAGE. Retries until the pull succeeds.
until podman pull --authfile /root/.docker/config.json "$1"; do
  echo "pulling $1 failed, retrying in 5s" >&2
  sleep 5
done
"#;

fn proxy_profile(proxy: &ProxySettings) -> String {
    let mut out = String::from("# Proxy settings of the infra-env, for login shells.\n");
    for (k, v) in proxy.env_pairs() {
        out += &format!("export {k}='{}'\n", v.replace('\'', r"'\''"));
    }
    out
}

fn ntp_sources(raw: &[String]) -> Result<Vec<String>, ImageError> {
    let mut out = Vec::new();
    for s in raw
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let ok = s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'));
        if !ok {
            return Err(ImageError::input(
                "NTP source",
                format!("{s:?} is not a host name or address"),
            ));
        }
        if !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    }
    Ok(out)
}

// chronyd is already running with the image defaults; add the sources at run time so
// the image's chrony.conf stays untouched.
const ADD_NTP_SCRIPT: &str = r#"#!/bin/bash
# Adds every source listed in /etc/assisted/ntp-sources to the running chronyd.
while read -r source; do
  [ -n "$source" ] || continue
  chronyc add server "$source" iburst || echo "could not add NTP source $source" >&2
done < /etc/assisted/ntp-sources
"#;

const ADD_NTP_UNIT: &str = "[Unit]\n\
Description=Add the infra-env NTP sources to chronyd\n\
Requires=chronyd.service\n\
After=chronyd.service\n\
\n\
[Service]\n\
Type=oneshot\n\
RemainAfterExit=yes\n\
ExecStart=/usr/local/bin/add-ntp-sources.sh\n\
\n\
[Install]\n\
WantedBy=multi-user.target\n";

// --- static network ------------------------------------------------------------------

fn valid_mac(mac: &str) -> bool {
    let parts: Vec<&str> = mac.split(':').collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn valid_nic(name: &str) -> bool {
    (1..=15).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `(path, mode, contents)` of the per-host network files, the apply script included.
pub(crate) fn static_network_files(
    cfgs: &[StaticNetworkConfig],
) -> Result<Vec<(String, u32, String)>, ImageError> {
    let mut out = Vec::new();
    for (i, cfg) in cfgs.iter().enumerate() {
        let field = "static network config";
        let yaml: serde_yaml::Value = serde_yaml::from_str(&cfg.network_yaml)
            .map_err(|e| ImageError::input(field, format!("host {i}: network YAML: {e}")))?;
        if !yaml.is_mapping() {
            return Err(ImageError::input(
                field,
                format!("host {i}: network YAML is not a mapping"),
            ));
        }
        if cfg.mac_interface_map.is_empty() {
            return Err(ImageError::input(
                field,
                format!("host {i}: empty MAC to interface map"),
            ));
        }
        let mut ini = String::new();
        for m in &cfg.mac_interface_map {
            if !valid_mac(&m.mac_address) {
                return Err(ImageError::input(
                    field,
                    format!("host {i}: bad MAC {:?}", m.mac_address),
                ));
            }
            if !valid_nic(&m.logical_nic_name) {
                return Err(ImageError::input(
                    field,
                    format!("host {i}: bad interface name {:?}", m.logical_nic_name),
                ));
            }
            ini += &format!(
                "{}={}\n",
                m.mac_address.to_ascii_lowercase(),
                m.logical_nic_name
            );
        }
        let dir = format!("{NETWORK_DIR}/host{i}");
        out.push((
            format!("{dir}/ymlFile{i}.yml"),
            0o600,
            cfg.network_yaml.clone(),
        ));
        out.push((format!("{dir}/mac_interface.ini"), 0o600, ini));
    }
    out.push((
        PRE_NM_SCRIPT_PATH.to_string(),
        0o755,
        PRE_NM_SCRIPT.to_string(),
    ));
    Ok(out)
}

/// Picks the hostN directory whose MACs all belong to this machine, rewrites the logical
/// NIC names to the real ones and hands the YAML to nmstate.service (via /etc/nmstate).
pub(crate) const PRE_NM_SCRIPT: &str = r#"#!/bin/bash
# Applies the assisted static network configuration matching this host's MACs.
set -euo pipefail
base=/etc/assisted/network
[ -d "$base" ] || exit 0
# Some NICs take a while to appear (InfraEnv networkDiscoveryDelaySeconds).
delay=${DISCOVERY_DELAY_SECONDS:-0}
if [ "$delay" -gt 0 ]; then
  echo "waiting ${delay}s for network interfaces to appear"
  sleep "$delay"
fi
declare -A nic_by_mac
for dev in /sys/class/net/*; do
  [ -f "$dev/address" ] || continue
  nic_by_mac[$(tr 'A-F' 'a-f' < "$dev/address")]=$(basename "$dev")
done
for host in "$base"/host*; do
  ini="$host/mac_interface.ini"
  [ -f "$ini" ] || continue
  renames=()
  matched=yes
  while IFS='=' read -r mac logical; do
    [ -n "$mac" ] || continue
    real=${nic_by_mac[${mac,,}]:-}
    if [ -z "$real" ]; then matched=no; break; fi
    renames+=("$logical" "$real")
  done < "$ini"
  [ "$matched" = yes ] || continue
  mkdir -p /etc/nmstate
  for yml in "$host"/*.yml; do
    out="/etc/nmstate/assisted-$(basename "$yml")"
    cp "$yml" "$out"
    for ((i = 0; i < ${#renames[@]}; i += 2)); do
      from=${renames[i]//./\\.}
      sed -i -E "s/(^|[^[:alnum:]_.-])${from}([^[:alnum:]_.-]|$)/\1${renames[i+1]}\2/g" "$out"
    done
  done
  echo "applied static network configuration from $host"
  exit 0
done
echo "no static network configuration matches this host's MAC addresses" >&2
"#;

/// The unit with `DISCOVERY_DELAY_SECONDS` in its environment when there is a delay (the
/// script reads it). A oneshot unit has no start timeout, so a long wait is not cut short.
pub(crate) fn with_discovery_delay(unit: &str, delay_seconds: u64) -> String {
    if delay_seconds == 0 {
        return unit.to_string();
    }
    unit.replacen(
        "[Service]\n",
        &format!("[Service]\nEnvironment=DISCOVERY_DELAY_SECONDS={delay_seconds}\n"),
        1,
    )
}

/// The unit that selects the host's static network configuration before NetworkManager
/// starts: in the live rootfs (ignition) or in the minimal ISO's initrd, which differ in what
/// it runs before and which target wants it.
pub(super) fn pre_nm_unit(before: &str, wanted_by: &str) -> String {
    format!(
        "[Unit]\n\
Description=Select the assisted static network configuration for this host\n\
DefaultDependencies=no\n\
Wants=network-pre.target\n\
Before={before}\n\
After=systemd-udev-settle.service\n\
\n\
[Service]\n\
Type=oneshot\n\
RemainAfterExit=yes\n\
ExecStart=/usr/local/bin/pre-network-manager-config.sh\n\
\n\
[Install]\n\
WantedBy={wanted_by}\n"
    )
}

// --- override merge ------------------------------------------------------------------

/// Lists merged by key (an override entry replaces the base entry with the same key);
/// every other list is appended to.
const KEYED_LISTS: &[(&str, &str)] = &[
    ("storage.files", "path"),
    ("storage.directories", "path"),
    ("storage.links", "path"),
    ("systemd.units", "name"),
    ("passwd.users", "name"),
    ("passwd.groups", "name"),
];

fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let core = v.split(['-', '+']).next()?;
    let mut it = core.split('.').map(|p| p.parse::<u64>().ok());
    let out = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(out)
}

fn merge_override(base: &mut Value, raw: &str) -> Result<(), ImageError> {
    let bad = |m: String| ImageError::InvalidOverride(m);
    let mut over: Value =
        serde_json::from_str(raw).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    if !over.is_object() {
        return Err(bad("must be a JSON object".into()));
    }
    let version = over
        .get("ignition")
        .and_then(|i| i.get("version"))
        .and_then(Value::as_str)
        .ok_or_else(|| bad("ignition.version is missing".into()))?;
    let parsed = parse_version(version)
        .ok_or_else(|| bad(format!("ignition.version {version:?} is not x.y.z")))?;
    if parsed.0 != 3 {
        return Err(bad(format!(
            "ignition.version {version} is not supported; use a 3.x spec version"
        )));
    }
    let merged_version = version_string(parsed.max(IGNITION_VERSION));
    if let Some(Value::Object(ign)) = over.get_mut("ignition") {
        ign.remove("version");
    }
    for (path, key) in KEYED_LISTS {
        let pointer = format!("/{}", path.replace('.', "/"));
        let Some(list) = over.pointer(&pointer) else {
            continue;
        };
        let items = list
            .as_array()
            .ok_or_else(|| bad(format!("{path} must be a list")))?;
        for (i, item) in items.iter().enumerate() {
            if !item.get(*key).is_some_and(Value::is_string) {
                return Err(bad(format!("{path}[{i}] has no string \"{key}\"")));
            }
        }
    }
    merge_value("", base, over)?;
    base["ignition"]["version"] = Value::String(merged_version);
    Ok(())
}

fn merge_value(path: &str, base: &mut Value, over: Value) -> Result<(), ImageError> {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(bv) => merge_value(&join(&k), bv, v)?,
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (Value::Array(b), Value::Array(o)) => match KEYED_LISTS.iter().find(|(p, _)| *p == path) {
            Some((_, key)) => {
                for item in o {
                    match b.iter().position(|x| x.get(*key) == item.get(*key)) {
                        Some(pos) => b[pos] = item,
                        None => b.push(item),
                    }
                }
            }
            None => b.extend(o),
        },
        (b @ (Value::Object(_) | Value::Array(_)), _) => {
            let want = if b.is_object() { "an object" } else { "a list" };
            return Err(ImageError::InvalidOverride(format!(
                "{path} must be {want}"
            )));
        }
        (b, o) => *b = o,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn params() -> DiscoveryIgnitionParams {
        DiscoveryIgnitionParams {
            service_base_url: "https://assisted.example:8090/".into(),
            infra_env_id: "2f1a7b3e-0000-4000-8000-000000000001".into(),
            agent_token: "eyJhbGciOiJFUzI1NiJ9.e30.sig".into(),
            agent_image: "quay.io/edge-infrastructure/assisted-installer-agent:latest".into(),
            insecure: false,
            service_ca_bundle: Some(
                "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n".into(),
            ),
            pull_secret: r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}"#.into(),
            ssh_authorized_key: "ssh-ed25519 AAAA one\n\nssh-rsa BBBB two\n".into(),
            ntp_sources: vec!["clock.example.com, 10.0.0.1".into(), "pool.ntp.org".into()],
            proxy: ProxySettings {
                http_proxy: Some("http://proxy:3128".into()),
                https_proxy: Some("http://user:p%40ss@proxy:3128".into()),
                no_proxy: Some(".cluster.local,10.0.0.0/8".into()),
            },
            additional_trust_bundle: Some("BUNDLE".into()),
            static_network: vec![StaticNetworkConfig {
                network_yaml: "interfaces:\n- name: eth0\n  type: ethernet\n  state: up\n".into(),
                mac_interface_map: vec![MacInterface {
                    mac_address: "52:54:00:AA:BB:01".into(),
                    logical_nic_name: "eth0".into(),
                }],
            }],
            network_discovery_delay_seconds: 0,
            ignition_config_override: None,
            kernel_arguments: vec![],
            openshift_version: Some("4.18.3".into()),
            mirror_files: vec![(
                "/etc/containers/registries.conf".into(),
                "[[registry]]\nlocation = \"quay.io\"\n".into(),
                0o644,
            )],
        }
    }

    #[test]
    fn the_mirror_files_are_written_as_given() {
        let v = render(&params());
        assert_eq!(
            file_text(&v, "/etc/containers/registries.conf").as_deref(),
            Some("[[registry]]\nlocation = \"quay.io\"\n")
        );
    }

    #[test]
    fn network_discovery_delay_reaches_the_static_network_unit() {
        let v = render(&params());
        let unit = unit_text(&v, PRE_NM_UNIT).unwrap();
        assert!(!unit.contains("DISCOVERY_DELAY_SECONDS"), "{unit}");
        let script = file_text(&v, PRE_NM_SCRIPT_PATH).unwrap();
        // The script waits before it reads the MACs.
        let wait = script.find("sleep \"$delay\"").unwrap();
        assert!(wait < script.find("/sys/class/net").unwrap());

        let mut p = params();
        p.network_discovery_delay_seconds = 30;
        let unit = unit_text(&render(&p), PRE_NM_UNIT).unwrap();
        assert!(
            unit.contains("[Service]\nEnvironment=DISCOVERY_DELAY_SECONDS=30\n"),
            "{unit}"
        );
        assert_eq!(
            with_discovery_delay("[Unit]\n[Service]\n", 0),
            "[Unit]\n[Service]\n"
        );
    }

    fn render(p: &DiscoveryIgnitionParams) -> Value {
        serde_json::from_str(&discovery_ignition(p).unwrap()).unwrap()
    }

    fn file_text(v: &Value, path: &str) -> Option<String> {
        let f = v["storage"]["files"]
            .as_array()?
            .iter()
            .find(|f| f["path"] == path)?;
        String::from_utf8(decode_data_url(f["contents"]["source"].as_str()?)?).ok()
    }

    fn unit_text(v: &Value, name: &str) -> Option<String> {
        let u = v["systemd"]["units"]
            .as_array()?
            .iter()
            .find(|u| u["name"] == name)?;
        u["contents"].as_str().map(String::from)
    }

    #[test]
    fn renders_the_discovery_pieces() {
        let p = params();
        let v = render(&p);
        assert_eq!(v["ignition"]["version"], "3.1.0");
        let core = &v["passwd"]["users"][0];
        assert_eq!(core["name"], "core");
        assert_eq!(
            core["sshAuthorizedKeys"],
            json!(["ssh-ed25519 AAAA one", "ssh-rsa BBBB two"])
        );

        let agent = unit_text(&v, "agent.service").unwrap();
        assert!(agent.contains(
            "ExecStart=/usr/local/bin/agent --url https://assisted.example:8090 \
             --infra-env-id 2f1a7b3e-0000-4000-8000-000000000001 \
             --agent-version quay.io/edge-infrastructure/assisted-installer-agent:latest \
             --insecure=false --cacert /etc/assisted-service/service-ca-cert.crt\n"
        ));
        assert!(agent.contains("Environment=\"PULL_SECRET_TOKEN=eyJhbGciOiJFUzI1NiJ9.e30.sig\"\n"));
        // `%` is doubled so systemd does not treat it as a specifier.
        assert!(agent.contains("Environment=\"HTTPS_PROXY=http://user:p%%40ss@proxy:3128\"\n"));
        assert!(agent.contains("Environment=\"no_proxy=.cluster.local,10.0.0.0/8\"\n"));

        assert_eq!(
            file_text(&v, "/root/.docker/config.json").unwrap(),
            p.pull_secret
        );
        let f = v["storage"]["files"].as_array().unwrap();
        let mode = |path: &str| f.iter().find(|f| f["path"] == path).unwrap()["mode"].clone();
        assert_eq!(mode("/root/.docker/config.json"), 0o600);
        assert_eq!(mode("/usr/local/bin/agent-pull-image"), 0o755);
        assert!(
            file_text(
                &v,
                "/etc/pki/ca-trust/source/anchors/assisted-service-ca.crt"
            )
            .unwrap()
            .contains("CA")
        );
        assert_eq!(
            file_text(
                &v,
                "/etc/pki/ca-trust/source/anchors/assisted-infraenv-additional-trust-bundle.pem"
            )
            .unwrap(),
            "BUNDLE"
        );
        let proxy = file_text(&v, "/etc/profile.d/proxy.sh").unwrap();
        assert!(proxy.contains("export HTTP_PROXY='http://proxy:3128'\n"));
        assert!(proxy.contains("export no_proxy='.cluster.local,10.0.0.0/8'\n"));
        assert_eq!(
            file_text(&v, "/etc/assisted/ntp-sources").unwrap(),
            "clock.example.com\n10.0.0.1\npool.ntp.org\n"
        );
        assert!(unit_text(&v, "add-ntp-sources.service").is_some());
        assert_eq!(
            file_text(&v, "/etc/assisted/network/host0/mac_interface.ini").unwrap(),
            "52:54:00:aa:bb:01=eth0\n"
        );
        assert!(
            file_text(&v, "/etc/assisted/network/host0/ymlFile0.yml")
                .unwrap()
                .contains("name: eth0")
        );
        assert!(
            file_text(&v, PRE_NM_SCRIPT_PATH)
                .unwrap()
                .starts_with("#!/bin/bash")
        );
        assert!(unit_text(&v, PRE_NM_UNIT).is_some());
        assert!(file_text(&v, "/etc/motd").unwrap().contains("4.18.3"));
    }

    #[test]
    fn minimal_params_skip_optional_pieces() {
        let p = DiscoveryIgnitionParams {
            service_base_url: "http://10.0.0.5:8090".into(),
            infra_env_id: "ie".into(),
            agent_image: "agent:1".into(),
            insecure: true,
            pull_secret: "{}".into(),
            ..Default::default()
        };
        let v = render(&p);
        let paths: Vec<&str> = v["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                "/root/.docker/config.json",
                "/etc/motd",
                "/usr/local/bin/agent-pull-image"
            ]
        );
        let units: Vec<&str> = v["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["name"].as_str().unwrap())
            .collect();
        assert_eq!(units, ["agent.service"]);
        assert!(v["passwd"]["users"][0].get("sshAuthorizedKeys").is_none());
        let agent = unit_text(&v, "agent.service").unwrap();
        assert!(agent.contains("--insecure=true\n"));
        assert!(!agent.contains("PROXY"));
    }

    #[test]
    fn parse_roundtrip() {
        let p = params();
        let got = parse_discovery_ignition(&discovery_ignition(&p).unwrap()).unwrap();
        assert_eq!(got.service_url, "https://assisted.example:8090");
        assert_eq!(got.infra_env_id, p.infra_env_id);
        assert_eq!(got.token, p.agent_token);
        assert_eq!(got.agent_image, p.agent_image);
        assert!(!got.insecure);
        assert_eq!(got.cacert_path.as_deref(), Some(SERVICE_CA_PATH));
        assert_eq!(got.ca_bundle, p.service_ca_bundle);
        assert_eq!(got.pull_secret.as_deref(), Some(p.pull_secret.as_str()));
        assert_eq!(got.ssh_authorized_keys.len(), 2);
        assert_eq!(got.proxy, p.proxy);
        // What the host's container runtime pulls through.
        assert_eq!(
            got.registries_conf.as_deref(),
            Some(p.mirror_files[0].1.as_str())
        );
        assert_eq!(got.mirror_ca, None);
    }

    #[test]
    fn parse_accepts_upstream_shape_and_rejects_others() {
        let ign = json!({
            "ignition": {"version": "3.1.0"},
            "systemd": {"units": [{"name": "agent.service", "enabled": true, "contents":
                "[Service]\nEnvironment=HTTP_PROXY=\nEnvironment=PULL_SECRET_TOKEN=tok\n\
                 ExecStart=/usr/local/bin/agent --url http://svc:8090 --infra-env-id abc --agent-version img:1 --insecure=true \n"}]},
            "storage": {"files": [{"path": "/root/.docker/config.json",
                "contents": {"source": "data:,%7B%22auths%22%3A%7B%7D%7D"}}]}
        });
        let got = parse_discovery_ignition(&ign.to_string()).unwrap();
        assert_eq!(got.service_url, "http://svc:8090");
        assert_eq!(got.infra_env_id, "abc");
        assert_eq!(got.token, "tok");
        assert!(got.insecure);
        assert_eq!(got.pull_secret.as_deref(), Some(r#"{"auths":{}}"#));
        assert!(parse_discovery_ignition("{}").is_err());
        assert!(parse_discovery_ignition("nope").is_err());
    }

    #[test]
    fn override_is_merged_last() {
        let mut p = params();
        p.ignition_config_override = Some(
            json!({
                "ignition": {"version": "3.2.0"},
                "passwd": {"users": [{"name": "core", "passwordHash": "$6$x"}, {"name": "admin"}]},
                "storage": {
                    "files": [
                        {"path": "/etc/motd", "contents": {"source": "data:,hello"}},
                        {"path": "/etc/extra", "contents": {"source": "data:,x"}}
                    ],
                    "disks": [{"device": "/dev/sdb"}]
                },
                "systemd": {"units": [{"name": "agent.service", "mask": true}]}
            })
            .to_string(),
        );
        let v = render(&p);
        assert_eq!(v["ignition"]["version"], "3.2.0");
        assert_eq!(file_text(&v, "/etc/motd").unwrap(), "hello");
        assert_eq!(file_text(&v, "/etc/extra").unwrap(), "x");
        // Same count of motd entries: replaced, not duplicated.
        let files = v["storage"]["files"].as_array().unwrap();
        assert_eq!(files.iter().filter(|f| f["path"] == "/etc/motd").count(), 1);
        assert_eq!(v["storage"]["disks"][0]["device"], "/dev/sdb");
        let users = v["passwd"]["users"].as_array().unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(users[0], json!({"name": "core", "passwordHash": "$6$x"}));
        let agent = v["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == "agent.service");
        assert_eq!(
            agent.unwrap(),
            &json!({"name": "agent.service", "mask": true})
        );
        // An older 3.x override keeps our 3.1.0.
        p.ignition_config_override = Some(r#"{"ignition":{"version":"3.0.0"}}"#.into());
        assert_eq!(render(&p)["ignition"]["version"], "3.1.0");
    }

    #[test]
    fn bad_overrides_name_the_problem() {
        let mut p = params();
        for (ov, needle) in [
            ("{not json", "not valid JSON"),
            ("[]", "JSON object"),
            (r#"{"storage":{}}"#, "ignition.version is missing"),
            (r#"{"ignition":{"version":"2.2.0"}}"#, "use a 3.x"),
            (r#"{"ignition":{"version":"three"}}"#, "not x.y.z"),
            (
                r#"{"ignition":{"version":"3.1.0"},"storage":{"files":{}}}"#,
                "storage.files must be a list",
            ),
            (
                r#"{"ignition":{"version":"3.1.0"},"storage":{"files":[{"mode":420}]}}"#,
                "storage.files[0] has no string \"path\"",
            ),
            (
                r#"{"ignition":{"version":"3.1.0"},"systemd":[]}"#,
                "systemd must be an object",
            ),
        ] {
            p.ignition_config_override = Some(ov.into());
            let err = discovery_ignition(&p).unwrap_err();
            assert!(matches!(err, ImageError::InvalidOverride(_)), "{ov}: {err}");
            assert!(err.to_string().contains(needle), "{ov}: {err}");
        }
    }

    #[test]
    fn rejects_unsafe_inputs() {
        type Mutation = fn(&mut DiscoveryIgnitionParams);
        let cases: Vec<(Mutation, &str)> = vec![
            (|p| p.pull_secret = "nope".into(), "pull secret"),
            (|p| p.agent_image = "img; rm -rf /".into(), "agent image"),
            (|p| p.infra_env_id = String::new(), "infra-env id"),
            (|p| p.agent_token = "a\nb".into(), "agent token"),
            (|p| p.ntp_sources = vec!["a b".into()], "NTP source"),
            (
                |p| p.static_network[0].mac_interface_map[0].mac_address = "zz".into(),
                "bad MAC",
            ),
            (
                |p| p.static_network[0].mac_interface_map[0].logical_nic_name = "a/b".into(),
                "interface name",
            ),
            (
                |p| p.static_network[0].network_yaml = "- a\n".into(),
                "not a mapping",
            ),
            (
                |p| p.static_network[0].network_yaml = "a: [".into(),
                "network YAML",
            ),
        ];
        for (mutate, needle) in cases {
            let mut p = params();
            mutate(&mut p);
            let err = discovery_ignition(&p).unwrap_err();
            assert!(err.to_string().contains(needle), "{needle}: {err}");
        }
    }

    #[test]
    fn unit_word_splitting() {
        assert_eq!(
            unit_words(r#"a "b c" 'd e' f\"g 50%% $$HOME"#),
            ["a", "b c", "d e", "f\"g", "50%", "$HOME"]
        );
        assert_eq!(unit_words(r#""K=v \"q\"""#), ["K=v \"q\""]);
    }
}
