//! Everything the lab starts before the clusters: the management and workload testbeds, the
//! site's kubelet network, and our two managers (as processes or as pods).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow};
use assisted_core::service::controllers::day2::NODE_BOOTSTRAPPER;
use assisted_core::service::images::{TestIsoContents, write_test_iso};
use kube::Client;
use testbed::{Testbed, TestbedBuilder};

use crate::managers::{Managers, WorkloadAccess};
use crate::options::Options;
use crate::{apimetrics, kubelet_api, managers, manifests, pods, stamp};

/// Everything the lab started; dropping it stops it all.
pub(crate) struct Lab {
    pub(crate) tb: Testbed,
    pub(crate) workload: Testbed,
    pub(crate) managers: Managers,
    /// The lab's own client of the management apiserver: ServiceAccount
    /// [`apimetrics::LAB`], so that the apiserver counts its requests apart.
    pub(crate) client: Client,
    /// The site's network between the workload apiserver and the kubelets.
    pub(crate) network: Arc<kubelet_api::Network>,
    /// Holds the network's socket (a short path: Unix sockets allow 107 bytes).
    pub(crate) _network_dir: tempfile::TempDir,
}

impl Lab {
    pub(crate) fn logs(&self, dir: &Path) -> Vec<PathBuf> {
        let mut logs = self.managers.logs();
        logs.push(dir.join("logs/lab.log"));
        logs.extend(self.tb.logs());
        logs.extend(self.workload.logs());
        logs
    }
}

/// Starts the management testbed, the workload apiserver and our managers. `core_extra`:
/// more flags for the control-plane manager (its embedded core).
pub(crate) async fn start_lab(
    opts: &Options,
    start: Instant,
    core_extra: &[String],
) -> Result<Lab> {
    let network_dir = tempfile::Builder::new()
        .prefix("labnet")
        .tempdir_in("/tmp")
        .context("creating the site network's directory")?;
    let network = Arc::new(kubelet_api::Network::start(
        &network_dir.path().join("net.sock"),
    )?);
    let (builder, workload_builder) = testbed_builders(opts, start, &network)?;
    let mut tb = builder
        .start()
        .await
        .context("starting the management testbed")?;
    println!("{} starting the workload apiserver", stamp(start));
    let mut workload = match workload_builder.start().await {
        Ok(w) => w,
        Err(e) => {
            tb.keep_dir();
            return Err(e.context("starting the workload testbed"));
        }
    };
    link(&tb.dir, &opts.dir.join("management"));
    link(&workload.dir, &opts.dir.join("workload"));
    match start_managers(opts, start, &tb, &workload, core_extra).await {
        Ok((managers, client)) => Ok(Lab {
            tb,
            workload,
            managers,
            client,
            network,
            _network_dir: network_dir,
        }),
        Err(e) => {
            tb.keep_dir();
            workload.keep_dir();
            Err(e)
        }
    }
}

/// The management testbed's and the workload apiserver's builders: with our managers as pods,
/// the management cluster gets a node (root only) and the workload apiserver listens on the
/// node's address; as processes, a controller-manager stands in.
fn testbed_builders(
    opts: &Options,
    start: Instant,
    network: &kubelet_api::Network,
) -> Result<(TestbedBuilder, TestbedBuilder)> {
    let builder = Testbed::builder().name("lab").clusterctl_init();
    let workload_builder = Testbed::builder()
        .name("lab-workload")
        .kubelet_network(network.socket.clone());
    if !opts.managers_as_pods {
        println!(
            "{} starting the management cluster: etcd, kube-apiserver, kube-controller-manager; `clusterctl init` of Cluster API, CAPM3 (metal3) and our two providers; Cluster API, CAPM3 and baremetal-operator as processes",
            stamp(start)
        );
        return Ok((builder.controller_manager(), workload_builder));
    }
    // /proc/self belongs to the process's effective user.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self")?);
    if uid != 0 {
        anyhow::bail!(
            "our managers as pods need a node, and a node needs root (a bridge, iptables \
             rules, cgroups); run as root, or with --managers processes"
        );
    }
    println!(
        "{} starting the management cluster with a node: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, containerd; `clusterctl init` of cert-manager, Cluster API, CAPM3 (metal3) and our two providers, all as pods (ours from `make images`), and baremetal-operator (fixture provisioner) as the pod of its own manifests",
        stamp(start)
    );
    // Where the site's hosts reach the core: required by `clusterctl init`.
    let (agent_api_url, images_url) = pods::site_urls();
    let builder = builder
        .node()
        .node_images(testbed::cache::our_images()?)
        .clusterctl_variable("OPENSHIFT_ASSISTED_CORE_AGENT_API_URL", &agent_api_url)
        .clusterctl_variable("OPENSHIFT_ASSISTED_CORE_IMAGES_URL", &images_url);
    // The control-plane pod's lab backend reaches the workload apiserver at the node's
    // address.
    Ok((builder, workload_builder.listen_on(testbed::node::NODE_IP)))
}

