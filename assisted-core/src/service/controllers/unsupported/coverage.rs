//! Completeness: every leaf `spec` field of the six CRDs the core owns (walked from the
//! generated OpenAPI schema, so a new field in the Rust types shows up here) is either acted on
//! or has a row in this module. A field with neither fails with its path.

use std::collections::{BTreeMap, BTreeSet};

use manager::fields::covers;

use super::{ACI_ROWS, AGENT_ROWS, CLUSTER_DEPLOYMENT_ROWS, INFRAENV_ROWS, Row};

/// What the core does with a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coverage {
    /// Acted on; where, in short.
    Acted(&'static str),
    /// Acted on, except for the values or cases its row reports.
    Partly(&'static str),
    /// Not acted on; its row reports it.
    Unsupported,
    /// Hive's feature, reported on the AgentClusterInstall by its row.
    HiveOnly,
    /// Written by the core (or by Hive), not a user's input.
    Output,
    /// Read by other tools; assisted-service does not act on it either.
    ForOthers(&'static str),
}

use Coverage::*;

impl Coverage {
    fn needs_row(self) -> bool {
        matches!(self, Partly(_) | Unsupported | HiveOnly)
    }
}

/// (field path prefix, coverage) per kind. A prefix covers the leaves under it
/// (`a.b` covers `a.b`, `a.b.c` and `a.b[].c`); the longest prefix decides.
const TABLE: &[(&str, &[(&str, Coverage)])] = &[
    (
        "InfraEnv",
        &[
            (
                "spec.proxy",
                Acted("infraenv.rs decide: discovery ignition, initrd"),
            ),
            (
                "spec.additionalNTPSources",
                Acted("discovery ignition add-ntp-sources"),
            ),
            ("spec.ntpSources", Partly("added like additionalNTPSources")),
            (
                "spec.sshAuthorizedKey",
                Acted("discovery ignition user core"),
            ),
            (
                "spec.pullSecretRef",
                Acted("infraenv.rs dereference, decide"),
            ),
            ("spec.agentLabels", Acted("persister new_agent")),
            (
                "spec.nmStateConfigLabelSelector.matchLabels",
                Acted("infraenv.rs dereference selects NMStateConfigs"),
            ),
            (
                "spec.nmStateConfigLabelSelector.matchExpressions",
                Unsupported,
            ),
            ("spec.approvedMACAddressConfigMapLabelSelector", Unsupported),
            (
                "spec.clusterRef",
                Acted("infraenv.rs dereference: cluster and version"),
            ),
            (
                "spec.ignitionConfigOverride",
                Acted("discovery ignition merge_override"),
            ),
            ("spec.cpuArchitecture", Acted("base ISO selection")),
            (
                "spec.ipxeScriptType",
                Acted("pxe.rs boot-order-control script"),
            ),
            (
                "spec.kernelArguments",
                Acted("iPXE script; the ISO's karg areas (kargs.json)"),
            ),
            (
                "spec.additionalTrustBundle",
                Acted("discovery ignition anchors"),
            ),
            (
                "spec.osImageVersion",
                Acted("image version without clusterRef"),
            ),
            (
                "spec.mirrorRegistryRef",
                Acted("discovery ignition registries.conf and CA"),
            ),
            ("spec.imageType", Acted("ISO URL full/minimal")),
            (
                "spec.agentApproval",
                Acted("agent registration auto-approve"),
            ),
            (
                "spec.networkDiscoveryDelaySeconds",
                Acted("static network script waits before mapping MACs"),
            ),
        ],
    ),
    (
        "Agent",
        &[
            (
                "spec.clusterDeploymentName",
                Acted("agent.rs binding_error"),
            ),
            ("spec.role", Acted("agent.rs host_spec")),
            (
                "spec.hostname",
                Acted("host ignition, install-config hosts"),
            ),
            (
                "spec.machineConfigPool",
                Acted("day-2 pointer ignition pool"),
            ),
            ("spec.approved", Acted("store sync_host_spec")),
            (
                "spec.installation_disk_id",
                Acted("install disk, install-config"),
            ),
            (
                "spec.installation_disk_path",
                Acted("install disk when no id"),
            ),
            ("spec.installerArgs", Acted("install step installer_args")),
            (
                "spec.ignitionConfigOverrides",
                Acted("host ignition overrides"),
            ),
            ("spec.ignitionEndpointTokenReference", Unsupported),
            ("spec.ignitionEndpointHTTPHeaders", Unsupported),
            (
                "spec.nodeLabels",
                Acted("installer-controller, day-2 Node labels"),
            ),
            ("spec.fencingCredentialsSecretRef", Unsupported),
        ],
    ),
    (
        "NMStateConfig",
        &[
            ("spec.interfaces", Acted("static network mac_interface.ini")),
            ("spec.config", Acted("static network YAML")),
        ],
    ),
    (
        "AgentClusterInstall",
        &[
            (
                "spec.imageSetRef",
                Acted("cluster.rs plan: version, release image"),
            ),
            (
                "spec.clusterDeploymentRef",
                Acted("controllers/mod.rs ACI watch mapping"),
            ),
            ("spec.clusterMetadata", Output),
            ("spec.manifestsConfigMapRef", Acted("user manifests")),
            ("spec.manifestsConfigMapRefs", Acted("user manifests")),
            (
                "spec.networking",
                Acted("cluster_config, install-config networking"),
            ),
            ("spec.sshPublicKey", Acted("install-config sshKey")),
            (
                "spec.ntpSources",
                Acted("NTP step; chrony MachineConfigs per pool"),
            ),
            ("spec.provisionRequirements", Acted("cluster_config counts")),
            (
                "spec.controlPlane.name",
                Acted("install-config pool name (always master)"),
            ),
            (
                "spec.controlPlane.hyperthreading",
                Partly("Enabled is the install's"),
            ),
            (
                "spec.compute[].name",
                Acted("install-config pool name (always worker)"),
            ),
            (
                "spec.compute[].hyperthreading",
                Partly("Enabled is the install's"),
            ),
            (
                "spec.arbiter.name",
                Acted("install-config pool name (always arbiter)"),
            ),
            (
                "spec.arbiter.hyperthreading",
                Partly("Enabled is the install's"),
            ),
            ("spec.apiVIP", Acted("cluster_config when apiVIPs is empty")),
            ("spec.apiVIPs", Acted("install-config, VIP validations")),
            (
                "spec.ingressVIP",
                Acted("cluster_config when ingressVIPs is empty"),
            ),
            ("spec.ingressVIPs", Acted("install-config, VIP validations")),
            ("spec.holdInstallation", Acted("auto-start hold")),
            (
                "spec.ignitionEndpoint",
                Acted("snapshot ignition_endpoint: day-2 pointer"),
            ),
            (
                "spec.diskEncryption",
                Acted("snapshot disk_encryption, LUKS MachineConfigs"),
            ),
            ("spec.proxy", Acted("install-config proxy")),
            ("spec.platformType", Partly("install-config platform")),
            ("spec.external", Acted("install-config platform.external")),
            (
                "spec.mastersSchedulable",
                Acted("Scheduler patch (cluster-scheduler-02-config.yml)"),
            ),
            (
                "spec.mirrorRegistryRef",
                Acted("install-config imageDigestSources and additionalTrustBundle"),
            ),
            (
                "spec.loadBalancer",
                Acted("install-config platform.baremetal.loadBalancer"),
            ),
        ],
    ),
    (
        "ClusterDeployment",
        &[
            ("spec.clusterName", Acted("install-config metadata.name")),
            ("spec.baseDomain", Acted("install-config baseDomain")),
            ("spec.platform", HiveOnly),
            (
                "spec.platform.agentBareMetal",
                ForOthers("agent selection by other tools, as upstream"),
            ),
            ("spec.pullSecretRef", Acted("cluster.rs pull_secret_of")),
            ("spec.preserveOnDelete", HiveOnly),
            ("spec.controlPlaneConfig", HiveOnly),
            ("spec.ingress", HiveOnly),
            ("spec.certificateBundles", HiveOnly),
            ("spec.manageDNS", HiveOnly),
            ("spec.clusterMetadata", Output),
            (
                "spec.clusterMetadata.adminKubeconfigSecretRef",
                Acted("cluster.rs credentials: Secret name"),
            ),
            (
                "spec.clusterMetadata.adminPasswordSecretRef",
                Acted("cluster.rs credentials: Secret name"),
            ),
            ("spec.installed", Acted("cluster.rs plan, credentials")),
            ("spec.provisioning", HiveOnly),
            ("spec.clusterInstallRef", Acted("cluster.rs is_ours")),
            ("spec.clusterPoolRef", HiveOnly),
            ("spec.powerState", HiveOnly),
            ("spec.hibernateAfter", HiveOnly),
            ("spec.installAttemptsLimit", HiveOnly),
            ("spec.boundServiceAccountSigningKeySecretRef", HiveOnly),
        ],
    ),
    (
        "ClusterImageSet",
        &[("spec.releaseImage", Acted("cluster.rs TagReleaseInfo"))],
    ),
];

/// The row field paths of a kind, as the table spells them.
fn row_fields(kind: &str) -> BTreeSet<String> {
    fn fields<S>(rows: &[Row<S>]) -> BTreeSet<String> {
        rows.iter()
            .map(|r| r.field.trim_start_matches("ClusterDeployment ").to_string())
            .collect()
    }
    match kind {
        "InfraEnv" => fields(INFRAENV_ROWS),
        "Agent" => fields(AGENT_ROWS),
        "AgentClusterInstall" => fields(ACI_ROWS),
        "ClusterDeployment" => fields(CLUSTER_DEPLOYMENT_ROWS),
        _ => BTreeSet::new(),
    }
}

/// Each kind's `spec` leaves.
fn spec_leaves() -> BTreeMap<String, Vec<String>> {
    crate::api::crds()
        .into_iter()
        .map(|crd| {
            let leaves = manager::fields::spec_leaves(&crd);
            (crd.spec.names.kind, leaves)
        })
        .collect()
}

fn coverage_of(table: &[(&'static str, Coverage)], leaf: &str) -> Option<(&'static str, Coverage)> {
    table
        .iter()
        .filter(|(prefix, _)| covers(prefix, leaf))
        .max_by_key(|(prefix, _)| prefix.len())
        .copied()
}

#[test]
fn every_spec_field_is_acted_on_or_reported() {
    let leaves = spec_leaves();
    let mut problems = Vec::new();
    for (kind, paths) in &leaves {
        let Some((_, table)) = TABLE.iter().find(|(k, _)| k == kind) else {
            problems.push(format!("{kind}: no table"));
            continue;
        };
        for leaf in paths {
            if coverage_of(table, leaf).is_none() {
                problems.push(format!(
                    "{kind} {leaf}: neither acted on nor reported; add it to the table in \
                     unsupported/coverage.rs (and a row in unsupported/mod.rs if the core \
                     ignores it)"
                ));
            }
        }
        for (prefix, _) in table.iter() {
            if !paths.iter().any(|leaf| covers(prefix, leaf)) {
                problems.push(format!(
                    "{kind} {prefix}: in the table but not in the schema"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn reported_fields_and_rows_match() {
    let mut problems = Vec::new();
    for (kind, table) in TABLE {
        let wanted: BTreeSet<String> = table
            .iter()
            .filter(|(_, c)| c.needs_row())
            .map(|(prefix, _)| prefix.to_string())
            .collect();
        let rows = row_fields(kind);
        for missing in wanted.difference(&rows) {
            problems.push(format!(
                "{kind} {missing}: reported in the table but has no row"
            ));
        }
        for extra in rows.difference(&wanted) {
            problems.push(format!(
                "{kind} {extra}: has a row but the table says it is acted on (or lacks it)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_walk_finds_nested_and_list_fields() {
    let leaves = spec_leaves();
    let aci = &leaves["AgentClusterInstall"];
    for path in [
        "spec.networking.clusterNetwork[].hostPrefix",
        "spec.diskEncryption.tangServers",
        "spec.ignitionEndpoint.caCertificateReference.name",
    ] {
        assert!(aci.iter().any(|l| l == path), "{path} not in {aci:?}");
    }
    assert!(
        leaves["ClusterDeployment"]
            .iter()
            .any(|l| l == "spec.platform")
    );
    assert_eq!(
        coverage_of(
            TABLE[4].1,
            "spec.platform.agentBareMetal.agentSelector.matchLabels"
        )
        .map(|(p, _)| p),
        Some("spec.platform.agentBareMetal")
    );
}
