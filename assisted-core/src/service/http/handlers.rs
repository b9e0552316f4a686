//! Route handlers. Each one validates its input, calls the [`Store`] (pure domain inside) and
//! maps the result to upstream's status codes; none holds a store lock across I/O.
//!
//! [`Store`]: crate::service::store::Store

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use jiff::Timestamp;
use serde::Deserialize;
use tokio::io::AsyncWriteExt;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi};

use super::files::{self, CREDENTIALS};
use super::models::*;
use super::{ApiJson, ApiPath, ApiQuery, AppState, JsonBytes, LOGS_BODY_LIMIT, RawBody};
use crate::domain::{StepReply, next_step_runner_command};
use crate::service::error::ApiError;
use crate::service::images::pxe::{IpxeAnswer, ipxe_answer};

type ApiResult<T> = Result<T, ApiError>;

#[derive(OpenApi)]
#[openapi(
    info(title = "assisted-core agent API", version = "v2", description = "The assisted-service v2 endpoints used by the discovery agent, assisted-installer and its controller."),
    servers((url = "/api/assisted-install/v2")),
    paths(
        register_host, next_steps, step_reply, host_progress, host_logs_progress,
        infra_env_files, minimal_initrd, host_ignition, get_cluster, list_cluster_hosts,
        upload_logs, download_logs, cluster_files, cluster_credentials, upload_ingress_cert,
        cluster_progress, list_operators, report_operator, complete_installation,
        cluster_logs_progress, trigger_event,
    ),
    components(schemas(ErrorModel, InfraErrorModel)),
    modifiers(&SecuritySchemes),
)]
pub struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let c = openapi.components.get_or_insert_with(Default::default);
        c.add_security_scheme(
            "agentAuth",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Secret-Key"))),
        );
        c.add_security_scheme(
            "urlAuth",
            SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::new("api_key"))),
        );
        // Every operation is authenticated; its 401 and 403 carry `infra_error`, not `error`.
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                for (code, description) in [("401", "Unauthorized"), ("403", "Forbidden")] {
                    let content = utoipa::openapi::ContentBuilder::new()
                        .schema(Some(utoipa::openapi::Ref::from_schema_name("InfraError")))
                        .build();
                    let response = utoipa::openapi::ResponseBuilder::new()
                        .description(description)
                        .content("application/json", content)
                        .build();
                    operation
                        .responses
                        .responses
                        .insert(code.to_string(), response.into());
                }
            }
        }
    }
}

/// Upstream's `infra_error` model: the body of every 401 and 403.
#[derive(utoipa::ToSchema)]
#[schema(as = InfraError)]
#[allow(dead_code)]
struct InfraErrorModel {
    #[schema(minimum = 401, maximum = 403)]
    code: i32,
    message: String,
}

/// Upstream's `error` model, as [`ApiError`] renders it.
#[derive(utoipa::ToSchema)]
#[schema(as = Error)]
#[allow(dead_code)]
struct ErrorModel {
    code: String,
    href: String,
    id: i32,
    kind: String,
    reason: String,
}

fn now() -> Timestamp {
    Timestamp::now()
}

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty())
}

fn min_disk_gb(st: &AppState) -> u64 {
    st.store.cfg.hw.default.worker.disk_size_gb
}

/// The host model of one host of the infra-env (404 when not there).
fn host_of(st: &AppState, infra_env_id: &str, host_id: &str) -> ApiResult<Host> {
    let min_disk = min_disk_gb(st);
    st.store.view(|s| {
        let missing = || ApiError::not_found(format!("host {host_id} not found"));
        let (h, cluster) = s.host_with_cluster(host_id).ok_or_else(missing)?;
        if h.infra_env_id != infra_env_id {
            return Err(missing());
        }
        let sno = cluster.is_some_and(|c| c.snapshot.is_sno());
        Ok(host_model(h, s.host_extra.get(host_id), sno, min_disk))
    })
}

