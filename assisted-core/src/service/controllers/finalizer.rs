//! Where an object stands with our finalizer (pure; each reconcile acts on it).

/// Where an object stands with our finalizer (pure; the reconcile acts on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalizerStep {
    /// Live without our finalizer: add it before registering anything.
    Add,
    /// Live with our finalizer.
    Proceed,
    /// Being deleted with our finalizer: deregister, then release it.
    Cleanup,
    /// Being deleted and already released: nothing left to do.
    Gone,
}

pub fn finalizer_step<K: kube::Resource>(obj: &K, finalizer: &str) -> FinalizerStep {
    let ours = obj
        .meta()
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer);
    match (obj.meta().deletion_timestamp.is_some(), ours) {
        (false, false) => FinalizerStep::Add,
        (false, true) => FinalizerStep::Proceed,
        (true, true) => FinalizerStep::Cleanup,
        (true, false) => FinalizerStep::Gone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::infraenv::InfraEnv;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn finalizer_steps() {
        let mut ie = InfraEnv::new("ie", Default::default());
        assert_eq!(finalizer_step(&ie, "ours"), FinalizerStep::Add);
        ie.metadata.finalizers = Some(vec!["theirs".into(), "ours".into()]);
        assert_eq!(finalizer_step(&ie, "ours"), FinalizerStep::Proceed);
        ie.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(finalizer_step(&ie, "ours"), FinalizerStep::Cleanup);
        ie.metadata.finalizers = Some(vec!["theirs".into()]);
        assert_eq!(finalizer_step(&ie, "ours"), FinalizerStep::Gone);
    }
}
