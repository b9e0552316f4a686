//! What the lab does once a step is reached: apply the cluster, scale it, request an upgrade,
//! break a host, and print what the step showed. One cluster's run at a time.

use std::time::Instant;

use anyhow::{Context as _, Result, anyhow};
use kube::Client;

use crate::cluster_ops::{
    control_plane_condition, fail_hosts, machine_health_check, print_remediating, print_scaling,
    request_upgrade, role_keyword, scale_workers, upgrade_to,
};
use crate::cluster_run::ClusterRun;
use crate::steps::{Failing, Step};
use crate::{Day2Times, Options, control_plane_scaling, cvo, etcd_operator, stamp};

/// What every step's action may use besides the cluster's run.
pub(crate) struct Env<'a> {
    /// The management cluster.
    pub client: &'a Client,
    /// The workload cluster.
    pub workload: &'a Client,
    pub opts: &'a Options,
    pub failing: Option<Failing>,
    /// `--upgrade-to` names an older release than the cluster's.
    pub downgrade: bool,
    pub start: Instant,
    /// How many clusters run.
    pub n: u32,
}

/// Applies cluster `r`'s objects (its hosts are available).
pub(crate) async fn apply_cluster(
    client: &Client,
    r: &ClusterRun,
    start: Instant,
    n: u32,
) -> Result<()> {
    let cluster = &r.spec.name;
    testbed::resources::apply_all(client, r.objects.clone())
        .await
        .with_context(|| format!("applying cluster {cluster}"))?;
    let line = format!("{} applied cluster {cluster}: {}", stamp(start), r.applied);
    crate::fleet::say(n, line);
    Ok(())
}

/// The action of `step`, just reached by `r` (`pre` prefixes its lines with the cluster's
/// name when several run).
pub(crate) async fn after_step(
    step: Step,
    r: &mut ClusterRun,
    pre: &str,
    env: &Env<'_>,
) -> Result<()> {
    let Env {
        client,
        workload,
        failing,
        start,
        n,
        ..
    } = *env;
    match (step, &r.spec.day2) {
        (Step::HostsAvailable, _) => apply_cluster(client, r, start, n).await,
        (Step::MachinesRunning, Some((md, workers))) => {
            let line = format!(
                "{} scaling {md} to {} for a day-2 worker",
                stamp(start),
                workers + 1
            );
            crate::fleet::say(n, line);
            r.day2 = Some(Day2Times {
                scaled_up: start.elapsed(),
                node_ready: None,
                installed: None,
            });
            scale_workers(client, &r.spec, workers + 1).await
        }
        (Step::Day2Installed, Some((md, workers))) if n == 1 => {
            println!("{} scaling {md} back to {workers}", stamp(start));
            scale_workers(client, &r.spec, *workers).await
        }
        // With several clusters the day-2 workers are removed together, once
        // every cluster has its own (below): baremetal-operator's fixture
        // provisioner keeps one state for all hosts, and a host provisioning while
        // another deprovisions can flip it back and forth for minutes.
        (Step::Day2Installed, Some(_)) => {
            r.scale_down_pending = true;
            Ok(())
        }
        (Step::Upgraded | Step::UpgradeFailed, _) => {
            print_upgrade_conditions(r, pre, start);
            Ok(())
        }
        (Step::Remediated, _) if failing == Some(Failing::Master) => {
            let node = r
                .site
                .failed
                .first()
                .map(|f| f.node.clone())
                .unwrap_or_default();
            println!(
                "{} {pre}etcd members now: {} ({node}'s removed)",
                stamp(start),
                r.site.etcd.describe()
            );
            no_member_secrets_left(workload, &node).await
        }
        (Step::Replaced | Step::RemediationHeld, _)
            if failing.is_some_and(|f| f != Failing::Worker) =>
        {
            println!(
                "{} {pre}etcd members: {}",
                stamp(start),
                r.site.etcd.describe()
            );
            print_remediating(r, pre, start);
            Ok(())
        }
        (Step::RemediationReported, _) => {
            print_remediating(r, pre, start);
            Ok(())
        }
        (Step::HostFailed, _) => fail_hosts_under_a_health_check(r, pre, env).await,
        (Step::ControlPlaneScaleRequested, _) => {
            let to = r.spec.control_plane_to.unwrap_or_default();
            println!(
                "{} {pre}etcd members: {}; setting {}'s spec.replicas to {to}",
                stamp(start),
                r.site.etcd.describe(),
                r.spec.control_plane_name()
            );
            control_plane_scaling::set_replicas(client, &r.spec, to).await
        }
        (Step::ControlPlaneScaledUp | Step::ControlPlaneScaleRefused, _) => {
            scale_control_plane_back(step, r, pre, env).await
        }
        (Step::ControlPlaneScaledBack, _) => {
            println!(
                "{} {pre}etcd members now: {}",
                stamp(start),
                r.site.etcd.describe()
            );
            for node in control_plane_scaling::removed(&r.members_scaled_up, &r.site) {
                no_member_secrets_left(workload, &node).await?;
            }
            Ok(())
        }
        (Step::UpgradeRequested, _) => request_the_upgrade(r, pre, env).await,
        _ => Ok(()),
    }
}

