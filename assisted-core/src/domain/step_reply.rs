//! Step replies (`POST .../instructions`): lenient parsing and folding results into a snapshot.

use serde::{Deserialize, Serialize};

use super::inventory::*;
use super::snapshot::{Config, DiskSpeed, HostSnapshot};
use super::types::StepType;

/// Exit code the agent uses when the discovery media is gone.
pub const MEDIA_DISCONNECTED_EXIT_CODE: i64 = 256;

/// `step-reply` as posted by the agent. Unknown fields are ignored; bad types default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepReply {
    pub step_type: String,
    pub step_id: String,
    pub exit_code: i64,
    pub output: String,
    pub error: String,
}

impl StepReply {
    /// Parses the request body; `None` only if it is not a JSON object at all.
    pub fn parse(bytes: &[u8]) -> Option<StepReply> {
        let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let o = v.as_object()?;
        let s = |k: &str| o.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        Some(StepReply {
            step_type: s("step_type"),
            step_id: s("step_id"),
            exit_code: o.get("exit_code").and_then(|x| x.as_i64()).unwrap_or(0),
            output: s("output"),
            error: s("error"),
        })
    }
}

/// Why a step reply is refused, as upstream's server refuses it: a value outside the model
/// (an unknown `step_type`) is a validation error (422), a body that does not decode into the
/// model (an `exit_code` beyond 64 bits, an inventory that is not a JSON object) a 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepReplyError {
    #[error("the step reply is not a JSON object")]
    NotAnObject,
    #[error("step_type {0:?} is not a known step type")]
    UnknownStepType(String),
    #[error("exit_code must be a 64-bit integer")]
    BadExitCode,
    #[error("the inventory reply's output is not a JSON object")]
    InventoryNotAnObject,
}

impl StepReplyError {
    /// Upstream's status: 422 for values the model forbids, 400 for bodies it cannot decode.
    pub fn is_validation(&self) -> bool {
        matches!(self, StepReplyError::UnknownStepType(_))
    }
}

impl StepReply {
    /// [`StepReply::parse`] plus the checks upstream's model and handlers make.
    pub fn parse_checked(bytes: &[u8]) -> Result<StepReply, StepReplyError> {
        let v: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|_| StepReplyError::NotAnObject)?;
        let o = v.as_object().ok_or(StepReplyError::NotAnObject)?;
        if let Some(code) = o.get("exit_code")
            && code.as_i64().is_none()
        {
            return Err(StepReplyError::BadExitCode);
        }
        let reply = StepReply::parse(bytes).ok_or(StepReplyError::NotAnObject)?;
        let Some(step_type) = StepType::parse(&reply.step_type) else {
            return Err(StepReplyError::UnknownStepType(reply.step_type));
        };
        if step_type == StepType::Inventory
            && reply.exit_code == 0
            && !matches!(
                serde_json::from_str::<serde_json::Value>(&reply.output),
                Ok(serde_json::Value::Object(_))
            )
        {
            return Err(StepReplyError::InventoryNotAnObject);
        }
        Ok(reply)
    }
}

/// What applying a reply did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepReplyOutcome {
    /// Exit code 256: fire [`super::host_sm::HostEvent::MediaDisconnect`].
    pub media_disconnected: bool,
    /// The snapshot changed (persist it).
    pub updated: bool,
    /// The step failed or the type was unknown; for events/logs.
    pub error: Option<String>,
}

/// Folds a step reply into the host snapshot. Never panics on malformed output.
pub fn apply_step_reply(
    host: &mut HostSnapshot,
    reply: &StepReply,
    cfg: &Config,
) -> StepReplyOutcome {
    let mut out = StepReplyOutcome::default();
    let Some(kind) = StepType::parse(&reply.step_type) else {
        out.error = Some(format!("unknown step type {:?}", reply.step_type));
        return out;
    };
    if reply.exit_code == MEDIA_DISCONNECTED_EXIT_CODE {
        out.media_disconnected = true;
        out.error = Some(reply.error.clone());
        return out;
    }
    let bytes = reply.output.as_bytes();
    if reply.exit_code != 0 {
        out.error = Some(format!(
            "step {} failed with exit code {}: {}",
            reply.step_id, reply.exit_code, reply.error
        ));
        // A failed disk-speed or tang check is itself a result.
        match kind {
            StepType::InstallationDiskSpeedCheck => {
                host.disk_speed = DiskSpeed::Insufficient;
                out.updated = true;
            }
            StepType::TangConnectivityCheck => {
                host.tang_connectivity = Some(false);
                out.updated = true;
            }
            StepType::ApiVipConnectivityCheck => {
                host.api_vip_connectivity = Some(false);
                out.updated = true;
            }
            _ => {}
        }
        return out;
    }
    out.updated = true;
    match kind {
        StepType::Inventory => host.inventory = Some(Inventory::parse(bytes)),
        StepType::ConnectivityCheck => {
            host.connectivity = parse_lenient::<ConnectivityReport>(bytes).remote_hosts;
        }
        StepType::NtpSynchronizer => {
            host.ntp_sources = parse_lenient::<NtpSynchronizationResponse>(bytes).ntp_sources;
        }
        StepType::DomainResolution => {
            host.domain_resolutions =
                Some(parse_lenient::<DomainResolutionResponse>(bytes).resolutions);
        }
        StepType::ContainerImageAvailability => {
            for img in parse_lenient::<ContainerImageAvailabilityResponse>(bytes).images {
                host.images_status.retain(|i| i.name != img.name);
                host.images_status.push(img);
            }
        }
        StepType::InstallationDiskSpeedCheck => {
            let r = parse_lenient::<DiskSpeedCheckResponse>(bytes);
            let threshold = cfg.hw.default.master.installation_disk_speed_threshold_ms as i64;
            // A zero or negative duration is not a plausible measurement.
            host.disk_speed = if r.io_sync_duration > 0 && r.io_sync_duration <= threshold {
                DiskSpeed::Sufficient
            } else {
                DiskSpeed::Insufficient
            };
        }
        StepType::ApiVipConnectivityCheck => {
            host.api_vip_connectivity =
                Some(parse_lenient::<ApiVipConnectivityResponse>(bytes).is_success);
        }
        StepType::TangConnectivityCheck => {
            host.tang_connectivity =
                Some(parse_lenient::<TangConnectivityResponse>(bytes).is_success);
        }
        _ => out.updated = false,
    }
    out
}
