//! Reading a cluster's manifests written for CAPOA: a user's `--cluster-file`, or what
//! `clusterctl generate cluster` made from `templates/`. The lab applies the objects as given and
//! reads from them what it has to provide: the namespace, the cluster's name, how many
//! BareMetalHosts with which labels, and the machine network they live on.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

const CAPI: &str = "cluster.x-k8s.io";
const CONTROLPLANE: &str = "controlplane.cluster.x-k8s.io";
const BOOTSTRAP: &str = "bootstrap.cluster.x-k8s.io";
const INFRA: &str = "infrastructure.cluster.x-k8s.io";
const OACP: &str = "OpenshiftAssistedControlPlane";
const OACT: &str = "OpenshiftAssistedConfigTemplate";
const M3MT: &str = "Metal3MachineTemplate";

/// Kinds without a namespace that may appear in a cluster's manifests.
const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "ClusterImageSet",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
];

/// A Metal3MachineTemplate's `hostSelector`: which BareMetalHosts its Machines may take.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostSelector {
    pub match_labels: BTreeMap<String, String>,
    /// `(key, operator, values)` of `matchExpressions`.
    pub match_expressions: Vec<(String, String, Vec<String>)>,
}

impl HostSelector {
    fn parse(v: Option<&Value>, owner: &str) -> Result<HostSelector> {
        let Some(v) = v.filter(|v| !v.is_null()) else {
            return Ok(HostSelector::default());
        };
        let mut s = HostSelector::default();
        if let Some(m) = v.get("matchLabels").filter(|m| !m.is_null()) {
            let m = m
                .as_object()
                .with_context(|| format!("{owner}: hostSelector.matchLabels is not a map"))?;
            for (k, val) in m {
                let val = scalar(val).with_context(|| {
                    format!("{owner}: hostSelector.matchLabels.{k} is not a string")
                })?;
                s.match_labels.insert(k.clone(), val);
            }
        }
        for e in v
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = e.get("key").and_then(Value::as_str).with_context(|| {
                format!("{owner}: a hostSelector.matchExpressions entry has no key")
            })?;
            let op = e.get("operator").and_then(Value::as_str).unwrap_or("In");
            if !["In", "NotIn", "Exists", "DoesNotExist"].contains(&op) {
                bail!(
                    "{owner}: hostSelector operator {op:?} for {key} is not one of In, NotIn, Exists, DoesNotExist"
                );
            }
            let values = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(scalar)
                .collect::<Vec<_>>();
            if op == "In" && values.is_empty() {
                bail!("{owner}: hostSelector expression `{key} In` has no values");
            }
            s.match_expressions.push((key.into(), op.into(), values));
        }
        Ok(s)
    }

    /// Labels that a BareMetalHost needs to be selected: `matchLabels`, the first value of each
    /// `In` expression, `lab` for `Exists`.
    pub fn host_labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.match_labels.clone();
        for (k, op, values) in &self.match_expressions {
            match op.as_str() {
                "In" if !labels.contains_key(k) => {
                    labels.insert(k.clone(), values[0].clone());
                }
                "Exists" if !labels.contains_key(k) => {
                    labels.insert(k.clone(), "lab".into());
                }
                _ => {}
            }
        }
        labels
    }

    /// Whether a host with `labels` is selected (as CAPM3 selects it).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|(k, op, values)| {
                let v = labels.get(k);
                match op.as_str() {
                    "In" => v.is_some_and(|v| values.contains(v)),
                    "NotIn" => v.is_none_or(|v| !values.contains(v)),
                    "Exists" => v.is_some(),
                    _ => v.is_none(),
                }
            })
    }
}

/// One MachineDeployment of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerPool {
    pub name: String,
    pub replicas: u32,
    /// Its Metal3MachineTemplate.
    pub template: String,
    pub hosts: HostSelector,
}

/// What the lab reads from a cluster's manifests.
#[derive(Debug, Clone)]
pub struct ClusterFile {
    /// Where the manifests came from (for messages).
    pub source: String,
    /// The documents in their order, each namespaced one in the cluster's namespace;
    /// BareMetalHosts left out (the lab provides the hosts).
    pub objects: Vec<Value>,
    pub namespace: String,
    /// The Cluster's name.
    pub name: String,
    /// The OpenshiftAssistedControlPlane's name.
    pub control_plane: String,
    /// Its replicas.
    pub masters: u32,
    /// Its Metal3MachineTemplate.
    pub control_plane_template: String,
    pub control_plane_hosts: HostSelector,
    /// The cluster's MachineDeployments.
    pub pools: Vec<WorkerPool>,
    pub api_vips: Vec<String>,
    pub ingress_vips: Vec<String>,
    /// The /24 around the API VIP (or the ingress VIP); `None` without VIPs.
    pub machine_cidr: Option<String>,
    /// Pull secrets the objects refer to that the file does not contain.
    pub missing_secrets: Vec<String>,
    /// Things the lab left out or assumed, to tell the user.
    pub notes: Vec<String>,
    /// The Cluster is a topology over a ClusterClass of the file: the control plane and the
    /// MachineDeployments are made by Cluster API, with the names the class's naming templates
    /// give them.
    pub cluster_class: bool,
}

