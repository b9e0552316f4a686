//! Host and cluster validation IDs (wire strings) and their categories.

use serde::{Deserialize, Serialize};

use super::types::{ValidationStatus, wire_enum};

wire_enum! {
    /// Host validation IDs (`models/host_validation_id.go`).
    pub enum HostValidationId {
        Connected = "connected",
        MediaConnected = "media-connected",
        HasInventory = "has-inventory",
        InventoryNotPartiallyTruncated = "inventory-not-partially-truncated",
        InventoryNotFullyTruncated = "inventory-not-fully-truncated",
        HasMinCpuCores = "has-min-cpu-cores",
        HasMinValidDisks = "has-min-valid-disks",
        HasMinMemory = "has-min-memory",
        MachineCidrDefined = "machine-cidr-defined",
        HasCpuCoresForRole = "has-cpu-cores-for-role",
        HasMemoryForRole = "has-memory-for-role",
        HostnameUnique = "hostname-unique",
        HostnameValid = "hostname-valid",
        BelongsToMachineCidr = "belongs-to-machine-cidr",
        IgnitionDownloadable = "ignition-downloadable",
        BelongsToMajorityGroup = "belongs-to-majority-group",
        ValidPlatformNetworkSettings = "valid-platform-network-settings",
        NtpSynced = "ntp-synced",
        TimeSyncedBetweenHostAndService = "time-synced-between-host-and-service",
        ContainerImagesAvailable = "container-images-available",
        SufficientNetworkLatencyRequirementForRole = "sufficient-network-latency-requirement-for-role",
        SufficientPacketLossRequirementForRole = "sufficient-packet-loss-requirement-for-role",
        HasDefaultRoute = "has-default-route",
        ApiDomainNameResolvedCorrectly = "api-domain-name-resolved-correctly",
        ApiIntDomainNameResolvedCorrectly = "api-int-domain-name-resolved-correctly",
        AppsDomainNameResolvedCorrectly = "apps-domain-name-resolved-correctly",
        ReleaseDomainNameResolvedCorrectly = "release-domain-name-resolved-correctly",
        CompatibleWithClusterPlatform = "compatible-with-cluster-platform",
        DnsWildcardNotConfigured = "dns-wildcard-not-configured",
        DiskEncryptionRequirementsSatisfied = "disk-encryption-requirements-satisfied",
        NonOverlappingSubnets = "non-overlapping-subnets",
        VsphereDiskUuidEnabled = "vsphere-disk-uuid-enabled",
        CompatibleAgent = "compatible-agent",
        NoSkipInstallationDisk = "no-skip-installation-disk",
        NoSkipMissingDisk = "no-skip-missing-disk",
        NoIpCollisionsInNetwork = "no-ip-collisions-in-network",
        NoIscsiNicBelongsToMachineCidr = "no-iscsi-nic-belongs-to-machine-cidr",
        MtuValid = "mtu-valid",
        SufficientInstallationDiskSpeed = "sufficient-installation-disk-speed",
        LsoRequirementsSatisfied = "lso-requirements-satisfied",
        OdfRequirementsSatisfied = "odf-requirements-satisfied",
        OcsRequirementsSatisfied = "ocs-requirements-satisfied",
        CnvRequirementsSatisfied = "cnv-requirements-satisfied",
        LvmRequirementsSatisfied = "lvm-requirements-satisfied",
        MceRequirementsSatisfied = "mce-requirements-satisfied",
        MtvRequirementsSatisfied = "mtv-requirements-satisfied",
        OscRequirementsSatisfied = "osc-requirements-satisfied",
        NodeFeatureDiscoveryRequirementsSatisfied = "node-feature-discovery-requirements-satisfied",
        NvidiaGpuRequirementsSatisfied = "nvidia-gpu-requirements-satisfied",
        PipelinesRequirementsSatisfied = "pipelines-requirements-satisfied",
        ServicemeshRequirementsSatisfied = "servicemesh-requirements-satisfied",
        ServerlessRequirementsSatisfied = "serverless-requirements-satisfied",
        OpenshiftAiRequirementsSatisfied = "openshift-ai-requirements-satisfied",
        AuthorinoRequirementsSatisfied = "authorino-requirements-satisfied",
        NmstateRequirementsSatisfied = "nmstate-requirements-satisfied",
        AmdGpuRequirementsSatisfied = "amd-gpu-requirements-satisfied",
        KmmRequirementsSatisfied = "kmm-requirements-satisfied",
        NodeHealthcheckRequirementsSatisfied = "node-healthcheck-requirements-satisfied",
        SelfNodeRemediationRequirementsSatisfied = "self-node-remediation-requirements-satisfied",
        FenceAgentsRemediationRequirementsSatisfied = "fence-agents-remediation-requirements-satisfied",
        NodeMaintenanceRequirementsSatisfied = "node-maintenance-requirements-satisfied",
        KubeDeschedulerRequirementsSatisfied = "kube-descheduler-requirements-satisfied",
        ClusterObservabilityRequirementsSatisfied = "cluster-observability-requirements-satisfied",
        NumaResourcesRequirementsSatisfied = "numa-resources-requirements-satisfied",
        OadpRequirementsSatisfied = "oadp-requirements-satisfied",
        MetallbRequirementsSatisfied = "metallb-requirements-satisfied",
        LokiRequirementsSatisfied = "loki-requirements-satisfied",
        OpenshiftLoggingRequirementsSatisfied = "openshift-logging-requirements-satisfied",
    }
}

