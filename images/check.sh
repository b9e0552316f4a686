#!/usr/bin/env bash
# `make images-check`: the images `make images` built, read by a real container runtime. A
# private containerd (Debian's, installed if missing; needs root) imports each OCI archive and
# runs the manager with a read-only root filesystem as the image's user (65532, set by
# images/build.sh), as the Deployments do.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="v$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
REGISTRY="${IMAGE_REGISTRY:-ghcr.io/openshift-assisted/capoa-rs}"
if [ "$(id -u)" -ne 0 ]; then
    echo "images-check: needs root (a private containerd)" >&2
    exit 1
fi
if ! command -v containerd >/dev/null || ! command -v runc >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd
fi

dir=$(mktemp -d)
sock="${dir}/containerd.sock"
containerd --root "${dir}/root" --state "${dir}/state" --address "${sock}" > "${dir}/log" 2>&1 &
pid=$!
trap 'kill ${pid} 2>/dev/null; wait ${pid} 2>/dev/null; rm -rf "${dir}"' EXIT
for _ in $(seq 50); do [ -S "${sock}" ] && break; sleep 0.1; done

ctr() { command ctr --address "${sock}" -n capoa-images-check "$@"; }
for name in bootstrap-provider controlplane-provider; do
    ctr images import "target/images/${name}-${VERSION}.tar" > /dev/null
    ref="${REGISTRY}/${name}:${VERSION}"
    # `crd` prints the manager's CRDs: the binary starts and runs with nothing but the image.
    ctr run --rm --read-only "${ref}" "check-${name}" /usr/local/bin/manager crd > "${dir}/out"
    grep -q "kind: CustomResourceDefinition" "${dir}/out"
    echo "${ref}: imported, ran with a read-only root filesystem as the image's user"
done
