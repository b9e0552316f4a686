//! Agent ↔ Machine by boot MAC. Pure: no client, no clock.
//!
//! CAPOA's Agent controller finds an Agent's Machine through the InfraEnv it booted from (one
//! InfraEnv per Machine). With one InfraEnv per template many hosts boot the same image, so the
//! link is the hardware: the Agent whose inventory has the `bootMACAddress` of the BareMetalHost
//! a Machine's Metal3Machine consumes belongs to that Machine. Anything ambiguous approves
//! nobody: installing OpenShift on the wrong server is not recoverable.

use std::collections::{BTreeMap, BTreeSet};

use assisted_api::agent::Agent;
use external_types::capi::Machine;
use external_types::capm3::v1beta2::Metal3Machine;
use external_types::metal3_io::BareMetalHost;
use kube::ResourceExt;

/// On a Metal3Machine once CAPM3 has claimed a host: `<namespace>/<name>` of the host.
pub const BAREMETALHOST_ANNOTATION: &str = "metal3.io/BareMetalHost";
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";

/// A normalised MAC address: lower-case hex octets joined by `:`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mac(String);

impl Mac {
    /// Parses `aa:bb:cc:dd:ee:ff` or `aa-bb-...` (any case) with 6, 8 or 20 octets, the lengths
    /// Go's `net.ParseMAC` (which baremetal-operator validates with) accepts. None otherwise.
    pub fn parse(s: &str) -> Option<Mac> {
        let s = s.trim();
        let sep = if s.contains(':') { ':' } else { '-' };
        let octets: Vec<&str> = s.split(sep).collect();
        if !matches!(octets.len(), 6 | 8 | 20)
            || !octets
                .iter()
                .all(|o| o.len() == 2 && o.chars().all(|c| c.is_ascii_hexdigit()))
        {
            return None;
        }
        Some(Mac(octets.join(":").to_ascii_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What matching needs of an Agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentInput {
    pub name: String,
    /// `status.inventory.interfaces[].macAddress`, as reported (unparsed).
    pub macs: Vec<String>,
}

impl AgentInput {
    pub fn from_agent(agent: &Agent) -> Self {
        AgentInput {
            name: agent.name_any(),
            macs: agent
                .status
                .as_ref()
                .map(|s| {
                    s.inventory
                        .interfaces
                        .iter()
                        .map(|i| i.mac_address.clone())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// What matching needs of a Machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineInput {
    pub name: String,
    pub control_plane: bool,
    /// The host its Metal3Machine consumes; None until CAPM3 has claimed one.
    pub host: Option<HostInput>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostInput {
    pub namespace: String,
    pub name: String,
    /// `spec.bootMACAddress`, as written (unparsed).
    pub boot_mac: Option<String>,
}

impl MachineInput {
    /// From the Machine, its Metal3Machine and the BareMetalHost the Metal3Machine's
    /// `metal3.io/BareMetalHost` annotation names (None when not read or not found). A claim
    /// whose host was not found counts as no host: nothing is known of its boot MAC.
    pub fn from_objects(
        machine: &Machine,
        metal3machine: Option<&Metal3Machine>,
        host: Option<&BareMetalHost>,
    ) -> Self {
        let claimed = metal3machine.and_then(host_of);
        MachineInput {
            name: machine.name_any(),
            control_plane: machine.labels().contains_key(CONTROL_PLANE_LABEL),
            host: claimed.and_then(|(namespace, name)| {
                let host = host.filter(|h| {
                    h.name_any() == name && h.namespace().unwrap_or_default() == namespace
                })?;
                Some(HostInput {
                    boot_mac: host.spec.boot_mac_address.clone(),
                    namespace,
                    name,
                })
            }),
        }
    }
}

/// The `(namespace, name)` of the host a Metal3Machine consumes, from CAPM3's annotation. A
/// value without a namespace means the Metal3Machine's own (CAPM3 claims in-namespace only).
pub fn host_of(metal3machine: &Metal3Machine) -> Option<(String, String)> {
    let value = metal3machine
        .annotations()
        .get(BAREMETALHOST_ANNOTATION)?
        .trim();
    let (namespace, name) = match value.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (
            metal3machine.namespace().unwrap_or_default(),
            value.to_string(),
        ),
    };
    (!name.is_empty()).then_some((namespace, name))
}

/// The outcome for one Agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentMatch {
    /// The Agent belongs to this Machine.
    Matched {
        machine: String,
        control_plane: bool,
    },
    /// No Machine's host has any of the Agent's MACs; left unapproved.
    NoMachine(NoMachineReason),
    /// Ambiguous; neither the Agent nor any other claimant is approved.
    Conflict(ConflictReason),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoMachineReason {
    #[error("Agent {agent} has reported no network interfaces yet")]
    NoInventory { agent: String },
    #[error("Agent {agent} reports no valid MAC address (read: {macs:?})")]
    NoValidMac { agent: String, macs: Vec<String> },
    #[error(
        "no Machine's BareMetalHost has a bootMACAddress among Agent {agent}'s MACs ({}); check the hosts' bootMACAddress",
        join(.macs)
    )]
    NoMatchingHost { agent: String, macs: Vec<Mac> },
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConflictReason {
    #[error(
        "Agents {} all match Machine {machine} (boot MAC of BareMetalHost {host}); none is approved until only one remains",
        .agents.join(", ")
    )]
    SharedMachine {
        machine: String,
        host: String,
        agents: Vec<String>,
    },
    #[error(
        "Agent {agent} has the boot MACs of several Machines' hosts ({}); none is approved until the hosts' bootMACAddress are distinct",
        .machines.join(", ")
    )]
    SeveralMachines {
        agent: String,
        machines: Vec<String>,
    },
}

fn join(macs: &[Mac]) -> String {
    macs.iter().map(Mac::as_str).collect::<Vec<_>>().join(", ")
}

/// A Machine that cannot be matched yet, and why (reported on the Machine's config through
/// [`host_problem`]; the Agent side is reported through [`AgentMatch`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MachineProblem {
    #[error(
        "Machine {machine}: its Metal3Machine has not claimed a BareMetalHost yet (or the host it names was not found)"
    )]
    NoHost { machine: String },
    #[error(
        "Machine {machine}: BareMetalHost {host} has no bootMACAddress, so its Agent cannot be matched"
    )]
    NoBootMac { machine: String, host: String },
    #[error("Machine {machine}: BareMetalHost {host} has the malformed bootMACAddress {mac:?}")]
    MalformedBootMac {
        machine: String,
        host: String,
        mac: String,
    },
    /// `machines[i]` consumes `hosts[i]`; sorted by Machine name.
    #[error("Machines {} all consume hosts with boot MAC {mac}", .machines.join(", "))]
    DuplicateBootMac {
        mac: Mac,
        machines: Vec<String>,
        hosts: Vec<String>,
    },
}

