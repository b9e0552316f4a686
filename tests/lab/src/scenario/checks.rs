//! Once the passes ended: what chaos left down started again, and the checks every run makes
//! (no duplicates, image mode's logs bundle, RBAC, the API requests counted, no secret where
//! it must not be). The first problem found becomes the run's failure when it had none.

use std::time::Duration;

use kube::Client;

use super::Scenario;
use super::chaos_kills::{chaos_finish, describe_planned};
use super::step_plan::StepPlan;
use super::waiting::Waiting;
use crate::cluster_run::ClusterRun;
use crate::manifests::ClusterSpec;
use crate::steps::Step;
use crate::testbeds::Lab;
use crate::{ChaosReport, ImageModeRun, apimetrics, chaos, managers, mco, secrets, stamp};

/// What the checks found, for the summary and the report.
pub(crate) struct Findings {
    /// Why the run failed: the passes' failure, else the first check that failed.
    pub failure: Option<String>,
    pub chaos: Option<ChaosReport>,
    /// InfraEnvs, Machines or Agents seen more often at once than the cluster can have.
    pub duplicates: Vec<String>,
    /// `--chaos` restarted the management apiserver: its counters say nothing of the run.
    pub apiserver_restarted: bool,
    pub api: Option<apimetrics::ApiRequests>,
    pub secrets: Option<secrets::Checked>,
    /// `clusterctl describe cluster` of the one cluster.
    pub describe: Option<String>,
    /// `--shards`: the split and what its checks found.
    pub shards: Option<crate::shards::Split>,
}

/// The managers' request counters, as read before the clusters existed.
type ApiCounts = Option<(apimetrics::Counts, apimetrics::Counts)>;

pub(super) async fn after_the_run(
    s: &mut Scenario<'_>,
    w: &mut Waiting,
    runs: &[ClusterRun],
    plan: &StepPlan,
    failure: Option<String>,
    api_before: ApiCounts,
) -> Findings {
    let mut failure = failure;
    let chaos = finish_chaos(s, w, plan, &mut failure).await;
    let duplicates = no_duplicates(s, runs, &mut failure);
    check_logs_bundles(s, runs, &mut failure).await;
    check_forbidden(s, &mut failure);
    s.memory.sample(&s.lab.managers.pids());
    let apiserver_restarted = chaos
        .as_ref()
        .is_some_and(|c| c.kills.iter().any(|k| k.what == chaos::Target::ApiServer));
    let api = api_requests(s, runs, api_before.filter(|_| !apiserver_restarted)).await;
    let shards = match s.opts.shards {
        0 | 1 => None,
        _ => Some(super::shard_checks::check_shards(s, runs, plan).await),
    };
    if let Some(p) = shards.as_ref().and_then(|sp| sp.problems.first())
        && failure.is_none()
    {
        failure = Some(format!("shards: {p}"));
    }
    // After the API requests were read, so that the check's own reads are not counted.
    let secrets = check_secrets(s, runs, plan, &mut failure).await;
    let describe = match runs {
        [r] => clusterctl_describe(&s.lab, &r.spec).await,
        _ => None,
    };
    Findings {
        failure,
        chaos,
        duplicates,
        apiserver_restarted,
        api,
        secrets,
        describe,
        shards,
    }
}

/// Whatever chaos left down is started again, and must come back; the kills' waits for the
/// next milestone measured.
async fn finish_chaos(
    s: &mut Scenario<'_>,
    w: &mut Waiting,
    plan: &StepPlan,
    failure: &mut Option<String>,
) -> Option<ChaosReport> {
    let c = w.chaos.as_mut()?;
    if let Err(e) = chaos_finish(c, &mut s.lab, s.start).await
        && failure.is_none()
    {
        *failure = Some(format!("chaos: {e:#}"));
    }
    let milestone_times: Vec<Duration> = w.milestones.iter().map(|(at, _)| *at).collect();
    c.measure_waits(&milestone_times);
    let not_carried_out: Vec<String> = c
        .pending()
        .iter()
        .map(|p| describe_planned(p, &s.lab.managers, &plan.steps))
        .collect();
    Some(ChaosReport {
        seed: c.seed,
        kills: c.kills.clone(),
        not_carried_out,
    })
}

/// No restart may duplicate an InfraEnv, Machine or Agent (checked on every run).
fn no_duplicates(
    s: &Scenario<'_>,
    runs: &[ClusterRun],
    failure: &mut Option<String>,
) -> Vec<String> {
    let duplicates: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            let pre = s.prefix(&r.spec);
            r.max_seen
                .duplicates(&r.spec, r.servers.len())
                .into_iter()
                .map(move |d| format!("{pre}{d}"))
        })
        .collect();
    if !duplicates.is_empty() && failure.is_none() {
        *failure = Some(format!("duplicates: {}", duplicates.join("; ")));
    }
    duplicates
}

