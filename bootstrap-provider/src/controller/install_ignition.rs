//! The install-time ignition of a matched Agent (`Agent.spec.ignitionConfigOverrides`). Pure: no
//! client, no clock.
//!
//! The assisted core merges this Ignition config over the ignition it writes for the host's
//! installed OS, so what it carries is on the disk from the first boot: the config's
//! `preBootstrapCommands` run once before kubelet starts, its `postBootstrapCommands` run once
//! after the host's Node has registered, kubelet gets `nodeRegistration.providerID`, and the
//! user's `ignition-override` annotation is merged on top. The Agent is applied with server-side
//! apply and compared with what is there, so the same input always gives the same bytes.

use base64::Engine as _;
use std::collections::BTreeMap;

use provider_api::bootstrap::api::OpenshiftAssistedConfigSpec;
use provider_api::bootstrap::validation::{
    self, IgnitionOverride, InvalidOverride, parse_override,
};
use serde_json::{Map, Value, json};

/// The Ignition spec version of what we generate (CAPOA's).
pub const IGNITION_VERSION: &str = "3.1.0";
const IGNITION_VERSION_NUMBERS: (u32, u32, u32) = (3, 1, 0);
/// Where the run-once sentinels go when `bootstrapCommandSentinelDir` is unset.
pub const DEFAULT_SENTINEL_DIR: &str = "/var/lib/capoa";
/// The kubeconfig the post-bootstrap script uses when `postBootstrapKubeconfigPath` is unset.
pub const DEFAULT_POST_BOOTSTRAP_KUBECONFIG: &str = "/var/lib/kubelet/kubeconfig";

pub const PRE_BOOTSTRAP_SCRIPT: &str = "/usr/local/bin/capoa-pre-bootstrap.sh";
pub const PRE_BOOTSTRAP_UNIT: &str = "capoa-pre-bootstrap.service";
pub const PRE_BOOTSTRAP_SENTINEL: &str = "pre-bootstrap.done";
pub const POST_BOOTSTRAP_SCRIPT: &str = "/usr/local/bin/capoa-post-bootstrap.sh";
pub const POST_BOOTSTRAP_UNIT: &str = "capoa-post-bootstrap.service";
pub const POST_BOOTSTRAP_SENTINEL: &str = "post-bootstrap.done";
/// The kubelet drop-in that passes `nodeRegistration.providerID`.
pub const PROVIDER_ID_DROP_IN: &str = "/etc/systemd/system/kubelet.service.d/20-provider-id.conf";

/// How long the post-bootstrap script waits, in all, for the API server and then its Node.
const POST_BOOTSTRAP_WAIT_SECONDS: u32 = 600;
/// How often it asks.
const POST_BOOTSTRAP_POLL_SECONDS: u32 = 10;

/// The Ignition 3 lists whose entries are identified by a field: an overlay entry replaces ours
/// with the same identity, others are appended. (section, list, identifying field)
const KEYED_LISTS: &[(&str, &str, &str)] = &[
    ("storage", "files", "path"),
    ("storage", "directories", "path"),
    ("storage", "links", "path"),
    ("systemd", "units", "name"),
    ("passwd", "users", "name"),
];

/// Why no install-time ignition can be built for the config.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstallIgnitionError {
    #[error(
        "nodeRegistration.providerID resolves to {value:?}, which has a control character, '\"' or '\\' that kubelet's systemd drop-in cannot carry"
    )]
    InvalidProviderId { value: String },
    #[error(transparent)]
    InvalidOverride(#[from] InvalidOverride),
}

fn invalid_override(detail: impl Into<String>) -> InstallIgnitionError {
    validation::invalid_override(detail).into()
}

