//! Wire enums: states, kinds, roles, stages, step types. The serde names are the exact strings
//! assisted-service clients match on, so they are spelled out explicitly.

use serde::{Deserialize, Serialize};

/// Generates `as_str` and `Display` from the serde names, so logs and status fields agree with JSON.
macro_rules! wire_enum {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $var,)+
        }
        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$var,)+];
            /// The exact wire string.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$var => $s,)+ }
            }
            /// Parses the exact wire string.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$var),)+ _ => None }
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use wire_enum;

wire_enum! {
    /// Host status (`models.HostStatus*`), bound and unbound (pool) states.
    pub enum HostStatus {
        Discovering = "discovering",
        Known = "known",
        Disconnected = "disconnected",
        Insufficient = "insufficient",
        /// Obsolete upstream; kept so stored values still parse.
        Disabled = "disabled",
        PreparingForInstallation = "preparing-for-installation",
        PreparingFailed = "preparing-failed",
        PreparingSuccessful = "preparing-successful",
        PendingForInput = "pending-for-input",
        Installing = "installing",
        InstallingInProgress = "installing-in-progress",
        InstallingPendingUserAction = "installing-pending-user-action",
        ResettingPendingUserAction = "resetting-pending-user-action",
        Installed = "installed",
        Error = "error",
        Resetting = "resetting",
        AddedToExistingCluster = "added-to-existing-cluster",
        Cancelled = "cancelled",
        Binding = "binding",
        Unbinding = "unbinding",
        UnbindingPendingUserAction = "unbinding-pending-user-action",
        Reclaiming = "reclaiming",
        ReclaimingRebooting = "reclaiming-rebooting",
        DiscoveringUnbound = "discovering-unbound",
        KnownUnbound = "known-unbound",
        InsufficientUnbound = "insufficient-unbound",
        DisconnectedUnbound = "disconnected-unbound",
        DisabledUnbound = "disabled-unbound",
    }
}

impl HostStatus {
    /// Pool (late-binding) states, driven by the pool machine.
    pub fn is_unbound_state(self) -> bool {
        matches!(
            self,
            HostStatus::DiscoveringUnbound
                | HostStatus::KnownUnbound
                | HostStatus::InsufficientUnbound
                | HostStatus::DisconnectedUnbound
                | HostStatus::DisabledUnbound
        )
    }

    /// States before installation starts, where validations gate the host.
    pub fn is_pre_install(self) -> bool {
        matches!(
            self,
            HostStatus::Discovering
                | HostStatus::Known
                | HostStatus::Disconnected
                | HostStatus::Insufficient
                | HostStatus::PendingForInput
        )
    }

    /// States of a host that is being, or has been, installed.
    pub fn is_installing_or_later(self) -> bool {
        matches!(
            self,
            HostStatus::Installing
                | HostStatus::InstallingInProgress
                | HostStatus::InstallingPendingUserAction
                | HostStatus::Installed
                | HostStatus::AddedToExistingCluster
        )
    }
}

wire_enum! {
    /// Cluster status (`models.ClusterStatus*`).
    pub enum ClusterStatus {
        Insufficient = "insufficient",
        Ready = "ready",
        Error = "error",
        PreparingForInstallation = "preparing-for-installation",
        PendingForInput = "pending-for-input",
        Installing = "installing",
        Finalizing = "finalizing",
        Installed = "installed",
        AddingHosts = "adding-hosts",
        Cancelled = "cancelled",
        InstallingPendingUserAction = "installing-pending-user-action",
        Unmonitored = "unmonitored",
    }
}

wire_enum! {
    /// Host kind: day-1 or day-2.
    pub enum HostKind {
        Host = "Host",
        AddToExistingClusterHost = "AddToExistingClusterHost",
    }
}

wire_enum! {
    /// Cluster kind.
    pub enum ClusterKind {
        Cluster = "Cluster",
        AddHostsCluster = "AddHostsCluster",
        DisconnectedCluster = "DisconnectedCluster",
    }
}

wire_enum! {
    /// Requested or effective host role. `bootstrap` only appears in install requests.
    pub enum HostRole {
        AutoAssign = "auto-assign",
        Master = "master",
        Worker = "worker",
        Arbiter = "arbiter",
        Bootstrap = "bootstrap",
    }
}

