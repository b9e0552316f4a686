#!/usr/bin/env bash
# Builds the real coreos-installer (crate `coreos-installer` on crates.io: the tool CoreOS itself
# uses to customise its live ISOs) once into the cache, beside the fixture ISOs its crate ships
# (written by coreos-assembler, one per layout it has used since 2020). The tests check with it
# that the ISOs assisted-core serves read back as coreos-installer reads them
# (tests/agent-sim/tests/coreos_installer.rs). Nothing here is committed: the binary and the
# fixtures come from crates.io at build time, keyed by version.
set -euo pipefail

VERSION=0.27.0
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/coreos-installer-${VERSION}"

if [ -x "${CACHE}/bin/coreos-installer" ] && [ -f "${CACHE}/fixtures/.complete" ]; then
    echo "coreos-installer: cached in ${CACHE}"
    exit 0
fi

# The C libraries its crates link (OpenSSL, zstd, liblzma) and xz for the fixtures.
missing=()
for pkg in libssl-dev libzstd-dev liblzma-dev pkg-config xz-utils; do
    dpkg -s "${pkg}" >/dev/null 2>&1 || missing+=("${pkg}")
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        echo "coreos-installer: install ${missing[*]} first (apt-get install)" >&2
        exit 1
    fi
fi

start=$(date +%s)
echo "coreos-installer: building ${VERSION} into ${CACHE}"
cargo install coreos-installer --version "${VERSION}" --locked --root "${CACHE}" --quiet

# cargo install leaves the crate's source, fixtures included, in the registry.
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/coreos-installer-"${VERSION}" | head -n 1)
mkdir -p "${CACHE}/fixtures"
for f in "${src}"/fixtures/iso/embed-areas-*.iso.xz; do
    xz -dc "${f}" > "${CACHE}/fixtures/$(basename "${f}" .xz)"
done
touch "${CACHE}/fixtures/.complete"
echo "coreos-installer: done in $(($(date +%s) - start))s"
