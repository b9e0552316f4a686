//! Validations: pure functions of a snapshot returning (id, status, message).
//!
//! Each side is a table of rows run in order: [`host`] (one check per host validation id, with a
//! cluster-wide [`ClusterContext`] computed once per refresh) and [`cluster`] (rows with their
//! why). This module holds what both share: the ordered result set and its JSON grouping.

mod cluster;
mod host;

pub use cluster::*;
pub use host::*;

use super::types::*;
use super::validation_ids::*;

use ValidationStatus::{Failure, Pending, Success};

/// The outcome of one check: its status and the message shown to the user.
type Check = (ValidationStatus, String);

/// An ordered set of validation results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validations<Id> {
    pub results: Vec<ValidationResult<Id>>,
}

pub type HostValidations = Validations<HostValidationId>;
pub type ClusterValidations = Validations<ClusterValidationId>;

impl<Id: Copy + PartialEq + std::fmt::Display> Validations<Id> {
    pub fn get(&self, id: Id) -> Option<&ValidationResult<Id>> {
        self.results.iter().find(|r| r.id == id)
    }

    /// Passing (success, disabled or ignored). A missing result counts as passing.
    pub fn ok(&self, id: Id) -> bool {
        self.get(id).is_none_or(|r| r.ok())
    }

    pub fn status(&self, id: Id) -> Option<ValidationStatus> {
        self.get(id).map(|r| r.status)
    }

    /// Results among `ids` that do not pass, in `ids` order.
    pub fn failing<'a>(&'a self, ids: &'a [Id]) -> impl Iterator<Item = &'a ValidationResult<Id>> {
        ids.iter()
            .filter_map(|id| self.get(*id))
            .filter(|r| !r.ok())
    }

    /// Messages of the failing validations among `ids`, joined the upstream way.
    pub fn failing_messages(&self, ids: &[Id]) -> String {
        self.failing(ids)
            .map(|r| r.message.as_str())
            .collect::<Vec<_>>()
            .join(" ; ")
    }

    pub fn all_ok(&self, ids: &[Id]) -> bool {
        self.failing(ids).next().is_none()
    }
}

impl HostValidations {
    /// `validations_info` JSON: `{"hardware":[{id,status,message}],"network":[..],"operators":[..]}`.
    pub fn to_validations_info(&self) -> serde_json::Value {
        group(
            self.results
                .iter()
                .map(|r| (r.id.category(), r.id.as_str(), r)),
        )
    }
}

impl ClusterValidations {
    /// `validations_info` JSON grouped by network / hosts-data / configuration / operators.
    pub fn to_validations_info(&self) -> serde_json::Value {
        group(
            self.results
                .iter()
                .map(|r| (r.id.category(), r.id.as_str(), r)),
        )
    }
}

fn group<'a, Id: 'a>(
    items: impl Iterator<Item = (&'static str, &'static str, &'a ValidationResult<Id>)>,
) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for (cat, id, r) in items {
        let entry = map
            .entry(cat)
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let serde_json::Value::Array(a) = entry {
            a.push(serde_json::json!({"id": id, "status": r.status, "message": r.message}));
        }
    }
    serde_json::Value::Object(map)
}

fn ok(msg: impl Into<String>) -> Check {
    (Success, msg.into())
}
fn fail(msg: impl Into<String>) -> Check {
    (Failure, msg.into())
}
fn pending(msg: impl Into<String>) -> Check {
    (Pending, msg.into())
}
