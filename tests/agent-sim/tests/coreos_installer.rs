//! What assisted-core serves, read back by the real coreos-installer (0.27, built by
//! `tests/coreos-installer/build.sh`, which `make test` runs) on the fixture ISOs its crate ships:
//! one per layout coreos-assembler has written, from the 2020 `coreiso+` header to today's
//! `igninfo.json` (no header at all) and s390x's area at an offset inside another file.
//! `iso ignition show` gives back the discovery ignition, `iso kargs show` the ISO's default
//! arguments followed by the InfraEnv's, and `iso reset` the base ISO byte for byte. The same
//! holds on the test ISO every other end-to-end test boots (`write_test_iso`), which the tool
//! must read as one of today's ISOs, down to `iso extract minimal-iso` rebuilding the minimal
//! ISO from its `coreos/miniso.dat`.

use std::path::{Path, PathBuf};
use std::process::Command;

use assisted_core::service::images::cpio::embed_area_payload;
use assisted_core::service::images::miniso::write_minimal_iso;
use assisted_core::service::images::test_iso::{
    TEST_ISO_DEFAULT_KARGS, embedded_kernel_arguments, write_legacy_test_iso,
};
use assisted_core::service::images::{
    CustomizedIso, ImageError, TestIsoContents, extract_embedded_ignition, read_layout,
    write_test_iso,
};
use http_body_util::BodyExt;

const VERSION: &str = "0.27.0";

/// `${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/coreos-installer-<version>`, as build.sh.
fn cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    let dir = base.join(format!("capoa-rs/coreos-installer-{VERSION}"));
    assert!(
        dir.join("fixtures/.complete").exists(),
        "coreos-installer {VERSION} is not built: run `bash tests/coreos-installer/build.sh` \
         (make test does), or set CAPOA_TESTBED_SKIP=1 to skip"
    );
    dir
}

fn coreos_installer(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(dir.join("bin/coreos-installer"))
        .args(args)
        .output()
        .expect("run coreos-installer");
    assert!(
        out.status.success(),
        "coreos-installer {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The whole customised ISO as the image server streams it, written to `to`.
async fn serve(iso: &CustomizedIso, to: &Path) {
    let body = iso
        .response(false, None)
        .into_body()
        .collect()
        .await
        .expect("stream the ISO")
        .to_bytes();
    std::fs::write(to, &body).expect("write the served ISO");
}

const IGNITION: &str = r#"{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/etc/discovery","contents":{"source":"data:,yes"}}]}}"#;

/// One fixture: customised, read back by coreos-installer, reset to the base.
async fn check(dir: &Path, fixture: &str, kargs: &[&str]) {
    check_base(dir, &dir.join("fixtures").join(fixture), fixture, kargs).await;
}

/// The base ISO at `base` customised, read back by coreos-installer and reset; gives back the
/// served ISO (in a directory that lives as long as the returned guard).
async fn check_base(
    dir: &Path,
    base: &Path,
    fixture: &str,
    kargs: &[&str],
) -> (tempfile::TempDir, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served.iso");
    let kargs: Vec<String> = kargs.iter().map(|k| k.to_string()).collect();
    let iso = CustomizedIso::open_with_kargs(base, IGNITION, &kargs)
        .await
        .unwrap_or_else(|e| panic!("{fixture}: {e}"));
    serve(&iso, &served).await;
    let path = served.to_str().unwrap();
    assert_eq!(
        coreos_installer(dir, &["iso", "ignition", "show", path]),
        IGNITION,
        "{fixture}: the embedded ignition"
    );
    if !kargs.is_empty() {
        let default = coreos_installer(dir, &["iso", "kargs", "show", "--default", path]);
        let current = coreos_installer(dir, &["iso", "kargs", "show", path]);
        assert_eq!(
            current.trim(),
            format!("{} {}", default.trim(), kargs.join(" ")),
            "{fixture}: the kernel arguments"
        );
    }
    let reset = work.path().join("reset.iso");
    coreos_installer(dir, &["iso", "reset", path, "-o", reset.to_str().unwrap()]);
    assert!(
        std::fs::read(&reset).unwrap() == std::fs::read(base).unwrap(),
        "{fixture}: iso reset does not give back the base ISO"
    );
    (work, served)
}

#[tokio::test]
async fn coreos_installer_reads_back_what_the_core_serves_on_every_layout() {
    if testbed::skip() {
        return;
    }
    let dir = cache();
    // 2020: the coreiso+ header and images/ignition.img, no kernel-argument areas.
    check(&dir, "embed-areas-2020-09.iso", &[]).await;
    // 2021: the headers and kargs.json.
    check(&dir, "embed-areas-2021-12.iso", &["console=ttyS0"]).await;
    // 2022: no system-area headers any more (every such ISO was refused before).
    check(
        &dir,
        "embed-areas-2022-09.iso",
        &["console=ttyS0", "rd.neednet=1"],
    )
    .await;
    // Today's x86_64: igninfo.json, kargs.json with its own padding and end characters.
    check(
        &dir,
        "embed-areas-2023-07.x86_64.iso",
        &["console=ttyS0,115200n8"],
    )
    .await;
    // s390x: the area at an offset inside cdboot.img, and no kernel-argument areas.
    check(&dir, "embed-areas-2023-03.s390x.iso", &[]).await;
}

#[tokio::test]
async fn kernel_arguments_on_an_iso_without_karg_areas_are_a_clear_error() {
    if testbed::skip() {
        return;
    }
    let dir = cache();
    let base = dir.join("fixtures/embed-areas-2020-09.iso");
    let mut file = std::fs::File::open(&base).unwrap();
    assert_eq!(read_layout(&mut file).unwrap().kargs, None);
    let err = CustomizedIso::open_with_kargs(&base, IGNITION, &["console=ttyS0".into()])
        .await
        .unwrap_err();
    assert!(matches!(err, ImageError::NoKargAreas(_)), "{err}");
    assert!(err.to_string().contains("kargs.json"), "{err}");
}

const CONTENTS: TestIsoContents<'static> = TestIsoContents {
    kernel: b"kernel",
    initrd: b"initrd",
    rootfs: b"rootfs",
};

fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&coreos_installer(dir, args)).expect("coreos-installer prints JSON")
}

