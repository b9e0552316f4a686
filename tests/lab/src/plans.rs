//! A cluster before the lab starts: its size and names, its hosts and its manifests, generated
//! with clusterctl or read from `--cluster-file`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow};
use serde_json::Value;

use crate::clusterfile::ClusterFile;
use crate::generate::Generate;
use crate::manifests::ClusterSpec;
use crate::options::{Options, Topology};
use crate::site::Server;
use crate::{generate, manifests, mco, site, stamp};
/// A cluster before the lab starts: its size and names, its hosts and its manifests.
pub(crate) struct Plan {
    pub(crate) spec: ClusterSpec,
    pub(crate) servers: Vec<Server>,
    /// The namespace, BMC Secrets and BareMetalHosts.
    pub(crate) hosts_yaml: String,
    /// The cluster's manifests: placeholder pull secrets, then the file's objects.
    pub(crate) objects: Vec<Value>,
    pub(crate) applied: String,
}

impl Plan {
    /// Adds the pull secrets `f` refers to but does not contain; fills in the summary.
    pub(crate) fn with_objects(mut self, f: &ClusterFile) -> Result<Plan> {
        let mut objects = Vec::new();
        for name in &f.missing_secrets {
            objects.extend(testbed::resources::parse_yaml(
                &manifests::pull_secret_yaml(&f.namespace, name),
            )?);
        }
        objects.extend(f.objects.iter().cloned());
        self.objects = objects;
        self.applied = f.summary();
        if !f.missing_secrets.is_empty() {
            self.applied = format!(
                "Secret {} (the lab's placeholder pull secret), {}",
                f.missing_secrets.join(", "),
                self.applied
            );
        }
        Ok(self)
    }
}

/// Cluster `c` of `n` of `topology`, generated from its template by clusterctl; the YAML is
/// kept in `<dir>/clusters/<name>.yaml`.
pub(crate) async fn plan_generated(
    opts: &Options,
    c: u32,
    n: u32,
    clusterctl: &Path,
    start: Instant,
) -> Result<Plan> {
    let t = opts.topology;
    let mut spec = ClusterSpec::new(t, opts.workers, c, n);
    let template = if opts.cluster_class {
        // Workers only come after the install (Cluster API's topology waits for the control
        // plane's version): none day-1, the day-2 step scales the topology's MachineDeployment.
        spec = ClusterSpec::new(Topology::Compact, 0, c, n);
        spec.cluster_class = true;
        spec.day2 = Some((spec.workers_name(), 0));
        generate::TEMPLATE_TOPOLOGY
    } else {
        generate::template(t, opts.okd)
    };
    spec.shard = crate::shards::shard_of(c, opts.shards);
    spec.installed_version = if opts.okd {
        generate::OKD_VERSION
    } else if opts.image_mode.is_some() {
        mco::IMAGE_MODE_VERSION
    } else {
        generate::OPENSHIFT_VERSION
    }
    .to_string();
    let root = testbed::cache::repo_root();
    let mut g = Generate::new(&spec, &root.join(template), opts.okd);
    if opts.image_mode.is_some() {
        g.vars.retain(|(k, _)| *k != "OPENSHIFT_VERSION");
        g.vars
            .push(("OPENSHIFT_VERSION", mco::IMAGE_MODE_VERSION.to_string()));
    }
    let yaml = g
        .run(clusterctl, &opts.dir.join("clusterctl-home"))
        .await
        .with_context(|| format!("generating cluster {}", spec.name))?;
    let dir = opts.dir.join("clusters");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = dir.join(format!("{}.yaml", spec.name));
    std::fs::write(&file, &yaml).with_context(|| format!("writing {}", file.display()))?;
    if c == 0 {
        println!("{} {}", stamp(start), g.shown(&root));
        println!(
            "{} generated cluster {}{}: {}",
            stamp(start),
            spec.name,
            if n > 1 {
                format!(" (and {} more, one per cluster)", n - 1)
            } else {
                String::new()
            },
            file.display()
        );
    }
    let f = ClusterFile::parse(&yaml, &file.display().to_string())?;
    // The template must make the cluster the lab waits for.
    // A 3+N cluster always has its workers' MachineDeployment, with 0 replicas for
    // `--workers 0` (then the lab runs no day-2 step).
    let expected = ClusterSpec::from_file(&f);
    let seen = |s: &ClusterSpec, has_md: bool| {
        (
            s.name.clone(),
            s.ns.clone(),
            s.control_plane.clone(),
            s.masters,
            s.workers,
            has_md.then(|| s.workers_name()),
        )
    };
    let (got, wanted) = (
        seen(&expected, expected.day2.is_some()),
        seen(&spec, spec.topology.highly_available()),
    );
    if got != wanted {
        anyhow::bail!(
            "{} is not the cluster the lab expects: it has {got:?}, the lab expects {wanted:?} (name, namespace, control plane, masters, workers, workers' MachineDeployment)",
            file.display(),
        );
    }
    let spare = u32::from(spec.day2.is_some());
    spec.control_plane_to = opts.scale_control_plane;
    // Spare control-plane hosts for the masters a scale-up adds.
    let spare_masters = opts
        .scale_control_plane
        .map_or(0, |to| to.saturating_sub(spec.masters));
    let servers = site::servers(&spec, spec.masters + spare_masters, spec.workers + spare)?;
    let hosts_yaml = site::site_yaml(&spec.ns, &servers)?;
    Plan {
        spec,
        servers,
        hosts_yaml,
        objects: Vec::new(),
        applied: String::new(),
    }
    .with_objects(&f)
}

