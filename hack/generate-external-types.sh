#!/usr/bin/env bash
# Regenerates the typed Rust bindings for the external CRDs the providers use, with kopium:
#
#   external-types/src/capi.rs   cluster.x-k8s.io/v1beta2 Cluster, Machine, MachineSet,
#                                             MachineDeployment, MachineHealthCheck (CAPI core)
#   external-types/src/capm3.rs  infrastructure.cluster.x-k8s.io v1beta1 + v1beta2
#                                             Metal3Cluster, Metal3Machine, Metal3MachineTemplate (CAPM3)
#   external-types/src/metal3_io.rs   metal3.io/v1alpha1 BareMetalHost, PreprovisioningImage (BMO)
#
# Inputs (never committed):
#   * CAPI CRDs come from the Go module cache: `go mod download sigs.k8s.io/cluster-api@$CAPI_VERSION`
#     (core/config/crd/bases/). Needs `go` and the Go module proxy (or a warm module cache).
#   * Metal3 CRDs come from git clones or mirrors of the metal3-io repositories, read at the pinned
#     commits below with `git show` (the Go module proxy does not serve github.com/metal3-io/*).
#     Pass a directory holding them as the first argument or as $METAL3_SRC. Accepted layouts
#     for each repository <r> (cluster-api-provider-metal3, baremetal-operator):
#         $METAL3_SRC/<r>                 (a clone, bare or not)
#         $METAL3_SRC/metal3-io+<r>/repo  (a bare mirror)
#     or point $CAPM3_SRC / $BMO_SRC at the repositories directly. Example:
#         git clone --bare https://github.com/metal3-io/cluster-api-provider-metal3 /tmp/m3/cluster-api-provider-metal3
#         git clone --bare https://github.com/metal3-io/baremetal-operator /tmp/m3/baremetal-operator
#         hack/generate-external-types.sh /tmp/m3
#
# Tools: kopium $KOPIUM_VERSION (`cargo install kopium --locked --version $KOPIUM_VERSION`), python3 with
# PyYAML (hack/crd-for-kopium.py), git, go, rustfmt.
#
# It then refreshes the test CRDs derived from the Metal3 types (config/testing/metal3/) with:
#     cargo run -p external-types --example gen-metal3-test-crds
set -euo pipefail

CAPI_VERSION=v1.14.2
CAPM3_TAG=v1.13.2
CAPM3_COMMIT=e58645d868b99f12b2e33524e887789180ce1e12
BMO_TAG=v0.13.2
BMO_COMMIT=2b3ea2e1349eefe6f5dfc311ac388ce38911f57d
KOPIUM_VERSION=0.24.1

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KOPIUM_FLAGS=(--docs --derive=Default --derive=PartialEq --smart-derive-elision)

die() {
	echo "generate-external-types: error: $*" >&2
	exit 1
}

# ---- tools -------------------------------------------------------------------------------------
command -v kopium >/dev/null ||
	die "kopium not found; install it with: cargo install kopium --locked --version $KOPIUM_VERSION"
have_kopium=$(kopium --version | awk '{print $2}')
[[ $have_kopium == "$KOPIUM_VERSION" ]] ||
	die "kopium $have_kopium found, $KOPIUM_VERSION required (cargo install kopium --locked --version $KOPIUM_VERSION)"
command -v go >/dev/null || die "go not found (needed to fetch sigs.k8s.io/cluster-api@$CAPI_VERSION from the module proxy)"
command -v git >/dev/null || die "git not found"
command -v rustfmt >/dev/null || die "rustfmt not found"
python3 -c 'import yaml' 2>/dev/null || die "python3 with PyYAML is required (Debian: apt-get install python3-yaml)"

# ---- inputs ------------------------------------------------------------------------------------
capi_json=$(cd / && go mod download -json "sigs.k8s.io/cluster-api@$CAPI_VERSION") ||
	die "go mod download sigs.k8s.io/cluster-api@$CAPI_VERSION failed: $capi_json"
capi_dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$capi_json")
[[ -n $capi_dir ]] || die "go mod download sigs.k8s.io/cluster-api@$CAPI_VERSION gave no module directory: $capi_json"
CAPI_CRDS=$capi_dir/core/config/crd/bases
[[ -d $CAPI_CRDS ]] || die "CAPI CRD directory $CAPI_CRDS is missing (module download incomplete?)"

METAL3_SRC=${1:-${METAL3_SRC:-}}

