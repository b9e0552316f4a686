//! provider-api: the API of both providers, below both so that neither depends on the other.
//!
//! - [`bootstrap`]: OpenshiftAssistedConfig and OpenshiftAssistedConfigTemplate, the hub
//!   (`v1alpha2`, [`bootstrap::api`]), CAPOA's `v1alpha1` and the conversion between them; the
//!   config spec's admission rules ([`bootstrap::validation`]) and its unsupported-field rows and
//!   coverage table ([`bootstrap::unsupported`]), which both providers apply;
//! - [`controlplane`]: OpenshiftAssistedControlPlane(Template), the hub (`v1alpha3`,
//!   [`controlplane::api`]), CAPOA's `v1alpha2` and the conversion between them;
//! - [`conversion`]: the generic engine both conversions use (field mapping in code, what a
//!   version cannot express kept in the `cluster.x-k8s.io/conversion-data` annotation).

pub mod bootstrap;
pub mod controlplane;
pub mod conversion;
#[cfg(test)]
mod testing;
