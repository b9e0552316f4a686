//! Test helpers both conversions' tests use: times, JSON, and the proptest strategies of the
//! pieces both kinds share (text, maps, Cluster API v1beta1 and metav1 conditions).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use proptest::prelude::*;
use serde::Serialize;
use serde_json::Value;

use crate::bootstrap::api::V1Beta1Condition;

pub fn time(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).unwrap())
}

pub fn json<T: Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap()
}

pub fn text() -> impl Strategy<Value = String> {
    "[a-z0-9]{0,6}"
}

pub fn some_text() -> impl Strategy<Value = String> {
    "[a-z0-9]{1,6}"
}

pub fn map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(some_text(), text(), 0..3)
}

pub fn time_strategy() -> impl Strategy<Value = Time> {
    (0i64..2_000_000_000).prop_map(time)
}

/// One of `names`, as a `String` (e.g. the condition types a kind writes).
pub fn one_of(names: &[&'static str]) -> impl Strategy<Value = String> + use<> {
    prop::sample::select(names.to_vec()).prop_map(String::from)
}

/// A v1beta1 condition of one of `types`, with any status, severity, reason and message.
pub fn v1beta1_condition_strategy(
    types: impl Strategy<Value = String>,
) -> impl Strategy<Value = V1Beta1Condition> {
    (
        types,
        prop::sample::select(vec!["True", "False", "Unknown"]),
        prop::option::of(prop::sample::select(vec!["Error", "Warning", "Info"])),
        time_strategy(),
        prop::option::of(some_text()),
        prop::option::of(some_text()),
    )
        .prop_map(
            |(type_, status, severity, time, reason, message)| V1Beta1Condition {
                type_,
                status: status.into(),
                severity: severity.map(Into::into),
                last_transition_time: time,
                reason,
                message,
            },
        )
}

/// A metav1 condition of one of `types`, with any status, reason, message and generation.
pub fn metav1_condition_strategy(
    types: impl Strategy<Value = String>,
) -> impl Strategy<Value = Condition> {
    (
        types,
        prop::sample::select(vec!["True", "False", "Unknown"]),
        time_strategy(),
        some_text(),
        text(),
        prop::option::of(1i64..10),
    )
        .prop_map(
            |(type_, status, time, reason, message, generation)| Condition {
                type_,
                status: status.into(),
                last_transition_time: time,
                reason,
                message,
                observed_generation: generation,
            },
        )
}