/// The JSON for `Agent.spec.ignitionConfigOverrides`, or None when the config needs nothing on
/// the installed host (no bootstrap commands, no provider ID, no `ignition-override`
/// annotation), so the Agents of plain configs are unchanged.
///
/// `config_annotations` are the OpenshiftAssistedConfig's annotations; `provider_id` is
/// `nodeRegistration.providerID` with its variables already resolved (an empty one counts as
/// unset).
pub fn install_ignition(
    config: &OpenshiftAssistedConfigSpec,
    config_annotations: &BTreeMap<String, String>,
    provider_id: Option<&str>,
) -> Result<Option<String>, InstallIgnitionError> {
    let overlay = parse_override(config_annotations)?;
    let sentinel_dir = sentinel_dir(config);
    let mut files = Vec::new();
    let mut units = Vec::new();

    if !config.pre_bootstrap_commands.is_empty() {
        let script = pre_bootstrap_script(&config.pre_bootstrap_commands, &sentinel_dir);
        files.push(file(PRE_BOOTSTRAP_SCRIPT, 0o700, &script));
        units.push(unit(PRE_BOOTSTRAP_UNIT, &pre_bootstrap_unit(&sentinel_dir)));
    }
    if !config.post_bootstrap_commands.is_empty() {
        // Unlike CAPOA, which always uses the default, the configured path is honoured.
        let kubeconfig = config
            .post_bootstrap_kubeconfig_path
            .as_deref()
            .filter(|p| !p.is_empty())
            .unwrap_or(DEFAULT_POST_BOOTSTRAP_KUBECONFIG);
        let script =
            post_bootstrap_script(&config.post_bootstrap_commands, &sentinel_dir, kubeconfig);
        files.push(file(POST_BOOTSTRAP_SCRIPT, 0o700, &script));
        units.push(unit(
            POST_BOOTSTRAP_UNIT,
            &post_bootstrap_unit(&sentinel_dir),
        ));
    }
    if let Some(provider_id) = provider_id.filter(|p| !p.is_empty()) {
        files.push(file(
            PROVIDER_ID_DROP_IN,
            0o644,
            &provider_id_drop_in(provider_id)?,
        ));
    }
    if files.is_empty() && units.is_empty() && overlay.is_none() {
        return Ok(None);
    }

    let mut ignition = Map::new();
    ignition.insert("ignition".into(), json!({ "version": IGNITION_VERSION }));
    if !files.is_empty() {
        ignition.insert("storage".into(), json!({ "files": files }));
    }
    if !units.is_empty() {
        ignition.insert("systemd".into(), json!({ "units": units }));
    }
    if let Some(overlay) = overlay {
        merge_override(&mut ignition, overlay)?;
    }
    // serde_json's maps are sorted by key here (no `preserve_order`), and the lists keep the
    // order they were built in: the output depends on the input alone.
    Ok(Some(Value::Object(ignition).to_string()))
}

/// `bootstrapCommandSentinelDir` (default `/var/lib/capoa`) without a trailing `/`, so the
/// sentinel paths have no `//`; the root directory becomes the empty prefix.
fn sentinel_dir(config: &OpenshiftAssistedConfigSpec) -> String {
    let dir = config
        .bootstrap_command_sentinel_dir
        .as_deref()
        .filter(|d| !d.is_empty())
        .unwrap_or(DEFAULT_SENTINEL_DIR);
    dir.trim_end_matches('/').to_string()
}

fn sentinel_path(sentinel_dir: &str, name: &str) -> String {
    format!("{sentinel_dir}/{name}")
}

/// A root-owned file whose contents are a base64 `data:` URL (as CAPOA writes them).
pub(crate) fn file(path: &str, mode: u32, contents: &str) -> Value {
    json!({
        "path": path,
        "mode": mode,
        "overwrite": true,
        "user": { "name": "root" },
        "contents": {
            "source": format!("data:text/plain;charset=utf-8;base64,{}", base64(contents.as_bytes()))
        }
    })
}

pub(crate) fn unit(name: &str, contents: &str) -> Value {
    json!({ "name": name, "enabled": true, "contents": contents })
}

/// Single-quoted for bash. The paths quoted here already match the CRD's pattern
/// `^/[a-zA-Z0-9_./-]+$`; quoting keeps the script right whatever they hold.
pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The lines that mark a script as done; they run only when every command before succeeded
/// (`set -e`), so a failed run is retried on the next boot.
fn write_sentinel(sentinel_dir: &str, name: &str) -> String {
    let dir = if sentinel_dir.is_empty() {
        "/"
    } else {
        sentinel_dir
    };
    format!(
        "mkdir -p {}\ntouch {}\n",
        shell_quote(dir),
        shell_quote(&sentinel_path(sentinel_dir, name))
    )
}

