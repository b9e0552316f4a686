//! The Agent controller's watch mapper: which Agents a change of a watched object concerns.
//! Pure: it reads the cached Agents it is given; `mod.rs` wires it to the watches, behind the
//! filters of [`crate::controller::fingerprints`].

use std::sync::Arc;

use assisted_api::Agent;
use assisted_api::infraenv::INFRAENV_NAME_LABEL;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

/// Agents of our InfraEnvs in a namespace: re-matched when a host or Metal3Machine changes.
pub fn agents_in(agents: &[Arc<Agent>], namespace: Option<String>) -> Vec<ObjectRef<Agent>> {
    agents
        .iter()
        .filter(|a| a.namespace() == namespace && a.labels().contains_key(INFRAENV_NAME_LABEL))
        .map(|a| ObjectRef::from_obj(&**a))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_agents_of_an_infraenv_in_the_namespace() {
        let agent = |name: &str, ns: &str, labels: &str| -> Arc<Agent> {
            Arc::new(
                serde_yaml::from_str(&format!(
                    "apiVersion: agent-install.openshift.io/v1beta1\nkind: Agent\nmetadata: {{name: {name}, namespace: {ns}, labels: {labels}}}\nspec: {{approved: false}}"
                ))
                .unwrap(),
            )
        };
        let agents = vec![
            agent(
                "ours",
                "ns",
                "{infraenvs.agent-install.openshift.io: workers}",
            ),
            agent("foreign", "ns", "{}"),
            agent(
                "elsewhere",
                "other",
                "{infraenvs.agent-install.openshift.io: workers}",
            ),
        ];
        let names: Vec<String> = agents_in(&agents, Some("ns".into()))
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["ours"]);
    }
}
