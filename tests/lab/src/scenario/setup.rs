//! Before the clusters exist: the flags checked, the clusters planned, the testbeds and managers
//! started, and each cluster's BareMetalHosts registered with its simulated site.

use std::time::Instant;

use anyhow::{Context as _, Result};

use super::Scenario;
use crate::cluster_run::ClusterRun;
use crate::clusterfile::ClusterFile;
use crate::memory::Memory;
use crate::plans::{Plan, describe_file, plan_file, plan_generated};
use crate::testbeds::start_lab;
use crate::{
    Disconnected, ImageModeRun, MAX_CLUSTERS, Options, Topology, generate, manifests, mco, mirror,
    stamp,
};

/// How many clusters run, once the flags that need one cluster (or a small one) are checked.
pub(super) fn clusters_to_run(opts: &Options) -> Result<u32> {
    let n = if opts.cluster_file.is_some() {
        1
    } else {
        opts.clusters.max(1)
    };
    if n > MAX_CLUSTERS {
        anyhow::bail!("--clusters: at most {MAX_CLUSTERS}");
    }
    if opts.scale_control_plane.is_some() && (n > 1 || opts.cluster_file.is_some()) {
        anyhow::bail!(
            "--scale-control-plane: one cluster the lab generates (the lab's clusters share one workload apiserver, so one etcd member list)"
        );
    }
    opts.refuse_shards()?;
    if n > 1 && opts.upgrade.is_some() {
        anyhow::bail!(
            "--upgrade-to: one cluster at a time (the lab's clusters share one workload apiserver, so one ClusterVersion)"
        );
    }
    if opts.cluster_file.is_none()
        && opts.topology == Topology::ThreePlusTwo
        && opts.workers > manifests::MAX_WORKERS
    {
        anyhow::bail!(
            "--workers {}: at most {} workers per cluster (a cluster's worker hosts, the day-2 spare included, get {} agent-sim profile indexes; a larger cluster runs with --cluster-file)",
            opts.workers,
            manifests::MAX_WORKERS,
            manifests::INDEX_STRIDE
        );
    }
    Ok(n)
}

/// The clusters' plans (from `--cluster-file`, or generated with `clusterctl`) and where they
/// came from, for the output.
pub(super) async fn plan_clusters(
    opts: &Options,
    n: u32,
    start: Instant,
) -> Result<(Vec<Plan>, String)> {
    Ok(match &opts.cluster_file {
        Some(path) => {
            let f = ClusterFile::read(path)?;
            let plan = plan_file(&f)?;
            describe_file(&f, &plan, start);
            (vec![plan], format!("cluster file {}", path.display()))
        }
        None => {
            let clusterctl = generate::clusterctl()?;
            let mut plans = Vec::new();
            for c in 0..n {
                plans.push(plan_generated(opts, c, n, &clusterctl, start).await?);
            }
            (
                plans,
                format!(
                    "{} (clusterctl generate cluster)",
                    if opts.cluster_class {
                        generate::TEMPLATE_TOPOLOGY
                    } else {
                        generate::template(opts.topology, opts.okd)
                    }
                ),
            )
        }
    })
}

/// Starts the testbeds and the managers (and, for `--disconnected`, the mirror registry).
pub(super) async fn start_testbeds(
    opts: &Options,
    start: Instant,
    n: u32,
    source: String,
) -> Result<Scenario<'_>> {
    // `--disconnected`: the mirror's images first (the core is started naming them by
    // digest), its https front once the lab is up (with pods, on the node's address).
    let loaded = match opts.disconnected {
        Some(_) => Some(mirror::Loaded::start(generate::OPENSHIFT_VERSION)?),
        None => None,
    };
    let core_extra = loaded
        .as_ref()
        .map(mirror::Loaded::core_args)
        .unwrap_or_default();
    let lab = start_lab(opts, start, &core_extra).await?;
    let mirror = match loaded {
        Some(l) => Some(open_mirror(opts, start, l).await?),
        None => None,
    };
    println!(
        "{} lab directory {} (management: {}, workload: {})",
        stamp(start),
        opts.dir.display(),
        lab.tb.dir.display(),
        lab.workload.dir.display()
    );
    let names: Vec<String> = lab
        .managers
        .members
        .iter()
        .map(|m| m.memory_name())
        .collect();
    let mut memory = Memory::new(&names.iter().map(String::as_str).collect::<Vec<_>>());
    memory.sample(&lab.managers.pids());
    Ok(Scenario {
        opts,
        start,
        n,
        source,
        client: lab.client.clone(),
        mirror,
        lab,
        memory,
    })
}

