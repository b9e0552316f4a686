//! The discovery agent loop and the installer it starts on an `install` step.
//!
//! One [`run`] is one agent process lifetime on one host: register, poll instructions, answer
//! them, and on `install` run the simulated installer until the host "reboots" into the
//! installed OS, which ends the agent. [`Host`] wraps it in a task that tests can observe,
//! kill and restart.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};

use crate::client::{CallError, Trust, api_url, body_excerpt, call};
use crate::profile::HostProfile;
use crate::reply::{ReplyCtx, step_reply};
use crate::runtime::ContainerRuntime;
use crate::stages::{self, InstallRole};
use crate::wire::*;

/// How the simulated host behaves. Build with [`AgentConfig::new`] and adjust fields.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Server URL without the API path, e.g. `http://127.0.0.1:8090`.
    pub base_url: String,
    pub infra_env_id: String,
    /// Sent as `X-Secret-Key`; empty sends no header.
    pub token: String,
    pub profile: HostProfile,
    /// The other simulated hosts; connectivity checks succeed towards these. Shared so a test
    /// can add hosts or cut one off while agents run.
    pub peers: Arc<RwLock<Vec<HostProfile>>>,
    /// Reply knobs (VIPs, injected failures); shared so a test can change them mid-run.
    pub reply_ctx: Arc<RwLock<ReplyCtx>>,
    /// Multiplier on every wait the real agent/installer would do; 0 = as fast as possible.
    pub speed: f64,
    /// `discovery_agent_version` sent on registration.
    pub agent_version: String,
    /// Shortest wait between polls (keeps speed 0 from busy-looping the server).
    pub min_poll_interval: Duration,
    /// Longest wait between polls whatever the server asks.
    pub max_poll_interval: Duration,
    /// The bootstrap host holds "Waiting for control plane" until the other masters report
    /// "Rebooting" or later (at most `bootstrap_wait_timeout`).
    pub bootstrap_waits_for_masters: bool,
    pub bootstrap_wait_timeout: Duration,
    /// Added to the host clock sent as `timestamp` (simulates clock skew).
    pub clock_skew_secs: i64,
    /// The CA the agent verifies an https service with (its ignition's `--cacert`).
    pub trust: Trust,
    /// Where the host's pulls go (image availability, the installer image); `None`: every
    /// pull succeeds without one.
    pub runtime: Option<Arc<dyn ContainerRuntime>>,
}

impl AgentConfig {
    pub fn new(
        base_url: impl Into<String>,
        infra_env_id: impl Into<String>,
        token: impl Into<String>,
        profile: HostProfile,
    ) -> AgentConfig {
        AgentConfig {
            base_url: base_url.into(),
            infra_env_id: infra_env_id.into(),
            token: token.into(),
            profile,
            peers: Arc::new(RwLock::new(Vec::new())),
            reply_ctx: Arc::new(RwLock::new(ReplyCtx::default())),
            speed: 0.0,
            agent_version: "quay.io/edge-infrastructure/assisted-installer-agent:latest".into(),
            min_poll_interval: Duration::from_millis(50),
            max_poll_interval: Duration::from_secs(60),
            bootstrap_waits_for_masters: true,
            bootstrap_wait_timeout: Duration::from_secs(300),
            clock_skew_secs: 0,
            trust: Trust::none(),
            runtime: None,
        }
    }

    pub fn with_peers(mut self, peers: Arc<RwLock<Vec<HostProfile>>>) -> Self {
        self.peers = peers;
        self
    }

    pub fn with_speed(mut self, speed: f64) -> Self {
        self.speed = speed;
        self
    }

    pub fn host_id(&self) -> &str {
        &self.profile.uuid
    }
}

/// What the simulated host did, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEvent {
    /// The server accepted the registration (status of the host it returned).
    Registered { status: String },
    /// The server refused the registration (409 and other 4xx); the agent retries slowly.
    RegistrationRejected { status: u16, body: String },
    /// A step reply was accepted; the step type.
    StepReplied(String),
    /// `post_step_action: exit` (or an agent upgrade): the agent restarts and re-registers.
    Restarting,
    /// The install step was accepted and the installer started with this role.
    Installing { role: String },
    /// The installer reported this stage.
    StageReported(String),
    /// The installer reported "Rebooting": the host left the discovery ISO; the agent is gone.
    Rebooted,
    /// The installer failed (and reported "Failed" when it could).
    InstallFailed(String),
    /// The host's container runtime pulled `image` from `from` (a mirror or the source).
    ImagePulled { image: String, from: String },
    /// The host's container runtime could not pull `image`.
    ImagePullFailed { image: String, error: String },
    /// Anything unexpected from the server; the agent keeps going.
    Error(String),
}

