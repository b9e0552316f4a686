//! Install stage names and who reports which of them.
//!
//! The installer on the host reports everything up to and including "Rebooting"; after the
//! reboot the in-cluster controller reports the rest. Strings are the upstream `host-stage`
//! values, which the server matches exactly.

pub const STARTING_INSTALLATION: &str = "Starting installation";
pub const INSTALLING: &str = "Installing";
pub const WRITING_IMAGE_TO_DISK: &str = "Writing image to disk";
pub const WAITING_FOR_CONTROL_PLANE: &str = "Waiting for control plane";
pub const WAITING_FOR_BOOTKUBE: &str = "Waiting for bootkube";
pub const WAITING_FOR_CONTROLLER: &str = "Waiting for controller";
pub const REBOOTING: &str = "Rebooting";
pub const WAITING_FOR_IGNITION: &str = "Waiting for ignition";
pub const CONFIGURING: &str = "Configuring";
pub const JOINED: &str = "Joined";
pub const DONE: &str = "Done";
pub const FAILED: &str = "Failed";

/// The role an `install` step asks the host to install as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstallRole {
    Bootstrap,
    Master,
    Arbiter,
    Worker,
}

impl InstallRole {
    pub fn parse(s: &str) -> Option<InstallRole> {
        match s {
            "bootstrap" => Some(InstallRole::Bootstrap),
            "master" => Some(InstallRole::Master),
            "arbiter" => Some(InstallRole::Arbiter),
            "worker" => Some(InstallRole::Worker),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            InstallRole::Bootstrap => "bootstrap",
            InstallRole::Master => "master",
            InstallRole::Arbiter => "arbiter",
            InstallRole::Worker => "worker",
        }
    }

    /// Role as the controller sees it in the hosts list (`role` + `bootstrap`).
    pub fn from_host(role: &str, bootstrap: bool) -> InstallRole {
        match (role, bootstrap) {
            (_, true) => InstallRole::Bootstrap,
            ("worker", _) => InstallRole::Worker,
            ("arbiter", _) => InstallRole::Arbiter,
            _ => InstallRole::Master,
        }
    }
}

/// The cluster file the installer downloads: the bootstrap host (also the SNO host) gets
/// `bootstrap.ign`, everyone else the per-host `<role>-<host_id>.ign`.
pub fn ignition_file_name(role: InstallRole, host_id: &str) -> String {
    match role {
        InstallRole::Bootstrap => "bootstrap.ign".into(),
        r => format!("{}-{host_id}.ign", r.as_str()),
    }
}

/// Stages the installer on the host reports, ending with "Rebooting".
///
/// "Copying registry data to disk" is left out: upstream only uses it for the appliance.
pub fn installer_stages(role: InstallRole, sno: bool) -> &'static [&'static str] {
    match role {
        InstallRole::Bootstrap | InstallRole::Master if sno => &[
            STARTING_INSTALLATION,
            INSTALLING,
            WAITING_FOR_BOOTKUBE,
            WRITING_IMAGE_TO_DISK,
            REBOOTING,
        ],
        InstallRole::Bootstrap => &[
            STARTING_INSTALLATION,
            INSTALLING,
            WRITING_IMAGE_TO_DISK,
            WAITING_FOR_CONTROL_PLANE,
            WAITING_FOR_BOOTKUBE,
            WAITING_FOR_CONTROLLER,
            REBOOTING,
        ],
        InstallRole::Master | InstallRole::Arbiter => &[
            STARTING_INSTALLATION,
            INSTALLING,
            WRITING_IMAGE_TO_DISK,
            REBOOTING,
        ],
        InstallRole::Worker => &[
            STARTING_INSTALLATION,
            INSTALLING,
            WRITING_IMAGE_TO_DISK,
            WAITING_FOR_CONTROL_PLANE,
            REBOOTING,
        ],
    }
}

/// Stages the in-cluster controller reports after "Rebooting", ending with "Done".
/// SNO has no "Configuring" (there is no other node to serve its configuration).
pub fn controller_stages(role: InstallRole, sno: bool) -> &'static [&'static str] {
    match role {
        InstallRole::Bootstrap | InstallRole::Master if sno => &[JOINED, DONE],
        _ => &[CONFIGURING, JOINED, DONE],
    }
}

/// Every stage of the role in order (installer part then controller part).
pub fn all_stages(role: InstallRole, sno: bool) -> Vec<&'static str> {
    let mut v = installer_stages(role, sno).to_vec();
    if role == InstallRole::Worker && !sno {
        // Upstream lists it for workers; it sits between the reboot and the controller's part.
        v.push(WAITING_FOR_IGNITION);
    }
    v.extend_from_slice(controller_stages(role, sno));
    v
}