#[utoipa::path(post, path = "/infra-envs/{infra_env_id}/hosts", operation_id = "v2RegisterHost",
    params(("infra_env_id" = String, Path)),
    request_body = HostCreateParams,
    responses((status = 201, body = HostRegistrationResponse), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn register_host(
    State(st): State<AppState>,
    ApiPath(infra_env_id): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(p): ApiJson<HostCreateParams>,
) -> ApiResult<Response> {
    let version = p
        .discovery_agent_version
        .as_deref()
        .filter(|v| !v.is_empty())
        .or_else(|| header_str(&headers, "discovery_agent_version"))
        .unwrap_or("");
    let h = st
        .store
        .register_host(&infra_env_id, &p.host_id, version, now())?;
    let image = if st.store.cfg.agent_image.is_empty() {
        &h.discovery_agent_version
    } else {
        &st.store.cfg.agent_image
    };
    let cmd = next_step_runner_command(&h, image);
    let host = host_of(&st, &infra_env_id, &h.id)?;
    let body = HostRegistrationResponse {
        host,
        next_step_runner_command: NextStepRunnerCommandModel {
            command: cmd.command,
            args: cmd.args,
            retry_seconds: cmd.retry_seconds,
        },
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NextStepsQuery {
    /// The host's clock, unix seconds.
    timestamp: Option<i64>,
}

#[utoipa::path(get, path = "/infra-envs/{infra_env_id}/hosts/{host_id}/instructions",
    operation_id = "v2GetNextSteps",
    params(("infra_env_id" = String, Path), ("host_id" = String, Path), NextStepsQuery),
    responses((status = 200, body = StepsModel), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn next_steps(
    State(st): State<AppState>,
    ApiPath((infra_env_id, host_id)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<NextStepsQuery>,
    headers: HeaderMap,
) -> ApiResult<Json<StepsModel>> {
    let host_ts = match q.timestamp {
        Some(s) => Some(
            Timestamp::from_second(s)
                .map_err(|_| ApiError::bad_request(format!("timestamp {s} is out of range")))?,
        ),
        None => None,
    };
    let t = now();
    // Step ids only need to differ between calls; the clock is a good enough seed.
    let seed = t.as_nanosecond() as u64;
    let steps = st.store.next_steps(
        &infra_env_id,
        &host_id,
        host_ts,
        header_str(&headers, "discovery_agent_version"),
        seed,
        None,
        t,
    )?;
    Ok(Json(steps_model(steps)))
}

#[utoipa::path(post, path = "/infra-envs/{infra_env_id}/hosts/{host_id}/instructions",
    operation_id = "v2PostStepReply",
    params(("infra_env_id" = String, Path), ("host_id" = String, Path)),
    request_body = StepReplyBody,
    responses((status = 204), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn step_reply(
    State(st): State<AppState>,
    ApiPath((infra_env_id, host_id)): ApiPath<(String, String)>,
    JsonBytes(body): JsonBytes,
) -> ApiResult<StatusCode> {
    let reply = StepReply::parse_checked(&body).map_err(|e| {
        if e.is_validation() {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
        } else {
            ApiError::bad_request(e.to_string())
        }
    })?;
    st.store
        .step_reply(&infra_env_id, &host_id, &reply, now())?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(put, path = "/infra-envs/{infra_env_id}/hosts/{host_id}/progress",
    operation_id = "v2UpdateHostInstallProgress",
    params(("infra_env_id" = String, Path), ("host_id" = String, Path)),
    request_body = HostProgressParams,
    responses((status = 200), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn host_progress(
    State(st): State<AppState>,
    ApiPath((infra_env_id, host_id)): ApiPath<(String, String)>,
    ApiJson(p): ApiJson<HostProgressParams>,
) -> ApiResult<StatusCode> {
    st.store.update_progress(
        &infra_env_id,
        &host_id,
        &p.current_stage,
        p.progress_info.as_deref().unwrap_or(""),
        now(),
    )?;
    Ok(StatusCode::OK)
}

#[utoipa::path(put, path = "/infra-envs/{infra_env_id}/hosts/{host_id}/logs-progress",
    operation_id = "v2UpdateHostLogsProgress",
    params(("infra_env_id" = String, Path), ("host_id" = String, Path)),
    request_body = LogsProgressParams,
    responses((status = 204), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn host_logs_progress(
    State(st): State<AppState>,
    ApiPath((infra_env_id, host_id)): ApiPath<(String, String)>,
    ApiJson(p): ApiJson<LogsProgressParams>,
) -> ApiResult<StatusCode> {
    st.store
        .update_logs_progress(&infra_env_id, &host_id, &p.logs_state)?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FileNameQuery {
    file_name: String,
    /// Upstream's enums; checked so a typo is an error rather than ignored.
    #[serde(default)]
    ipxe_script_type: Option<String>,
    #[serde(default)]
    discovery_iso_type: Option<String>,
    /// The booting host's MAC (the boot-order-control script asks again with it).
    #[serde(default)]
    mac: Option<String>,
}

/// A query value outside upstream's enum is a validation error (422), as go-swagger answers.
fn check_enum(name: &str, value: Option<&str>, allowed: &[&str]) -> ApiResult<()> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("{name} in query should be one of {allowed:?}, got {v:?}"),
        )),
        _ => Ok(()),
    }
}

#[utoipa::path(get, path = "/infra-envs/{infra_env_id}/downloads/files",
    operation_id = "v2DownloadInfraEnvFiles",
    params(("infra_env_id" = String, Path),
        ("file_name" = String, Query, description = "discovery.ign, ipxe-script or static-network-config"),
        ("ipxe_script_type" = Option<String>, Query, description = "discovery-image-always or boot-order-control"),
        ("mac" = Option<String>, Query, description = "the booting host's MAC (ipxe-script): 404 for an installed host, so it boots from disk")),
    responses((status = 200, content_type = "application/octet-stream", body = String), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = []), ("urlAuth" = [])))]
pub async fn infra_env_files(
    State(st): State<AppState>,
    ApiPath(infra_env_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<FileNameQuery>,
) -> ApiResult<Response> {
    check_enum(
        "ipxe_script_type",
        q.ipxe_script_type.as_deref(),
        &["discovery-image-always", "boot-order-control"],
    )?;
    check_enum(
        "discovery_iso_type",
        q.discovery_iso_type.as_deref(),
        &["full-iso", "minimal-iso"],
    )?;
    let ie = st.store.infra_env_record(&infra_env_id)?;
    // Upstream declares every infra-env file `application/octet-stream`; its generated client
    // reads the body as a byte stream only under that type.
    let (ctype, body) = match q.file_name.as_str() {
        "discovery.ign" => (
            "application/octet-stream",
            ie.discovery_ignition.to_string(),
        ),
        "ipxe-script" => {
            let mac = q.mac.as_deref().map(str::trim).filter(|m| !m.is_empty());
            let hosts = match mac {
                Some(mac) => st.store.hosts_with_mac(&infra_env_id, mac),
                None => Vec::new(),
            };
            let boot_order = q.ipxe_script_type.as_deref() == Some("boot-order-control");
            let script = match ipxe_answer(mac, boot_order, &hosts) {
                IpxeAnswer::Discovery => ie.ipxe_script,
                IpxeAnswer::Redirect => ie.ipxe_redirect_script,
                IpxeAnswer::BootFromDisk(why) => return Err(ApiError::not_found(why)),
                IpxeAnswer::Ambiguous(n) => {
                    return Err(ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!(
                            "iPXE booting skipped: {n} hosts of infra-env {infra_env_id} have MAC {}",
                            mac.unwrap_or_default()
                        ),
                    ));
                }
            };
            ("application/octet-stream", script)
        }
        "static-network-config" => ("application/octet-stream", ie.static_network_config),
        other => {
            return Err(ApiError::bad_request(format!(
                "unknown infra-env file {other:?}"
            )));
        }
    };
    Ok((
        [
            (header::CONTENT_TYPE, ctype.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename={}", q.file_name),
            ),
        ],
        body,
    )
        .into_response())
}

#[utoipa::path(get, path = "/infra-envs/{infra_env_id}/downloads/minimal-initrd",
    operation_id = "DownloadMinimalInitrd",
    params(("infra_env_id" = String, Path)),
    responses((status = 200, content_type = "application/octet-stream", body = String),
        (status = 204, description = "Nothing to add to the initrd"), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = []), ("urlAuth" = [])))]
pub async fn minimal_initrd(
    State(st): State<AppState>,
    ApiPath(infra_env_id): ApiPath<String>,
) -> ApiResult<Response> {
    let ie = st.store.infra_env_record(&infra_env_id)?;
    Ok(match ie.minimal_initrd {
        Some(b) => (
            [(header::CONTENT_TYPE, "application/octet-stream")],
            bytes::Bytes::copy_from_slice(&b),
        )
            .into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}

#[utoipa::path(get, path = "/infra-env/{infra_env_id}/hosts/{host_id}/downloads/ignition",
    operation_id = "v2DownloadHostIgnition",
    params(("infra_env_id" = String, Path), ("host_id" = String, Path)),
    responses((status = 200, content_type = "application/octet-stream", body = String), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = []), ("urlAuth" = [])))]
