//! Install backends: install-config.yaml, `openshift-install`, and the lab backend.
