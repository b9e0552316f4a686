//! A real node for the testbed's cluster, so that managers run as the pods their manifests
//! describe: Debian's containerd and runc, the CNI bridge plugin, and kubelet, kube-proxy and
//! kube-scheduler built by `tests/testbed/build.sh` at the apiserver's version.
//!
//! What it does to the machine, and undoes on drop (root only; one node at a time, a lock file
//! serialises testbeds that ask for one):
//! - a Linux bridge [`BRIDGE`] with [`NODE_IP`]: the node's address, the apiserver's, and the
//!   pods' gateway. Pods get addresses of [`POD_SUBNET`] on it; the Service range is routed onto
//!   it too, so that nothing meant for the cluster ever leaves through another interface;
//! - `iptables` rules that drop whatever would be forwarded into or out of the bridge (the CNI
//!   bridge plugin turns on `net.ipv4.ip_forward`; the old value is restored) and kube-proxy's
//!   own rules (removed with `kube-proxy --cleanup`);
//! - `net.bridge.bridge-nf-call-iptables=1`, so that Service traffic between two pods on the
//!   bridge is translated both ways (restored);
//! - the cgroup `/`[`CGROUP_ROOT`] in every cgroup v1 hierarchy: every pod process lives under it,
//!   so killing its tasks stops every container even though containerd's shims outlive
//!   containerd.
//!
//! Everything else (containerd's root and state, the pods' network namespaces, kubelet's
//! directory, the CNI configuration and address leases) lives in the testbed directory.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Node;

use crate::Testbed;
use crate::process::{free_port, wait_until};

/// The bridge the node's pods and the apiserver share.
pub const BRIDGE: &str = "capoabr0";
/// The node's address on [`BRIDGE`]; the apiserver listens here when the testbed has a node.
pub const NODE_IP: &str = "10.244.0.1";
/// The pods' addresses.
pub const POD_SUBNET: &str = "10.244.0.0/24";
/// The Services' cluster IPs (the apiserver's `--service-cluster-ip-range`).
pub const SERVICE_SUBNET: &str = "10.0.0.0/24";
/// The `kubernetes` Service's cluster IP, the first of [`SERVICE_SUBNET`].
pub const KUBERNETES_SERVICE_IP: &str = "10.0.0.1";
/// The node's name.
pub const NODE_NAME: &str = "capoa-node";
/// The cgroup (in each v1 hierarchy) under which kubelet puts every pod.
pub const CGROUP_ROOT: &str = "capoa-testbed-node";
const LOCK_FILE: &str = "/run/capoa-testbed-node.lock";
const RULE_COMMENT: &str = "capoa-testbed-node";
/// What the node needs from Debian (`tests/testbed/node-packages.sh` installs them).
const HOST_TOOLS: &[(&str, &str)] = &[
    ("/usr/bin/containerd", "containerd"),
    ("/usr/bin/ctr", "containerd"),
    ("/usr/sbin/runc", "runc"),
    ("/usr/sbin/iptables", "iptables"),
    ("/usr/sbin/conntrack", "conntrack"),
    ("/usr/lib/cni/bridge", "containernetworking-plugins"),
    ("/usr/lib/cni/host-local", "containernetworking-plugins"),
    ("/usr/lib/cni/loopback", "containernetworking-plugins"),
    ("/usr/lib/cni/portmap", "containernetworking-plugins"),
];
const IP_FORWARD: &str = "/proc/sys/net/ipv4/ip_forward";
const BRIDGE_NF: &str = "/proc/sys/net/bridge/bridge-nf-call-iptables";

