#!/usr/bin/env bash
# Builds, once into the cache, the real `crane` from go-containerregistry: its `registry serve`
# is the OCI registry of the test bed (the real-installer tests' release payloads, the lab's
# mirror registry for `lab --disconnected`), its `push`/`append` load it. Nothing is committed.
set -euo pipefail

CRANE_VERSION=v0.22.1 # keep in sync with testbed::registry::CRANE_VERSION
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs"
CRANE_DIR="${CACHE_ROOT}/crane-${CRANE_VERSION}"

if [ ! -x "${CRANE_DIR}/bin/crane" ]; then
    echo "crane: building ${CRANE_VERSION} into ${CRANE_DIR}"
    start=$(date +%s)
    GOFLAGS=-mod=mod CGO_ENABLED=0 GOBIN="${CRANE_DIR}/bin" \
        go install "github.com/google/go-containerregistry/cmd/crane@${CRANE_VERSION}"
    echo "crane: done in $(($(date +%s) - start))s"
fi
