//! Upgrades of an installed cluster, as CAPOA drives them (its ADR 002: one in-place upgrade of
//! the whole cluster by its cluster-version operator). A new `spec.distributionVersion` becomes
//! the workload cluster's `ClusterVersion.spec.desiredUpdate`; the CVO's `status.history` and
//! conditions then say how it goes. Pure: [`decide`] takes what `dereference` read.

use std::cmp::Ordering;
use std::time::Duration;

use manager::conditions::{Desired, Status};
use serde_json::{Value, json};

use super::release::Version;
use manager::controller::PlannedEvent;

/// CAPOA's condition: True once the cluster runs `spec.distributionVersion`.
pub const UPGRADE_COMPLETED: &str = "UpgradeCompleted";
/// CAPI's v1beta2 control-plane condition: True while the cluster moves to a new version.
pub const ROLLING_OUT: &str = "RollingOut";
pub const UPGRADE_IN_PROGRESS: &str = "UpgradeInProgress";
pub const UPGRADE_FAILED: &str = "UpgradeFailed";
/// The name of the one ClusterVersion an OpenShift cluster has.
pub const CLUSTER_VERSION_NAME: &str = "version";
/// How often an upgrade in progress is looked at: the workload API is not watched.
pub const UPGRADE_RECHECK: Duration = Duration::from_secs(30);
/// How often a failed upgrade, or an unreachable workload API, is looked at.
pub const FAILED_RECHECK: Duration = Duration::from_secs(60);

/// One entry of `ClusterVersion.status.history` (newest first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryEntry {
    /// `Completed` or `Partial`.
    pub state: String,
    pub version: String,
    pub image: String,
    /// `completionTime` is set.
    pub finished: bool,
}

/// A ClusterVersion condition that is True, with its message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CvoSays {
    pub reason: String,
    pub message: String,
}

/// The workload cluster's ClusterVersion `version`: what an upgrade follows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterVersion {
    /// `spec.desiredUpdate.version` (or its image when no version is given).
    pub desired_update: Option<String>,
    pub history: Vec<HistoryEntry>,
    /// `Progressing` while True.
    pub progressing: Option<CvoSays>,
    /// `Failing` while True.
    pub failing: Option<CvoSays>,
    /// `ReleaseAccepted` while False: the CVO could not load or verify the requested release.
    pub release_refused: Option<CvoSays>,
}

impl ClusterVersion {
    /// Reads the parts an upgrade follows from the object as the workload API returns it.
    pub fn from_object(object: &Value) -> ClusterVersion {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let update = &object["spec"]["desiredUpdate"];
        let desired_update = [&update["version"], &update["image"]]
            .into_iter()
            .map(text)
            .find(|s| !s.is_empty());
        let status = &object["status"];
        let history = status["history"]
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| HistoryEntry {
                        state: text(&e["state"]),
                        version: text(&e["version"]),
                        image: text(&e["image"]),
                        finished: e["completionTime"].as_str().is_some_and(|t| !t.is_empty()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let condition = |type_: &str, status_: &str| {
            status["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == type_ && c["status"] == status_)
                .map(|c| CvoSays {
                    reason: text(&c["reason"]),
                    message: text(&c["message"]),
                })
        };
        ClusterVersion {
            desired_update,
            history,
            progressing: condition("Progressing", "True"),
            failing: condition("Failing", "True"),
            release_refused: condition("ReleaseAccepted", "False"),
        }
    }

    /// The version the cluster runs: the newest Completed history entry.
    pub fn completed_version(&self) -> Option<&str> {
        self.history
            .iter()
            .find(|e| e.state == "Completed")
            .map(|e| e.version.as_str())
    }

    /// The version an upgrade in progress moves to: the newest history entry while it is
    /// Partial and unfinished (CAPOA also counts `Progressing`).
    pub fn upgrading_to(&self) -> Option<&str> {
        let newest = self.history.first()?;
        (newest.state == "Partial" && !newest.finished || self.progressing.is_some())
            .then_some(newest.version.as_str())
    }
}

/// The workload cluster's ClusterVersion, as `dereference` found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadClusterVersion {
    /// Not asked: the cluster is not installed or has no admin kubeconfig yet.
    NotRead,
    Read(Box<ClusterVersion>),
    /// The API answered, without a ClusterVersion `version`.
    Absent,
    /// The API did not answer; the message says why.
    Unreachable(String),
}

/// `spec.desiredUpdate`, as `oc adm upgrade` writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredUpdate {
    pub version: String,
    /// Empty: the CVO finds the image for `version` in its update graph.
    pub image: String,
    pub force: bool,
}

impl DesiredUpdate {
    /// The merge patch of the ClusterVersion that asks for this update.
    pub fn patch(&self) -> Value {
        let mut update = json!({"version": self.version, "force": self.force});
        if !self.image.is_empty() {
            update["image"] = json!(self.image);
        }
        json!({"spec": {"desiredUpdate": update}})
    }
}

pub struct UpgradeInputs<'a> {
    /// `spec.distributionVersion`.
    pub spec_version: &'a str,
    /// The release image of `spec_version`, pinned by digest when the registry could be read.
    pub release_image: &'a str,
    /// Why the registry will not give the release (reason, message): no upgrade is asked for.
    pub release_problem: Option<(&'static str, &'a str)>,
    /// The install is done (the control plane is available).
    pub installed: bool,
    pub cluster_version: &'a WorkloadClusterVersion,
}