/// The machine-wide state a node changes, held from before the apiserver starts (it binds
/// [`NODE_IP`]) until the testbed is dropped.
pub struct NodeHost {
    /// The node's directory inside the testbed directory.
    pub dir: PathBuf,
    /// containerd's socket.
    pub containerd_socket: PathBuf,
    kube_proxy: PathBuf,
    saved_sysctls: Vec<(&'static str, String)>,
    /// Held for the node's life: one node on the machine at a time.
    _lock: File,
}

impl NodeHost {
    /// Checks the machine can run a node, waits for any other testbed's node to be gone, and
    /// sets up the bridge, routes, rules and cgroups.
    pub async fn prepare(testbed_dir: &Path, kube_proxy: PathBuf) -> Result<NodeHost> {
        check_host()?;
        let lock = tokio::task::spawn_blocking(|| -> Result<File> {
            let f = File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(LOCK_FILE)
                .with_context(|| format!("opening {LOCK_FILE}"))?;
            f.lock().with_context(|| format!("locking {LOCK_FILE}"))?;
            Ok(f)
        })
        .await??;
        // A testbed killed outright leaves its node behind: clear it first.
        remove_host_state(&kube_proxy);
        let dir = testbed_dir.join("node");
        std::fs::create_dir_all(&dir)?;
        let mut host = NodeHost {
            containerd_socket: dir.join("containerd.sock"),
            dir,
            kube_proxy,
            saved_sysctls: Vec::new(),
            _lock: lock,
        };
        for path in [IP_FORWARD, BRIDGE_NF] {
            let value = std::fs::read_to_string(path)
                .with_context(|| format!("reading {path}"))?
                .trim()
                .to_owned();
            host.saved_sysctls.push((path, value));
        }
        std::fs::write(BRIDGE_NF, "1").with_context(|| format!("writing {BRIDGE_NF}"))?;
        run("ip", &["link", "add", BRIDGE, "type", "bridge"])?;
        run(
            "ip",
            &["addr", "add", &format!("{NODE_IP}/24"), "dev", BRIDGE],
        )?;
        run("ip", &["link", "set", BRIDGE, "up"])?;
        run(
            "ip",
            &[
                "route",
                "add",
                SERVICE_SUBNET,
                "dev",
                BRIDGE,
                "src",
                NODE_IP,
            ],
        )?;
        for rule in forward_rules() {
            let mut args = vec!["-w", "-I", "FORWARD"];
            args.extend(rule.iter().copied());
            run("iptables", &args)?;
        }
        for hierarchy in cgroup_hierarchies()? {
            let dir = hierarchy.join(CGROUP_ROOT);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("creating cgroup {}", dir.display()))?;
            if hierarchy.ends_with("cpuset") {
                // A new cpuset cgroup starts with no CPUs and no memory nodes.
                for f in ["cpuset.cpus", "cpuset.mems"] {
                    let v = std::fs::read_to_string(hierarchy.join(f))?;
                    std::fs::write(dir.join(f), v.trim())?;
                }
            }
        }
        Ok(host)
    }

    /// SIGKILLs every process of every pod (call after kubelet is stopped, before containerd).
    pub fn kill_pods(&self) {
        kill_cgroup_tasks();
    }
}

impl Drop for NodeHost {
    fn drop(&mut self) {
        kill_cgroup_tasks();
        kill_shims(&self.containerd_socket);
        unmount_under(&self.dir);
        remove_host_state(&self.kube_proxy);
        for (path, value) in &self.saved_sysctls {
            let _ = std::fs::write(path, value);
        }
    }
}

/// The FORWARD rules: nothing forwarded into or out of the bridge, whatever else allows it.
fn forward_rules() -> [Vec<&'static str>; 2] {
    let rule = |from: &'static str, to: &'static str| {
        vec![
            from,
            BRIDGE,
            "!",
            to,
            BRIDGE,
            "-m",
            "comment",
            "--comment",
            RULE_COMMENT,
            "-j",
            "DROP",
        ]
    };
    [rule("-i", "-o"), rule("-o", "-i")]
}

fn check_host() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("a testbed node needs root (it creates a bridge, iptables rules and cgroups)");
    }
    let missing: Vec<String> = HOST_TOOLS
        .iter()
        .filter(|(path, _)| !Path::new(path).exists())
        .map(|(path, pkg)| format!("{path} (Debian package {pkg})"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "a testbed node needs {}; `bash tests/testbed/node-packages.sh` installs them",
            missing.join(", ")
        );
    }
    if !Path::new(BRIDGE_NF).exists() {
        bail!("{BRIDGE_NF} is missing: the kernel's br_netfilter is not loaded");
    }
    Ok(())
}

