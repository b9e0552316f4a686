//! Discovery images: the discovery ignition, ISO embedding and streaming, iPXE.
//!
//! Everything here takes plain input structs; the HTTP and Kubernetes layers fill them.
//! - [`discovery_ignition`] renders the Ignition config the discovery ISO boots with;
//! - [`CustomizedIso`] streams a base live ISO with that config spliced into its Ignition
//!   embed area and the kernel arguments into its karg areas, found as coreos-installer finds
//!   them ([`layout`]: `igninfo.json`, `kargs.json`, the legacy header);
//! - [`ipxe_script`] and [`minimal_initrd`] serve PXE and minimal-ISO boots;
//! - [`OsImageCache`] keeps the base ISOs on local disk;
//! - [`find_file`] locates the PXE kernel, initrd and rootfs inside a base ISO, and
//!   [`FileParts`] streams them (the initrd with the ignition cpio appended).
//!
//! Helpers only tests need (a test ISO writer, readers of what was embedded) are compiled
//! only for this crate's tests and with the `test-support` feature.

pub mod cpio;
mod error;
pub mod ignition;
pub mod iso;
pub mod iso_read;
pub mod layout;
pub mod miniso;
pub mod os_image;
pub mod pxe;
pub mod stream;
#[cfg(any(test, feature = "test-support"))]
pub mod test_iso;

pub use cpio::ignition_cpio;
pub use error::ImageError;
#[cfg(any(test, feature = "test-support"))]
pub use ignition::{DiscoveredAgentConfig, parse_discovery_ignition};
pub use ignition::{
    DiscoveryIgnitionParams, MacInterface, ProxySettings, StaticNetworkConfig, discovery_ignition,
};
pub use iso::{EmbedArea, read_embed_area};
pub use iso_read::{IsoExtent, find_file};
pub use layout::{IsoLayout, KargAreas, read_layout};
pub use os_image::{OsImage, OsImageCache, select};
pub use pxe::{IpxeScriptType, ipxe_boot_order_control_script, ipxe_script, minimal_initrd};
pub use stream::{ByteRange, CustomizedIso, FileParts, Part, parse_range};
#[cfg(any(test, feature = "test-support"))]
pub use test_iso::{TestIsoContents, extract_embedded_ignition, write_test_iso};
