//! The committed `config/` is exactly what the Rust types generate (`make generate`).

use std::path::PathBuf;

use api_conformance::repo_root;

#[test]
fn committed_config_matches_the_generated_files() {
    let config = repo_root().join("config");
    let mut drifted = Vec::new();
    for manifest in [
        bootstrap_provider::manifests::provider_manifest(),
        controlplane_provider::manifests::provider_manifest(),
    ] {
        for (relative, generated) in manifest.files().expect("manifests generate") {
            let path: PathBuf = config.join(&relative);
            match std::fs::read_to_string(&path) {
                Ok(committed) if committed == generated => {}
                Ok(_) => drifted.push(format!("{} differs", relative.display())),
                Err(_) => drifted.push(format!("{} is missing", relative.display())),
            }
        }
    }
    assert!(
        drifted.is_empty(),
        "config/ is out of date, run `make generate`: {drifted:?}"
    );
}

#[test]
fn every_crd_carries_the_contract_label_cluster_api_needs() {
    for crd in bootstrap_provider::manifests::crds() {
        let labels = crd.metadata.labels.unwrap_or_default();
        assert_eq!(
            labels.get("cluster.x-k8s.io/v1beta2").map(String::as_str),
            Some("v1alpha2"),
            "{:?}",
            crd.metadata.name
        );
    }
    let crd = &controlplane_provider::manifests::crds()[0];
    let labels = crd.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("cluster.x-k8s.io/v1beta2").map(String::as_str),
        Some("v1alpha3")
    );
}

#[test]
fn crd_names_follow_cluster_api_naming() {
    // CAPI computes `<lowercase plural kind>.<group>`; a mismatch breaks its contract lookup.
    let names: Vec<String> = api_conformance::all_crds()
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .collect();
    for expected in [
        "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io",
        "openshiftassistedconfigtemplates.bootstrap.cluster.x-k8s.io",
        "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io",
        "infraenvs.agent-install.openshift.io",
        "agents.agent-install.openshift.io",
        "nmstateconfigs.agent-install.openshift.io",
        "agentclusterinstalls.extensions.hive.openshift.io",
        "clusterdeployments.hive.openshift.io",
        "clusterimagesets.hive.openshift.io",
    ] {
        assert!(
            names.iter().any(|name| name == expected),
            "missing CRD {expected}: {names:?}"
        );
    }
}

#[test]
fn components_have_one_namespace_and_a_manager_container() {
    for manifest in [
        bootstrap_provider::manifests::provider_manifest(),
        controlplane_provider::manifests::provider_manifest(),
    ] {
        let documents =
            api_conformance::parse_documents(&manifest.components().expect("components"));
        let namespaces = documents
            .iter()
            .filter(|d| d["kind"] == "Namespace")
            .count();
        assert_eq!(
            namespaces, 1,
            "{}: clusterctl needs exactly one Namespace",
            manifest.components_file
        );
        let deployment = documents
            .iter()
            .find(|d| d["kind"] == "Deployment")
            .expect("a Deployment");
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["name"], "manager");
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(container["securityContext"]["runAsNonRoot"], true);
        for document in &documents {
            assert_eq!(
                document["metadata"]["labels"]["cluster.x-k8s.io/provider"],
                manifest.provider_label,
                "{}",
                document["metadata"]["name"]
            );
        }
        let image = container["image"].as_str().expect("image");
        assert!(
            image.starts_with("${OPENSHIFT_ASSISTED_") && image.contains(":="),
            "image is a clusterctl variable with a default: {image}"
        );
    }
}

#[test]
fn components_reference_only_our_clusterctl_variables() {
    // clusterctl runs envsubst over the whole file: a `$NAME` in a description would be
    // substituted (or fail `clusterctl init` as an unset variable).
    for manifest in [
        bootstrap_provider::manifests::provider_manifest(),
        controlplane_provider::manifests::provider_manifest(),
    ] {
        let components = manifest.components().expect("components");
        for (index, _) in components.match_indices('$') {
            let rest = &components[index + 1..];
            let next = rest.chars().next().unwrap_or(' ');
            let ours = rest.starts_with("{OPENSHIFT_ASSISTED_");
            assert!(
                ours || !(next == '{' || next.is_ascii_alphabetic() || next == '_'),
                "{}: stray variable near {:?}",
                manifest.components_file,
                &rest[..rest.len().min(40)]
            );
        }
    }
}

/// The webhook pieces of a release fit together: every CRD converted by webhook points at the
/// provider's webhook Service with cert-manager injecting the CA of the Certificate whose Secret
/// the manager mounts where it reads its certificate.
#[test]
fn webhook_service_certificate_and_crds_fit_together() {
    for manifest in [
        bootstrap_provider::manifests::provider_manifest(),
        controlplane_provider::manifests::provider_manifest(),
    ] {
        let documents =
            api_conformance::parse_documents(&manifest.components().expect("components"));
        let find = |kind: &str, name: &str| {
            documents
                .iter()
                .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
                .unwrap_or_else(|| panic!("{}: no {kind} {name}", manifest.components_file))
        };
        let ns = manifest.namespace;
        let service_name = manifest.webhook_service_name();
        let service = find("Service", &service_name);
        assert_eq!(service["spec"]["ports"][0]["port"], 443);
        assert_eq!(service["spec"]["ports"][0]["targetPort"], "webhook");
        let certificate = find(
            "Certificate",
            &format!("{}serving-cert", manifest.name_prefix),
        );
        let dns: Vec<&str> = certificate["spec"]["dnsNames"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d.as_str())
            .collect();
        assert!(
            dns.contains(&format!("{service_name}.{ns}.svc").as_str()),
            "{dns:?}"
        );
        let secret = certificate["spec"]["secretName"].as_str().unwrap();
        let deployment = documents
            .iter()
            .find(|d| d["kind"] == "Deployment")
            .unwrap();
        let pod = &deployment["spec"]["template"]["spec"];
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["secret"]["secretName"] == secret)
            .expect("the certificate's Secret is a volume");
        let mount = pod["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == volume["name"])
            .expect("and is mounted");
        assert_eq!(mount["mountPath"], manager::manifests::WEBHOOK_CERT_DIR);
        assert!(
            pod["containers"][0]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "webhook"
                    && p["containerPort"] == manager::manifests::WEBHOOK_PORT)
        );
        for crd in documents
            .iter()
            .filter(|d| d["kind"] == "CustomResourceDefinition")
            .filter(|d| d["spec"]["conversion"]["strategy"] == "Webhook")
        {
            let name = crd["metadata"]["name"].as_str().unwrap();
            assert_eq!(
                crd["metadata"]["annotations"][manager::manifests::INJECT_CA_FROM],
                format!("{ns}/{}", certificate["metadata"]["name"].as_str().unwrap()),
                "{name}"
            );
            let service_ref = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
            assert_eq!(service_ref["name"], service_name.as_str(), "{name}");
            assert_eq!(service_ref["namespace"], ns, "{name}");
            assert_eq!(service_ref["path"], "/convert", "{name}");
        }
    }
}
