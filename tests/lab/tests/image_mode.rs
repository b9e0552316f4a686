//! `--image-mode`: a 3+1 cluster installs OpenShift 4.21 with its master and worker pools on
//! pre-built OS images (the control plane's `spec.config.imageMode`), followed to the
//! rollout, its day-2 worker on the worker pool's image; and the images given by tag, refused
//! before anything installs.

use lab::{ImageModeRun, Options, Topology};

use crate::common::{DAY1_MILESTONES, DAY2_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_plus_one_installs_on_pre_built_images_and_rolls_out() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
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
    expected.extend(DAY2_MILESTONES);
    assert_eq!(milestones(&report), expected);
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