impl HostValidationId {
    /// The validations_info group the result is reported under.
    pub fn category(self) -> &'static str {
        use HostValidationId::*;
        match self {
            Connected
            | MediaConnected
            | MachineCidrDefined
            | BelongsToMachineCidr
            | IgnitionDownloadable
            | BelongsToMajorityGroup
            | ValidPlatformNetworkSettings
            | NtpSynced
            | TimeSyncedBetweenHostAndService
            | ContainerImagesAvailable
            | SufficientNetworkLatencyRequirementForRole
            | SufficientPacketLossRequirementForRole
            | HasDefaultRoute
            | ApiDomainNameResolvedCorrectly
            | ApiIntDomainNameResolvedCorrectly
            | AppsDomainNameResolvedCorrectly
            | ReleaseDomainNameResolvedCorrectly
            | DnsWildcardNotConfigured
            | NonOverlappingSubnets
            | NoIpCollisionsInNetwork
            | NoIscsiNicBelongsToMachineCidr
            | MtuValid => "network",
            HasInventory
            | InventoryNotPartiallyTruncated
            | InventoryNotFullyTruncated
            | HasMinCpuCores
            | HasMinValidDisks
            | HasMinMemory
            | HasCpuCoresForRole
            | HasMemoryForRole
            | HostnameUnique
            | HostnameValid
            | CompatibleWithClusterPlatform
            | DiskEncryptionRequirementsSatisfied
            | VsphereDiskUuidEnabled
            | CompatibleAgent
            | NoSkipInstallationDisk
            | NoSkipMissingDisk
            | SufficientInstallationDiskSpeed => "hardware",
            _ => "operators",
        }
    }

    /// Validations a user may not ignore through the ignored-host-validations annotation.
    pub fn ignorable(self) -> bool {
        use HostValidationId::*;
        !matches!(
            self,
            Connected
                | HasInventory
                | InventoryNotFullyTruncated
                | MachineCidrDefined
                | HostnameUnique
                | HostnameValid
        )
    }
}