/// Coarse state for tests, derived from the events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentStatus {
    Starting,
    Registered,
    Installing {
        stage: String,
    },
    Rebooted,
    InstallFailed(String),
    /// Killed, or the task ended without rebooting.
    Stopped,
}

/// The status after `event` (pure, so the mapping is testable).
pub fn status_after(current: &AgentStatus, event: &AgentEvent) -> AgentStatus {
    match event {
        AgentEvent::Registered { .. } if matches!(current, AgentStatus::Starting) => {
            AgentStatus::Registered
        }
        AgentEvent::Installing { .. } => AgentStatus::Installing {
            stage: String::new(),
        },
        AgentEvent::StageReported(s) => AgentStatus::Installing { stage: s.clone() },
        AgentEvent::Rebooted => AgentStatus::Rebooted,
        AgentEvent::InstallFailed(e) => AgentStatus::InstallFailed(e.clone()),
        _ => current.clone(),
    }
}

/// How a [`run`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentOutcome {
    /// The installer reached "Rebooting".
    Rebooted,
    /// The server says the host is already installed: nothing left for an agent to do.
    AlreadyInstalled,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Not retryable: the configuration cannot produce a valid request.
    #[error("agent configuration error: {0}")]
    Config(String),
}

/// Fans events out to the caller's channel, the status watch and the history.
#[derive(Clone)]
struct Reporter {
    events: mpsc::UnboundedSender<AgentEvent>,
    status: Option<Arc<watch::Sender<AgentStatus>>>,
    history: Option<Arc<Mutex<Vec<AgentEvent>>>>,
}

impl Reporter {
    fn emit(&self, e: AgentEvent) {
        match &e {
            AgentEvent::Error(m) | AgentEvent::InstallFailed(m) => tracing::warn!("agent: {m}"),
            other => tracing::debug!("agent: {other:?}"),
        }
        if let Some(s) = &self.status {
            s.send_modify(|st| *st = status_after(st, &e));
        }
        if let Some(h) = &self.history
            && let Ok(mut h) = h.lock()
        {
            h.push(e.clone());
        }
        // A dropped receiver only means nobody listens any more.
        let _ = self.events.send(e);
    }
}

/// `base × speed`, clamped to `[floor, cap]`; a non-positive or NaN speed gives `floor`.
pub fn scaled(base: Duration, speed: f64, floor: Duration, cap: Duration) -> Duration {
    let d = if speed.is_finite() && speed > 0.0 {
        Duration::try_from_secs_f64(base.as_secs_f64() * speed).unwrap_or(cap)
    } else {
        floor
    };
    d.clamp(floor, cap.max(floor))
}

/// How long the simulated installer keeps trying a service call that fails transiently (the
/// service down, a 5xx) before it fails the host: long enough for a restarted core to come
/// back, as upstream's installer retries its calls to the service for minutes.
pub const INSTALLER_RETRY_WINDOW: Duration = Duration::from_secs(60);

/// Exponential backoff for transient errors: 0.5 s × 2^attempt, scaled and clamped.
pub fn backoff(attempt: u32, speed: f64, floor: Duration, cap: Duration) -> Duration {
    let base = Duration::from_millis(500).saturating_mul(1u32 << attempt.min(10));
    scaled(base, speed, floor, cap)
}

fn read<T: Clone>(l: &RwLock<T>) -> T {
    // A writer that panicked cannot leave these plain values half-updated.
    match l.read() {
        Ok(g) => g.clone(),
        Err(p) => p.into_inner().clone(),
    }
}

struct Session<'a> {
    cfg: &'a AgentConfig,
    rep: &'a Reporter,
    agent_version: String,
}

enum PollEnd {
    /// Re-register (exit requested, upgrade, or the host vanished).
    Restart,
    Done(AgentOutcome),
}