# find_repo <name> <override>: prints a git directory holding the named metal3-io repository.
find_repo() {
	local name=$1 override=$2 candidates=() c
	if [[ -n $override ]]; then
		candidates=("$override")
	elif [[ -n $METAL3_SRC ]]; then
		candidates=("$METAL3_SRC/$name" "$METAL3_SRC/metal3-io+$name/repo" "$METAL3_SRC/metal3-io+$name")
	else
		die "no Metal3 sources given: pass a directory holding clones of metal3-io/$name (and its sibling) as the first argument or as METAL3_SRC (see the header of $0)"
	fi
	for c in "${candidates[@]}"; do
		if [[ -d $c ]] && git -C "$c" rev-parse --git-dir >/dev/null 2>&1; then
			echo "$c"
			return
		fi
	done
	die "no git clone of metal3-io/$name found (looked at: ${candidates[*]})"
}

# check_commit <repo> <tag> <commit>: the pinned commit must be present, and the tag (if present) must match.
check_commit() {
	local repo=$1 tag=$2 commit=$3 tagged
	git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null ||
		die "$repo does not contain commit $commit ($tag); fetch the tag first (git -C $repo fetch origin tag $tag)"
	if tagged=$(git -C "$repo" rev-parse -q --verify "refs/tags/$tag^{commit}" 2>/dev/null); then
		[[ $tagged == "$commit" ]] || die "$repo: tag $tag is $tagged, expected $commit"
	fi
}

CAPM3_REPO=$(find_repo cluster-api-provider-metal3 "${CAPM3_SRC:-}")
BMO_REPO=$(find_repo baremetal-operator "${BMO_SRC:-}")
check_commit "$CAPM3_REPO" "$CAPM3_TAG" "$CAPM3_COMMIT"
check_commit "$BMO_REPO" "$BMO_TAG" "$BMO_COMMIT"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# ---- generation --------------------------------------------------------------------------------

LINT_ALLOWS='#![allow(clippy::all, clippy::pedantic, clippy::nursery, rustdoc::all, missing_docs, unused_imports)]'

# kopium_module <module> <crd.yaml> <version> [extra kopium flags...]: prints `pub mod <module> { ... }`.
kopium_module() {
	local module=$1 crd=$2 version=$3
	shift 3
	[[ -s $crd ]] || die "input CRD $crd is missing or empty"
	python3 "$ROOT/hack/crd-for-kopium.py" "$version" <"$crd" >"$WORK/$module.json"
	echo
	echo "pub mod $module {"
	# Drop kopium's own header (it names the temporary input file); ours says where the CRD came from.
	kopium -f "$WORK/$module.json" "${KOPIUM_FLAGS[@]}" "$@" | sed '/^\/\/ WARNING: generated by kopium/d; /^\/\/ kopium command:/d; /^\/\/ kopium version:/d'
	echo "}"
}

# reexport <module> <Kind> <file>: re-exports Kind, KindSpec and (if generated) KindStatus.
reexport() {
	local module=$1 kind=$2 file=$3 names
	names="$kind, ${kind}Spec"
	grep -q "pub struct ${kind}Status " "$file" && names="$names, ${kind}Status"
	echo "pub use self::$module::{$names};"
}

# header <source> <schema flag> <module doc>: file header, lint allowances and the SOURCE constant.
header() {
	echo "// Generated by hack/generate-external-types.sh from $1. Do not edit."
	echo "// kopium $KOPIUM_VERSION, flags: ${KOPIUM_FLAGS[*]} $2"
	echo "//! $3"
	echo "$LINT_ALLOWS"
	echo
	echo "/// The upstream CRDs these types were generated from."
	echo "pub const SOURCE: &str = \"$1\";"
}


# CAPI core, v1beta2 only. No JsonSchema: these types are only read and patched, never used to make CRDs.
out=$ROOT/external-types/src/capi.rs
{
	header "sigs.k8s.io/cluster-api@$CAPI_VERSION core/config/crd/bases (cluster.x-k8s.io, v1beta2)" "--schema=disabled" \
		"Cluster API core types, \`cluster.x-k8s.io/v1beta2\`, from CAPI $CAPI_VERSION."
	for m in cluster:clusters machine:machines machineset:machinesets machinedeployment:machinedeployments machinehealthcheck:machinehealthchecks; do
		kopium_module "${m%%:*}" "$CAPI_CRDS/cluster.x-k8s.io_${m##*:}.yaml" v1beta2 --schema=disabled
	done
} >"$WORK/capi.rs"
{
	cat "$WORK/capi.rs"
	echo
	reexport cluster Cluster "$WORK/capi.rs"
	reexport machine Machine "$WORK/capi.rs"
	reexport machineset MachineSet "$WORK/capi.rs"
	reexport machinedeployment MachineDeployment "$WORK/capi.rs"
	reexport machinehealthcheck MachineHealthCheck "$WORK/capi.rs"
} >"$out"

