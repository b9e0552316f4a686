//! The minimal discovery ISO: a CoreOS live ISO without its root filesystem, which the host
//! fetches at boot from the `coreos.live.rootfs_url` kernel argument (what most sites boot
//! through BMC virtual media: a hundred megabytes instead of a gigabyte).
//!
//! CoreOS full live ISOs since 2021-12 carry `coreos/miniso.dat`, from which
//! `coreos-installer iso extract minimal-iso` rebuilds the minimal ISO coreos-assembler built
//! beside the full one; this module does the same. The format (coreos-installer's `miniso.rs`):
//! bincode 1 with little-endian varints, a header (`MINISO\0\0`, version 1, the writer's
//! version) then a table of the files both ISOs share (minimal sector, full sector, length),
//! the SHA-256 of the minimal ISO, and an xz stream of the minimal ISO's other bytes. Like
//! coreos-installer, the minimal ISO's default kernel arguments lose `coreos.liveiso=` (the
//! live ISO label the minimal ISO does not have): `kargs.json` is rewritten in place.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use ring::digest;

use super::ImageError;
use super::iso_read::find_file;
use super::layout::KargsInfo;

/// Where the data lies in a full live ISO.
pub const MINISO_PATH: &str = "coreos/miniso.dat";
/// `coreos/kargs.json` by its ISO 9660 (8.3) name, as the layout reader finds it.
const KARGS_PATH: &str = "coreos/kargs.jso";
const MAGIC: &[u8; 8] = b"MINISO\0\0";
const VERSION: u32 = 1;
const SECTOR: u64 = 2048;
/// coreos-installer refuses more; real files are a few KiB.
const MAX_DATA: u64 = 1024 * 1024;

/// One file both ISOs share: where it starts in each, and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedFile {
    pub minimal_sector: u32,
    pub full_sector: u32,
    pub len: u32,
}

/// The parsed `miniso.dat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinisoData {
    pub files: Vec<SharedFile>,
    pub digest: [u8; 32],
    pub xzpacked: Vec<u8>,
}

fn bad(what: impl std::fmt::Display) -> ImageError {
    ImageError::MalformedIso(format!("{MINISO_PATH}: {what}"))
}