/// Removes the bridge, the route, the FORWARD rules and kube-proxy's rules, and the node's
/// cgroups, whoever left them.
fn remove_host_state(kube_proxy: &Path) {
    kill_cgroup_tasks();
    let _ = Command::new(kube_proxy)
        .args(["--cleanup", "--v=0"])
        .output();
    for rule in forward_rules() {
        let mut args = vec!["-w", "-D", "FORWARD"];
        args.extend(rule.iter().copied());
        while Command::new("iptables")
            .args(&args)
            .output()
            .is_ok_and(|o| o.status.success())
        {}
    }
    let _ = Command::new("ip").args(["link", "del", BRIDGE]).output();
    if let Ok(hierarchies) = cgroup_hierarchies() {
        for h in hierarchies {
            remove_cgroup_tree(&h.join(CGROUP_ROOT));
        }
    }
}

/// Every mounted cgroup v1 hierarchy (`/sys/fs/cgroup/<controllers>`).
fn cgroup_hierarchies() -> Result<Vec<PathBuf>> {
    let mounts = std::fs::read_to_string("/proc/self/mounts")?;
    let mut out: Vec<PathBuf> = mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, point, fstype) = (f.next()?, f.next()?, f.next()?);
            (fstype == "cgroup").then(|| PathBuf::from(point))
        })
        .collect();
    out.sort();
    out.dedup();
    if out.is_empty() {
        bail!("no cgroup v1 hierarchy is mounted (this node setup is for cgroup v1 machines)");
    }
    Ok(out)
}

/// SIGKILLs every task in the node's cgroups, until none is left (or 10 s).
fn kill_cgroup_tasks() {
    let Ok(hierarchies) = cgroup_hierarchies() else {
        return;
    };
    let start = Instant::now();
    loop {
        let mut pids = Vec::new();
        for h in &hierarchies {
            collect_tasks(&h.join(CGROUP_ROOT), &mut pids);
        }
        pids.sort_unstable();
        pids.dedup();
        if pids.is_empty() || start.elapsed() > Duration::from_secs(10) {
            return;
        }
        for pid in pids {
            // SAFETY: kill has no memory preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn collect_tasks(dir: &Path, pids: &mut Vec<i32>) {
    if let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        pids.extend(procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                collect_tasks(&e.path(), pids);
            }
        }
    }
}

fn remove_cgroup_tree(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup_tree(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// containerd's shims re-parent themselves away from containerd; kill the ones serving ours.
fn kill_shims(socket: &Path) {
    let needle = socket.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains("containerd-shim") && cmdline.contains(&needle) {
            // SAFETY: kill has no memory preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Lazily unmounts everything mounted under `dir`, deepest first: the containers' root
/// filesystems, the pods' network namespaces and kubelet's volumes.
fn unmount_under(dir: &Path) {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let prefix = dir.display().to_string();
    let mut points: Vec<String> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape_mount_path)
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        if let Ok(c) = std::ffi::CString::new(p) {
            // SAFETY: c is a valid NUL-terminated path.
            unsafe {
                libc::umount2(c.as_ptr(), libc::MNT_DETACH);
            }
        }
    }
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mount_path(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let digits: String = (0..3).filter_map(|_| chars.next()).collect();
            match u8::from_str_radix(&digits, 8) {
                Ok(b) => out.push(b as char),
                Err(_) => {
                    out.push('\\');
                    out.push_str(&digits);
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn run(program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        bail!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// containerd's configuration: everything under the node's directory, the test bed's sandbox
/// image, cgroupfs, oom_score_adj never lowered (this VM refuses negative values).
pub fn containerd_config(dir: &Path, socket: &Path, sandbox_image: &str) -> String {
    let d = dir.display();
    format!(
        r#"version = 2
root = "{d}/containerd/root"
state = "{d}/containerd/state"
[grpc]
  address = "{socket}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox_image}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{d}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
"#,
        socket = socket.display()
    )
}

/// The CNI network: the bridge plugin on [`BRIDGE`], addresses from [`POD_SUBNET`] (leases
/// kept in the node's directory), no masquerading (nothing leaves the machine).
pub fn cni_config(dir: &Path) -> String {
    serde_json::json!({
        "cniVersion": "1.0.0",
        "name": "capoa-testbed",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": true,
                "ipMasq": false,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET, "rangeStart": "10.244.0.10", "gateway": NODE_IP}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": dir.join("cni/leases"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": true}},
        ],
    })
    .to_string()
}

/// The kubelet's configuration (YAML); `tls` is its serving certificate and key.
pub fn kubelet_config(dir: &Path, socket: &Path, ca: &Path, tls: (&Path, &Path)) -> String {
    let d = dir.display();
    format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {NODE_IP}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: true}}
  x509: {{clientCAFile: {ca}}}
authorization: {{mode: Webhook}}
tlsCertFile: {cert}
tlsPrivateKeyFile: {key}
containerRuntimeEndpoint: unix://{socket}
cgroupDriver: cgroupfs
cgroupRoot: /{CGROUP_ROOT}
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
podLogsDir: {d}/pod-logs
resolvConf: {d}/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {{memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}}
maxPods: 110
",
        ca = ca.display(),
        cert = tls.0.display(),
        key = tls.1.display(),
        socket = socket.display(),
    )
}

