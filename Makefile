# Every target here is what CI and developers run; .ci/run calls `make test`.
.PHONY: test testbed generate check-generated fmt clippy

# Builds the real control plane (kube-apiserver, etcd, CAPI, ...) from Go modules into a cache outside
# the repo, then runs every Rust test against it.
test: testbed
	cargo test --workspace --locked

testbed:
	bash tests/testbed/build.sh

# Regenerates everything under config/ from the Rust types.
generate:
	cargo run --quiet --locked -p bootstrap-provider -- manifests --dir config
	cargo run --quiet --locked -p controlplane-provider -- manifests --dir config

fmt:
	cargo fmt --all -- --check

clippy:
	cargo clippy --workspace --all-targets --locked -- -D warnings
