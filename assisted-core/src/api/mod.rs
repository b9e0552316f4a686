//! Typed assisted-service CRDs.
