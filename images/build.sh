#!/usr/bin/env bash
# `make images`: both managers' OCI images, built offline from this repository, reproducibly
# (the same commit gives the same digests). No container engine is needed: each image is one
# layer written here — the manager, statically linked, plus the CA bundle and a passwd entry for
# its non-root user — in an OCI image layout (target/images/<name>/) and as an OCI archive
# (target/images/<name>-<version>.tar, for `ctr images import` or `skopeo copy oci-archive:`).
# The images' names and tag are the ones the release components reference; docs/images.md says
# how to push them. images/Containerfile builds the same for podman or docker users.
set -euo pipefail
cd "$(dirname "$0")/.."

REGISTRY="${IMAGE_REGISTRY:-ghcr.io/openshift-assisted/capoa-rs}"
VERSION="v$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
TARGET=x86_64-unknown-linux-gnu
OUT=target/images
# Every timestamp in the images: the commit's, so a rebuild of the commit is identical.
EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
CREATED=$(date -u -d "@${EPOCH}" +%Y-%m-%dT%H:%M:%SZ)
NONROOT=65532

# Static (glibc's static-pie): the image needs no libc. Paths are remapped so where the
# repository and the cargo home sit does not change the binary; symbols are stripped.
export RUSTFLAGS="-C target-feature=+crt-static --remap-path-prefix=${PWD}=/src --remap-path-prefix=${CARGO_HOME:-${HOME}/.cargo}=/cargo"
export CARGO_PROFILE_RELEASE_STRIP=symbols
cargo build --locked --release --target "${TARGET}" --bins -p bootstrap-provider -p controlplane-provider

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }

# Moves file $1 into the layout's blobs ($2) under its digest; prints "<digest> <size>".
put_blob() {
    local digest size
    digest=$(sha "$1")
    size=$(size "$1")
    mv "$1" "$2/${digest}"
    echo "${digest} ${size}"
}

# One image: $1 the binary (and image) name.
build_image() {
    local name=$1
    local work layout blobs
    work=$(mktemp -d)
    layout="${OUT}/${name}"
    rm -rf "${layout}"
    mkdir -p "${layout}/blobs/sha256" "${work}/root/usr/local/bin" "${work}/root/etc/ssl/certs"
    blobs="${layout}/blobs/sha256"

    install -m 0755 "target/${TARGET}/release/${name}" "${work}/root/usr/local/bin/manager"
    install -m 0644 /etc/ssl/certs/ca-certificates.crt "${work}/root/etc/ssl/certs/ca-certificates.crt"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n' \
        "${NONROOT}" "${NONROOT}" > "${work}/root/etc/passwd"
    printf 'root:x:0:\nnonroot:x:%s:\n' "${NONROOT}" > "${work}/root/etc/group"
    # The image's files alone must run the manager (no libc, no loader): try it in a chroot
    # of exactly them when we may.
    if [ "$(id -u)" -eq 0 ]; then
        chroot "${work}/root" /usr/local/bin/manager --help > /dev/null
    fi
    # Fixed order, owners and times: the same files give the same layer.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${EPOCH}" \
        --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
        -C "${work}/root" -cf "${work}/layer.tar" etc usr
    gzip -n -9 < "${work}/layer.tar" > "${work}/layer.tar.gz"
    local diff_id layer_digest layer_size config_digest config_size manifest_digest manifest_size
    diff_id=$(sha "${work}/layer.tar")
    read -r layer_digest layer_size < <(put_blob "${work}/layer.tar.gz" "${blobs}")

    printf '%s' "{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":\"${CREATED}\",\"config\":{\"User\":\"${NONROOT}:${NONROOT}\",\"Entrypoint\":[\"/usr/local/bin/manager\"],\"Env\":[\"PATH=/usr/local/bin\",\"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt\"],\"Labels\":{\"org.opencontainers.image.title\":\"${name}\",\"org.opencontainers.image.version\":\"${VERSION}\",\"org.opencontainers.image.licenses\":\"Apache-2.0\"}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:${diff_id}\"]},\"history\":[{\"created\":\"${CREATED}\",\"created_by\":\"images/build.sh\"}]}" \
        > "${work}/config.json"
    read -r config_digest config_size < <(put_blob "${work}/config.json" "${blobs}")

    printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:${config_digest}\",\"size\":${config_size}},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:${layer_digest}\",\"size\":${layer_size}}]}" \
        > "${work}/manifest.json"
    read -r manifest_digest manifest_size < <(put_blob "${work}/manifest.json" "${blobs}")

    printf '%s' '{"imageLayoutVersion":"1.0.0"}' > "${layout}/oci-layout"
    printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:${manifest_digest}\",\"size\":${manifest_size},\"annotations\":{\"org.opencontainers.image.ref.name\":\"${VERSION}\",\"io.containerd.image.name\":\"${REGISTRY}/${name}:${VERSION}\"}}]}" \
        > "${layout}/index.json"
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${EPOCH}" \
        -C "${layout}" -cf "${OUT}/${name}-${VERSION}.tar" oci-layout index.json blobs
    rm -rf "${work}"
    echo "${REGISTRY}/${name}:${VERSION} sha256:${manifest_digest} ($((layer_size / 1024 / 1024)) MiB compressed, $(($(stat -c %s "${layout}/../${name}-${VERSION}.tar") / 1024 / 1024)) MiB archive)"
}

mkdir -p "${OUT}"
for name in bootstrap-provider controlplane-provider; do
    build_image "${name}"
done
