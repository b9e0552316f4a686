//! The user data of a Machine in the disk-image (raw-image) flow: the InfraEnv's discovery
//! ignition plus, when the config's `nodeRegistration.name` is set, two units that give the
//! discovery host that name on its first boot, as CAPOA adds them: one reads the Metal3 config
//! drive into `/etc/metadata_env` (`METADATA_<KEY>=value`), the other sets the hostname from
//! `nodeRegistration.name` with its `$METADATA_*` references expanded there. Pure: no client.
//!
//! The data Secret is written before CAPM3 picks a BareMetalHost, so the name cannot be
//! resolved here: the host resolves it from its own config drive. The installed OS gets the
//! same name from the Agent's hostname, resolved by the Agent controller from the host.

use provider_api::bootstrap::api::OpenshiftAssistedConfigSpec;
use serde_json::{Map, Value, json};

use super::install_ignition::{file, oneshot_unit, shell_quote, unit};
use super::variables::{ResolveError, Segment, variable_segments};

pub const CONFIG_DRIVE_SCRIPT: &str = "/usr/local/bin/capoa-configdrive-metadata.sh";
pub const CONFIG_DRIVE_UNIT: &str = "capoa-configdrive-metadata.service";
pub const HOSTNAME_SCRIPT: &str = "/usr/local/bin/capoa-set-hostname.sh";
pub const HOSTNAME_UNIT: &str = "capoa-set-hostname.service";
/// What the config-drive script writes and the hostname script reads.
pub const METADATA_ENV: &str = "/etc/metadata_env";

/// Why the user data cannot be built.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UserDataError {
    #[error("the discovery ignition is not a JSON object")]
    NotIgnition,
    #[error(transparent)]
    Name(#[from] ResolveError),
}

/// The discovery ignition, unchanged when the config sets no node name, else with the
/// config-drive and hostname files and units added (replacing entries of the same path or
/// name). The discovery ignition's own version is kept: the units need nothing newer.
pub fn disk_image_user_data(
    discovery_ignition: &str,
    config: &OpenshiftAssistedConfigSpec,
) -> Result<String, UserDataError> {
    let name = config
        .node_registration
        .as_ref()
        .and_then(|n| n.name.as_deref())
        .map(str::trim)
        .filter(|n| !n.is_empty());
    let Some(name) = name else {
        return Ok(discovery_ignition.to_string());
    };
    let Ok(Value::Object(mut ignition)) = serde_json::from_str::<Value>(discovery_ignition) else {
        return Err(UserDataError::NotIgnition);
    };
    let hostname = hostname_script(name)?;
    add_keyed(
        &mut ignition,
        "storage",
        "files",
        "path",
        vec![
            file(CONFIG_DRIVE_SCRIPT, 0o755, &config_drive_script()),
            file(HOSTNAME_SCRIPT, 0o755, &hostname),
        ],
    );
    add_keyed(
        &mut ignition,
        "systemd",
        "units",
        "name",
        vec![
            unit(CONFIG_DRIVE_UNIT, &config_drive_unit()),
            unit(HOSTNAME_UNIT, &hostname_unit()),
        ],
    );
    Ok(Value::Object(ignition).to_string())
}

/// Appends `entries` to `section.list`, replacing an entry with the same `key`; a missing or
/// mistyped section or list is made anew.
fn add_keyed(
    ignition: &mut Map<String, Value>,
    section: &str,
    list: &str,
    key: &str,
    entries: Vec<Value>,
) {
    let section = ignition.entry(section).or_insert(Value::Null);
    if !section.is_object() {
        *section = json!({});
    }
    // Indexing an object inserts the member when it is missing.
    let list = &mut section[list];
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut() {
        for entry in entries {
            list.retain(|existing| existing.get(key) != entry.get(key));
            list.push(entry);
        }
    }
}

/// Reads `openstack/latest/meta_data.json` from the config drive (label `config-2`, which
/// baremetal-operator writes) into `METADATA_<KEY>` lines, key upper-cased with `-` as `_`, each
/// value shell-quoted so the file can be sourced. No config drive: an empty file, and the
/// hostname script says what is missing.
fn config_drive_script() -> String {
    format!(
        r#"#!/bin/bash
# Metal3 config-drive metadata as shell variables (METADATA_NAME, METADATA_UUID, ...), for
# nodeRegistration.name (capoa-set-hostname.service).
set -euo pipefail
out={env}
: > "$out"
device=$(blkid -L config-2 || true)
if [ -z "$device" ]; then
    echo "no config drive (filesystem label config-2)" >&2
    exit 0
fi
mnt=$(mktemp -d)
mount -o ro "$device" "$mnt"
trap 'umount "$mnt"; rmdir "$mnt"' EXIT
jq -r 'to_entries[] | select(.value | type != "object" and type != "array")
    | "METADATA_\(.key | ascii_upcase | gsub("-"; "_"))=\(.value | tostring | @sh)"' \
    "$mnt/openstack/latest/meta_data.json" > "$out"
"#,
        env = shell_quote(METADATA_ENV)
    )
}

fn config_drive_unit() -> String {
    oneshot_unit(
        "Read the Metal3 config drive into /etc/metadata_env",
        "After=local-fs.target\nBefore=capoa-set-hostname.service\n",
        CONFIG_DRIVE_SCRIPT,
    )
}

