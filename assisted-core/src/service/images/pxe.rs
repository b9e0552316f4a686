//! PXE and minimal-ISO boots: the iPXE script and the initrd overlay.

use super::ImageError;
use super::cpio::Builder;
use super::ignition::{
    PRE_NM_UNIT, ProxySettings, StaticNetworkConfig, env_line, pre_nm_unit, static_network_files,
    with_discovery_delay,
};
use crate::domain::{HostStage, HostStatus};

/// Kernel arguments every discovery PXE boot gets (serial and VGA consoles, live rootfs).
const BASE_KARGS: &str = "random.trust_cpu=on rd.luks.options=discard ignition.firstboot \
ignition.platform.id=metal console=tty1 console=ttyS1,115200n8 \
coreos.inst.persistent-kargs=\"console=tty1 console=ttyS1,115200n8\"";

/// The `ipxe_script_type` query parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpxeScriptType {
    /// Always boot the discovery image.
    #[default]
    DiscoveryImageAlways,
    /// Chain back with the MAC so installed hosts get a 404 and boot from disk.
    BootOrderControl,
}

impl IpxeScriptType {
    /// Parses the query value; `None` for unknown values (the API answers 400).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "" | "discovery-image-always" => Some(Self::DiscoveryImageAlways),
            "boot-order-control" => Some(Self::BootOrderControl),
            _ => None,
        }
    }
}

/// The iPXE script booting the discovery kernel and initrd with the rootfs fetched over
/// HTTP; `kernel_args` are the infra-env's extra arguments, appended last.
pub fn ipxe_script(
    initrd_url: &str,
    kernel_url: &str,
    rootfs_url: &str,
    kernel_args: &[String],
) -> String {
    let mut kernel = format!(
        "kernel {kernel_url} initrd=initrd coreos.live.rootfs_url={rootfs_url} {BASE_KARGS}"
    );
    for arg in kernel_args
        .iter()
        .map(|a| a.trim())
        .filter(|a| !a.is_empty())
    {
        kernel.push(' ');
        kernel.push_str(arg);
    }
    format!("#!ipxe\ninitrd --name initrd {initrd_url}\n{kernel}\nboot\n")
}

/// The boot-order-control script: chain to `script_url` (the plain iPXE script URL)
/// with the host's MAC, so the service can decide per host.
pub fn ipxe_boot_order_control_script(script_url: &str) -> String {
    let sep = if script_url.contains('?') { '&' } else { '?' };
    format!("#!ipxe\nchain {script_url}{sep}mac=${{net0/mac}}\n")
}

/// What the `ipxe-script` file answers a host, as upstream decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpxeAnswer {
    /// The discovery boot script (kernel, initrd, rootfs).
    Discovery,
    /// `ipxe_script_type=boot-order-control` without a MAC: a script that asks again with the
    /// host's MAC, so the service can decide per host.
    Redirect,
    /// The host with this MAC is installed (or past the point where it boots from disk): 404,
    /// so iPXE's chain fails and the firmware goes on to the next boot device, the disk.
    BootFromDisk(String),
    /// Several hosts of the infra-env have this MAC: 500, nothing is booted.
    Ambiguous(usize),
}

/// A host whose inventory has the asked MAC: its state and install stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostWithMac {
    pub id: String,
    pub status: HostStatus,
    pub stage: Option<HostStage>,
}

/// Install stages after which a host boots from its disk (upstream's list).
const DISK_BOOT_STAGES: &[HostStage] = &[
    HostStage::Done,
    HostStage::Configuring,
    HostStage::Joined,
    HostStage::Rebooting,
    HostStage::WaitingForIgnition,
];

/// The answer for a request with `mac` (when given) and the boot-order-control type, given the
/// infra-env's hosts that have that MAC. Pure (upstream: `infraEnvIPXEScript`).
pub fn ipxe_answer(
    mac: Option<&str>,
    boot_order_control: bool,
    hosts: &[HostWithMac],
) -> IpxeAnswer {
    let Some(mac) = mac.filter(|m| !m.is_empty()) else {
        return if boot_order_control {
            IpxeAnswer::Redirect
        } else {
            IpxeAnswer::Discovery
        };
    };
    let h = match hosts {
        [] => return IpxeAnswer::Discovery,
        [h] => h,
        several => return IpxeAnswer::Ambiguous(several.len()),
    };
    let on_disk = match h.status {
        HostStatus::Installed | HostStatus::AddedToExistingCluster => true,
        HostStatus::InstallingInProgress => h.stage.is_some_and(|s| DISK_BOOT_STAGES.contains(&s)),
        _ => false,
    };
    if on_disk {
        IpxeAnswer::BootFromDisk(format!(
            "iPXE booting skipped: host {} with MAC {mac} is {}",
            h.id,
            match (h.status, h.stage) {
                (HostStatus::InstallingInProgress, Some(stage)) => format!("in stage {stage}"),
                (status, _) => format!("{status}"),
            }
        ))
    } else {
        IpxeAnswer::Discovery
    }
}

