//! Every field path of CAPOA's API types (its `bootstrap/api` and `controlplane/api` packages)
//! and of assisted-service's CRDs (`api/v1beta1`, `api/hiveextension/v1beta1`) that users and
//! the other controllers rely on is in the generated schema, under the same JSON name.

use api_conformance::{schema_has_path, schema_of};

fn assert_paths(kind: &str, paths: &[&str]) {
    let schema = schema_of(kind);
    let missing: Vec<&&str> = paths
        .iter()
        .filter(|path| !schema_has_path(&schema, path))
        .collect();
    assert!(missing.is_empty(), "{kind} schema lacks {missing:?}");
}

const OAC_SPEC: &[&str] = &[
    "proxy.httpProxy",
    "proxy.httpsProxy",
    "proxy.noProxy",
    "pullSecretRef.name",
    "additionalNTPSources",
    "sshAuthorizedKey",
    "nmStateConfigLabelSelector.matchLabels",
    "nmStateConfigLabelSelector.matchExpressions",
    "cpuArchitecture",
    "kernelArguments[].operation",
    "kernelArguments[].value",
    "additionalTrustBundle",
    "osImageVersion",
    "preBootstrapCommands",
    "postBootstrapCommands",
    "bootstrapCommandSentinelDir",
    "postBootstrapKubeconfigPath",
    "nodeRegistration.name",
    "nodeRegistration.kubeletExtraLabels",
    "nodeRegistration.providerID",
];

#[test]
fn openshift_assisted_config_has_every_capoa_field() {
    let spec: Vec<String> = OAC_SPEC.iter().map(|p| format!("spec.{p}")).collect();
    let spec: Vec<&str> = spec.iter().map(String::as_str).collect();
    assert_paths("OpenshiftAssistedConfig", &spec);
    assert_paths(
        "OpenshiftAssistedConfig",
        &[
            "status.conditions[].type",
            "status.initialization.dataSecretCreated",
            "status.dataSecretName",
            "status.observedGeneration",
            "status.v1beta1Conditions[].severity",
        ],
    );
}

#[test]
fn openshift_assisted_config_template_has_every_capoa_field() {
    let spec: Vec<String> = OAC_SPEC
        .iter()
        .map(|p| format!("spec.template.spec.{p}"))
        .collect();
    let mut paths: Vec<&str> = spec.iter().map(String::as_str).collect();
    paths.extend([
        "spec.template.metadata.labels",
        "spec.template.metadata.annotations",
    ]);
    assert_paths("OpenshiftAssistedConfigTemplate", &paths);
}

#[test]
fn openshift_assisted_control_plane_has_every_capoa_field() {
    let oac: Vec<String> = OAC_SPEC
        .iter()
        .map(|p| format!("spec.openshiftAssistedConfigSpec.{p}"))
        .collect();
    let mut paths: Vec<&str> = oac.iter().map(String::as_str).collect();
    paths.extend([
        "spec.distributionVersion",
        "spec.replicas",
        "spec.machineTemplate.metadata.labels",
        "spec.machineTemplate.metadata.annotations",
        "spec.machineTemplate.infrastructureRef.apiGroup",
        "spec.machineTemplate.infrastructureRef.kind",
        "spec.machineTemplate.infrastructureRef.name",
        "spec.machineTemplate.deletion.nodeDrainTimeoutSeconds",
        "spec.machineTemplate.deletion.nodeVolumeDetachTimeoutSeconds",
        "spec.machineTemplate.deletion.nodeDeletionTimeoutSeconds",
        "spec.config.apiVIPs",
        "spec.config.ingressVIPs",
        "spec.config.manifestsConfigMapRefs[].name",
        "spec.config.diskEncryption.enableOn",
        "spec.config.diskEncryption.mode",
        "spec.config.diskEncryption.tangServers",
        "spec.config.proxy.httpProxy",
        "spec.config.mastersSchedulable",
        "spec.config.sshAuthorizedKey",
        "spec.config.clusterName",
        "spec.config.baseDomain",
        "spec.config.pullSecretRef.name",
        "spec.config.imageRegistryRef.name",
        "spec.config.capabilities.baselineCapability",
        "spec.config.capabilities.additionalEnabledCapabilities",
        "status.conditions[].type",
        "status.initialization.controlPlaneInitialized",
        "status.selector",
        "status.replicas",
        "status.readyReplicas",
        "status.availableReplicas",
        "status.upToDateReplicas",
        "status.version",
        "status.distributionVersion",
        "status.observedGeneration",
    ]);
    assert_paths("OpenshiftAssistedControlPlane", &paths);
}

