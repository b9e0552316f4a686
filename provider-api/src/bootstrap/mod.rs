//! The bootstrap provider's kinds: OpenshiftAssistedConfig and OpenshiftAssistedConfigTemplate.

pub mod api;
pub mod conversion;
pub mod v1alpha1;