pub async fn host_ignition(
    State(st): State<AppState>,
    ApiPath((infra_env_id, host_id)): ApiPath<(String, String)>,
) -> ApiResult<Response> {
    let (cluster_id, name) = st.store.view(|s| {
        let missing = || ApiError::not_found(format!("host {host_id} not found"));
        let h = s.host(&host_id).ok_or_else(missing)?;
        if h.infra_env_id != infra_env_id {
            return Err(missing());
        }
        let cid = h.cluster_id.clone().ok_or_else(|| {
            ApiError::conflict(format!("host {host_id} is not bound to a cluster"))
        })?;
        // The bootstrap host is a master: its ignition is named by the effective role.
        Ok((cid, format!("{}-{}.ign", h.effective_role().as_str(), h.id)))
    })?;
    if !files::is_allowed_cluster_file(&name) {
        return Err(ApiError::conflict(format!(
            "host {host_id} has no role yet, its ignition is not available"
        )));
    }
    let path = files::cluster_path(&st.files_root, &cluster_id, &name)?;
    files::stream_file(&path, &name).await
}

#[utoipa::path(get, path = "/clusters/{cluster_id}", operation_id = "v2GetCluster",
    params(("cluster_id" = String, Path)),
    responses((status = 200, body = Cluster), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn get_cluster(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
) -> ApiResult<Json<Cluster>> {
    cluster_of(&st, &cluster_id).map(Json)
}

fn cluster_of(st: &AppState, cluster_id: &str) -> ApiResult<Cluster> {
    let min_disk = min_disk_gb(st);
    st.store.view(|s| {
        let rec = s
            .clusters
            .get(cluster_id)
            .ok_or_else(|| ApiError::not_found(format!("cluster {cluster_id} not found")))?;
        Ok(cluster_model(rec, |id| s.host_extra.get(id), min_disk))
    })
}

#[utoipa::path(get, path = "/clusters/{cluster_id}/hosts", operation_id = "v2ListClusterHosts",
    params(("cluster_id" = String, Path)),
    responses((status = 200, body = Vec<Host>), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn list_cluster_hosts(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
) -> ApiResult<Json<Vec<Host>>> {
    cluster_of(&st, &cluster_id).map(|c| Json(c.hosts))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogsQuery {
    /// host, controller or node-boot.
    logs_type: Option<String>,
    infra_env_id: Option<String>,
    host_id: Option<String>,
}

#[utoipa::path(post, path = "/clusters/{cluster_id}/logs", operation_id = "v2UploadLogs",
    params(("cluster_id" = String, Path), LogsQuery),
    request_body(content = String, content_type = "application/octet-stream", description = "The log archive (up to 256 MiB)"),
    responses((status = 204), (status = 413, body = ErrorModel), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn upload_logs(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<LogsQuery>,
    req: Request,
) -> ApiResult<StatusCode> {
    st.store.cluster_exists(&cluster_id)?;
    let kind = q.logs_type.as_deref().unwrap_or("host");
    if !matches!(kind, "host" | "controller" | "node-boot" | "all") {
        return Err(ApiError::bad_request(format!("unknown logs_type {kind:?}")));
    }
    if let Some(ie) = &q.infra_env_id {
        files::safe_id(ie)?;
    }
    let who = match (&q.host_id, kind) {
        (Some(h), _) if files::is_uuid(h) => h.as_str(),
        (Some(h), _) => return Err(ApiError::bad_request(format!("invalid host_id {h:?}"))),
        (None, "controller") => "controller",
        (None, _) => return Err(ApiError::bad_request("host_id is required for host logs")),
    };
    let dir = files::cluster_path(&st.files_root, &cluster_id, "logs")?;
    crate::service::private_fs::create_dir_all(&dir)
        .await
        .map_err(|e| ApiError::internal(format!("cannot create log directory: {e}")))?;
    let path = dir.join(format!("{kind}_{who}.tar.gz"));
    // Upstream's clients send multipart/form-data with the archive in the part `upfile`; a
    // bare body is taken as the archive itself.
    let boundary = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(super::multipart::boundary);
    let tmp = files::temp_path(&path);
    let mut r = write_limited(req, &tmp).await;
    if r.is_ok()
        && let Some(boundary) = boundary
    {
        r = keep_upfile(&tmp, &boundary).await;
    }
    if r.is_err() {
        let _ = tokio::fs::remove_file(&tmp).await;
    }
    r?;
    tokio::fs::rename(&tmp, &path)
        .await
        .map_err(|e| ApiError::internal(format!("cannot store logs: {e}")))?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DownloadLogsQuery {
    /// host, controller, node-boot or all (the default: the whole bundle).
    logs_type: Option<String>,
    /// The host whose logs (`host`, `node-boot`).
    host_id: Option<String>,
}

#[utoipa::path(get, path = "/clusters/{cluster_id}/logs", operation_id = "v2DownloadClusterLogs",
    params(("cluster_id" = String, Path), DownloadLogsQuery),
    responses((status = 200, content_type = "application/octet-stream", body = String,
        description = "One uploaded archive, or (logs_type all) a tar of every upload, the cluster (cluster.json) and the ConfigMaps attached to it"),
        (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = []), ("urlAuth" = [])))]
pub async fn download_logs(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<DownloadLogsQuery>,
) -> ApiResult<Response> {
    let cluster = cluster_of(&st, &cluster_id)?;
    let dir = files::cluster_path(&st.files_root, &cluster_id, "logs")?;
    let kind = q
        .logs_type
        .as_deref()
        .filter(|k| !k.is_empty())
        .unwrap_or("all");
    let whose = match &q.host_id {
        Some(h) => format!("cluster {cluster_id} host {h}"),
        None => format!("cluster {cluster_id}"),
    };
    let one = |name: String| async move {
        match files::stream_file(&dir.join(&name), &name).await {
            Err(e) if e.status == StatusCode::NOT_FOUND => Err(ApiError::not_found(format!(
                "no {kind} logs were uploaded for {whose}"
            ))),
            r => r,
        }
    };
    match (kind, q.host_id.as_deref()) {
        ("all", _) => logs_bundle(&st, &cluster).await,
        ("controller", _) => one("controller_controller.tar.gz".into()).await,
        ("host" | "node-boot", Some(h)) if files::is_uuid(h) => {
            one(format!("{kind}_{h}.tar.gz")).await
        }
        ("host" | "node-boot", Some(h)) => {
            Err(ApiError::bad_request(format!("invalid host_id {h:?}")))
        }
        ("host" | "node-boot", None) => Err(ApiError::bad_request(format!(
            "host_id is required for {kind} logs"
        ))),
        (other, _) => Err(ApiError::bad_request(format!(
            "unknown logs_type {other:?}: host, controller, node-boot or all"
        ))),
    }
}

/// The whole bundle, written to a file that is gone once the download ends.
async fn logs_bundle(st: &AppState, cluster: &Cluster) -> ApiResult<Response> {
    use super::logs::{Content, Entry};
    let mut entries = vec![Entry {
        name: "cluster.json".into(),
        content: Content::Bytes(serde_json::to_vec_pretty(cluster).unwrap_or_default()),
    }];
    // A cluster's attachments are read when asked for: a download is rare, a watch is not.
    let aci = st.store.view(|s| {
        s.clusters.get(&cluster.id).map(|r| {
            (
                r.settings.namespace.clone(),
                r.settings.agent_cluster_install.clone(),
            )
        })
    });
    if let (Some(client), Some((ns, aci))) = (&st.client, aci.filter(|(_, a)| !a.is_empty())) {
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(client.clone(), &ns);
        let lp = kube::api::ListParams::default()
            .labels(&format!("{}={aci}", super::logs::LOGS_OF_LABEL));
        match api.list(&lp).await {
            Ok(list) => entries.extend(super::logs::attachments(&list.items)),
            // The rest of the bundle is still worth having; say what is missing.
            Err(e) => entries.push(Entry {
                name: "attachments-error.txt".into(),
                content: Content::Bytes(
                    format!("the ConfigMaps attached to AgentClusterInstall {ns}/{aci} could not be listed: {e}\n")
                        .into_bytes(),
                ),
            }),
        }
    }
    let cluster_dir = files::cluster_path(&st.files_root, &cluster.id, "")?;
    let logs_dir = cluster_dir.join("logs");
    let bundle = files::temp_path(&cluster_dir.join("logs-bundle.tar"));
    let prefix = format!("{}_{}", cluster.name, cluster.id);
    let mtime = Timestamp::now().as_second().max(0) as u64;
    let path = bundle.clone();
    let written = tokio::task::spawn_blocking(move || -> std::io::Result<std::fs::File> {
        std::fs::create_dir_all(&cluster_dir)?;
        entries.extend(super::logs::uploads(&logs_dir)?);
        let file = std::fs::File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        // The name is not needed once open: nothing is left behind, whatever happens next.
        std::fs::remove_file(&path)?;
        super::logs::write_tar(std::io::BufWriter::new(&file), &prefix, &entries, mtime)?;
        Ok(file)
    })
    .await
    .map_err(|e| ApiError::internal(format!("building the logs bundle: {e}")))?;
    let mut file = match written {
        Ok(f) => tokio::fs::File::from_std(f),
        Err(e) => {
            let _ = tokio::fs::remove_file(&bundle).await;
            return Err(ApiError::internal(format!("building the logs bundle: {e}")));
        }
    };
    tokio::io::AsyncSeekExt::rewind(&mut file)
        .await
        .map_err(|e| ApiError::internal(format!("reading the logs bundle: {e}")))?;
    files::stream_open_file(file, &format!("{}_{}.tar", cluster.name, cluster.id)).await
}

/// Replaces the multipart body in `path` with the content of its `upfile` part.
async fn keep_upfile(path: &std::path::Path, boundary: &str) -> ApiResult<()> {
    let path = path.to_path_buf();
    let boundary = boundary.to_string();
    tokio::task::spawn_blocking(move || -> ApiResult<()> {
        use std::io::{Read, Seek, SeekFrom};
        let io = |e: std::io::Error| ApiError::internal(format!("cannot store logs: {e}"));
        let mut body = std::fs::File::open(&path).map_err(io)?;
        let (start, end) = super::multipart::part_range(&mut body, &boundary, "upfile")
            .map_err(|e| ApiError::bad_request(format!("multipart log upload: {e}")))?;
        let part = files::temp_path(&path);
        let copied = (|| {
            let mut out = crate::service::private_fs::create_file_blocking(&part)?;
            body.seek(SeekFrom::Start(start))?;
            std::io::copy(&mut (&mut body).take(end - start), &mut out)?;
            std::fs::rename(&part, &path)
        })();
        if copied.is_err() {
            let _ = std::fs::remove_file(&part);
        }
        copied.map_err(io)
    })
    .await
    .map_err(|e| ApiError::internal(format!("cannot store logs: {e}")))?
}

/// Streams the body to `path`, failing with 413 past [`LOGS_BODY_LIMIT`].
async fn write_limited(req: Request, path: &std::path::Path) -> ApiResult<()> {
    let too_big = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("log uploads are limited to {LOGS_BODY_LIMIT} bytes"),
        )
    };
    if let Some(len) = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && len > LOGS_BODY_LIMIT as u64
    {
        return Err(too_big());
    }
    let mut body = http_body_util::Limited::new(req.into_body(), LOGS_BODY_LIMIT);
    let mut file = crate::service::private_fs::create_file(path)
        .await
        .map_err(|e| ApiError::internal(format!("cannot create log file: {e}")))?;
    while let Some(frame) = tokio::time::timeout(super::BODY_READ_TIMEOUT, body.frame())
        .await
        .map_err(|_| super::body_timeout())?
    {
        let frame = frame.map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                too_big()
            } else {
                ApiError::bad_request(format!("cannot read the body: {e}"))
            }
        })?;
        if let Ok(data) = frame.into_data() {
            file.write_all(&data)
                .await
                .map_err(|e| ApiError::internal(format!("cannot write logs: {e}")))?;
        }
    }
    file.flush()
        .await
        .map_err(|e| ApiError::internal(format!("cannot write logs: {e}")))
}

