//! The real Cluster API core manager turns a MachineDeployment that uses our
//! OpenshiftAssistedConfigTemplate and a Metal3MachineTemplate into a MachineSet and Machines,
//! each with its own OpenshiftAssistedConfig and Metal3Machine cloned from the templates. This
//! proves our CRD names and `cluster.x-k8s.io/v1beta2` contract labels are what CAPI expects.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use testbed::Testbed;
use testbed::cache::repo_root;

const NS: &str = "capi-smoke";
const REPLICAS: usize = 2;

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The newest API version CAPI would pick for a CRD: the last one in its v1beta2 contract label.
async fn contract_version(client: &Client, crd: &str) -> String {
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get(crd)
        .await
        .expect("get CRD");
    let label = crd
        .labels()
        .get("cluster.x-k8s.io/v1beta2")
        .unwrap_or_else(|| panic!("{} has no cluster.x-k8s.io/v1beta2 label", crd.name_any()));
    label.rsplit('_').next().expect("label value").to_owned()
}

#[tokio::test]
async fn machinedeployment_with_our_bootstrap_template_gets_machines() {
    if testbed::skip() {
        return;
    }
    // CAPM3 cannot be built here (docs/testing.md); its CRDs are generated from the committed
    // kopium types of CAPM3 (external-types/src/test_crds.rs).
    let metal3 = repo_root().join("config/testing/metal3");
    let builder = Testbed::builder()
        .controller_manager()
        .our_crds()
        .crds_from(&metal3)
        .capi();
    let tb = builder.start().await.expect("start testbed");
    let client = tb.client.clone();
    let m3v = contract_version(
        &client,
        "metal3machinetemplates.infrastructure.cluster.x-k8s.io",
    )
    .await;
    let oacv = contract_version(
        &client,
        "openshiftassistedconfigtemplates.bootstrap.cluster.x-k8s.io",
    )
    .await;

    let objects = format!(
        r#"
apiVersion: v1
kind: Namespace
metadata: {{ name: {NS} }}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{ name: c1, namespace: {NS} }}
spec:
  clusterNetwork:
    pods: {{ cidrBlocks: ["10.128.0.0/14"] }}
    services: {{ cidrBlocks: ["172.30.0.0/16"] }}
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: Metal3Cluster
    name: c1
---
apiVersion: infrastructure.cluster.x-k8s.io/{m3v}
kind: Metal3Cluster
metadata: {{ name: c1, namespace: {NS} }}
spec: {{}}
---
apiVersion: bootstrap.cluster.x-k8s.io/{oacv}
kind: OpenshiftAssistedConfigTemplate
metadata: {{ name: workers, namespace: {NS} }}
spec:
  template:
    spec:
      cpuArchitecture: x86_64
      sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk capi-smoke
      nodeRegistration:
        kubeletExtraLabels: ["node-role.kubernetes.io/worker="]
---
apiVersion: infrastructure.cluster.x-k8s.io/{m3v}
kind: Metal3MachineTemplate
metadata: {{ name: workers, namespace: {NS} }}
spec:
  template:
    spec:
      image:
        url: http://images.example.com/live.iso
        diskFormat: live-iso
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {{ name: workers, namespace: {NS} }}
spec:
  clusterName: c1
  replicas: {REPLICAS}
  selector:
    matchLabels: {{ cluster.x-k8s.io/deployment-name: workers }}
  template:
    metadata:
      labels: {{ cluster.x-k8s.io/deployment-name: workers }}
    spec:
      clusterName: c1
      bootstrap:
        configRef:
          apiGroup: bootstrap.cluster.x-k8s.io
          kind: OpenshiftAssistedConfigTemplate
          name: workers
      infrastructureRef:
        apiGroup: infrastructure.cluster.x-k8s.io
        kind: Metal3MachineTemplate
        name: workers
"#
    );
    tb.apply_yaml(&objects)
        .await
        .expect("apply cluster objects");

    let capi = |kind: &str, plural: &str| {
        Api::<DynamicObject>::namespaced_with(
            client.clone(),
            NS,
            &resource("cluster.x-k8s.io", "v1beta2", kind, plural),
        )
    };
    let machinesets = capi("MachineSet", "machinesets");
    let machines = capi("Machine", "machines");
    let configs = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        NS,
        &resource(
            "bootstrap.cluster.x-k8s.io",
            &oacv,
            "OpenshiftAssistedConfig",
            "openshiftassistedconfigs",
        ),
    );
    let metal3machines = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        NS,
        &resource(
            "infrastructure.cluster.x-k8s.io",
            &m3v,
            "Metal3Machine",
            "metal3machines",
        ),
    );

    // The MachineSet, owned by the MachineDeployment.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let machines_list = loop {
        let ms = machinesets
            .list(&ListParams::default())
            .await
            .expect("list MachineSets");
        let m = machines
            .list(&ListParams::default())
            .await
            .expect("list Machines");
        if ms.items.len() == 1 && m.items.len() == REPLICAS {
            let owner = &ms.items[0].owner_references()[0];
            assert_eq!(
                (owner.kind.as_str(), owner.name.as_str()),
                ("MachineDeployment", "workers")
            );
            break m.items;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "CAPI did not create 1 MachineSet and {REPLICAS} Machines in time: {} MachineSets, {} Machines; \
             capi-manager log in {}",
            ms.items.len(),
            m.items.len(),
            tb.dir.join("logs/capi-manager.log").display()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };

    // Every Machine references its own OpenshiftAssistedConfig and Metal3Machine, cloned from the
    // templates and owned by the Machine.
    let mut config_names = Vec::new();
    for machine in &machines_list {
        let spec = &machine.data["spec"];
        let config_ref = &spec["bootstrap"]["configRef"];
        assert_eq!(config_ref["kind"], "OpenshiftAssistedConfig", "{spec}");
        assert_eq!(config_ref["apiGroup"], "bootstrap.cluster.x-k8s.io");
        let infra_ref = &spec["infrastructureRef"];
        assert_eq!(infra_ref["kind"], "Metal3Machine", "{spec}");

        let config = configs
            .get(config_ref["name"].as_str().expect("configRef.name"))
            .await
            .expect("the cloned OpenshiftAssistedConfig exists");
        assert_eq!(
            config.data["spec"]["sshAuthorizedKey"],
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk capi-smoke"
        );
        assert_eq!(
            config.data["spec"]["nodeRegistration"]["kubeletExtraLabels"],
            json!(["node-role.kubernetes.io/worker="])
        );
        assert_eq!(
            config
                .annotations()
                .get("cluster.x-k8s.io/cloned-from-name")
                .map(String::as_str),
            Some("workers")
        );
        assert_eq!(
            config
                .labels()
                .get("cluster.x-k8s.io/cluster-name")
                .map(String::as_str),
            Some("c1")
        );
        // CAPI's Machine controller takes ownership of the config once it sees it.
        wait_owned_by_machine(&configs, &config.name_any(), &machine.name_any()).await;

        let m3m = metal3machines
            .get(infra_ref["name"].as_str().expect("infrastructureRef.name"))
            .await
            .expect("the cloned Metal3Machine exists");
        assert_eq!(
            m3m.data["spec"]["image"]["diskFormat"],
            Value::from("live-iso")
        );
        config_names.push(config.name_any());
    }
    config_names.sort();
    config_names.dedup();
    assert_eq!(
        config_names.len(),
        REPLICAS,
        "each Machine has its own config"
    );
}

async fn wait_owned_by_machine(api: &Api<DynamicObject>, name: &str, machine: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let obj = api.get(name).await.expect("get");
        if obj
            .owner_references()
            .iter()
            .any(|o| o.kind == "Machine" && o.name == machine && o.controller == Some(true))
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} is not controlled by Machine {machine}: {:?}",
            obj.owner_references()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
