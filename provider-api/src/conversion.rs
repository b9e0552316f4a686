//! The conversion engine of both providers' older API versions: lossless conversion between a
//! spoke (an older version) and its hub (the version stored and reconciled).
//!
//! The field mapping is plain code ([`Spoke::to_hub_fields`], [`Spoke::from_hub_fields`]). What one
//! version cannot express survives a round trip the Cluster API way: the converted object carries
//! the annotation [`CONVERSION_DATA_ANNOTATION`], the source object in its own version as JSON
//! (without metadata), and the next conversion back restores from it. Unlike Cluster API's
//! helpers, a section (`spec`, `status`) is taken back verbatim only while what the other version
//! sees of it is unchanged, so a status the controller rewrote on the hub is never hidden behind a
//! stale copy. The engine ([`Spoke::to_hub`], [`Spoke::from_hub`], [`convert_kind`]) is generic:
//! the bootstrap kinds ([`crate::bootstrap::conversion`]) and the control plane
//! ([`crate::controlplane::conversion`]) convert with it.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Where a converted object keeps what its version cannot express: the source object as JSON
/// in the other version, without `metadata`. The same key and format as Cluster API's
/// `util/conversion` and CAPOA, so objects CAPOA stored convert too.
///
/// A control plane's value must never be copied onto the configs it creates (CAPOA bug
/// MGMT-23110): it describes the control plane. [`Spoke::to_hub`] and [`Spoke::from_hub`] ignore
/// a value of another kind or version, so such a copy is dropped instead of corrupting the object.
pub const CONVERSION_DATA_ANNOTATION: &str = "cluster.x-k8s.io/conversion-data";