/// `Ready` reason on a config whose Machine's BareMetalHost has no `bootMACAddress`.
pub const BAREMETALHOST_WITHOUT_BOOT_MAC: &str = "BareMetalHostWithoutBootMAC";
/// `Ready` reason on a config whose Machine's BareMetalHost has a malformed `bootMACAddress`.
pub const INVALID_BOOT_MAC: &str = "InvalidBootMAC";
/// `Ready` reason on a config whose Machine's BareMetalHost shares its boot MAC with the host
/// of another Machine.
pub const DUPLICATE_BOOT_MAC: &str = "DuplicateBootMAC";
/// Every reason [`host_problem`] gives.
pub const HOST_PROBLEM_REASONS: &[&str] = &[
    BAREMETALHOST_WITHOUT_BOOT_MAC,
    INVALID_BOOT_MAC,
    DUPLICATE_BOOT_MAC,
];

/// What a config shows (on `Ready`, and in a Warning event) when its Machine's BareMetalHost
/// keeps the Machine's Agent from being matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostProblem {
    pub reason: &'static str,
    pub message: String,
}

/// The problem boot-MAC matching has with `machine`'s BareMetalHost, if any: no
/// `bootMACAddress`, a malformed one, or one the host of another Machine has too. Each names the
/// host and what to fix.
///
/// A Machine without a host ([`MachineProblem::NoHost`]) is not a problem of its config:
/// before the data Secret exists CAPM3 claims no host (it waits for the bootstrap data), and
/// after it a Machine waiting for a free host is CAPM3's to report on the Metal3Machine.
pub fn host_problem(machine: &str, problems: &[MachineProblem]) -> Option<HostProblem> {
    problems.iter().find_map(|p| match p {
        MachineProblem::NoHost { .. } => None,
        MachineProblem::NoBootMac { machine: m, host } if m == machine => Some(HostProblem {
            reason: BAREMETALHOST_WITHOUT_BOOT_MAC,
            message: format!(
                "BareMetalHost {host}, claimed by Machine {machine}, has no spec.bootMACAddress: \
                 the Agent that registers from it cannot be matched to the Machine and stays \
                 unapproved; set the host's bootMACAddress to the MAC of the NIC it boots from"
            ),
        }),
        MachineProblem::MalformedBootMac {
            machine: m,
            host,
            mac,
        } if m == machine => Some(HostProblem {
            reason: INVALID_BOOT_MAC,
            message: format!(
                "BareMetalHost {host}, claimed by Machine {machine}, has spec.bootMACAddress \
                 {mac:?}, which is not a MAC address (such as 52:54:00:aa:bb:cc): the Agent that \
                 registers from it cannot be matched to the Machine and stays unapproved; correct \
                 the host's bootMACAddress"
            ),
        }),
        MachineProblem::DuplicateBootMac {
            mac,
            machines,
            hosts,
        } => {
            let own = machines.iter().position(|m| m == machine)?;
            let others: Vec<String> = machines
                .iter()
                .zip(hosts)
                .enumerate()
                .filter(|(i, _)| *i != own)
                .map(|(_, (m, h))| format!("{h} (Machine {m})"))
                .collect();
            let host = hosts.get(own).map(String::as_str).unwrap_or_default();
            Some(HostProblem {
                reason: DUPLICATE_BOOT_MAC,
                message: format!(
                    "BareMetalHost {host}, claimed by Machine {machine}, has boot MAC {mac}, as \
                     BareMetalHost {}: an Agent with that MAC could belong to any of these Machines, \
                     so none is approved; give each host the MAC of its own boot NIC",
                    others.join(", ")
                ),
            })
        }
        _ => None,
    })
}

