//! The conditions the core writes on its resources, before and after their timestamps: one
//! [`Cond`] per type, stamped into the OpenShift (InfraEnv, Agent) or Hive (AgentClusterInstall)
//! shape with its transition time kept while its status stays.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::common::OpenShiftCondition;
use crate::api::hive::ClusterInstallCondition;

/// A condition before its timestamps are decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cond {
    pub type_: &'static str,
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

pub fn cond(
    type_: &'static str,
    ok: bool,
    reason: &'static str,
    message: impl Into<String>,
) -> Cond {
    Cond {
        type_,
        status: if ok { "True" } else { "False" },
        reason,
        message: message.into(),
    }
}

/// The transition time of a condition: kept while its status stays the same, `now` otherwise.
/// `previous` is the (status, lastTransitionTime) of the same type last written, if any.
fn transition_time(
    previous: Option<(&str, &Option<Time>)>,
    status: &str,
    now: Timestamp,
) -> Option<Time> {
    match previous {
        Some((s, t)) if s == status => t.clone(),
        _ => Some(manager::conditions::api_time(now)),
    }
}

/// Stamps `conds` with their transition times, in either condition shape below: `last` reads
/// a condition written before as (type, status, lastTransitionTime), `build` makes a new one
/// from a [`Cond`] and its transition time.
fn stamp<T>(
    conds: &[Cond],
    previous: &[T],
    now: Timestamp,
    last: impl Fn(&T) -> (&str, &str, &Option<Time>),
    build: impl Fn(&Cond, Option<Time>) -> T,
) -> Vec<T> {
    conds
        .iter()
        .map(|c| {
            let prev = previous
                .iter()
                .map(&last)
                .find(|(type_, _, _)| *type_ == c.type_)
                .map(|(_, status, time)| (status, time));
            build(c, transition_time(prev, c.status, now))
        })
        .collect()
}

/// The InfraEnv/Agent condition shape.
pub fn openshift_conditions(
    conds: &[Cond],
    previous: &[OpenShiftCondition],
    now: Timestamp,
) -> Vec<OpenShiftCondition> {
    stamp(
        conds,
        previous,
        now,
        |p| (&p.type_, &p.status, &p.last_transition_time),
        |c, transition| OpenShiftCondition {
            type_: c.type_.into(),
            status: c.status.into(),
            reason: Some(c.reason.into()),
            message: Some(c.message.clone()),
            last_heartbeat_time: transition.clone(),
            last_transition_time: transition,
        },
    )
}

/// The Hive condition shape of AgentClusterInstall.
pub fn hive_conditions(
    conds: &[Cond],
    previous: &[ClusterInstallCondition],
    now: Timestamp,
) -> Vec<ClusterInstallCondition> {
    stamp(
        conds,
        previous,
        now,
        |p| (&p.type_, &p.status, &p.last_transition_time),
        |c, transition| ClusterInstallCondition {
            type_: c.type_.into(),
            status: c.status.into(),
            reason: Some(c.reason.into()),
            message: Some(c.message.clone()),
            last_probe_time: transition.clone(),
            last_transition_time: transition,
        },
    )
}