/// Why an object could not be converted; the message is what the apiserver shows the client.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    #[error("the object has no {0}")]
    MissingField(&'static str),
    #[error("cannot convert kind {kind:?} ({api_version}): this webhook converts {known}")]
    UnknownKind {
        kind: String,
        api_version: String,
        known: String,
    },
    #[error("{kind} has no API version {api_version:?} (served: {known})")]
    UnknownVersion {
        kind: String,
        api_version: String,
        known: String,
    },
    #[error("invalid {kind} {api_version}: {source}")]
    InvalidObject {
        kind: String,
        api_version: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot serialize the converted {kind}: {source}")]
    Serialize {
        kind: String,
        #[source]
        source: serde_json::Error,
    },
}

/// A typed Kubernetes object the engine can convert (compared as JSON: kube's derived root
/// types have no `PartialEq`).
pub trait Object: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone {}

impl<T> Object for T where T: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone {}

/// An older version of a kind, converted to and from its hub.
///
/// Implementors write the field mapping (`*_fields`, metadata excluded: the engine copies it) and
/// optionally the best-effort restores used when the other side changed since the conversion
/// data was written. A restore must stay invisible to the other direction's mapping: after
/// `restore_hub`, [`Spoke::from_hub_fields`] returns what it returned before, and after
/// `restore_spoke`, [`Spoke::to_hub_fields`] too; the round trips are exact only then.
pub trait Spoke: Object {
    type Hub: Object;

    /// This spoke's fields in the hub, without conversion data.
    fn to_hub_fields(&self) -> Self::Hub;
    /// The hub's fields in this spoke, without conversion data.
    fn from_hub_fields(hub: &Self::Hub) -> Self;
    /// Puts back hub-only fields from the hub the client last read, when it changed the spoke.
    fn restore_hub(_hub: &mut Self::Hub, _snapshot: &Self::Hub) {}
    /// Puts back spoke-only fields from the spoke last written, when the hub changed since.
    fn restore_spoke(&mut self, _snapshot: &Self) {}

    /// Converts to the hub, restoring from and recording in the conversion data.
    fn to_hub(&self) -> Self::Hub {
        convert_keeping_data(
            self,
            Self::to_hub_fields,
            Self::from_hub_fields,
            Self::restore_hub,
        )
    }

    /// Converts from the hub, restoring from and recording in the conversion data.
    fn from_hub(hub: &Self::Hub) -> Self {
        convert_keeping_data(
            hub,
            Self::from_hub_fields,
            Self::to_hub_fields,
            Self::restore_spoke,
        )
    }
}

/// One conversion, either direction: `forward` maps the fields, the source's conversion data (an
/// object of the target version) fills in each section whose view from the source's version is
/// unchanged, `restore` the rest, and the result records the source when `backward` alone would
/// not give it back.
fn convert_keeping_data<S: Object, D: Object>(
    source: &S,
    forward: impl Fn(&S) -> D,
    backward: impl Fn(&D) -> S,
    restore: impl Fn(&mut D, &D),
) -> D {
    let mut source = source.clone();
    let data = take_conversion_data(source.meta_mut());
    let meta = source.meta().clone();
    let with_meta = |mut object: D| {
        *object.meta_mut() = meta.clone();
        object
    };
    let mut converted = with_meta(forward(&source));
    if let Some(snapshot) = data.as_deref().and_then(parse_snapshot::<D>) {
        let snapshot = with_meta(snapshot);
        let seen_then = forward(&backward(&snapshot));
        if let Some(merged) = take_unchanged_sections(&converted, &seen_then, &snapshot) {
            converted = with_meta(merged);
        }
        restore(&mut converted, &snapshot);
    }
    let mut back = backward(&converted);
    *back.meta_mut() = meta.clone();
    if serde_json::to_value(&back).ok() != serde_json::to_value(&source).ok()
        && let Ok(data) = snapshot_of(&source)
    {
        converted
            .meta_mut()
            .annotations
            .get_or_insert_default()
            .insert(CONVERSION_DATA_ANNOTATION.to_string(), data);
    }
    converted
}

/// Removes the conversion data from `meta`; an annotation map left empty becomes none (the
/// apiserver never sends an empty one).
pub(crate) fn take_conversion_data(meta: &mut ObjectMeta) -> Option<String> {
    let annotations = meta.annotations.as_mut()?;
    let data = annotations.remove(CONVERSION_DATA_ANNOTATION)?;
    if annotations.is_empty() {
        meta.annotations = None;
    }
    Some(data)
}

/// The conversion data of `D`: ignored unless it is a `D` (same apiVersion and kind), so a value
/// copied from another kind (MGMT-23110) or garbage cannot leak into the object.
fn parse_snapshot<D: Object>(data: &str) -> Option<D> {
    let mut value: Value = serde_json::from_str(data).ok()?;
    let object = value.as_object_mut()?;
    if object.get("apiVersion")?.as_str()? != D::api_version(&())
        || object.get("kind")?.as_str()? != D::kind(&())
    {
        return None;
    }
    object.insert("metadata".into(), Value::Object(Default::default()));
    serde_json::from_value(value).ok()
}

/// `object` as conversion data: its JSON without metadata.
fn snapshot_of<S: Object>(object: &S) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(object)?;
    if let Some(map) = value.as_object_mut() {
        map.remove("metadata");
    }
    serde_json::to_string(&value)
}

/// `converted` with every top-level section (`spec`, `status`) replaced by the snapshot's where
/// the source's version sees the same in both (`converted` and `seen_then` are that view).
fn take_unchanged_sections<D: Object>(converted: &D, seen_then: &D, snapshot: &D) -> Option<D> {
    let now = serde_json::to_value(converted).ok()?;
    let then = serde_json::to_value(seen_then).ok()?;
    let snapshot = serde_json::to_value(snapshot).ok()?;
    let mut merged = now.clone();
    let sections: BTreeSet<&String> = [&now, &then, &snapshot]
        .into_iter()
        .filter_map(Value::as_object)
        .flat_map(|map| map.keys())
        .filter(|key| !matches!(key.as_str(), "apiVersion" | "kind" | "metadata"))
        .collect();
    let target = merged.as_object_mut()?;
    for section in sections {
        if now.get(section) == then.get(section) {
            match snapshot.get(section) {
                Some(value) => target.insert(section.clone(), value.clone()),
                None => target.remove(section),
            };
        }
    }
    serde_json::from_value(merged).ok()
}