/// What [`ClusterFile::parse`] reads of the control plane and the workers.
struct Parts {
    control_plane: String,
    masters: u32,
    control_plane_template: String,
    control_plane_hosts: HostSelector,
    pools: Vec<WorkerPool>,
    api_vips: Vec<String>,
    ingress_vips: Vec<String>,
    /// Objects and the pointers at which they name a pull secret.
    pull_secret_holders: Vec<(Value, &'static str)>,
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn group_of(obj: &Value) -> &str {
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    api_version
        .rsplit_once('/')
        .map(|(g, _)| g)
        .unwrap_or_default()
}

fn kind_of(obj: &Value) -> &str {
    obj.get("kind").and_then(Value::as_str).unwrap_or_default()
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// `replicas` at `pointer`: a non-negative integer, 1 when absent (the CAPI default).
fn replicas(obj: &Value, pointer: &str, what: &str) -> Result<u32> {
    match obj.pointer(pointer) {
        None | Some(Value::Null) => Ok(1),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .with_context(|| format!("{what}: replicas {v} is not a non-negative integer")),
    }
}

fn strings(obj: &Value, pointer: &str, what: &str) -> Result<Vec<String>> {
    match obj.pointer(pointer) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| scalar(v).with_context(|| format!("{what}: {v} is not a string")))
            .collect(),
        Some(v) => bail!("{what}: {v} is not a list"),
    }
}

impl ClusterFile {
    /// Reads and checks `path`.
    pub fn read(path: &Path) -> Result<ClusterFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the cluster file {}", path.display()))?;
        ClusterFile::parse(&text, &path.display().to_string())
    }

    /// Parses and checks the manifests; `source` names them in messages.
    pub fn parse(text: &str, source: &str) -> Result<ClusterFile> {
        let (objects, notes) = documents(text, source)?;
        let file = FileObjects {
            source,
            objects: &objects,
        };
        let cluster = file.the_cluster()?;
        let name = name_of(cluster).to_string();
        let namespace = str_at(cluster, "/metadata/namespace")
            .unwrap_or("default")
            .to_string();
        let topology = cluster
            .pointer("/spec/topology")
            .is_some_and(|t| !t.is_null());
        let parts = if topology {
            topology_parts(source, cluster, &objects)?
        } else {
            file.plain_parts(cluster, &name)?
        };
        ClusterFile::from_parts(source, objects, namespace, name, parts, notes, topology)
    }

    /// The rest of [`ClusterFile::parse`], shared by plain and topology clusters: the machine
    /// network, the pull secrets to supply, every object in the Cluster's namespace.
    fn from_parts(
        source: &str,
        mut objects: Vec<Value>,
        namespace: String,
        name: String,
        parts: Parts,
        notes: Vec<String>,
        cluster_class: bool,
    ) -> Result<ClusterFile> {
        let Parts {
            control_plane,
            masters,
            control_plane_template,
            control_plane_hosts,
            pools,
            api_vips,
            ingress_vips,
            pull_secret_holders,
        } = parts;
        let cp_user = format!("{OACP} {control_plane}");
        let machine_cidr = machine_network(&api_vips, &ingress_vips)
            .map_err(|e| anyhow!("{source}: {cp_user}: {e}"))?;

        // Pull secrets referred to but not given: the lab supplies placeholders.
        let mut wanted = BTreeSet::new();
        for (holder, pointer) in &pull_secret_holders {
            wanted.extend(str_at(holder, pointer).map(str::to_string));
        }
        for t in objects
            .iter()
            .filter(|o| group_of(o) == BOOTSTRAP && kind_of(o) == OACT)
        {
            wanted.extend(str_at(t, "/spec/template/spec/pullSecretRef/name").map(str::to_string));
        }
        let missing_secrets = wanted
            .into_iter()
            .filter(|s| {
                objects
                    .iter()
                    .all(|o| !(kind_of(o) == "Secret" && name_of(o) == s))
            })
            .collect();

        // Every namespaced object lives in the Cluster's namespace.
        for o in objects.iter_mut() {
            if CLUSTER_SCOPED.contains(&kind_of(o)) {
                continue;
            }
            match str_at(o, "/metadata/namespace") {
                Some(ns) if ns != namespace => bail!(
                    "{source}: {} {} is in namespace {ns}, the Cluster in {namespace}; the lab installs one namespace's cluster",
                    kind_of(o),
                    name_of(o)
                ),
                Some(_) => {}
                None => {
                    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.insert("namespace".into(), Value::String(namespace.clone()));
                    }
                }
            }
        }

