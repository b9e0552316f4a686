//! The service layer: the agent REST API, discovery images, install backends and the
//! Kubernetes controllers around the pure [`crate::domain`] model.

pub mod auth;
pub mod controllers;
pub mod error;
pub mod http;
pub mod image_server;
pub mod images;
pub mod install;
pub mod journal;
pub mod monitor;
pub mod persister;
pub mod private_fs;
pub mod release;
pub mod server;
pub mod shards;
pub mod store;
pub mod tls;
pub mod urls;