/// Puts back, in `items`, each item `snapshot` holds with the same view from the other version
/// (`view` must keep the item's identity, e.g. a condition's type): what that version cannot
/// express of it (a condition's severity or observed generation) comes back as it was.
pub fn restore_unchanged_items<T: Clone, V: PartialEq>(
    items: &mut [T],
    snapshot: &[T],
    view: impl Fn(&T) -> V,
) {
    for item in items {
        let seen = view(item);
        if let Some(previous) = snapshot.iter().find(|previous| view(previous) == seen) {
            *item = previous.clone();
        }
    }
}

/// Converts one object of `S`'s kind (a ConversionReview entry) to `desired_api_version`; the
/// same version comes back unchanged.
pub fn convert_kind<S: Spoke>(
    object: Value,
    desired_api_version: &str,
) -> Result<Value, ConversionError> {
    let (api_version, kind) = type_of(&object)?;
    if kind != S::kind(&()) {
        return Err(ConversionError::UnknownKind {
            kind,
            api_version,
            known: S::kind(&()).into_owned(),
        });
    }
    let spoke_version = S::api_version(&());
    let hub_version = S::Hub::api_version(&());
    let unknown = |api_version: &str| ConversionError::UnknownVersion {
        kind: kind.clone(),
        api_version: api_version.to_string(),
        known: format!("{spoke_version}, {hub_version}"),
    };
    for version in [api_version.as_str(), desired_api_version] {
        if version != spoke_version && version != hub_version {
            return Err(unknown(version));
        }
    }
    if api_version == desired_api_version {
        return Ok(object);
    }
    let invalid = |source| ConversionError::InvalidObject {
        kind: kind.clone(),
        api_version: api_version.clone(),
        source,
    };
    let converted = if api_version == spoke_version {
        let spoke: S = serde_json::from_value(object).map_err(invalid)?;
        serde_json::to_value(spoke.to_hub())
    } else {
        let hub: S::Hub = serde_json::from_value(object).map_err(invalid)?;
        serde_json::to_value(S::from_hub(&hub))
    };
    converted.map_err(|source| ConversionError::Serialize {
        kind: kind.clone(),
        source,
    })
}

/// One kind a conversion webhook serves: its name and the converter of its objects.
pub struct ServedKind {
    kind: String,
    convert: fn(Value, &str) -> Result<Value, ConversionError>,
}

/// The kind of spoke `S` (and of its hub), converted with [`convert_kind`].
pub fn served<S: Spoke>() -> ServedKind {
    ServedKind {
        kind: S::kind(&()).into_owned(),
        convert: convert_kind::<S>,
    }
}

/// A conversion webhook's entry point: converts one object of one of `kinds` to
/// `desired_api_version`; an object of another kind is refused, naming the kinds served.
pub fn convert_served(
    object: Value,
    desired_api_version: &str,
    kinds: &[ServedKind],
) -> Result<Value, ConversionError> {
    let (api_version, kind) = type_of(&object)?;
    match kinds.iter().find(|served| served.kind == kind) {
        Some(served) => (served.convert)(object, desired_api_version),
        None => Err(ConversionError::UnknownKind {
            kind,
            api_version,
            known: kinds
                .iter()
                .map(|served| served.kind.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The object's `apiVersion` and `kind`.
pub fn type_of(object: &Value) -> Result<(String, String), ConversionError> {
    let field = |name: &'static str| {
        object
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or(ConversionError::MissingField(name))
    };
    Ok((field("apiVersion")?, field("kind")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_item_seen_unchanged_comes_back_from_the_snapshot() {
        // (identity, what the other version sees, what it cannot express)
        let mut items = [("A", 1, "now"), ("B", 2, "now"), ("C", 3, "now")];
        let snapshot = [("B", 9, "then"), ("A", 1, "then")];
        restore_unchanged_items(&mut items, &snapshot, |&(id, seen, _)| (id, seen));
        assert_eq!(items, [("A", 1, "then"), ("B", 2, "now"), ("C", 3, "now")]);
    }

    #[test]
    fn an_object_of_another_kind_is_refused_naming_every_kind_served() {
        let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod"});
        let err = crate::bootstrap::conversion::convert(pod, "v1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot convert kind \"Pod\" (v1): this webhook converts OpenshiftAssistedConfig, \
             OpenshiftAssistedConfigTemplate"
        );
    }
}