        Ok(ClusterFile {
            source: source.to_string(),
            objects,
            namespace,
            name,
            control_plane,
            masters,
            control_plane_template,
            control_plane_hosts,
            pools,
            api_vips,
            ingress_vips,
            machine_cidr,
            missing_secrets,
            notes,
            cluster_class,
        })
    }

    /// Workers installed day-1 (every MachineDeployment's replicas).
    pub fn workers(&self) -> u32 {
        self.pools.iter().map(|p| p.replicas).sum()
    }

    /// The MachineDeployment the day-2 step scales up by one and back (the first), if any.
    pub fn day2_pool(&self) -> Option<&WorkerPool> {
        self.pools.first()
    }

    /// BareMetalHosts the scenario needs: control plane, workers, and one spare for day 2.
    pub fn hosts_needed(&self) -> u32 {
        self.masters + self.workers() + u32::from(self.day2_pool().is_some())
    }

    /// InfraEnvs made day-1: one per Metal3MachineTemplate with Machines.
    pub fn infraenvs_day1(&self) -> usize {
        let mut templates = BTreeSet::from([self.control_plane_template.as_str()]);
        templates.extend(
            self.pools
                .iter()
                .filter(|p| p.replicas > 0)
                .map(|p| p.template.as_str()),
        );
        templates.len()
    }

    /// True when a host labelled for one template can be taken by another's Machines (e.g. no
    /// host selectors): then every host must be fit to be a control-plane node.
    pub fn hosts_interchangeable(&self) -> bool {
        let cp = &self.control_plane_hosts;
        self.pools
            .iter()
            .any(|p| p.hosts.matches(&cp.host_labels()) || cp.matches(&p.hosts.host_labels()))
    }

    /// The kinds applied, in order, as the progress output names them.
    pub fn summary(&self) -> String {
        let mut out: Vec<(String, usize)> = Vec::new();
        for o in &self.objects {
            let mut kind = kind_of(o).to_string();
            if kind == OACP {
                kind = format!("{OACP} (replicas: {})", self.masters);
            } else if kind == "MachineDeployment" {
                let r = self
                    .pools
                    .iter()
                    .find(|p| p.name == name_of(o))
                    .map_or(0, |p| p.replicas);
                kind = format!("MachineDeployment (replicas: {r})");
            }
            match out.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => out.push((kind, 1)),
            }
        }
        out.iter()
            .map(|(k, n)| {
                if *n > 1 {
                    format!("{n} × {k}")
                } else {
                    k.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The file's documents as Kubernetes objects, each with a name; its BareMetalHosts left out
/// (with a note: the lab registers its own simulated hosts).
fn documents(text: &str, source: &str) -> Result<(Vec<Value>, Vec<String>)> {
    let docs = testbed::resources::parse_yaml(text)
        .map_err(|e| anyhow!("{source} is not valid YAML: {:#}", e))?;
    let mut notes = Vec::new();
    let mut objects = Vec::new();
    for (i, d) in docs.into_iter().enumerate() {
        if !d.is_object() || kind_of(&d).is_empty() || d.get("apiVersion").is_none() {
            bail!(
                "{source}: document {} is not a Kubernetes object (it needs apiVersion and kind)",
                i + 1
            );
        }
        if name_of(&d).is_empty() {
            bail!(
                "{source}: the {} in document {} has no metadata.name",
                kind_of(&d),
                i + 1
            );
        }
        if kind_of(&d) == "BareMetalHost" {
            notes.push(format!(
                "left out BareMetalHost {}: the lab registers its own simulated hosts",
                name_of(&d)
            ));
            continue;
        }
        objects.push(d);
    }
    Ok((objects, notes))
}

/// The file's objects, looked up by group, kind and name; `source` names the file in messages.
#[derive(Clone, Copy)]
struct FileObjects<'a> {
    source: &'a str,
    objects: &'a [Value],
}

impl<'a> FileObjects<'a> {
    fn find(&self, group: &str, kind: &str) -> Vec<&'a Value> {
        self.objects
            .iter()
            .filter(|o| group_of(o) == group && kind_of(o) == kind)
            .collect()
    }

    fn named(&self, group: &str, kind: &str, name: &str) -> Option<&'a Value> {
        self.find(group, kind)
            .into_iter()
            .find(|o| name_of(o) == name)
    }

    /// The one Cluster of the file.
    fn the_cluster(&self) -> Result<&'a Value> {
        let source = self.source;
        match self.find(CAPI, "Cluster")[..] {
            [] => bail!(
                "{source} has no Cluster (cluster.x-k8s.io): the lab installs the cluster the file defines"
            ),
            [c] => Ok(c),
            ref many => bail!(
                "{source} defines {} Clusters ({}): the lab installs one cluster per file",
                many.len(),
                many.iter()
                    .map(|c| name_of(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// A Cluster without a topology: its OpenshiftAssistedControlPlane, Metal3Cluster and
    /// MachineDeployments, all in the file.
    fn plain_parts(&self, cluster: &Value, name: &str) -> Result<Parts> {
        let source = self.source;
        if self.find(CONTROLPLANE, OACP).is_empty() {
            bail!("{source} has no OpenshiftAssistedControlPlane ({CONTROLPLANE})");
        }
        let (cp_name, oacp) = self.control_plane_of(cluster, name)?;
        self.check_infrastructure_of(cluster, name)?;
        let cp_user = format!("{OACP} {cp_name}");
        let masters = replicas(oacp, "/spec/replicas", &cp_user)?;
        if masters == 0 {
            bail!("{source}: {cp_user} has 0 replicas");
        }
        let control_plane_template =
            self.infra_ref(oacp, "/spec/machineTemplate/infrastructureRef", &cp_user)?;
        let control_plane_hosts = self.template(&control_plane_template, &cp_user)?;
        let pools = self.worker_pools(name)?;
        let api_vips = strings(oacp, "/spec/config/apiVIPs", &cp_user)?;
        let ingress_vips = strings(oacp, "/spec/config/ingressVIPs", &cp_user)?;
        Ok(Parts {
            control_plane: cp_name,
            masters,
            control_plane_template,
            control_plane_hosts,
            pools,
            api_vips,
            ingress_vips,
            pull_secret_holders: vec![
                (oacp.clone(), "/spec/config/pullSecretRef/name"),
                (
                    oacp.clone(),
                    "/spec/openshiftAssistedConfigSpec/pullSecretRef/name",
                ),
            ],
        })
    }

    /// The Cluster's controlPlaneRef: an OpenshiftAssistedControlPlane of the file.
    fn control_plane_of(&self, cluster: &Value, name: &str) -> Result<(String, &'a Value)> {
        let source = self.source;
        let cp_ref_kind = str_at(cluster, "/spec/controlPlaneRef/kind");
        let cp_name = match (cp_ref_kind, str_at(cluster, "/spec/controlPlaneRef/name")) {
            (Some(OACP), Some(n)) => n.to_string(),
            (None, _) | (_, None) => {
                bail!("{source}: Cluster {name} has no spec.controlPlaneRef (kind and name)")
            }
            (Some(other), _) => bail!(
                "{source}: Cluster {name}'s controlPlaneRef is a {other}; the lab installs clusters whose control plane is an {OACP}"
            ),
        };
        let oacp = self.named(CONTROLPLANE, OACP, &cp_name).with_context(|| {
            format!("{source}: OpenshiftAssistedControlPlane {cp_name} (Cluster {name}'s controlPlaneRef) is not in the file")
        })?;
        Ok((cp_name, oacp))
    }

    /// The Cluster's infrastructureRef: a Metal3Cluster of the file.
    fn check_infrastructure_of(&self, cluster: &Value, name: &str) -> Result<()> {
        let source = self.source;
        match (
            str_at(cluster, "/spec/infrastructureRef/kind"),
            str_at(cluster, "/spec/infrastructureRef/name"),
        ) {
            (Some("Metal3Cluster"), Some(m3c)) => {
                if self.named(INFRA, "Metal3Cluster", m3c).is_none() {
                    bail!(
                        "{source}: Metal3Cluster {m3c} (Cluster {name}'s infrastructureRef) is not in the file"
                    );
                }
                Ok(())
            }
            (Some(other), _) => bail!(
                "{source}: Cluster {name}'s infrastructureRef is a {other}; the lab's hosts are Metal3 BareMetalHosts (Metal3Cluster)"
            ),
            _ => bail!("{source}: Cluster {name} has no spec.infrastructureRef (kind and name)"),
        }
    }

    /// A Metal3MachineTemplate, its Metal3DataTemplate, its host selector.
    fn template(&self, tname: &str, user: &str) -> Result<HostSelector> {
        let source = self.source;
        let t = self.named(INFRA, M3MT, tname).with_context(|| {
            format!("{source}: Metal3MachineTemplate {tname} (the infrastructureRef of {user}) is not in the file")
        })?;
        if let Some(dt) = str_at(t, "/spec/template/spec/dataTemplate/name")
            && self.named(INFRA, "Metal3DataTemplate", dt).is_none()
        {
            bail!(
                "{source}: Metal3DataTemplate {dt} (the dataTemplate of Metal3MachineTemplate {tname}) is not in the file"
            );
        }
        HostSelector::parse(
            t.pointer("/spec/template/spec/hostSelector"),
            &format!("{source}: Metal3MachineTemplate {tname}"),
        )
    }

    /// The Metal3MachineTemplate an object's infrastructureRef at `pointer` names.
    fn infra_ref(&self, obj: &Value, pointer: &str, user: &str) -> Result<String> {
        let source = self.source;
        let kind = str_at(obj, &format!("{pointer}/kind"));
        let tname = str_at(obj, &format!("{pointer}/name"));
        match (kind, tname) {
            (Some(M3MT), Some(t)) => Ok(t.to_string()),
            (Some(other), _) => bail!(
                "{source}: {user}'s infrastructureRef is a {other}; the lab's hosts are Metal3 BareMetalHosts (Metal3MachineTemplate)"
            ),
            _ => bail!("{source}: {user} has no infrastructureRef (kind and name)"),
        }
    }

    /// The Cluster's MachineDeployments: each its replicas, Metal3MachineTemplate and
    /// OpenshiftAssistedConfigTemplate, all in the file.
    fn worker_pools(&self, name: &str) -> Result<Vec<WorkerPool>> {
        let source = self.source;
        let mut pools = Vec::new();
        for md in self.find(CAPI, "MachineDeployment") {
            let md_name = name_of(md);
            let user = format!("MachineDeployment {md_name}");
            let owner = str_at(md, "/spec/clusterName").unwrap_or_default();
            if owner != name {
                bail!(
                    "{source}: {user} belongs to cluster {owner:?}, not to Cluster {name} (spec.clusterName)"
                );
            }
            let replicas = replicas(md, "/spec/replicas", &user)?;
            let tname = self.infra_ref(md, "/spec/template/spec/infrastructureRef", &user)?;
            let hosts = self.template(&tname, &user)?;
            match (
                str_at(md, "/spec/template/spec/bootstrap/configRef/kind"),
                str_at(md, "/spec/template/spec/bootstrap/configRef/name"),
            ) {
                (Some(OACT), Some(c)) => {
                    if self.named(BOOTSTRAP, OACT, c).is_none() {
                        bail!(
                            "{source}: {OACT} {c} (the bootstrap configRef of {user}) is not in the file"
                        );
                    }
                }
                (Some(other), _) => bail!(
                    "{source}: {user}'s bootstrap configRef is a {other}; workers of an OpenShift cluster need an {OACT}"
                ),
                _ => bail!("{source}: {user} has no spec.template.spec.bootstrap.configRef"),
            }
            pools.push(WorkerPool {
                name: md_name.to_string(),
                replicas,
                template: tname,
                hosts,
            });
        }
        Ok(pools)
    }
}

/// What a Cluster with `spec.topology` over a ClusterClass of the same file makes: the control
/// plane and the MachineDeployments with the names of the class's naming templates, their
/// Metal3MachineTemplates, and the VIPs of the variables `apiVIP` and `ingressVIP` (the lab does
/// not run the class's patches; templates/cluster-template-topology.yaml has these variables).
fn topology_parts(source: &str, cluster: &Value, objects: &[Value]) -> Result<Parts> {
    let file = FileObjects { source, objects };
    let name = name_of(cluster);
    let class_name = str_at(cluster, "/spec/topology/classRef/name")
        .with_context(|| format!("{source}: Cluster {name} has no spec.topology.classRef.name"))?;
    let class = file
        .named(CAPI, "ClusterClass", class_name)
        .with_context(|| {
            format!(
                "{source}: ClusterClass {class_name} (Cluster {name}'s classRef) is not in the file"
            )
        })?;
    let topology = ClassTopology {
        file,
        cluster,
        name,
        class,
        class_user: format!("ClusterClass {class_name}"),
    };
    let class_user = &topology.class_user;
    let cp_template_name = topology.template_ref(
        class,
        "/spec/controlPlane/templateRef",
        "OpenshiftAssistedControlPlaneTemplate",
        class_user,
    )?;
    let cp_template = file
        .named(CONTROLPLANE, "OpenshiftAssistedControlPlaneTemplate", &cp_template_name)
        .with_context(|| {
            format!("{source}: OpenshiftAssistedControlPlaneTemplate {cp_template_name} ({class_user}'s control plane) is not in the file")
        })?;
    let control_plane_template = topology.template_ref(
        class,
        "/spec/controlPlane/machineInfrastructure/templateRef",
        M3MT,
        class_user,
    )?;
    let control_plane =
        topology.render("/spec/controlPlane/naming/template", "control plane", None)?;
    let control_plane_hosts = topology.hosts_of(&control_plane_template, class_user)?;
    let masters = replicas(
        cluster,
        "/spec/topology/controlPlane/replicas",
        &format!("Cluster {name}'s control plane"),
    )?;
    if masters == 0 {
        bail!("{source}: Cluster {name}'s control plane has 0 replicas");
    }
    let pools = topology.worker_pools()?;
    Ok(Parts {
        control_plane,
        masters,
        control_plane_template,
        control_plane_hosts,
        pools,
        api_vips: topology.variable("apiVIP"),
        ingress_vips: topology.variable("ingressVIP"),
        pull_secret_holders: vec![
            (
                cp_template.clone(),
                "/spec/template/spec/config/pullSecretRef/name",
            ),
            (
                cp_template.clone(),
                "/spec/template/spec/openshiftAssistedConfigSpec/pullSecretRef/name",
            ),
        ],
    })
}

/// A Cluster with `spec.topology` and its ClusterClass, both of the file.
struct ClassTopology<'a> {
    file: FileObjects<'a>,
    cluster: &'a Value,
    /// The Cluster's name.
    name: &'a str,
    class: &'a Value,
    /// `ClusterClass <name>`, for messages.
    class_user: String,
}

impl ClassTopology<'_> {
    /// A name from a naming template; the lab must know it before Cluster API makes the object.
    fn render(&self, pointer: &str, what: &str, md: Option<&str>) -> Result<String> {
        let (source, class_user) = (self.file.source, &self.class_user);
        let template = str_at(self.class, pointer).with_context(|| {
            format!(
                "{source}: {class_user} has no {}: the lab needs the {what}'s name fixed by a naming template (e.g. \"{{{{ .cluster.name }}}}-cp\")",
                pointer.trim_start_matches('/').replace('/', ".")
            )
        })?;
        let mut out = template.replace("{{ .cluster.name }}", self.name);
        if let Some(md) = md {
            out = out.replace("{{ .machineDeployment.topologyName }}", md);
        }
        if out.contains("{{") {
            bail!(
                "{source}: {class_user}'s naming template {template:?} uses more than {{{{ .cluster.name }}}}{}: the lab cannot know the {what}'s name",
                if md.is_some() {
                    " and {{ .machineDeployment.topologyName }}"
                } else {
                    ""
                }
            );
        }
        Ok(out)
    }

    fn hosts_of(&self, template: &str, user: &str) -> Result<HostSelector> {
        let source = self.file.source;
        let t = self.file.named(INFRA, M3MT, template).with_context(|| {
            format!("{source}: Metal3MachineTemplate {template} (of {user}) is not in the file")
        })?;
        HostSelector::parse(
            t.pointer("/spec/template/spec/hostSelector"),
            &format!("{source}: Metal3MachineTemplate {template}"),
        )
    }

    fn template_ref(&self, obj: &Value, pointer: &str, kind: &str, user: &str) -> Result<String> {
        let source = self.file.source;
        match (
            str_at(obj, &format!("{pointer}/kind")),
            str_at(obj, &format!("{pointer}/name")),
        ) {
            (Some(k), Some(n)) if k == kind => Ok(n.to_string()),
            (Some(other), _) => bail!("{source}: {user} names a {other}; the lab needs a {kind}"),
            _ => bail!(
                "{source}: {user} has no {} (kind and name)",
                pointer.trim_start_matches('/').replace('/', ".")
            ),
        }
    }

    /// The topology's MachineDeployments, each from its class of the ClusterClass.
    fn worker_pools(&self) -> Result<Vec<WorkerPool>> {
        let (source, name, class_user) = (self.file.source, self.name, &self.class_user);
        let classes = self
            .class
            .pointer("/spec/workers/machineDeployments")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut pools = Vec::new();
        for md in self
            .cluster
            .pointer("/spec/topology/workers/machineDeployments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let topology_name = str_at(md, "/name").unwrap_or_default();
            let md_class = str_at(md, "/class").unwrap_or_default();
            let user = format!("Cluster {name}'s MachineDeployment {topology_name:?}");
            let (i, c) = classes
                .iter()
                .enumerate()
                .find(|(_, c)| str_at(c, "/class") == Some(md_class))
                .with_context(|| {
                    format!("{source}: {user}'s class {md_class:?} is not in {class_user}")
                })?;
            let pointer = format!("/spec/workers/machineDeployments/{i}/naming/template");
            let md_name = self.render(&pointer, "MachineDeployment", Some(topology_name))?;
            self.template_ref(c, "/bootstrap/templateRef", OACT, &user)?;
            let template = self.template_ref(c, "/infrastructure/templateRef", M3MT, &user)?;
            pools.push(WorkerPool {
                name: md_name,
                replicas: replicas(md, "/replicas", &user)?,
                hosts: self.hosts_of(&template, &user)?,
                template,
            });
        }
        Ok(pools)
    }

    /// The values of the topology's variable `wanted`.
    fn variable(&self, wanted: &str) -> Vec<String> {
        self.cluster
            .pointer("/spec/topology/variables")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|v| str_at(v, "/name") == Some(wanted))
            .filter_map(|v| v.get("value").and_then(scalar))
            .collect()
    }
}

/// The /24 around the first VIP; every VIP must be an IPv4 address in it.
fn machine_network(api: &[String], ingress: &[String]) -> Result<Option<String>> {
    let all: Vec<&String> = api.iter().chain(ingress).collect();
    let Some(first) = all.first() else {
        return Ok(None);
    };
    let parse = |v: &str| -> Result<Ipv4Addr> {
        v.parse::<Ipv4Addr>()
            .map_err(|_| anyhow!("VIP {v} is not an IPv4 address (the lab's hosts are IPv4 only)"))
    };
    let o = parse(first)?.octets();
    let net = Ipv4Addr::new(o[0], o[1], o[2], 0);
    for v in &all {
        let a = parse(v)?.octets();
        if a[..3] != o[..3] {
            bail!(
                "VIP {v} is not in {net}/24, the machine network the lab derives from VIP {first}"
            );
        }
    }
    Ok(Some(format!("{net}/24")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(name: &str) -> ClusterFile {
        let path = testbed::cache::repo_root().join("docs/examples").join(name);
        ClusterFile::read(&path).unwrap_or_else(|e| panic!("{name}: {e:#}"))
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn multinode_example() {
        let f = example("capoa-multinode.yaml");
        assert_eq!(
            (f.namespace.as_str(), f.name.as_str()),
            ("test-capi", "test-multinode")
        );
        assert_eq!(f.control_plane, "test-multinode");
        assert_eq!((f.masters, f.workers()), (3, 2));
        assert_eq!(f.hosts_needed(), 6);
        assert_eq!(
            f.day2_pool().map(|p| p.name.as_str()),
            Some("test-multinode-worker")
        );
        assert_eq!(f.machine_cidr.as_deref(), Some("192.168.222.0/24"));
        assert_eq!(f.api_vips, ["192.168.222.40"]);
        assert_eq!(f.ingress_vips, ["192.168.222.41"]);
        // No host selectors: any host may become a control-plane node.
        assert!(f.hosts_interchangeable());
        assert!(f.control_plane_hosts.host_labels().is_empty());
        assert_eq!(f.infraenvs_day1(), 2);
        // The pull secret is in the file.
        assert!(f.missing_secrets.is_empty());
        assert!(f.summary().starts_with("Secret, Cluster, Metal3Cluster, OpenshiftAssistedControlPlane (replicas: 3), 2 × Metal3MachineTemplate"), "{}", f.summary());
    }

    #[test]
    fn sno_examples() {
        for name in ["capoa-sno.yaml", "capoa-okd-sno.yaml"] {
            let f = example(name);
            assert_eq!(f.namespace, "test-capi", "{name}");
            assert_eq!(
                (f.masters, f.workers(), f.hosts_needed()),
                (1, 0, 1),
                "{name}"
            );
            assert!(f.day2_pool().is_none(), "{name}");
            assert_eq!(f.machine_cidr, None, "{name}: no VIPs, any network");
            assert_eq!(f.infraenvs_day1(), 1, "{name}");
        }
        assert_eq!(example("capoa-sno.yaml").name, "test-sno");
        let okd = example("capoa-okd-sno.yaml");
        assert_eq!(okd.name, "test-sno-okd");
        // No pull secret anywhere: nothing for the lab to add.
        assert!(okd.missing_secrets.is_empty());
    }

    const CLUSTER: &str = r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: c1}
spec:
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: OpenshiftAssistedControlPlane, name: c1-cp}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Cluster, name: c1}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {name: c1}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: c1-cp}
spec:
  replicas: 3
  distributionVersion: 4.20.0
  config: {apiVIPs: [10.1.2.5], ingressVIPs: [10.1.2.4], baseDomain: x, pullSecretRef: {name: ps}}
  machineTemplate:
    infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: cp}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {name: cp}
