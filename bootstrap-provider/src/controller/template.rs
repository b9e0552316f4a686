//! Which Metal3MachineTemplate a Metal3Machine was cloned from: the key of the shared InfraEnv
//! (one per template in use). Pure: no client, no clock.

use external_types::capm3::v1beta2::Metal3Machine;
use kube::ResourceExt;

pub const CLONED_FROM_NAME_ANNOTATION: &str = "cluster.x-k8s.io/cloned-from-name";
pub const CLONED_FROM_GROUPKIND_ANNOTATION: &str = "cluster.x-k8s.io/cloned-from-groupkind";
pub const METAL3_MACHINE_TEMPLATE_GROUPKIND: &str =
    "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io";
pub const METAL3_MACHINE_TEMPLATE_API_VERSION: &str = "infrastructure.cluster.x-k8s.io/v1beta2";
pub const METAL3_MACHINE_TEMPLATE_KIND: &str = "Metal3MachineTemplate";

/// The Metal3MachineTemplate a Metal3Machine was cloned from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TemplateRef {
    pub namespace: String,
    pub name: String,
}

/// The template a Metal3Machine was cloned from, from the annotations CAPI (and the control
/// plane provider) put on every infrastructure machine it clones. None when the Metal3Machine
/// was not cloned from a Metal3MachineTemplate: it then has no InfraEnv of ours.
pub fn template_of(metal3machine: &Metal3Machine) -> Option<TemplateRef> {
    let annotations = metal3machine.annotations();
    let name = annotations.get(CLONED_FROM_NAME_ANNOTATION)?;
    let group_kind = annotations.get(CLONED_FROM_GROUPKIND_ANNOTATION)?;
    if group_kind != METAL3_MACHINE_TEMPLATE_GROUPKIND || name.is_empty() {
        return None;
    }
    Some(TemplateRef {
        namespace: metal3machine.namespace().unwrap_or_default(),
        name: name.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> TemplateRef {
        TemplateRef {
            namespace: "ns".into(),
            name: "workers".into(),
        }
    }

    #[test]
    fn template_from_cloned_from_annotations() {
        let m3m = |annotations: &str| -> Metal3Machine {
            serde_yaml::from_str(&format!(
                "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: Metal3Machine\nmetadata: {{name: m, namespace: ns, annotations: {annotations}}}\nspec: {{}}"
            ))
            .unwrap()
        };
        assert_eq!(
            template_of(&m3m(
                "{cluster.x-k8s.io/cloned-from-name: workers, cluster.x-k8s.io/cloned-from-groupkind: Metal3MachineTemplate.infrastructure.cluster.x-k8s.io}"
            )),
            Some(template())
        );
        assert_eq!(
            template_of(&m3m(
                "{cluster.x-k8s.io/cloned-from-name: workers, cluster.x-k8s.io/cloned-from-groupkind: OtherTemplate.infrastructure.cluster.x-k8s.io}"
            )),
            None
        );
        assert_eq!(
            template_of(&m3m("{cluster.x-k8s.io/cloned-from-name: workers}")),
            None
        );
        assert_eq!(template_of(&m3m("{}")), None);
    }
}
