//! A minimal "newc" (SVR4, magic `070701`) cpio writer, and a reader for tests.
//!
//! What goes into an ISO's Ignition embed area is xz-compressed ([`embed_area_payload`]), as
//! coreos-installer and upstream's image service write it: a large `additionalTrustBundle` or
//! static network config then fits the 256 KiB area several times over. The kernel's initramfs
//! unpacker reads xz segments (with a CRC32 check, the one its decoder supports) and skips the
//! zero padding after them.

use super::ImageError;

const MAGIC: &[u8; 6] = b"070701";
#[cfg(any(test, feature = "test-support"))]
const HEADER_LEN: usize = 110;
const TRAILER: &str = "TRAILER!!!";

const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFLNK: u32 = 0o120_000;

/// One archive member; paths are relative (no leading `/`), as the kernel expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir {
        path: String,
        mode: u32,
    },
    File {
        path: String,
        mode: u32,
        data: Vec<u8>,
    },
    Symlink {
        path: String,
        target: String,
    },
}

impl Entry {
    fn path(&self) -> &str {
        match self {
            Entry::Dir { path, .. } | Entry::File { path, .. } | Entry::Symlink { path, .. } => {
                path
            }
        }
    }
}

/// Builds an archive, adding each parent directory once before its first child
/// (the kernel unpacker does not create missing parents).
#[derive(Debug, Default)]
pub struct Builder {
    entries: Vec<Entry>,
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn file(&mut self, path: &str, mode: u32, data: impl Into<Vec<u8>>) -> &mut Self {
        let path = path.trim_start_matches('/').to_string();
        self.parents(&path);
        self.entries.push(Entry::File {
            path,
            mode,
            data: data.into(),
        });
        self
    }

    pub fn symlink(&mut self, path: &str, target: &str) -> &mut Self {
        let path = path.trim_start_matches('/').to_string();
        self.parents(&path);
        self.entries.push(Entry::Symlink {
            path,
            target: target.to_string(),
        });
        self
    }

    fn parents(&mut self, path: &str) {
        let mut prefix = String::new();
        let mut parts: Vec<&str> = path.split('/').collect();
        parts.pop();
        for part in parts {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            let known = self.entries.iter().any(|e| e.path() == prefix);
            if !known {
                self.entries.push(Entry::Dir {
                    path: prefix.clone(),
                    mode: 0o755,
                });
            }
        }
    }

    pub fn finish(&self) -> Vec<u8> {
        write(&self.entries)
    }
}

/// Serialises `entries` followed by the trailer.
pub fn write(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let ino = i as u32 + 1;
        match entry {
            Entry::Dir { path, mode } => member(&mut out, ino, S_IFDIR | mode, 2, path, b""),
            Entry::File { path, mode, data } => {
                member(&mut out, ino, S_IFREG | mode, 1, path, data)
            }
            Entry::Symlink { path, target } => {
                member(&mut out, ino, S_IFLNK | 0o777, 1, path, target.as_bytes())
            }
        }
    }
    member(&mut out, 0, 0, 1, TRAILER, b"");
    out
}

