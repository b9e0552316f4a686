//! Reading single files out of image layer blobs (tar, optionally gzip-compressed).
//!
//! Blocking: callers run these with `tokio::task::spawn_blocking`.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Largest file [`read_file`] loads into memory (release manifests are well below).
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

/// Mode of extracted files: they are executables (`openshift-install`).
const EXTRACTED_MODE: u32 = 0o755;

/// Why a layer cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("layer compression {0} is not supported (only tar and gzip tar)")]
    Unsupported(String),
    #[error("{path} is {size} bytes, more than the {limit} bytes allowed")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{path} is a symbolic link (to {target}), not a file")]
    Symlink { path: String, target: String },
    #[error("{path} is not a regular file")]
    NotAFile { path: String },
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> LayerError {
    let context = context.into();
    move |source| LayerError::Io { context, source }
}

/// What one layer says about a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<T> {
    /// The layer has the file.
    Found(T),
    /// The layer deletes the path (an overlay whiteout): lower layers must not be used.
    Deleted,
    /// The layer does not touch the path: look in lower layers.
    Absent,
}

/// Writes the layer's `wanted` (e.g. `usr/bin/openshift-install`) to `dest` as 0755.
/// Returns whether the layer has it.
pub fn extract_file(
    layer_path: &Path,
    media_type: &str,
    wanted: &str,
    dest: &Path,
) -> Result<bool, LayerError> {
    Ok(matches!(
        extract_lookup(layer_path, media_type, wanted, dest)?,
        Lookup::Found(())
    ))
}

/// [`extract_file`] that also tells a deleted path from an absent one.
pub fn extract_lookup(
    layer_path: &Path,
    media_type: &str,
    wanted: &str,
    dest: &Path,
) -> Result<Lookup<()>, LayerError> {
    let wanted = normalize(wanted);
    let found = scan(layer_path, media_type, &[wanted.as_str()], |_, entry| {
        copy_to(entry, dest).map(|_| ())
    })?;
    Ok(found.into_iter().next().unwrap_or(Lookup::Absent))
}

/// The content of the layer's `wanted`, if the layer has it (at most [`MAX_READ_BYTES`]).
pub fn read_file(
    layer_path: &Path,
    media_type: &str,
    wanted: &str,
) -> Result<Option<Vec<u8>>, LayerError> {
    match read_files(layer_path, media_type, &[wanted])?.pop() {
        Some(Lookup::Found(bytes)) => Ok(Some(bytes)),
        _ => Ok(None),
    }
}

/// Several small files in one pass over the layer: one [`Lookup`] per `wanted` path.
pub fn read_files(
    layer_path: &Path,
    media_type: &str,
    wanted: &[&str],
) -> Result<Vec<Lookup<Vec<u8>>>, LayerError> {
    let wanted: Vec<String> = wanted.iter().map(|w| normalize(w)).collect();
    let wanted: Vec<&str> = wanted.iter().map(String::as_str).collect();
    scan(layer_path, media_type, &wanted, |path, entry| {
        read_capped(entry, path)
    })
}

/// A tar path as layers compare them: no leading `./` or `/`, no trailing `/`.
pub fn normalize(path: &str) -> String {
    let mut p = path;
    loop {
        let stripped = p.strip_prefix("./").or_else(|| p.strip_prefix('/'));
        match stripped {
            Some(rest) => p = rest,
            None => break,
        }
    }
    p.trim_end_matches('/').to_string()
}