/// The mirror registry's https front, on the address the hosts reach it at.
async fn open_mirror(opts: &Options, start: Instant, l: mirror::Loaded) -> Result<mirror::Mirror> {
    let ip = if opts.managers_as_pods {
        testbed::node::NODE_IP
    } else {
        "127.0.0.2"
    };
    let m = l.open(ip).await?;
    println!(
        "{} mirror registry https://{} (the test bed's crane registry behind TLS with its own CA and a password): {} and the assisted images only under its mirror paths; the core hands out {}, {} and {}",
        stamp(start),
        m.host(),
        m.images.release,
        m.images.agent,
        m.images.installer,
        m.images.controller
    );
    Ok(m)
}

/// Each cluster's manifests adjusted to the flags, its BareMetalHosts applied and its
/// simulated site made.
pub(super) async fn register_sites(s: &Scenario<'_>, plans: Vec<Plan>) -> Result<Vec<ClusterRun>> {
    let opts = s.opts;
    let mut runs = Vec::new();
    for mut plan in plans {
        plan.spec.upgrade.clone_from(&opts.upgrade);
        adjust_manifests(s, &mut plan)?;
        let name = plan.spec.name.clone();
        let hosts = testbed::resources::parse_yaml(&plan.hosts_yaml)?;
        testbed::resources::apply_all(&s.client, hosts)
            .await
            .with_context(|| format!("applying the BareMetalHosts of {name}"))?;
        let mut run = ClusterRun::new(
            plan,
            &s.client,
            &s.lab.workload.client,
            opts.speed,
            &s.lab.managers.trust,
        );
        run.site = run.site.with_kubelet_network(s.lab.network.clone());
        if opts.disconnected == Some(Disconnected::Mirror) {
            run.site = run.site.with_pulls();
        }
        runs.push(run);
    }
    Ok(runs)
}

/// `--image-mode` puts the cluster's pools on pre-built images; `--disconnected` points it
/// at the mirror; `--shards` labels it for its shard.
fn adjust_manifests(s: &Scenario<'_>, plan: &mut Plan) -> Result<()> {
    let opts = s.opts;
    let name = plan.spec.name.clone();
    if opts.shards > 1 {
        crate::shards::label_for_shard(&mut plan.objects, plan.spec.shard);
    }
    if let Some(how) = opts.image_mode {
        let pools: &[&str] = if plan.spec.day2.is_some() || plan.spec.workers > 0 {
            &["master", "worker"]
        } else {
            &["master"]
        };
        let ns = plan.spec.ns.clone();
        mco::make_image_mode(&mut plan.objects, &ns, pools, how == ImageModeRun::TagImage)
            .with_context(|| format!("putting {name} in image mode"))?;
    }
    if let Some(m) = &s.mirror {
        let conf = match opts.disconnected {
            Some(Disconnected::BrokenConfigMap) => mirror::broken_registries_conf(m.host()),
            _ => m.registries_conf(),
        };
        let (host, auth) = m.auth();
        mirror::make_disconnected(
            &mut plan.objects,
            mirror::config_map(&plan.spec.ns, &conf, m.ca_pem()),
            (&host, &auth),
        )
        .with_context(|| format!("making {name} disconnected"))?;
    }
    Ok(())
}

/// The hosts registered: each one for one cluster, the range for several.
pub(super) fn print_sites(s: &Scenario<'_>, runs: &[ClusterRun]) {
    let (start, n) = (s.start, s.n);
    if n == 1 {
        let servers = &runs[0].servers;
        println!(
            "{} site: {} BareMetalHosts registered ({})",
            stamp(start),
            servers.len(),
            servers
                .iter()
                .map(|s| format!("{} {}", s.name, s.role))
                .collect::<Vec<_>>()
                .join(", ")
        );
    } else {
        println!(
            "{} site: {n} clusters × {} BareMetalHosts registered (clusters {}..{} in namespaces {}..{})",
            stamp(start),
            runs[0].servers.len(),
            runs[0].spec.name,
            runs[runs.len() - 1].spec.name,
            runs[0].spec.ns,
            runs[runs.len() - 1].spec.ns,
        );
    }
}