#[utoipa::path(get, path = "/clusters/{cluster_id}/downloads/files",
    operation_id = "V2DownloadClusterFiles",
    params(("cluster_id" = String, Path),
        ("file_name" = String, Query, description = "bootstrap.ign, master.ign, worker.ign, arbiter.ign, metadata.json, install-config.yaml or <role>-<host_id>.ign")),
    responses((status = 200, content_type = "application/octet-stream", body = String), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = []), ("urlAuth" = [])))]
pub async fn cluster_files(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<FileNameQuery>,
) -> ApiResult<Response> {
    if !files::is_allowed_cluster_file(&q.file_name) {
        return Err(ApiError::bad_request(format!(
            "file_name {:?} is not downloadable",
            q.file_name
        )));
    }
    st.store.cluster_exists(&cluster_id)?;
    let path = files::cluster_path(&st.files_root, &cluster_id, &q.file_name)?;
    files::stream_file(&path, &q.file_name).await
}

#[utoipa::path(get, path = "/clusters/{cluster_id}/downloads/credentials",
    operation_id = "V2DownloadClusterCredentials",
    params(("cluster_id" = String, Path),
        ("file_name" = String, Query, description = "kubeadmin-password, kubeconfig or kubeconfig-noingress")),
    responses((status = 200, content_type = "application/octet-stream", body = String),
        (status = 409, description = "The kubeconfig is not yet available", body = ErrorModel),
        (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = []), ("urlAuth" = [])))]
