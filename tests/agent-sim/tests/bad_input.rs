//! The bad inputs of docs/bad-input.md through the real kube-apiserver, with our CRDs and both
//! managers' validating webhooks installed as the releases install them: every row is refused
//! with the message its admission function gives (what the doc shows), nothing of a refused
//! create is stored, an update keeps the stored object, and each row's base object (without the
//! mistake) is accepted, so every row is refused for its own mistake only. The rows are
//! controlplane-provider's (`tests/bad_input/rows.rs`).

#[path = "../../../controlplane-provider/tests/bad_input/rows.rs"]
mod rows;
#[path = "common/webhooks.rs"]
mod webhooks;

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::{Client, discovery};
use rows::{Row, config, control_plane, review, rows};
use serde_json::{Value, json};
use testbed::Testbed;

/// `object` named `name`, in the rows' namespace.
fn named(object: &Value, name: &str) -> Value {
    let mut object = object.clone();
    object["metadata"]["name"] = json!(name);
    object
}

/// The API of `object`'s kind in its namespace, its resource found by discovery.
async fn api_for(client: &Client, object: &Value) -> Api<DynamicObject> {
    let (group, version) = object["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .expect("a grouped apiVersion");
    let kind = object["kind"].as_str().expect("a kind");
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, _) = discovery::pinned_kind(client, &gvk)
        .await
        .unwrap_or_else(|e| panic!("discover {group}/{version} {kind}: {e}"));
    let ns = object["metadata"]["namespace"]
        .as_str()
        .expect("namespaced");
    Api::namespaced_with(client.clone(), ns, &resource)
}

fn dynamic(object: &Value) -> DynamicObject {
    serde_json::from_value(object.clone()).expect("a Kubernetes object")
}

/// Why `result` is not a webhook's refusal (4xx) with exactly `expected`, if it is not: the
/// apiserver prefixes it with `admission webhook "<name>" denied the request: `.
fn refusal_mismatch<T>(result: Result<T, kube::Error>, expected: &str) -> Option<String> {
    let denied = format!(" denied the request: {expected}");
    match result {
        Err(kube::Error::Api(status))
            if (400..500).contains(&status.code) && status.message.ends_with(&denied) =>
        {
            None
        }
        Err(kube::Error::Api(status)) => Some(format!("HTTP {}: {}", status.code, status.message)),
        Err(e) => Some(format!("error: {e}")),
        Ok(_) => Some("accepted".into()),
    }
}

#[tokio::test]
async fn every_bad_input_is_refused_by_the_apiserver_as_by_its_webhook() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder()
        .our_crds()
        .start()
        .await
        .expect("testbed");
    let _webhooks = webhooks::serve(&tb).await;
    let base = [control_plane(json!({})), config(json!({}))];
    let ns = base[0]["metadata"]["namespace"].as_str().unwrap();
    tb.apply_yaml(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n"
    ))
    .await
    .expect("the rows' namespace");
    let post = PostParams::default();
    // (row, expected, got)
    let mut mismatches: Vec<(String, String, String)> = Vec::new();

    // The base objects, without a mistake, are accepted.
    for (i, object) in base.iter().enumerate() {
        let object = named(object, &format!("base-{i}"));
        let api = api_for(&tb.client, &object).await;
        if let Err(e) = api.create(&post, &dynamic(&object)).await {
            let kind = object["kind"].as_str().unwrap_or_default();
            mismatches.push((format!("the base {kind}"), "accepted".into(), e.to_string()));
        }
    }

    let rows = rows();
    let total = rows.len();
    for (i, row) in rows.into_iter().enumerate() {
        // The message docs/bad-input.md shows, for the row as written.
        let expected = review(&row);
        let name = format!("bad-{i}");
        let row = Row {
            what: row.what,
            object: named(&row.object, &name),
            old: row.old.as_ref().map(|old| named(old, &name)),
        };
        let mut mismatch = |expected: &str, got: String| {
            mismatches.push((format!("bad-{i}: {}", row.what), expected.into(), got));
        };
        let expected = match expected {
            Err(refusal) => refusal.to_string(),
            Ok(warnings) => {
                mismatch(
                    "refused by the admission function",
                    format!("accepted (warnings {warnings:?})"),
                );
                continue;
            }
        };
        let api = api_for(&tb.client, &row.object).await;
        match &row.old {
            None => {
                let created = api.create(&post, &dynamic(&row.object)).await;
                if let Some(got) = refusal_mismatch(created, &expected) {
                    mismatch(&expected, got);
                }
                match api.get(&name).await {
                    Err(kube::Error::Api(status)) if status.code == 404 => {}
                    Err(e) => mismatch("not stored (404)", format!("get: {e}")),
                    Ok(_) => mismatch("not stored (404)", "stored".into()),
                }
            }
            Some(old) => {
                let stored = match api.create(&post, &dynamic(old)).await {
                    Ok(stored) => stored,
                    Err(e) => {
                        mismatch("the old object accepted", e.to_string());
                        continue;
                    }
                };
                let mut new = dynamic(&row.object);
                new.metadata.resource_version = stored.metadata.resource_version.clone();
                let replaced = api.replace(&name, &post, &new).await;
                if let Some(got) = refusal_mismatch(replaced, &expected) {
                    mismatch(&expected, got);
                }
                match api.get(&name).await {
                    Ok(now)
                        if now.metadata.resource_version == stored.metadata.resource_version => {}
                    Ok(now) => mismatch(
                        "the old object kept",
                        format!(
                            "resourceVersion {:?} after {:?}",
                            now.metadata.resource_version, stored.metadata.resource_version
                        ),
                    ),
                    Err(e) => mismatch("the old object kept", format!("get: {e}")),
                }
            }
        }
    }

    let listed: Vec<String> = mismatches
        .iter()
        .map(|(row, expected, got)| format!("{row}\n  expected: {expected}\n  got:      {got}"))
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} mismatch(es) over {total} rows and {} base objects:\n{}",
        mismatches.len(),
        base.len(),
        listed.join("\n")
    );
}