#[tokio::test]
async fn coreos_installer_reads_our_test_iso_as_one_of_todays() {
    if testbed::skip() {
        return;
    }
    let dir = cache();
    let work = tempfile::tempdir().unwrap();
    let base = work.path().join("test.iso");
    write_test_iso(&base, &CONTENTS, 256 * 1024).unwrap();
    let path = base.to_str().unwrap();

    // The tool walks the whole tree and finds the areas where our reader does.
    let show = json(&dir, &["dev", "show", "iso", path]);
    let records: Vec<&str> = show["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(
        records,
        [
            "COREOS",
            "COREOS/IGNINFO.JSO",
            "COREOS/KARGS.JSO",
            "COREOS/MINISO.DAT",
            "EFI",
            "EFI/REDHAT",
            "EFI/REDHAT/GRUB.CFG",
            "IMAGES",
            "IMAGES/IGNITION.IMG",
            "IMAGES/PXEBOOT",
            "IMAGES/PXEBOOT/INITRD.IMG",
            "IMAGES/PXEBOOT/ROOTFS.IMG",
            "IMAGES/PXEBOOT/VMLINUZ",
        ]
    );
    let layout = read_layout(&mut std::fs::File::open(&base).unwrap()).unwrap();
    let ign = json(&dir, &["dev", "show", "iso", "--ignition", path]);
    assert_eq!(ign["offset"], layout.ignition.offset);
    assert_eq!(ign["length"], 256 * 1024);
    let kargs = json(&dir, &["dev", "show", "iso", "--kargs", path]);
    let ours = layout.kargs.expect("karg areas");
    assert_eq!(kargs["default"], TEST_ISO_DEFAULT_KARGS);
    assert_eq!(kargs["length"], ours.size);
    assert_eq!(kargs["kargs"].as_array().unwrap().len(), 1);
    assert_eq!(kargs["kargs"][0]["offset"], ours.areas[0].offset);
    assert_eq!(
        coreos_installer(&dir, &["iso", "kargs", "show", path]).trim(),
        TEST_ISO_DEFAULT_KARGS
    );

    // Served with an ignition and kernel arguments: the tool and our readers agree.
    let added = ["console=ttyS0,115200n8", "rd.neednet=1"];
    let (_served_dir, served) = check_base(&dir, &base, "test.iso", &added).await;
    let served = std::fs::read(served).unwrap();
    let want = format!("{TEST_ISO_DEFAULT_KARGS} {}", added.join(" "));
    assert_eq!(
        embedded_kernel_arguments(std::io::Cursor::new(&served)).unwrap(),
        Some(want)
    );
    assert_eq!(
        extract_embedded_ignition(std::io::Cursor::new(&served))
            .unwrap()
            .as_deref(),
        Some(IGNITION)
    );

    // The 2020 layout kept for the header's tests reads as the 2020 fixture does.
    let legacy = work.path().join("legacy.iso");
    write_legacy_test_iso(&legacy, &CONTENTS, 64 * 1024).unwrap();
    coreos_installer(&dir, &["dev", "show", "iso", legacy.to_str().unwrap()]);
    check_base(&dir, &legacy, "legacy.iso", &[]).await;
}