#[test]
fn infraenv_has_every_upstream_field() {
    assert_paths(
        "InfraEnv",
        &[
            "spec.proxy.httpProxy",
            "spec.proxy.httpsProxy",
            "spec.proxy.noProxy",
            "spec.additionalNTPSources",
            "spec.ntpSources",
            "spec.sshAuthorizedKey",
            "spec.pullSecretRef.name",
            "spec.agentLabels",
            "spec.nmStateConfigLabelSelector.matchLabels",
            "spec.clusterRef.name",
            "spec.clusterRef.namespace",
            "spec.ignitionConfigOverride",
            "spec.cpuArchitecture",
            "spec.ipxeScriptType",
            "spec.kernelArguments[].operation",
            "spec.kernelArguments[].value",
            "spec.additionalTrustBundle",
            "spec.osImageVersion",
            "spec.mirrorRegistryRef.name",
            "spec.imageType",
            "spec.agentApproval.autoApprove",
            "spec.networkDiscoveryDelaySeconds",
            "status.isoDownloadURL",
            "status.createdTime",
            "status.conditions[].type",
            "status.agentLabelSelector.matchLabels",
            "status.debugInfo.eventsURL",
            "status.debugInfo.staticNetworkDownloadURL",
            "status.bootArtifacts.initrd",
            "status.bootArtifacts.rootfs",
            "status.bootArtifacts.kernel",
            "status.bootArtifacts.ipxeScript",
            "status.bootArtifacts.discoveryIgnitionURL",
        ],
    );
}

#[test]
fn agent_has_every_upstream_field() {
    assert_paths(
        "Agent",
        &[
            "spec.clusterDeploymentName.name",
            "spec.clusterDeploymentName.namespace",
            "spec.role",
            "spec.hostname",
            "spec.machineConfigPool",
            "spec.approved",
            "spec.installation_disk_id",
            "spec.installation_disk_path",
            "spec.installerArgs",
            "spec.ignitionConfigOverrides",
            "spec.ignitionEndpointTokenReference.namespace",
            "spec.ignitionEndpointTokenReference.name",
            "spec.ignitionEndpointHTTPHeaders",
            "spec.nodeLabels",
            "spec.fencingCredentialsSecretRef",
            "status.bootstrap",
            "status.role",
            "status.inventory.reportTime",
            "status.inventory.hostname",
            "status.inventory.bmcAddress",
            "status.inventory.memory.physicalBytes",
            "status.inventory.memory.usableBytes",
            "status.inventory.cpu.count",
            "status.inventory.cpu.clockMegahertz",
            "status.inventory.cpu.flags",
            "status.inventory.cpu.modelName",
            "status.inventory.cpu.architecture",
            "status.inventory.interfaces[].name",
            "status.inventory.interfaces[].macAddress",
            "status.inventory.interfaces[].ipV4Addresses",
            "status.inventory.interfaces[].ipV6Addresses",
            "status.inventory.interfaces[].mtu",
            "status.inventory.interfaces[].speedMbps",
            "status.inventory.interfaces[].hasCarrier",
            "status.inventory.disks[].id",
            "status.inventory.disks[].driveType",
            "status.inventory.disks[].name",
            "status.inventory.disks[].path",
            "status.inventory.disks[].byID",
            "status.inventory.disks[].byPath",
            "status.inventory.disks[].sizeBytes",
            "status.inventory.disks[].bootable",
            "status.inventory.disks[].installationEligibility.eligible",
            "status.inventory.disks[].installationEligibility.notEligibleReasons",
            "status.inventory.disks[].ioPerf.syncDurationMilliseconds",
            "status.inventory.boot",
            "status.inventory.systemVendor.manufacturer",
            "status.inventory.systemVendor.productName",
            "status.inventory.systemVendor.serialNumber",
            "status.inventory.systemVendor.virtual",
            "status.inventory.gpus",
            "status.progress.currentStage",
            "status.progress.progressStages",
            "status.progress.progressInfo",
            "status.progress.installationPercentage",
            "status.progress.stageStartTime",
            "status.progress.stageUpdateTime",
            "status.ntpSources[].sourceName",
            "status.ntpSources[].sourceState",
            "status.conditions[].type",
            "status.debugInfo.eventsURL",
            "status.debugInfo.logsURL",
            "status.debugInfo.state",
            "status.debugInfo.stateInfo",
            "status.validationsInfo",
            "status.installation_disk_id",
            "status.deprovision_info",
            "status.csrStatus.approvedCSRs[].name",
            "status.csrStatus.approvedCSRs[].type",
            "status.csrStatus.approvedCSRs[].approvedAt",
            "status.csrStatus.lastApprovalAttempt",
            "status.kind",
        ],
    );
}