/// Once both apiservers run: what the managers need there, the lab's own client, and the
/// managers started (as pods or as processes).
async fn start_managers(
    opts: &Options,
    start: Instant,
    tb: &Testbed,
    workload: &Testbed,
    core_extra: &[String],
) -> Result<(Managers, Client)> {
    prepare_workload_apiserver(workload).await?;
    add_client_identities(opts, tb).await?;
    let kc = write_kubeconfigs(opts, tb).await?;
    let client = apimetrics::client_from(&kc[0]).await?;
    let (iso, workload_access) = write_backend_files(opts, workload)?;
    if opts.managers_as_pods {
        println!(
            "{} our managers' pods: the lab install backend's flags and files for {}, a NodePort Service for the core's agent API and images",
            stamp(start),
            managers::CONTROLPLANE,
        );
        let node_dir = tb.dir.join("node");
        let (files, iso_in_pod, access_in_pod) =
            pods::stage_files(&node_dir.join("lab-files"), &iso, &workload_access)?;
        let managers = pods::start(
            &tb.client,
            &node_dir,
            &files,
            &iso_in_pod,
            &access_in_pod,
            opts.replicas.try_into().unwrap_or(1),
            core_extra,
        )
        .await?;
        return Ok((managers, client));
    }
    if opts.shards > 1 {
        println!(
            "{} starting our managers as {} shards: shard i is {}-shard-<i> (embedded assisted-core, lab install backend) and {}-shard-<i>, both with --watch-filter=shard-<i>; the webhooks go to shard 0's",
            stamp(start),
            opts.shards,
            managers::CONTROLPLANE,
            managers::BOOTSTRAP
        );
    } else {
        println!(
            "{} starting our managers: {} (embedded assisted-core, lab install backend) and {}",
            stamp(start),
            managers::CONTROLPLANE,
            managers::BOOTSTRAP
        );
    }
    let managers = managers::start(
        &opts.bin_dir,
        &opts.dir,
        [&kc[1], &kc[2]],
        &iso,
        &workload_access,
        core_extra,
        opts.shards,
    )
    .await?;
    // clusterctl created the managers' Deployments too; with no kubelet they stay Pending,
    // and the processes above stand in for them (webhooks included).
    managers::point_webhooks(tb, &managers).await?;
    Ok((managers, client))
}

/// The workload apiserver's RBAC for the node bootstrapper and the OpenShift APIs the
/// installed cluster serves (ClusterVersion), from openshift/api.
async fn prepare_workload_apiserver(workload: &Testbed) -> Result<()> {
    workload
        .apply_yaml(&manifests::workload_rbac_yaml(NODE_BOOTSTRAPPER))
        .await
        .context("workload RBAC")?;
    for crd in testbed::cache::openshift_crds()? {
        let yaml =
            std::fs::read_to_string(&crd).with_context(|| format!("reading {}", crd.display()))?;
        workload
            .apply_yaml(&yaml)
            .await
            .with_context(|| format!("installing {} in the workload apiserver", crd.display()))?;
    }
    Ok(())
}

/// Our managers and the lab itself talk to the management apiserver as ServiceAccounts with
/// FlowSchemas of their own, so that its metrics count their requests apart.
async fn add_client_identities(opts: &Options, tb: &Testbed) -> Result<()> {
    if opts.managers_as_pods {
        // The pods run as their own ServiceAccounts; only the FlowSchemas are added.
        let mut yaml = apimetrics::identities_yaml(&[apimetrics::LAB]);
        for (i, (name, (ns, sa))) in [managers::CONTROLPLANE, managers::BOOTSTRAP]
            .iter()
            .zip(pods::service_accounts())
            .enumerate()
        {
            yaml.push_str(&apimetrics::flow_schemas_yaml(name, ns, sa, 90 + 2 * i));
        }
        tb.apply_yaml(&yaml)
            .await
            .context("the lab's ServiceAccount and the FlowSchemas")?;
    } else {
        tb.apply_yaml(&apimetrics::identities_yaml(&[
            managers::CONTROLPLANE,
            managers::BOOTSTRAP,
            apimetrics::LAB,
        ]))
        .await
        .context("the lab's clients' ServiceAccounts and FlowSchemas")?;
    }
    Ok(())
}

/// The management CA and a kubeconfig per identity: the lab's, then (as processes) the
/// managers'.
async fn write_kubeconfigs(opts: &Options, tb: &Testbed) -> Result<Vec<PathBuf>> {
    let mgmt_ca = opts.dir.join("management-ca.crt");
    std::fs::write(&mgmt_ca, tb.ca_pem()).context("writing the management CA")?;
    let kubeconfigs = opts.dir.join("kubeconfigs");
    let mut identities = vec![apimetrics::LAB];
    if !opts.managers_as_pods {
        identities.extend([managers::CONTROLPLANE, managers::BOOTSTRAP]);
    }
    let mut kc = Vec::new();
    for name in identities {
        kc.push(
            apimetrics::write_kubeconfig(&tb.client, &tb.server, &mgmt_ca, name, &kubeconfigs)
                .await?,
        );
    }
    Ok(kc)
}

/// The lab install backend's files: the workload CA and its key (the admin kubeconfig the
/// backend publishes is valid against the workload apiserver: its server CA is trusted and
/// its client CA signs the admin certificate) and the test ISO.
fn write_backend_files(opts: &Options, workload: &Testbed) -> Result<(PathBuf, WorkloadAccess)> {
    let ca_file = opts.dir.join("workload-ca.crt");
    let ca_key_file = opts.dir.join("workload-ca.key");
    std::fs::write(&ca_file, workload.ca_pem()).context("writing the workload CA")?;
    std::fs::write(&ca_key_file, workload.ca_key_pem()).context("writing the workload CA")?;
    let iso = opts.dir.join("base.iso");
    let contents = TestIsoContents {
        kernel: b"k",
        initrd: b"i",
        rootfs: b"r",
    };
    write_test_iso(&iso, &contents, 256 * 1024)
        .map_err(|e| anyhow!("writing the test ISO: {e}"))?;
    let workload_access = WorkloadAccess {
        api_url: workload.server.clone(),
        ca_file,
        ca_key_file,
    };
    Ok((iso, workload_access))
}

/// A symlink in the lab directory to a testbed's directory (best effort: only a convenience).
pub(crate) fn link(target: &Path, at: &Path) {
    let _ = std::fs::remove_file(at);
    let _ = std::os::unix::fs::symlink(target, at);
}