/// Image mode's rollout reaches the cluster's logs bundle: downloaded as a user would (the
/// AgentClusterInstall's logsURL) and kept in the lab directory.
async fn check_logs_bundles(s: &Scenario<'_>, runs: &[ClusterRun], failure: &mut Option<String>) {
    let bundle_expected = match s.opts.image_mode {
        Some(ImageModeRun::Pools) => Some("RolledOut"),
        Some(ImageModeRun::FailedBuild) => Some("RolloutFailed"),
        _ => None,
    };
    let Some(reason) = bundle_expected else {
        return;
    };
    if failure.is_some() {
        return;
    }
    for r in runs {
        let pre = s.prefix(&r.spec);
        let Some(aci) = &r.snap.aci else {
            continue;
        };
        let into = s.opts.dir.join(format!("{}-logs-bundle.tar", r.spec.name));
        match mco::fetch_logs_bundle(aci, &s.lab.managers.trust, &into).await {
            Ok(b) if b.shows(reason) => println!(
                "{} {pre}logs bundle {}: image-mode.yaml says {}",
                stamp(s.start),
                into.display(),
                b.describe()
            ),
            Ok(b) => {
                *failure = Some(format!(
                    "{pre}the logs bundle's image-mode.yaml does not show {reason}: {}",
                    b.describe()
                ));
            }
            Err(e) => *failure = Some(format!("{pre}the logs bundle: {e:#}")),
        }
    }
}

/// A missing RBAC rule of the shipped manifests shows as `forbidden` in a manager's pod's log:
/// a failure, not a retry. (As processes the managers are bound to cluster-admin, and a
/// restarted apiserver (`--chaos all`) answers 403 until its RBAC caches sync: nothing to
/// learn there.)
fn check_forbidden(s: &Scenario<'_>, failure: &mut Option<String>) {
    let forbidden = if s.lab.managers.as_pods() {
        s.lab.managers.forbidden()
    } else {
        Vec::new()
    };
    if !forbidden.is_empty() && failure.is_none() {
        *failure = Some(format!(
            "RBAC: our managers were refused: {}",
            forbidden.join(" | ")
        ));
    }
}

/// The requests the apiservers counted since `before`, by client (`None` when a read failed,
/// or the counters started again).
async fn api_requests(
    s: &Scenario<'_>,
    runs: &[ClusterRun],
    before: ApiCounts,
) -> Option<apimetrics::ApiRequests> {
    let ((m0, w0), (m1, w1)) = match (before, read_api(&s.client, &s.lab.workload.client).await) {
        (Some(before), Some(after)) => (before, after),
        _ => return None,
    };
    let management = m1.since(&m0);
    Some(apimetrics::ApiRequests {
        hosts: runs.iter().map(|r| r.servers.len() as u64).sum(),
        clients: apimetrics::clients(
            &management.by_flow_schema,
            &[
                (
                    managers::CONTROLPLANE,
                    "controlplane-provider (with the embedded assisted-core)",
                ),
                (managers::BOOTSTRAP, "bootstrap-provider"),
                (
                    apimetrics::LAB,
                    "the lab: its watches and a version probe every 0.5 s, the simulated site, applying and scaling",
                ),
            ],
        ),
        management,
        workload: w1.since(&w0),
        reconciles: s.lab.managers.reconciles(),
        own: s.lab.managers.own_requests(),
    })
}

/// No pull secret, kubeadmin password or admin kubeconfig key may show in our managers' logs,
/// the Events, the status of our and the assisted kinds or our managers' /metrics.
async fn check_secrets(
    s: &Scenario<'_>,
    runs: &[ClusterRun],
    plan: &StepPlan,
    failure: &mut Option<String>,
) -> Option<secrets::Checked> {
    let clusters: Vec<(String, String)> = runs
        .iter()
        .map(|r| (r.spec.ns.clone(), r.spec.name.clone()))
        .collect();
    let installs = plan.steps.contains(&Step::Installed);
    match secrets::check(&s.client, &s.lab.managers, &clusters, installs).await {
        Ok(c) => {
            if let Some(p) = c.problem()
                && failure.is_none()
            {
                *failure = Some(p);
            }
            Some(c)
        }
        Err(e) => {
            if failure.is_none() {
                *failure = Some(format!("secrets: could not check: {e:#}"));
            }
            None
        }
    }
}

/// Both apiservers' request counters (management, workload); `None`, logged, when either
/// cannot be read.
pub(super) async fn read_api(
    management: &Client,
    workload: &Client,
) -> Option<(apimetrics::Counts, apimetrics::Counts)> {
    match tokio::try_join!(
        apimetrics::Counts::read(management),
        apimetrics::Counts::read(workload)
    ) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!("reading the apiservers' metrics: {e:#}");
            None
        }
    }
}

/// `clusterctl describe cluster --show-templates` of the cluster, as Cluster API sees it (its
/// control plane's version, infrastructure template and conditions); `None` when it failed.
pub(super) async fn clusterctl_describe(lab: &Lab, spec: &ClusterSpec) -> Option<String> {
    let out = tokio::process::Command::new(lab.tb.cache.bin("clusterctl"))
        .args([
            "describe",
            "cluster",
            &spec.name,
            "-n",
            &spec.ns,
            "--show-templates",
        ])
        .env("KUBECONFIG", &lab.tb.kubeconfig)
        .env("CLUSTERCTL_DISABLE_VERSIONCHECK", "true")
        .output()
        .await;
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => {
            tracing::warn!(
                "clusterctl describe: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            None
        }
        Err(e) => {
            tracing::warn!("clusterctl describe: {e}");
            None
        }
    }
}
