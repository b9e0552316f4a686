//! Writes the Metal3 test CRDs (`config/testing/metal3/*.yaml`) derived from the generated types.
//!
//! `cargo run -p external-types --example gen-metal3-test-crds [-- <workspace root>]`

use std::path::PathBuf;

use external_types::test_crds::{DIR, metal3_test_crds, render};

fn main() -> std::io::Result<()> {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."));
    let dir = root.join(DIR);
    std::fs::create_dir_all(&dir)?;
    for (name, crd) in metal3_test_crds() {
        let path = dir.join(name);
        std::fs::write(&path, render(&crd))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
