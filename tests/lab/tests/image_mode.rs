//! `--image-mode`: a 3+1 cluster installs OpenShift 4.21 with its master and worker pools on
//! pre-built OS images (the control plane's `spec.config.imageMode`), followed to the
//! rollout, its day-2 worker counted on the worker pool's image, the rollout in the cluster's
//! logs bundle; a pre-built image that cannot be pulled, failing the install (SNO); and the
//! images given by tag, refused before anything installs.

use lab::{ImageModeRun, Options, Topology};

use crate::common::{DAY1_MILESTONES, DAY2_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_plus_one_installs_on_pre_built_images_and_rolls_out() {
    if testbed::skip() {
        return;
    }
    let (report, dir) = run_ok(
        "image-mode",
        Options {
            topology: Topology::ThreePlusTwo,
            workers: 1,
            image_mode: Some(ImageModeRun::Pools),
            ..options()
        },
    )
    .await;
    let mut expected: Vec<&str> = DAY1_MILESTONES.to_vec();
    expected.push("image mode rolled out");
    expected.push(DAY2_MILESTONES[0]);
    expected.push("day-2 worker on its image");
    expected.extend(&DAY2_MILESTONES[1..]);
    assert_eq!(milestones(&report), expected);
    // The rollout reached the cluster's logs bundle, downloaded from the AgentClusterInstall's
    // logsURL: both pools, every Node on its pool's image.
    let bundle = std::fs::read(
        dir.path()
            .join(format!("{}-logs-bundle.tar", report.clusters[0].name)),
    )
    .expect("the lab keeps the logs bundle");
    let said = lab::mco::bundle_image_mode(&bundle).unwrap();
    assert_eq!(
        said.pools
            .iter()
            .map(|(p, _, _)| p.as_str())
            .collect::<Vec<_>>(),
        ["master", "worker"]
    );
    assert!(said.shows("RolledOut"), "{said:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_built_image_that_cannot_be_pulled_fails_the_install() {
    if testbed::skip() {
        return;
    }
    let (report, dir) = run_ok(
        "image-mode-failed-build",
        Options {
            image_mode: Some(ImageModeRun::FailedBuild),
            ..options()
        },
    )
    .await;
    let mut expected: Vec<&str> = DAY1_MILESTONES.to_vec();
    expected.push("image mode install failed");
    assert_eq!(milestones(&report), expected);
    let bundle = std::fs::read(
        dir.path()
            .join(format!("{}-logs-bundle.tar", report.clusters[0].name)),
    )
    .expect("the lab keeps the logs bundle");
    let said = lab::mco::bundle_image_mode(&bundle).unwrap();
    assert!(said.shows("RolloutFailed"), "{said:?}");
    assert_eq!(said.pools, [("master".to_string(), 0, 1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_built_images_by_tag_are_refused_before_the_install() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "image-mode-by-tag",
        Options {
            image_mode: Some(ImageModeRun::TagImage),
            timeout: std::time::Duration::from_secs(200),
            ..options()
        },
    )
    .await;
    assert_eq!(
        milestones(&report),
        ["hosts available", "image mode refused"]
    );
}
