//! Install backends: install-config.yaml, `openshift-install`, and the lab backend.
//!
//! - [`build_install_config`] turns a plain [`InstallConfigInput`] into install-config JSON
//!   (and [`render_install_config_yaml`] into YAML); it is pure.
//! - [`InstallBackend`] produces the cluster's [`InstallArtifacts`] (ignitions, admin
//!   kubeconfig, kubeadmin password, metadata). [`OpenshiftInstallBackend`] runs the real
//!   installer binary; [`LabBackend`] fabricates structurally valid artifacts with a real PKI
//!   for test beds that never boot RHCOS.
//! - [`host_ignition`] and [`day2_pointer_ignition`] build the per-host ignition files.
//! - [`FileStore`] keeps the artifacts on disk keyed `<cluster_id>/<file_name>`.

mod backend;
mod bootstrap;
mod chrony;
mod config;
mod disk_encryption;
mod error;
mod ignition;
mod lab;
mod manifests;
mod store;

pub use backend::{
    CACHED_RELEASES, GenerateFuture, GenerateRequest, InstallArtifacts, InstallBackend,
    InstallerSource, MAX_CONCURRENT_INSTALLERS, OpenshiftInstallBackend, installer_warnings,
};
pub use bootstrap::{
    ASSISTED_BOOTSTRAP_MARKER, BMH_STATUS_ANNOTATION, BootstrapInput, GenerateHost,
    NM_RESOLV_UNMANAGED, hardware_details, post_process_bootstrap,
};
pub use chrony::{chrony_conf, chrony_conf_of_manifest, chrony_manifests};
pub(crate) use config::split_list;
pub use config::{
    BootMode, ExternalPlatformInput, HostNic, InstallConfigInput, InstallHost, InstallPlatform,
    ProxyInput, apply_merge_patch, build_install_config, render_install_config_yaml,
};
pub use disk_encryption::{TangServer, disk_encryption_manifests, tang_servers};
pub use error::InstallError;
pub use ignition::{
    IGNITION_VERSION, data_url, day2_pointer_ignition, decode_data_url, host_ignition,
    host_ignition_file_name, merge_ignition, parse_ignition_override, pointer_ignition,
    with_ignition_override,
};
pub use lab::{
    LabBackend, LabClientCa, LabPki, generate_kubeadmin_password, generate_lab_pki, random_uuid_v4,
};
pub use manifests::{
    MAX_MANIFEST_SIZE, Manifest, ManifestFolder, apply_patch, apply_patches_in_dir, check_manifest,
    is_patch, masters_schedulable_patch, patch_target, split_multi_document, valid_manifest_name,
};
pub use store::FileStore;

/// The annotation on AgentClusterInstall carrying the install-config overrides JSON.
pub const INSTALL_CONFIG_OVERRIDES_ANNOTATION: &str =
    "agent-install.openshift.io/install-config-overrides";
