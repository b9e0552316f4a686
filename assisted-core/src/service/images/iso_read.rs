//! Locating a file's bytes inside an ISO 9660 image, so PXE artifacts can be served
//! straight out of the cached live ISO without mounting or extracting it.
//!
//! Only the primary volume is read: CoreOS live ISOs carry the PXE files there as
//! `IMAGES/PXEBOOT/VMLINUZ.;1` etc. (Rock Ridge and Joliet names are ignored). Every loop
//! is bounded by the image's own lengths or a fixed cap, and any inconsistency is an
//! error, since the input is a downloaded file we do not control.

use std::io::{Read, Seek, SeekFrom};

use super::ImageError;

/// Volume descriptors and directory records live in 2048-byte sectors.
const SECTOR: u64 = 2048;
const FIRST_DESCRIPTOR: u64 = 16;
/// Descriptors to scan for the primary one; real images have a handful.
const MAX_DESCRIPTORS: u64 = 64;
/// Largest directory we walk; live-ISO directories are a few sectors.
const MAX_DIR_LEN: u64 = 16 * 1024 * 1024;
/// Deepest path we look up (ECMA-119 allows 8 levels; Rock Ridge images go deeper).
const MAX_DEPTH: usize = 32;
/// Fixed part of a directory record before the name.
const RECORD_HEAD: usize = 33;

const FLAG_DIR: u8 = 0x02;
const FLAG_MULTI_EXTENT: u8 = 0x80;

/// Where a file's content lies in the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsoExtent {
    /// Byte offset from the start of the image.
    pub offset: u64,
    pub len: u64,
}

#[derive(Debug, Clone, Copy)]
struct Record {
    lba: u32,
    len: u32,
    flags: u8,
}

impl Record {
    fn parse(r: &[u8]) -> Option<Record> {
        // Both-endian fields; the little-endian half is authoritative for us.
        let lba = u32::from_le_bytes(r.get(2..6)?.try_into().ok()?);
        let len = u32::from_le_bytes(r.get(10..14)?.try_into().ok()?);
        let flags = *r.get(25)?;
        Some(Record { lba, len, flags })
    }

    fn is_dir(&self) -> bool {
        self.flags & FLAG_DIR != 0
    }
}

/// The extent of the file at `path` (`/`-separated, leading `/` optional). Names match
/// case-insensitively, ignoring the `;1` version and a trailing `.`, so
/// `images/pxeboot/vmlinuz` finds `IMAGES/PXEBOOT/VMLINUZ.;1`.
pub fn find_file<R: Read + Seek>(iso: &mut R, path: &str) -> Result<IsoExtent, ImageError> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let Some((file, dirs)) = parts.split_last() else {
        return Err(ImageError::input("ISO path", "empty path"));
    };
    if parts.len() > MAX_DEPTH {
        return Err(ImageError::input(
            "ISO path",
            format!("deeper than {MAX_DEPTH}"),
        ));
    }
    let image_len = iso
        .seek(SeekFrom::End(0))
        .map_err(ImageError::io("measuring the ISO"))?;
    let not_found = || ImageError::NotInIso(path.to_string());
    let mut dir = root_directory(iso, image_len)?;
    for name in dirs {
        dir = lookup(iso, image_len, dir, name)?
            .filter(Record::is_dir)
            .ok_or_else(not_found)?;
    }
    let rec = lookup(iso, image_len, dir, file)?.ok_or_else(not_found)?;
    if rec.is_dir() {
        return Err(not_found());
    }
    if rec.flags & FLAG_MULTI_EXTENT != 0 {
        // Only files over 4 GiB are split; no live-ISO artifact is that large.
        return Err(malformed(format!("{path} spans several extents")));
    }
    let extent = IsoExtent {
        offset: u64::from(rec.lba) * SECTOR,
        len: u64::from(rec.len),
    };
    if extent.len > 0 && extent.offset + extent.len > image_len {
        return Err(malformed(format!(
            "{path} ends at byte {} beyond the image length {image_len}",
            extent.offset + extent.len
        )));
    }
    Ok(extent)
}

fn malformed(reason: impl Into<String>) -> ImageError {
    ImageError::MalformedIso(reason.into())
}

fn read_sector<R: Read + Seek>(
    iso: &mut R,
    at: u64,
    buf: &mut [u8],
    what: &str,
) -> Result<(), ImageError> {
    iso.seek(SeekFrom::Start(at))
        .and_then(|_| iso.read_exact(buf))
        .map_err(ImageError::io(format!(
            "reading the ISO {what} at byte {at}"
        )))
}