/// One row of the matching decision: a name and why it is so.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub name: &'static str,
    pub why: &'static str,
}

/// The matching decision table, in evaluation order.
pub static MATCH_RULES: &[Rule] = &[
    Rule {
        name: "no-inventory",
        why: "an Agent registers before it reports its inventory",
    },
    Rule {
        name: "no-valid-mac",
        why: "garbage inventory must not match anything, nor panic",
    },
    Rule {
        name: "no-machine",
        why: "a host we do not manage (or whose BareMetalHost lacks the right bootMACAddress)",
    },
    Rule {
        name: "several-machines",
        why: "one server cannot be two Machines: a misconfigured bootMACAddress",
    },
    Rule {
        name: "shared-machine",
        why: "two Agents for one Machine (a re-registered host, or copied MACs): approving either could install the wrong server",
    },
    Rule {
        name: "matched",
        why: "exactly one Machine, claimed by exactly one Agent",
    },
];

/// The outcome of matching, per Agent and per unmatchable Machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matching {
    /// Every Agent by name, with the rule that decided it.
    pub agents: BTreeMap<String, (&'static str, AgentMatch)>,
    /// Machines that cannot be matched, sorted by Machine name.
    pub machine_problems: Vec<MachineProblem>,
}

impl Matching {
    pub fn outcome(&self, agent: &str) -> Option<&AgentMatch> {
        self.agents.get(agent).map(|(_, m)| m)
    }
}

/// The Machines that cannot be matched, and why, sorted by Machine name (duplicates last).
pub fn machine_problems(machines: &[MachineInput]) -> Vec<MachineProblem> {
    machines_by_boot_mac(machines).0
}

