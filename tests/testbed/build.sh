#!/usr/bin/env bash
# Builds the real control plane the Rust test harness (tests/harness, crate `testbed`) starts:
# kube-apiserver, kube-controller-manager, etcd, the Cluster API core manager, clusterctl and
# kustomize, and a node's kubelet, kube-proxy and kube-scheduler, all with `go build` from the Go
# modules pinned in this directory's go.mod/go.sum; the CAPM3 manager and baremetal-operator from
# metal3/go.mod; cert-manager's controller, webhook and cainjector from cert-manager/go.mod; helm
# from helm/go.mod; the node's sandbox ("pause") program from pause/pause.c.
# It also collects the upstream manifests the harness needs from the Go module cache, and wraps
# the managers the node runs as pods into OCI images named as their manifests reference them.
#
# Output (never inside the repository):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/testbed/<key>/
#     bin/{etcd,kube-apiserver,kube-controller-manager,capi-manager,clusterctl,kustomize,
#         capm3-manager,baremetal-operator,kubelet,kube-proxy,kube-scheduler,
#         cert-manager-{controller,webhook,cainjector},helm,pause}
#     images/*.tar                            OCI archives for the node (`ctr images import`)
#     images/images.txt                       each archive's image reference
#     manifests/capi/core-components.yaml     CAPI core rendered with kustomize, as a release has it
#     manifests/capi/metadata.yaml            CAPI's clusterctl metadata
#     manifests/capi/crd/*.yaml               CAPI core CRD bases
#     manifests/cert-manager/cert-manager.yaml   cert-manager's chart rendered as its release does
#     manifests/capm3/infrastructure-components.yaml   CAPM3 rendered with kustomize
#     manifests/bmo/baremetal-operator.yaml   baremetal-operator's config/default rendered
#     manifests/bmo/crd/*.yaml                BMO CRD bases
#     versions.env                            what was built
#     .complete                               written last; the harness only uses a complete dir
#
# <key> is the first 16 hex digits of the SHA-256 of the files listed in key_files below, in
# that order; tests/harness/src/cache.rs computes the same key. Re-running is a no-op when the
# directory is complete. Set CAPOA_TESTBED_FORCE=1 to rebuild anyway.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

# Keep in sync with KEY_FILES in tests/harness/src/cache.rs.
key_files=(go.mod go.sum cert-manager/go.mod cert-manager/go.sum metal3/go.mod metal3/go.sum helm/go.mod helm/go.sum cmd/etcd/main.go pause/pause.c ../../images/oci-image.sh build.sh)
key=$(cat "${key_files[@]}" | sha256sum | cut -c1-16)
root="${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/testbed"
out="$root/$key"

if [[ -f "$out/.complete" && "${CAPOA_TESTBED_FORCE:-0}" != 1 ]]; then
	echo "testbed: up to date: $out"
	exit 0
fi

command -v go >/dev/null || {
	echo "testbed: go is not on PATH; Go >= 1.26 is needed to build the testbed" >&2
	exit 1
}

export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0
mkdir -p "$out/bin" "$out/manifests"
rm -f "$out/.complete"

now() { date +%s; }
start_all=$(now)
echo "testbed: building into $out ($(go version | cut -d' ' -f3), GOMAXPROCS=$(nproc))"

echo "testbed: downloading modules (go mod download)"
t=$(now)
go mod download
(cd cert-manager && go mod download)
(cd helm && go mod download)
(cd metal3 && go mod download)
echo "testbed:   modules ready in $(($(now) - t))s"