/// What one reconcile does about upgrades.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Upgrade {
    /// Ask the CVO for this update.
    pub request: Option<DesiredUpdate>,
    /// `UpgradeCompleted` and `RollingOut`; empty: keep what they say.
    pub conditions: Vec<Desired>,
    /// `status.distributionVersion`: the version the cluster runs; `None`: keep it.
    pub running: Option<String>,
    pub event: Option<PlannedEvent>,
    pub requeue: Option<Duration>,
}

/// Whether `version` is a GA release, as CAPOA's `IsGA`: no pre-release, or for OKD exactly
/// `okd-scos.<number>`. GA releases are signed and in the CVO's update graph.
pub fn is_ga(version: &Version) -> bool {
    match version.pre.as_deref() {
        None => true,
        Some(pre) => pre
            .strip_prefix("okd-scos.")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
    }
}

/// MAJOR.MINOR.PATCH order; a pre-release of the same numbers sorts before the release.
fn compare(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| match (&a.pre, &b.pre) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) => x.cmp(y),
        })
}

/// The update to ask for: with a digest-pinned image the CVO verifies its signature, and only
/// a non-GA build (unsigned) is forced, as CAPOA; a GA release without a digest is asked for
/// by version alone (the CVO takes the image from its update graph: a tag would fail its
/// signature check).
pub fn desired_update(version: &Version, release_image: &str) -> DesiredUpdate {
    let pinned = release_image.contains("@sha256:");
    let ga = is_ga(version);
    DesiredUpdate {
        version: version.to_string(),
        image: if pinned || !ga {
            release_image.to_string()
        } else {
            String::new()
        },
        force: !ga,
    }
}

fn rolling_out(to: &str, message: String) -> Desired {
    Desired::new(
        ROLLING_OUT,
        Status::True,
        "RollingOut",
        format!("upgrading to {to}: {message}"),
    )
}

fn not_rolling_out() -> Desired {
    Desired::new(ROLLING_OUT, Status::False, "NotRollingOut", "")
}

/// What this reconcile does about upgrades: the checks in order (spec parses, install done,
/// ClusterVersion read and settled), then one upgrade at a time, then the spec against the
/// running version.
pub fn decide(inputs: &UpgradeInputs) -> Upgrade {
    let Ok(spec) = inputs.spec_version.parse::<Version>() else {
        // Refused elsewhere (Available says why); nothing to upgrade to.
        return Upgrade::default();
    };
    if !inputs.installed {
        return Upgrade {
            conditions: vec![not_rolling_out()],
            ..Default::default()
        };
    }
    let cv = match read_cluster_version(inputs.cluster_version) {
        Ok(cv) => cv,
        Err(wait) => return *wait,
    };
    let Some(running) = cv.completed_version().map(str::to_string) else {
        return waiting_for_installed_release();
    };
    let mut out = Upgrade {
        running: Some(running.clone()),
        ..Default::default()
    };
    if let Some(to) = upgrade_running(cv, &spec, &running) {
        follow_running_upgrade(&mut out, cv, to, &spec);
        return out;
    }
    let Ok(running_version) = running.parse::<Version>() else {
        // Never upgrade from a version we cannot compare.
        out.conditions = vec![
            Desired::unknown(
                UPGRADE_COMPLETED,
                "UnknownRunningVersion",
                format!(
                    "the cluster-version operator reports version {running:?}, which is not \
                     MAJOR.MINOR.PATCH; no upgrade is asked for"
                ),
            ),
            not_rolling_out(),
        ];
        return out;
    };
    match compare(&spec, &running_version) {
        Ordering::Equal => {
            out.conditions = vec![
                Desired::true_(UPGRADE_COMPLETED, format!("the cluster runs {spec}")),
                not_rolling_out(),
            ];
        }
        Ordering::Less => {
            out.conditions = vec![
                Desired::false_(
                    UPGRADE_COMPLETED,
                    "DowngradeRefused",
                    format!(
                        "distributionVersion {spec} is older than {running} the cluster runs; \
                         OpenShift clusters are not downgraded: set it back to {running} or newer"
                    ),
                ),
                not_rolling_out(),
            ];
        }
        Ordering::Greater => upgrade_to_spec(&mut out, inputs, cv, &spec, &running),
    }
    out
}

