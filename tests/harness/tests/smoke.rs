//! Smoke tests proving the testbed is the real thing: our CRDs served by a real kube-apiserver
//! (CRUD, watch, server-side schema validation) and garbage collection by a real
//! kube-controller-manager.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::{Client, ResourceExt};
use serde_json::json;
use testbed::Testbed;

const GROUP: &str = "bootstrap.cluster.x-k8s.io";
const VERSION: &str = "v1alpha2";

fn oac_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: "OpenshiftAssistedConfig".into(),
        plural: "openshiftassistedconfigs".into(),
    }
}

fn oac(name: &str, spec: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": "OpenshiftAssistedConfig",
        "metadata": { "name": name },
        "spec": spec,
    }))
    .expect("valid object")
}

async fn namespace(client: &Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

async fn next_event(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<DynamicObject>>> + Unpin),
) -> WatchEvent<DynamicObject> {
    tokio::time::timeout(Duration::from_secs(20), stream.try_next())
        .await
        .expect("watch event within 20 s")
        .expect("watch stream error")
        .expect("watch stream ended")
}

#[tokio::test]
async fn crud_and_watch_on_our_crd() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder()
        .our_crds()
        .start()
        .await
        .expect("start testbed");
    namespace(&tb.client, "crud").await;
    let api: Api<DynamicObject> = Api::namespaced_with(tb.client.clone(), "crud", &oac_resource());

    let list = api.list(&Default::default()).await.expect("list");
    assert!(list.items.is_empty());
    let rv = list
        .metadata
        .resource_version
        .expect("list resourceVersion");
    let mut watch = api
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .expect("watch")
        .boxed();

    // Create.
    let created = api
        .create(
            &PostParams::default(),
            &oac(
                "worker-0",
                json!({ "cpuArchitecture": "x86_64", "additionalNTPSources": ["ntp.example.com"] }),
            ),
        )
        .await
        .expect("create");
    assert!(created.uid().is_some());
    match next_event(&mut watch).await {
        WatchEvent::Added(o) => assert_eq!(o.name_any(), "worker-0"),
        e => panic!("expected Added, got {e:?}"),
    }

    // Update (merge patch on metadata), then read it back.
    api.patch(
        "worker-0",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "labels": { "smoke": "yes" } } })),
    )
    .await
    .expect("patch");
    match next_event(&mut watch).await {
        WatchEvent::Modified(o) => {
            assert_eq!(o.labels().get("smoke").map(String::as_str), Some("yes"))
        }
        e => panic!("expected Modified, got {e:?}"),
    }
    let got = api.get("worker-0").await.expect("get");
    assert_eq!(
        got.data["spec"]["additionalNTPSources"],
        json!(["ntp.example.com"])
    );
    assert_eq!(got.labels().get("smoke").map(String::as_str), Some("yes"));

    // The spec is immutable (a CEL rule of the CRD, enforced by the apiserver).
    let err = api
        .patch(
            "worker-0",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "sshAuthorizedKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk test" } })),
        )
        .await
        .expect_err("spec update must be rejected");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422 && s.message.contains("immutable")),
        "{err:?}"
    );

    // Server-side apply on the status subresource.
    let status = json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": "OpenshiftAssistedConfig",
        "status": { "dataSecretName": "worker-0", "initialization": { "dataSecretCreated": true } },
    });
    let patched = api
        .patch_status(
            "worker-0",
            &PatchParams::apply("smoke-test").force(),
            &Patch::Apply(&status),
        )
        .await
        .expect("status apply");
    assert_eq!(
        patched.data["status"]["initialization"]["dataSecretCreated"],
        true
    );
    assert!(matches!(
        next_event(&mut watch).await,
        WatchEvent::Modified(_)
    ));

    // Delete.
    api.delete("worker-0", &DeleteParams::default())
        .await
        .expect("delete");
    match next_event(&mut watch).await {
        WatchEvent::Deleted(o) => assert_eq!(o.name_any(), "worker-0"),
        e => panic!("expected Deleted, got {e:?}"),
    }
    assert!(api.get_opt("worker-0").await.expect("get_opt").is_none());
}

#[tokio::test]
async fn our_crd_schema_rejects_invalid_objects() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder()
        .our_crds()
        .start()
        .await
        .expect("start testbed");
    let api: Api<DynamicObject> = Api::default_namespaced_with(tb.client.clone(), &oac_resource());

    let invalid = [
        (
            "bad-enum",
            json!({ "kernelArguments": [{ "operation": "bogus", "value": "console=ttyS0" }] }),
            "spec.kernelArguments[0].operation",
        ),
        (
            "bad-type",
            json!({ "cpuArchitecture": 5 }),
            "spec.cpuArchitecture",
        ),
    ];
    for (name, spec, field) in invalid {
        let err = api
            .create(&PostParams::default(), &oac(name, spec))
            .await
            .expect_err("the apiserver must reject the object");
        match err {
            kube::Error::Api(status) => {
                assert_eq!(status.code, 422, "{status:?}");
                assert!(status.message.contains(field), "{name}: {}", status.message);
            }
            e => panic!("{name}: expected an API error, got {e:?}"),
        }
        assert!(api.get_opt(name).await.expect("get_opt").is_none());
    }

    // Unknown fields are pruned by the structural schema, not stored.
    let created = api
        .create(
            &PostParams::default(),
            &oac("pruned", json!({ "notAField": true })),
        )
        .await
        .expect("create with unknown field");
    assert!(
        created.data["spec"].get("notAField").is_none(),
        "{:?}",
        created.data
    );
}

#[tokio::test]
async fn garbage_collection_and_namespace_deletion() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder()
        .controller_manager()
        .our_crds()
        .start()
        .await
        .expect("start testbed");
    namespace(&tb.client, "gc").await;
    let configs: Api<DynamicObject> =
        Api::namespaced_with(tb.client.clone(), "gc", &oac_resource());
    let secrets: Api<Secret> = Api::namespaced(tb.client.clone(), "gc");

    // A bootstrap data Secret owned by its config, as the provider will create it.
    let owner = configs
        .create(&PostParams::default(), &oac("owner", json!({})))
        .await
        .expect("create owner");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {
            "name": "owner",
            "ownerReferences": [{
                "apiVersion": format!("{GROUP}/{VERSION}"),
                "kind": "OpenshiftAssistedConfig",
                "name": "owner",
                "uid": owner.uid().unwrap(),
                "controller": true,
            }],
        },
        "stringData": { "value": "{}", "format": "ignition" },
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create child");

    configs
        .delete("owner", &DeleteParams::background())
        .await
        .expect("delete owner");
    wait_gone("garbage collector to delete the owned Secret", || async {
        secrets.get_opt("owner").await.expect("get").is_none()
    })
    .await;

    // The namespace controller empties and removes a deleted namespace.
    configs
        .create(&PostParams::default(), &oac("leftover", json!({})))
        .await
        .expect("create");
    let namespaces: Api<Namespace> = Api::all(tb.client.clone());
    namespaces
        .delete("gc", &DeleteParams::default())
        .await
        .expect("delete namespace");
    wait_gone("namespace controller to remove namespace gc", || async {
        namespaces.get_opt("gc").await.expect("get").is_none()
    })
    .await;
}

async fn wait_gone<F, Fut>(what: &str, mut gone: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while !gone().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for the {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
