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

/// `now` as the API server keeps a `metav1.Time`: whole seconds (it drops the fraction). A
/// time written with its fraction reads back different, so the next comparison of what is
/// with what should be saw a change and wrote the same status again.
pub fn api_time(now: Timestamp) -> Time {
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
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
                _ => api_time(now),
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

/// Like [`merge`], for writers that own some types only while they have something to say: a
/// `previous` condition of a type in `owned` that is not desired is dropped instead of kept
/// (the writer applies the whole list, so the dropped entry leaves the object).
pub fn merge_owned(
    previous: &[Condition],
    desired: &[Desired],
    owned: &[&str],
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    let kept: Vec<Condition> = previous
        .iter()
        .filter(|c| {
            !owned.contains(&c.type_.as_str()) || desired.iter().any(|d| d.type_ == c.type_)
        })
        .cloned()
        .collect();
    merge(&kept, desired, generation, now)
}

/// The condition that names spec fields set but not supported yet (DESIGN §2: never silence).
/// The same type, reason and wording as assisted-core's on AgentClusterInstalls and InfraEnvs.
pub const FIELDS_SUPPORTED: &str = "FieldsSupported";

/// `FieldsSupported` False / `UnsupportedFields` listing `messages` (each `<field> is not
/// supported yet[: why]`); `None` when there are none, so the condition is present only while
/// such a field is set (write it with [`merge_owned`]).
pub fn fields_supported(messages: &[String]) -> Option<Desired> {
    (!messages.is_empty()).then(|| {
        Desired::false_(
            FIELDS_SUPPORTED,
            "UnsupportedFields",
            format!(
                "Some fields are set that are not supported yet and have no effect: {}",
                messages.join("; ")
            ),
        )
    })
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

    #[test]
    fn times_are_kept_in_whole_seconds_as_the_api_server_keeps_them() {
        let fraction: Timestamp = "2026-11-28T23:57:05.541176479Z".parse().unwrap();
        let t = api_time(fraction);
        assert_eq!(t.0.to_string(), "2026-11-28T23:57:05Z");
        let merged = merge(&[], &[Desired::true_("Ready", "")], None, fraction);
        assert_eq!(merged[0].last_transition_time, t);
    }

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
    fn an_owned_condition_leaves_when_it_is_no_longer_desired() {
        let foreign = Desired::true_("Foreign", "");
        let unsupported = fields_supported(&["spec.x is not supported yet".into()]).unwrap();
        let first = merge(&[], &[foreign, unsupported.clone()], Some(1), at(0));
        assert_eq!(
            first[1].message,
            "Some fields are set that are not supported yet and have no effect: \
             spec.x is not supported yet"
        );
        let ready = Desired::true_("Ready", "");
        let later = merge_owned(
            &first,
            std::slice::from_ref(&ready),
            &[FIELDS_SUPPORTED],
            Some(2),
            at(5),
        );
        let types: Vec<_> = later.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Foreign"]);
        // Still desired: kept, with its transition time.
        let again = merge_owned(&first, &[unsupported], &[FIELDS_SUPPORTED], Some(2), at(5));
        assert_eq!(
            find(&again, FIELDS_SUPPORTED).map(|c| &c.last_transition_time),
            Some(&Time(at(0)))
        );
        assert_eq!(fields_supported(&[]), None);
    }

    #[test]
    fn status_from_bool() {
        assert_eq!(Status::from(true).as_str(), "True");
        assert_eq!(Status::from(false).as_str(), "False");
    }
}