/// True when `stage` is "Rebooting" or a stage that can only come after it.
pub fn is_rebooting_or_later(stage: &str) -> bool {
    matches!(
        stage,
        REBOOTING | WAITING_FOR_IGNITION | CONFIGURING | JOINED | DONE
    )
}

/// What the controller should report next for a host at `current`, or `None` when the host is
/// not yet rebooted (not the controller's business), already done, or failed.
pub fn next_controller_stage(role: InstallRole, sno: bool, current: &str) -> Option<&'static str> {
    let list = controller_stages(role, sno);
    match current {
        REBOOTING | WAITING_FOR_IGNITION => list.first().copied(),
        _ => {
            let i = list.iter().position(|s| *s == current)?;
            list.get(i + 1).copied()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_sequence() {
        assert_eq!(
            all_stages(InstallRole::Bootstrap, false),
            vec![
                "Starting installation",
                "Installing",
                "Writing image to disk",
                "Waiting for control plane",
                "Waiting for bootkube",
                "Waiting for controller",
                "Rebooting",
                "Configuring",
                "Joined",
                "Done"
            ]
        );
    }

    #[test]
    fn master_sequence() {
        assert_eq!(
            all_stages(InstallRole::Master, false),
            vec![
                "Starting installation",
                "Installing",
                "Writing image to disk",
                "Rebooting",
                "Configuring",
                "Joined",
                "Done"
            ]
        );
        assert_eq!(
            all_stages(InstallRole::Arbiter, false),
            all_stages(InstallRole::Master, false)
        );
    }

    #[test]
    fn worker_sequence() {
        assert_eq!(
            all_stages(InstallRole::Worker, false),
            vec![
                "Starting installation",
                "Installing",
                "Writing image to disk",
                "Waiting for control plane",
                "Rebooting",
                "Waiting for ignition",
                "Configuring",
                "Joined",
                "Done"
            ]
        );
    }

    #[test]
    fn sno_sequence() {
        let want = vec![
            "Starting installation",
            "Installing",
            "Waiting for bootkube",
            "Writing image to disk",
            "Rebooting",
            "Joined",
            "Done",
        ];
        assert_eq!(all_stages(InstallRole::Bootstrap, true), want);
        assert_eq!(all_stages(InstallRole::Master, true), want);
    }

    #[test]
    fn installer_part_ends_at_rebooting() {
        for role in [
            InstallRole::Bootstrap,
            InstallRole::Master,
            InstallRole::Arbiter,
            InstallRole::Worker,
        ] {
            for sno in [false, true] {
                let s = installer_stages(role, sno);
                assert_eq!(s.first(), Some(&STARTING_INSTALLATION));
                assert_eq!(s.last(), Some(&REBOOTING));
                assert_eq!(controller_stages(role, sno).last(), Some(&DONE));
            }
        }
    }

    #[test]
    fn controller_progression() {
        use InstallRole::*;
        assert_eq!(
            next_controller_stage(Master, false, "Rebooting"),
            Some(CONFIGURING)
        );
        assert_eq!(
            next_controller_stage(Master, false, "Configuring"),
            Some(JOINED)
        );
        assert_eq!(next_controller_stage(Master, false, "Joined"), Some(DONE));
        assert_eq!(next_controller_stage(Master, false, "Done"), None);
        assert_eq!(
            next_controller_stage(Worker, false, "Waiting for ignition"),
            Some(CONFIGURING)
        );
        assert_eq!(
            next_controller_stage(Bootstrap, true, "Rebooting"),
            Some(JOINED)
        );
        assert_eq!(next_controller_stage(Master, false, "Installing"), None);
        assert_eq!(next_controller_stage(Master, false, ""), None);
        assert_eq!(next_controller_stage(Master, false, "Failed"), None);
    }

    #[test]
    fn roles_and_ignition_names() {
        assert_eq!(
            InstallRole::parse("bootstrap"),
            Some(InstallRole::Bootstrap)
        );
        assert_eq!(InstallRole::parse("auto-assign"), None);
        assert_eq!(
            InstallRole::from_host("master", true),
            InstallRole::Bootstrap
        );
        assert_eq!(InstallRole::from_host("worker", false), InstallRole::Worker);
        assert_eq!(
            ignition_file_name(InstallRole::Bootstrap, "h"),
            "bootstrap.ign"
        );
        assert_eq!(
            ignition_file_name(InstallRole::Master, "h1"),
            "master-h1.ign"
        );
        assert_eq!(
            ignition_file_name(InstallRole::Worker, "h2"),
            "worker-h2.ign"
        );
        assert!(is_rebooting_or_later("Joined"));
        assert!(!is_rebooting_or_later("Waiting for controller"));
    }
}
