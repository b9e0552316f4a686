//! Admission of OpenshiftAssistedControlPlanes: what the assisted installer would refuse is
//! refused when it is written, with a message naming the field, instead of showing up later as
//! a condition. Pure: the webhook server (`manager::webhook`) hands in the objects.
//!
//! The controller keeps its own checks (`InvalidDistributionVersion` and friends): objects
//! written while the webhook was not installed still get a condition.

use std::net::IpAddr;

use manager::webhook::Refusal;
use provider_api::controlplane::api::{
    OpenshiftAssistedControlPlane, OpenshiftAssistedControlPlaneMachineTemplate, default_deletion,
};
use serde_json::{Value, json};

use crate::controller::release::{MANY_MASTERS_SINCE, Version, parse_distribution_version};

/// Where the control-plane manager serves this validation (kubebuilder's path convention).
pub const VALIDATE_PATH: &str =
    "/validate-controlplane-cluster-x-k8s-io-v1alpha3-openshiftassistedcontrolplane";

/// Where the control-plane manager serves the defaulting of the machine template.
pub const MUTATE_PATH: &str =
    "/mutate-controlplane-cluster-x-k8s-io-v1alpha3-openshiftassistedcontrolplane";

/// The annotation Cluster API's topology controller puts on the objects of its server-side
/// apply dry runs; such requests must not be refused for fields the topology fills in later.
pub const TOPOLOGY_DRY_RUN_ANNOTATION: &str = "topology.cluster.x-k8s.io/dry-run";

/// Why a control plane is refused: one entry per problem, each naming its field.
pub fn problems(
    new: &OpenshiftAssistedControlPlane,
    old: Option<&OpenshiftAssistedControlPlane>,
) -> Vec<String> {
    let mut out = Vec::new();
    let spec = &new.spec;
    let version = match parse_distribution_version(&spec.distribution_version) {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(format!("spec.distributionVersion: {e}"));
            None
        }
    };
    if let Some(problem) = spec.version.as_deref().and_then(kubernetes_version_problem) {
        out.push(format!("spec.version: {problem}"));
    }
    let replicas = spec.replicas.unwrap_or(1);
    if let Some(problem) = replicas_problem(replicas, version.as_ref()) {
        out.push(format!("spec.replicas: {problem}"));
    }
    if let Some(config) = &spec.config {
        for (field, vips) in [
            ("spec.config.apiVIPs", &config.api_vips),
            ("spec.config.ingressVIPs", &config.ingress_vips),
        ] {
            for (i, vip) in vips.iter().enumerate() {
                if vip.parse::<IpAddr>().is_err() {
                    out.push(format!("{field}[{i}]: {vip:?} is not an IP address"));
                }
            }
        }
        if crate::controller::hive::vips_unpaired(config) {
            out.push(crate::controller::hive::HiveError::UnpairedVips.to_string());
        }
        out.extend(config_format_problems(config, spec.replicas));
    }
    if let Some(p) = owned_override_problem(new) {
        out.push(p);
    }
    // The control-plane Machines' configs are made from this spec: their admission's rules.
    out.extend(provider_api::bootstrap::validation::spec_problems(
        &spec.openshift_assisted_config_spec,
        None,
        "spec.openshiftAssistedConfigSpec",
    ));
    out.extend(machine_template_problems(&spec.machine_template));
    if let Some(old) = old {
        out.extend(update_problems(old, new, version.as_ref()));
        if let (Some(before), Some(after)) = (
            old.spec.machine_template.infrastructure_ref(),
            spec.machine_template.infrastructure_ref(),
        ) && (&before.api_group, &before.kind) != (&after.api_group, &after.kind)
        {
            // Both shapes named: the defaulting webhook may have copied one into the other.
            out.push(format!(
                "{SPEC_REF} (or CAPOA's {FLAT_REF}): the kind cannot change (from {} {} to {} \
                 {}); only the template name can, to point at another template of the same kind",
                before.api_group, before.kind, after.api_group, after.kind
            ));
        }
    }
    out
}

