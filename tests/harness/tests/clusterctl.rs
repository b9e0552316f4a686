//! The real `clusterctl init --core cluster-api --bootstrap openshift-assisted --control-plane
//! openshift-assisted` against a testbed, from a local provider repository assembled from
//! `config/release/` and CAPI core's own components.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::{Client, ResourceExt};
use testbed::Testbed;
use testbed::clusterctl::{Clusterctl, INIT_OUR_PROVIDERS, PROVIDER};

async fn provider_objects(client: &Client, label: &str) -> (Vec<String>, Vec<String>) {
    let lp = ListParams::default().labels(&format!("cluster.x-k8s.io/provider={label}"));
    let crds = Api::<CustomResourceDefinition>::all(client.clone())
        .list(&lp)
        .await
        .expect("list CRDs");
    let deployments = Api::<Deployment>::all(client.clone())
        .list(&lp)
        .await
        .expect("list Deployments");
    (
        crds.items.iter().map(ResourceExt::name_any).collect(),
        deployments
            .items
            .iter()
            .map(|d| format!("{}/{}", d.namespace().unwrap_or_default(), d.name_any()))
            .collect(),
    )
}

#[tokio::test]
async fn clusterctl_init_installs_our_providers() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder()
        .controller_manager()
        .start()
        .await
        .expect("start testbed");
    Clusterctl::install_cert_manager_crds(&tb)
        .await
        .expect("install cert-manager CRDs");
    let clusterctl = Clusterctl::new(&tb).expect("assemble the local clusterctl repository");
    clusterctl
        .run(INIT_OUR_PROVIDERS)
        .await
        .expect("clusterctl init");

    // clusterctl's inventory: one Provider object per installed provider.
    let providers = Api::<DynamicObject>::all_with(
        tb.client.clone(),
        &ApiResource {
            group: "clusterctl.cluster.x-k8s.io".into(),
            version: "v1alpha3".into(),
            api_version: "clusterctl.cluster.x-k8s.io/v1alpha3".into(),
            kind: "Provider".into(),
            plural: "providers".into(),
        },
    )
    .list(&ListParams::default())
    .await
    .expect("list clusterctl Providers");
    let mut inventory: Vec<(String, String, String)> = providers
        .items
        .iter()
        .map(|p| {
            let s = |k: &str| p.data[k].as_str().unwrap_or_default().to_owned();
            (s("type"), s("providerName"), s("version"))
        })
        .collect();
    inventory.sort();
    let capi_version = clusterctl.capi_version.clone();
    let ours = clusterctl.version.clone();
    assert_eq!(
        inventory,
        vec![
            ("BootstrapProvider".into(), PROVIDER.into(), ours.clone()),
            ("ControlPlaneProvider".into(), PROVIDER.into(), ours.clone()),
            ("CoreProvider".into(), "cluster-api".into(), capi_version),
        ],
        "clusterctl Provider inventory"
    );

    // Our providers' objects, labelled by clusterctl.
    for label in [
        format!("bootstrap-{PROVIDER}"),
        format!("control-plane-{PROVIDER}"),
    ] {
        let (crds, deployments) = provider_objects(&tb.client, &label).await;
        assert!(
            !crds.is_empty(),
            "no CRDs labelled cluster.x-k8s.io/provider={label}"
        );
        assert!(
            !deployments.is_empty(),
            "no Deployment labelled cluster.x-k8s.io/provider={label}"
        );
        let crd_api = Api::<CustomResourceDefinition>::all(tb.client.clone());
        for name in &crds {
            let crd = crd_api.get(name).await.expect("get CRD");
            assert!(
                crd.labels().contains_key("clusterctl.cluster.x-k8s.io"),
                "{name} lacks clusterctl's label"
            );
        }
    }
    let (bootstrap_crds, _) = provider_objects(&tb.client, &format!("bootstrap-{PROVIDER}")).await;
    for crd in [
        "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io",
        "openshiftassistedconfigtemplates.bootstrap.cluster.x-k8s.io",
    ] {
        assert!(
            bootstrap_crds.iter().any(|c| c == crd),
            "{crd} not installed: {bootstrap_crds:?}"
        );
    }
    let (cp_crds, _) = provider_objects(&tb.client, &format!("control-plane-{PROVIDER}")).await;
    assert!(
        cp_crds
            .iter()
            .any(|c| c == "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io"),
        "OpenshiftAssistedControlPlane CRD not installed: {cp_crds:?}"
    );
    let (core_crds, core_deployments) = provider_objects(&tb.client, "cluster-api").await;
    assert!(core_crds.iter().any(|c| c == "machines.cluster.x-k8s.io"));
    assert_eq!(
        core_deployments,
        vec!["capi-system/capi-controller-manager".to_owned()]
    );
}

