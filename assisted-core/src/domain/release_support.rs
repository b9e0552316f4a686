//! What a release's installer accepts, by OpenShift version (pure). The rules are the
//! installer's and upstream's for that release; an unparsable version is treated as the
//! newest, so a custom build is never refused for its name alone.

use super::hardware::parse_major_minor;

/// How far a release supports a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    Unsupported,
    /// Needs `featureSet: TechPreviewNoUpgrade` in install-config.
    TechPreview,
    Supported,
}

fn at_least(version: &str, min: (u32, u32)) -> bool {
    parse_major_minor(version).is_none_or(|v| v >= min)
}

/// OpenShiftSDN: installers from 4.15 refuse it for new clusters ("use OVNKubernetes").
pub fn openshift_sdn_supported(version: &str) -> bool {
    !at_least(version, (4, 15))
}

/// Two control-plane nodes and an arbiter: 4.19 as a tech preview, supported from 4.20.
pub fn arbiter_support(version: &str) -> Support {
    if !at_least(version, (4, 19)) {
        Support::Unsupported
    } else if parse_major_minor(version) == Some((4, 19)) {
        Support::TechPreview
    } else {
        Support::Supported
    }
}

/// Four or five control-plane nodes: from 4.18 (three only before).
pub fn large_control_plane_supported(version: &str) -> bool {
    at_least(version, (4, 18))
}

/// `platform.baremetal.additionalNTPServers` exists from the 4.18 installer; older ones warn
/// "unknown field" and drop it.
pub fn install_config_has_additional_ntp_servers(version: &str) -> bool {
    at_least(version, (4, 18))
}

/// Pools installed on a pre-built image (MachineOSConfig manifests with the pre-built-image
/// annotation): the bootstrap machine-config-operator reads them from 4.21 (MCO PR #5318).
pub fn pre_built_images_supported(version: &str) -> bool {
    at_least(version, IMAGE_MODE_AT_INSTALL_SINCE)
}

/// The first release that installs pools on a pre-built image.
pub const IMAGE_MODE_AT_INSTALL_SINCE: (u32, u32) = (4, 21);

/// The OS image streams an install-config's `osImageStream` may name (`centos-10` for OKD).
pub const OS_IMAGE_STREAMS: &[&str] = &["rhel-9", "rhel-10", "centos-10"];
/// The stream a 4.x cluster gets when none is named.
pub const DEFAULT_OS_IMAGE_STREAM: &str = "rhel-9";

/// Why a release's installer does not take an `osImageStream`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OsImageStreamError {
    #[error("unknown stream (known: {})", OS_IMAGE_STREAMS.join(", "))]
    UnknownStream,
    #[error("the installer of OpenShift {version} has no osImageStream (from 4.22)")]
    TooOld { version: String },
    #[error(
        "a stream other than {} needs the OSStreams feature gate before 4.23: set featureSet: TechPreviewNoUpgrade",
        DEFAULT_OS_IMAGE_STREAM
    )]
    NeedsFeatureGate,
}

/// Whether the release's installer takes `osImageStream: stream` with the install-config's
/// `featureSet`; the reason when it does not. The field comes with the 4.22 installer; another
/// stream than the default needs the `OSStreams` feature gate, in `TechPreviewNoUpgrade` (or
/// `DevPreviewNoUpgrade`) before 4.23, on by default from 4.23.
pub fn os_image_stream_support(
    version: &str,
    stream: &str,
    feature_set: Option<&str>,
) -> Result<(), OsImageStreamError> {
    if !OS_IMAGE_STREAMS.contains(&stream) {
        return Err(OsImageStreamError::UnknownStream);
    }
    if !at_least(version, (4, 22)) {
        return Err(OsImageStreamError::TooOld {
            version: version.to_string(),
        });
    }
    let preview = matches!(
        feature_set,
        Some("TechPreviewNoUpgrade" | "DevPreviewNoUpgrade")
    );
    if stream != DEFAULT_OS_IMAGE_STREAM && !at_least(version, (4, 23)) && !preview {
        return Err(OsImageStreamError::NeedsFeatureGate);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_by_version() {
        assert!(openshift_sdn_supported("4.14.9"));
        assert!(!openshift_sdn_supported("4.15.0"));
        assert!(!openshift_sdn_supported("4.17.3"));
        assert!(!openshift_sdn_supported("custom"));
        assert_eq!(arbiter_support("4.18.1"), Support::Unsupported);
        assert_eq!(arbiter_support("4.19.0-ec.2"), Support::TechPreview);
        assert_eq!(arbiter_support("4.20.2"), Support::Supported);
        assert!(!large_control_plane_supported("4.17.3"));
        assert!(large_control_plane_supported("4.18.0"));
        assert!(!install_config_has_additional_ntp_servers("4.17.3"));
        assert!(install_config_has_additional_ntp_servers("4.18.0"));
    }
}
