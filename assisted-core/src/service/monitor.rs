//! The monitor: refreshes every cluster and host (validations, timeouts, auto-start) on a
//! tick or when woken, and runs what a pass asks for (install preparation, day-2 installs).

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::watch;

use crate::service::controllers::context::Context;
use crate::service::controllers::events::aci_reference;
use crate::service::controllers::prepare::InfraEnvInputs;
use crate::service::install::InstallError;
use crate::service::store::{Action as StoreAction, ClusterRecord, StoreError};

/// The monitor: a pass whenever something changed (debounced) and at least every `tick`.
pub async fn run(ctx: Arc<Context>, tick: Duration, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = ctx.store.wake.notified() => {
                // Let a burst of agent calls land before the pass.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            _ = tokio::time::sleep(tick) => {}
            _ = shutdown.changed() => return,
        }
        ctx.metrics.held(&ctx.store);
        for action in ctx.store.monitor_pass(Timestamp::now()) {
            match action {
                StoreAction::Prepare(id) => start_preparation(&ctx, id).await,
                StoreAction::InstallDay2(cluster, host) => {
                    match write_day2_ignition(&ctx, &cluster, &host).await {
                        Ok(()) => {
                            if ctx
                                .store
                                .start_day2_install(&cluster, &host, Timestamp::now())
                            {
                                tracing::info!(%cluster, %host, "day-2 host installing");
                            }
                        }
                        Err(e) => {
                            tracing::warn!(%cluster, %host, error = %e, "cannot write day-2 ignition")
                        }
                    }
                }
            }
        }
    }
}

/// The pointer ignition a day-2 worker fetches (`worker-<id>.ign`), shaped like the one
/// assisted-service renders from its `internal/ignition/templates/node.ign`.
/// Why a day-2 host's ignition could not be written (its install then waits for the next pass).
#[derive(Debug, thiserror::Error)]
enum Day2IgnitionError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the host left the cluster")]
    HostLeft,
    #[error(transparent)]
    Install(#[from] InstallError),
}

async fn write_day2_ignition(
    ctx: &Context,
    cluster_id: &str,
    host_id: &str,
) -> Result<(), Day2IgnitionError> {
    let rec = ctx.store.cluster(cluster_id)?;
    let c = &rec.snapshot;
    let host = c.host(host_id).ok_or(Day2IgnitionError::HostLeft)?;
    let pool = host
        .machine_config_pool
        .clone()
        .unwrap_or_else(|| "worker".into());
    let mut ign = crate::service::install::day2_pointer_ignition(
        &c.name,
        &c.base_domain,
        &pool,
        c.ignition_endpoint.ca_certificate.as_deref(),
        c.ignition_endpoint.url.as_deref(),
        c.ignition_endpoint.token.as_deref(),
        host.hostname(),
    );
    if let Some(overrides) = host.ignition_config_overrides.as_deref() {
        ign = crate::service::install::with_ignition_override(&ign, overrides, host.hostname())?;
    }
    // `<role>-<host>.ign`, the name the installer asks for (upstream's
    // createAndUploadDay2NodeIgnition names it by the effective role too).
    let name = crate::service::install::host_ignition_file_name(host.day2_role(), host_id);
    crate::service::install::FileStore::new(ctx.files_root.clone())
        .put(cluster_id, &name, &ign)
        .await?;
    Ok(())
}

/// The trust bundles and NTP sources of the InfraEnvs the cluster's hosts booted from.
fn infra_env_inputs(ctx: &Context, rec: &ClusterRecord) -> InfraEnvInputs {
    let mut ids: Vec<&str> = rec
        .snapshot
        .hosts
        .iter()
        .map(|h| h.infra_env_id.as_str())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = InfraEnvInputs::default();
    for ie in ids
        .iter()
        .filter_map(|id| ctx.store.infra_env_record(id).ok())
    {
        out.trust_bundles.extend(ie.additional_trust_bundle);
        out.ntp_sources.extend(ie.ntp_sources);
    }
    out
}

/// Runs the install backend for a cluster in preparation (also to resume one cut short by a
/// restart); a second call while one runs is a no-op.
pub async fn start_preparation(ctx: &Arc<Context>, cluster_id: String) {
    if !ctx.preparing.lock().await.insert(cluster_id.clone()) {
        return;
    }
    let Ok(rec) = ctx.store.cluster(&cluster_id) else {
        ctx.preparing.lock().await.remove(&cluster_id);
        return;
    };
    let ctx = ctx.clone();
    tokio::spawn(async move {
        tracing::info!(cluster = %rec.snapshot.name, "generating install-config and ignitions");
        // One event for the preparation, when it ends: its start is the AgentClusterInstall's
        // `preparing-for-installation` state (an event more per cluster said nothing new).
        let aci = aci_reference(&rec);
        let infra_envs = infra_env_inputs(&ctx, &rec);
        let result = ctx.preparer.prepare(rec, infra_envs).await;
        match &result {
            Ok(_) => {
                ctx.events
                    .normal(
                        &aci,
                        "InstallationPrepared",
                        "Day-1 install started: install-config and ignitions generated; hosts are installing",
                    )
                    .await
            }
            Err(e) => {
                tracing::warn!(cluster = %cluster_id, error = %e, "install preparation failed");
                ctx.events
                    .warning(
                        &aci,
                        "InstallationPreparationFailed",
                        format!("The installation preparation failed: {e}"),
                    )
                    .await;
            }
        }
        ctx.store
            .preparation_done(&cluster_id, result, Timestamp::now());
        ctx.preparing.lock().await.remove(&cluster_id);
    });
}
