//! Where the core is reached: the base URLs its configuration names, which the discovery
//! images carry and its serving certificate must cover.

/// Where agents and BMCs reach the core.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceUrls {
    /// Agent REST API base, e.g. `http://10.0.0.1:8090`.
    pub agent_api: String,
    /// Image server base, e.g. `http://10.0.0.1:8091`.
    pub images: String,
}
