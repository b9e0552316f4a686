//! Install stages per role, percentages and the no-going-back rule.

use super::types::{HostRole, HostStage};

use HostStage::*;

const BOOTSTRAP: &[HostStage] = &[
    StartingInstallation,
    Installing,
    WritingImageToDisk,
    CopyingRegistryDataToDisk,
    WaitingForControlPlane,
    WaitingForBootkube,
    WaitingForController,
    Rebooting,
    Configuring,
    Joined,
    Done,
];

const MASTER: &[HostStage] = &[
    StartingInstallation,
    Installing,
    WritingImageToDisk,
    CopyingRegistryDataToDisk,
    Rebooting,
    Configuring,
    Joined,
    Done,
];

const WORKER: &[HostStage] = &[
    StartingInstallation,
    Installing,
    WritingImageToDisk,
    WaitingForControlPlane,
    Rebooting,
    WaitingForIgnition,
    Configuring,
    Joined,
    Done,
];

const SNO: &[HostStage] = &[
    StartingInstallation,
    Installing,
    WaitingForBootkube,
    WritingImageToDisk,
    CopyingRegistryDataToDisk,
    Rebooting,
    Joined,
    Done,
];

/// The ordered stages a host of this install role walks through.
pub fn stages_for(role: HostRole, sno: bool) -> &'static [HostStage] {
    match role {
        HostRole::Bootstrap | HostRole::Master if sno => SNO,
        HostRole::Bootstrap => BOOTSTRAP,
        HostRole::Master | HostRole::Arbiter => MASTER,
        HostRole::Worker | HostRole::AutoAssign => WORKER,
    }
}

/// `(index+1)/len*100` for a stage in the role's list; `None` for stages not in it (e.g. Failed).
pub fn stage_percentage(role: HostRole, sno: bool, stage: HostStage) -> Option<u8> {
    let list = stages_for(role, sno);
    let i = list.iter().position(|s| *s == stage)?;
    Some((((i + 1) * 100) / list.len()) as u8)
}

/// True when moving from `current` to `next` would go backwards in the role's stage list.
pub fn is_backwards(
    role: HostRole,
    sno: bool,
    current: Option<HostStage>,
    next: HostStage,
) -> bool {
    let list = stages_for(role, sno);
    let pos = |s: HostStage| list.iter().position(|x| *x == s);
    match (current.and_then(pos), pos(next)) {
        (Some(cur), Some(new)) => new < cur,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_percentages() {
        assert_eq!(stages_for(HostRole::Bootstrap, false).len(), 11);
        assert_eq!(stages_for(HostRole::Master, false).len(), 8);
        assert_eq!(
            stages_for(HostRole::Arbiter, false),
            stages_for(HostRole::Master, false)
        );
        assert_eq!(stages_for(HostRole::Worker, false).len(), 9);
        assert_eq!(stages_for(HostRole::Master, true).len(), 8);
        assert_eq!(stages_for(HostRole::Bootstrap, true)[2], WaitingForBootkube);
        assert_eq!(stage_percentage(HostRole::Master, false, Done), Some(100));
        assert_eq!(
            stage_percentage(HostRole::Master, false, StartingInstallation),
            Some(12)
        );
        assert_eq!(
            stage_percentage(HostRole::Worker, false, Rebooting),
            Some(55)
        );
        assert_eq!(stage_percentage(HostRole::Worker, false, Failed), None);
    }

    #[test]
    fn no_going_back() {
        assert!(is_backwards(
            HostRole::Master,
            false,
            Some(Rebooting),
            Installing
        ));
        assert!(!is_backwards(
            HostRole::Master,
            false,
            Some(Installing),
            Rebooting
        ));
        assert!(!is_backwards(
            HostRole::Master,
            false,
            Some(Rebooting),
            Rebooting
        ));
        assert!(!is_backwards(HostRole::Master, false, None, Done));
        // Stages outside the role's list never count as backwards.
        assert!(!is_backwards(
            HostRole::Master,
            false,
            Some(Joined),
            WaitingForIgnition
        ));
    }
}