fn member(out: &mut Vec<u8>, ino: u32, mode: u32, nlink: u32, name: &str, data: &[u8]) {
    let fields = [
        ino,
        mode,
        0, // uid
        0, // gid
        nlink,
        0, // mtime: fixed so identical inputs give identical archives
        data.len() as u32,
        0,
        0,
        0,
        0,
        name.len() as u32 + 1,
        0, // checksum, unused by newc
    ];
    out.extend_from_slice(MAGIC);
    for f in fields {
        out.extend_from_slice(format!("{f:08x}").as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad4(out);
    out.extend_from_slice(data);
    pad4(out);
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// The cpio archive coreos-installer would embed: a single `config.ign`.
pub fn ignition_cpio(ign: &[u8]) -> Vec<u8> {
    write(&[Entry::File {
        path: "config.ign".into(),
        mode: 0o644,
        data: ign.to_vec(),
    }])
}

/// The content of an ISO's Ignition embed area: `config.ign` and the archives of `overlays`
/// (the minimal ISO's network scripts), one xz stream.
pub fn embed_area_payload(ign: &[u8], overlays: &[&[u8]]) -> Result<Vec<u8>, ImageError> {
    let mut archive = ignition_cpio(ign);
    for overlay in overlays {
        pad4(&mut archive);
        archive.extend_from_slice(overlay);
    }
    xz_compress(&archive)
}

/// `data` as one xz stream: CRC32 (the kernel's decoder knows no CRC64 or SHA-256) and a
/// dictionary no larger than the data needs, so that memory stays small.
pub fn xz_compress(data: &[u8]) -> Result<Vec<u8>, ImageError> {
    use std::io::Write as _;
    let mut options = lzma_rust2::XzOptions::with_preset(6);
    options.set_check_sum_type(lzma_rust2::CheckType::Crc32);
    let needed = u32::try_from(data.len().next_power_of_two()).unwrap_or(u32::MAX);
    options.lzma_options.dict_size = needed.clamp(64 * 1024, 8 * 1024 * 1024);
    let failed = |e: std::io::Error| ImageError::MalformedEmbed(format!("xz compression: {e}"));
    let mut writer = lzma_rust2::XzWriter::new(Vec::new(), options).map_err(failed)?;
    writer.write_all(data).map_err(failed)?;
    writer.finish().map_err(failed)
}

#[cfg(any(test, feature = "test-support"))]
/// The archive in an embed area as written: decompressed when it is an xz stream (the zero
/// padding after it ignored), else as is.
pub fn embed_area_archive(area: &[u8]) -> Result<Vec<u8>, ImageError> {
    use std::io::Read as _;
    const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0];
    if !area.starts_with(XZ_MAGIC) {
        return Ok(area.to_vec());
    }
    let mut out = Vec::new();
    lzma_rust2::XzReader::new(area, false)
        .read_to_end(&mut out)
        .map_err(|e| ImageError::MalformedEmbed(format!("xz: {e}")))?;
    Ok(out)
}

#[cfg(any(test, feature = "test-support"))]
/// Parses the archives in `buf` (several may follow one another), first decompressed when it
/// is an xz stream (what an embed area holds); trailing zero padding is ignored.
pub fn read(buf: &[u8]) -> Result<Vec<Entry>, ImageError> {
    read_plain(&embed_area_archive(buf)?)
}

#[cfg(any(test, feature = "test-support"))]
fn read_plain(mut buf: &[u8]) -> Result<Vec<Entry>, ImageError> {
    let bad = |what: &str| ImageError::MalformedEmbed(format!("cpio: {what}"));
    let start_len = buf.len();
    let mut entries = Vec::new();
    loop {
        let at = start_len - buf.len();
        if buf.len() < HEADER_LEN || &buf[..6] != MAGIC {
            return Err(bad(&format!("no newc header at byte {at}")));
        }
        let field = |i: usize| -> Result<usize, ImageError> {
            let raw = &buf[6 + i * 8..6 + (i + 1) * 8];
            std::str::from_utf8(raw)
                .ok()
                .and_then(|s| u32::from_str_radix(s, 16).ok())
                .map(|v| v as usize)
                .ok_or_else(|| bad(&format!("bad header field {i} at byte {at}")))
        };
        let mode = field(1)? as u32;
        let size = field(6)?;
        let name_len = field(11)?;
        let name_end = HEADER_LEN + name_len;
        let data_start = name_end.next_multiple_of(4);
        let data_end = data_start + size;
        if name_len == 0 || buf.len() < data_end {
            return Err(bad(&format!("truncated member at byte {at}")));
        }
        let name = std::str::from_utf8(&buf[HEADER_LEN..name_end - 1])
            .map_err(|_| bad(&format!("non-UTF-8 name at byte {at}")))?
            .to_string();
        if name == TRAILER {
            // Another archive may follow, after zero padding, as the kernel reads them.
            let rest = &buf[data_end.next_multiple_of(4).min(buf.len())..];
            let next = rest.iter().position(|b| *b != 0).unwrap_or(rest.len());
            let next = next - next % 4;
            if rest[next..].starts_with(MAGIC) {
                buf = &rest[next..];
                continue;
            }
            return Ok(entries);
        }
        let data = buf[data_start..data_end].to_vec();
        let perm = mode & 0o7777;
        entries.push(match mode & 0o170_000 {
            S_IFDIR => Entry::Dir {
                path: name,
                mode: perm,
            },
            S_IFLNK => Entry::Symlink {
                path: name,
                target: String::from_utf8(data).map_err(|_| bad("non-UTF-8 symlink"))?,
            },
            _ => Entry::File {
                path: name,
                mode: perm,
                data,
            },
        });
        buf = &buf[data_end.next_multiple_of(4).min(buf.len())..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embed_area_payload_is_one_xz_stream_that_reads_back_whole() {
        // A trust bundle of many certificates, as sites paste them: repetitive text.
        let ign = format!(
            "{{\"ignition\":{{\"version\":\"3.2.0\"}},\"bundle\":\"{}\"}}",
            "-----BEGIN CERTIFICATE-----MIIB...-----END CERTIFICATE-----".repeat(8000)
        );
        let overlay = write(&[Entry::File {
            path: "etc/assisted/network/host0/eth0.nmconnection".into(),
            mode: 0o600,
            data: b"[connection]\n".to_vec(),
        }]);
        let payload = embed_area_payload(ign.as_bytes(), &[&overlay]).unwrap();
        assert!(payload.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]));
        // CRC32 check type (stream flags byte 7 = 0x01): what the kernel's decoder supports.
        assert_eq!(payload[7], 0x01);
        assert!(payload.len() < ign.len() / 20, "{} bytes", payload.len());
        // Zero padding after the stream (the rest of the area) is ignored.
        let mut area = payload.clone();
        area.resize(payload.len() + 4097, 0);
        let entries = read(&area).unwrap();
        assert_eq!(entries.len(), 2, "config.ign, then the overlay's file");
        assert!(
            matches!(&entries[0], Entry::File { path, data, .. } if path == "config.ign" && data == ign.as_bytes())
        );
        assert!(
            matches!(&entries[1], Entry::File { path, .. } if path.ends_with("eth0.nmconnection"))
        );
    }

    #[test]
    fn ignition_cpio_layout() {
        let a = ignition_cpio(b"{}");
        assert_eq!(&a[..6], b"070701");
        assert_eq!(a.len() % 4, 0);
        // The name "config.ign\0" (11 bytes) follows the 110-byte header.
        assert_eq!(&a[110..121], b"config.ign\0");
        // filesize field (7th) is 2.
        assert_eq!(&a[6 + 6 * 8..6 + 7 * 8], b"00000002");
        let entries = read(&a).unwrap();
        assert_eq!(
            entries,
            vec![Entry::File {
                path: "config.ign".into(),
                mode: 0o644,
                data: b"{}".to_vec()
            }]
        );
    }

    #[test]
    fn builder_adds_parents_once_and_roundtrips() {
        let mut b = Builder::new();
        b.file("/etc/a/b/one", 0o600, "1")
            .file("etc/a/b/two", 0o755, "22")
            .symlink("etc/a/link", "b/one");
        let mut padded = b.finish();
        padded.extend_from_slice(&[0; 512]);
        let entries = read(&padded).unwrap();
        let paths: Vec<&str> = entries.iter().map(Entry::path).collect();
        assert_eq!(
            paths,
            [
                "etc",
                "etc/a",
                "etc/a/b",
                "etc/a/b/one",
                "etc/a/b/two",
                "etc/a/link"
            ]
        );
        assert!(matches!(&entries[4], Entry::File { mode: 0o755, data, .. } if data == b"22"));
        assert!(matches!(&entries[5], Entry::Symlink { target, .. } if target == "b/one"));
    }

    #[test]
    fn read_rejects_garbage() {
        assert!(read(&[0; 200]).is_err());
        let mut a = ignition_cpio(b"hello");
        a.truncate(120);
        assert!(read(&a).is_err());
    }
}