/// The minimal-ISO initrd overlay: static network files, the unit applying them in the
/// initrd, and a proxy drop-in for the rootfs download. `Ok(None)` when there is nothing
/// to add (the API then answers 204).
pub fn minimal_initrd(
    static_network: &[StaticNetworkConfig],
    proxy: &ProxySettings,
    network_discovery_delay_seconds: u64,
) -> Result<Option<Vec<u8>>, ImageError> {
    if static_network.is_empty() && proxy.is_empty() {
        return Ok(None);
    }
    let mut b = Builder::new();
    if !static_network.is_empty() {
        for (path, mode, data) in static_network_files(static_network)? {
            b.file(&path, mode, data);
        }
        let unit = format!("etc/systemd/system/{PRE_NM_UNIT}");
        b.file(
            &unit,
            0o644,
            with_discovery_delay(
                &pre_nm_unit(
                    "network-pre.target nm-initrd.service NetworkManager.service",
                    "initrd.target",
                ),
                network_discovery_delay_seconds,
            ),
        );
        // The initrd has no systemctl enable step: wire the unit in by symlink.
        b.symlink(
            &format!("etc/systemd/system/initrd.target.wants/{PRE_NM_UNIT}"),
            &format!("../{PRE_NM_UNIT}"),
        );
    }
    if !proxy.is_empty() {
        let mut dropin = String::from("[Service]\n");
        for (k, v) in proxy.env_pairs() {
            dropin += &env_line("proxy", k, v)?;
        }
        b.file(
            "etc/systemd/system/coreos-livepxe-rootfs.service.d/10-proxy.conf",
            0o644,
            dropin,
        );
    }
    Ok(Some(b.finish()))
}

#[cfg(test)]
mod tests {
    use super::super::cpio::{Entry, read};
    use super::super::ignition::MacInterface;
    use super::*;

    fn host(status: HostStatus, stage: Option<HostStage>) -> HostWithMac {
        HostWithMac {
            id: "h1".into(),
            status,
            stage,
        }
    }

    #[test]
    fn ipxe_answers_follow_the_host_with_the_mac() {
        use IpxeAnswer::*;
        let mac = Some("52:54:00:00:00:01");
        // Without a MAC: the redirect for boot-order-control, else the discovery boot.
        assert_eq!(ipxe_answer(None, true, &[]), Redirect);
        assert_eq!(ipxe_answer(Some(""), true, &[]), Redirect);
        assert_eq!(ipxe_answer(None, false, &[]), Discovery);
        // An unknown MAC, or a host still discovering or installing to disk: discovery.
        assert_eq!(ipxe_answer(mac, true, &[]), Discovery);
        for (status, stage) in [
            (HostStatus::Known, None),
            (HostStatus::Insufficient, None),
            (HostStatus::Installing, None),
            (
                HostStatus::InstallingInProgress,
                Some(HostStage::WritingImageToDisk),
            ),
            (HostStatus::Error, Some(HostStage::Rebooting)),
        ] {
            assert_eq!(
                ipxe_answer(mac, true, &[host(status, stage)]),
                Discovery,
                "{status} {stage:?}"
            );
        }
        // Installed, or past its reboot: the disk (the chain fails with 404).
        for (status, stage) in [
            (HostStatus::Installed, None),
            (HostStatus::AddedToExistingCluster, None),
            (HostStatus::InstallingInProgress, Some(HostStage::Rebooting)),
            (
                HostStatus::InstallingInProgress,
                Some(HostStage::Configuring),
            ),
            (HostStatus::InstallingInProgress, Some(HostStage::Joined)),
            (HostStatus::InstallingInProgress, Some(HostStage::Done)),
            (
                HostStatus::InstallingInProgress,
                Some(HostStage::WaitingForIgnition),
            ),
        ] {
            let answer = ipxe_answer(mac, false, &[host(status, stage)]);
            assert!(
                matches!(&answer, BootFromDisk(why) if why.contains("h1") && why.contains("52:54:00:00:00:01")),
                "{status} {stage:?}: {answer:?}"
            );
        }
        let two = [host(HostStatus::Known, None), host(HostStatus::Known, None)];
        assert_eq!(ipxe_answer(mac, true, &two), Ambiguous(2));
    }

