// Pins the cert-manager release whose CRDs the clusterctl test installs (see docs/testing.md).
// Only downloaded, never built: a module of its own so that its dependencies do not change the
// versions the control-plane binaries in ../go.mod are built with.
module github.com/openshift-assisted/capoa-rs/tests/testbed/cert-manager

go 1.26.0

require github.com/cert-manager/cert-manager v1.21.1