wire_enum! {
    /// Host install stages (`models.HostStage*`).
    pub enum HostStage {
        StartingInstallation = "Starting installation",
        WaitingForControlPlane = "Waiting for control plane",
        WaitingForController = "Waiting for controller",
        WaitingForBootkube = "Waiting for bootkube",
        Installing = "Installing",
        WritingImageToDisk = "Writing image to disk",
        CopyingRegistryDataToDisk = "Copying registry data to disk",
        Rebooting = "Rebooting",
        Configuring = "Configuring",
        Joined = "Joined",
        Done = "Done",
        WaitingForIgnition = "Waiting for ignition",
        Failed = "Failed",
    }
}

wire_enum! {
    /// Cluster finalizing stages reported by the in-cluster controller.
    pub enum FinalizingStage {
        WaitingForClusterOperators = "Waiting for cluster operators",
        AddingRouterCa = "Adding router ca",
        ApplyingOlmManifests = "Applying olm manifests",
        WaitingForOlmOperatorsCsvInitialization = "Waiting for olm operators csv initialization",
        WaitingForOlmOperatorsCsv = "Waiting for olm operators csv",
        WaitingForOlmOperatorSetupJobs = "Waiting for OLM operator setup jobs",
        Done = "Done",
    }
}

wire_enum! {
    /// Agent step types (`models.StepType*`).
    pub enum StepType {
        ConnectivityCheck = "connectivity-check",
        Execute = "execute",
        Inventory = "inventory",
        Install = "install",
        FreeNetworkAddresses = "free-network-addresses",
        DhcpLeaseAllocate = "dhcp-lease-allocate",
        ApiVipConnectivityCheck = "api-vip-connectivity-check",
        TangConnectivityCheck = "tang-connectivity-check",
        NtpSynchronizer = "ntp-synchronizer",
        InstallationDiskSpeedCheck = "installation-disk-speed-check",
        ContainerImageAvailability = "container-image-availability",
        DomainResolution = "domain-resolution",
        StopInstallation = "stop-installation",
        LogsGather = "logs-gather",
        NextStepRunner = "next-step-runner",
        UpgradeAgent = "upgrade-agent",
        DownloadBootArtifacts = "download-boot-artifacts",
        RebootForReclaim = "reboot-for-reclaim",
        VerifyVips = "verify-vips",
    }
}

wire_enum! {
    /// What the agent does after running the returned steps.
    pub enum PostStepAction {
        Continue = "continue",
        Exit = "exit",
    }
}

wire_enum! {
    /// Validation status values.
    pub enum ValidationStatus {
        Success = "success",
        Failure = "failure",
        Pending = "pending",
        Error = "error",
        Disabled = "disabled",
    }
}

wire_enum! {
    /// Platform type of the cluster.
    pub enum PlatformType {
        BareMetal = "baremetal",
        None = "none",
        VSphere = "vsphere",
        Nutanix = "nutanix",
        External = "external",
        Oci = "oci",
    }
}

wire_enum! {
    /// Monitored operator status reported by the controller.
    pub enum OperatorStatus {
        Failed = "failed",
        Progressing = "progressing",
        Available = "available",
    }
}

wire_enum! {
    /// Monitored operator type.
    pub enum OperatorType {
        Builtin = "builtin",
        Olm = "olm",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug + Copy>(
        all: &[T],
        s: impl Fn(T) -> &'static str,
    ) {
        for v in all {
            assert_eq!(serde_json::to_value(v).unwrap(), serde_json::json!(s(*v)));
            let back: T = serde_json::from_value(serde_json::json!(s(*v))).unwrap();
            assert_eq!(back, *v);
        }
    }

    #[test]
    fn serde_names_are_the_wire_strings() {
        check(HostStatus::ALL, HostStatus::as_str);
        check(ClusterStatus::ALL, ClusterStatus::as_str);
        check(HostStage::ALL, HostStage::as_str);
        check(StepType::ALL, StepType::as_str);
        check(HostRole::ALL, HostRole::as_str);
        assert_eq!(HostStatus::ALL.len(), 28);
        assert_eq!(ClusterStatus::ALL.len(), 12);
        assert_eq!(StepType::ALL.len(), 19);
        assert_eq!(
            HostStatus::parse("installing-pending-user-action"),
            Some(HostStatus::InstallingPendingUserAction)
        );
        assert_eq!(
            HostStage::parse("Copying registry data to disk"),
            Some(HostStage::CopyingRegistryDataToDisk)
        );
        assert_eq!(
            StepType::parse("api-vip-connectivity-check"),
            Some(StepType::ApiVipConnectivityCheck)
        );
        assert_eq!(HostStatus::parse("Known"), None);
    }
}