/// kube-proxy's configuration (YAML): iptables mode, NodePorts only on [`NODE_IP`], conntrack
/// sysctls left alone, oom_score_adj not lowered.
pub fn kube_proxy_config(kubeconfig: &Path, healthz: u16, metrics: u16) -> String {
    format!(
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {{kubeconfig: {kc}}}
mode: iptables
clusterCIDR: {POD_SUBNET}
hostnameOverride: {NODE_NAME}
bindAddress: {NODE_IP}
healthzBindAddress: 127.0.0.1:{healthz}
metricsBindAddress: 127.0.0.1:{metrics}
nodePortAddresses: [{NODE_IP}/32]
oomScoreAdj: 0
conntrack: {{maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}}
",
        kc = kubeconfig.display()
    )
}

/// Starts containerd, imports `images` (OCI archives) into its `k8s.io` namespace, then
/// kubelet, kube-proxy and kube-scheduler, and waits until the node is Ready.
pub async fn start(tb: &mut Testbed, images: &[PathBuf]) -> Result<()> {
    let host = tb.node.as_ref().context("the testbed has no node host")?;
    let dir = host.dir.clone();
    let socket = host.containerd_socket.clone();
    for d in ["cni/net.d", "cni/leases", "kubelet", "pod-logs", "pki"] {
        std::fs::create_dir_all(dir.join(d))?;
    }
    std::fs::write(dir.join("resolv.conf"), "")?;
    let sandbox_image = tb.cache.version("PAUSE_IMAGE")?;
    let config = dir.join("containerd.toml");
    std::fs::write(&config, containerd_config(&dir, &socket, &sandbox_image))?;
    let containerd = tb.spawn(
        "containerd",
        Path::new("/usr/bin/containerd"),
        &["--config".to_owned(), config.display().to_string()],
        &[],
    )?;
    let sock = socket.clone();
    wait_until(
        "containerd",
        containerd,
        Duration::from_secs(30),
        async || Ok(sock.exists()),
    )
    .await?;
    let mut all = vec![tb.cache.image("pause.tar")];
    all.extend(images.iter().cloned());
    for archive in &all {
        let out = Command::new("ctr")
            .arg("--address")
            .arg(&socket)
            .args(["-n", "k8s.io", "images", "import", "--no-unpack"])
            .arg(archive)
            .output()
            .context("running ctr images import")?;
        if !out.status.success() {
            bail!(
                "importing {} into the node's containerd: {}",
                archive.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
    std::fs::write(
        dir.join("cni/net.d/10-capoa-testbed.conflist"),
        cni_config(&dir),
    )?;

    let ca = dir.join("pki/ca.crt");
    std::fs::write(&ca, tb.ca_pem())?;
    let serving = tb
        .ca
        .serving_for(NODE_NAME, &[NODE_IP, NODE_NAME, "127.0.0.1"])?;
    let (cert, key) = (dir.join("pki/kubelet.crt"), dir.join("pki/kubelet.key"));
    std::fs::write(&cert, &serving.cert_pem)?;
    std::fs::write(&key, &serving.key_pem)?;
    let kubelet_config_file = dir.join("kubelet.yaml");
    std::fs::write(
        &kubelet_config_file,
        kubelet_config(&dir, &socket, &ca, (&cert, &key)),
    )?;
    let node_kc = tb.write_kubeconfig_as(
        &dir.join("kubelet.kubeconfig"),
        &format!("system:node:{NODE_NAME}"),
        Some("system:nodes"),
    )?;
    let args = vec![
        format!("--config={}", kubelet_config_file.display()),
        format!("--kubeconfig={}", node_kc.display()),
        format!("--root-dir={}", dir.join("kubelet").display()),
        format!("--hostname-override={NODE_NAME}"),
        format!("--node-ip={NODE_IP}"),
        "--v=1".to_owned(),
    ];
    let bin = tb.cache.bin("kubelet");
    tb.spawn("kubelet", &bin, &args, &[])?;

    let proxy_kc = tb.write_kubeconfig_as(
        &dir.join("kube-proxy.kubeconfig"),
        "system:kube-proxy",
        None,
    )?;
    let proxy_config = dir.join("kube-proxy.yaml");
    std::fs::write(
        &proxy_config,
        kube_proxy_config(&proxy_kc, free_port()?, free_port()?),
    )?;
    let bin = tb.cache.bin("kube-proxy");
    tb.spawn(
        "kube-proxy",
        &bin,
        &[format!("--config={}", proxy_config.display())],
        &[],
    )?;

    let sched_kc = tb.write_kubeconfig_as(
        &dir.join("kube-scheduler.kubeconfig"),
        "system:kube-scheduler",
        None,
    )?;
    let kc = sched_kc.display().to_string();
    let args = vec![
        format!("--kubeconfig={kc}"),
        format!("--authentication-kubeconfig={kc}"),
        format!("--authorization-kubeconfig={kc}"),
        "--leader-elect=false".to_owned(),
        "--bind-address=127.0.0.1".to_owned(),
        format!("--secure-port={}", free_port()?),
        format!("--cert-dir={}", dir.join("pki").display()),
    ];
    let bin = tb.cache.bin("kube-scheduler");
    tb.spawn("kube-scheduler", &bin, &args, &[])?;

    create_volumes(tb, &dir).await?;

    let nodes: kube::Api<Node> = kube::Api::all(tb.client.clone());
    let start = Instant::now();
    loop {
        tb.check_running()?;
        if let Some(node) = nodes.get_opt(NODE_NAME).await? {
            let ready = node_ready(&node);
            let tainted = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| !t.is_empty());
            if ready && !tainted {
                return Ok(());
            }
        }
        if start.elapsed() > Duration::from_secs(120) {
            bail!(
                "node {NODE_NAME} not Ready and untainted after 120 s; logs in {}",
                tb.dir.join("logs").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// How many PersistentVolumes the node offers, and their size.
pub const VOLUMES: usize = 2;
pub const VOLUME_SIZE: &str = "100Gi";

/// The node's storage: [`VOLUMES`] `hostPath` PersistentVolumes of [`VOLUME_SIZE`] without a
/// StorageClass, so that a claim that names none (and finds no default class) binds to one, as
/// a cluster's default storage would provide. Directories in the node's directory, writable by
/// any user (`hostPath` volumes get no `fsGroup`).
async fn create_volumes(tb: &Testbed, dir: &Path) -> Result<()> {
    use k8s_openapi::api::core::v1::PersistentVolume;
    use std::os::unix::fs::PermissionsExt;
    let api: kube::Api<PersistentVolume> = kube::Api::all(tb.client.clone());
    for i in 0..VOLUMES {
        let path = dir.join(format!("volumes/pv-{i}"));
        std::fs::create_dir_all(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
        let pv: PersistentVolume = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": format!("{NODE_NAME}-pv-{i}")},
            "spec": {
                "capacity": {"storage": VOLUME_SIZE},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": path, "type": "Directory"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE_NAME]},
                ]}]}},
            },
        }))?;
        api.create(&Default::default(), &pv)
            .await
            .with_context(|| format!("creating PersistentVolume {NODE_NAME}-pv-{i}"))?;
    }
    Ok(())
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_paths_are_unescaped() {
        assert_eq!(unescape_mount_path(r"/tmp/a\040b"), "/tmp/a b");
        assert_eq!(unescape_mount_path("/plain"), "/plain");
    }

    #[test]
    fn forward_rules_drop_both_directions() {
        let [out, into] = forward_rules();
        assert_eq!(out[..5], ["-i", BRIDGE, "!", "-o", BRIDGE]);
        assert_eq!(into[..5], ["-o", BRIDGE, "!", "-i", BRIDGE]);
        assert_eq!(out.last(), Some(&"DROP"));
    }
}