/// The cluster's ClusterVersion, or what to do while it cannot be had: nothing before it is
/// read, wait a minute when the cluster is unreachable or has none yet.
fn read_cluster_version(
    cluster_version: &WorkloadClusterVersion,
) -> Result<&ClusterVersion, Box<Upgrade>> {
    match cluster_version {
        WorkloadClusterVersion::NotRead => Err(Box::default()),
        WorkloadClusterVersion::Unreachable(why) => Err(Box::new(Upgrade {
            conditions: vec![Desired::unknown(
                UPGRADE_COMPLETED,
                "WorkloadAPIUnreachable",
                format!(
                    "cannot read the cluster's ClusterVersion: {why}; trying again in a minute"
                ),
            )],
            requeue: Some(FAILED_RECHECK),
            ..Default::default()
        })),
        WorkloadClusterVersion::Absent => Err(Box::new(Upgrade {
            conditions: vec![
                Desired::unknown(
                    UPGRADE_COMPLETED,
                    "ClusterVersionNotFound",
                    "the cluster has no ClusterVersion `version` yet (its cluster-version \
                     operator writes it); upgrades wait for it",
                ),
                not_rolling_out(),
            ],
            requeue: Some(FAILED_RECHECK),
            ..Default::default()
        })),
        WorkloadClusterVersion::Read(cv) => Ok(cv),
    }
}

/// The CVO is still rolling out the installed release.
fn waiting_for_installed_release() -> Upgrade {
    Upgrade {
        conditions: vec![
            Desired::unknown(
                UPGRADE_COMPLETED,
                "WaitingForClusterVersion",
                "the cluster-version operator has not completed the installed release yet",
            ),
            not_rolling_out(),
        ],
        requeue: Some(UPGRADE_RECHECK),
        ..Default::default()
    }
}

/// The upgrade the CVO is running, which runs to its end first: one at a time. A failing one
/// may be retargeted to another, newer release (as `oc adm upgrade --to` does): then it is not
/// followed, and the spec's release is asked for, once.
fn upgrade_running<'a>(cv: &'a ClusterVersion, spec: &Version, running: &str) -> Option<&'a str> {
    let retargeted = |to: &str| {
        cv.failing.is_some()
            && to != spec.to_string()
            && running
                .parse::<Version>()
                .is_ok_and(|r| compare(spec, &r) == Ordering::Greater)
    };
    cv.upgrading_to().filter(|to| !retargeted(to))
}

/// Reports the running upgrade to `to` (failed or in progress); a different spec waits.
fn follow_running_upgrade(out: &mut Upgrade, cv: &ClusterVersion, to: &str, spec: &Version) {
    let waiting = if to == spec.to_string() {
        String::new()
    } else {
        format!("; distributionVersion {spec} waits until it is done (one upgrade at a time)")
    };
    let progress = cv
        .progressing
        .as_ref()
        .map(|p| p.message.clone())
        .unwrap_or_default();
    let (reason, message) = match &cv.failing {
        Some(f) => (
            UPGRADE_FAILED,
            format!("upgrade to {to} has failed: {}{waiting}", f.message),
        ),
        None => (
            UPGRADE_IN_PROGRESS,
            format!("upgrade to {to} in progress: {progress}{waiting}"),
        ),
    };
    out.conditions = vec![
        Desired::false_(UPGRADE_COMPLETED, reason, message),
        rolling_out(to, progress),
    ];
    out.requeue = Some(if cv.failing.is_some() {
        FAILED_RECHECK
    } else {
        UPGRADE_RECHECK
    });
}