impl Session<'_> {
    fn poll_delay(&self, secs: u64) -> Duration {
        scaled(
            Duration::from_secs(secs),
            self.cfg.speed,
            self.cfg.min_poll_interval,
            self.cfg.max_poll_interval,
        )
    }

    fn backoff(&self, attempt: u32) -> Duration {
        backoff(
            attempt,
            self.cfg.speed,
            self.cfg.min_poll_interval,
            self.cfg.max_poll_interval,
        )
    }

    fn url(&self, path: &str) -> String {
        api_url(&self.cfg.base_url, path)
    }

    /// Registers until the server accepts; returns the host status it reported.
    async fn register(&self) -> Result<String, AgentError> {
        let url = self.url(&format!("/infra-envs/{}/hosts", self.cfg.infra_env_id));
        let body = json!({
            "host_id": self.cfg.host_id(),
            "discovery_agent_version": self.agent_version,
        });
        let mut attempt = 0;
        loop {
            match call(
                &self.cfg.trust,
                Method::POST,
                &url,
                &self.cfg.token,
                Some(&body),
            )
            .await
            {
                Ok((s, b)) if s.is_success() => {
                    let host: HostView = serde_json::from_slice(&b).unwrap_or_default();
                    self.rep.emit(AgentEvent::Registered {
                        status: host.status.clone(),
                    });
                    return Ok(host.status);
                }
                Ok((s, b)) if s.is_client_error() => {
                    self.rep.emit(AgentEvent::RegistrationRejected {
                        status: s.as_u16(),
                        body: body_excerpt(&b),
                    });
                    // Upstream agents keep retrying a refused registration, slowly.
                    tokio::time::sleep(self.poll_delay(30)).await;
                }
                Ok((s, b)) => {
                    self.rep.emit(AgentEvent::Error(format!(
                        "register: {s}: {}",
                        body_excerpt(&b)
                    )));
                    tokio::time::sleep(self.backoff(attempt)).await;
                    attempt += 1;
                }
                Err(CallError::BadRequest { reason, .. }) => {
                    return Err(AgentError::Config(reason));
                }
                Err(e) => {
                    if attempt == 0 {
                        self.rep.emit(AgentEvent::Error(format!("register: {e}")));
                    }
                    tokio::time::sleep(self.backoff(attempt)).await;
                    attempt += 1;
                }
            }
        }
    }

    /// GET instructions until it answers; `None` means the host is gone (re-register).
    async fn next_steps(&self) -> Result<Option<Steps>, AgentError> {
        let mut attempt = 0;
        loop {
            let ts = jiff::Timestamp::now().as_second() + self.cfg.clock_skew_secs;
            let url = self.url(&format!(
                "/infra-envs/{}/hosts/{}/instructions?timestamp={ts}",
                self.cfg.infra_env_id,
                self.cfg.host_id()
            ));
            match call(&self.cfg.trust, Method::GET, &url, &self.cfg.token, None).await {
                Ok((s, b)) if s.is_success() => match serde_json::from_slice::<Steps>(&b) {
                    Ok(steps) => return Ok(Some(steps)),
                    Err(e) => self.rep.emit(AgentEvent::Error(format!(
                        "instructions: unparseable steps ({e}): {}",
                        body_excerpt(&b)
                    ))),
                },
                Ok((StatusCode::NOT_FOUND, _)) => return Ok(None),
                Ok((s, b)) => self.rep.emit(AgentEvent::Error(format!(
                    "instructions: {s}: {}",
                    body_excerpt(&b)
                ))),
                Err(CallError::BadRequest { reason, .. }) => {
                    return Err(AgentError::Config(reason));
                }
                Err(e) => {
                    if attempt == 0 {
                        self.rep
                            .emit(AgentEvent::Error(format!("instructions: {e}")));
                    }
                }
            }
            tokio::time::sleep(self.backoff(attempt)).await;
            attempt += 1;
        }
    }

    async fn post_reply(&self, reply: &StepReply) -> Result<bool, AgentError> {
        let url = self.url(&format!(
            "/infra-envs/{}/hosts/{}/instructions",
            self.cfg.infra_env_id,
            self.cfg.host_id()
        ));
        let body = serde_json::to_value(reply).map_err(|e| AgentError::Config(e.to_string()))?;
        // A lost reply is harmless (the step is asked again), so a few tries are enough.
        for attempt in 0..3 {
            match call(
                &self.cfg.trust,
                Method::POST,
                &url,
                &self.cfg.token,
                Some(&body),
            )
            .await
            {
                Ok((s, _)) if s.is_success() => {
                    self.rep
                        .emit(AgentEvent::StepReplied(reply.step_type.clone()));
                    return Ok(true);
                }
                Ok((s, b)) => {
                    self.rep.emit(AgentEvent::Error(format!(
                        "step reply {} ({}): {s}: {}",
                        reply.step_id,
                        reply.step_type,
                        body_excerpt(&b)
                    )));
                    if s.is_client_error() {
                        return Ok(false);
                    }
                }
                Err(CallError::BadRequest { reason, .. }) => {
                    return Err(AgentError::Config(reason));
                }
                Err(e) => self.rep.emit(AgentEvent::Error(format!(
                    "step reply {}: {e}",
                    reply.step_id
                ))),
            }
            tokio::time::sleep(self.backoff(attempt)).await;
        }
        Ok(false)
    }

    /// Pulls what `step` needs through the host's runtime: each image of the availability
    /// check (the reply then says what was pulled), the installer image before the install
    /// starts (a failed pull fails the step, as podman's does).
    async fn pull_for(
        &self,
        runtime: &dyn ContainerRuntime,
        step: &Step,
        install_started: bool,
        reply: &mut StepReply,
    ) {
        match step.kind() {
            Some(StepKind::ContainerImageAvailability) => {
                let Ok(req) = step.request::<ContainerImageAvailabilityRequest>() else {
                    return;
                };
                let mut images = Vec::new();
                for image in &req.images {
                    let pulled = self.pull_reported(runtime, image).await;
                    images.push(crate::runtime::availability_entry(image, &pulled));
                }
                reply.output = json!({ "images": images }).to_string();
            }
            Some(StepKind::Install) if !install_started => {
                let Ok(req) = step.request::<InstallCmdRequest>() else {
                    return;
                };
                if let Err(e) = self.pull_reported(runtime, &req.installer_image).await {
                    reply.exit_code = 1;
                    reply.error =
                        format!("pulling the installer image {}: {e}", req.installer_image);
                }
            }
            _ => {}
        }
    }

    async fn pull_reported(
        &self,
        runtime: &dyn ContainerRuntime,
        image: &str,
    ) -> Result<crate::runtime::Pulled, String> {
        let pulled = runtime.pull(image).await;
        self.rep.emit(match &pulled {
            Ok(p) => AgentEvent::ImagePulled {
                image: image.to_string(),
                from: p.from.clone(),
            },
            Err(e) => AgentEvent::ImagePullFailed {
                image: image.to_string(),
                error: e.clone(),
            },
        });
        pulled
    }

    /// One agent lifetime after registration: poll and answer until told to restart or the
    /// installer reboots the host.
    async fn poll_loop(&mut self) -> Result<PollEnd, AgentError> {
        let mut installer: JoinSet<Result<(), String>> = JoinSet::new();
        let mut install_started = false;
        loop {
            let Some(steps) = self.next_steps().await? else {
                self.rep.emit(AgentEvent::Error(
                    "instructions: host not found; registering again".into(),
                ));
                return Ok(PollEnd::Restart);
            };
            let mut restart = steps.exit_requested();
            for step in &steps.instructions {
                let peers = read(&self.cfg.peers);
                let ctx = read(&self.cfg.reply_ctx);
                let mut reply = step_reply(step, &self.cfg.profile, &peers, &ctx);
                if let Some(runtime) = self.cfg.runtime.clone()
                    && reply.exit_code == 0
                {
                    self.pull_for(runtime.as_ref(), step, install_started, &mut reply)
                        .await;
                }
                if step.kind() == Some(StepKind::Install) && reply.exit_code == 0 {
                    match step.request::<InstallCmdRequest>() {
                        Ok(req) if !install_started => {
                            install_started = true;
                            self.rep.emit(AgentEvent::Installing {
                                role: req.role.clone(),
                            });
                            installer.spawn(install(self.cfg.clone(), self.rep.clone(), req));
                        }
                        // The installer already runs; a repeated step must not start another.
                        Ok(_) => {}
                        Err(e) => {
                            reply.exit_code = 1;
                            reply.error = e;
                        }
                    }
                }
                let accepted = self.post_reply(&reply).await?;
                if accepted && step.kind() == Some(StepKind::UpgradeAgent) && reply.exit_code == 0 {
                    if let Ok(req) = step.request::<UpgradeAgentRequest>() {
                        self.agent_version = req.agent_image;
                    }
                    // The upgraded agent is a new process: it registers again.
                    restart = true;
                }
            }
            if restart && installer.is_empty() {
                self.rep.emit(AgentEvent::Restarting);
                return Ok(PollEnd::Restart);
            }
            let wait = tokio::time::sleep(self.poll_delay(steps.next_instruction_seconds));
            tokio::select! {
                _ = wait => {}
                Some(done) = installer.join_next() => {
                    match done {
                        Ok(Ok(())) => {
                            self.rep.emit(AgentEvent::Rebooted);
                            return Ok(PollEnd::Done(AgentOutcome::Rebooted));
                        }
                        Ok(Err(e)) => self.rep.emit(AgentEvent::InstallFailed(e)),
                        Err(e) => self.rep.emit(AgentEvent::InstallFailed(format!("installer task: {e}"))),
                    }
                }
            }
        }
    }
}