/// Walks the layer once; `take` consumes the entry of each wanted path that is a file.
/// A hard link to another entry of the layer is resolved with a second pass.
fn scan<T>(
    layer_path: &Path,
    media_type: &str,
    wanted: &[&str],
    mut take: impl FnMut(&str, &mut dyn Read) -> Result<T, LayerError>,
) -> Result<Vec<Lookup<T>>, LayerError> {
    let mut results: Vec<Lookup<T>> = wanted.iter().map(|_| Lookup::Absent).collect();
    // wanted index → hard link target (normalized).
    let mut links: Vec<(usize, String)> = Vec::new();
    walk(layer_path, media_type, |path, entry| {
        for (i, w) in wanted.iter().enumerate() {
            if path == *w {
                // A later entry for the same path replaces an earlier one, as on extraction.
                links.retain(|(l, _)| *l != i);
                match classify(path, entry)? {
                    Kind::File => results[i] = Lookup::Found(take(path, entry)?),
                    Kind::HardLink(target) => {
                        results[i] = Lookup::Absent;
                        links.push((i, target));
                    }
                }
            } else if matches!(results[i], Lookup::Absent)
                && !links.iter().any(|(l, _)| *l == i)
                && whiteout_hides(path, w)
            {
                // Whiteouts act on lower layers only, so this layer's own file still wins.
                results[i] = Lookup::Deleted;
            }
        }
        Ok(())
    })?;
    if links.is_empty() {
        return Ok(results);
    }
    walk(layer_path, media_type, |path, entry| {
        for (i, target) in &links {
            if path == target && matches!(results[*i], Lookup::Absent) {
                if !matches!(classify(path, entry)?, Kind::File) {
                    return Err(LayerError::NotAFile {
                        path: path.to_string(),
                    });
                }
                results[*i] = Lookup::Found(take(path, entry)?);
            }
        }
        Ok(())
    })?;
    Ok(results)
}

enum Kind {
    File,
    HardLink(String),
}