wire_enum! {
    /// Cluster validation IDs.
    pub enum ClusterValidationId {
        MachineCidrDefined = "machine-cidr-defined",
        ClusterCidrDefined = "cluster-cidr-defined",
        ServiceCidrDefined = "service-cidr-defined",
        NoCidrsOverlapping = "no-cidrs-overlapping",
        NetworksSameAddressFamilies = "networks-same-address-families",
        NetworkPrefixValid = "network-prefix-valid",
        MachineCidrEqualsToCalculatedCidr = "machine-cidr-equals-to-calculated-cidr",
        ApiVipsDefined = "api-vips-defined",
        ApiVipsValid = "api-vips-valid",
        IngressVipsDefined = "ingress-vips-defined",
        IngressVipsValid = "ingress-vips-valid",
        AllHostsAreReadyToInstall = "all-hosts-are-ready-to-install",
        SufficientMastersCount = "sufficient-masters-count",
        DnsDomainDefined = "dns-domain-defined",
        PullSecretSet = "pull-secret-set",
        NtpServerConfigured = "ntp-server-configured",
        NetworkTypeValid = "network-type-valid",
        CustomManifestsRequirementsSatisfied = "custom-manifests-requirements-satisfied",
        PlatformRequirementsSatisfied = "platform-requirements-satisfied",
        LsoRequirementsSatisfied = "lso-requirements-satisfied",
        OdfRequirementsSatisfied = "odf-requirements-satisfied",
        OcsRequirementsSatisfied = "ocs-requirements-satisfied",
        CnvRequirementsSatisfied = "cnv-requirements-satisfied",
        LvmRequirementsSatisfied = "lvm-requirements-satisfied",
        MceRequirementsSatisfied = "mce-requirements-satisfied",
        MtvRequirementsSatisfied = "mtv-requirements-satisfied",
        OscRequirementsSatisfied = "osc-requirements-satisfied",
        NodeFeatureDiscoveryRequirementsSatisfied = "node-feature-discovery-requirements-satisfied",
        NvidiaGpuRequirementsSatisfied = "nvidia-gpu-requirements-satisfied",
        PipelinesRequirementsSatisfied = "pipelines-requirements-satisfied",
        ServicemeshRequirementsSatisfied = "servicemesh-requirements-satisfied",
        ServerlessRequirementsSatisfied = "serverless-requirements-satisfied",
        OpenshiftAiRequirementsSatisfied = "openshift-ai-requirements-satisfied",
        OpenshiftAiGpuRequirementsSatisfied = "openshift-ai-gpu-requirements-satisfied",
        AuthorinoRequirementsSatisfied = "authorino-requirements-satisfied",
        NmstateRequirementsSatisfied = "nmstate-requirements-satisfied",
        AmdGpuRequirementsSatisfied = "amd-gpu-requirements-satisfied",
        KmmRequirementsSatisfied = "kmm-requirements-satisfied",
        NodeHealthcheckRequirementsSatisfied = "node-healthcheck-requirements-satisfied",
        SelfNodeRemediationRequirementsSatisfied = "self-node-remediation-requirements-satisfied",
        FenceAgentsRemediationRequirementsSatisfied = "fence-agents-remediation-requirements-satisfied",
        NodeMaintenanceRequirementsSatisfied = "node-maintenance-requirements-satisfied",
        KubeDeschedulerRequirementsSatisfied = "kube-descheduler-requirements-satisfied",
        ClusterObservabilityRequirementsSatisfied = "cluster-observability-requirements-satisfied",
        NumaResourcesRequirementsSatisfied = "numa-resources-requirements-satisfied",
        OadpRequirementsSatisfied = "oadp-requirements-satisfied",
        MetallbRequirementsSatisfied = "metallb-requirements-satisfied",
        LokiRequirementsSatisfied = "loki-requirements-satisfied",
        OpenshiftLoggingRequirementsSatisfied = "openshift-logging-requirements-satisfied",
    }
}

impl ClusterValidationId {
    pub fn category(self) -> &'static str {
        use ClusterValidationId::*;
        match self {
            MachineCidrDefined
            | ClusterCidrDefined
            | ServiceCidrDefined
            | NoCidrsOverlapping
            | NetworksSameAddressFamilies
            | NetworkPrefixValid
            | MachineCidrEqualsToCalculatedCidr
            | ApiVipsDefined
            | ApiVipsValid
            | IngressVipsDefined
            | IngressVipsValid
            | NtpServerConfigured
            | NetworkTypeValid => "network",
            AllHostsAreReadyToInstall | SufficientMastersCount => "hosts-data",
            DnsDomainDefined
            | PullSecretSet
            | CustomManifestsRequirementsSatisfied
            | PlatformRequirementsSatisfied => "configuration",
            _ => "operators",
        }
    }
}

/// The operator name in an `<op>-requirements-satisfied` id.
pub(crate) fn operator_name(id: &str) -> &str {
    id.strip_suffix("-requirements-satisfied").unwrap_or(id)
}

/// One validation result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationResult<Id> {
    pub id: Id,
    pub status: ValidationStatus,
    pub message: String,
    /// The user ignored this (ignorable) validation: it counts as passing for gating.
    #[serde(skip)]
    pub ignored: bool,
}

impl<Id> ValidationResult<Id> {
    /// Passing for gating purposes.
    pub fn ok(&self) -> bool {
        self.ignored
            || matches!(
                self.status,
                ValidationStatus::Success | ValidationStatus::Disabled
            )
    }
}