pub async fn cluster_credentials(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<FileNameQuery>,
) -> ApiResult<Response> {
    if !CREDENTIALS.contains(&q.file_name.as_str()) {
        return Err(ApiError::bad_request(format!(
            "unknown credentials file {:?}",
            q.file_name
        )));
    }
    let rec = st.store.cluster(&cluster_id)?;
    if q.file_name == "kubeconfig" && !rec.snapshot.kubeconfig_uploaded {
        return Err(ApiError::conflict(
            "kubeconfig is not yet available: the cluster has not uploaded its ingress certificate",
        ));
    }
    let path = files::cluster_path(&st.files_root, &cluster_id, &q.file_name)?;
    files::stream_file(&path, &q.file_name).await
}

#[utoipa::path(post, path = "/clusters/{cluster_id}/uploads/ingress-cert",
    operation_id = "v2UploadClusterIngressCert",
    params(("cluster_id" = String, Path)),
    request_body(content = String, content_type = "application/json", description = "The ingress CA, PEM"),
    responses((status = 201), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn upload_ingress_cert(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    RawBody(body): RawBody,
) -> ApiResult<StatusCode> {
    st.store.cluster_exists(&cluster_id)?;
    // The controller's go-swagger client sends the PEM as a JSON string.
    let pem = match serde_json::from_slice::<String>(&body) {
        Ok(s) => s.into_bytes(),
        Err(_) => body.to_vec(),
    };
    if !files::is_pem_certificate(&pem) {
        return Err(ApiError::bad_request(
            "the ingress certificate is not a PEM certificate",
        ));
    }
    let pem = String::from_utf8_lossy(&pem).into_owned();
    let src = files::cluster_path(&st.files_root, &cluster_id, "kubeconfig-noingress")?;
    let noingress = match tokio::fs::read_to_string(&src).await {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ApiError::conflict(
                "kubeconfig-noingress is not yet available for this cluster",
            ));
        }
        Err(e) => return Err(ApiError::internal(format!("cannot read kubeconfig: {e}"))),
    };
    let merged = files::merge_ingress_ca(&noingress, &pem)?;
    let dst = files::cluster_path(&st.files_root, &cluster_id, "kubeconfig")?;
    files::write_atomic(&dst, merged.as_bytes()).await?;
    st.store.kubeconfig_uploaded(&cluster_id)?;
    Ok(StatusCode::CREATED)
}