/// The records `coreos-installer dev show iso` lists.
fn records(dir: &Path, iso: &Path) -> Vec<String> {
    json(dir, &["dev", "show", "iso", iso.to_str().unwrap()])["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn coreos_installer_extracts_the_minimal_iso_from_our_test_iso() {
    if testbed::skip() {
        return;
    }
    let dir = cache();
    let work = tempfile::tempdir().unwrap();
    let full = work.path().join("full.iso");
    write_test_iso(&full, &CONTENTS, 256 * 1024).unwrap();
    let full_path = full.to_str().unwrap();

    // The tool unpacks miniso.dat against the full ISO and checks the digest of the result;
    // `--output-rootfs` gives back the file the minimal ISO goes without.
    let minimal = work.path().join("minimal.iso");
    let rootfs = work.path().join("rootfs.img");
    coreos_installer(
        &dir,
        &[
            "iso",
            "extract",
            "minimal-iso",
            "--output-rootfs",
            rootfs.to_str().unwrap(),
            full_path,
            minimal.to_str().unwrap(),
        ],
    );
    assert_eq!(std::fs::read(&rootfs).unwrap(), CONTENTS.rootfs);
    let full_len = std::fs::metadata(&full).unwrap().len();
    let minimal_len = std::fs::metadata(&minimal).unwrap().len();
    assert!(minimal_len < full_len, "{minimal_len} vs {full_len}");
    let want: Vec<String> = records(&dir, &full)
        .into_iter()
        .filter(|r| r != "IMAGES/PXEBOOT/ROOTFS.IMG" && r != "COREOS/MINISO.DAT")
        .collect();
    assert_eq!(records(&dir, &minimal), want);

    // The tool drops `coreos.liveiso=` (the minimal ISO has no rootfs to find by label), from
    // the karg area and from the defaults in kargs.json alike.
    let without_liveiso: Vec<&str> = TEST_ISO_DEFAULT_KARGS
        .split(' ')
        .filter(|k| !k.starts_with("coreos.liveiso="))
        .collect();
    let minimal_path = minimal.to_str().unwrap();
    for args in [
        &["iso", "kargs", "show"][..],
        &["iso", "kargs", "show", "--default"],
    ] {
        let kargs = coreos_installer(&dir, &[args, &[minimal_path]].concat());
        assert_eq!(kargs.trim(), without_liveiso.join(" "), "{args:?}");
    }
    // Still a live ISO our readers and the core take: an empty embed area, karg areas.
    assert_eq!(
        extract_embedded_ignition(std::fs::File::open(&minimal).unwrap()).unwrap(),
        None
    );
    assert_eq!(
        embedded_kernel_arguments(std::fs::File::open(&minimal).unwrap()).unwrap(),
        Some(without_liveiso.join(" "))
    );

    // With a rootfs URL, the minimal ISO boots its rootfs from there.
    let with_url = work.path().join("with-url.iso");
    coreos_installer(
        &dir,
        &[
            "iso",
            "extract",
            "minimal-iso",
            "--rootfs-url",
            "http://x/rootfs",
            full_path,
            with_url.to_str().unwrap(),
        ],
    );
    let kargs = coreos_installer(&dir, &["iso", "kargs", "show", with_url.to_str().unwrap()]);
    let kargs: Vec<&str> = kargs.split_whitespace().collect();
    assert!(
        kargs.contains(&"coreos.live.rootfs_url=http://x/rootfs"),
        "{kargs:?}"
    );
    assert!(
        !kargs.iter().any(|k| k.starts_with("coreos.liveiso=")),
        "{kargs:?}"
    );
}

/// The core's minimal ISO of `full` served with the ignition and kernel arguments, checked
/// against the real tool: what it embeds reads back, its kernel arguments are the tool's
/// minimal ISO's (`coreos.liveiso=` gone) plus the rootfs URL and the InfraEnv's, and `iso reset`
/// of what was served is byte for byte the tool's own `iso extract minimal-iso`.
async fn check_minimal(dir: &Path, full: &Path, name: &str) {
    let work = tempfile::tempdir().unwrap();
    let ours = work.path().join("ours.iso");
    assert!(
        write_minimal_iso(full, &ours).unwrap_or_else(|e| panic!("{name}: {e}")),
        "{name}: no miniso.dat"
    );
    let theirs = work.path().join("theirs.iso");
    let full_path = full.to_str().unwrap();
    coreos_installer(
        dir,
        &[
            "iso",
            "extract",
            "minimal-iso",
            full_path,
            theirs.to_str().unwrap(),
        ],
    );
    let rootfs_url = "https://10.244.0.1:30891/boot-artifacts/rootfs?arch=x86_64&version=4.17";
    let added = [
        "console=ttyS0".to_string(),
        format!("coreos.live.rootfs_url={rootfs_url}"),
    ];
    let embed = embed_area_payload(IGNITION.as_bytes(), &[]).unwrap();
    let iso = CustomizedIso::with_embed(&ours, embed.into(), &added)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let served = work.path().join("served.iso");
    serve(&iso, &served).await;
    let path = served.to_str().unwrap();
    assert_eq!(
        coreos_installer(dir, &["iso", "ignition", "show", path]),
        IGNITION,
        "{name}"
    );
    let default = coreos_installer(dir, &["iso", "kargs", "show", "--default", path]);
    assert_eq!(
        default,
        coreos_installer(
            dir,
            &[
                "iso",
                "kargs",
                "show",
                "--default",
                theirs.to_str().unwrap()
            ]
        ),
        "{name}: the minimal ISO's defaults"
    );
    assert!(!default.contains("coreos.liveiso="), "{name}: {default}");
    assert_eq!(
        coreos_installer(dir, &["iso", "kargs", "show", path]).trim(),
        format!("{} {}", default.trim(), added.join(" ")),
        "{name}"
    );
    assert_eq!(records(dir, &served), records(dir, &theirs), "{name}");
    let reset = work.path().join("reset.iso");
    coreos_installer(dir, &["iso", "reset", path, "-o", reset.to_str().unwrap()]);
    assert!(
        std::fs::read(&reset).unwrap() == std::fs::read(&theirs).unwrap(),
        "{name}: iso reset of the served minimal ISO differs from coreos-installer's own"
    );
}

#[tokio::test]
async fn the_cores_minimal_iso_is_coreos_installers_on_every_layout_with_miniso_data() {
    if testbed::skip() {
        return;
    }
    let dir = cache();
    for fixture in [
        "embed-areas-2021-12.iso",
        "embed-areas-2022-02.iso",
        "embed-areas-2022-09.iso",
        "embed-areas-2023-03.x86_64.iso",
        "embed-areas-2023-07.x86_64.iso",
    ] {
        check_minimal(&dir, &dir.join("fixtures").join(fixture), fixture).await;
    }
    let work = tempfile::tempdir().unwrap();
    let test_iso = work.path().join("test.iso");
    write_test_iso(&test_iso, &CONTENTS, 256 * 1024).unwrap();
    check_minimal(&dir, &test_iso, "test.iso").await;

    // Before 2021-12 there is no miniso.dat: nothing is written, the full ISO is what there is.
    let old = dir.join("fixtures/embed-areas-2021-09.iso");
    let none = work.path().join("none.iso");
    assert!(!write_minimal_iso(&old, &none).unwrap());
    assert!(!none.exists());
}