/// Runs one simulated agent until its host reboots into the installed OS (or is reported
/// installed). Connection errors and 5xx are retried forever; cancel the future to stop it.
pub async fn run(
    cfg: AgentConfig,
    events: mpsc::UnboundedSender<AgentEvent>,
) -> Result<AgentOutcome, AgentError> {
    let rep = Reporter {
        events,
        status: None,
        history: None,
    };
    run_with(cfg, rep).await
}

async fn run_with(cfg: AgentConfig, rep: Reporter) -> Result<AgentOutcome, AgentError> {
    let mut session = Session {
        agent_version: cfg.agent_version.clone(),
        cfg: &cfg,
        rep: &rep,
    };
    loop {
        let status = session.register().await?;
        if status == "installed" {
            return Ok(AgentOutcome::AlreadyInstalled);
        }
        match session.poll_loop().await? {
            PollEnd::Restart => {
                // A restarting agent takes a moment before it registers again.
                tokio::time::sleep(session.poll_delay(1)).await;
            }
            PollEnd::Done(o) => return Ok(o),
        }
    }
}

// ---- installer --------------------------------------------------------------------------

/// Simulated time the installer spends in each stage, before the speed multiplier.
fn stage_duration(stage: &str) -> Duration {
    match stage {
        stages::WRITING_IMAGE_TO_DISK => Duration::from_secs(20),
        stages::WAITING_FOR_BOOTKUBE | stages::WAITING_FOR_CONTROLLER => Duration::from_secs(10),
        _ => Duration::from_secs(3),
    }
}

