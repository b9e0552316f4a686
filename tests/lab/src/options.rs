//! The lab's flags as the library takes them: what to install, how fast, and which
//! scenario variations (chaos, upgrades, failing hosts, disconnected, image mode) to run.

use std::path::PathBuf;
use std::time::Duration;

use crate::chaos;
/// `--disconnected`: how the clusters reach their images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Disconnected {
    /// Through the site's mirror registry ([`crate::mirror`]): the release and the assisted images
    /// only there, every host pulling through its discovery ignition's mirrors.
    Mirror,
    /// The mirror ConfigMap has a typo in its `registries.conf`: the run ends when the
    /// control plane names it (`Available` False `InvalidImageRegistryConfig`), nothing
    /// installed.
    BrokenConfigMap,
}

/// `--image-mode`: the cluster's pools on pre-built OS images from day 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImageModeRun {
    /// Every pool (master, and worker with workers) on its pre-built image, pinned by digest:
    /// the run waits for the rollout (`ImageMode` True).
    Pools,
    /// The pre-built images given by tag: the run ends when the control plane names the
    /// core's refusal, nothing installed.
    TagImage,
    /// The last pool's pre-built image cannot be pulled (the simulated MCO fails its
    /// MachineOSBuild and degrades the pool): the run ends when the control plane says the
    /// install failed (`Available` False `ImageModeInstallFailed`).
    FailedBuild,
}

/// What to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Topology {
    /// Three masters and two workers (`--workers` changes the two), then a day-2 worker added
    /// and removed.
    #[value(name = "3+2")]
    ThreePlusTwo,
    /// A compact cluster: three schedulable masters, no workers, no day-2 step (the 3+N
    /// template with no workers; the same cluster as `3+2` with `--workers 0`).
    Compact,
    /// Single-node OpenShift: one master, no workers, no day-2 step.
    Sno,
}

impl Topology {
    /// Three control-plane nodes, API and ingress VIPs, generated from the 3+N template.
    pub fn highly_available(self) -> bool {
        matches!(self, Topology::ThreePlusTwo | Topology::Compact)
    }
}

/// How fast the simulated servers and the cluster's installer-controller go: a multiplier on
/// agent-sim's delays (its installer's stage times, the agents' polling, the controller's
/// polling). docs/lab.md "Speed" has the seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Speed {
    /// The delays of a real install's simulated parts (×1): the agents poll every 60 s as the
    /// core tells them, writing the image takes 20 s, the controller polls every 5 s.
    Realistic,
    /// A tenth of them (×0.1).
    Fast,
    /// No simulated delays (×0): polls every 50 ms, stages back to back.
    #[default]
    Instant,
}

impl Speed {
    /// agent-sim's `with_speed` multiplier.
    pub fn factor(self) -> f64 {
        match self {
            Speed::Realistic => 1.0,
            Speed::Fast => 0.1,
            Speed::Instant => 0.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Speed::Realistic => "realistic",
            Speed::Fast => "fast",
            Speed::Instant => "instant",
        }
    }
}

pub struct Options {
    pub topology: Topology,
    /// Day-1 workers of a 3+N cluster (0..=[`crate::manifests::MAX_WORKERS`]; 0: no day-2 step);
    /// ignored for SNO and with a cluster file.
    pub workers: u32,
    /// How fast the simulated hosts and installer-controller go.
    pub speed: Speed,
    /// How many clusters of `topology` to install concurrently, each in its own namespace
    /// with its own BareMetalHosts (at least 1).
    pub clusters: u32,
    /// Install the cluster of this file (manifests written for CAPOA) instead of generating
    /// `topology` from the templates; `topology` and `clusters` are then ignored.
    pub cluster_file: Option<PathBuf>,
    /// Write the JSON report ([`crate::Report::to_json`]) here at the end.
    pub report: Option<PathBuf>,
    /// The lab directory (must exist): logs, the core's data, certificates.
    pub dir: PathBuf,
    /// Where the `controlplane-provider` and `bootstrap-provider` binaries are.
    pub bin_dir: PathBuf,
    /// The whole scenario must finish within this.
    pub timeout: Duration,
    /// After the scenario, keep everything running until Ctrl-C.
    pub keep: bool,
    /// Keep the testbeds' directories even when the scenario succeeds.
    pub keep_dirs: bool,
    /// `--chaos`: kill and restart our managers (and the management apiserver) at random
    /// points drawn from the seed ([`chaos::plan`]).
    pub chaos: Option<chaos::Settings>,
    /// `--okd`: install OKD (the templates' OKD flavours) instead of OpenShift; ignored with a
    /// cluster file.
    pub okd: bool,
    /// `--managers pods`: our managers run as the pods `clusterctl init` installed on a real
    /// node of the management cluster, from the images `make images` built (root only);
    /// otherwise as processes.
    pub managers_as_pods: bool,
    /// `--replicas N` (with the managers as pods): each of our Deployments runs N pods, one
    /// leading.
    pub replicas: u32,
    /// `--kill-leaders` (with the managers as pods): delete each manager's leader pod once the
    /// first cluster's install has started; a standby (or the replacement pod) must take over
    /// and the run finish.
    pub kill_leaders: bool,
    /// `--upgrade-to`: once the cluster is installed (and its day-2 step done), upgrade it.
    pub upgrade: Option<Upgrade>,
    /// `--fail-host HOST[,HOST]`: once the cluster is installed (and its day-2 step done), a
    /// MachineHealthCheck is applied over HOST's Machines and HOST's kubelet stops; the run
    /// follows the remediation ([`crate::steps::Step::HostFailed`] and after).
    pub fail_host: Option<String>,
    /// `--cluster-class`: the cluster as a topology over a ClusterClass
    /// (templates/cluster-template-topology.yaml): three masters installed day-1, the workers'
    /// MachineDeployment made by Cluster API after the install at 0 replicas, and the day-2
    /// step scaling it through the Cluster's topology.
    pub cluster_class: bool,
    /// `--scale-control-plane N`: once the cluster is installed (and its day-2 step done), its
    /// control plane is scaled to N masters and back ([`crate::control_plane_scaling`]); N−masters
    /// spare control-plane hosts are added to the site.
    pub scale_control_plane: Option<u32>,
    /// `--disconnected`: the clusters install from the site's mirror registry.
    pub disconnected: Option<Disconnected>,
    /// `--image-mode`: the cluster installs OpenShift 4.21 with its pools on pre-built images.
    pub image_mode: Option<ImageModeRun>,
    /// `--shards N`: each of our managers runs as N processes, shard `i` reconciling only the
    /// objects labelled `cluster.x-k8s.io/watch-filter=shard-<i>`, cluster `c` in shard
    /// `c % N` ([`crate::shards`]). 1: one of each, no watch filter, no label.
    pub shards: u32,
}