/// Sets the hostname to `nodeRegistration.name`, its `$METADATA_*` references expanded from
/// the config drive; an unset variable stops the script (`set -u`) with the shell's message.
fn hostname_script(name: &str) -> Result<String, ResolveError> {
    let mut expression = String::from("\"");
    for segment in variable_segments("nodeRegistration.name", name)? {
        match segment {
            Segment::Variable(v) => {
                expression.push_str("${");
                expression.push_str(v);
                expression.push('}');
            }
            Segment::Text(t) => {
                for c in t.chars() {
                    if matches!(c, '"' | '\\' | '$' | '`') {
                        expression.push('\\');
                    }
                    expression.push(c);
                }
            }
        }
    }
    expression.push('"');
    Ok(format!(
        r#"#!/bin/bash
# nodeRegistration.name of this Machine's OpenshiftAssistedConfig, as the discovery host's name.
set -euo pipefail
if [ -s {env} ]; then
    set -a
    . {env}
    set +a
fi
name={expression}
hostnamectl set-hostname "$name"
"#,
        env = shell_quote(METADATA_ENV)
    ))
}

fn hostname_unit() -> String {
    oneshot_unit(
        "Set the hostname from nodeRegistration.name",
        "Wants=capoa-configdrive-metadata.service\n\
         After=capoa-configdrive-metadata.service\n\
         Before=agent.service\n",
        HOSTNAME_SCRIPT,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::install_ignition::{bash_syntax, decode_data_url};

    const DISCOVERY: &str = r#"{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/assisted/agent.env"}]},"systemd":{"units":[{"name":"agent.service","enabled":true}]}}"#;

    fn spec(yaml: &str) -> OpenshiftAssistedConfigSpec {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn files_and_units(user_data: &str) -> (Value, Vec<String>, Vec<String>) {
        let v: Value = serde_json::from_str(user_data).unwrap();
        let paths = v["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_string())
            .collect();
        let units = v["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["name"].as_str().unwrap().to_string())
            .collect();
        (v, paths, units)
    }

    fn file_text(v: &Value, path: &str) -> String {
        let f = v["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap();
        decode_data_url(f["contents"]["source"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn without_a_node_name_the_user_data_is_the_discovery_ignition() {
        for yaml in [
            "{}",
            "nodeRegistration: {}",
            "nodeRegistration: {name: '  '}",
        ] {
            assert_eq!(
                disk_image_user_data(DISCOVERY, &spec(yaml)).unwrap(),
                DISCOVERY,
                "{yaml}"
            );
        }
    }

    #[test]
    fn a_node_name_adds_the_config_drive_and_hostname_units() {
        let out =
            disk_image_user_data(DISCOVERY, &spec("nodeRegistration: {name: $METADATA_NAME}"))
                .unwrap();
        let (v, paths, units) = files_and_units(&out);
        assert_eq!(
            v["ignition"]["version"], "3.2.0",
            "the discovery version stays"
        );
        assert_eq!(
            paths,
            [
                "/etc/assisted/agent.env",
                CONFIG_DRIVE_SCRIPT,
                HOSTNAME_SCRIPT
            ]
        );
        assert_eq!(units, ["agent.service", CONFIG_DRIVE_UNIT, HOSTNAME_UNIT]);
        let hostname = file_text(&v, HOSTNAME_SCRIPT);
        assert!(
            hostname.contains("name=\"${METADATA_NAME}\"\n"),
            "{hostname}"
        );
        assert!(hostname.contains("hostnamectl set-hostname \"$name\""));
        let drive = file_text(&v, CONFIG_DRIVE_SCRIPT);
        assert!(drive.contains("blkid -L config-2"));
        assert!(drive.contains("@sh"), "values are quoted for sourcing");
        // Applying it again replaces, never duplicates.
        let again =
            disk_image_user_data(&out, &spec("nodeRegistration: {name: $METADATA_NAME}")).unwrap();
        assert_eq!(files_and_units(&again).1.len(), 3);
        assert_eq!(files_and_units(&again).2.len(), 3);
    }

    #[test]
    fn the_name_is_quoted_for_the_shell_and_its_references_expanded_there() {
        // (nodeRegistration.name, the shell expression)
        let rows = [
            ("${METADATA_NAME}", r#""${METADATA_NAME}""#),
            ("node-$METADATA_UUID.lab", r#""node-${METADATA_UUID}.lab""#),
            ("static-0", r#""static-0""#),
            // Quotes, backslashes, backticks and a bare $ stay text.
            (r#"a"b\c`d`$"#, r#""a\"b\\c\`d\`\$""#),
        ];
        for (name, expression) in rows {
            let script = hostname_script(name).unwrap();
            assert!(
                script.contains(&format!("name={expression}\n")),
                "{name}: {script}"
            );
        }
        for (name, _) in rows {
            bash_syntax(&hostname_script(name).unwrap()).unwrap();
        }
        bash_syntax(&config_drive_script()).unwrap();
        assert!(matches!(
            hostname_script("${METADATA_NAME"),
            Err(ResolveError::Malformed { .. })
        ));
    }

    #[test]
    fn a_missing_or_mistyped_section_is_made_anew() {
        let config = spec("nodeRegistration: {name: n}");
        for discovery in [
            r#"{"ignition":{"version":"3.2.0"}}"#,
            r#"{"ignition":{"version":"3.2.0"},"storage":"x","systemd":{"units":7}}"#,
        ] {
            let out = disk_image_user_data(discovery, &config).unwrap();
            let (_, paths, units) = files_and_units(&out);
            assert_eq!(paths, [CONFIG_DRIVE_SCRIPT, HOSTNAME_SCRIPT], "{discovery}");
            assert_eq!(units, [CONFIG_DRIVE_UNIT, HOSTNAME_UNIT], "{discovery}");
        }
    }

    #[test]
    fn a_broken_discovery_ignition_is_an_error() {
        let config = spec("nodeRegistration: {name: n}");
        assert_eq!(
            disk_image_user_data("[]", &config),
            Err(UserDataError::NotIgnition)
        );
        assert_eq!(
            disk_image_user_data("not json", &config),
            Err(UserDataError::NotIgnition)
        );
    }
}