struct Installer {
    cfg: AgentConfig,
    rep: Reporter,
    req: InstallCmdRequest,
}

impl Installer {
    fn infra_env_id(&self) -> &str {
        if self.req.infra_env_id.is_empty() {
            &self.cfg.infra_env_id
        } else {
            &self.req.infra_env_id
        }
    }

    async fn pause(&self, base: Duration) {
        let d = scaled(
            base,
            self.cfg.speed,
            Duration::ZERO,
            self.cfg.max_poll_interval,
        );
        if d.is_zero() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(d).await;
        }
    }

    /// PUT progress, retrying transient failures; a 4xx is final (the server refused it).
    async fn progress(&self, stage: &str, info: &str) -> Result<(), String> {
        let url = api_url(
            &self.cfg.base_url,
            &format!(
                "/infra-envs/{}/hosts/{}/progress",
                self.infra_env_id(),
                self.cfg.host_id()
            ),
        );
        let body = json!({"current_stage": stage, "progress_info": info});
        self.call_retrying(Method::PUT, &url, Some(&body))
            .await
            .map_err(|e| format!("progress {stage:?} {e}"))?;
        self.rep.emit(AgentEvent::StageReported(stage.to_string()));
        Ok(())
    }

    /// One call of the installer to the service: transient failures (the service down a moment,
    /// a 5xx) are tried again for [`INSTALLER_RETRY_WINDOW`], as upstream's installer does; a
    /// 4xx is final. The error says which and why.
    async fn call_retrying(
        &self,
        method: Method,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + INSTALLER_RETRY_WINDOW;
        let mut attempt = 0;
        loop {
            let last = match call(&self.cfg.trust, method.clone(), url, &self.cfg.token, body).await
            {
                Ok((s, _)) if s.is_success() => return Ok(()),
                Ok((s, b)) if s.is_client_error() => {
                    return Err(format!("refused: {s}: {}", body_excerpt(&b)));
                }
                Ok((s, b)) => format!("{s}: {}", body_excerpt(&b)),
                Err(e) => e.to_string(),
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(format!("failed: {last}"));
            }
            tokio::time::sleep(backoff(
                attempt,
                self.cfg.speed,
                self.cfg.min_poll_interval,
                self.cfg.max_poll_interval,
            ))
            .await;
            attempt += 1;
        }
    }

    async fn download_ignition(&self, role: InstallRole) -> Result<(), String> {
        let name = stages::ignition_file_name(role, self.cfg.host_id());
        let url = api_url(
            &self.cfg.base_url,
            &format!(
                "/clusters/{}/downloads/files?file_name={name}",
                self.req.cluster_id
            ),
        );
        self.call_retrying(Method::GET, &url, None)
            .await
            .map_err(|e| format!("downloading {name} {e}"))
    }

    /// Bootstrap only: hold until every other master has rebooted (the control plane formed).
    async fn wait_for_masters(&self) {
        let url = api_url(
            &self.cfg.base_url,
            &format!("/clusters/{}/hosts", self.req.cluster_id),
        );
        let deadline = tokio::time::Instant::now() + self.cfg.bootstrap_wait_timeout;
        let me = self.cfg.host_id();
        while tokio::time::Instant::now() < deadline {
            let ready = match call(&self.cfg.trust, Method::GET, &url, &self.cfg.token, None).await
            {
                Ok((s, b)) if s.is_success() => {
                    let hosts: Vec<HostView> = serde_json::from_slice(&b).unwrap_or_default();
                    masters_rebooted(&hosts, me)
                }
                Ok((s, _)) => {
                    // The agent token may not be allowed to list hosts: just carry on.
                    tracing::debug!("bootstrap cannot list cluster hosts ({s}); not waiting");
                    true
                }
                Err(_) => false,
            };
            if ready {
                return;
            }
            tokio::time::sleep(scaled(
                Duration::from_secs(5),
                self.cfg.speed,
                self.cfg.min_poll_interval,
                self.cfg.max_poll_interval,
            ))
            .await;
        }
        self.rep.emit(AgentEvent::Error(
            "bootstrap: timed out waiting for the other masters; continuing".into(),
        ));
    }

    async fn run(self) -> Result<(), String> {
        let role = InstallRole::parse(&self.req.role)
            .ok_or_else(|| format!("install: unknown role {:?}", self.req.role))?;
        if self.req.cluster_id.is_empty() {
            return Err("install: request has no cluster_id".into());
        }
        let sno = self.req.control_plane_count == 1;
        let list = stages::installer_stages(role, sno);
        for (i, stage) in list.iter().enumerate() {
            if i > 0 {
                self.pause(stage_duration(list[i - 1])).await;
            }
            match *stage {
                stages::INSTALLING => {
                    // Upstream fetches the ignition right after starting; no ignition, no install.
                    if let Err(e) = self.download_ignition(role).await {
                        // Best effort: the failure itself is what matters.
                        let _ = self.progress(stages::FAILED, &e).await;
                        return Err(e);
                    }
                    self.progress(
                        stage,
                        &format!("{} as {}", self.req.boot_device, role.as_str()),
                    )
                    .await?;
                }
                stages::WRITING_IMAGE_TO_DISK => {
                    for pct in [0, 50, 100] {
                        self.progress(stage, &format!("{pct}%")).await?;
                    }
                }
                stages::WAITING_FOR_CONTROL_PLANE => {
                    self.progress(stage, "").await?;
                    if role == InstallRole::Bootstrap && self.cfg.bootstrap_waits_for_masters {
                        self.wait_for_masters().await;
                    }
                }
                _ => self.progress(stage, "").await?,
            }
        }
        Ok(())
    }
}

