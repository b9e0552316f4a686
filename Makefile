# Every target here is what CI and developers run; .ci/run calls `make test`.
.PHONY: test testbed node-packages coreos-installer openshift-install openshift-api images images-check generate check-generated fmt clippy lab bench-core

# Builds the real control plane (kube-apiserver, etcd, CAPI, a node's kubelet, ...) from Go modules
# into a cache outside the repo, the Debian packages the node needs and our managers' images, then
# runs every Rust test against it. The lab's test runs our managers as processes from target/debug,
# and `cargo test` alone does not build another package's binaries.
test: testbed node-packages images coreos-installer openshift-install openshift-api
	cargo build --locked --bins -p bootstrap-provider -p controlplane-provider
	cargo test --workspace --locked

testbed:
	bash tests/testbed/build.sh

# containerd, runc, the CNI plugins, iptables and conntrack from Debian, for the test bed's node.
node-packages:
	bash tests/testbed/node-packages.sh

# The real coreos-installer and its crate's fixture ISOs, built once into the cache: the tests
# read back with it what the core serves (tests/coreos-installer/build.sh).
coreos-installer:
	bash tests/coreos-installer/build.sh

# The real openshift-install (4.17) built from its Go module into the cache, once (about 7
# minutes cold), with the real crane (an OCI registry) and the installer image: the tests run the
# core's install step with it, taken from a release payload (tests/openshift-install/).
openshift-install:
	bash tests/openshift-install/build.sh
	bash tests/openshift-install/payload.sh

# The OpenShift CRDs the lab's workload cluster serves (ClusterVersion), from the openshift/api
# Go module into the cache (tests/openshift-api/fetch.sh).
openshift-api:
	bash tests/openshift-api/fetch.sh

# Both managers' OCI images, offline and reproducibly, into target/images (docs/images.md).
images:
	bash images/build.sh

# The images read by a real runtime: a private containerd imports and runs each (root).
images-check: images
	bash images/check.sh

# Regenerates everything under config/ from the Rust types, and docs/bad-input.md from its tests
# (the controller rows run on the testbed: `make testbed` first).
generate:
	cargo run --quiet --locked -p bootstrap-provider -- manifests --dir config
	cargo run --quiet --locked -p controlplane-provider -- manifests --dir config
	CAPOA_UPDATE_DOCS=1 cargo test --quiet --locked -p controlplane-provider --test bad_input
	CAPOA_UPDATE_DOCS=1 cargo test --quiet --locked -p agent-sim --test bad_input_controllers

fmt:
	cargo fmt --all -- --check

clippy:
	cargo clippy --workspace --all-targets --locked -- -D warnings

# The lab (docs/lab.md): builds the testbed, the node's packages, our images and binaries, then
# installs a 3+2 cluster on a simulated Metal3 site with every provider running as a pod on the
# management cluster's node (root; `LAB_ARGS="--managers processes"` runs ours as processes).
# Flags go in LAB_ARGS, e.g. `make lab LAB_ARGS="--topology sno --keep"`.
lab:
	bash tests/testbed/build.sh && bash tests/testbed/node-packages.sh && bash tests/openshift-api/fetch.sh && bash tests/openshift-install/crane.sh && bash images/build.sh && cargo build --locked --bins -p lab -p bootstrap-provider -p controlplane-provider && target/debug/lab $(LAB_ARGS)

# assisted-core end to end (docs/benchmarks.md): the release assisted-core binary against the
# testbed's kube-apiserver and etcd, every scenario and load (about 12 minutes). Two cargo
# runs, so the binary measured is exactly what `cargo build --release -p assisted-core` builds.
# Flags go in BENCH_ARGS, e.g. `make bench-core BENCH_ARGS="--scenarios 1x1000 --loads 1,100/s"`.
bench-core:
	bash tests/testbed/build.sh && cargo build --locked --release -p assisted-core && cargo build --locked --release -p core-bench && target/release/core-bench $(BENCH_ARGS)
