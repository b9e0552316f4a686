//! The lab with our managers as two shards each (`--shards 2`, issue 30 item 5): four SNO
//! clusters, two per shard, each installed by its shard's control-plane and bootstrap managers
//! (`--watch-filter=shard-<i>`). The run itself fails unless each shard's core holds exactly its
//! shard's clusters, every Agent carries its cluster's shard label, each host talks to its
//! shard's core, and shard 1's agent API sends a shard-0 host to shard 0's (307, then 200
//! there); the test checks that the report shows that split.

use lab::Options;

use crate::common::{DAY1_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_each_install_their_own_clusters() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "shards",
        Options {
            clusters: 4,
            shards: 2,
            timeout: std::time::Duration::from_secs(300),
            ..options()
        },
    )
    .await;
    assert_eq!(milestones(&report), DAY1_MILESTONES);
    let split = report.shards.as_ref().expect("the split is reported");
    let assigned: Vec<(&str, Vec<&str>, usize)> = split
        .shards
        .iter()
        .map(|s| {
            (
                s.shard.as_str(),
                s.clusters.iter().map(String::as_str).collect(),
                s.installed,
            )
        })
        .collect();
    assert_eq!(
        assigned,
        [
            ("shard-0", vec!["sno-01", "sno-03"], 2),
            ("shard-1", vec!["sno-02", "sno-04"], 2)
        ]
    );
    for s in &split.shards {
        assert_eq!(s.core_clusters, Some(2.0), "{s:?}");
        assert_eq!(s.core_hosts, Some(2.0), "{s:?}");
        // Both of the shard's managers did work of their own.
        assert_eq!(s.managers.len(), 2, "{s:?}");
        assert!(
            s.managers.iter().all(|m| m.requests.unwrap_or(0.0) > 0.0),
            "{s:?}"
        );
    }
    let redirect = split.redirect.as_ref().expect("the wrong-shard request");
    assert_eq!(
        (redirect.status, redirect.followed_status),
        (307, Some(200))
    );
    assert!(split.problems.is_empty(), "{:?}", split.problems);
}