async fn install(cfg: AgentConfig, rep: Reporter, req: InstallCmdRequest) -> Result<(), String> {
    Installer { cfg, rep, req }.run().await
}

/// True when every master other than `me` and the bootstrap host is at "Rebooting" or later.
pub fn masters_rebooted(hosts: &[HostView], me: &str) -> bool {
    hosts
        .iter()
        .filter(|h| h.id != me && !h.bootstrap && h.role == "master")
        .all(|h| {
            stages::is_rebooting_or_later(&h.progress.current_stage) || h.status == "installed"
        })
}

// ---- handle -----------------------------------------------------------------------------

/// A running simulated host. Dropping it kills the agent.
pub struct Host {
    cfg: AgentConfig,
    task: Option<JoinHandle<Result<AgentOutcome, AgentError>>>,
    events_tx: mpsc::UnboundedSender<AgentEvent>,
    events_rx: mpsc::UnboundedReceiver<AgentEvent>,
    status: Arc<watch::Sender<AgentStatus>>,
    history: Arc<Mutex<Vec<AgentEvent>>>,
}

/// Waiting for an event or status timed out.
#[derive(Debug, thiserror::Error)]
#[error("timed out after {0:?} waiting for {1}")]
pub struct WaitTimeout(pub Duration, pub String);

