#!/usr/bin/env bash
# Builds the wire-conformance Go program (tests/wire-conformance/go) into a cache outside the
# repository and prints the binary's path on stdout (everything else goes to stderr).
#
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/wire-conformance/<key>/bin/wire-conformance
#
# <key> is the first 16 hex digits of the SHA-256 of go/go.mod, go/go.sum, every go/*.go (sorted)
# and this script. It is its own cache, apart from the testbed's (tests/testbed/build.sh), so
# editing this program never rebuilds the testbed. Re-running is a no-op when the binary exists.
# Set CAPOA_WIRE_FORCE=1 to rebuild anyway. The Rust test (tests/wire-conformance/tests) runs
# this script itself; see docs/wire-conformance.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/go"

key=$(cat go.mod go.sum $(LC_ALL=C ls ./*.go) ../build.sh | sha256sum | cut -c1-16)
out="${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/wire-conformance/$key"
bin="$out/bin/wire-conformance"

if [[ -x "$bin" && "${CAPOA_WIRE_FORCE:-0}" != 1 ]]; then
	echo "wire-conformance: up to date: $bin" >&2
	echo "$bin"
	exit 0
fi

command -v go >/dev/null || {
	echo "wire-conformance: go is not on PATH; Go >= 1.26 is needed to build the wire-conformance program" >&2
	exit 1
}

# go.sum is complete: nothing is resolved at build time. The checksum database has no entry for
# the pinned client pseudo-version; its sum in go.sum comes from the module proxy.
export GOFLAGS="-mod=readonly -buildvcs=false"
export GONOSUMDB=github.com/openshift/assisted-service
export CGO_ENABLED=0

start=$(date +%s)
echo "wire-conformance: building into $out ($(go version | cut -d' ' -f3))" >&2
mkdir -p "$out/bin"
go build -trimpath -ldflags="-s -w" -o "$bin.tmp.$$" . >&2
mv "$bin.tmp.$$" "$bin"
echo "wire-conformance: built in $(($(date +%s) - start))s" >&2
echo "$bin"