/// Reads bincode's varint encoding (little endian).
struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ImageError> {
        if self.buf.len() < n {
            return Err(bad("truncated"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn varint(&mut self) -> Result<u64, ImageError> {
        let le = |b: &[u8]| b.iter().rev().fold(0u64, |v, x| (v << 8) | u64::from(*x));
        Ok(match self.take(1)?[0] {
            v @ 0..=250 => u64::from(v),
            251 => le(self.take(2)?),
            252 => le(self.take(4)?),
            253 => le(self.take(8)?),
            other => return Err(bad(format!("unsupported integer marker {other}"))),
        })
    }

    fn u32(&mut self) -> Result<u32, ImageError> {
        u32::try_from(self.varint()?).map_err(|_| bad("integer out of range"))
    }

    fn bytes(&mut self) -> Result<&'a [u8], ImageError> {
        let len = usize::try_from(self.varint()?).map_err(|_| bad("length out of range"))?;
        self.take(len)
    }
}

/// Parses `miniso.dat` (trailing bytes, the rest of the file's extent, are allowed).
pub fn parse(data: &[u8]) -> Result<MinisoData, ImageError> {
    let mut c = Cursor { buf: data };
    if c.take(MAGIC.len())? != MAGIC {
        return Err(bad("not a miniso data file"));
    }
    let version = c.u32()?;
    if version != VERSION {
        return Err(bad(format!(
            "version {version}; only version {VERSION} is understood"
        )));
    }
    c.bytes()?; // the writer's version, informational
    let count = c.varint()?;
    let mut files = Vec::new();
    for _ in 0..count {
        files.push(SharedFile {
            minimal_sector: c.u32()?,
            full_sector: c.u32()?,
            len: c.u32()?,
        });
    }
    let digest: [u8; 32] = c.take(32)?.try_into().map_err(|_| bad("digest"))?;
    let xzpacked = c.bytes()?.to_vec();
    check_table(&files)?;
    Ok(MinisoData {
        files,
        digest,
        xzpacked,
    })
}

/// The table must list files in the minimal ISO's order without overlaps (so unpacking only
/// ever moves forward).
fn check_table(files: &[SharedFile]) -> Result<(), ImageError> {
    if files.is_empty() {
        return Err(bad("the table is empty"));
    }
    for pair in files.windows(2) {
        let end = u64::from(pair[0].minimal_sector) * SECTOR + u64::from(pair[0].len);
        if end > u64::from(pair[1].minimal_sector) * SECTOR {
            return Err(bad(format!(
                "files at sectors {} and {} overlap",
                pair[0].minimal_sector, pair[1].minimal_sector
            )));
        }
    }
    Ok(())
}

/// Writes the minimal ISO `data` describes into `out`: the packed bytes with each shared file
/// copied from `full` in between, checked against the digest.
pub fn unpack(
    data: &MinisoData,
    full: &mut (impl Read + Seek),
    out: &mut impl Write,
) -> Result<(), ImageError> {
    let io = |what: &'static str| move |e: std::io::Error| bad(format!("{what}: {e}"));
    let mut packed = lzma_rust2::XzReader::new(data.xzpacked.as_slice(), false);
    let mut hashing = Hashing {
        out,
        hash: digest::Context::new(&digest::SHA256),
    };
    let mut offset = 0u64;
    for f in &data.files {
        let at = u64::from(f.minimal_sector) * SECTOR;
        let gap = at - offset;
        let copied = std::io::copy(&mut (&mut packed).take(gap), &mut hashing)
            .map_err(io("reading the packed bytes"))?;
        if copied != gap {
            return Err(bad("the packed bytes end early"));
        }
        full.seek(SeekFrom::Start(u64::from(f.full_sector) * SECTOR))
            .map_err(io("seeking in the full ISO"))?;
        let len = u64::from(f.len);
        let copied = std::io::copy(&mut (&mut *full).take(len), &mut hashing)
            .map_err(io("reading the full ISO"))?;
        if copied != len {
            return Err(bad("a shared file lies beyond the end of the full ISO"));
        }
        offset = at + len;
    }
    std::io::copy(&mut packed, &mut hashing).map_err(io("reading the packed bytes"))?;
    let got = hashing.hash.finish();
    if got.as_ref() != data.digest {
        return Err(bad(
            "the rebuilt minimal ISO does not match its digest (is the full ISO customised? \
             the minimal ISO is rebuilt from the pristine base)",
        ));
    }
    Ok(())
}

/// A writer that hashes what passes through.
struct Hashing<'a, W: Write> {
    out: &'a mut W,
    hash: digest::Context,
}

impl<W: Write> Write for Hashing<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// `kargs.json` with `coreos.liveiso=…` taken out of the default arguments, written as
/// coreos-installer rewrites it (pretty, padded with spaces to `len`: the file keeps its
/// extent); `None` when the default has no such argument.
pub fn kargs_json_without_liveiso(json: &[u8], len: usize) -> Result<Option<Vec<u8>>, ImageError> {
    let malformed = |e: String| ImageError::MalformedIso(format!("{KARGS_PATH}: {e}"));
    let mut info: KargsInfo =
        serde_json::from_slice(json.trim_ascii_end()).map_err(|e| malformed(e.to_string()))?;
    let args: Vec<&str> = info.default.split_ascii_whitespace().collect();
    let kept: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with("coreos.liveiso="))
        .collect();
    if kept.len() == args.len() {
        return Ok(None);
    }
    info.default = kept.join(" ");
    let mut out = serde_json::to_vec_pretty(&info).map_err(|e| malformed(e.to_string()))?;
    if out.len() > len {
        return Err(malformed(format!(
            "without coreos.liveiso it no longer fits its {len} bytes"
        )));
    }
    out.resize(len, b' ');
    Ok(Some(out))
}

