//! Only the leader runs the embedded core, so only the leader's pod may receive the agent API
//! and image traffic. Once its listeners are bound, the leader labels its own pod
//! [`SERVING_LABEL`]`: "true"` and takes the label off every other pod of its namespace (a
//! replica that led before and restarted as standby keeps its label otherwise); the
//! `assisted-core` Service selects the label (`manifests.rs`).
//!
//! Sharded (`--watch-filter`), the label's value is the shard, and a leader takes it off the
//! pods of its own shard only: each shard's Service selects `<label>: <shard>`
//! (docs/controlplane-provider.md, "Shards").

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use manager::runtime::WatchScope;
use serde_json::{Value, json};

/// The label of the pod that serves the agent API and images.
pub const SERVING_LABEL: &str = "assisted-core.openshift-assisted.io/serving";

/// The serving label's value: the shard when sharded, else `true`.
pub fn serving_value(scope: &WatchScope) -> &str {
    if scope.is_sharded() {
        &scope.watch_filter
    } else {
        "true"
    }
}

/// The label patch for pod `name` when `me` serves (`value`): the label on `me`, off anyone
/// else.
pub fn label_patch(name: &str, me: &str, value: &str) -> Value {
    let value = if name == me {
        json!(value)
    } else {
        Value::Null
    };
    json!({ "metadata": { "labels": { SERVING_LABEL: value } } })
}

/// Labels this pod (`POD_NAMESPACE`/`POD_NAME`, set by the Deployment) as the one serving and
/// unlabels the others. Without those variables (the manager runs as a process) there is no
/// pod to label: nothing is done.
pub async fn claim(client: &Client, scope: &WatchScope) -> anyhow::Result<()> {
    let (Ok(ns), Ok(me)) = (std::env::var("POD_NAMESPACE"), std::env::var("POD_NAME")) else {
        tracing::debug!("not in a pod (POD_NAMESPACE/POD_NAME unset): no Service label to claim");
        return Ok(());
    };
    let value = serving_value(scope);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let labelled = pods
        .list(&ListParams::default().labels(&format!("{SERVING_LABEL}={value}")))
        .await
        .map_err(|e| anyhow::anyhow!("listing the pods labelled {SERVING_LABEL} in {ns}: {e}"))?;
    for other in labelled.items.iter().map(ResourceExt::name_any) {
        if other != me {
            pods.patch(
                &other,
                &PatchParams::default(),
                &Patch::Merge(label_patch(&other, &me, value)),
            )
            .await
            .map_err(|e| anyhow::anyhow!("taking {SERVING_LABEL} off pod {ns}/{other}: {e}"))?;
        }
    }
    pods.patch(
        &me,
        &PatchParams::default(),
        &Patch::Merge(label_patch(&me, &me, value)),
    )
    .await
    .map_err(|e| anyhow::anyhow!("labelling pod {ns}/{me} {SERVING_LABEL}: {e}"))?;
    tracing::info!(pod = %me, label = SERVING_LABEL, "this pod now receives the agent API and image traffic");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_goes_on_me_and_off_the_others() {
        assert_eq!(
            label_patch("a", "a", "true")["metadata"]["labels"][SERVING_LABEL],
            "true"
        );
        assert!(label_patch("b", "a", "true")["metadata"]["labels"][SERVING_LABEL].is_null());
    }

    #[test]
    fn a_shard_serves_under_its_own_label_value() {
        let mut scope = WatchScope::default();
        assert_eq!(serving_value(&scope), "true");
        scope.watch_filter = "east".into();
        assert_eq!(serving_value(&scope), "east");
        assert_eq!(
            label_patch("a", "a", "east")["metadata"]["labels"][SERVING_LABEL],
            "east"
        );
    }
}
