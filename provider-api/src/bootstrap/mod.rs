//! The bootstrap provider's kinds: OpenshiftAssistedConfig and OpenshiftAssistedConfigTemplate,
//! and the facts about their spec both providers use (admission rules, unsupported fields).

pub mod api;
pub mod conversion;
pub mod unsupported;
pub mod v1alpha1;
pub mod validation;
