#!/usr/bin/env bash
# Writes one single-layer OCI image, reproducibly, without a container engine:
#
#   images/oci-image.sh ROOTFS REF ENTRYPOINT USER LAYOUT ARCHIVE
#
# ROOTFS     a directory: the layer's files (owners and times are normalised)
# REF        the image's name, e.g. ghcr.io/openshift-assisted/capoa-rs/bootstrap-provider:v0.1.0
# ENTRYPOINT the path of the program in ROOTFS that the image runs
# USER       the numeric user (and group) it runs as
# LAYOUT     the OCI image layout directory to write (replaced)
# ARCHIVE    the same layout as an OCI archive (`ctr images import`, `skopeo copy oci-archive:`)
#
# SOURCE_DATE_EPOCH (required) is every timestamp: the same files give the same digests.
# Prints "REF sha256:<manifest digest> <layer size>".
# Used by images/build.sh (our managers) and tests/testbed/build.sh (the test bed's images).
set -euo pipefail

if [ $# -ne 6 ]; then
    sed -n '2,16p' "$0" >&2
    exit 2
fi
rootfs=$1 ref=$2 entrypoint=$3 user=$4 layout=$5 archive=$6
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set}"
created=$(date -u -d "@${SOURCE_DATE_EPOCH}" +%Y-%m-%dT%H:%M:%SZ)
name=${ref%:*}
tag=${ref##*:}

sha() { sha256sum "$1" | cut -d' ' -f1; }
# Moves file $1 into the layout's blobs under its digest; prints "<digest> <size>".
put_blob() {
    local digest size
    digest=$(sha "$1")
    size=$(stat -c %s "$1")
    mv "$1" "${layout}/blobs/sha256/${digest}"
    echo "${digest} ${size}"
}

work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
rm -rf "${layout}"
mkdir -p "${layout}/blobs/sha256" "$(dirname "${archive}")"

# Fixed order, owners, modes of the root and times: the same files give the same layer.
chmod 0755 "${rootfs}"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH}" \
    --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "${rootfs}" -cf "${work}/layer.tar" .
gzip -n -9 < "${work}/layer.tar" > "${work}/layer.tar.gz"
diff_id=$(sha "${work}/layer.tar")
read -r layer_digest layer_size < <(put_blob "${work}/layer.tar.gz")

printf '%s' "{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":\"${created}\",\"config\":{\"User\":\"${user}:${user}\",\"Entrypoint\":[\"${entrypoint}\"],\"Env\":[\"PATH=/usr/local/bin:/usr/bin:/bin\",\"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt\"],\"Labels\":{\"org.opencontainers.image.title\":\"${name##*/}\",\"org.opencontainers.image.version\":\"${tag}\"}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:${diff_id}\"]},\"history\":[{\"created\":\"${created}\",\"created_by\":\"images/oci-image.sh\"}]}" \
    > "${work}/config.json"
read -r config_digest config_size < <(put_blob "${work}/config.json")

printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:${config_digest}\",\"size\":${config_size}},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:${layer_digest}\",\"size\":${layer_size}}]}" \
    > "${work}/manifest.json"
read -r manifest_digest manifest_size < <(put_blob "${work}/manifest.json")

printf '%s' '{"imageLayoutVersion":"1.0.0"}' > "${layout}/oci-layout"
printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:${manifest_digest}\",\"size\":${manifest_size},\"annotations\":{\"org.opencontainers.image.ref.name\":\"${tag}\",\"io.containerd.image.name\":\"${ref}\"}}]}" \
    > "${layout}/index.json"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH}" \
    -C "${layout}" -cf "${archive}" oci-layout index.json blobs
echo "${ref} sha256:${manifest_digest} ${layer_size}"