/// What the control plane (and, over a ClusterClass, the Cluster) says of the upgrade.
fn print_upgrade_conditions(r: &ClusterRun, pre: &str, start: Instant) {
    if let Some((status, reason, message)) = r
        .snap
        .control_plane
        .as_ref()
        .and_then(|c| control_plane_condition(c, "UpgradeCompleted"))
    {
        println!(
            "{} {pre}{}: UpgradeCompleted {status} {reason}: {message}",
            stamp(start),
            r.spec.control_plane_name()
        );
    }
    if let Some((status, reason, message)) = r
        .snap
        .cluster
        .as_ref()
        .filter(|_| r.spec.cluster_class)
        .and_then(|c| control_plane_condition(c, "TopologyReconciled"))
    {
        println!(
            "{} {pre}Cluster {}: TopologyReconciled {status} {reason}{}{message}",
            stamp(start),
            r.spec.name,
            if message.is_empty() { "" } else { ": " }
        );
    }
}

/// A removed etcd member's certificate Secrets must go with it.
async fn no_member_secrets_left(workload: &Client, node: &str) -> Result<()> {
    let left = etcd_operator::member_secrets_left(workload, node).await?;
    if left.is_empty() {
        Ok(())
    } else {
        Err(anyhow!(
            "{node}'s etcd member is gone but its certificate Secrets are not: {}",
            left.join(", ")
        ))
    }
}

/// `--fail-host`: a MachineHealthCheck over the failing hosts' Machines, then their kubelets
/// stopped (a role keyword names a running host of that role).
async fn fail_hosts_under_a_health_check(
    r: &mut ClusterRun,
    pre: &str,
    env: &Env<'_>,
) -> Result<()> {
    let start = env.start;
    let master = env.failing != Some(Failing::Worker);
    if master {
        println!(
            "{} {pre}etcd members: {}",
            stamp(start),
            r.site.etcd.describe()
        );
    }
    let mhc = machine_health_check(&r.spec, master);
    println!(
        "{} applied MachineHealthCheck {} (Node Ready Unknown or False for 10 s: unhealthy)",
        stamp(start),
        mhc["metadata"]["name"].as_str().unwrap_or_default()
    );
    testbed::resources::apply_all(env.client, vec![mhc])
        .await
        .context("applying the MachineHealthCheck")?;
    for named in fail_hosts(env.opts.fail_host.as_deref().unwrap_or_default()) {
        let host = match role_keyword(&named) {
            Some(m) => r
                .site
                .running_host_not_failed(if m { "master" } else { "worker" })
                .unwrap_or(named),
            None => named,
        };
        let f = r.site.fail_host(&host).await?;
        println!(
            "{} site: {host}'s kubelet stopped; Node {} Ready Unknown (\"Kubelet stopped posting node status.\")",
            stamp(start),
            f.node
        );
    }
    Ok(())
}

/// The control plane scaled up (or refused to): its replicas set back, and after a scale-up
/// one extra Machine deleted by hand, as a user might: its etcd member must leave through the
/// control plane's pre-terminate hook; the control plane picks the other one itself.
async fn scale_control_plane_back(
    step: Step,
    r: &mut ClusterRun,
    pre: &str,
    env: &Env<'_>,
) -> Result<()> {
    let (client, start) = (env.client, env.start);
    let masters = r.spec.masters;
    print_scaling(r, pre, start);
    println!(
        "{} {pre}etcd members: {}; setting {}'s spec.replicas back to {masters}",
        stamp(start),
        r.site.etcd.describe(),
        r.spec.control_plane_name()
    );
    r.members_scaled_up = r.site.etcd.names();
    control_plane_scaling::set_replicas(client, &r.spec, masters).await?;
    if step != Step::ControlPlaneScaledUp {
        return Ok(());
    }
    let machine = format!("{}-{masters}", r.spec.control_plane_name());
    println!(
        "{} {pre}deleting Machine {machine} by hand (its etcd member leaves through the control plane's pre-terminate hook)",
        stamp(start)
    );
    control_plane_scaling::delete_machine(client, &r.spec, &machine).await
}

/// `--upgrade-to`: the version edited (the control plane's, or the Cluster's topology over a
/// ClusterClass); a downgrade must be refused at admission, with its reason.
async fn request_the_upgrade(r: &ClusterRun, pre: &str, env: &Env<'_>) -> Result<()> {
    let start = env.start;
    let to = upgrade_to(&r.spec).to_string();
    let edit = if r.spec.cluster_class {
        format!(
            "setting Cluster {}'s topology version to {} and its openshiftVersion variable",
            r.spec.name,
            cvo::kubernetes_of(&to)
        )
    } else {
        format!(
            "setting {}'s distributionVersion",
            r.spec.control_plane_name()
        )
    };
    println!(
        "{} {edit} to {to}{}",
        stamp(start),
        if env.opts.upgrade.as_ref().is_some_and(|u| u.fails) {
            " (the simulated cluster-version operator fails it)"
        } else {
            ""
        }
    );
    match request_upgrade(env.client, &r.spec, &to).await {
        Err(e) if env.downgrade => {
            // The apiserver's answer: the webhook's message.
            let why = e
                .chain()
                .find_map(|c| match c.downcast_ref::<kube::Error>() {
                    Some(kube::Error::Api(s)) => Some(s.message.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| format!("{e:#}"));
            if why.contains("not downgraded") {
                println!("{} {pre}refused: {why}", stamp(start));
                Ok(())
            } else {
                Err(e.context("the downgrade was refused, but not as one"))
            }
        }
        Ok(()) if env.downgrade => Err(anyhow::anyhow!(
            "the downgrade to {to} was accepted; admission must refuse it"
        )),
        other => other,
    }
}