fn pre_bootstrap_script(commands: &[String], sentinel_dir: &str) -> String {
    let mut script = String::from(
        "#!/bin/bash\n\
         # preBootstrapCommands of this Machine's OpenshiftAssistedConfig, run once before kubelet\n\
         # starts (capoa-pre-bootstrap.service).\n\
         set -euo pipefail\n\n",
    );
    for command in commands {
        script.push_str(command);
        script.push('\n');
    }
    script.push('\n');
    script.push_str(&write_sentinel(sentinel_dir, PRE_BOOTSTRAP_SENTINEL));
    script
}

fn post_bootstrap_script(commands: &[String], sentinel_dir: &str, kubeconfig: &str) -> String {
    let wait = POST_BOOTSTRAP_WAIT_SECONDS;
    let poll = POST_BOOTSTRAP_POLL_SECONDS;
    let kubeconfig = shell_quote(kubeconfig);
    let mut script = format!(
        r#"#!/bin/bash
# postBootstrapCommands of this Machine's OpenshiftAssistedConfig, run once after this host's
# Node has registered (capoa-post-bootstrap.service).
set -euo pipefail

kubeconfig={kubeconfig}
deadline=$((SECONDS + {wait}))

# Runs the command every {poll} s until it succeeds; after {wait} s in all the unit fails, without
# its sentinel, so it runs again on the next boot.
wait_for() {{
  local what="$1"
  shift
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS >= deadline )); then
      echo "capoa-post-bootstrap: gave up waiting for $what after {wait} s" >&2
      exit 1
    fi
    echo "capoa-post-bootstrap: waiting for $what" >&2
    sleep {poll}
  done
}}

wait_for "the API server" kubectl --kubeconfig="$kubeconfig" --request-timeout={poll}s get --raw /readyz
wait_for "Node $(hostname) to join the cluster" kubectl --kubeconfig="$kubeconfig" --request-timeout={poll}s get node "$(hostname)"

"#
    );
    for command in commands {
        script.push_str(command);
        script.push('\n');
    }
    script.push('\n');
    script.push_str(&write_sentinel(sentinel_dir, POST_BOOTSTRAP_SENTINEL));
    script
}

/// A oneshot systemd unit run at boot (`multi-user.target`): `unit_lines` are its `[Unit]`
/// lines after the description (ordering, conditions), each ending in a newline.
pub(crate) fn oneshot_unit(description: &str, unit_lines: &str, exec_start: &str) -> String {
    format!(
        "[Unit]\n\
         Description={description}\n\
         {unit_lines}\n\
         [Service]\n\
         Type=oneshot\n\
         RemainAfterExit=yes\n\
         ExecStart={exec_start}\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n"
    )
}

// The sentinel directory matches the CRD's pattern, so it needs no quoting in a unit file.
fn pre_bootstrap_unit(sentinel_dir: &str) -> String {
    oneshot_unit(
        "CAPOA pre-bootstrap commands (once, before kubelet)",
        &format!(
            "Wants=network-online.target\n\
             After=network-online.target ostree-finalize-staged.service\n\
             Before=kubelet.service\n\
             ConditionPathExists=!{}\n",
            sentinel_path(sentinel_dir, PRE_BOOTSTRAP_SENTINEL)
        ),
        PRE_BOOTSTRAP_SCRIPT,
    )
}

fn post_bootstrap_unit(sentinel_dir: &str) -> String {
    oneshot_unit(
        "CAPOA post-bootstrap commands (once, after the Node has registered)",
        &format!(
            "Requires=kubelet.service\n\
             After=kubelet.service\n\
             ConditionPathExists=!{}\n",
            sentinel_path(sentinel_dir, POST_BOOTSTRAP_SENTINEL)
        ),
        POST_BOOTSTRAP_SCRIPT,
    )
}

