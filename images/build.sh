#!/usr/bin/env bash
# `make images`: both managers' OCI images, built offline from this repository, reproducibly
# (the same commit gives the same digests). No container engine is needed: each image is one
# layer written by images/oci-image.sh — the manager, statically linked, plus the CA bundle and a passwd entry for
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
NONROOT=65532

# Static (glibc's static-pie): the image needs no libc. Paths are remapped so where the
# repository and the cargo home sit does not change the binary; symbols are stripped.
export RUSTFLAGS="-C target-feature=+crt-static --remap-path-prefix=${PWD}=/src --remap-path-prefix=${CARGO_HOME:-${HOME}/.cargo}=/cargo"
export CARGO_PROFILE_RELEASE_STRIP=symbols
cargo build --locked --release --target "${TARGET}" --bins -p bootstrap-provider -p controlplane-provider

# One image: $1 the binary (and image) name.
build_image() {
    local name=$1 work
    work=$(mktemp -d)
    mkdir -p "${work}/root/usr/local/bin" "${work}/root/etc/ssl/certs"
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
    local archive="${OUT}/${name}-${VERSION}.tar" ref digest layer_size
    read -r ref digest layer_size < <(SOURCE_DATE_EPOCH="${EPOCH}" images/oci-image.sh \
        "${work}/root" "${REGISTRY}/${name}:${VERSION}" /usr/local/bin/manager "${NONROOT}" \
        "${OUT}/${name}" "${archive}")
    rm -rf "${work}"
    echo "${ref} ${digest} ($((layer_size / 1024 / 1024)) MiB compressed, $(($(stat -c %s "${archive}") / 1024 / 1024)) MiB archive)"
}

mkdir -p "${OUT}"
for name in bootstrap-provider controlplane-provider; do
    build_image "${name}"
done