modver() { go list -m -f '{{.Version}}' "$1"; }
moddir() { go list -m -f '{{.Dir}}' "$1"; }
k8s_version=$(modver k8s.io/kubernetes)
etcd_version=$(modver go.etcd.io/etcd/server/v3)
capi_version=$(modver sigs.k8s.io/cluster-api)
kustomize_version=$(modver sigs.k8s.io/kustomize/kustomize/v5)
capi_dir=$(moddir sigs.k8s.io/cluster-api)
certmanager_version=$(cd cert-manager && go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager)
certmanager_dir=$(cd cert-manager && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
capm3_version=$(cd metal3 && modver github.com/metal3-io/cluster-api-provider-metal3)
capm3_dir=$(cd metal3 && moddir github.com/metal3-io/cluster-api-provider-metal3)
bmo_version=$(cd metal3 && modver github.com/metal3-io/baremetal-operator)
bmo_dir=$(cd metal3 && moddir github.com/metal3-io/baremetal-operator)
helm_version=$(cd helm && modver helm.sh/helm/v3)

# The binaries report their versions (clusterctl checks the management cluster's /version).
k8s_minor=${k8s_version#v1.}
k8s_minor=${k8s_minor%%.*}
build_date=1970-01-01T00:00:00Z
k8s_ldflags="-s -w
 -X k8s.io/component-base/version.gitVersion=$k8s_version
 -X k8s.io/component-base/version.gitMajor=1
 -X k8s.io/component-base/version.gitMinor=$k8s_minor
 -X k8s.io/component-base/version.gitTreeState=clean
 -X k8s.io/component-base/version.buildDate=$build_date"
capi_major_minor=${capi_version#v}
capi_ldflags="-s -w
 -X sigs.k8s.io/cluster-api/version.gitVersion=$capi_version
 -X sigs.k8s.io/cluster-api/version.gitMajor=${capi_major_minor%%.*}
 -X sigs.k8s.io/cluster-api/version.gitMinor=$(echo "$capi_major_minor" | cut -d. -f2)
 -X sigs.k8s.io/cluster-api/version.gitTreeState=clean
 -X sigs.k8s.io/cluster-api/version.buildDate=$build_date"

# build <binary name> <what> <ldflags> <package> [module dir]
build() {
	local name=$1 what=$2 ldflags=$3 pkg=$4 dir=${5:-.}
	if [[ -x "$out/bin/$name" && "${CAPOA_TESTBED_FORCE:-0}" != 1 ]]; then
		echo "testbed: $name already built"
		return
	fi
	echo "testbed: building $name ($what)"
	local t
	t=$(now)
	(cd "$dir" && go build -trimpath -ldflags="$ldflags" -o "$out/bin/$name.tmp" "$pkg")
	mv "$out/bin/$name.tmp" "$out/bin/$name"
	echo "testbed:   $name built in $(($(now) - t))s"
}

# kube-apiserver first: kube-controller-manager reuses most of its compiled packages.
build kube-apiserver "k8s.io/kubernetes $k8s_version" "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager "k8s.io/kubernetes $k8s_version" "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-controller-manager
build kube-scheduler "k8s.io/kubernetes $k8s_version" "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-scheduler
build kubelet "k8s.io/kubernetes $k8s_version" "$k8s_ldflags" k8s.io/kubernetes/cmd/kubelet
build kube-proxy "k8s.io/kubernetes $k8s_version" "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-proxy
build etcd "go.etcd.io/etcd/server/v3 $etcd_version" "-s -w" ./cmd/etcd
build capi-manager "sigs.k8s.io/cluster-api $capi_version, core manager" "$capi_ldflags" sigs.k8s.io/cluster-api/core
build clusterctl "sigs.k8s.io/cluster-api $capi_version" "$capi_ldflags" sigs.k8s.io/cluster-api/cmd/clusterctl
build kustomize "sigs.k8s.io/kustomize/kustomize/v5 $kustomize_version" "-s -w" sigs.k8s.io/kustomize/kustomize/v5
build capm3-manager "github.com/metal3-io/cluster-api-provider-metal3 $capm3_version" "-s -w" \
	github.com/metal3-io/cluster-api-provider-metal3 metal3
build baremetal-operator "github.com/metal3-io/baremetal-operator $bmo_version" "-s -w" \
	github.com/metal3-io/baremetal-operator metal3
certmanager_ldflags="-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$certmanager_version"
for c in controller webhook cainjector; do
	build "cert-manager-$c" "github.com/cert-manager/cert-manager $certmanager_version" "$certmanager_ldflags" \
		"github.com/cert-manager/cert-manager/cmd/$c" cert-manager
done
build helm "helm.sh/helm/v3 $helm_version" "-s -w" helm.sh/helm/v3/cmd/helm helm
echo "testbed: building pause (pause/pause.c)"
command -v gcc >/dev/null || {
	echo "testbed: gcc is not on PATH; it builds the node's pause program" >&2
	exit 1
}
gcc -static -Os -s -Wall -Wextra -Werror -o "$out/bin/pause" pause/pause.c

echo "testbed: collecting manifests"
t=$(now)
m="$out/manifests"
rm -rf "$m" && mkdir -p "$m/capi/crd" "$m/cert-manager" "$m/capm3" "$m/bmo/crd"
# CAPI core components as `make release-manifests` renders them: the release image, pulled only
# if not present.
capi_image=registry.k8s.io/cluster-api/cluster-api-controller:$capi_version
"$out/bin/kustomize" build "$capi_dir/core/config/default" |
	sed -e "s#gcr.io/k8s-staging-cluster-api/cluster-api-controller:main#$capi_image#" \
		-e 's#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#' \
		>"$m/capi/core-components.yaml"
cp "$capi_dir/metadata.yaml" "$m/capi/metadata.yaml"
cp "$capi_dir"/core/config/crd/bases/*.yaml "$m/capi/crd/"
# cert-manager's static manifests as its release makes them: the namespace, then the chart (its
# CRDs included) rendered by helm for the cert-manager namespace, without the post-install check.
chart=$(mktemp -d)
cp -r "$certmanager_dir/deploy/charts/cert-manager/." "$chart/"
chmod -R u+w "$chart"
cp "$certmanager_dir"/deploy/crds/crd-*.yaml "$chart/templates/"
sed -e "s/^version: v0.1.0/version: $certmanager_version/" -e "s/^appVersion: v0.1.0/appVersion: $certmanager_version/" \
	"$chart/Chart.template.yaml" >"$chart/Chart.yaml"
{
	cat "$certmanager_dir/deploy/manifests/01-namespace.yaml"
	"$out/bin/helm" template cert-manager "$chart" --namespace cert-manager --kube-version "$k8s_version" \
		--set installCRDs=true --set startupapicheck.enabled=false
} >"$m/cert-manager/cert-manager.yaml"
rm -rf "$chart"
# CAPM3 as its release renders it: the release's image tag.
capm3_image=quay.io/metal3-io/cluster-api-provider-metal3:$capm3_version
"$out/bin/kustomize" build "$capm3_dir/config/default" |
	sed "s#quay.io/metal3-io/cluster-api-provider-metal3:main#$capm3_image#" \
		>"$m/capm3/infrastructure-components.yaml"
cp "$capm3_dir/metadata.yaml" "$m/capm3/metadata.yaml"
cp "$bmo_dir"/config/base/crds/bases/*.yaml "$m/bmo/crd/"
# baremetal-operator as its config/namespace and config/default render it (webhooks, cert-manager
# certificate), with the image of the version built here, pulled only if not present.
bmo_image=quay.io/metal3-io/baremetal-operator:$bmo_version
{
	"$out/bin/kustomize" build "$bmo_dir/config/namespace"
	echo "---"
	"$out/bin/kustomize" build "$bmo_dir/config/default"
} | sed -e "s#image: quay.io/metal3-io/baremetal-operator\$#image: $bmo_image#" \
	-e 's#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#' \
	>"$m/bmo/baremetal-operator.yaml"
chmod -R u+w "$m"
echo "testbed:   manifests collected in $(($(now) - t))s"

# The node's images: each manager alone (static, CGO_ENABLED=0) at the path its manifest runs,
# as the non-root user its manifest asks for, named as the manifest references it.
echo "testbed: writing the node's images"
t=$(now)
rm -rf "$out/images" && mkdir -p "$out/images"
# image <binary> <reference> <path in the image> <user>
image() {
	local bin=$1 ref=$2 path=$3 user=$4 root
	root=$(mktemp -d)
	install -D -m 0755 "$out/bin/$bin" "$root$path"
	mkdir -p "$root/etc" "$root/tmp"
	chmod 1777 "$root/tmp"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/:/sbin/nologin\n' "$user" "$user" >"$root/etc/passwd"
	SOURCE_DATE_EPOCH=0 ../../images/oci-image.sh "$root" "$ref" "$path" "$user" "$root.layout" "$out/images/$bin.tar" >/dev/null
	rm -rf "$root" "$root.layout"
	echo "$ref $bin.tar" >>"$out/images/images.txt"
}
image pause localhost/capoa-testbed/pause:$k8s_version /pause 65535
image capi-manager "$capi_image" /manager 65532
image capm3-manager "$capm3_image" /manager 65532
image baremetal-operator "$bmo_image" /baremetal-operator 65532
for c in controller webhook cainjector; do
	image "cert-manager-$c" "quay.io/jetstack/cert-manager-$c:$certmanager_version" "/app/cmd/$c/$c" 1000
done
echo "testbed:   images written in $(($(now) - t))s"

cat >"$out/versions.env" <<EOF
KUBERNETES_VERSION=$k8s_version
ETCD_VERSION=$etcd_version
CLUSTER_API_VERSION=$capi_version
KUSTOMIZE_VERSION=$kustomize_version
CERT_MANAGER_VERSION=$certmanager_version
CAPM3_VERSION=$capm3_version
BMO_VERSION=$bmo_version
HELM_VERSION=$helm_version
PAUSE_IMAGE=localhost/capoa-testbed/pause:$k8s_version
EOF
touch "$out/.complete"
echo "testbed: done in $(($(now) - start_all))s: $out"