/// Boot MAC → the Machines whose host has it (several only through a misconfiguration), and
/// the Machines that cannot be matched.
fn machines_by_boot_mac(
    machines: &[MachineInput],
) -> (Vec<MachineProblem>, BTreeMap<Mac, Vec<&MachineInput>>) {
    let mut machine_problems = Vec::new();
    let mut by_mac: BTreeMap<Mac, Vec<&MachineInput>> = BTreeMap::new();
    let mut sorted: Vec<&MachineInput> = machines.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for m in sorted {
        let Some(host) = &m.host else {
            machine_problems.push(MachineProblem::NoHost {
                machine: m.name.clone(),
            });
            continue;
        };
        let host_ref = format!("{}/{}", host.namespace, host.name);
        match host.boot_mac.as_deref().filter(|s| !s.trim().is_empty()) {
            None => machine_problems.push(MachineProblem::NoBootMac {
                machine: m.name.clone(),
                host: host_ref,
            }),
            Some(raw) => match Mac::parse(raw) {
                None => machine_problems.push(MachineProblem::MalformedBootMac {
                    machine: m.name.clone(),
                    host: host_ref,
                    mac: raw.to_string(),
                }),
                Some(mac) => by_mac.entry(mac).or_default().push(m),
            },
        }
    }
    for (mac, ms) in &by_mac {
        if ms.len() > 1 {
            machine_problems.push(MachineProblem::DuplicateBootMac {
                mac: mac.clone(),
                machines: ms.iter().map(|m| m.name.clone()).collect(),
                hosts: ms
                    .iter()
                    .map(|m| {
                        m.host
                            .as_ref()
                            .map(|h| format!("{}/{}", h.namespace, h.name))
                            .unwrap_or_default()
                    })
                    .collect(),
            });
        }
    }
    (machine_problems, by_mac)
}

/// Matches every Agent against every Machine by boot MAC, case-insensitively.
pub fn match_agents(agents: &[AgentInput], machines: &[MachineInput]) -> Matching {
    let (machine_problems, by_mac) = machines_by_boot_mac(machines);

    // First pass: each Agent's candidate Machines.
    let mut candidates: BTreeMap<&str, Result<Vec<&MachineInput>, NoMachineReason>> =
        BTreeMap::new();
    for a in agents {
        candidates.insert(a.name.as_str(), candidate_machines(a, &by_mac));
    }
    // Which Agents point at each Machine (only Agents with a single candidate claim one).
    let mut claimants: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (agent, c) in &candidates {
        if let Ok([m]) = c.as_deref() {
            claimants.entry(m.name.as_str()).or_default().insert(agent);
        }
    }

    let mut out = BTreeMap::new();
    for (agent, c) in candidates {
        let decided = match c {
            Err(reason @ NoMachineReason::NoInventory { .. }) => {
                ("no-inventory", AgentMatch::NoMachine(reason))
            }
            Err(reason @ NoMachineReason::NoValidMac { .. }) => {
                ("no-valid-mac", AgentMatch::NoMachine(reason))
            }
            Err(reason @ NoMachineReason::NoMatchingHost { .. }) => {
                ("no-machine", AgentMatch::NoMachine(reason))
            }
            Ok(ms) if ms.len() > 1 => (
                "several-machines",
                AgentMatch::Conflict(ConflictReason::SeveralMachines {
                    agent: agent.to_string(),
                    machines: ms.iter().map(|m| m.name.clone()).collect(),
                }),
            ),
            Ok(ms) => {
                // Non-empty by construction (candidate_machines returns NoMatchingHost
                // otherwise); a missing Machine is reported as no match rather than a panic.
                let Some(m) = ms.first() else {
                    continue;
                };
                let others = claimants.get(m.name.as_str()).map_or(0, BTreeSet::len);
                if others > 1 {
                    (
                        "shared-machine",
                        AgentMatch::Conflict(ConflictReason::SharedMachine {
                            machine: m.name.clone(),
                            host: m
                                .host
                                .as_ref()
                                .map(|h| format!("{}/{}", h.namespace, h.name))
                                .unwrap_or_default(),
                            agents: claimants
                                .get(m.name.as_str())
                                .map(|s| s.iter().map(|a| a.to_string()).collect())
                                .unwrap_or_default(),
                        }),
                    )
                } else {
                    (
                        "matched",
                        AgentMatch::Matched {
                            machine: m.name.clone(),
                            control_plane: m.control_plane,
                        },
                    )
                }
            }
        };
        out.insert(agent.to_string(), decided);
    }
    Matching {
        agents: out,
        machine_problems,
    }
}

