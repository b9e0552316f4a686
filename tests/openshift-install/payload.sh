#!/usr/bin/env bash
# Builds, once into the cache, what a release payload test needs besides the installer itself
# (tests/openshift-install/build.sh): the real `crane` (crane.sh: its `registry serve` is the
# OCI registry the tests run, its `push`/`append` load it), and the installer
# image as an image tarball: one layer holding `usr/bin/openshift-install`, as the release's
# `installer` image carries it. The tests push it into a fresh registry (its blobs kept in the
# cache, so only the manifest moves) and build the release image around it
# (tests/agent-sim/tests/real_installer.rs). Nothing here is committed.
set -euo pipefail

CRANE_VERSION=v0.22.1
INSTALLER_VERSION=v1.4.17
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs"
CRANE_DIR="${CACHE_ROOT}/crane-${CRANE_VERSION}"
INSTALLER_BIN="${CACHE_ROOT}/openshift-install-${INSTALLER_VERSION}/bin/openshift-install"
IMAGE="${CACHE_ROOT}/openshift-install-${INSTALLER_VERSION}/installer-image.tar"

bash "$(dirname "$0")/crane.sh"

if [ -f "${IMAGE}" ]; then
    echo "installer image: cached in ${IMAGE}"
    exit 0
fi
if [ ! -x "${INSTALLER_BIN}" ]; then
    echo "installer image: build openshift-install first (tests/openshift-install/build.sh)" >&2
    exit 1
fi
start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/root/usr/bin"
cp "${INSTALLER_BIN}" "${work}/root/usr/bin/openshift-install"
# Fixed owner and times: the same binary gives the same layer, so the same digests.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2024-08-09 00:00Z' \
    -C "${work}/root" -cf "${work}/layer.tar" usr
"${CRANE_DIR}/bin/crane" append --oci-empty-base -f "${work}/layer.tar" \
    -t capoa-rs.test/ocp/installer:4.17 -o "${IMAGE}.tmp"
mv "${IMAGE}.tmp" "${IMAGE}"
echo "installer image: done in $(($(date +%s) - start))s"
