//! What every manager binary of this project shares, so a provider crate holds only its own logic:
//!
//! - [`cli`]: the command line (run, `crd`, `manifests`, `validate`);
//! - [`runtime`]: flags, logging, the client, probes, metrics, leader election, shutdown;
//! - [`manifests`]: `config/` generation (CRDs, RBAC from one rule list, Deployment, clusterctl files);
//! - [`metrics`]: reconcile and error counters every controller exports;
//! - [`controller`]: the error type, events, finalizer and delete helpers every controller uses;
//! - [`conditions`]: one builder for `metav1.Condition`s with CAPI's transition-time rule;
//! - [`fields`]: a CRD's settable `spec` paths, for the completeness tests of unsupported fields;
//! - [`http`]: the HTTP/1.1 server loop (request-head timeout, optional TLS, graceful shutdown);
//! - [`webhook`]: the HTTPS webhook server (CRD conversion), certificates re-read on rotation;
//! - [`pace`]: at most one status write per object per interval, the newest state last.

pub mod cache;
pub mod cli;
pub mod conditions;
pub mod controller;
pub mod fields;
pub mod http;
pub mod manifests;
pub mod metrics;
pub mod names;
pub mod pace;
pub mod requests;
pub mod runtime;
pub mod webhook;