    #[test]
    fn ipxe_script_shape() {
        let s = ipxe_script(
            "http://img/images/ie/pxe-initrd?arch=x86_64&version=4.18",
            "http://img/boot-artifacts/kernel?arch=x86_64&version=4.18",
            "http://img/boot-artifacts/rootfs?arch=x86_64&version=4.18",
            &["nameserver=10.0.0.1".into(), " ".into(), "ip=dhcp".into()],
        );
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "#!ipxe");
        assert_eq!(
            lines[1],
            "initrd --name initrd http://img/images/ie/pxe-initrd?arch=x86_64&version=4.18"
        );
        assert!(lines[2].starts_with(
            "kernel http://img/boot-artifacts/kernel?arch=x86_64&version=4.18 initrd=initrd \
             coreos.live.rootfs_url=http://img/boot-artifacts/rootfs?arch=x86_64&version=4.18 random.trust_cpu=on"
        ));
        assert!(lines[2].contains(" ignition.firstboot ignition.platform.id=metal "));
        assert!(lines[2].ends_with("\" nameserver=10.0.0.1 ip=dhcp"));
        assert_eq!(lines[3], "boot");
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn boot_order_control_chains_with_mac() {
        assert_eq!(
            ipxe_boot_order_control_script("http://svc/files?file_name=ipxe-script&api_key=k"),
            "#!ipxe\nchain http://svc/files?file_name=ipxe-script&api_key=k&mac=${net0/mac}\n"
        );
        assert_eq!(
            ipxe_boot_order_control_script("http://svc/script"),
            "#!ipxe\nchain http://svc/script?mac=${net0/mac}\n"
        );
        assert_eq!(
            IpxeScriptType::parse("boot-order-control"),
            Some(IpxeScriptType::BootOrderControl)
        );
        assert_eq!(
            IpxeScriptType::parse(""),
            Some(IpxeScriptType::DiscoveryImageAlways)
        );
        assert_eq!(IpxeScriptType::parse("x"), None);
    }

    #[test]
    fn minimal_initrd_contents() {
        assert_eq!(
            minimal_initrd(&[], &ProxySettings::default(), 0).unwrap(),
            None
        );
        let net = vec![StaticNetworkConfig {
            network_yaml: "interfaces: []\n".into(),
            mac_interface_map: vec![MacInterface {
                mac_address: "52:54:00:00:00:02".into(),
                logical_nic_name: "eno1".into(),
            }],
        }];
        let proxy = ProxySettings {
            https_proxy: Some("http://p:3128".into()),
            ..Default::default()
        };
        let archive = minimal_initrd(&net, &proxy, 0).unwrap().unwrap();
        let entries = read(&archive).unwrap();
        let find = |p: &str| {
            entries.iter().find(|e| matches!(e, Entry::File { path, .. } | Entry::Symlink { path, .. } if path == p))
        };
        let text = |p: &str| match find(p) {
            Some(Entry::File { data, .. }) => String::from_utf8(data.clone()).unwrap(),
            other => panic!("{p}: {other:?}"),
        };
        assert_eq!(
            text("etc/assisted/network/host0/mac_interface.ini"),
            "52:54:00:00:00:02=eno1\n"
        );
        assert_eq!(
            text("etc/assisted/network/host0/ymlFile0.yml"),
            "interfaces: []\n"
        );
        assert!(text("usr/local/bin/pre-network-manager-config.sh").starts_with("#!/bin/bash"));
        assert!(
            text("etc/systemd/system/pre-network-manager-config.service")
                .contains("WantedBy=initrd.target")
        );
        assert!(matches!(
            find("etc/systemd/system/initrd.target.wants/pre-network-manager-config.service"),
            Some(Entry::Symlink { target, .. }) if target == "../pre-network-manager-config.service"
        ));
        let dropin = text("etc/systemd/system/coreos-livepxe-rootfs.service.d/10-proxy.conf");
        assert_eq!(
            dropin,
            "[Service]\nEnvironment=\"HTTPS_PROXY=http://p:3128\"\nEnvironment=\"https_proxy=http://p:3128\"\n"
        );
        // Parents come first so the kernel can create the files.
        let dirs = entries
            .iter()
            .filter(|e| matches!(e, Entry::Dir { .. }))
            .count();
        assert!(dirs >= 5);

        // Proxy only.
        let only_proxy = read(&minimal_initrd(&[], &proxy, 0).unwrap().unwrap()).unwrap();
        assert!(
            only_proxy
                .iter()
                .all(|e| !matches!(e, Entry::File { path, .. } if path.contains("assisted")))
        );
        // Invalid static network is an error, not an empty overlay.
        let mut bad = net.clone();
        bad[0].mac_interface_map[0].mac_address = "nope".into();
        assert!(minimal_initrd(&bad, &proxy, 0).is_err());

        // networkDiscoveryDelaySeconds: the initrd unit passes it to the script.
        let delayed = read(&minimal_initrd(&net, &proxy, 45).unwrap().unwrap()).unwrap();
        let unit = delayed.iter().find_map(|e| match e {
            Entry::File { path, data, .. }
                if path == "etc/systemd/system/pre-network-manager-config.service" =>
            {
                Some(String::from_utf8(data.clone()).unwrap())
            }
            _ => None,
        });
        assert!(
            unit.unwrap()
                .contains("Environment=DISCOVERY_DELAY_SECONDS=45\n")
        );
    }
}