/// The Machines (sorted, distinct) whose host's boot MAC the Agent reports.
fn candidate_machines<'m>(
    agent: &AgentInput,
    by_mac: &BTreeMap<Mac, Vec<&'m MachineInput>>,
) -> Result<Vec<&'m MachineInput>, NoMachineReason> {
    let reported: Vec<&String> = agent.macs.iter().filter(|m| !m.trim().is_empty()).collect();
    if agent.macs.is_empty() {
        return Err(NoMachineReason::NoInventory {
            agent: agent.name.clone(),
        });
    }
    let macs: BTreeSet<Mac> = reported.iter().filter_map(|m| Mac::parse(m)).collect();
    if macs.is_empty() {
        return Err(NoMachineReason::NoValidMac {
            agent: agent.name.clone(),
            macs: agent.macs.clone(),
        });
    }
    let mut found: Vec<&MachineInput> = macs
        .iter()
        .filter_map(|mac| by_mac.get(mac))
        .flatten()
        .copied()
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found.dedup_by(|a, b| a.name == b.name);
    if found.is_empty() {
        return Err(NoMachineReason::NoMatchingHost {
            agent: agent.name.clone(),
            macs: macs.into_iter().collect(),
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, macs: &[&str]) -> AgentInput {
        AgentInput {
            name: name.into(),
            macs: macs.iter().map(|m| m.to_string()).collect(),
        }
    }

    fn machine(name: &str, boot_mac: Option<&str>) -> MachineInput {
        MachineInput {
            name: name.into(),
            control_plane: name.starts_with("cp"),
            host: Some(HostInput {
                namespace: "ns".into(),
                name: format!("host-{name}"),
                boot_mac: boot_mac.map(str::to_string),
            }),
        }
    }

    /// Three control-plane Machines and two workers, each on its own host.
    fn fleet() -> Vec<MachineInput> {
        vec![
            machine("cp-0", Some("52:54:00:00:00:00")),
            machine("cp-1", Some("52:54:00:00:00:01")),
            machine("cp-2", Some("52:54:00:00:00:02")),
            machine("w-0", Some("52:54:00:00:01:00")),
            machine("w-1", Some("52:54:00:00:01:01")),
        ]
    }

    struct Case {
        agents: Vec<AgentInput>,
        machines: Vec<MachineInput>,
        /// The Agent whose outcome the row is about.
        subject: &'static str,
        expect: AgentMatch,
    }

    fn check(rule: &str, c: Case) {
        let out = match_agents(&c.agents, &c.machines);
        let (got_rule, got) = out
            .agents
            .get(c.subject)
            .expect("every Agent has an outcome");
        assert_eq!(*got_rule, rule, "{got:?}");
        assert_eq!(got, &c.expect);
        assert_eq!(out.agents.len(), c.agents.len());
    }

    macro_rules! match_rows {
        ($($test:ident: $rule:literal => $case:expr;)+) => {
            $(#[test] fn $test() { check($rule, $case) })+
            const TESTED: &[&str] = &[$($rule),+];
        };
    }

    match_rows! {
        no_interfaces: "no-inventory" => Case {
            agents: vec![agent("a", &[])], machines: fleet(), subject: "a",
            expect: AgentMatch::NoMachine(NoMachineReason::NoInventory { agent: "a".into() }),
        };
        garbage_macs: "no-valid-mac" => Case {
            agents: vec![agent("a", &["", "zz:zz:zz:zz:zz:zz", "52:54:00", "not a mac"])],
            machines: fleet(), subject: "a",
            expect: AgentMatch::NoMachine(NoMachineReason::NoValidMac {
                agent: "a".into(),
                macs: vec!["".into(), "zz:zz:zz:zz:zz:zz".into(), "52:54:00".into(), "not a mac".into()],
            }),
        };
        only_empty_macs: "no-valid-mac" => Case {
            agents: vec![agent("a", &["", " "])], machines: fleet(), subject: "a",
            expect: AgentMatch::NoMachine(NoMachineReason::NoValidMac {
                agent: "a".into(), macs: vec!["".into(), " ".into()],
            }),
        };
        foreign_host: "no-machine" => Case {
            agents: vec![agent("a", &["AA:BB:CC:DD:EE:FF"])], machines: fleet(), subject: "a",
            expect: AgentMatch::NoMachine(NoMachineReason::NoMatchingHost {
                agent: "a".into(), macs: vec![Mac("aa:bb:cc:dd:ee:ff".into())],
            }),
        };
        no_machines_at_all: "no-machine" => Case {
            agents: vec![agent("a", &["52:54:00:00:00:00"])], machines: vec![], subject: "a",
            expect: AgentMatch::NoMachine(NoMachineReason::NoMatchingHost {
                agent: "a".into(), macs: vec![Mac("52:54:00:00:00:00".into())],
            }),
        };
        two_hosts_one_server: "several-machines" => Case {
            agents: vec![agent("a", &["52:54:00:00:01:00", "52:54:00:00:01:01"])],
            machines: fleet(), subject: "a",
            expect: AgentMatch::Conflict(ConflictReason::SeveralMachines {
                agent: "a".into(), machines: vec!["w-0".into(), "w-1".into()],
            }),
        };
        two_agents_one_machine: "shared-machine" => Case {
            agents: vec![agent("b", &["52:54:00:00:01:00"]), agent("a", &["52:54:00:00:01:00", "de:ad:be:ef:00:01"])],
            machines: fleet(), subject: "a",
            expect: AgentMatch::Conflict(ConflictReason::SharedMachine {
                machine: "w-0".into(), host: "ns/host-w-0".into(), agents: vec!["a".into(), "b".into()],
            }),
        };
        matched_case_insensitive: "matched" => Case {
            agents: vec![agent("a", &["de:ad:be:ef:00:01", "52-54-00-00-00-01"]), agent("b", &["52:54:00:00:01:01"])],
            machines: vec![machine("cp-1", Some("52:54:00:00:00:01".to_uppercase().as_str())), machine("w-1", Some("52:54:00:00:01:01"))],
            subject: "a",
            expect: AgentMatch::Matched { machine: "cp-1".into(), control_plane: true },
        };
        matched_worker_with_garbage_beside: "matched" => Case {
            agents: vec![agent("a", &["garbage", "", "52:54:00:00:01:01"])], machines: fleet(), subject: "a",
            expect: AgentMatch::Matched { machine: "w-1".into(), control_plane: false },
        };
    }

    #[test]
    fn every_match_rule_is_tested() {
        for r in MATCH_RULES {
            assert!(TESTED.contains(&r.name), "rule {} has no test", r.name);
        }
        for t in TESTED {
            assert!(MATCH_RULES.iter().any(|r| r.name == *t), "unknown rule {t}");
        }
    }

    #[test]
    fn shared_machine_blocks_both_and_others_still_match() {
        let agents = vec![
            agent("a", &["52:54:00:00:01:00"]),
            agent("b", &["52:54:00:00:01:00"]),
            agent("c", &["52:54:00:00:00:02"]),
        ];
        let out = match_agents(&agents, &fleet());
        assert!(matches!(out.outcome("a"), Some(AgentMatch::Conflict(_))));
        assert!(matches!(out.outcome("b"), Some(AgentMatch::Conflict(_))));
        assert_eq!(
            out.outcome("c"),
            Some(&AgentMatch::Matched {
                machine: "cp-2".into(),
                control_plane: true
            })
        );
        let Some(AgentMatch::Conflict(reason)) = out.outcome("b") else {
            panic!()
        };
        assert_eq!(
            reason.to_string(),
            "Agents a, b all match Machine w-0 (boot MAC of BareMetalHost ns/host-w-0); none is approved until only one remains"
        );
    }

    #[test]
    fn machine_problems_are_reported() {
        let machines = vec![
            MachineInput {
                name: "m-nohost".into(),
                control_plane: false,
                host: None,
            },
            machine("m-nomac", None),
            machine("m-badmac", Some("52:54:00")),
            machine("m-dup1", Some("52:54:00:00:09:09")),
            machine("m-dup2", Some("52:54:00:00:09:09")),
        ];
        let out = match_agents(&[agent("a", &["52:54:00:00:09:09"])], &machines);
        assert_eq!(
            out.machine_problems,
            vec![
                MachineProblem::MalformedBootMac {
                    machine: "m-badmac".into(),
                    host: "ns/host-m-badmac".into(),
                    mac: "52:54:00".into()
                },
                MachineProblem::NoHost {
                    machine: "m-nohost".into()
                },
                MachineProblem::NoBootMac {
                    machine: "m-nomac".into(),
                    host: "ns/host-m-nomac".into()
                },
                MachineProblem::DuplicateBootMac {
                    mac: Mac("52:54:00:00:09:09".into()),
                    machines: vec!["m-dup1".into(), "m-dup2".into()],
                    hosts: vec!["ns/host-m-dup1".into(), "ns/host-m-dup2".into()],
                },
            ]
        );
        assert_eq!(machine_problems(&machines), out.machine_problems);
        // The duplicate makes the Agent ambiguous, not matched to either.
        assert!(matches!(
            out.outcome("a"),
            Some(AgentMatch::Conflict(ConflictReason::SeveralMachines { .. }))
        ));
    }

    /// One row per host problem the config reports, and the Machines it is not reported on.
    #[test]
    fn host_problems_name_the_host_and_what_to_fix() {
        let machines = vec![
            MachineInput {
                name: "m-nohost".into(),
                control_plane: false,
                host: None,
            },
            machine("m-nomac", None),
            machine("m-blank", Some("  ")),
            machine("m-badmac", Some("mac 52:54:00:aa:bb:cc")),
            machine("m-dup1", Some("52:54:00:00:09:09")),
            machine("m-dup2", Some("52:54:00:00:09:09")),
            machine("m-dup3", Some("52-54-00-00-09-09")),
            machine("m-fine", Some("52:54:00:00:00:01")),
        ];
        let problems = machine_problems(&machines);
        let of = |m: &str| host_problem(m, &problems);

        assert_eq!(of("m-nohost"), None, "CAPM3's wait, not a host problem");
        assert_eq!(of("m-fine"), None);
        assert_eq!(of("m-unknown"), None);

        let p = of("m-nomac").unwrap();
        assert_eq!(p.reason, BAREMETALHOST_WITHOUT_BOOT_MAC);
        assert_eq!(
            p.message,
            "BareMetalHost ns/host-m-nomac, claimed by Machine m-nomac, has no \
             spec.bootMACAddress: the Agent that registers from it cannot be matched to the \
             Machine and stays unapproved; set the host's bootMACAddress to the MAC of the NIC \
             it boots from"
        );
        assert_eq!(
            of("m-blank").unwrap().reason,
            BAREMETALHOST_WITHOUT_BOOT_MAC
        );

        let p = of("m-badmac").unwrap();
        assert_eq!(p.reason, INVALID_BOOT_MAC);
        assert!(
            p.message.starts_with(
                "BareMetalHost ns/host-m-badmac, claimed by Machine m-badmac, has \
                 spec.bootMACAddress \"mac 52:54:00:aa:bb:cc\", which is not a MAC address"
            ),
            "{}",
            p.message
        );

        // Each Machine of a shared boot MAC names its own host and the others.
        let p = of("m-dup2").unwrap();
        assert_eq!(p.reason, DUPLICATE_BOOT_MAC);
        assert_eq!(
            p.message,
            "BareMetalHost ns/host-m-dup2, claimed by Machine m-dup2, has boot MAC \
             52:54:00:00:09:09, as BareMetalHost ns/host-m-dup1 (Machine m-dup1), \
             ns/host-m-dup3 (Machine m-dup3): an Agent with that MAC could belong to any of these \
             Machines, so none is approved; give each host the MAC of its own boot NIC"
        );
        assert_eq!(of("m-dup1").unwrap().reason, DUPLICATE_BOOT_MAC);
        assert_eq!(of("m-dup3").unwrap().reason, DUPLICATE_BOOT_MAC);
        for p in [of("m-nomac"), of("m-badmac"), of("m-dup1")] {
            assert!(HOST_PROBLEM_REASONS.contains(&p.unwrap().reason));
        }
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(
            Mac::parse(" AA-bb-CC-dd-EE-ff ").map(|m| m.to_string()),
            Some("aa:bb:cc:dd:ee:ff".into())
        );
        assert!(
            Mac::parse("00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01").is_some()
        );
        for bad in [
            "",
            "aa:bb:cc:dd:ee",
            "aa:bb:cc:dd:ee:fg",
            "aabb.ccdd.eeff",
            "a:b:c:d:e:f",
            "aa:bb-cc:dd:ee:ff",
        ] {
            assert_eq!(Mac::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn inputs_from_objects() {
        let machine: Machine = serde_yaml::from_str(
            r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata: {name: cp-0, namespace: ns, labels: {cluster.x-k8s.io/control-plane: ""}}
spec:
  clusterName: c1
  bootstrap: {}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Machine, name: cp-0}
"#,
        )
        .unwrap();
        let m3m: Metal3Machine = serde_yaml::from_str(
            r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
metadata: {name: cp-0, namespace: ns, annotations: {metal3.io/BareMetalHost: ns/host-0}}
spec: {}
"#,
        )
        .unwrap();
        let host: BareMetalHost = serde_yaml::from_str(
            r#"
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {name: host-0, namespace: ns, uid: u}
spec: {online: true, bootMACAddress: "52:54:00:AA:BB:CC"}
"#,
        )
        .unwrap();
        let input = MachineInput::from_objects(&machine, Some(&m3m), Some(&host));
        assert_eq!(
            input,
            MachineInput {
                name: "cp-0".into(),
                control_plane: true,
                host: Some(HostInput {
                    namespace: "ns".into(),
                    name: "host-0".into(),
                    boot_mac: Some("52:54:00:AA:BB:CC".into()),
                }),
            }
        );
        // A host that is not the one the annotation names is not used: no host known.
        let mut other = host.clone();
        other.metadata.name = Some("host-1".into());
        let input = MachineInput::from_objects(&machine, Some(&m3m), Some(&other));
        assert_eq!(input.host, None);
        assert_eq!(
            MachineInput::from_objects(&machine, Some(&m3m), None).host,
            None
        );
        // A host without a boot MAC.
        let mut no_mac = host.clone();
        no_mac.spec.boot_mac_address = None;
        let input = MachineInput::from_objects(&machine, Some(&m3m), Some(&no_mac));
        assert_eq!(input.host.unwrap().boot_mac, None);
        // Not claimed yet.
        assert_eq!(MachineInput::from_objects(&machine, None, None).host, None);

        let agent: Agent = serde_yaml::from_str(
            r#"
apiVersion: agent-install.openshift.io/v1beta1
kind: Agent
metadata: {name: a1, namespace: ns}
spec: {approved: false}
status:
  inventory:
    interfaces:
    - {name: eth0, macAddress: "52:54:00:aa:bb:cc", ipV4Addresses: [], ipV6Addresses: [], flags: []}
    - {name: eth1, macAddress: "", ipV4Addresses: [], ipV6Addresses: [], flags: []}
"#,
        )
        .unwrap();
        let a = AgentInput::from_agent(&agent);
        assert_eq!(a.macs, vec!["52:54:00:aa:bb:cc".to_string(), String::new()]);
        let out = match_agents(&[a], &[input_with_host(&machine, &m3m, &host)]);
        assert_eq!(
            out.outcome("a1"),
            Some(&AgentMatch::Matched {
                machine: "cp-0".into(),
                control_plane: true
            })
        );
    }

    fn input_with_host(m: &Machine, m3m: &Metal3Machine, h: &BareMetalHost) -> MachineInput {
        MachineInput::from_objects(m, Some(m3m), Some(h))
    }

    #[test]
    fn host_annotation_without_namespace_uses_the_metal3machines() {
        let m3m: Metal3Machine = serde_yaml::from_str(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: Metal3Machine\nmetadata: {name: m, namespace: ns, annotations: {metal3.io/BareMetalHost: host-0}}\nspec: {}",
        )
        .unwrap();
        assert_eq!(host_of(&m3m), Some(("ns".into(), "host-0".into())));
    }
}
