//! Customised ISO streaming throughput: a ~256 MiB generated ISO through `CustomizedIso::response`.
//! Run: `cargo bench -p assisted-core --bench iso -- --warm-up-time 1 --measurement-time 10`

use std::hint::black_box;

use assisted_core::service::images::{CustomizedIso, TestIsoContents, write_test_iso};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::BodyExt;

// With the 8 MiB kernel and 64 MiB initrd the ISO is ~256 MiB.
const ROOTFS_LEN: usize = 184 * 1024 * 1024;
const AREA_LEN: u64 = 256 * 1024;

/// Reads a response body to the end without keeping it, returning its length.
async fn drain(iso: &CustomizedIso, range: Option<&str>) -> u64 {
    let mut body = iso.response(false, range).into_body();
    let mut n = 0u64;
    while let Some(frame) = body.frame().await {
        if let Some(data) = frame.expect("body frame").data_ref() {
            n += black_box(data).len() as u64;
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("base.iso");
    let rootfs: Vec<u8> = (0..ROOTFS_LEN).map(|i| (i % 251) as u8).collect();
    let contents = TestIsoContents {
        kernel: &[1u8; 8 << 20],
        initrd: &[2u8; 64 << 20],
        rootfs: &rootfs,
    };
    write_test_iso(&path, &contents, AREA_LEN).expect("write test ISO");
    drop(rootfs);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let ignition = format!(
        r#"{{"ignition":{{"version":"3.1.0"}},"pad":"{}"}}"#,
        "x".repeat(8000)
    );
    let iso = rt
        .block_on(CustomizedIso::open(&path, &ignition))
        .expect("open ISO");

    let mut g = c.benchmark_group("customized_iso");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(iso.base_len));
    g.bench_function("full_get", |b| {
        b.iter(|| assert_eq!(rt.block_on(drain(&iso, None)), iso.base_len))
    });
    let start = iso.area.offset.saturating_sub(4096);
    let range = format!("bytes={start}-{}", start + (1 << 20) - 1);
    g.throughput(Throughput::Bytes(1 << 20));
    g.bench_function("1MiB_range_across_area", |b| {
        b.iter(|| assert_eq!(rt.block_on(drain(&iso, Some(&range))), 1 << 20))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
