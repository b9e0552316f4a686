//! The load client: registers hosts through the agent REST API as booting agents do, then asks
//! for next steps in closed loops (saturation) or at a fixed rate (agents on their own timers).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_sim::HostProfile;
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// Keep-alive HTTP/1.1 client with up to `conns` idle connections.
pub fn client(conns: usize) -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(conns)
        .build_http()
}

/// One request; the status and the body.
pub async fn call(
    client: &HttpClient,
    method: Method,
    url: &str,
    token: &str,
    body: Option<&Value>,
) -> Result<(StatusCode, Bytes)> {
    let mut req = Request::builder()
        .method(method)
        .uri(url)
        .header("X-Secret-Key", token);
    let payload = match body {
        Some(v) => {
            req = req.header("content-type", "application/json");
            Bytes::from(v.to_string())
        }
        None => Bytes::new(),
    };
    let resp = client
        .request(req.body(Full::new(payload))?)
        .await
        .with_context(|| format!("requesting {url}"))?;
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

/// One infra-env of the scenario: the agent API base (`.../api/assisted-install/v2`), its id
/// and token, and its hosts.
pub struct Env {
    pub base: String,
    pub infra_env: String,
    pub token: String,
    pub hosts: Vec<HostProfile>,
}

/// Registers one host and answers its inventory step; returns when POST /hosts was answered.
pub async fn bring_up(client: &HttpClient, env: &Env, host: &HostProfile) -> Result<Instant> {
    let (base, ie, token) = (&env.base, &env.infra_env, &env.token);
    let body = json!({"host_id": host.uuid, "discovery_agent_version": "core-bench"});
    let (st, b) = call(
        client,
        Method::POST,
        &format!("{base}/infra-envs/{ie}/hosts"),
        token,
        Some(&body),
    )
    .await?;
    let registered = Instant::now();
    if st != StatusCode::CREATED {
        bail!(
            "register {}: {st} {}",
            host.uuid,
            String::from_utf8_lossy(&b)
        );
    }
    let url = format!("{base}/infra-envs/{ie}/hosts/{}/instructions", host.uuid);
    // A freshly registered host is asked for its inventory; ask again briefly if not yet.
    for _ in 0..50 {
        let (st, b) = call(client, Method::GET, &url, token, None).await?;
        if st != StatusCode::OK {
            bail!(
                "next-steps {}: {st} {}",
                host.uuid,
                String::from_utf8_lossy(&b)
            );
        }
        let steps: Value = serde_json::from_slice(&b).context("next-steps JSON")?;
        let step = steps["instructions"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["step_type"] == "inventory"));
        if let Some(step) = step {
            let reply = json!({
                "step_type": "inventory",
                "step_id": step["step_id"],
                "exit_code": 0,
                "output": agent_sim::inventory_json(host).to_string(),
                "error": "",
            });
            let (st, b) = call(client, Method::POST, &url, token, Some(&reply)).await?;
            if st != StatusCode::NO_CONTENT {
                bail!(
                    "inventory {}: {st} {}",
                    host.uuid,
                    String::from_utf8_lossy(&b)
                );
            }
            return Ok(registered);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("host {} was never asked for its inventory", host.uuid)
}

/// Registers every host, `parallel` at a time; the instant the last POST /hosts was answered.
pub async fn register_all(envs: &[Env], parallel: usize) -> Result<Instant> {
    let client = client(parallel);
    let jobs: Vec<(&Env, &HostProfile)> = envs
        .iter()
        .flat_map(|e| e.hosts.iter().map(move |h| (e, h)))
        .collect();
    let mut last = Instant::now();
    for chunk in jobs.chunks(parallel) {
        let done =
            futures::future::join_all(chunk.iter().map(|(e, h)| bring_up(&client, e, h))).await;
        for r in done {
            last = last.max(r?);
        }
    }
    Ok(last)
}

/// A next-steps URL and its token, prebuilt so the loops only measure HTTP.
pub struct Target {
    pub url: String,
    pub token: String,
}

pub fn targets(envs: &[Env]) -> Arc<Vec<Target>> {
    Arc::new(
        envs.iter()
            .flat_map(|e| {
                e.hosts.iter().map(|h| Target {
                    url: format!(
                        "{}/infra-envs/{}/hosts/{}/instructions",
                        e.base, e.infra_env, h.uuid
                    ),
                    token: e.token.clone(),
                })
            })
            .collect(),
    )
}

/// What one load run saw after its warm-up.
#[derive(Debug, Default)]
pub struct Run {
    /// Ascending.
    pub latencies: Vec<Duration>,
    pub secs: f64,
    pub body_bytes: u64,
    /// Answers carrying the connectivity check ([`carries_connectivity_check`]).
    pub with_connectivity_check: u64,
    /// Answers other than 200 and transport errors.
    pub errors: u64,
}

impl Run {
    fn from_parts(mut latencies: Vec<Duration>, secs: f64, seen: Seen) -> Run {
        latencies.sort_unstable();
        Run {
            latencies,
            secs,
            body_bytes: seen.body_bytes,
            with_connectivity_check: seen.with_connectivity_check,
            errors: seen.errors,
        }
    }
}

/// What a load's answers carried, summed over its tasks.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    body_bytes: u64,
    with_connectivity_check: u64,
    errors: u64,
}

impl Seen {
    fn add(&mut self, answer: Option<Answer>) {
        match answer {
            Some(a) => {
                self.body_bytes += a.body_bytes as u64;
                self.with_connectivity_check += u64::from(a.connectivity_check);
            }
            None => self.errors += 1,
        }
    }

    fn merge(&mut self, other: Seen) {
        self.body_bytes += other.body_bytes;
        self.with_connectivity_check += other.with_connectivity_check;
        self.errors += other.errors;
    }
}

/// One next-steps answer as the load counts it.
#[derive(Debug, Clone, Copy)]
struct Answer {
    latency: Duration,
    body_bytes: usize,
    connectivity_check: bool,
}

/// Whether a next-steps body carries the connectivity check: the share of answers that do is
/// what upstream's pace (at most 150 hosts a minute per cluster) is compared by.
pub fn carries_connectivity_check(body: &[u8]) -> bool {
    const STEP: &[u8] = br#""step_type":"connectivity-check""#;
    body.windows(STEP.len()).any(|w| w == STEP)
}

/// One GET next-steps; its latency, body size and whether it carries the connectivity check,
/// `None` on anything but 200.
async fn next_steps(client: &HttpClient, t: &Target) -> Option<Answer> {
    let start = Instant::now();
    match call(client, Method::GET, &t.url, &t.token, None).await {
        Ok((StatusCode::OK, b)) => Some(Answer {
            latency: start.elapsed(),
            body_bytes: b.len(),
            connectivity_check: carries_connectivity_check(&b),
        }),
        _ => None,
    }
}

/// `conns` clients, each sending its next request as soon as the previous one is answered,
/// for `warmup + run`; hosts are taken round robin.
pub async fn closed_loop(
    targets: Arc<Vec<Target>>,
    conns: usize,
    warmup: Duration,
    run: Duration,
) -> Run {
    let client = client(conns);
    let t0 = Instant::now();
    let (measure_from, end) = (t0 + warmup, t0 + warmup + run);
    let tasks: Vec<_> = (0..conns)
        .map(|c| {
            let (client, targets) = (client.clone(), targets.clone());
            tokio::spawn(async move {
                let (mut lat, mut seen) = (Vec::new(), Seen::default());
                let mut k = c;
                loop {
                    let started = Instant::now();
                    if started >= end {
                        break;
                    }
                    let r = next_steps(&client, &targets[k % targets.len()]).await;
                    k += conns;
                    if started < measure_from {
                        continue;
                    }
                    lat.extend(r.map(|a| a.latency));
                    seen.add(r);
                }
                (lat, seen)
            })
        })
        .collect();
    let (mut all, mut seen) = (Vec::new(), Seen::default());
    for t in tasks {
        if let Ok((l, s)) = t.await {
            all.extend(l);
            seen.merge(s);
        }
    }
    // Requests started before `end` finish after it: count to the real end.
    Run::from_parts(all, measure_from.elapsed().as_secs_f64(), seen)
}

/// Requests start every `1 / rate` seconds whatever the server's pace. Latency counts from the
/// request task's start, not the timer tick (the timer fires up to a millisecond late).
pub async fn open_loop(
    targets: Arc<Vec<Target>>,
    rate: f64,
    warmup: Duration,
    run: Duration,
) -> Run {
    let client = client(64);
    let seen = Arc::new(Mutex::new((Vec::new(), Seen::default())));
    let period = Duration::from_secs_f64(1.0 / rate);
    let t0 = tokio::time::Instant::now();
    let measure_from = t0 + warmup;
    let n = ((warmup + run).as_secs_f64() * rate).round() as usize;
    let mut tasks = Vec::with_capacity(n);
    for k in 0..n {
        let at = t0 + period.mul_f64(k as f64);
        tokio::time::sleep_until(at).await;
        let (client, targets, seen) = (client.clone(), targets.clone(), seen.clone());
        tasks.push(tokio::spawn(async move {
            let r = next_steps(&client, &targets[k % targets.len()]).await;
            if at < measure_from {
                return;
            }
            let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
            s.0.extend(r.map(|a| a.latency));
            s.1.add(r);
        }));
    }
    // At low rates the last request starts long before the window ends: wait for the end.
    tokio::time::sleep_until(measure_from + run).await;
    for t in tasks {
        let _ = t.await;
    }
    let secs = measure_from.elapsed().as_secs_f64();
    let (lat, answers) = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
    Run::from_parts(lat, secs, answers)
}

/// Agents checking in on their own timers in the background: every host asks for next steps
/// once a minute (as known and insufficient agents do), spread evenly, except while `paused`.
/// Without it hosts would pass the 180 s disconnection timeout during long write-backs.
pub fn check_in_every_minute(targets: Arc<Vec<Target>>, paused: Arc<AtomicBool>) {
    let period = Duration::from_secs(60).div_f64(targets.len().max(1) as f64);
    let client = client(16);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for k in 0.. {
            tick.tick().await;
            if paused.load(Ordering::Relaxed) {
                continue;
            }
            let (client, targets) = (client.clone(), targets.clone());
            tokio::spawn(async move {
                let _ = next_steps(&client, &targets[k % targets.len()]).await;
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::carries_connectivity_check;

    #[test]
    fn only_the_connectivity_check_step_counts() {
        let with = br#"{"instructions":[{"step_type":"free-network-addresses"},{"step_type":"connectivity-check","args":[]}]}"#;
        let without = br#"{"instructions":[{"step_type":"api-vip-connectivity-check"},{"step_type":"inventory"}]}"#;
        assert!(carries_connectivity_check(with));
        assert!(!carries_connectivity_check(without));
        assert!(!carries_connectivity_check(b""));
    }
}
