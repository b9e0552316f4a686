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
        opts,
        failing,
        downgrade,
        start,
        n,
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
            match etcd_operator::member_secrets_left(workload, &node).await {
                Ok(left) if left.is_empty() => Ok(()),
                Ok(left) => Err(anyhow!(
                    "{node}'s etcd member is gone but its certificate Secrets are not: {}",
                    left.join(", ")
                )),
                Err(e) => Err(e),
            }
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
        (Step::HostFailed, _) => {
            let master = failing != Some(Failing::Worker);
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
            match testbed::resources::apply_all(client, vec![mhc]).await {
                Err(e) => Err(e).context("applying the MachineHealthCheck"),
                Ok(_) => {
                    let mut result = Ok(());
                    for named in fail_hosts(opts.fail_host.as_deref().unwrap_or_default()) {
                        let host = match role_keyword(&named) {
                            Some(m) => r
                                .site
                                .running_host_not_failed(if m { "master" } else { "worker" })
                                .unwrap_or(named),
                            None => named,
                        };
                        match r.site.fail_host(&host).await {
                            Ok(f) => println!(
                                "{} site: {host}'s kubelet stopped; Node {} Ready Unknown (\"Kubelet stopped posting node status.\")",
                                stamp(start),
                                f.node
                            ),
                            Err(e) => {
                                result = Err(e);
                                break;
                            }
                        }
                    }
                    result
                }
            }
        }
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
            let masters = r.spec.masters;
            print_scaling(r, pre, start);
            println!(
                "{} {pre}etcd members: {}; setting {}'s spec.replicas back to {masters}",
                stamp(start),
                r.site.etcd.describe(),
                r.spec.control_plane_name()
            );
            r.members_scaled_up = r.site.etcd.names();
            let back = control_plane_scaling::set_replicas(client, &r.spec, masters);
            match (back.await, step) {
                // One extra Machine goes by hand, as a user might delete it: its
                // etcd member must leave through the control plane's pre-terminate
                // hook; the control plane picks the other one itself.
                (Ok(()), Step::ControlPlaneScaledUp) => {
                    let machine = format!("{}-{masters}", r.spec.control_plane_name());
                    println!(
                        "{} {pre}deleting Machine {machine} by hand (its etcd member leaves through the control plane's pre-terminate hook)",
                        stamp(start)
                    );
                    control_plane_scaling::delete_machine(client, &r.spec, &machine).await
                }
                (other, _) => other,
            }
        }
        (Step::ControlPlaneScaledBack, _) => {
            println!(
                "{} {pre}etcd members now: {}",
                stamp(start),
                r.site.etcd.describe()
            );
            let mut result = Ok(());
            for node in control_plane_scaling::removed(&r.members_scaled_up, &r.site) {
                match etcd_operator::member_secrets_left(workload, &node).await {
                    Ok(left) if left.is_empty() => {}
                    Ok(left) => {
                        result = Err(anyhow!(
                            "{node}'s etcd member is gone but its certificate Secrets are not: {}",
                            left.join(", ")
                        ));
                        break;
                    }
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            result
        }
        (Step::UpgradeRequested, _) => {
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
                if opts.upgrade.as_ref().is_some_and(|u| u.fails) {
                    " (the simulated cluster-version operator fails it)"
                } else {
                    ""
                }
            );
            match request_upgrade(client, &r.spec, &to).await {
                // A downgrade must be refused at admission, with its reason.
                Err(e) if downgrade => {
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
                Ok(()) if downgrade => Err(anyhow::anyhow!(
                    "the downgrade to {to} was accepted; admission must refuse it"
                )),
                other => other,
            }
        }
        _ => Ok(()),
    }
}