/// The root directory record of the primary volume descriptor.
fn root_directory<R: Read + Seek>(iso: &mut R, image_len: u64) -> Result<Record, ImageError> {
    let mut buf = [0u8; SECTOR as usize];
    for i in 0..MAX_DESCRIPTORS {
        let at = (FIRST_DESCRIPTOR + i) * SECTOR;
        if at + SECTOR > image_len {
            break;
        }
        read_sector(iso, at, &mut buf, "volume descriptor")?;
        if &buf[1..6] != b"CD001" {
            return Err(malformed(format!(
                "no volume descriptor at sector {}",
                at / SECTOR
            )));
        }
        match buf[0] {
            1 => {
                // Sector-based LBAs below assume the universal 2048-byte block.
                let block = u16::from_le_bytes([buf[128], buf[129]]);
                if u64::from(block) != SECTOR {
                    return Err(malformed(format!("logical block size {block}")));
                }
                let root = &buf[156..190];
                return Record::parse(root)
                    .filter(|r| root[0] as usize > RECORD_HEAD && r.is_dir())
                    .ok_or_else(|| malformed("bad root directory record"));
            }
            255 => break,
            _ => {}
        }
    }
    Err(malformed("no primary volume descriptor"))
}

/// The record named `name` in directory `dir`, if any.
fn lookup<R: Read + Seek>(
    iso: &mut R,
    image_len: u64,
    dir: Record,
    name: &str,
) -> Result<Option<Record>, ImageError> {
    let start = u64::from(dir.lba) * SECTOR;
    let len = u64::from(dir.len);
    if len > MAX_DIR_LEN {
        return Err(malformed(format!("directory of {len} bytes")));
    }
    if start + len > image_len {
        return Err(malformed(format!(
            "directory at byte {start} ends beyond the image length {image_len}"
        )));
    }
    let mut buf = [0u8; SECTOR as usize];
    let mut pos = 0;
    while pos < len {
        // Bounded by SECTOR, so the cast cannot truncate.
        let n = (len - pos).min(SECTOR) as usize;
        let sector = &mut buf[..n];
        read_sector(iso, start + pos, sector, "directory")?;
        let mut at = 0;
        // Records never cross a sector; a zero length byte pads to the next sector.
        while at < n && sector[at] != 0 {
            let rlen = sector[at] as usize;
            let r = sector
                .get(at..at + rlen)
                .filter(|r| r.len() > RECORD_HEAD)
                .ok_or_else(|| {
                    malformed(format!("bad directory record at byte {}", start + pos))
                })?;
            let name_len = r[32] as usize;
            let raw = r
                .get(RECORD_HEAD..RECORD_HEAD + name_len)
                .ok_or_else(|| malformed("directory record name overruns the record"))?;
            // 0x00 and 0x01 are `.` and `..`.
            if !matches!(raw, [0] | [1]) && name_matches(raw, name) {
                return Record::parse(r)
                    .map(Some)
                    .ok_or_else(|| malformed("short directory record"));
            }
            at += rlen;
        }
        pos += n as u64;
    }
    Ok(None)
}

