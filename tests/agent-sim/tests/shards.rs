//! Two sharded cores (`--watch-filter`) on one real apiserver: each serves only its own
//! shard's InfraEnvs, Agents and clusters, announces itself on its InfraEnvs, and answers a
//! host (or a BMC) that reached the wrong core with a 307 to the right one.

use std::time::Duration;

use agent_sim::HostProfile;
use assisted_core::api::agent::Agent;
use assisted_core::api::infraenv::InfraEnv;
use assisted_core::service::shards::{AGENT_API_URL_ANNOTATION, IMAGES_URL_ANNOTATION};
use kube::ResourceExt;
use kube::api::Api;
use manager::runtime::{WATCH_FILTER_LABEL, WatchScope};
use serde_json::Value;
use testbed::Testbed;

mod common;
use common::{
    Core, LabFlags, MACHINE_CIDR, boot_hosts, cluster_yaml, free_port, init_logs, start_core_in,
    test_iso, wait_for,
};

const SHARDS: [&str; 2] = ["east", "west"];

/// `yaml` with the install objects (ClusterDeployment, AgentClusterInstall, InfraEnv) labelled
/// for `shard`, as the providers label them.
fn in_shard(yaml: &str, shard: &str) -> String {
    let docs = testbed::resources::parse_yaml(yaml).expect("fixture YAML");
    docs.into_iter()
        .map(|mut doc| {
            let kind = doc["kind"].as_str().unwrap_or_default().to_string();
            if matches!(
                kind.as_str(),
                "ClusterDeployment" | "AgentClusterInstall" | "InfraEnv"
            ) {
                doc["metadata"]["labels"][WATCH_FILTER_LABEL] = Value::from(shard);
            }
            serde_yaml::to_string(&doc).expect("YAML")
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// GET `url` with the agent token, redirects not followed: status and Location.
async fn get_as_agent(url: &str, token: &str) -> (u16, String) {
    use http_body_util::Empty;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<bytes::Bytes>>();
    let request = http::Request::get(url)
        .header("x-secret-key", token)
        .body(Empty::new())
        .unwrap();
    let response = client.request(request).await.expect("request");
    let location = response
        .headers()
        .get(http::header::LOCATION)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (response.status().as_u16(), location)
}

/// The ISO URL an InfraEnv's status publishes.
fn iso_url(ie: &InfraEnv) -> String {
    ie.status
        .as_ref()
        .and_then(|s| s.iso_download_url.clone())
        .expect("an ISO URL")
}

/// The InfraEnv of `shard` once its core published its ISO URL.
async fn served_infraenv(client: &kube::Client, shard: &str) -> InfraEnv {
    let api: Api<InfraEnv> = Api::namespaced(client.clone(), shard);
    wait_for(
        &format!("{shard}'s InfraEnv served and announced"),
        Duration::from_secs(60),
        || async {
            let ie = api.get(shard).await.ok()?;
            ie.status.as_ref()?.iso_download_url.as_ref()?;
            ie.annotations().get(AGENT_API_URL_ANNOTATION)?;
            Some(ie)
        },
    )
    .await
}

#[tokio::test]
async fn two_shards_split_the_clusters_and_send_strays_on() {
    if testbed::skip() {
        return;
    }
    init_logs();
    let tb = Testbed::builder()
        .our_crds()
        .start()
        .await
        .expect("testbed");
    let client = tb.client.clone();
    let dir = tempfile::tempdir().unwrap();
    let iso = test_iso(dir.path());
    let mut cores: Vec<Core> = Vec::new();
    for shard in SHARDS {
        let scope = WatchScope {
            namespace: String::new(),
            watch_filter: shard.into(),
        };
        let data = dir.path().join(shard);
        let ports = (free_port(), free_port());
        cores.push(
            start_core_in(
                client.clone(),
                scope,
                &data,
                &iso,
                ports,
                &LabFlags::default(),
            )
            .await,
        );
    }
    for shard in SHARDS {
        let yaml = in_shard(&cluster_yaml(shard, shard, 1, 0), shard);
        tb.apply_yaml(&yaml).await.expect("apply");
    }

    // Each InfraEnv is served by its own shard's core only: its ISO URL and announcement name
    // that core (a core that took the other's would move them back and forth).
    let mut infraenvs = Vec::new();
    for (shard, core) in SHARDS.iter().zip(&cores) {
        let ie = served_infraenv(&client, shard).await;
        let iso_url = iso_url(&ie);
        assert!(iso_url.starts_with(&core.images_url), "{shard}: {iso_url}");
        assert_eq!(ie.annotations()[AGENT_API_URL_ANNOTATION], core.api_url);
        assert_eq!(ie.annotations()[IMAGES_URL_ANNOTATION], core.images_url);
        infraenvs.push(ie);
    }

    // East's host boots east's image: it talks to east's core, and its Agent is east's.
    let cluster = boot_hosts(
        &client,
        "east",
        "east",
        vec![HostProfile::sno_like(0, MACHINE_CIDR).unwrap()],
        (&[], &[]),
    )
    .await;
    assert_eq!(cluster.service_url, cores[0].api_url);
    let agents: Api<Agent> = Api::namespaced(client.clone(), "east");
    let agent = wait_for("east's Agent", Duration::from_secs(60), || async {
        agents
            .list(&Default::default())
            .await
            .ok()?
            .items
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        agent.labels().get(WATCH_FILTER_LABEL).map(String::as_str),
        Some("east")
    );

    // The same host asking west's core is sent to east's, path and query kept.
    let path = format!(
        "/api/assisted-install/v2/infra-envs/{}/hosts/{}/instructions",
        cluster.infra_env_id,
        agent.name_any()
    );
    let at_west = format!("{}{path}", cores[1].api_url);
    let (status, location) = wait_for("the redirect", Duration::from_secs(30), || async {
        let answer = get_as_agent(&at_west, &cluster.token).await;
        (answer.0 == 307).then_some(answer)
    })
    .await;
    assert_eq!(
        (status, location.as_str()),
        (307, format!("{}{path}", cores[0].api_url).as_str())
    );
    let (status, _) = get_as_agent(&location, &cluster.token).await;
    assert_eq!(status, 200, "the redirect's target answers");

    // A BMC fetching east's ISO from west's image server is sent to east's.
    let iso_url = iso_url(&infraenvs[0]);
    let stray = iso_url.replacen(&cores[0].images_url, &cores[1].images_url, 1);
    let (status, location) = get_as_agent(&stray, "").await;
    assert_eq!((status, location.as_str()), (307, iso_url.as_str()));

    // Without a valid token nothing is redirected: west refuses as it always did.
    let (status, location) = get_as_agent(&at_west, "not-a-token").await;
    assert_eq!((status, location.as_str()), (401, ""));

    for core in cores {
        core.kill().await;
    }
}