impl Options {
    /// The flags given that assume one manager of each kind, which `--shards` ≥ 2 refuses:
    /// the managers as pods (one Deployment each), chaos and leader kills (they pick a
    /// manager by its place in a list of two), and a cluster file (one cluster).
    pub(crate) fn one_manager_flags(&self) -> Vec<&'static str> {
        [
            (self.managers_as_pods, "--managers pods"),
            (self.replicas > 1, "--replicas"),
            (self.chaos.is_some(), "--chaos"),
            (self.kill_leaders, "--kill-leaders"),
            (self.cluster_file.is_some(), "--cluster-file"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect()
    }

    /// `--shards` ≥ 2 with a flag that assumes one manager of each kind is an error naming them.
    pub fn refuse_shards(&self) -> anyhow::Result<()> {
        let one_manager = self.one_manager_flags();
        if self.shards > 1 && !one_manager.is_empty() {
            anyhow::bail!(
                "--shards {}: not with {} (they assume one manager of each kind; the shards run as processes: --managers processes)",
                self.shards,
                one_manager.join(", ")
            );
        }
        Ok(())
    }
}

/// An upgrade the lab asks for once a cluster is installed: `distributionVersion` set to `to`,
/// walked by the simulated cluster-version operator ([`crate::cvo`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upgrade {
    pub to: String,
    /// The upgrade fails (`--upgrade-fails`): the run waits for the control plane to say so.
    pub fails: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options {
        Options {
            topology: Topology::Sno,
            workers: 2,
            speed: Speed::Instant,
            clusters: 2,
            cluster_file: None,
            report: None,
            dir: PathBuf::new(),
            bin_dir: PathBuf::new(),
            timeout: Duration::from_secs(60),
            keep: false,
            keep_dirs: false,
            chaos: None,
            okd: false,
            managers_as_pods: false,
            replicas: 1,
            kill_leaders: false,
            upgrade: None,
            fail_host: None,
            cluster_class: false,
            scale_control_plane: None,
            disconnected: None,
            image_mode: None,
            shards: 2,
        }
    }

    #[test]
    fn shards_refuse_the_flags_that_assume_one_manager_of_each_kind() {
        assert!(options().one_manager_flags().is_empty());
        let pods = Options {
            managers_as_pods: true,
            kill_leaders: true,
            ..options()
        };
        assert_eq!(
            pods.one_manager_flags(),
            ["--managers pods", "--kill-leaders"]
        );
        let chaos = Options {
            chaos: Some(chaos::Settings {
                seed: 1,
                apiserver: false,
            }),
            cluster_file: Some("c.yaml".into()),
            ..options()
        };
        assert_eq!(chaos.one_manager_flags(), ["--chaos", "--cluster-file"]);
        assert_eq!(
            chaos.refuse_shards().map_err(|e| e.to_string()),
            Err("--shards 2: not with --chaos, --cluster-file (they assume one manager of each kind; the shards run as processes: --managers processes)".into())
        );
        // One shard is the lab as before: nothing refused.
        assert!(Options { shards: 1, ..chaos }.refuse_shards().is_ok());
    }
}
