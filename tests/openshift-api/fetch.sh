#!/usr/bin/env bash
# Copies the OpenShift CRDs the lab's workload cluster serves (ClusterVersion, which the
# control plane follows through upgrades) from the openshift/api Go module into the cache, at
# the version the 4.17 installer pins (tests/openshift-install). Nothing here is committed: the
# YAML comes from the Go module proxy at build time. Seconds, once.
set -euo pipefail

MODULE=github.com/openshift/api
VERSION=v0.0.0-20240808203820-e69593239e49 # github.com/openshift/installer@v1.4.17's go.mod
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/openshift-api-${VERSION}"
CRDS=(
	config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml
)

if [ -f "${CACHE}/.complete" ]; then
	echo "openshift-api: cached in ${CACHE}"
	exit 0
fi
dir=$(cd / && GOFLAGS=-mod=mod go mod download -json "${MODULE}@${VERSION}" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
if [ -z "${dir}" ] || [ ! -d "${dir}" ]; then
	echo "openshift-api: could not download ${MODULE}@${VERSION}" >&2
	exit 1
fi
mkdir -p "${CACHE}/crds"
for crd in "${CRDS[@]}"; do
	install -m 0644 "${dir}/${crd}" "${CACHE}/crds/$(basename "${crd}")"
done
touch "${CACHE}/.complete"
echo "openshift-api: ${#CRDS[@]} CRD(s) in ${CACHE}/crds"