#[utoipa::path(put, path = "/clusters/{cluster_id}/progress",
    operation_id = "v2UpdateClusterFinalizingProgress",
    params(("cluster_id" = String, Path)),
    request_body = ClusterFinalizingProgress,
    responses((status = 204), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn cluster_progress(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    ApiJson(p): ApiJson<ClusterFinalizingProgress>,
) -> ApiResult<StatusCode> {
    st.store
        .finalizing_progress(&cluster_id, &p.finalizing_stage, now())?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OperatorQuery {
    operator_name: Option<String>,
}

#[utoipa::path(get, path = "/clusters/{cluster_id}/monitored-operators",
    operation_id = "v2ListOfClusterOperators",
    params(("cluster_id" = String, Path), OperatorQuery),
    responses((status = 200, body = Vec<MonitoredOperatorModel>), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn list_operators(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<OperatorQuery>,
) -> ApiResult<Json<Vec<MonitoredOperatorModel>>> {
    let rec = st.store.cluster(&cluster_id)?;
    let mut ops = operator_models(&rec.snapshot);
    if let Some(name) = &q.operator_name {
        ops.retain(|o| &o.name == name);
    }
    Ok(Json(ops))
}

#[utoipa::path(put, path = "/clusters/{cluster_id}/monitored-operators",
    operation_id = "v2ReportMonitoredOperatorStatus",
    params(("cluster_id" = String, Path)),
    request_body = OperatorMonitorReport,
    responses((status = 200), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn report_operator(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    ApiJson(p): ApiJson<OperatorMonitorReport>,
) -> ApiResult<StatusCode> {
    st.store.report_operator(&cluster_id, &p.name, &p.status)?;
    Ok(StatusCode::OK)
}

#[utoipa::path(post, path = "/clusters/{cluster_id}/actions/complete-installation",
    operation_id = "v2CompleteInstallation",
    params(("cluster_id" = String, Path)),
    request_body = CompletionParams,
    responses((status = 202, body = Cluster), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn complete_installation(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    ApiJson(p): ApiJson<CompletionParams>,
) -> ApiResult<Response> {
    // Deprecated upstream too: the monitor decides when the cluster is installed.
    tracing::info!(cluster_id, is_success = p.is_success, error_info = ?p.error_info, "complete-installation reported");
    let c = cluster_of(&st, &cluster_id)?;
    Ok((StatusCode::ACCEPTED, Json(c)).into_response())
}

#[utoipa::path(put, path = "/clusters/{cluster_id}/logs-progress",
    operation_id = "v2UpdateClusterLogsProgress",
    params(("cluster_id" = String, Path)),
    request_body = LogsProgressParams,
    responses((status = 204), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn cluster_logs_progress(
    State(st): State<AppState>,
    ApiPath(cluster_id): ApiPath<String>,
    ApiJson(p): ApiJson<LogsProgressParams>,
) -> ApiResult<StatusCode> {
    if !matches!(
        p.logs_state.as_str(),
        "requested" | "collecting" | "completed" | "timeout"
    ) {
        return Err(ApiError::bad_request(format!(
            "unknown logs_state {:?}",
            p.logs_state
        )));
    }
    st.store.cluster_exists(&cluster_id)?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/events", operation_id = "v2TriggerEvent",
    request_body(content = Object, description = "An event; recorded in the service log"),
    responses((status = 201), (status = "4XX", body = ErrorModel)),
    security(("agentAuth" = [])))]
pub async fn trigger_event(ApiJson(ev): ApiJson<serde_json::Value>) -> ApiResult<StatusCode> {
    let msg = ev.get("message").and_then(|m| m.as_str()).unwrap_or("");
    tracing::info!(event = msg, "agent event");
    Ok(StatusCode::CREATED)
}
