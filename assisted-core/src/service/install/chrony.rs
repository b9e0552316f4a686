//! The cluster's NTP sources on the installed nodes: one chrony MachineConfig per pool, as
//! upstream writes them (`50-<role>s-chrony-configuration.yaml` in `openshift/`). The
//! install-config's `platform.baremetal.additionalNTPServers` only exists from 4.18 and only
//! on baremetal; these manifests work on every release and platform.

use serde_json::json;

use super::error::InstallError;
use super::ignition::{data_url, decode_data_url};

/// The lines every chrony.conf gets (RHCOS's own defaults, without its pools).
const CHRONY_BASE: &[&str] = &[
    "sourcedir /run/chrony-dhcp",
    "driftfile /var/lib/chrony/drift",
    "makestep 1.0 3",
    "rtcsync",
    "logdir /var/log/chrony",
];

/// Kept when the user did not name the cluster's sources (ACI `ntpSources`): hosts keep a
/// public pool beside what they reported.
const DEFAULT_POOL: &str = "pool 0.rhel.pool.ntp.org iburst";

/// The chrony.conf of the installed nodes. `cluster_sources` (ACI `ntpSources`) replace the
/// default pool; `host_sources` (what the discovery agents synced with, InfraEnv sources
/// included) come after them. Duplicates are dropped, first one wins.
pub fn chrony_conf(cluster_sources: &[String], host_sources: &[String]) -> String {
    let mut lines: Vec<String> = Vec::new();
    if cluster_sources.is_empty() {
        lines.push(DEFAULT_POOL.to_string());
    }
    lines.extend(CHRONY_BASE.iter().map(|l| l.to_string()));
    let mut seen: Vec<&str> = Vec::new();
    for source in cluster_sources.iter().chain(host_sources) {
        let source = source.trim();
        if source.is_empty() || seen.contains(&source) {
            continue;
        }
        seen.push(source);
        lines.push(format!("server {source} iburst"));
    }
    let mut conf = lines.join("\n");
    conf.push('\n');
    conf
}

/// The MachineConfig manifests (file name, YAML) for the master and worker pools, and the
/// arbiter pool when the cluster has one.
pub fn chrony_manifests(conf: &str, arbiter: bool) -> Result<Vec<(String, Vec<u8>)>, InstallError> {
    let roles: &[&str] = if arbiter {
        &["master", "worker", "arbiter"]
    } else {
        &["master", "worker"]
    };
    roles
        .iter()
        .map(|role| {
            let name = format!("50-{role}s-chrony-configuration");
            let doc = json!({
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfig",
                "metadata": {
                    "name": name,
                    "labels": { "machineconfiguration.openshift.io/role": role },
                },
                "spec": { "config": {
                    "ignition": { "version": "3.1.0" },
                    "storage": { "files": [{
                        "path": "/etc/chrony.conf",
                        "mode": 0o644,
                        "overwrite": true,
                        "contents": { "source": data_url(conf.as_bytes()) },
                    }]},
                }},
            });
            let yaml = serde_yaml::to_string(&doc).map_err(|source| InstallError::Yaml {
                context: format!("rendering {name}.yaml"),
                source,
            })?;
            Ok((format!("{name}.yaml"), yaml.into_bytes()))
        })
        .collect()
}

/// The chrony.conf inside one of [`chrony_manifests`] (tests and diagnostics).
pub fn chrony_conf_of_manifest(yaml: &[u8]) -> Option<String> {
    let doc: serde_json::Value = serde_yaml::from_slice(yaml).ok()?;
    let source = doc["spec"]["config"]["storage"]["files"][0]["contents"]["source"].as_str()?;
    String::from_utf8(decode_data_url(source)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn cluster_sources_replace_the_pool_and_duplicates_go() {
        let conf = chrony_conf(
            &s(&["clock.example.com", "10.0.0.1"]),
            &s(&["10.0.0.1", " ntp2.lab ", ""]),
        );
        assert!(!conf.contains("pool "), "{conf}");
        assert!(conf.starts_with("sourcedir /run/chrony-dhcp\n"), "{conf}");
        assert!(conf.ends_with(
            "server clock.example.com iburst\nserver 10.0.0.1 iburst\nserver ntp2.lab iburst\n"
        ));
    }

    #[test]
    fn without_cluster_sources_the_pool_stays() {
        let conf = chrony_conf(&[], &s(&["ntp.lab"]));
        assert!(
            conf.starts_with("pool 0.rhel.pool.ntp.org iburst\n"),
            "{conf}"
        );
        assert!(conf.ends_with("server ntp.lab iburst\n"), "{conf}");
    }

    #[test]
    fn one_machine_config_per_pool() {
        let conf = chrony_conf(&s(&["ntp.lab"]), &[]);
        let m = chrony_manifests(&conf, false).unwrap();
        let names: Vec<&str> = m.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "50-masters-chrony-configuration.yaml",
                "50-workers-chrony-configuration.yaml"
            ]
        );
        let doc: serde_json::Value = serde_yaml::from_slice(&m[1].1).unwrap();
        assert_eq!(doc["kind"], "MachineConfig");
        assert_eq!(
            doc["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
            "worker"
        );
        assert_eq!(doc["spec"]["config"]["storage"]["files"][0]["mode"], 420);
        assert_eq!(chrony_conf_of_manifest(&m[0].1).unwrap(), conf);
        assert_eq!(chrony_manifests(&conf, true).unwrap().len(), 3);
    }
}