/// ISO 9660 `NAME.EXT;1` against a plain name: version and trailing dot dropped, any case.
fn name_matches(raw: &[u8], want: &str) -> bool {
    let base = raw.split(|b| *b == b';').next().unwrap_or(raw);
    let base = base.strip_suffix(b".").unwrap_or(base);
    let want = want.strip_suffix('.').unwrap_or(want);
    base.eq_ignore_ascii_case(want.as_bytes())
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::super::iso::read_embed_area;
    use super::super::test_iso::legacy_test_iso;
    use super::*;

    fn test_iso() -> Vec<u8> {
        // The 2020 layout: the tests below poke its fixed sectors and read its header.
        let (_dir, path) = legacy_test_iso(64 * 1024);
        std::fs::read(&path).unwrap()
    }

    fn content<'a>(iso: &'a [u8], path: &str) -> &'a [u8] {
        let e = find_file(&mut Cursor::new(iso), path).unwrap();
        &iso[e.offset as usize..][..e.len as usize]
    }

    #[test]
    fn finds_pxe_files_by_plain_names() {
        let iso = test_iso();
        assert_eq!(content(&iso, "images/pxeboot/vmlinuz"), b"kernel");
        assert_eq!(content(&iso, "/IMAGES/PXEBOOT/VMLINUZ"), b"kernel");
        assert_eq!(content(&iso, "images/pxeboot/vmlinuz."), b"kernel");
        assert_eq!(content(&iso, "images/pxeboot/initrd.img"), &[7u8; 5000][..]);
        assert_eq!(content(&iso, "images//pxeboot/rootfs.img"), b"rootfs!");
        let area = read_embed_area(&iso[32_744..32_768]).unwrap();
        let e = find_file(&mut Cursor::new(&iso), "images/ignition.img").unwrap();
        assert_eq!((e.offset, e.len), (area.offset, area.len));
    }

    #[test]
    fn missing_paths_and_directories_are_not_found() {
        let iso = test_iso();
        for p in [
            "images/pxeboot/nope",
            "images/pxeboot",
            "images/ignition.img/x",
            "nope/vmlinuz",
            "images/pxeboot/vmlinuz/x",
        ] {
            let err = find_file(&mut Cursor::new(&iso), p).unwrap_err();
            assert!(matches!(err, ImageError::NotInIso(_)), "{p}: {err}");
        }
        assert!(matches!(
            find_file(&mut Cursor::new(&iso), "//"),
            Err(ImageError::InvalidInput { .. })
        ));
    }

    #[test]
    fn name_matching() {
        assert!(name_matches(b"VMLINUZ.;1", "vmlinuz"));
        assert!(name_matches(b"INITRD.IMG;1", "initrd.img"));
        assert!(name_matches(b"IMAGES", "images"));
        assert!(name_matches(b"rootfs.img", "ROOTFS.IMG"));
        assert!(!name_matches(b"INITRD.IMG;1", "initrd"));
        assert!(!name_matches(b"VMLINUZ.;1", "vmlinu"));
    }

    #[test]
    fn truncated_and_garbage_images_are_errors_not_panics() {
        let iso = test_iso();
        let kernel = find_file(&mut Cursor::new(&iso), "images/pxeboot/vmlinuz").unwrap();
        // Every truncation before the kernel's last byte fails; none panics.
        let mut cut = 0;
        while cut < iso.len() {
            let r = find_file(&mut Cursor::new(&iso[..cut]), "images/pxeboot/vmlinuz");
            if (cut as u64) < kernel.offset + kernel.len {
                assert!(r.is_err(), "truncated at {cut}");
            }
            cut += if cut < 24 * 2048 { 97 } else { 2048 };
        }
        for garbage in [vec![], vec![0u8; 40_000], vec![0xffu8; 40_000]] {
            assert!(find_file(&mut Cursor::new(&garbage), "images/pxeboot/vmlinuz").is_err());
        }
        // Random byte flips in the descriptors and directories (sectors 16..23).
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let mut bad = iso.clone();
            for _ in 0..1 + next() % 4 {
                let at = 16 * 2048 + (next() % (7 * 2048)) as usize;
                bad[at] = next() as u8;
            }
            let _ = find_file(&mut Cursor::new(&bad), "images/pxeboot/rootfs.img");
        }
    }

    #[test]
    fn hostile_directory_fields_are_rejected() {
        let iso = test_iso();
        let root_len_at = 16 * 2048 + 156 + 10;
        // A root directory claiming 4 GiB.
        let mut bad = iso.clone();
        bad[root_len_at..root_len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = find_file(&mut Cursor::new(&bad), "images/pxeboot/vmlinuz").unwrap_err();
        assert!(matches!(err, ImageError::MalformedIso(_)), "{err}");
        // A record shorter than its fixed part.
        let mut bad = iso.clone();
        bad[20 * 2048 + 34] = 10;
        assert!(find_file(&mut Cursor::new(&bad), "images/pxeboot/vmlinuz").is_err());
        // A directory that contains itself: lookups stay bounded by the path depth.
        let mut bad = iso.clone();
        let images_lba_at = 20 * 2048 + 68 + 2;
        bad[images_lba_at..images_lba_at + 4].copy_from_slice(&20u32.to_le_bytes());
        let deep = "images/".repeat(30) + "x";
        assert!(find_file(&mut Cursor::new(&bad), &deep).is_err());
        let deeper = "images/".repeat(40) + "x";
        assert!(find_file(&mut Cursor::new(&bad), &deeper).is_err());
        // Not ISO 9660 at all.
        let mut bad = iso.clone();
        bad[16 * 2048 + 1] = b'X';
        let err = find_file(&mut Cursor::new(&bad), "images/pxeboot/vmlinuz").unwrap_err();
        assert!(err.to_string().contains("volume descriptor"), "{err}");
    }
}