/// Most BareMetalHosts the lab adds for a cluster file.
pub const MAX_FILE_HOSTS: u32 = 50;

/// The hosts for a cluster file: `master-i` labelled for the control plane's template,
/// `worker-j` for the MachineDeployments' (the day-2 spare for the first one). When a host
/// meant for one template can be taken by another's Machines, every host gets control-plane
/// hardware.
pub(crate) fn file_servers(
    f: &ClusterFile,
    spec: &ClusterSpec,
) -> Result<Vec<(Server, BTreeMap<String, String>)>> {
    use agent_sim::HostProfile;
    let needed = f.hosts_needed();
    if needed > MAX_FILE_HOSTS || f.masters > 10 {
        anyhow::bail!(
            "{}: {needed} BareMetalHosts needed ({} control plane); the lab adds at most {MAX_FILE_HOSTS}, 10 for the control plane",
            f.source,
            f.masters
        );
    }
    let cidr = spec.machine_cidr.as_str();
    let master = |i: u32| {
        if spec.masters == 1 {
            HostProfile::sno_like(i, cidr)
        } else {
            HostProfile::master_like(i, cidr)
        }
    };
    let any_role = f.hosts_interchangeable();
    let mut out = Vec::new();
    for i in 0..f.masters {
        out.push((
            Server {
                name: format!("master-{i}"),
                role: "master",
                profile: master(i).map_err(|e| anyhow!("host profile: {e}"))?,
            },
            f.control_plane_hosts.host_labels(),
        ));
    }
    let mut j = 0;
    for (k, pool) in f.pools.iter().enumerate() {
        let count = pool.replicas + u32::from(k == 0);
        for _ in 0..count {
            let profile = if any_role {
                master(f.masters + j)
            } else {
                HostProfile::worker_like(j, cidr)
            }
            .map_err(|e| anyhow!("host profile: {e}"))?;
            out.push((
                Server {
                    name: format!("worker-{j}"),
                    role: "worker",
                    profile,
                },
                pool.hosts.host_labels(),
            ));
            j += 1;
        }
    }
    for vip in f.api_vips.iter().chain(&f.ingress_vips) {
        if let Some((s, _)) = out
            .iter()
            .find(|(s, _)| s.profile.primary_ipv4() == Some(vip.as_str()))
        {
            anyhow::bail!(
                "{}: VIP {vip} is the address the lab gives host {} ({cidr}: control-plane hosts from .10, workers from .100, a single node .200); choose VIPs outside these",
                f.source,
                s.name
            );
        }
    }
    Ok(out)
}

/// The cluster of a user's file: its manifests as given, the hosts they ask for.
pub(crate) fn plan_file(f: &ClusterFile) -> Result<Plan> {
    let spec = ClusterSpec::from_file(f);
    let hosts = file_servers(f, &spec)?;
    let mut hosts_yaml = manifests::namespace_yaml(&spec.ns);
    for (s, labels) in &hosts {
        hosts_yaml.push_str(&manifests::host_yaml_labels(
            &spec.ns,
            &s.name,
            labels,
            s.boot_mac()?,
        ));
    }
    Plan {
        spec,
        servers: hosts.into_iter().map(|(s, _)| s).collect(),
        hosts_yaml,
        objects: Vec::new(),
        applied: String::new(),
    }
    .with_objects(f)
}

