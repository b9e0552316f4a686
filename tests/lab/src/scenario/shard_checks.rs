//! `--shards`: the split read at the end of the run, before anything stops (each shard's
//! clusters, its managers' own request counts and peak memory, what its core holds), and the
//! checks of [`crate::shards`] over it: the cores, the Agents' labels, the hosts' agent API,
//! and a host's request to the wrong shard.

use kube::ResourceExt as _;
use manager::runtime::WATCH_FILTER_LABEL;

use super::Scenario;
use super::step_plan::StepPlan;
use crate::cluster_run::ClusterRun;
use crate::managers::Managers;
use crate::memory;
use crate::shards::{
    self, Redirect, Shard, ShardManager, Split, agent_label_problems, host_problems,
    redirect_problem,
};
use crate::steps::Step;

/// The split and what its checks found.
pub(super) async fn check_shards(s: &Scenario<'_>, runs: &[ClusterRun], plan: &StepPlan) -> Split {
    let managers = &s.lab.managers;
    let texts = managers.metrics_texts();
    let installed_at = plan.steps.iter().position(|s| *s == Step::Installed);
    let shards: Vec<Shard> = (0..s.opts.shards)
        .map(|i| {
            let mine: Vec<&ClusterRun> = runs.iter().filter(|r| r.spec.shard == i).collect();
            let (core_clusters, core_hosts) = managers
                .members
                .iter()
                .zip(&texts)
                .find(|(m, _)| m.shard == i && m.binary == crate::managers::CONTROLPLANE)
                .and_then(|(_, text)| text.as_deref())
                .map_or((None, None), shards::core_gauges);
            Shard {
                shard: shards::watch_filter(i),
                clusters: mine.iter().map(|r| r.spec.name.clone()).collect(),
                installed: mine
                    .iter()
                    .filter(|r| installed_at.is_some_and(|at| r.next > at))
                    .count(),
                managers: shard_managers(s, &texts, i),
                core_clusters,
                core_hosts,
                agent_api_url: managers.agent_api_url(i).to_string(),
            }
        })
        .collect();
    let mut split = Split {
        shards,
        redirect: None,
        problems: Vec::new(),
    };
    split.problems = split.core_problems();
    for r in runs {
        split.problems.extend(labels_and_hosts(managers, r));
    }
    match wrong_shard_request(managers, runs).await {
        Ok(Some(r)) => {
            split.problems.extend(redirect_problem(&r));
            split.redirect = Some(r);
        }
        Ok(None) => split
            .problems
            .push("no host of a shard-0 cluster to send to another shard".into()),
        Err(e) => split
            .problems
            .push(format!("the request to the wrong shard: {e:#}")),
    }
    split
}

/// Shard `i`'s managers: each one's own count of its requests and its peak memory.
fn shard_managers(s: &Scenario<'_>, texts: &[Option<String>], i: u32) -> Vec<ShardManager> {
    let managers = &s.lab.managers;
    managers
        .members
        .iter()
        .enumerate()
        .filter(|(_, m)| m.shard == i)
        .map(|(k, m)| ShardManager {
            name: m.name.clone(),
            requests: texts[k]
                .as_deref()
                .map(|t| crate::apimetrics::own_requests(t).values().sum()),
            peak_mib: s
                .memory
                .managers
                .get(k)
                .map_or(0.0, |u| (memory::mib(u.peak_kib) * 10.0).round() / 10.0),
        })
        .collect()
}

/// The cluster's Agents (as last seen) must carry its shard's label, and its hosts must talk
/// to its shard's core.
fn labels_and_hosts(managers: &Managers, r: &ClusterRun) -> Vec<String> {
    let agents: Vec<(String, Option<String>)> = r
        .snap
        .agents
        .iter()
        .map(|a| (a.name_any(), a.labels().get(WATCH_FILTER_LABEL).cloned()))
        .collect();
    let hosts: Vec<(String, String)> = r
        .site
        .agents()
        .into_iter()
        .map(|(name, cfg)| (name.to_string(), cfg.base_url.clone()))
        .collect();
    let owner = managers.agent_api_url(r.spec.shard);
    let mut problems = agent_label_problems(&r.spec.name, r.spec.shard, &agents);
    problems.extend(host_problems(&r.spec.name, r.spec.shard, owner, &hosts));
    problems
}

/// A host of the first shard-0 cluster asks shard 1's agent API for its next instructions,
/// with its own token, as its agent would; the answer is followed by hand once.
async fn wrong_shard_request(
    managers: &Managers,
    runs: &[ClusterRun],
) -> anyhow::Result<Option<Redirect>> {
    let Some((r, (host, cfg))) = runs
        .iter()
        .filter(|r| r.spec.shard == 0)
        .find_map(|r| Some((r, r.site.agents().into_iter().next()?)))
    else {
        return Ok(None);
    };
    let path = format!(
        "{}/infra-envs/{}/hosts/{}/instructions",
        agent_sim::client::API_BASE,
        cfg.infra_env_id,
        cfg.host_id()
    );
    let url = format!("{}{path}", managers.agent_api_url(1));
    let (status, location) = shards::get_unfollowed(&url, &cfg.token).await?;
    let followed_status = match (status, &location) {
        (307, Some(l)) => Some(shards::get_unfollowed(l, &cfg.token).await?.0),
        _ => None,
    };
    Ok(Some(Redirect {
        host: host.to_string(),
        cluster: r.spec.name.clone(),
        url,
        status,
        location,
        owner_url: managers.agent_api_url(0).to_string(),
        followed_status,
    }))
}
