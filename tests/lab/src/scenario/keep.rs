//! `--keep`: everything keeps running (the sites too) until Ctrl-C.

use std::time::Duration;

use crate::cluster_run::ClusterRun;
use crate::testbeds::Lab;
/// `--keep`: everything keeps running (the site too) until Ctrl-C.
pub(crate) async fn keep_running(lab: &mut Lab, runs: &mut [ClusterRun]) {
    let clusterctl = lab.tb.cache.bin("clusterctl");
    println!();
    println!("The lab keeps running (Ctrl-C stops it). Try:");
    println!("  export KUBECONFIG={}", lab.tb.kubeconfig.display());
    if let [r] = runs {
        println!(
            "  kubectl get baremetalhosts,machines,agents -n {}",
            r.spec.ns
        );
        println!(
            "  {} describe cluster {} -n {}",
            clusterctl.display(),
            r.spec.name,
            r.spec.ns
        );
    } else if let Some(r) = runs.first() {
        println!("  kubectl get clusters,baremetalhosts,machines,agents -A");
        println!(
            "  {} describe cluster {} -n {}   # and the others",
            clusterctl.display(),
            r.spec.name,
            r.spec.ns
        );
    }
    println!(
        "  kubectl --kubeconfig {} get nodes   # the workload cluster",
        lab.workload.kubeconfig.display()
    );
    // Registered now, so that a Ctrl-C during a pass is not lost.
    let mut interrupt =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("listening for Ctrl-C: {e}");
                return;
            }
        };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = interrupt.recv() => break,
        }
        for r in runs.iter_mut() {
            if let Err(e) = r.site.tick(&lab.workload).await {
                tracing::warn!("site of {}: {e:#}", r.spec.name);
            }
        }
    }
}