/// What the lab read from a cluster file, printed before it starts.
pub(crate) fn describe_file(f: &ClusterFile, plan: &Plan, start: Instant) {
    let spec = &plan.spec;
    let workers = match &f.pools[..] {
        [] => "no MachineDeployment (no day-2 step)".to_string(),
        pools => format!(
            "{} worker(s) in MachineDeployment {}",
            f.workers(),
            pools
                .iter()
                .map(|p| format!("{} (replicas: {})", p.name, p.replicas))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let network = match &f.machine_cidr {
        Some(c) => format!(
            "{c} (around API VIP {}, ingress VIP {})",
            f.api_vips.join(","),
            f.ingress_vips.join(",")
        ),
        None => format!("{} (no VIPs in the file)", spec.machine_cidr),
    };
    println!(
        "{} cluster file {}: Cluster {} in namespace {}, OpenshiftAssistedControlPlane {} (replicas: {}), {workers}; machine network {network}",
        stamp(start),
        f.source,
        f.name,
        f.namespace,
        f.control_plane,
        f.masters
    );
    let labels = |l: &BTreeMap<String, String>| {
        if l.is_empty() {
            "no labels".to_string()
        } else {
            l.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        }
    };
    let mut groups = vec![format!(
        "{} for the control plane ({})",
        f.masters,
        labels(&f.control_plane_hosts.host_labels())
    )];
    for (k, p) in f.pools.iter().enumerate() {
        groups.push(format!(
            "{} for {}{} ({})",
            p.replicas + u32::from(k == 0),
            p.name,
            if k == 0 {
                ", one of them the day-2 spare"
            } else {
                ""
            },
            labels(&p.hosts.host_labels())
        ));
    }
    println!(
        "{} the lab adds {} BareMetalHosts: {}{}",
        stamp(start),
        plan.servers.len(),
        groups.join("; "),
        if f.hosts_interchangeable() {
            "; the templates' host selectors do not keep the roles apart, so every host has control-plane hardware"
        } else {
            ""
        }
    );
    for note in &f.notes {
        println!("{} {note}", stamp(start));
    }
    for s in &f.missing_secrets {
        println!(
            "{} the file refers to pull secret {s}, which it does not contain: the lab adds a placeholder",
            stamp(start)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_for_a_cluster_file() {
        let path = testbed::cache::repo_root().join("docs/examples/capoa-multinode.yaml");
        let f = ClusterFile::read(&path).expect("example");
        let plan = plan_file(&f).expect("plan");
        let names: Vec<&str> = plan.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "master-0", "master-1", "master-2", "worker-0", "worker-1", "worker-2"
            ]
        );
        // No host selectors: every host has control-plane hardware, on the VIPs' network.
        assert!(plan.servers.iter().all(|s| s.profile.cpu_count == 4));
        assert!(plan.servers.iter().all(|s| {
            s.profile
                .primary_ipv4()
                .is_some_and(|a| a.starts_with("192.168.222."))
        }));
        assert!(
            plan.hosts_yaml
                .contains("kind: Namespace\nmetadata: {name: test-capi}")
        );
        assert_eq!(plan.spec.day2, Some(("test-multinode-worker".into(), 2)));
        assert_eq!(plan.spec.infraenvs, 2);

        // Host selectors that keep the roles apart: workers get worker hardware and labels.
        let generated = |api_vip: &str| {
            let spec = ClusterSpec::new(Topology::ThreePlusTwo, 2, 0, 1);
            format!(
                r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: bm, namespace: lab}}
spec:
  controlPlaneRef: {{kind: OpenshiftAssistedControlPlane, name: bm-cp}}
  infrastructureRef: {{kind: Metal3Cluster, name: bm}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{name: bm, namespace: lab}}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {{name: bm-cp, namespace: lab}}
spec:
  replicas: 3
  config: {{apiVIPs: ["{api_vip}"], ingressVIPs: ["{}"]}}
  machineTemplate: {{infrastructureRef: {{kind: Metal3MachineTemplate, name: cp}}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: cp, namespace: lab}}
spec: {{template: {{spec: {{hostSelector: {{matchLabels: {{role: master}}}}}}}}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: w, namespace: lab}}
spec: {{template: {{spec: {{hostSelector: {{matchLabels: {{role: worker}}}}}}}}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfigTemplate
metadata: {{name: w, namespace: lab}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {{name: bm-workers, namespace: lab}}
spec:
  clusterName: bm
  replicas: 1
  template:
    spec:
      bootstrap: {{configRef: {{kind: OpenshiftAssistedConfigTemplate, name: w}}}}
      infrastructureRef: {{kind: Metal3MachineTemplate, name: w}}
"#,
                spec.ingress_vip
            )
        };
        let f = ClusterFile::parse(&generated(manifests::API_VIP), "g.yaml").expect("valid");
        let plan = plan_file(&f).expect("plan");
        assert_eq!(plan.servers.len(), 5);
        let workers: Vec<&Server> = plan.servers.iter().filter(|s| s.role == "worker").collect();
        assert_eq!(workers.len(), 2);
        assert!(workers.iter().all(|s| s.profile.cpu_count == 2));
        assert!(plan.hosts_yaml.contains(r#"labels: {"role": "worker"}"#));
        assert!(plan.hosts_yaml.contains(r#"labels: {"role": "master"}"#));

        // A VIP on a host's address is refused, naming the host.
        let f = ClusterFile::parse(&generated("192.168.111.10"), "g.yaml").expect("valid");
        let e = format!("{:#}", plan_file(&f).err().expect("refused"));
        assert!(
            e.contains("VIP 192.168.111.10 is the address the lab gives host master-0"),
            "{e}"
        );
    }
}