/// OpenShift's kubelet.service starts kubelet with `--provider-id=${KUBELET_PROVIDERID}`, so
/// setting that variable in a drop-in is enough. A quoted `Environment=` value cannot hold a
/// control character, `"` or `\` as written, so those are refused; `%` would be read as a
/// systemd specifier, so it is doubled.
fn provider_id_drop_in(provider_id: &str) -> Result<String, InstallIgnitionError> {
    if provider_id
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
    {
        return Err(InstallIgnitionError::InvalidProviderId {
            value: provider_id.to_string(),
        });
    }
    Ok(format!(
        "# nodeRegistration.providerID of this Machine's OpenshiftAssistedConfig; kubelet.service\n\
         # passes it as --provider-id=${{KUBELET_PROVIDERID}}.\n\
         [Service]\n\
         Environment=\"KUBELET_PROVIDERID={}\"\n",
        provider_id.replace('%', "%%")
    ))
}

/// Merges the overlay over what we generated, as Ignition merges a child config but with whole
/// entries: in the [`KEYED_LISTS`] an overlay entry replaces ours of the same identity (in
/// place) or is appended; any other key of the overlay replaces ours. The result's version is
/// the higher of ours and the overlay's.
fn merge_override(
    base: &mut Map<String, Value>,
    overlay: IgnitionOverride,
) -> Result<(), InstallIgnitionError> {
    let IgnitionOverride {
        mut config,
        version,
        version_numbers,
    } = overlay;
    // The overlay's `ignition` section (config, security, timeouts, proxy) is taken as it is,
    // with the version that can read both.
    let mut ignition = match config.remove("ignition") {
        Some(Value::Object(section)) => section,
        _ => Map::new(),
    };
    let merged_version = if version_numbers > IGNITION_VERSION_NUMBERS {
        version
    } else {
        IGNITION_VERSION.to_string()
    };
    ignition.insert("version".into(), Value::String(merged_version));
    base.insert("ignition".into(), Value::Object(ignition));

    for (section, value) in config {
        let has_keyed_lists = KEYED_LISTS.iter().any(|(s, _, _)| *s == section);
        match value {
            Value::Object(overlay_section) if has_keyed_lists => {
                let ours = match base.remove(&section) {
                    Some(Value::Object(ours)) => ours,
                    _ => Map::new(),
                };
                let merged = merge_section(&section, ours, overlay_section)?;
                base.insert(section, Value::Object(merged));
            }
            other => {
                base.insert(section, other);
            }
        }
    }
    Ok(())
}

fn merge_section(
    section: &str,
    mut ours: Map<String, Value>,
    overlay: Map<String, Value>,
) -> Result<Map<String, Value>, InstallIgnitionError> {
    for (field, value) in overlay {
        let identity = KEYED_LISTS
            .iter()
            .find(|(s, list, _)| *s == section && *list == field)
            .map(|(_, _, key)| *key);
        let Some(key) = identity else {
            ours.insert(field, value);
            continue;
        };
        let Value::Array(theirs) = value else {
            return Err(invalid_override(format!("{section}.{field} is not a list")));
        };
        let mine = match ours.remove(&field) {
            Some(Value::Array(mine)) => mine,
            _ => Vec::new(),
        };
        let merged = merge_keyed_list(&format!("{section}.{field}"), key, mine, theirs)?;
        ours.insert(field, Value::Array(merged));
    }
    Ok(ours)
}

fn merge_keyed_list(
    list: &str,
    key: &str,
    mut ours: Vec<Value>,
    theirs: Vec<Value>,
) -> Result<Vec<Value>, InstallIgnitionError> {
    for (index, entry) in theirs.into_iter().enumerate() {
        let Some(identity) = entry.get(key).and_then(Value::as_str).map(str::to_string) else {
            return Err(invalid_override(format!(
                "{list}[{index}] has no string {key:?}"
            )));
        };
        let same = ours
            .iter()
            .position(|e| e.get(key).and_then(Value::as_str) == Some(identity.as_str()));
        match same {
            Some(position) => ours[position] = entry,
            None => ours.push(entry),
        }
    }
    Ok(ours)
}