/// The spec is newer than the running release: already asked (wait, or report the CVO's
/// refusal), blocked by the release lookup, or asked for now.
fn upgrade_to_spec(
    out: &mut Upgrade,
    inputs: &UpgradeInputs,
    cv: &ClusterVersion,
    spec: &Version,
    from: &str,
) {
    let asked = cv.desired_update.as_deref();
    if asked.is_some_and(|a| a == spec.to_string() || a == inputs.release_image) {
        already_requested(out, cv, spec, from);
    } else if let Some((reason, message)) = inputs.release_problem {
        out.conditions = vec![
            Desired::false_(UPGRADE_COMPLETED, reason, message),
            not_rolling_out(),
        ];
        out.requeue = Some(FAILED_RECHECK);
    } else {
        request_upgrade(out, inputs, spec, from);
    }
}

/// Asked before; the CVO has not started (or refused the release). Never asked again: that
/// would be a retry storm on a refused release.
fn already_requested(out: &mut Upgrade, cv: &ClusterVersion, spec: &Version, from: &str) {
    // A `Failing` of the upgrade this one retargets is not about this release.
    let failing = cv
        .failing
        .as_ref()
        .filter(|_| cv.upgrading_to().is_none_or(|t| t == spec.to_string()));
    let (reason, message) = match cv.release_refused.as_ref().or(failing) {
        Some(refusal) => (
            UPGRADE_FAILED,
            format!(
                "upgrade to {spec} has failed: the cluster-version operator did not \
                 accept the release: {}",
                refusal.message
            ),
        ),
        None => (
            UPGRADE_IN_PROGRESS,
            format!(
                "upgrade from {from} to {spec} requested; waiting for the \
                 cluster-version operator to start it"
            ),
        ),
    };
    out.requeue = Some(if reason == UPGRADE_FAILED {
        FAILED_RECHECK
    } else {
        UPGRADE_RECHECK
    });
    out.conditions = vec![
        Desired::false_(UPGRADE_COMPLETED, reason, message),
        rolling_out(&spec.to_string(), "requested".into()),
    ];
}

