//! Peak memory of ISO streaming as the ISO grows: builds a small test ISO, grows the file
//! (sparse) to each size, streams it through `CustomizedIso::response` to the end, and prints
//! throughput and the process's peak RSS (VmHWM). Equal peaks across sizes mean memory is
//! constant in ISO size.
//!
//! Run: `cargo run --release -p assisted-core --example iso_stream_memory -- 256 1024 4096`
//! (sizes in MiB; each run appends to the same process, so later sizes can only raise the peak).

use std::time::Instant;

use assisted_core::service::images::{CustomizedIso, TestIsoContents, write_test_iso};
use http_body_util::BodyExt;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![256, 1024]
    } else {
        sizes
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("base.iso");
    let contents = TestIsoContents {
        kernel: b"kernel",
        initrd: b"initrd",
        rootfs: b"rootfs",
    };
    write_test_iso(&path, &contents, 256 * 1024)?;
    let ignition = r#"{"ignition":{"version":"3.1.0"}}"#;
    println!("| ISO size | streamed in | throughput | peak RSS after |");
    println!("| --- | --- | --- | --- |");
    for mib in sizes {
        // Growing the file leaves the ISO header and embed area where they are.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)?
            .set_len(mib << 20)?;
        let iso = rt.block_on(CustomizedIso::open(&path, ignition))?;
        let start = Instant::now();
        let n = rt.block_on(async {
            let mut body = iso.response(false, None).into_body();
            let mut n = 0u64;
            while let Some(frame) = body.frame().await {
                if let Ok(f) = frame
                    && let Some(d) = f.data_ref()
                {
                    n += d.len() as u64;
                }
            }
            n
        });
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(n, mib << 20, "streamed every byte");
        println!(
            "| {mib} MiB | {:.2} s | {:.2} GiB/s | {:.1} MiB |",
            secs,
            (n as f64 / (1u64 << 30) as f64) / secs,
            peak_rss_kib() as f64 / 1024.0
        );
    }
    Ok(())
}