spec: {template: {spec: {hostSelector: {matchLabels: {role: cp, rack: "7"}}}}}
"#;

    const WORKERS: &str = r#"
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {name: w}
spec:
  template:
    spec:
      hostSelector:
        matchExpressions:
          - {key: role, operator: In, values: [worker, compute]}
          - {key: gpu, operator: Exists}
          - {key: broken, operator: DoesNotExist}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfigTemplate
metadata: {name: w}
spec: {template: {spec: {pullSecretRef: {name: ps}}}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: md}
spec:
  clusterName: c1
  replicas: 4
  template:
    spec:
      clusterName: c1
      bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: OpenshiftAssistedConfigTemplate, name: w}}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: w}
"#;

    fn parse(text: &str) -> Result<ClusterFile> {
        ClusterFile::parse(text, "f.yaml")
    }

    fn error(text: &str) -> String {
        format!("{:#}", parse(text).expect_err("must be rejected"))
    }

    #[test]
    fn counts_labels_network_and_namespace() {
        let f = parse(&format!("{CLUSTER}{WORKERS}")).expect("valid");
        assert_eq!(f.namespace, "default", "no namespace: the default one");
        assert!(
            f.objects
                .iter()
                .all(|o| o.pointer("/metadata/namespace") == Some(&Value::from("default")))
        );
        assert_eq!((f.masters, f.workers(), f.hosts_needed()), (3, 4, 8));
        assert_eq!(
            f.control_plane_hosts.host_labels(),
            labels(&[("rack", "7"), ("role", "cp")])
        );
        let w = &f.pools[0].hosts;
        assert_eq!(
            w.host_labels(),
            labels(&[("gpu", "lab"), ("role", "worker")])
        );
        assert!(w.matches(&labels(&[("gpu", ""), ("role", "compute")])));
        assert!(!w.matches(&labels(&[
            ("gpu", ""),
            ("role", "compute"),
            ("broken", "1")
        ])));
        assert!(!f.hosts_interchangeable());
        assert_eq!(f.machine_cidr.as_deref(), Some("10.1.2.0/24"));
        assert_eq!(f.missing_secrets, ["ps"]);
        assert_eq!(f.infraenvs_day1(), 2);
        assert_eq!(f.day2_pool().map(|p| p.name.as_str()), Some("md"));
    }

    #[test]
    fn leaves_out_baremetalhosts() {
        let f = parse(&format!(
            "{CLUSTER}---\napiVersion: metal3.io/v1alpha1\nkind: BareMetalHost\nmetadata: {{name: h}}\n"
        ))
        .expect("valid");
        assert!(f.objects.iter().all(|o| kind_of(o) != "BareMetalHost"));
        assert_eq!(f.notes.len(), 1);
    }

    #[test]
    fn unusable_files_are_rejected_naming_what_is_missing() {
        let e = error("kind: [unclosed\n");
        assert!(e.contains("f.yaml is not valid YAML"), "{e}");
        let e = error("just a string\n");
        assert!(e.contains("document 1 is not a Kubernetes object"), "{e}");
        let e = error("apiVersion: v1\nkind: Secret\nmetadata: {name: ps}\n");
        assert!(e.contains("has no Cluster"), "{e}");
        let e = error(&format!(
            "{CLUSTER}---\n{}",
            CLUSTER.replace("name: c1}", "name: c2}")
        ));
        assert!(e.contains("2 Clusters (c1, c2)"), "{e}");
        let no_cp: String = CLUSTER
            .split("---")
            .filter(|d| !d.contains("kind: OpenshiftAssistedControlPlane\n"))
            .collect::<Vec<_>>()
            .join("---");
        let e = error(&no_cp);
        assert!(e.contains("has no OpenshiftAssistedControlPlane"), "{e}");
        let e = error(&CLUSTER.replace(
            "OpenshiftAssistedControlPlane, name: c1-cp}",
            "OpenshiftAssistedControlPlane, name: other}",
        ));
        assert!(
            e.contains("OpenshiftAssistedControlPlane other (Cluster c1's controlPlaneRef) is not in the file"),
            "{e}"
        );
        let e = error(&CLUSTER.replace(
            "kind: Metal3Cluster, name: c1",
            "kind: Metal3Cluster, name: gone",
        ));
        assert!(e.contains("Metal3Cluster gone"), "{e}");
        let e = error(&CLUSTER.replace(
            "kind: Metal3MachineTemplate, name: cp",
            "kind: Metal3MachineTemplate, name: nope",
        ));
        assert!(
            e.contains("Metal3MachineTemplate nope (the infrastructureRef of OpenshiftAssistedControlPlane c1-cp) is not in the file"),
            "{e}"
        );
        let e = error(&format!("{CLUSTER}{WORKERS}").replace(
            "kind: OpenshiftAssistedConfigTemplate\nmetadata: {name: w}",
            "kind: OpenshiftAssistedConfigTemplate\nmetadata: {name: x}",
        ));
        assert!(e.contains("OpenshiftAssistedConfigTemplate w (the bootstrap configRef of MachineDeployment md)"), "{e}");
        let e = error(
            &format!("{CLUSTER}{WORKERS}")
                .replace("clusterName: c1\n  replicas", "clusterName: c9\n  replicas"),
        );
        assert!(
            e.contains("MachineDeployment md belongs to cluster \"c9\""),
            "{e}"
        );
        let e = error(&CLUSTER.replace("ingressVIPs: [10.1.2.4]", "ingressVIPs: [10.1.3.4]"));
        assert!(e.contains("VIP 10.1.3.4 is not in 10.1.2.0/24"), "{e}");
        let e = error(&CLUSTER.replace("apiVIPs: [10.1.2.5]", "apiVIPs: ['fd00::5']"));
        assert!(e.contains("not an IPv4 address"), "{e}");
        let e = error(&CLUSTER.replace(
            "metadata: {name: cp}",
            "metadata: {name: cp, namespace: elsewhere}",
        ));
        assert!(
            e.contains("Metal3MachineTemplate cp is in namespace elsewhere"),
            "{e}"
        );
        let e = error(&CLUSTER.replace("replicas: 3", "replicas: many"));
        assert!(
            e.contains("replicas \"many\" is not a non-negative integer"),
            "{e}"
        );
        let e = error(&CLUSTER.replace(
            "kind: OpenshiftAssistedControlPlane, name",
            "kind: KubeadmControlPlane, name",
        ));
        assert!(
            e.contains("controlPlaneRef is a KubeadmControlPlane"),
            "{e}"
        );
        let dt = CLUSTER.replace(
            "spec: {template: {spec: {hostSelector",
            "spec: {template: {spec: {dataTemplate: {name: dt}, hostSelector",
        );
        let e = error(&dt);
        assert!(e.contains("Metal3DataTemplate dt (the dataTemplate of Metal3MachineTemplate cp) is not in the file"), "{e}");
    }
}