#[test]
fn agent_cluster_install_has_every_upstream_field() {
    assert_paths(
        "AgentClusterInstall",
        &[
            "spec.imageSetRef.name",
            "spec.clusterDeploymentRef.name",
            "spec.clusterMetadata.clusterID",
            "spec.clusterMetadata.infraID",
            "spec.clusterMetadata.adminKubeconfigSecretRef.name",
            "spec.clusterMetadata.adminPasswordSecretRef.name",
            "spec.manifestsConfigMapRef.name",
            "spec.manifestsConfigMapRefs[].name",
            "spec.networking.machineNetwork[].cidr",
            "spec.networking.clusterNetwork[].cidr",
            "spec.networking.clusterNetwork[].hostPrefix",
            "spec.networking.serviceNetwork",
            "spec.networking.networkType",
            "spec.networking.userManagedNetworking",
            "spec.sshPublicKey",
            "spec.ntpSources",
            "spec.provisionRequirements.controlPlaneAgents",
            "spec.provisionRequirements.workerAgents",
            "spec.provisionRequirements.arbiterAgents",
            "spec.controlPlane.hyperthreading",
            "spec.controlPlane.name",
            "spec.compute[].hyperthreading",
            "spec.compute[].name",
            "spec.arbiter.name",
            "spec.apiVIP",
            "spec.apiVIPs",
            "spec.ingressVIP",
            "spec.ingressVIPs",
            "spec.holdInstallation",
            "spec.ignitionEndpoint.url",
            "spec.ignitionEndpoint.caCertificateReference.name",
            "spec.diskEncryption.enableOn",
            "spec.diskEncryption.mode",
            "spec.diskEncryption.tangServers",
            "spec.proxy.httpProxy",
            "spec.platformType",
            "spec.external.platformName",
            "spec.external.cloudControllerManager",
            "spec.mastersSchedulable",
            "spec.mirrorRegistryRef.name",
            "spec.loadBalancer.type",
            "status.conditions[].type",
            "status.conditions[].lastProbeTime",
            "status.progress.totalPercentage",
            "status.controlPlaneAgentsDiscovered",
            "status.controlPlaneAgentsReady",
            "status.workerAgentsDiscovered",
            "status.workerAgentsReady",
            "status.connectivityMajorityGroups",
            "status.machineNetwork[].cidr",
            "status.debugInfo.eventsURL",
            "status.debugInfo.logsURL",
            "status.debugInfo.state",
            "status.debugInfo.stateInfo",
            "status.apiVIP",
            "status.apiVIPs",
            "status.ingressVIP",
            "status.ingressVIPs",
            "status.userManagedNetworking",
            "status.platformType",
            "status.validationsInfo",
        ],
    );
}

#[test]
fn hive_kinds_have_the_fields_the_agent_flow_uses() {
    assert_paths(
        "ClusterDeployment",
        &[
            "spec.clusterInstallRef.group",
            "spec.clusterInstallRef.version",
            "spec.clusterInstallRef.kind",
            "spec.clusterInstallRef.name",
            "spec.baseDomain",
            "spec.clusterName",
            "spec.pullSecretRef.name",
            "spec.platform.agentBareMetal.agentSelector",
            "spec.installed",
            "spec.clusterMetadata.clusterID",
            "spec.clusterMetadata.infraID",
            "spec.clusterMetadata.adminKubeconfigSecretRef.name",
            "spec.clusterMetadata.adminPasswordSecretRef.name",
            "status.installedTimestamp",
            "status.conditions[].type",
        ],
    );
    assert_paths("ClusterImageSet", &["spec.releaseImage"]);
    assert_paths(
        "NMStateConfig",
        &[
            "spec.interfaces[].name",
            "spec.interfaces[].macAddress",
            "spec.config",
        ],
    );
}