impl Host {
    /// Starts the agent on the current tokio runtime.
    pub fn spawn(cfg: AgentConfig) -> Host {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (status, _) = watch::channel(AgentStatus::Starting);
        let mut h = Host {
            cfg,
            task: None,
            events_tx,
            events_rx,
            status: Arc::new(status),
            history: Arc::new(Mutex::new(Vec::new())),
        };
        h.start();
        h
    }

    fn start(&mut self) {
        self.status.send_replace(AgentStatus::Starting);
        let rep = Reporter {
            events: self.events_tx.clone(),
            status: Some(self.status.clone()),
            history: Some(self.history.clone()),
        };
        let cfg = self.cfg.clone();
        let status = self.status.clone();
        self.task = Some(tokio::spawn(async move {
            let r = run_with(cfg, rep).await;
            if !matches!(r, Ok(AgentOutcome::Rebooted)) {
                status.send_replace(AgentStatus::Stopped);
            }
            r
        }));
    }

    pub fn id(&self) -> &str {
        self.cfg.host_id()
    }

    pub fn profile(&self) -> &HostProfile {
        &self.cfg.profile
    }

    pub fn config(&self) -> &AgentConfig {
        &self.cfg
    }

    pub fn status(&self) -> AgentStatus {
        self.status.borrow().clone()
    }

    pub fn subscribe_status(&self) -> watch::Receiver<AgentStatus> {
        self.status.subscribe()
    }

