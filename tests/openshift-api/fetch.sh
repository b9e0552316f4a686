#!/usr/bin/env bash
# Copies the OpenShift CRDs the lab's workload cluster serves from the openshift/api Go module
# into the cache: ClusterVersion (the control plane follows upgrades through it), at the version
# the 4.17 installer pins (tests/openshift-install), and the machine-config operator's v1
# MachineOSConfig, MachineOSBuild and MachineConfigPool (image mode, which needs 4.21), at a
# 4.21-era version. Nothing here is committed: the YAML comes from the Go module proxy at build
# time. Seconds, once.
set -euo pipefail

MODULE=github.com/openshift/api
CACHE_KEY=2 # bump when the list below changes (testbed::cache::openshift_crds reads it)
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/openshift-api-${CACHE_KEY}"
# "<module version> <path in the module>"
CRDS=(
	"v0.0.0-20240808203820-e69593239e49 config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml"
	"v0.0.0-20251020135558-286504b695bc machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineosconfigs.crd.yaml"
	"v0.0.0-20251020135558-286504b695bc machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineosbuilds.crd.yaml"
	"v0.0.0-20251020135558-286504b695bc machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigpools.crd.yaml"
)

if [ -f "${CACHE}/.complete" ]; then
	echo "openshift-api: cached in ${CACHE}"
	exit 0
fi
mkdir -p "${CACHE}/crds"
for entry in "${CRDS[@]}"; do
	version=${entry%% *}
	crd=${entry#* }
	dir=$(cd / && GOFLAGS=-mod=mod go mod download -json "${MODULE}@${version}" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
	if [ -z "${dir}" ] || [ ! -d "${dir}" ]; then
		echo "openshift-api: could not download ${MODULE}@${version}" >&2
		exit 1
	fi
	install -m 0644 "${dir}/${crd}" "${CACHE}/crds/$(basename "${crd}")"
done
touch "${CACHE}/.complete"
echo "openshift-api: ${#CRDS[@]} CRD(s) in ${CACHE}/crds"
