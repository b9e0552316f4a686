//! The InfraEnv's status and the event that announces a change (pure).

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use manager::controller::PlannedEvent;

use super::image::ImageUrls;
use super::plan::Problem;
use crate::api::infraenv::{INFRAENV_NAME_LABEL, InfraEnv, InfraEnvDebugInfo, InfraEnvStatus};
use crate::service::controllers::conditions::{Cond, openshift_conditions};
use crate::service::controllers::unsupported;
use crate::service::store::InfraEnvRecord;

fn previous_reason(st: &InfraEnvStatus) -> Option<&str> {
    st.conditions
        .iter()
        .find(|c| c.type_ == "ImageCreated")
        .and_then(|c| c.reason.as_deref())
}

/// The status phase (pure): the InfraEnv's status for `outcome`, and the event to publish when
/// the image URL moved or an error first appeared.
pub fn status(
    ie: &InfraEnv,
    outcome: &Result<(InfraEnvRecord, ImageUrls), Problem>,
    now: Timestamp,
) -> (InfraEnvStatus, Option<PlannedEvent>) {
    let previous = ie.status.clone().unwrap_or_default();
    let mut status = InfraEnvStatus {
        agent_label_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(
                INFRAENV_NAME_LABEL.into(),
                ie.name_any(),
            )])),
            match_expressions: None,
        }),
        ..Default::default()
    };
    if let Ok((_, urls)) = outcome {
        status.iso_download_url = Some(urls.iso.clone());
        status.created_time = if previous.iso_download_url.as_deref() == Some(urls.iso.as_str()) {
            previous.created_time.clone()
        } else {
            Some(manager::conditions::api_time(now))
        };
        status.boot_artifacts = urls.boot.clone();
        status.debug_info = InfraEnvDebugInfo {
            events_url: urls.events.clone(),
            static_network_download_url: urls.static_network.clone(),
        };
    }
    let mut conds = vec![image_created(outcome)];
    conds.extend(unsupported::fields_supported(&unsupported::unsupported(
        unsupported::INFRAENV_ROWS,
        &ie.spec,
    )));
    status.conditions = openshift_conditions(&conds, &previous.conditions, now);
    let event = match outcome {
        Ok(_) if previous.iso_download_url != status.iso_download_url => Some(PlannedEvent {
            warning: false,
            reason: "ImageCreated",
            note: "The discovery image was (re)created; its URL changed".into(),
        }),
        Err(Problem::Error(e)) if previous_reason(&previous) != Some("ImageCreationError") => {
            Some(PlannedEvent {
                warning: true,
                reason: "ImageCreationError",
                note: format!("Failed to create image: {e}"),
            })
        }
        _ => None,
    };
    (status, event)
}

/// The ImageCreated condition: one row per outcome.
fn image_created(outcome: &Result<(InfraEnvRecord, ImageUrls), Problem>) -> Cond {
    match outcome {
        Ok(_) => Cond {
            type_: "ImageCreated",
            status: "True",
            reason: "InfraEnvAvailable",
            message: "InfraEnv is available: Image has been created".into(),
        },
        Err(Problem::Error(e)) => Cond {
            type_: "ImageCreated",
            status: "False",
            reason: "ImageCreationError",
            message: format!("Failed to create image: {e}"),
        },
        Err(Problem::MissingCluster(e)) => Cond {
            type_: "ImageCreated",
            status: "Unknown",
            reason: "MissingClusterDeployment",
            message: format!("ClusterDeployment is missing: {e}"),
        },
        Err(Problem::CertificatePending) => Cond {
            type_: "ImageCreated",
            status: "Unknown",
            reason: "ServingCertificatePending",
            message: "Waiting for cert-manager to issue the serving certificate of the https \
                      agent API: the image carries its CA, for hosts to verify the service"
                .into(),
        },
    }
}