/// Asks the CVO for the spec's release, with an event saying so.
fn request_upgrade(out: &mut Upgrade, inputs: &UpgradeInputs, spec: &Version, from: &str) {
    let request = desired_update(spec, inputs.release_image);
    out.event = Some(PlannedEvent {
        warning: false,
        reason: "UpgradeRequested",
        note: format!(
            "Upgrading from {from} to {spec}: ClusterVersion desiredUpdate set{}",
            if request.image.is_empty() {
                String::new()
            } else {
                format!(" to image {}", request.image)
            }
        ),
    });
    out.conditions = vec![
        Desired::false_(
            UPGRADE_COMPLETED,
            UPGRADE_IN_PROGRESS,
            format!("upgrade from {from} to {spec} requested from the cluster-version operator"),
        ),
        rolling_out(&spec.to_string(), "requested".into()),
    ];
    out.request = Some(request);
    out.requeue = Some(UPGRADE_RECHECK);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cv(object: Value) -> WorkloadClusterVersion {
        WorkloadClusterVersion::Read(Box::new(ClusterVersion::from_object(&object)))
    }

    fn completed(version: &str) -> Value {
        json!({"state": "Completed", "version": version, "image": format!("r:{version}"),
               "startedTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T01:00:00Z"})
    }

    fn partial(version: &str) -> Value {
        json!({"state": "Partial", "version": version, "image": format!("r:{version}"),
               "startedTime": "2026-01-02T00:00:00Z", "completionTime": null})
    }

    fn condition(type_: &str, status: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": "R", "message": message})
    }

    fn decide_for(spec: &str, image: &str, object: Value) -> Upgrade {
        decide(&UpgradeInputs {
            spec_version: spec,
            release_image: image,
            release_problem: None,
            installed: true,
            cluster_version: &cv(object),
        })
    }

    fn upgrade_completed(u: &Upgrade) -> (&str, &str, &str) {
        let c = u
            .conditions
            .iter()
            .find(|c| c.type_ == UPGRADE_COMPLETED)
            .expect("UpgradeCompleted");
        let status = match c.status {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        };
        (status, c.reason.as_str(), c.message.as_str())
    }

    const TAG: &str = "quay.io/openshift-release-dev/ocp-release:4.17.5-x86_64";
    const PINNED: &str = "quay.io/openshift-release-dev/ocp-release@sha256:abc";

    #[test]
    fn what_each_cluster_version_leads_to() {
        let steady = json!({"status": {"history": [completed("4.17.3")],
            "conditions": [condition("Progressing", "False", "Cluster version is 4.17.3")]}});
        let asked = json!({"spec": {"desiredUpdate": {"version": "4.17.5"}},
            "status": {"history": [completed("4.17.3")]}});
        let refused = json!({"spec": {"desiredUpdate": {"version": "4.17.5"}},
            "status": {"history": [completed("4.17.3")], "conditions": [
                condition("ReleaseAccepted", "False", "Retrieving payload failed: manifest unknown")]}});
        let running = json!({"spec": {"desiredUpdate": {"version": "4.17.5"}},
            "status": {"history": [partial("4.17.5"), completed("4.17.3")], "conditions": [
                condition("Progressing", "True", "Working towards 4.17.5: 106 of 841 done (12% complete)")]}});
        let failing = json!({"spec": {"desiredUpdate": {"version": "4.17.5"}},
            "status": {"history": [partial("4.17.5"), completed("4.17.3")], "conditions": [
                condition("Progressing", "True", "Unable to apply 4.17.5: wait has exceeded 40 minutes"),
                condition("Failing", "True", "Cluster operator kube-apiserver is degraded")]}});
        let done = json!({"spec": {"desiredUpdate": {"version": "4.17.5"}},
            "status": {"history": [completed("4.17.5"), completed("4.17.3")], "conditions": [
                condition("Progressing", "False", "Cluster version is 4.17.5")]}});
        let installing = json!({"status": {"history": [partial("4.17.3")]}});

        // (spec, cluster version, UpgradeCompleted status/reason, asks the CVO, running)
        type Row<'a> = (&'a str, Value, (&'a str, &'a str), bool, Option<&'a str>);
        let rows: Vec<Row> = vec![
            (
                "4.17.3",
                steady.clone(),
                ("True", UPGRADE_COMPLETED),
                false,
                Some("4.17.3"),
            ),
            (
                "4.17.5",
                steady.clone(),
                ("False", UPGRADE_IN_PROGRESS),
                true,
                Some("4.17.3"),
            ),
            (
                "4.17.5",
                asked,
                ("False", UPGRADE_IN_PROGRESS),
                false,
                Some("4.17.3"),
            ),
            (
                "4.17.5",
                refused,
                ("False", UPGRADE_FAILED),
                false,
                Some("4.17.3"),
            ),
            (
                "4.17.5",
                running.clone(),
                ("False", UPGRADE_IN_PROGRESS),
                false,
                Some("4.17.3"),
            ),
            (
                "4.18.1",
                running,
                ("False", UPGRADE_IN_PROGRESS),
                false,
                Some("4.17.3"),
            ),
            (
                "4.17.5",
                failing,
                ("False", UPGRADE_FAILED),
                false,
                Some("4.17.3"),
            ),
            (
                "4.17.5",
                done,
                ("True", UPGRADE_COMPLETED),
                false,
                Some("4.17.5"),
            ),
            (
                "4.16.0",
                steady,
                ("False", "DowngradeRefused"),
                false,
                Some("4.17.3"),
            ),
            (
                "4.17.3",
                installing,
                ("Unknown", "WaitingForClusterVersion"),
                false,
                None,
            ),
        ];
        for (i, (spec, object, (status, reason), asks, running)) in rows.into_iter().enumerate() {
            let u = decide_for(spec, TAG, object);
            let (s, r, m) = upgrade_completed(&u);
            assert_eq!((s, r), (status, reason), "row {i}: {m}");
            assert_eq!(u.request.is_some(), asks, "row {i}");
            assert_eq!(u.running.as_deref(), running, "row {i}");
            assert!(
                u.conditions.iter().any(|c| c.type_ == ROLLING_OUT),
                "row {i}"
            );
        }
    }

    #[test]
    fn a_failing_upgrade_can_be_retargeted_once_but_a_running_one_cannot() {
        let failing = json!({"spec": {"desiredUpdate": {"version": "4.17.5"}},
            "status": {"history": [partial("4.17.5"), completed("4.17.3")], "conditions": [
                condition("Failing", "True", "Cluster operator kube-apiserver is degraded")]}});
        // A newer release than the failing one: asked for (the CVO accepts a new target).
        let u = decide_for("4.17.6", TAG, failing.clone());
        assert_eq!(
            u.request.as_ref().map(|r| r.version.as_str()),
            Some("4.17.6")
        );
        assert_eq!(upgrade_completed(&u).1, UPGRADE_IN_PROGRESS);
        // Once asked, never again while the CVO has it; the old target's failure is not
        // reported as the new one's.
        let mut asked = failing.clone();
        asked["spec"]["desiredUpdate"] = json!({"version": "4.17.6"});
        let u = decide_for("4.17.6", TAG, asked);
        assert!(u.request.is_none());
        assert_eq!(upgrade_completed(&u).1, UPGRADE_IN_PROGRESS);
        // Back to what the cluster runs is not an upgrade: the failure stays reported.
        let back = decide_for("4.17.3", TAG, failing);
        assert!(back.request.is_none());
        assert_eq!(upgrade_completed(&back).1, UPGRADE_FAILED);
        // A running (not failing) upgrade is never retargeted.
        let running = json!({"spec": {"desiredUpdate": {"version": "4.17.5"}},
            "status": {"history": [partial("4.17.5"), completed("4.17.3")], "conditions": [
                condition("Progressing", "True", "Working towards 4.17.5")]}});
        assert!(decide_for("4.17.6", TAG, running).request.is_none());
    }

    #[test]
    fn messages_carry_the_cvos_words_and_one_upgrade_waits_for_another() {
        let running = json!({"status": {"history": [partial("4.17.5"), completed("4.17.3")],
            "conditions": [condition("Progressing", "True", "Working towards 4.17.5: 12% complete")]}});
        let u = decide_for("4.18.1", TAG, running);
        let (_, _, message) = upgrade_completed(&u);
        assert_eq!(
            message,
            "upgrade to 4.17.5 in progress: Working towards 4.17.5: 12% complete; \
             distributionVersion 4.18.1 waits until it is done (one upgrade at a time)"
        );
        let failing = json!({"status": {"history": [partial("4.17.5"), completed("4.17.3")],
            "conditions": [condition("Failing", "True", "Cluster operator kube-apiserver is degraded")]}});
        let u = decide_for("4.17.5", TAG, failing);
        assert_eq!(
            upgrade_completed(&u).2,
            "upgrade to 4.17.5 has failed: Cluster operator kube-apiserver is degraded"
        );
        assert_eq!(
            u.requeue,
            Some(FAILED_RECHECK),
            "a failure is not polled fast"
        );
    }

    #[test]
    fn the_update_asked_for_depends_on_the_digest_and_ga() {
        let v = |s: &str| s.parse::<Version>().unwrap();
        assert_eq!(
            desired_update(&v("4.17.5"), PINNED),
            DesiredUpdate {
                version: "4.17.5".into(),
                image: PINNED.into(),
                force: false
            }
        );
        assert_eq!(
            desired_update(&v("4.17.5"), TAG),
            DesiredUpdate {
                version: "4.17.5".into(),
                image: String::new(),
                force: false
            }
        );
        let rc = "quay.io/openshift-release-dev/ocp-release:4.18.0-rc.1-x86_64";
        assert_eq!(
            desired_update(&v("4.18.0-rc.1"), rc),
            DesiredUpdate {
                version: "4.18.0-rc.1".into(),
                image: rc.into(),
                force: true
            }
        );
        assert!(is_ga(&v("4.19.0-okd-scos.6")));
        assert!(!is_ga(&v("4.19.0-okd-scos.ec.6")));
        let patch = desired_update(&v("4.17.5"), PINNED).patch();
        assert_eq!(
            patch,
            json!({"spec": {"desiredUpdate": {"version": "4.17.5", "image": PINNED, "force": false}}})
        );
    }

    #[test]
    fn before_the_install_and_without_the_workload_api_nothing_is_asked() {
        let steady = cv(json!({"status": {"history": [completed("4.17.3")]}}));
        let not_installed = decide(&UpgradeInputs {
            spec_version: "4.17.5",
            release_image: TAG,
            release_problem: None,
            installed: false,
            cluster_version: &steady,
        });
        assert!(not_installed.request.is_none());
        for unreadable in [
            WorkloadClusterVersion::Unreachable("connection refused".into()),
            WorkloadClusterVersion::Absent,
            WorkloadClusterVersion::NotRead,
        ] {
            let u = decide(&UpgradeInputs {
                spec_version: "4.17.5",
                release_image: TAG,
                release_problem: None,
                installed: true,
                cluster_version: &unreadable,
            });
            assert!(u.request.is_none(), "{unreadable:?}");
            assert!(u.running.is_none(), "{unreadable:?}");
        }
    }
}
