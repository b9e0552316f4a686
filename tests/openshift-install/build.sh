#!/usr/bin/env bash
# Builds the real `openshift-install` once into the cache, from its Go module as its own
# hack/build.sh does for a release build (`go generate ./data`, then `-tags release`). The tests
# run assisted-core's install backend with it (tests/agent-sim/tests/real_installer.rs) and fail
# on any installer error or warning. Nothing here is committed: the source comes from the Go
# module proxy at build time, keyed by version. About 7 minutes cold on 2 cores.
set -euo pipefail

MODULE=github.com/openshift/installer
VERSION=v1.4.17 # the release-4.17 stream
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/openshift-install-${VERSION}"
BIN="${CACHE}/bin/openshift-install"

if [ -x "${BIN}" ]; then
    echo "openshift-install: cached in ${CACHE}"
    exit 0
fi

start=$(date +%s)
echo "openshift-install: building ${MODULE}@${VERSION} into ${CACHE}"
src_cache=$(GOFLAGS=-mod=mod go mod download -json "${MODULE}@${VERSION}" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
if [ -z "${src_cache}" ] || [ ! -d "${src_cache}" ]; then
    echo "openshift-install: could not download ${MODULE}@${VERSION}" >&2
    exit 1
fi

# The module cache is read-only and `go generate ./data` writes into the tree: build a copy.
work=$(mktemp -d)
trap 'chmod -R u+w "${work}" 2>/dev/null; rm -rf "${work}"' EXIT
cp -r "${src_cache}" "${work}/installer"
chmod -R u+w "${work}/installer"
# Its vendor/ is not in the module zip as a whole; build against the module graph instead.
rm -rf "${work}/installer/vendor"
cd "${work}/installer"
export GOFLAGS=-mod=mod CGO_ENABLED=0
go generate ./data
mkdir -p "${CACHE}/bin"
# As hack/build.sh stamps a release build: the version `openshift-install version` prints.
go build -tags release \
    -ldflags "-s -w -X github.com/openshift/installer/pkg/version.Raw=${VERSION} -X github.com/openshift/installer/pkg/version.defaultArch=amd64" \
    -o "${BIN}.tmp" ./cmd/openshift-install
mv "${BIN}.tmp" "${BIN}"
echo "openshift-install: done in $(($(date +%s) - start))s"
