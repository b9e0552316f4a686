//! The real Metal3 controllers: baremetal-operator with its fixture provisioner (no Ironic) walks
//! a BareMetalHost to `available`, and the CAPM3 manager provisions a Metal3Cluster so that CAPI
//! marks the Cluster's infrastructure provisioned.

use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;
use testbed::Testbed;

const NS: &str = "metal3-smoke";

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

async fn wait_for(api: &Api<DynamicObject>, name: &str, pointer: &str, want: Value, log: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let obj = api.get(name).await.expect("get");
        let got = obj.data.pointer(pointer).cloned().unwrap_or(Value::Null);
        if got == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} {name}: {pointer} is {got}, want {want}; see {log}\n{:#}",
            api.resource_url(),
            obj.data
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn bmo_fixture_and_capm3_reconcile() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder()
        .controller_manager()
        .metal3()
        .start()
        .await
        .expect("start testbed");
    let logs = tb.dir.join("logs");

    tb.apply_yaml(&format!(
        r#"
apiVersion: v1
kind: Namespace
metadata: {{ name: {NS} }}
---
apiVersion: v1
kind: Secret
metadata: {{ name: host-0-bmc, namespace: {NS} }}
stringData: {{ username: admin, password: password }}
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{ name: host-0, namespace: {NS} }}
spec:
  online: true
  bootMACAddress: "52:54:00:00:00:01"
  bmc:
    address: ipmi://192.0.2.1:623
    credentialsName: host-0-bmc
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{ name: c1, namespace: {NS} }}
spec:
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: Metal3Cluster
    name: c1
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{ name: c1, namespace: {NS} }}
spec:
  controlPlaneEndpoint: {{ host: 192.0.2.10, port: 6443 }}
"#
    ))
    .await
    .expect("apply objects");

    let hosts = Api::<DynamicObject>::namespaced_with(
        tb.client.clone(),
        NS,
        &resource("metal3.io", "v1alpha1", "BareMetalHost", "baremetalhosts"),
    );
    wait_for(
        &hosts,
        "host-0",
        "/status/provisioning/state",
        "available".into(),
        &logs.join("baremetal-operator.log").display().to_string(),
    )
    .await;

    let clusters = Api::<DynamicObject>::namespaced_with(
        tb.client.clone(),
        NS,
        &resource("cluster.x-k8s.io", "v1beta2", "Cluster", "clusters"),
    );
    wait_for(
        &clusters,
        "c1",
        "/status/initialization/infrastructureProvisioned",
        true.into(),
        &logs.join("capm3-manager.log").display().to_string(),
    )
    .await;
}