/// `spec.version` is a Kubernetes version as Cluster API writes it: `v`, then semantic
/// version (`v1.30.3`, `v1.30.3+a1b2c3d` as OpenShift's kubelets report it).
fn kubernetes_version_problem(version: &str) -> Option<String> {
    let refuse = || {
        Some(format!(
            "{version:?} is not a Kubernetes version (e.g. v1.30.3: the Kubernetes of the \
             release in spec.distributionVersion, as Cluster API's topology version)"
        ))
    };
    let Some(rest) = version.strip_prefix('v') else {
        return refuse();
    };
    let (rest, build) = rest
        .split_once('+')
        .map_or((rest, None), |(r, b)| (r, Some(b)));
    let (core, pre) = rest
        .split_once('-')
        .map_or((rest, None), |(c, p)| (c, Some(p)));
    let numbers: Vec<&str> = core.split('.').collect();
    let number_ok = |n: &&str| {
        !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && (n.len() == 1 || !n.starts_with('0'))
    };
    let identifiers_ok = |s: Option<&str>| {
        s.is_none_or(|s| {
            s.split('.').all(|id| {
                !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
        })
    };
    if numbers.len() == 3
        && numbers.iter().all(number_ok)
        && identifiers_ok(pre)
        && identifiers_ok(build)
    {
        None
    } else {
        refuse()
    }
}

const FLAT_REF: &str = "spec.machineTemplate.infrastructureRef";
const SPEC_REF: &str = "spec.machineTemplate.spec.infrastructureRef";

/// The machine template in its two shapes (CAPOA's flat one and Cluster API v1beta2's
/// `spec`): one infrastructure reference must be set, and where both shapes are set they
/// must agree. A flat `deletion` equal to the schema's default yields to `spec.deletion`
/// (the apiserver fills it in whenever it is unset).
fn machine_template_problems(
    template: &OpenshiftAssistedControlPlaneMachineTemplate,
) -> Vec<String> {
    let mut out = Vec::new();
    let inner = template.spec.clone().unwrap_or_default();
    match (&template.infrastructure_ref, &inner.infrastructure_ref) {
        (None, None) => out.push(format!(
            "{SPEC_REF}: required: name the infrastructure template of the control-plane \
             Machines there (or in CAPOA's {FLAT_REF})"
        )),
        (Some(flat), Some(nested)) if flat != nested => out.push(format!(
            "{FLAT_REF} ({} {} {}) differs from {SPEC_REF} ({} {} {}): set one of them, or \
             both to the same template",
            flat.api_group, flat.kind, flat.name, nested.api_group, nested.kind, nested.name
        )),
        _ => {}
    }
    if let (Some(flat), Some(nested)) = (&template.deletion, &inner.deletion)
        && flat != nested
        && *flat != default_deletion()
    {
        out.push(format!(
            "spec.machineTemplate.deletion ({}) differs from spec.machineTemplate.spec.deletion \
             ({}): set one of them, or both to the same timeouts",
            serde_json::to_string(flat).unwrap_or_default(),
            serde_json::to_string(nested).unwrap_or_default()
        ));
    }
    out
}

/// What the installer would refuse in the config's names, key and VIPs (the domain's format
/// rules, shared with assisted-core's checks of the AgentClusterInstall).
fn config_format_problems(
    config: &provider_api::controlplane::api::OpenshiftAssistedControlPlaneConfigSpec,
    replicas: Option<i32>,
) -> Vec<String> {
    use assisted_core::domain::formats::{
        dns_label_problem, dns_subdomain_problem, ssh_keys_problem,
    };
    let mut out = Vec::new();
    if let Some(p) = dns_subdomain_problem(&config.base_domain) {
        out.push(format!("spec.config.baseDomain: {p}"));
    }
    if let Some(p) = config.cluster_name.as_deref().and_then(dns_label_problem) {
        out.push(format!("spec.config.clusterName: {p}"));
    }
    // Empty is unset (the templates default it to "").
    if let Some(p) = config
        .ssh_authorized_key
        .as_deref()
        .filter(|k| !k.trim().is_empty())
        .and_then(ssh_keys_problem)
    {
        out.push(format!("spec.config.sshAuthorizedKey: {p}"));
    }
    if let Some(proxy) = &config.proxy
        && let Err(e) = assisted_core::domain::formats::check_proxy(
            proxy.http_proxy.as_deref(),
            proxy.https_proxy.as_deref(),
        )
    {
        out.push(format!("spec.config.{e}"));
    }
    if replicas == Some(1) && !(config.api_vips.is_empty() && config.ingress_vips.is_empty()) {
        out.push(
            "spec.config.apiVIPs/ingressVIPs: a single-node cluster has no virtual IPs (its node \
             serves the API and ingress); leave them empty"
                .into(),
        );
    }
    for (api, ingress) in config.api_vips.iter().zip(&config.ingress_vips) {
        match (api.parse::<IpAddr>(), ingress.parse::<IpAddr>()) {
            (Ok(a), Ok(i)) if a == i => out.push(format!(
                "spec.config.ingressVIPs: {ingress} is also an API VIP; the API and ingress VIPs \
                 must differ"
            )),
            (Ok(a), Ok(i)) if a.is_ipv4() != i.is_ipv4() => out.push(format!(
                "spec.config.ingressVIPs: {ingress} and API VIP {api} are of different IP \
                 families; list them in the same order (IPv4 with IPv4, IPv6 with IPv6)"
            )),
            _ => {}
        }
    }
    out
}

/// Changes that would rewrite a cluster the installer already fixed: its name and domain
/// (Hive makes them immutable on the ClusterDeployment; the Metal3Cluster endpoint keeps the
/// old name) and a release older than the one asked for before (OpenShift has no downgrades).
fn update_problems(
    old: &OpenshiftAssistedControlPlane,
    new: &OpenshiftAssistedControlPlane,
    new_version: Option<&Version>,
) -> Vec<String> {
    let mut out = Vec::new();
    let config = |cp: &OpenshiftAssistedControlPlane| {
        let c = cp.spec.config.as_ref();
        (
            c.map(|c| c.base_domain.clone()).unwrap_or_default(),
            c.and_then(|c| c.cluster_name.clone()),
        )
    };
    let ((old_domain, old_name), (new_domain, new_name)) = (config(old), config(new));
    if !old_domain.is_empty() && old_domain != new_domain {
        out.push(format!(
            "spec.config.baseDomain cannot change (from {old_domain:?} to {new_domain:?}): the \
             cluster's names and certificates are made for it; create a new cluster instead"
        ));
    }
    if old_name != new_name {
        let shown = |n: &Option<String>| n.clone().unwrap_or_else(|| "unset".into());
        out.push(format!(
            "spec.config.clusterName cannot change (from {} to {}): create a new cluster instead",
            shown(&old_name),
            shown(&new_name)
        ));
    }
    if let (Ok(before), Some(after)) = (
        parse_distribution_version(&old.spec.distribution_version),
        new_version,
    ) && (after.major, after.minor, after.patch) < (before.major, before.minor, before.patch)
    {
        out.push(format!(
            "spec.distributionVersion: {after} is older than {before}; OpenShift clusters are \
             not downgraded"
        ));
    }
    out
}

/// The user's install-config override may not set what the control plane owns (the pull
/// secret, base domain, cluster name, another platform).
fn owned_override_problem(oacp: &OpenshiftAssistedControlPlane) -> Option<String> {
    use provider_api::controlplane::api::INSTALL_CONFIG_OVERRIDE_ANNOTATION;
    let text = oacp
        .metadata
        .annotations
        .as_ref()?
        .get(INSTALL_CONFIG_OVERRIDE_ANNOTATION)?;
    // Not JSON at all is the controller's error (InstallConfigError), said there.
    let doc: Value = serde_json::from_str(text).ok()?;
    assisted_core::domain::formats::owned_override_problem(&doc)
        .map(|p| format!("annotation {INSTALL_CONFIG_OVERRIDE_ANNOTATION}: {p}"))
}

/// The control-plane sizes the assisted installer installs: one node (SNO), three, and from
/// 4.18 four or five.
fn replicas_problem(replicas: i32, version: Option<&Version>) -> Option<String> {
    match replicas {
        1 | 3 => None,
        4 | 5 => match version {
            Some(v) if (v.major, v.minor) < MANY_MASTERS_SINCE => Some(format!(
                "{replicas} control-plane nodes need OpenShift {}.{} or newer (distributionVersion is {v})",
                MANY_MASTERS_SINCE.0, MANY_MASTERS_SINCE.1
            )),
            _ => None,
        },
        2 => Some(
            "2 control-plane nodes need an arbiter node, which this provider does not create; \
             use 1 (single-node OpenShift) or 3"
                .into(),
        ),
        _ => Some(format!(
            "{replicas} is not a control-plane size the assisted installer installs: use 1 \
             (single-node OpenShift), 3, or from OpenShift {}.{} 4 or 5",
            MANY_MASTERS_SINCE.0, MANY_MASTERS_SINCE.1
        )),
    }
}

/// The JSON Patch that makes the machine template's two shapes agree: whichever of
/// `infrastructureRef` and `deletion` the user wrote in one shape (CAPOA's flat one, Cluster API
/// v1beta2's `spec`) is copied to the other, so Cluster API's contract helpers and CAPOA's
/// tooling both find it. On an update where both are set and differ, the one the user changed
/// is copied over the one left as it was; otherwise a flat `deletion` equal to the schema's
/// default yields to `spec.deletion`. Anything else that differs is left for [`problems`] to
/// refuse. Pure, on the request's JSON (fields this version does not know are kept).
pub fn default_patch(request: &Value) -> Result<Vec<Value>, Refusal> {
    let template = &request["object"]["spec"]["machineTemplate"];
    if !template.is_object() {
        return Ok(Vec::new());
    }
    let old = &request["oldObject"]["spec"]["machineTemplate"];
    let default_deletion = serde_json::to_value(default_deletion()).unwrap_or_default();
    let mut out = Vec::new();
    let mut spec_missing = !template["spec"].is_object();
    for field in ["infrastructureRef", "deletion"] {
        let (flat, nested) = (&template[field], &template["spec"][field]);
        let (old_flat, old_nested) = (&old[field], &old["spec"][field]);
        let copy_to_flat = match (flat.is_null(), nested.is_null()) {
            (_, _) if flat == nested => continue,
            (true, true) => continue,
            (true, false) => true,
            (false, true) => false,
            (false, false) if !old.is_null() && flat == old_flat && nested != old_nested => true,
            (false, false) if !old.is_null() && nested == old_nested && flat != old_flat => false,
            (false, false) if field == "deletion" && *flat == default_deletion => true,
            (false, false) => continue,
        };
        let base = "/spec/machineTemplate";
        if copy_to_flat {
            let op = if flat.is_null() { "add" } else { "replace" };
            out.push(json!({"op": op, "path": format!("{base}/{field}"), "value": nested}));
        } else if spec_missing {
            out.push(json!({"op": "add", "path": format!("{base}/spec"), "value": {field: flat}}));
            spec_missing = false;
        } else {
            let op = if nested.is_null() { "add" } else { "replace" };
            out.push(json!({"op": op, "path": format!("{base}/spec/{field}"), "value": flat}));
        }
    }
    Ok(out)
}

/// The answer to an `AdmissionReview` v1 request about a control plane.
pub fn review(request: &Value) -> Result<Vec<String>, Refusal> {
    let object = &request["object"];
    let dry_run = request["dryRun"].as_bool() == Some(true);
    let annotated = object["metadata"]["annotations"]
        .get(TOPOLOGY_DRY_RUN_ANNOTATION)
        .is_some();
    if dry_run && annotated {
        return Ok(Vec::new());
    }
    let new: OpenshiftAssistedControlPlane =
        serde_json::from_value(object.clone()).map_err(|e| {
            Refusal::because(format!(
                "the object is not an OpenshiftAssistedControlPlane: {e}"
            ))
        })?;
    let old: Option<OpenshiftAssistedControlPlane> = match &request["oldObject"] {
        Value::Null => None,
        o => Some(
            serde_json::from_value(o.clone())
                .map_err(|e| Refusal::because(format!("the old object does not parse: {e}")))?,
        ),
    };
    manager::webhook::decision(problems(&new, old.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn oacp(spec: Value) -> OpenshiftAssistedControlPlane {
        let mut full = json!({
            "distributionVersion": "4.19.0",
            "replicas": 3,
            "machineTemplate": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "cp"}},
            "openshiftAssistedConfigSpec": {},
            "config": {"baseDomain": "example.com", "apiVIPs": ["192.168.1.5"], "ingressVIPs": ["192.168.1.4"]},
        });
        for (k, v) in spec.as_object().unwrap() {
            full[k] = v.clone();
        }
        serde_json::from_value(json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3",
            "kind": "OpenshiftAssistedControlPlane",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": full,
        }))
        .unwrap()
    }

    #[test]
    fn a_valid_control_plane_passes() {
        assert_eq!(problems(&oacp(json!({})), None), Vec::<String>::new());
        let sno = oacp(json!({"replicas": 1, "config": {"baseDomain": "e.com"}}));
        assert_eq!(problems(&sno, None), Vec::<String>::new());
    }

    #[test]
    fn the_control_plane_machines_config_follows_the_bootstrap_providers_rules() {
        let bad = oacp(json!({"openshiftAssistedConfigSpec": {"nodeRegistration": {
            "kubeletExtraLabels": ["node-role.kubernetes.io/master=", "zone"]
        }}}));
        let p = problems(&bad, None);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with(
                "spec.openshiftAssistedConfigSpec.nodeRegistration.kubeletExtraLabels[1]:"
            ),
            "{p:?}"
        );
    }

    #[test]
    fn old_or_unparseable_versions_are_refused_naming_the_field() {
        for v in ["4.12.0", "latest", "4.x"] {
            let p = problems(&oacp(json!({"distributionVersion": v})), None);
            assert_eq!(p.len(), 1, "{v}: {p:?}");
            assert!(p[0].starts_with("spec.distributionVersion: "), "{p:?}");
        }
    }

    #[test]
    fn control_plane_sizes_follow_the_assisted_installer() {
        for (replicas, version, ok) in [
            (1, "4.19.0", true),
            (3, "4.14.0", true),
            (4, "4.18.0", true),
            (5, "4.20.1", true),
            (4, "4.17.9", false),
            (2, "4.20.0", false),
            (0, "4.20.0", false),
            (6, "4.20.0", false),
            (-1, "4.20.0", false),
        ] {
            // A single node has no VIPs.
            let config = if replicas == 1 {
                json!({"baseDomain": "e.com"})
            } else {
                json!({"baseDomain": "e.com", "apiVIPs": ["10.0.0.5"], "ingressVIPs": ["10.0.0.4"]})
            };
            let p = problems(
                &oacp(
                    json!({"replicas": replicas, "distributionVersion": version, "config": config}),
                ),
                None,
            );
            assert_eq!(p.is_empty(), ok, "{replicas} on {version}: {p:?}");
            if !ok {
                assert!(p[0].starts_with("spec.replicas: "), "{p:?}");
            }
        }
    }

    #[test]
    fn vips_must_be_addresses_and_come_in_pairs() {
        let p = problems(
            &oacp(
                json!({"config": {"baseDomain": "e.com", "apiVIPs": ["banana"], "ingressVIPs": ["10.0.0.4"]}}),
            ),
            None,
        );
        assert_eq!(
            p,
            ["spec.config.apiVIPs[0]: \"banana\" is not an IP address"]
        );
        let p = problems(
            &oacp(json!({"config": {"baseDomain": "e.com", "apiVIPs": ["10.0.0.5"]}})),
            None,
        );
        assert!(p[0].contains("go together"), "{p:?}");
        let dual = oacp(
            json!({"config": {"baseDomain": "e.com", "apiVIPs": ["10.0.0.5", "fd00::5"], "ingressVIPs": ["10.0.0.4", "fd00::4"]}}),
        );
        assert!(problems(&dual, None).is_empty());
    }

    #[test]
    fn names_keys_and_vips_in_the_installer_formats() {
        let refused = |config: Value, replicas: i32| {
            problems(&oacp(json!({"replicas": replicas, "config": config})), None).join("; ")
        };
        let multi = |extra: Value| {
            let mut c = json!({"baseDomain": "e.com", "apiVIPs": ["10.0.0.5"], "ingressVIPs": ["10.0.0.4"]});
            c.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            c
        };
        let e = refused(multi(json!({"baseDomain": "bad_domain!.example"})), 3);
        assert!(e.starts_with("spec.config.baseDomain: "), "{e}");
        let e = refused(multi(json!({"clusterName": "Bad_Name!"})), 3);
        assert!(e.starts_with("spec.config.clusterName: "), "{e}");
        let e = refused(multi(json!({"sshAuthorizedKey": "garbage"})), 3);
        assert!(e.starts_with("spec.config.sshAuthorizedKey: "), "{e}");
        // Empty is unset; CAPOA's example key passes.
        assert_eq!(refused(multi(json!({"sshAuthorizedKey": ""})), 3), "");
        assert_eq!(
            refused(
                multi(
                    json!({"sshAuthorizedKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk user@example"})
                ),
                3
            ),
            ""
        );
        let e = refused(multi(json!({"ingressVIPs": ["10.0.0.5"]})), 3);
        assert!(e.contains("must differ"), "{e}");
        let e = refused(multi(json!({"ingressVIPs": ["fd00::4"]})), 3);
        assert!(e.contains("different IP families"), "{e}");
        let e = refused(multi(json!({})), 1);
        assert!(e.contains("single-node cluster has no virtual IPs"), "{e}");
        let e = refused(multi(json!({"proxy": {"httpProxy": "not a url"}})), 3);
        assert!(e.starts_with("spec.config.proxy.httpProxy"), "{e}");
    }

    #[test]
    fn names_domains_and_older_releases_cannot_replace_the_old_ones() {
        let old = oacp(json!({"distributionVersion": "4.17.3"}));
        let changed = |spec: Value| problems(&oacp(spec), Some(&old)).join("; ");
        let base = json!({"baseDomain": "example.com", "apiVIPs": ["192.168.1.5"], "ingressVIPs": ["192.168.1.4"]});
        let with = |extra: Value| {
            let mut c = base.clone();
            c.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            c
        };
        // Scaling and upgrades pass.
        assert_eq!(
            changed(json!({"distributionVersion": "4.17.3", "replicas": 3})),
            ""
        );
        assert_eq!(changed(json!({"distributionVersion": "4.18.1"})), "");
        let e = changed(json!({"distributionVersion": "4.16.0"}));
        assert!(e.contains("4.16.0 is older than 4.17.3"), "{e}");
        let e = changed(
            json!({"distributionVersion": "4.17.3", "config": with(json!({"baseDomain": "other.com"}))}),
        );
        assert!(e.starts_with("spec.config.baseDomain cannot change"), "{e}");
        let e = changed(
            json!({"distributionVersion": "4.17.3", "config": with(json!({"clusterName": "new"}))}),
        );
        assert!(
            e.contains("clusterName cannot change (from unset to new)"),
            "{e}"
        );
    }

    #[test]
    fn overrides_of_owned_fields_are_refused() {
        let mut cp = oacp(json!({}));
        cp.metadata.annotations = Some(
            [(
                provider_api::controlplane::api::INSTALL_CONFIG_OVERRIDE_ANNOTATION.to_string(),
                r#"{"baseDomain":"other.example.com"}"#.to_string(),
            )]
            .into(),
        );
        let e = problems(&cp, None).join("; ");
        assert!(e.contains("baseDomain cannot be overridden"), "{e}");
        cp.metadata.annotations = Some(
            [(
                provider_api::controlplane::api::INSTALL_CONFIG_OVERRIDE_ANNOTATION.to_string(),
                r#"{"fips":true}"#.to_string(),
            )]
            .into(),
        );
        assert!(problems(&cp, None).is_empty());
    }

    #[test]
    fn the_infrastructure_kind_cannot_change_but_the_name_can() {
        let old = oacp(json!({}));
        let renamed = oacp(
            json!({"machineTemplate": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "cp-v2"}}}),
        );
        assert!(problems(&renamed, Some(&old)).is_empty());
        let other_kind = oacp(
            json!({"machineTemplate": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "cp"}}}),
        );
        let p = problems(&other_kind, Some(&old));
        assert!(p[0].contains("the kind cannot change"), "{p:?}");
        assert!(problems(&other_kind, None).is_empty(), "any kind on create");
    }

    const REF: &str = r#"{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "cp"}"#;

    fn reference(name: &str) -> Value {
        let mut r: Value = serde_json::from_str(REF).unwrap();
        r["name"] = json!(name);
        r
    }

    #[test]
    fn either_machine_template_shape_names_the_infrastructure_template() {
        let nested =
            oacp(json!({"machineTemplate": {"spec": {"infrastructureRef": reference("cp")}}}));
        assert_eq!(problems(&nested, None), Vec::<String>::new());
        let both = oacp(json!({"machineTemplate": {
            "infrastructureRef": reference("cp"),
            "spec": {"infrastructureRef": reference("cp"), "readinessGates": [{"conditionType": "A"}]},
        }}));
        assert_eq!(problems(&both, None), Vec::<String>::new());

        let neither = oacp(
            json!({"machineTemplate": {"spec": {"readinessGates": [{"conditionType": "A"}]}}}),
        );
        let p = problems(&neither, None);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("spec.machineTemplate.spec.infrastructureRef: required"),
            "{p:?}"
        );

        let differ = oacp(json!({"machineTemplate": {
            "infrastructureRef": reference("cp"),
            "spec": {"infrastructureRef": reference("cp-other")},
        }}));
        let p = problems(&differ, None);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].contains("differs from spec.machineTemplate.spec.infrastructureRef"),
            "{p:?}"
        );
    }

    #[test]
    fn deletion_timeouts_in_both_shapes_must_agree_unless_the_flat_one_is_the_default() {
        let with = |flat: Value, nested: Value| {
            problems(
                &oacp(json!({"machineTemplate": {
                    "infrastructureRef": reference("cp"),
                    "deletion": flat,
                    "spec": {"deletion": nested},
                }})),
                None,
            )
        };
        let same = json!({"nodeDrainTimeoutSeconds": 30});
        assert!(with(same.clone(), same).is_empty());
        // The apiserver's default for the flat field yields to spec.deletion.
        assert!(
            with(
                json!({"nodeDeletionTimeoutSeconds": 10}),
                json!({"nodeDrainTimeoutSeconds": 30})
            )
            .is_empty()
        );
        let p = with(
            json!({"nodeDrainTimeoutSeconds": 60}),
            json!({"nodeDrainTimeoutSeconds": 30}),
        );
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("spec.machineTemplate.deletion ("), "{p:?}");
    }

    #[test]
    fn the_infrastructure_kind_cannot_change_in_either_shape() {
        let flat = oacp(json!({}));
        let nested = |kind: &str| {
            let mut r = reference("cp-v2");
            r["kind"] = json!(kind);
            oacp(json!({"machineTemplate": {"spec": {"infrastructureRef": r}}}))
        };
        assert!(problems(&nested("Metal3MachineTemplate"), Some(&flat)).is_empty());
        let p = problems(&nested("DockerMachineTemplate"), Some(&flat));
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("the kind cannot change"), "{p:?}");
        let p = problems(&flat, Some(&nested("DockerMachineTemplate")));
        assert!(p[0].contains("the kind cannot change"), "{p:?}");
        // An old object without any reference (written without this webhook) can get one.
        let none = oacp(json!({"machineTemplate": {}}));
        assert!(problems(&flat, Some(&none)).is_empty());
    }

    /// The object after `default_patch`'s operations (add/replace on objects only).
    fn defaulted(object: Value, old: Option<Value>) -> Value {
        let request = json!({"object": object.clone(), "oldObject": old.unwrap_or(Value::Null)});
        let mut out = object;
        for op in default_patch(&request).unwrap() {
            let path = op["path"].as_str().unwrap();
            let (parent, key) = path.rsplit_once('/').unwrap();
            let target = out.pointer_mut(parent).unwrap().as_object_mut().unwrap();
            assert_eq!(op["op"] == "replace", target.contains_key(key), "{op}");
            target.insert(key.to_string(), op["value"].clone());
        }
        out
    }

    fn template_of(object: &Value) -> &Value {
        &object["spec"]["machineTemplate"]
    }

    fn with_template(template: Value) -> Value {
        serde_json::to_value(oacp(json!({"machineTemplate": template}))).unwrap()
    }

    #[test]
    fn defaulting_copies_each_shape_into_the_other() {
        let flat = with_template(
            json!({"infrastructureRef": reference("cp"), "deletion": {"nodeDrainTimeoutSeconds": 5}}),
        );
        let t = defaulted(flat, None);
        assert_eq!(
            template_of(&t)["spec"],
            json!({"infrastructureRef": reference("cp"), "deletion": {"nodeDrainTimeoutSeconds": 5}})
        );
        let nested = with_template(
            json!({"spec": {"infrastructureRef": reference("cp"), "taints": [{"key": "k", "effect": "NoSchedule", "propagation": "Always"}]}}),
        );
        let t = defaulted(nested, None);
        assert_eq!(template_of(&t)["infrastructureRef"], reference("cp"));
        assert_eq!(template_of(&t)["spec"]["taints"][0]["key"], "k");
        // The schema's default flat deletion yields to spec.deletion.
        let defaulted_flat = with_template(json!({
            "deletion": {"nodeDeletionTimeoutSeconds": 10},
            "spec": {"infrastructureRef": reference("cp"), "deletion": {"nodeDrainTimeoutSeconds": 30}},
        }));
        let t = defaulted(defaulted_flat, None);
        assert_eq!(
            template_of(&t)["deletion"],
            json!({"nodeDrainTimeoutSeconds": 30})
        );
        // Both set and different on a create: left for the validation to refuse.
        let differ = with_template(
            json!({"infrastructureRef": reference("a"), "spec": {"infrastructureRef": reference("b")}}),
        );
        assert_eq!(defaulted(differ.clone(), None), differ);
        // Nothing to do, or nothing to work on.
        let agreed = defaulted(
            with_template(json!({"infrastructureRef": reference("cp")})),
            None,
        );
        assert_eq!(defaulted(agreed.clone(), None), agreed);
        assert!(
            default_patch(&json!({"object": {"spec": 1}}))
                .unwrap()
                .is_empty()
        );
        for t in [&t, &agreed] {
            let cp: OpenshiftAssistedControlPlane = serde_json::from_value(t.clone()).unwrap();
            assert!(problems(&cp, None).is_empty());
        }
    }

    #[test]
    fn defaulting_an_update_copies_the_shape_the_user_changed() {
        let old = defaulted(
            with_template(json!({"infrastructureRef": reference("cp")})),
            None,
        );
        // CAPOA tooling renames the flat reference only.
        let mut new = old.clone();
        new["spec"]["machineTemplate"]["infrastructureRef"]["name"] = json!("cp-v2");
        let t = defaulted(new, Some(old.clone()));
        assert_eq!(
            template_of(&t)["spec"]["infrastructureRef"]["name"],
            "cp-v2"
        );
        // Cluster API's topology renames the v1beta2 one only.
        let mut new = old.clone();
        new["spec"]["machineTemplate"]["spec"]["infrastructureRef"]["name"] = json!("cp-v3");
        let t = defaulted(new, Some(old.clone()));
        assert_eq!(template_of(&t)["infrastructureRef"]["name"], "cp-v3");
        // Both changed, differently: refused by the validation, not guessed.
        let mut new = old.clone();
        new["spec"]["machineTemplate"]["infrastructureRef"]["name"] = json!("x");
        new["spec"]["machineTemplate"]["spec"]["infrastructureRef"]["name"] = json!("y");
        assert_eq!(defaulted(new.clone(), Some(old)), new);
    }

    #[test]
    fn the_kubernetes_version_is_what_cluster_api_writes() {
        for good in ["v1.30.3", "v1.30.3+a1b2c3d", "v1.31.0-rc.1", "v0.0.0"] {
            assert_eq!(kubernetes_version_problem(good), None, "{good}");
        }
        for bad in [
            "1.30.3", "v1.30", "v4.17.x", "v01.2.3", "v1.2.3+", "v1.2.3-", "4.17.3", "",
        ] {
            let problem = kubernetes_version_problem(bad).expect(bad);
            assert!(problem.contains("is not a Kubernetes version"), "{problem}");
        }
    }

    #[test]
    fn reviews_refuse_with_every_problem_and_skip_topology_dry_runs() {
        let bad = serde_json::to_value(oacp(
            json!({"replicas": 2, "distributionVersion": "4.10.0"}),
        ))
        .unwrap();
        let err = review(&json!({"object": bad.clone()}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("spec.distributionVersion") && err.contains("spec.replicas"),
            "{err}"
        );
        let mut dry = bad.clone();
        dry["metadata"]["annotations"] = json!({TOPOLOGY_DRY_RUN_ANNOTATION: ""});
        assert!(review(&json!({"object": dry.clone(), "dryRun": true})).is_ok());
        // The annotation alone (no dry run) is not a way around validation.
        assert!(review(&json!({"object": dry})).is_err());
        assert!(
            review(&json!({"object": {"spec": 1}}))
                .unwrap_err()
                .to_string()
                .contains("not an OpenshiftAssistedControlPlane")
        );
    }
}