fn classify(path: &str, entry: &tar::Entry<'_, Box<dyn Read>>) -> Result<Kind, LayerError> {
    let link = || -> String {
        entry
            .link_name()
            .ok()
            .flatten()
            .map(|l| l.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let kind = entry.header().entry_type();
    if kind.is_file() || kind == tar::EntryType::Continuous {
        Ok(Kind::File)
    } else if kind.is_hard_link() {
        Ok(Kind::HardLink(normalize(&link())))
    } else if kind.is_symlink() {
        Err(LayerError::Symlink {
            path: path.to_string(),
            target: link(),
        })
    } else {
        Err(LayerError::NotAFile {
            path: path.to_string(),
        })
    }
}

/// Calls `visit` with each entry's normalized path. The entry is readable in `visit`.
fn walk(
    layer_path: &Path,
    media_type: &str,
    mut visit: impl FnMut(&str, &mut tar::Entry<'_, Box<dyn Read>>) -> Result<(), LayerError>,
) -> Result<(), LayerError> {
    let shown = layer_path.display().to_string();
    let reader = open_layer(layer_path, media_type)?;
    let mut archive = tar::Archive::new(reader);
    let entries = archive
        .entries()
        .map_err(io(format!("reading {shown} as tar")))?;
    for entry in entries {
        let mut entry = entry.map_err(io(format!("reading {shown} as tar")))?;
        let path = entry
            .path()
            .map_err(io(format!("reading an entry name in {shown}")))?;
        let path = normalize(&path.to_string_lossy());
        visit(&path, &mut entry)?;
    }
    Ok(())
}

/// The layer's tar stream, decompressed when the media type or the magic bytes say gzip.
fn open_layer(layer_path: &Path, media_type: &str) -> Result<Box<dyn Read>, LayerError> {
    let shown = layer_path.display().to_string();
    let mut file = File::open(layer_path).map_err(io(format!("opening {shown}")))?;
    let mut magic = [0u8; 4];
    let n = read_up_to(&mut file, &mut magic).map_err(io(format!("reading {shown}")))?;
    let magic = &magic[..n];
    file.seek(SeekFrom::Start(0))
        .map_err(io(format!("reading {shown}")))?;
    let reader = BufReader::new(file);
    if media_type.contains("zstd") || magic == [0x28, 0xb5, 0x2f, 0xfd] {
        return Err(LayerError::Unsupported(format!("zstd ({media_type})")));
    }
    let gzip_type = ["tar+gzip", "tar.gzip", "tar.gz"]
        .iter()
        .any(|t| media_type.ends_with(t));
    if gzip_type || magic.starts_with(&[0x1f, 0x8b]) {
        // Multi-member: layers written by parallel compressors have several gzip members.
        Ok(Box::new(flate2::read::MultiGzDecoder::new(reader)))
    } else {
        Ok(Box::new(reader))
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Whether the whiteout entry `entry` (`dir/.wh.name`, or `dir/.wh..wh..opq` for a
/// directory emptied in this layer) deletes `wanted` from the layers below.
fn whiteout_hides(entry: &str, wanted: &str) -> bool {
    let (dir, name) = match entry.rsplit_once('/') {
        Some((dir, name)) => (dir, name),
        None => ("", entry),
    };
    let Some(hidden) = name.strip_prefix(".wh.") else {
        return false;
    };
    let under = |prefix: &str| prefix.is_empty() || wanted.starts_with(&format!("{prefix}/"));
    if hidden == ".wh..opq" {
        return under(dir);
    }
    let hidden = if dir.is_empty() {
        hidden.to_string()
    } else {
        format!("{dir}/{hidden}")
    };
    wanted == hidden || under(&hidden)
}

fn read_capped(entry: &mut dyn Read, path: &str) -> Result<Vec<u8>, LayerError> {
    let mut bytes = Vec::new();
    entry
        .take(MAX_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io(format!("reading {path}")))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(LayerError::TooLarge {
            path: path.to_string(),
            size: bytes.len() as u64,
            limit: MAX_READ_BYTES,
        });
    }
    Ok(bytes)
}

fn copy_to(entry: &mut dyn Read, dest: &Path) -> Result<u64, LayerError> {
    let shown = dest.display().to_string();
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(EXTRACTED_MODE)
        .open(dest)
        .map_err(io(format!("creating {shown}")))?;
    let n = std::io::copy(entry, &mut out).map_err(io(format!("writing {shown}")))?;
    out.flush().map_err(io(format!("writing {shown}")))?;
    // The umask may have narrowed the mode given at creation.
    out.set_permissions(std::fs::Permissions::from_mode(EXTRACTED_MODE))
        .map_err(io(format!("setting the mode of {shown}")))?;
    out.sync_all().map_err(io(format!("writing {shown}")))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
    const DOCKER_GZIP: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";
    const TAR: &str = "application/vnd.oci.image.layer.v1.tar";

    enum E<'a> {
        File(&'a str, &'a [u8]),
        Dir(&'a str),
        Symlink(&'a str, &'a str),
        HardLink(&'a str, &'a str),
    }

    fn tar_bytes(entries: &[E<'_>]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for e in entries {
            let mut h = tar::Header::new_gnu();
            match e {
                E::File(path, data) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(data.len() as u64);
                    h.set_mode(0o644);
                    // The name byte for byte: the builder would strip `./` and refuse `/`,
                    // which real layers have.
                    h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
                    h.set_cksum();
                    b.append(&h, *data).unwrap();
                }
                E::Dir(path) => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_size(0);
                    h.set_mode(0o755);
                    b.append_data(&mut h, path, std::io::empty()).unwrap();
                }
                E::Symlink(path, target) | E::HardLink(path, target) => {
                    h.set_entry_type(if matches!(e, E::Symlink(..)) {
                        tar::EntryType::Symlink
                    } else {
                        tar::EntryType::Link
                    });
                    h.set_size(0);
                    b.append_link(&mut h, path, target).unwrap();
                }
            }
        }
        b.into_inner().unwrap()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn normalizes_paths() {
        assert_eq!(normalize("./usr/bin/x"), "usr/bin/x");
        assert_eq!(normalize("/usr/bin/x"), "usr/bin/x");
        assert_eq!(normalize(".//./usr/"), "usr");
        assert_eq!(normalize("usr/bin/x"), "usr/bin/x");
    }

    #[test]
    fn extracts_from_gzip_and_plain_tar() {
        let dir = tempfile::tempdir().unwrap();
        let tar = tar_bytes(&[
            E::Dir("./usr/"),
            E::Dir("./usr/bin/"),
            E::File("./usr/bin/other", b"no"),
            E::File("./usr/bin/openshift-install", b"#!installer"),
        ]);
        let layers = [
            (write(dir.path(), "gz", &gzip(&tar)), GZIP),
            (write(dir.path(), "dgz", &gzip(&tar)), DOCKER_GZIP),
            (write(dir.path(), "plain", &tar), TAR),
            // Magic bytes win over a media type that does not say gzip.
            (
                write(dir.path(), "sniffed", &gzip(&tar)),
                "application/octet-stream",
            ),
        ];
        for (i, (layer, media_type)) in layers.iter().enumerate() {
            let dest = dir.path().join(format!("out{i}"));
            assert!(extract_file(layer, media_type, "usr/bin/openshift-install", &dest).unwrap());
            assert_eq!(std::fs::read(&dest).unwrap(), b"#!installer");
            let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o755);
            let other = dir.path().join(format!("missing{i}"));
            assert!(!extract_file(layer, media_type, "/usr/bin/oc", &other).unwrap());
            assert!(!other.exists());
        }
    }

    #[test]
    fn reads_several_small_files_in_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let tar = tar_bytes(&[
            E::File("release-manifests/image-references", b"{\"refs\":1}"),
            E::File(
                "/release-manifests/release-metadata",
                b"{\"version\":\"4.17.3\"}",
            ),
        ]);
        let layer = write(dir.path(), "l", &gzip(&tar));
        let got = read_files(
            &layer,
            GZIP,
            &[
                "release-manifests/release-metadata",
                "release-manifests/image-references",
                "release-manifests/absent",
            ],
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Lookup::Found(b"{\"version\":\"4.17.3\"}".to_vec()),
                Lookup::Found(b"{\"refs\":1}".to_vec()),
                Lookup::Absent,
            ]
        );
        assert_eq!(
            read_file(&layer, GZIP, "./release-manifests/image-references").unwrap(),
            Some(b"{\"refs\":1}".to_vec())
        );
    }

    #[test]
    fn whiteouts_delete_lower_layer_files() {
        let dir = tempfile::tempdir().unwrap();
        let wanted = "release-manifests/image-references";
        let cases: [(&str, Lookup<Vec<u8>>); 5] = [
            ("release-manifests/.wh.image-references", Lookup::Deleted),
            ("release-manifests/.wh..wh..opq", Lookup::Deleted),
            (".wh.release-manifests", Lookup::Deleted),
            (".wh..wh..opq", Lookup::Deleted),
            ("release-manifests/.wh.image-references-old", Lookup::Absent),
        ];
        for (i, (whiteout, expected)) in cases.into_iter().enumerate() {
            let layer = write(
                dir.path(),
                &format!("w{i}"),
                &tar_bytes(&[E::File(whiteout, b"")]),
            );
            assert_eq!(
                read_files(&layer, TAR, &[wanted]).unwrap(),
                vec![expected],
                "{whiteout}"
            );
        }
        // An opaque directory hides lower layers only: this layer's own file counts.
        let layer = write(
            dir.path(),
            "opq",
            &tar_bytes(&[
                E::File("release-manifests/.wh..wh..opq", b""),
                E::File(wanted, b"new"),
            ]),
        );
        assert_eq!(
            read_files(&layer, TAR, &[wanted]).unwrap(),
            vec![Lookup::Found(b"new".to_vec())]
        );
    }

    #[test]
    fn links_and_other_entry_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let layer = write(
            dir.path(),
            "links",
            &tar_bytes(&[
                E::File("usr/libexec/real", b"binary"),
                E::HardLink("usr/bin/openshift-install", "./usr/libexec/real"),
                E::Symlink("usr/bin/oc", "/usr/libexec/oc"),
                E::Dir("usr/share"),
            ]),
        );
        let dest = dir.path().join("x");
        assert!(extract_file(&layer, TAR, "usr/bin/openshift-install", &dest).unwrap());
        assert_eq!(std::fs::read(&dest).unwrap(), b"binary");
        let e = read_file(&layer, TAR, "usr/bin/oc").unwrap_err();
        assert!(
            e.to_string().contains("symbolic link (to /usr/libexec/oc)"),
            "{e}"
        );
        let e = read_file(&layer, TAR, "usr/share").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn errors_are_clear() {
        let dir = tempfile::tempdir().unwrap();
        let big = vec![b'x'; (MAX_READ_BYTES + 1) as usize];
        let layer = write(dir.path(), "big", &tar_bytes(&[E::File("big", &big)]));
        let e = read_file(&layer, TAR, "big").unwrap_err();
        assert!(matches!(e, LayerError::TooLarge { .. }), "{e}");
        let zstd = write(dir.path(), "z", &[0x28, 0xb5, 0x2f, 0xfd, 0, 0]);
        let e = read_file(&zstd, "application/vnd.oci.image.layer.v1.tar+zstd", "x").unwrap_err();
        assert!(e.to_string().contains("zstd"), "{e}");
        let e = read_file(&dir.path().join("nope"), TAR, "x").unwrap_err();
        assert!(e.to_string().contains("opening"), "{e}");
        let junk = write(
            dir.path(),
            "junk",
            &gzip(b"this is not a tar archive at all"),
        );
        assert!(read_file(&junk, GZIP, "x").is_err());
    }
}
