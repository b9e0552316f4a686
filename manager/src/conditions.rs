//! One builder for `metav1.Condition`s, used by every provider controller.
//!
//! A controller decides its conditions as [`Desired`] values (pure, no clock); [`merge`] turns
//! them into the `Condition`s to write, keeping `lastTransitionTime` while a condition's status
//! holds (the rule of apimachinery's `meta.SetStatusCondition`, which CAPI's helpers follow), so
//! a reconcile that changes nothing writes nothing new.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// A condition's status, as the API spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    True,
    False,
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }
}

impl From<bool> for Status {
    fn from(value: bool) -> Self {
        if value { Status::True } else { Status::False }
    }
}

/// A condition as a controller decides it: no timestamps, no generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desired {
    pub type_: &'static str,
    pub status: Status,
    /// CamelCase, as the API requires.
    pub reason: String,
    pub message: String,
}

impl Desired {
    pub fn new(
        type_: &'static str,
        status: impl Into<Status>,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Desired {
            type_,
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// `True`, with the reason equal to the type (the convention CAPI and CAPOA follow).
    pub fn true_(type_: &'static str, message: impl Into<String>) -> Self {
        Desired::new(type_, Status::True, type_, message)
    }

    pub fn false_(
        type_: &'static str,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Desired::new(type_, Status::False, reason, message)
    }

    pub fn unknown(
        type_: &'static str,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Desired::new(type_, Status::Unknown, reason, message)
    }
}

/// The conditions to write: `desired` in its order, then any `previous` condition of another
/// type (written by someone else) unchanged. `observedGeneration` is set to `generation`.
pub fn merge(
    previous: &[Condition],
    desired: &[Desired],
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    let mut out: Vec<Condition> = desired
        .iter()
        .map(|d| {
            let before = previous.iter().find(|c| c.type_ == d.type_);
            let last_transition_time = match before {
                Some(c) if c.status == d.status.as_str() => c.last_transition_time.clone(),
                _ => Time(now),
            };
            Condition {
                type_: d.type_.to_string(),
                status: d.status.as_str().to_string(),
                reason: d.reason.clone(),
                message: d.message.clone(),
                observed_generation: generation,
                last_transition_time,
            }
        })
        .collect();
    out.extend(
        previous
            .iter()
            .filter(|c| !desired.iter().any(|d| d.type_ == c.type_))
            .cloned(),
    );
    out
}

/// The condition of this type, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of this type is present and `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    #[test]
    fn transition_time_is_kept_while_status_holds_and_moves_when_it_changes() {
        let first = merge(
            &[],
            &[Desired::false_("Ready", "Waiting", "waiting for x")],
            Some(1),
            at(0),
        );
        assert_eq!(first[0].last_transition_time, Time(at(0)));

        // Same status, new reason and message: the time stays, the text follows.
        let second = merge(
            &first,
            &[Desired::false_("Ready", "StillWaiting", "waiting for y")],
            Some(2),
            at(10),
        );
        assert_eq!(second[0].last_transition_time, Time(at(0)));
        assert_eq!(second[0].reason, "StillWaiting");
        assert_eq!(second[0].observed_generation, Some(2));

        let third = merge(&second, &[Desired::true_("Ready", "")], Some(2), at(20));
        assert_eq!(third[0].last_transition_time, Time(at(20)));
        assert_eq!(third[0].status, "True");
        assert_eq!(third[0].reason, "Ready");
    }

    #[test]
    fn conditions_of_other_writers_are_kept_after_ours() {
        let foreign = merge(&[], &[Desired::true_("Foreign", "")], None, at(0));
        let merged = merge(&foreign, &[Desired::true_("Ready", "")], Some(1), at(5));
        let types: Vec<_> = merged.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Foreign"]);
        assert_eq!(merged[1], foreign[0]);
        assert!(is_true(&merged, "Foreign"));
        assert!(!is_true(&merged, "Missing"));
    }

    #[test]
    fn status_from_bool() {
        assert_eq!(Status::from(true).as_str(), "True");
        assert_eq!(Status::from(false).as_str(), "False");
    }
}