# CAPM3: both served versions (v1beta2 is the storage version). With a derived JsonSchema, so that
# test CRDs can be generated from these types (config/testing/metal3).
mkdir -p "$WORK/capm3"
for k in metal3clusters metal3machines metal3machinetemplates; do
	git -C "$CAPM3_REPO" show "$CAPM3_COMMIT:config/crd/bases/infrastructure.cluster.x-k8s.io_$k.yaml" >"$WORK/capm3/$k.yaml" ||
		die "cannot read config/crd/bases/infrastructure.cluster.x-k8s.io_$k.yaml at $CAPM3_TAG from $CAPM3_REPO"
done
out=$ROOT/external-types/src/capm3.rs
{
	header "metal3-io/cluster-api-provider-metal3 $CAPM3_TAG ($CAPM3_COMMIT) config/crd/bases" "--schema=derived" \
		"CAPM3 types, \`infrastructure.cluster.x-k8s.io\` \`v1beta1\` and \`v1beta2\` (the storage version), from CAPM3 $CAPM3_TAG."
	for v in v1beta1 v1beta2; do
		{
			for m in metal3cluster metal3machine metal3machinetemplate; do
				kopium_module "$m" "$WORK/capm3/${m}s.yaml" "$v" --schema=derived
			done
		} >"$WORK/capm3-$v.rs"
		echo
		echo "/// \`infrastructure.cluster.x-k8s.io/$v\`"
		echo "pub mod $v {"
		# Post-processing: CAPM3 v1.13 requires image.checksum (may be ""), v1.14 makes it optional for
		# live-iso and oci:// images and omits it. `#[serde(default)]` reads both; we always write it.
		awk '
			/^pub struct [A-Za-z0-9]*Image \{/ { in_image = 1 }
			/^\}/ { in_image = 0 }
			in_image && /^    pub checksum: String,$/ { print "    #[serde(default)]"; patched++ }
			{ print }
			END { if (patched != 2) { print "checksum post-processing matched " patched " fields, expected 2" > "/dev/stderr"; exit 1 } }
		' "$WORK/capm3-$v.rs" || die "CAPM3 $v: image.checksum post-processing failed (did the CRD change?)"
		echo
		reexport metal3cluster Metal3Cluster "$WORK/capm3-$v.rs"
		reexport metal3machine Metal3Machine "$WORK/capm3-$v.rs"
		reexport metal3machinetemplate Metal3MachineTemplate "$WORK/capm3-$v.rs"
		echo "}"
	done
} >"$out"

# BMO: metal3.io/v1alpha1 (its only version).
mkdir -p "$WORK/bmo"
for k in baremetalhosts preprovisioningimages; do
	git -C "$BMO_REPO" show "$BMO_COMMIT:config/base/crds/bases/metal3.io_$k.yaml" >"$WORK/bmo/$k.yaml" ||
		die "cannot read config/base/crds/bases/metal3.io_$k.yaml at $BMO_TAG from $BMO_REPO"
done
out=$ROOT/external-types/src/metal3_io.rs
{
	header "metal3-io/baremetal-operator $BMO_TAG ($BMO_COMMIT) config/base/crds/bases (metal3.io, v1alpha1)" "--schema=derived" \
		"Metal3 baremetal-operator types, \`metal3.io/v1alpha1\`, from BMO $BMO_TAG. Boolean \`enum: [true, false]\` constraints were dropped before generation (hack/crd-for-kopium.py)."
	for m in baremetalhost preprovisioningimage; do
		kopium_module "$m" "$WORK/bmo/${m}s.yaml" v1alpha1 --schema=derived
	done
} >"$WORK/metal3_io.rs"
{
	cat "$WORK/metal3_io.rs"
	echo
	reexport baremetalhost BareMetalHost "$WORK/metal3_io.rs"
	reexport preprovisioningimage PreprovisioningImage "$WORK/metal3_io.rs"
} >"$out"

rustfmt --edition 2024 \
	"$ROOT/external-types/src/capi.rs" \
	"$ROOT/external-types/src/capm3.rs" \
	"$ROOT/external-types/src/metal3_io.rs"

echo "generated from CAPI $CAPI_VERSION, CAPM3 $CAPM3_TAG ($CAPM3_COMMIT), BMO $BMO_TAG ($BMO_COMMIT) with kopium $KOPIUM_VERSION"
echo "regenerating the Metal3 test CRDs from the new types"
cargo run --quiet -p external-types --example gen-metal3-test-crds -- "$ROOT"