/// The lab's way: `clusterctl init` installs Cluster API, CAPM3 and our providers, then Cluster
/// API and CAPM3 run as processes with the installed webhooks re-pointed at them, so creating
/// their objects goes through their real webhooks.
#[tokio::test]
async fn clusterctl_init_of_everything_then_capi_and_capm3_as_processes() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder()
        .controller_manager()
        .clusterctl_init()
        .start()
        .await
        .expect("start testbed with clusterctl init");
    let providers = Api::<DynamicObject>::all_with(
        tb.client.clone(),
        &ApiResource {
            group: "clusterctl.cluster.x-k8s.io".into(),
            version: "v1alpha3".into(),
            api_version: "clusterctl.cluster.x-k8s.io/v1alpha3".into(),
            kind: "Provider".into(),
            plural: "providers".into(),
        },
    )
    .list(&ListParams::default())
    .await
    .expect("list clusterctl Providers");
    let mut names: Vec<String> = providers
        .items
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p.data["type"].as_str().unwrap_or_default(),
                p.data["providerName"].as_str().unwrap_or_default()
            )
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "BootstrapProvider/openshift-assisted",
            "ControlPlaneProvider/openshift-assisted",
            "CoreProvider/cluster-api",
            "InfrastructureProvider/metal3",
        ]
    );
    // Both webhooks (CAPI's Cluster defaulting/validation, CAPM3's Metal3Cluster) answer.
    tb.apply_yaml(
        r#"apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {name: c, namespace: default}
spec:
  controlPlaneEndpoint: {host: 192.0.2.10, port: 6443}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: c, namespace: default}
spec:
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Cluster, name: c}
"#,
    )
    .await
    .expect("objects admitted by the re-pointed webhooks");
}

/// Where the site's hosts reach the core has no default (the cluster's own Service is not
/// reachable from a bare-metal network): `clusterctl init` of our control plane refuses until
/// `OPENSHIFT_ASSISTED_CORE_AGENT_API_URL` and `OPENSHIFT_ASSISTED_CORE_IMAGES_URL` are set,
/// naming them, and installs nothing of it.
#[tokio::test]
async fn clusterctl_init_names_the_site_urls_it_needs() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder().start().await.expect("start testbed");
    Clusterctl::install_cert_manager_crds(&tb)
        .await
        .expect("install cert-manager CRDs");
    let clusterctl =
        Clusterctl::with_variables(&tb, &[]).expect("assemble the local clusterctl repository");
    let err = clusterctl
        .run(INIT_OUR_PROVIDERS)
        .await
        .expect_err("clusterctl init without the site URLs fails");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("OPENSHIFT_ASSISTED_CORE_AGENT_API_URL")
            && msg.contains("OPENSHIFT_ASSISTED_CORE_IMAGES_URL")
            && msg.contains("not set"),
        "clusterctl names the missing variables: {msg}"
    );
    let (crds, _) = provider_objects(&tb.client, &format!("control-plane-{PROVIDER}")).await;
    assert!(
        crds.is_empty(),
        "nothing of the control plane installed: {crds:?}"
    );
}