    /// Every event so far, across restarts.
    pub fn history(&self) -> Vec<AgentEvent> {
        match self.history.lock() {
            Ok(h) => h.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// The next event not yet taken by `next_event`/`wait_for_event`.
    pub async fn next_event(&mut self) -> Option<AgentEvent> {
        self.events_rx.recv().await
    }

    /// Takes events until one matches.
    pub async fn wait_for_event(
        &mut self,
        what: &str,
        timeout: Duration,
        mut pred: impl FnMut(&AgentEvent) -> bool,
    ) -> Result<AgentEvent, WaitTimeout> {
        let fut = async {
            while let Some(e) = self.events_rx.recv().await {
                if pred(&e) {
                    return Some(e);
                }
            }
            None
        };
        match tokio::time::timeout(timeout, fut).await {
            Ok(Some(e)) => Ok(e),
            _ => Err(WaitTimeout(timeout, what.to_string())),
        }
    }

    /// Waits until the status matches.
    pub async fn wait_for_status(
        &self,
        timeout: Duration,
        pred: impl FnMut(&AgentStatus) -> bool,
    ) -> Result<AgentStatus, WaitTimeout> {
        let mut rx = self.status.subscribe();
        match tokio::time::timeout(timeout, rx.wait_for(pred)).await {
            Ok(Ok(s)) => Ok(s.clone()),
            _ => Err(WaitTimeout(timeout, "agent status".into())),
        }
    }

    pub fn is_running(&self) -> bool {
        self.task.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Simulates a crashed agent (or a powered-off host): stops at once, mid-call if need be.
    pub fn kill(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.status.send_replace(AgentStatus::Stopped);
    }

    /// Kills the agent and starts a fresh one on the same host (it registers again).
    pub fn restart(&mut self) {
        self.kill();
        self.start();
    }

    /// Waits for the agent to end by itself.
    pub async fn join(&mut self) -> Option<Result<AgentOutcome, AgentError>> {
        let t = self.task.take()?;
        t.await.ok()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_clamps() {
        let floor = Duration::from_millis(50);
        let cap = Duration::from_secs(10);
        let s = |b: u64, sp: f64| scaled(Duration::from_secs(b), sp, floor, cap);
        assert_eq!(s(60, 0.0), floor);
        assert_eq!(s(60, -1.0), floor);
        assert_eq!(s(60, f64::NAN), floor);
        assert_eq!(s(60, 0.01), Duration::from_millis(600));
        assert_eq!(s(60, 1.0), cap);
        assert_eq!(s(0, 1.0), floor);
        assert_eq!(s(60, f64::INFINITY), floor);
        assert_eq!(scaled(Duration::from_secs(1), 1e300, floor, cap), cap);
        assert_eq!(
            scaled(Duration::from_secs(3), 0.0, Duration::ZERO, cap),
            Duration::ZERO
        );
    }

    #[test]
    fn backoff_grows_and_caps() {
        let floor = Duration::from_millis(50);
        let cap = Duration::from_secs(10);
        assert_eq!(backoff(0, 1.0, floor, cap), Duration::from_millis(500));
        assert_eq!(backoff(1, 1.0, floor, cap), Duration::from_secs(1));
        assert_eq!(backoff(30, 1.0, floor, cap), cap);
        assert_eq!(backoff(5, 0.0, floor, cap), floor);
    }

    #[test]
    fn status_follows_events() {
        let s = AgentStatus::Starting;
        let s = status_after(
            &s,
            &AgentEvent::Registered {
                status: "discovering".into(),
            },
        );
        assert_eq!(s, AgentStatus::Registered);
        let s = status_after(&s, &AgentEvent::StepReplied("inventory".into()));
        assert_eq!(s, AgentStatus::Registered);
        let s = status_after(
            &s,
            &AgentEvent::Installing {
                role: "master".into(),
            },
        );
        assert_eq!(
            s,
            AgentStatus::Installing {
                stage: String::new()
            }
        );
        let s = status_after(&s, &AgentEvent::StageReported("Installing".into()));
        assert_eq!(
            s,
            AgentStatus::Installing {
                stage: "Installing".into()
            }
        );
        // A re-registration during install does not hide the install.
        let s2 = status_after(
            &s,
            &AgentEvent::Registered {
                status: "error".into(),
            },
        );
        assert_eq!(s2, s);
        assert_eq!(
            status_after(&s, &AgentEvent::Rebooted),
            AgentStatus::Rebooted
        );
        assert_eq!(
            status_after(&s, &AgentEvent::InstallFailed("x".into())),
            AgentStatus::InstallFailed("x".into())
        );
    }

    fn hv(id: &str, role: &str, bootstrap: bool, stage: &str) -> HostView {
        HostView {
            id: id.into(),
            role: role.into(),
            bootstrap,
            progress: ProgressView {
                current_stage: stage.into(),
                progress_info: String::new(),
            },
            ..Default::default()
        }
    }

    #[test]
    fn bootstrap_waits_for_other_masters_only() {
        let mut hosts = vec![
            hv("b", "master", true, "Waiting for control plane"),
            hv("m1", "master", false, "Rebooting"),
            hv("m2", "master", false, "Writing image to disk"),
            hv("w1", "worker", false, "Starting installation"),
        ];
        assert!(!masters_rebooted(&hosts, "b"));
        hosts[2].progress.current_stage = "Configuring".into();
        assert!(masters_rebooted(&hosts, "b"));
        assert!(masters_rebooted(&[], "b"));
    }

    #[test]
    fn config_defaults() {
        let p = HostProfile::master_like(0, "10.0.0.0/24").unwrap();
        let c = AgentConfig::new("http://x", "ie", "tok", p.clone()).with_speed(0.5);
        assert_eq!(c.host_id(), p.uuid);
        assert_eq!(c.speed, 0.5);
        assert!(c.bootstrap_waits_for_masters);
    }

    #[tokio::test]
    async fn unreachable_server_keeps_retrying_and_can_be_killed() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let p = HostProfile::master_like(0, "10.0.0.0/24").unwrap();
        let mut h = Host::spawn(AgentConfig::new(
            format!("http://127.0.0.1:{port}"),
            "ie",
            "t",
            p,
        ));
        let e = h
            .wait_for_event("an error", Duration::from_secs(5), |e| {
                matches!(e, AgentEvent::Error(_))
            })
            .await
            .unwrap();
        assert!(matches!(e, AgentEvent::Error(m) if m.starts_with("register:")));
        assert!(h.is_running());
        assert_eq!(h.status(), AgentStatus::Starting);
        h.kill();
        assert!(!h.is_running());
        assert_eq!(h.status(), AgentStatus::Stopped);
        h.restart();
        assert!(h.is_running());
        assert_eq!(h.status(), AgentStatus::Starting);
    }

    #[tokio::test]
    async fn invalid_base_url_is_a_config_error() {
        let p = HostProfile::master_like(0, "10.0.0.0/24").unwrap();
        let mut h = Host::spawn(AgentConfig::new("not a url", "ie", "t", p));
        let r = h.join().await.unwrap();
        assert!(matches!(r, Err(AgentError::Config(_))));
        assert_eq!(h.status(), AgentStatus::Stopped);
    }
}