/// Standard base64 with padding (RFC 4648 §4), for the `data:` URLs.
fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Test helper: `bash -n` on a generated script (syntax only, nothing runs); `Err` has bash's
/// message.
#[cfg(test)]
pub(crate) fn bash_syntax(script: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = std::process::Command::new("bash")
        .arg("-n")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("running bash: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(script.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Test helper: the text of a `data:...;base64,` URL as [`file`] writes it.
#[cfg(test)]
pub(crate) fn decode_data_url(source: &str) -> Option<String> {
    let (_, encoded) = source.split_once(";base64,")?;
    String::from_utf8(decode_base64(encoded)).ok()
}

#[cfg(test)]
fn decode_base64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("valid base64")
}

#[cfg(test)]
mod tests {
    use provider_api::bootstrap::api::IGNITION_OVERRIDE_ANNOTATION;

    use super::*;

    fn spec(yaml: &str) -> OpenshiftAssistedConfigSpec {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn annotated(value: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(IGNITION_OVERRIDE_ANNOTATION.to_string(), value.to_string())])
    }

    fn no_annotations() -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// The generated Ignition, parsed.
    fn generate(
        config: &OpenshiftAssistedConfigSpec,
        annotations: &BTreeMap<String, String>,
        provider_id: Option<&str>,
    ) -> Value {
        let text = install_ignition(config, annotations, provider_id)
            .unwrap()
            .expect("an ignition");
        serde_json::from_str(&text).unwrap()
    }

    fn file<'a>(ignition: &'a Value, path: &str) -> &'a Value {
        ignition["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("no file {path}"))
    }

    /// The contents of the file at `path`, decoded from its data URL.
    fn file_text(ignition: &Value, path: &str) -> String {
        let source = file(ignition, path)["contents"]["source"].as_str().unwrap();
        let encoded = source
            .strip_prefix("data:text/plain;charset=utf-8;base64,")
            .unwrap();
        String::from_utf8(decode_base64(encoded)).unwrap()
    }

    fn unit_text<'a>(ignition: &'a Value, name: &str) -> &'a str {
        ignition["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == name)
            .unwrap_or_else(|| panic!("no unit {name}"))["contents"]
            .as_str()
            .unwrap()
    }

    fn paths(ignition: &Value) -> Vec<&str> {
        ignition["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect()
    }

    fn unit_names(ignition: &Value) -> Vec<&str> {
        ignition["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn nothing_to_do_gives_no_ignition() {
        let plain = spec("nodeRegistration: {name: n, kubeletExtraLabels: [a=b]}");
        assert_eq!(install_ignition(&plain, &no_annotations(), None), Ok(None));
        // The sentinel directory and kubeconfig path alone need nothing on the host.
        let paths_only = spec("bootstrapCommandSentinelDir: /x\npostBootstrapKubeconfigPath: /k");
        assert_eq!(
            install_ignition(&paths_only, &no_annotations(), None),
            Ok(None)
        );
        // An empty provider ID and a blank annotation count as unset.
        assert_eq!(
            install_ignition(&plain, &annotated("  "), Some("")),
            Ok(None)
        );
    }

    #[test]
    fn the_generated_scripts_are_valid_bash() {
        let commands = vec!["echo 'it''s'".to_string(), "test -d \"$HOME\"".to_string()];
        for dir in ["/var/lib/capoa", "/", "/odd dir/with'quote"] {
            bash_syntax(&pre_bootstrap_script(&commands, dir)).unwrap();
            bash_syntax(&post_bootstrap_script(
                &commands,
                dir,
                "/var/lib/kubelet/kubeconfig",
            ))
            .unwrap();
        }
        // The check itself fails on broken bash.
        assert!(bash_syntax("if then fi (").is_err());
    }

    #[test]
    fn pre_bootstrap_commands_run_in_order_once_before_kubelet() {
        let config = spec("preBootstrapCommands: [echo one, 'mkfs.xfs /dev/sdb', echo three]");
        let ignition = generate(&config, &no_annotations(), None);
        assert_eq!(ignition["ignition"]["version"], "3.1.0");
        assert_eq!(paths(&ignition), [PRE_BOOTSTRAP_SCRIPT]);
        assert_eq!(unit_names(&ignition), [PRE_BOOTSTRAP_UNIT]);

        let script_file = file(&ignition, PRE_BOOTSTRAP_SCRIPT);
        assert_eq!(script_file["mode"], 0o700);
        assert_eq!(script_file["overwrite"], true);
        assert_eq!(script_file["user"]["name"], "root");

        let script = file_text(&ignition, PRE_BOOTSTRAP_SCRIPT);
        assert!(script.starts_with("#!/bin/bash\n"), "{script}");
        let order: Vec<usize> = [
            "set -euo pipefail",
            "echo one",
            "mkfs.xfs /dev/sdb",
            "echo three",
            "mkdir -p '/var/lib/capoa'",
            "touch '/var/lib/capoa/pre-bootstrap.done'",
        ]
        .iter()
        .map(|line| {
            script
                .find(&format!("{line}\n"))
                .unwrap_or_else(|| panic!("{line:?} missing from\n{script}"))
        })
        .collect();
        assert!(order.is_sorted(), "{script}");

        let unit = unit_text(&ignition, PRE_BOOTSTRAP_UNIT);
        assert!(unit.contains("\nBefore=kubelet.service\n"), "{unit}");
        assert!(
            unit.contains("\nAfter=network-online.target ostree-finalize-staged.service\n"),
            "{unit}"
        );
        assert!(
            unit.contains("\nConditionPathExists=!/var/lib/capoa/pre-bootstrap.done\n"),
            "{unit}"
        );
        assert!(unit.contains("\nType=oneshot\n"), "{unit}");
        assert!(
            unit.contains(&format!("\nExecStart={PRE_BOOTSTRAP_SCRIPT}\n")),
            "{unit}"
        );
        assert_eq!(
            ignition["systemd"]["units"][0]["enabled"], true,
            "{ignition}"
        );
    }

    #[test]
    fn a_custom_sentinel_dir_is_used_without_a_double_slash() {
        for dir in ["/etc/capoa-state", "/etc/capoa-state/"] {
            let config = spec(&format!(
                "preBootstrapCommands: [echo pre]\npostBootstrapCommands: [echo post]\nbootstrapCommandSentinelDir: {dir}"
            ));
            let ignition = generate(&config, &no_annotations(), None);
            let pre = file_text(&ignition, PRE_BOOTSTRAP_SCRIPT);
            assert!(pre.contains("mkdir -p '/etc/capoa-state'\n"), "{pre}");
            assert!(
                pre.contains("touch '/etc/capoa-state/pre-bootstrap.done'\n"),
                "{pre}"
            );
            let post = file_text(&ignition, POST_BOOTSTRAP_SCRIPT);
            assert!(
                post.contains("touch '/etc/capoa-state/post-bootstrap.done'\n"),
                "{post}"
            );
            assert!(
                unit_text(&ignition, PRE_BOOTSTRAP_UNIT)
                    .contains("ConditionPathExists=!/etc/capoa-state/pre-bootstrap.done\n")
            );
            assert!(
                unit_text(&ignition, POST_BOOTSTRAP_UNIT)
                    .contains("ConditionPathExists=!/etc/capoa-state/post-bootstrap.done\n")
            );
            assert!(!pre.contains("//") && !post.contains("capoa-state//"));
        }
    }

    #[test]
    fn post_bootstrap_commands_wait_for_the_node_with_the_configured_kubeconfig() {
        let config = spec(
            "postBootstrapCommands: [echo first, echo second]\npostBootstrapKubeconfigPath: /etc/kubernetes/kubeconfig",
        );
        let ignition = generate(&config, &no_annotations(), None);
        assert_eq!(paths(&ignition), [POST_BOOTSTRAP_SCRIPT]);
        assert_eq!(unit_names(&ignition), [POST_BOOTSTRAP_UNIT]);
        assert_eq!(file(&ignition, POST_BOOTSTRAP_SCRIPT)["mode"], 0o700);

        let script = file_text(&ignition, POST_BOOTSTRAP_SCRIPT);
        let order: Vec<usize> = [
            "set -euo pipefail",
            "kubeconfig='/etc/kubernetes/kubeconfig'",
            "deadline=$((SECONDS + 600))",
            "get --raw /readyz",
            "get node \"$(hostname)\"",
            "echo first",
            "echo second",
            "touch '/var/lib/capoa/post-bootstrap.done'",
        ]
        .iter()
        .map(|part| {
            script
                .find(part)
                .unwrap_or_else(|| panic!("{part:?} missing from\n{script}"))
        })
        .collect();
        assert!(order.is_sorted(), "{script}");
        assert!(script.contains("kubectl --kubeconfig=\"$kubeconfig\""));
        assert!(script.contains("sleep 10\n"), "{script}");
        assert!(script.contains("exit 1\n"), "{script}");
        assert!(
            !script.contains(DEFAULT_POST_BOOTSTRAP_KUBECONFIG),
            "{script}"
        );

        let unit = unit_text(&ignition, POST_BOOTSTRAP_UNIT);
        assert!(unit.contains("\nRequires=kubelet.service\n"), "{unit}");
        assert!(unit.contains("\nAfter=kubelet.service\n"), "{unit}");
        assert!(!unit.contains("Before=kubelet.service"), "{unit}");
        assert!(
            unit.contains("\nConditionPathExists=!/var/lib/capoa/post-bootstrap.done\n"),
            "{unit}"
        );

        // Unset: the kubelet's kubeconfig.
        let default = generate(
            &spec("postBootstrapCommands: [echo x]"),
            &no_annotations(),
            None,
        );
        assert!(
            file_text(&default, POST_BOOTSTRAP_SCRIPT)
                .contains("kubeconfig='/var/lib/kubelet/kubeconfig'\n")
        );
    }

    #[test]
    fn provider_id_is_a_kubelet_drop_in() {
        let ignition = generate(&spec("{}"), &no_annotations(), Some("metal3://ns/h-0/m%1"));
        assert_eq!(paths(&ignition), [PROVIDER_ID_DROP_IN]);
        assert!(ignition.get("systemd").is_none(), "{ignition}");
        assert_eq!(file(&ignition, PROVIDER_ID_DROP_IN)["mode"], 0o644);
        let drop_in = file_text(&ignition, PROVIDER_ID_DROP_IN);
        assert!(
            drop_in
                .contains("\n[Service]\nEnvironment=\"KUBELET_PROVIDERID=metal3://ns/h-0/m%%1\"\n"),
            "{drop_in}"
        );
    }

    #[test]
    fn provider_ids_that_would_break_the_drop_in_are_refused() {
        for bad in ["a\nExecStart=/bin/sh", "a\"b", r"a\b", "a\rb"] {
            let err = install_ignition(&spec("{}"), &no_annotations(), Some(bad)).unwrap_err();
            assert_eq!(
                err,
                InstallIgnitionError::InvalidProviderId { value: bad.into() }
            );
            assert!(
                err.to_string().contains("nodeRegistration.providerID"),
                "{err}"
            );
        }
    }

    #[test]
    fn the_annotation_is_merged_over_the_generated_config() {
        let config = spec("preBootstrapCommands: [echo ours]");
        let overlay = r#"{
            "ignition": {"version": "3.2.0", "timeouts": {"httpTotal": 30}},
            "storage": {
                "files": [
                    {"path": "/usr/local/bin/capoa-pre-bootstrap.sh", "mode": 493,
                     "contents": {"source": "data:,theirs"}},
                    {"path": "/etc/motd", "contents": {"source": "data:,hello"}}
                ],
                "disks": [{"device": "/dev/sdb"}]
            },
            "systemd": {"units": [{"name": "extra.service", "enabled": true, "contents": "[Unit]\n"}]},
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA"]}]},
            "kernelArguments": {"shouldExist": ["nosmt"]}
        }"#;
        let ignition = generate(&config, &annotated(overlay), Some("p-1"));
        assert_eq!(
            ignition["ignition"],
            json!({"version": "3.2.0", "timeouts": {"httpTotal": 30}})
        );
        // Same path: theirs replaces ours, in place; new paths are appended.
        assert_eq!(
            paths(&ignition),
            [PRE_BOOTSTRAP_SCRIPT, PROVIDER_ID_DROP_IN, "/etc/motd"]
        );
        assert_eq!(
            file(&ignition, PRE_BOOTSTRAP_SCRIPT),
            &json!({"path": "/usr/local/bin/capoa-pre-bootstrap.sh", "mode": 493,
                    "contents": {"source": "data:,theirs"}})
        );
        assert_eq!(
            ignition["storage"]["disks"],
            json!([{"device": "/dev/sdb"}])
        );
        assert_eq!(unit_names(&ignition), [PRE_BOOTSTRAP_UNIT, "extra.service"]);
        assert_eq!(ignition["passwd"]["users"][0]["name"], "core");
        assert_eq!(
            ignition["kernelArguments"],
            json!({"shouldExist": ["nosmt"]})
        );
    }

    #[test]
    fn a_unit_of_the_same_name_replaces_ours_and_the_version_is_never_lowered() {
        let config = spec("postBootstrapCommands: [echo ours]");
        let overlay = r#"{"ignition": {"version": "3.0.0"},
            "systemd": {"units": [{"name": "capoa-post-bootstrap.service", "enabled": false}]}}"#;
        let ignition = generate(&config, &annotated(overlay), None);
        assert_eq!(ignition["ignition"]["version"], "3.1.0");
        assert_eq!(
            ignition["systemd"]["units"],
            json!([{"name": "capoa-post-bootstrap.service", "enabled": false}])
        );
    }

    #[test]
    fn the_annotation_alone_is_enough() {
        let ignition = generate(
            &spec("{}"),
            &annotated(
                r#"{"ignition": {"version": "3.4.0"}, "storage": {"directories": [{"path": "/var/x"}]}}"#,
            ),
            None,
        );
        assert_eq!(
            ignition,
            json!({"ignition": {"version": "3.4.0"}, "storage": {"directories": [{"path": "/var/x"}]}})
        );
    }

    #[test]
    fn unusable_annotations_are_errors_naming_it() {
        let cases = [
            ("{not json", "not JSON"),
            ("[1, 2]", "not a JSON object"),
            ("\"text\"", "not a JSON object"),
            ("{}", "ignition.version is missing"),
            (
                r#"{"ignition": {"version": 3}}"#,
                "ignition.version is missing",
            ),
            (r#"{"ignition": {"version": "2.2.0"}}"#, "not a 3.x"),
            (r#"{"ignition": {"version": "3.x"}}"#, "not a 3.x"),
            (
                r#"{"ignition": {"version": "3.1.0"}, "storage": {"files": {}}}"#,
                "storage.files is not a list",
            ),
            (
                r#"{"ignition": {"version": "3.1.0"}, "systemd": {"units": [{"enabled": true}]}}"#,
                "systemd.units[0] has no string \"name\"",
            ),
        ];
        for (value, detail) in cases {
            let err = install_ignition(&spec("preBootstrapCommands: [x]"), &annotated(value), None)
                .unwrap_err();
            let InstallIgnitionError::InvalidOverride(InvalidOverride { annotation, .. }) = &err
            else {
                panic!("{value}: {err}");
            };
            assert_eq!(*annotation, IGNITION_OVERRIDE_ANNOTATION);
            let message = err.to_string();
            assert!(
                message.contains(IGNITION_OVERRIDE_ANNOTATION) && message.contains(detail),
                "{value}: {message}"
            );
        }
    }

    #[test]
    fn the_same_input_gives_the_same_bytes() {
        let config = spec(
            "preBootstrapCommands: [echo a]\npostBootstrapCommands: [echo b]\nbootstrapCommandSentinelDir: /s",
        );
        let annotations = annotated(
            r#"{"storage": {"files": [{"path": "/b"}, {"path": "/a"}]}, "ignition": {"version": "3.3.0"}}"#,
        );
        let first = install_ignition(&config, &annotations, Some("id")).unwrap();
        let second = install_ignition(&config.clone(), &annotations.clone(), Some("id")).unwrap();
        assert!(first.is_some());
        assert_eq!(first, second);
    }
}