/// Writes the minimal ISO of the full live ISO at `full_path` to `out_path`. `Ok(false)`, and
/// nothing written, when the ISO carries no `miniso.dat` (before 2021-12): the caller then has
/// only the full ISO to offer.
pub fn write_minimal_iso(full_path: &Path, out_path: &Path) -> Result<bool, ImageError> {
    let io = |what: String| ImageError::io(what);
    let mut full =
        std::fs::File::open(full_path).map_err(io(format!("opening {}", full_path.display())))?;
    let extent = match find_file(&mut full, MINISO_PATH) {
        Ok(e) => e,
        Err(ImageError::NotInIso(_)) => return Ok(false),
        Err(e) => return Err(e),
    };
    if extent.len > MAX_DATA {
        return Err(bad(format!(
            "{} bytes, more than a miniso file",
            extent.len
        )));
    }
    let mut raw = vec![0u8; extent.len as usize];
    full.seek(SeekFrom::Start(extent.offset))
        .and_then(|_| full.read_exact(&mut raw))
        .map_err(io(format!("reading {MINISO_PATH}")))?;
    let data = parse(&raw)?;
    // Read back too: kargs.json is found and rewritten in place.
    let mut out = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(out_path)
        .map_err(io(format!("creating {}", out_path.display())))?;
    {
        let mut buffered = std::io::BufWriter::with_capacity(1 << 20, &mut out);
        unpack(&data, &mut full, &mut buffered)?;
        buffered
            .flush()
            .map_err(io(format!("writing {}", out_path.display())))?;
    }
    // The default arguments without the live ISO's label, as coreos-installer leaves them.
    let kargs = match find_file(&mut out, KARGS_PATH) {
        Ok(extent) => Some(extent),
        Err(ImageError::NotInIso(_)) => None,
        Err(e) => return Err(e),
    };
    if let Some(kargs) = kargs {
        let mut json = vec![0u8; kargs.len as usize];
        out.seek(SeekFrom::Start(kargs.offset))
            .and_then(|_| out.read_exact(&mut json))
            .map_err(io(format!("reading {KARGS_PATH}")))?;
        if let Some(rewritten) = kargs_json_without_liveiso(&json, json.len())? {
            out.seek(SeekFrom::Start(kargs.offset))
                .and_then(|_| out.write_all(&rewritten))
                .map_err(io(format!("writing {KARGS_PATH}")))?;
        }
    }
    out.sync_all()
        .map_err(io(format!("writing {}", out_path.display())))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: u64) -> Vec<u8> {
        match v {
            0..=250 => vec![v as u8],
            251..=0xffff => [vec![251], (v as u16).to_le_bytes().to_vec()].concat(),
            _ => [vec![252], (v as u32).to_le_bytes().to_vec()].concat(),
        }
    }

    /// A miniso.dat for a "minimal ISO" made of `head` + the full ISO's bytes at sector 1
    /// (`shared` bytes) + `tail`.
    fn packed(head: &[u8], shared: u32, tail: &[u8], minimal: &[u8]) -> Vec<u8> {
        let mut xz = Vec::new();
        xz.extend_from_slice(head);
        xz.extend_from_slice(tail);
        let xz = super::super::cpio::xz_compress(&xz).unwrap();
        let mut out = MAGIC.to_vec();
        out.extend(varint(1));
        out.extend(varint(6));
        out.extend_from_slice(b"0.27.0");
        out.extend(varint(1));
        out.extend(varint(head.len() as u64 / SECTOR));
        out.extend(varint(1));
        out.extend(varint(u64::from(shared)));
        out.extend_from_slice(digest::digest(&digest::SHA256, minimal).as_ref());
        out.extend(varint(xz.len() as u64));
        out.extend_from_slice(&xz);
        out.extend_from_slice(&[0u8; 100]); // the rest of the file's extent
        out
    }

    #[test]
    fn the_minimal_iso_is_rebuilt_from_the_packed_bytes_and_the_full_isos_files() {
        let head = vec![7u8; 2 * SECTOR as usize];
        let tail = b"the end".to_vec();
        let full: Vec<u8> = (0..4 * SECTOR).map(|i| (i % 251) as u8).collect();
        let shared = 3000u32;
        let file = &full[SECTOR as usize..SECTOR as usize + shared as usize];
        let minimal = [head.as_slice(), file, tail.as_slice()].concat();
        let dat = packed(&head, shared, &tail, &minimal);

        let data = parse(&dat).unwrap();
        assert_eq!(
            data.files,
            [SharedFile {
                minimal_sector: 2,
                full_sector: 1,
                len: shared
            }]
        );
        let mut out = Vec::new();
        unpack(&data, &mut std::io::Cursor::new(&full), &mut out).unwrap();
        assert_eq!(out, minimal);

        // Another full ISO (a customised one) does not give the same bytes: refused.
        let mut other = full.clone();
        other[SECTOR as usize] ^= 1;
        let e = unpack(&data, &mut std::io::Cursor::new(&other), &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("digest"), "{e}");
    }

    #[test]
    fn what_is_not_a_version_1_miniso_file_is_refused_by_name() {
        let e = parse(b"NOTMINIS\x01").unwrap_err().to_string();
        assert!(
            e.contains("coreos/miniso.dat") && e.contains("not a miniso"),
            "{e}"
        );
        let mut v2 = MAGIC.to_vec();
        v2.push(2);
        let e = parse(&v2).unwrap_err().to_string();
        assert!(e.contains("version 2"), "{e}");
        let mut truncated = MAGIC.to_vec();
        truncated.extend([1, 6]);
        assert!(
            parse(&truncated)
                .unwrap_err()
                .to_string()
                .contains("truncated")
        );
        // Overlapping files would make unpacking go backwards.
        let overlapping = [
            SharedFile {
                minimal_sector: 1,
                full_sector: 1,
                len: 5000,
            },
            SharedFile {
                minimal_sector: 2,
                full_sector: 9,
                len: 1,
            },
        ];
        assert!(check_table(&overlapping).is_err());
        assert!(
            varint(70000).len() == 5
                && Cursor {
                    buf: &varint(70000)
                }
                .varint()
                .unwrap()
                    == 70000
        );
    }

    #[test]
    fn the_live_iso_label_leaves_the_default_arguments_and_the_file_keeps_its_length() {
        // Pretty, in coreos-installer's field order, as coreos-assembler writes it.
        let json = concat!(
            "{\n  \"default\": \"coreos.liveiso=rhcos-417 ignition.firstboot\",\n",
            "  \"files\": [\n    {\n      \"path\": \"EFI/redhat/grub.cfg\",\n",
            "      \"offset\": 100,\n      \"end\": \"\\n\"\n    }\n  ],\n",
            "  \"size\": 1024\n}\n"
        );
        let out = kargs_json_without_liveiso(json.as_bytes(), json.len())
            .unwrap()
            .unwrap();
        assert_eq!(out.len(), json.len());
        let want = json.replace("coreos.liveiso=rhcos-417 ", "");
        assert_eq!(
            String::from_utf8_lossy(out.trim_ascii_end()),
            want.trim_end()
        );
        // A file too short for the pretty form (a compact one) is refused by name.
        let compact =
            br#"{"default":"coreos.liveiso=x y","files":[{"path":"a","offset":1}],"size":9}"#;
        let e = kargs_json_without_liveiso(compact, compact.len()).unwrap_err();
        assert!(e.to_string().contains("no longer fits"), "{e}");
        // Nothing to take out: untouched.
        let plain = br#"{"default": "ignition.firstboot", "files": [], "size": 1024}"#;
        assert_eq!(
            kargs_json_without_liveiso(plain, plain.len()).unwrap(),
            None
        );
    }
}
