//! ISO helpers for tests (feature `test-support`): [`write_test_iso`] writes a tiny ISO 9660
//! image shaped like a CoreOS live ISO, and [`extract_embedded_ignition`] reads back the
//! Ignition config spliced into one. The service itself never needs either.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::ImageError;
use super::cpio::{self, Entry};
use super::iso::{EmbedArea, HEADER_LEN, HEADER_OFFSET, read_embed_area};

const SECTOR: u64 = 2048;

/// Reads the embed area header of an ISO.
pub fn embed_area_of<R: Read + Seek>(iso: &mut R) -> Result<Option<EmbedArea>, ImageError> {
    let mut header = [0u8; HEADER_LEN];
    iso.seek(SeekFrom::Start(HEADER_OFFSET))
        .and_then(|_| iso.read_exact(&mut header))
        .map_err(ImageError::io("reading the ISO embed area header"))?;
    Ok(read_embed_area(&header))
}

/// The Ignition config embedded in an ISO: `Ok(None)` when the area is still empty
/// (all zeros); an error when the ISO has no embed area or the area holds no cpio.
pub fn extract_embedded_ignition<R: Read + Seek>(mut iso: R) -> Result<Option<String>, ImageError> {
    let area = embed_area_of(&mut iso)?
        .ok_or_else(|| ImageError::MalformedEmbed("the ISO has no coreiso+ header".into()))?;
    let len = usize::try_from(area.len)
        .map_err(|_| ImageError::MalformedEmbed(format!("area length {} too large", area.len)))?;
    let mut buf = vec![0u8; len];
    iso.seek(SeekFrom::Start(area.offset))
        .and_then(|_| iso.read_exact(&mut buf))
        .map_err(ImageError::io("reading the ISO embed area"))?;
    if buf.iter().all(|b| *b == 0) {
        return Ok(None);
    }
    for entry in cpio::read(&buf)? {
        if let Entry::File { path, data, .. } = entry
            && path == "config.ign"
        {
            return String::from_utf8(data)
                .map(Some)
                .map_err(|_| ImageError::MalformedEmbed("config.ign is not UTF-8".into()));
        }
    }
    Err(ImageError::MalformedEmbed(
        "no config.ign in the embed area cpio".into(),
    ))
}

/// Dummy payloads for [`write_test_iso`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TestIsoContents<'a> {
    pub kernel: &'a [u8],
    pub initrd: &'a [u8],
    pub rootfs: &'a [u8],
}

// Fixed sector layout of the test ISO: system area, PVD, terminator, two path tables,
// three one-sector directories, then the file extents.
const PVD_LBA: u32 = 16;
const L_PATH_LBA: u32 = 18;
const M_PATH_LBA: u32 = 19;
const ROOT_LBA: u32 = 20;
const IMAGES_LBA: u32 = 21;
const PXEBOOT_LBA: u32 = 22;
const FIRST_FILE_LBA: u32 = 23;

/// Writes a small but real ISO 9660 image shaped like a CoreOS live ISO: `/IMAGES/
/// IGNITION.IMG` (zeros, `embed_area_len` bytes, pointed to by the `coreiso+` header)
/// and `/IMAGES/PXEBOOT/{VMLINUZ,INITRD.IMG,ROOTFS.IMG}`. Names are plain ISO 9660
/// level 1 (upper case, `;1`); there is no Rock Ridge or Joliet, which tools and Linux
/// mounts map back to lower case.
pub fn write_test_iso(
    path: &Path,
    contents: &TestIsoContents<'_>,
    embed_area_len: u64,
) -> io::Result<()> {
    let too_big =
        |what: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{what} exceeds 4 GiB"));
    let size32 = |n: u64, what: &str| u32::try_from(n).map_err(|_| too_big(what));
    let payloads: [(&[u8], u64); 4] = [
        (&[], embed_area_len),
        (contents.kernel, contents.kernel.len() as u64),
        (contents.initrd, contents.initrd.len() as u64),
        (contents.rootfs, contents.rootfs.len() as u64),
    ];
    // Extents in payload order; empty files conventionally point at LBA 0.
    let mut next = FIRST_FILE_LBA;
    let mut extents = [(0u32, 0u32); 4];
    for (i, (_, len)) in payloads.iter().enumerate() {
        let len32 = size32(*len, "a file")?;
        let sectors = size32(len.div_ceil(SECTOR), "a file")?;
        extents[i] = (if *len == 0 { 0 } else { next }, len32);
        next = next
            .checked_add(sectors)
            .ok_or_else(|| too_big("the image"))?;
    }
    let total_sectors = next;

    let mut meta = vec![0u8; FIRST_FILE_LBA as usize * SECTOR as usize];
    let sector = |lba: u32| lba as usize * SECTOR as usize;
    let area = EmbedArea {
        offset: u64::from(extents[0].0) * SECTOR,
        len: embed_area_len,
    };
    if embed_area_len > 0 {
        meta[HEADER_OFFSET as usize..][..HEADER_LEN].copy_from_slice(&area.header());
    }

    let dir_size = SECTOR as u32;
    let root = [
        dir_record(&[0], ROOT_LBA, dir_size, true),
        dir_record(&[1], ROOT_LBA, dir_size, true),
        dir_record(b"IMAGES", IMAGES_LBA, dir_size, true),
    ];
    let images = [
        dir_record(&[0], IMAGES_LBA, dir_size, true),
        dir_record(&[1], ROOT_LBA, dir_size, true),
        dir_record(b"IGNITION.IMG;1", extents[0].0, extents[0].1, false),
        dir_record(b"PXEBOOT", PXEBOOT_LBA, dir_size, true),
    ];
    // Records within a directory are sorted by name.
    let pxeboot = [
        dir_record(&[0], PXEBOOT_LBA, dir_size, true),
        dir_record(&[1], IMAGES_LBA, dir_size, true),
        dir_record(b"INITRD.IMG;1", extents[2].0, extents[2].1, false),
        dir_record(b"ROOTFS.IMG;1", extents[3].0, extents[3].1, false),
        dir_record(b"VMLINUZ.;1", extents[1].0, extents[1].1, false),
    ];
    for (lba, records) in [
        (ROOT_LBA, &root[..]),
        (IMAGES_LBA, &images[..]),
        (PXEBOOT_LBA, &pxeboot[..]),
    ] {
        let mut at = sector(lba);
        for r in records {
            meta[at..at + r.len()].copy_from_slice(r);
            at += r.len();
        }
    }

    // Path tables: (name, LBA, parent directory number), in level then name order.
    let dirs: [(&[u8], u32, u16); 3] = [
        (&[0], ROOT_LBA, 1),
        (b"IMAGES", IMAGES_LBA, 1),
        (b"PXEBOOT", PXEBOOT_LBA, 2),
    ];
    let mut l_table = Vec::new();
    let mut m_table = Vec::new();
    for (name, lba, parent) in dirs {
        for (table, big) in [(&mut l_table, false), (&mut m_table, true)] {
            table.push(name.len() as u8);
            table.push(0);
            table.extend_from_slice(&if big {
                lba.to_be_bytes()
            } else {
                lba.to_le_bytes()
            });
            table.extend_from_slice(&if big {
                parent.to_be_bytes()
            } else {
                parent.to_le_bytes()
            });
            table.extend_from_slice(name);
            if name.len() % 2 == 1 {
                table.push(0);
            }
        }
    }
    meta[sector(L_PATH_LBA)..][..l_table.len()].copy_from_slice(&l_table);
    meta[sector(M_PATH_LBA)..][..m_table.len()].copy_from_slice(&m_table);

    let pvd = &mut meta[sector(PVD_LBA)..][..SECTOR as usize];
    pvd[0] = 1;
    pvd[1..6].copy_from_slice(b"CD001");
    pvd[6] = 1;
    pvd[8..40].copy_from_slice(&padded::<32>(b"LINUX"));
    pvd[40..72].copy_from_slice(&padded::<32>(b"ASSISTED_TEST_ISO"));
    pvd[80..88].copy_from_slice(&both32(total_sectors));
    pvd[120..124].copy_from_slice(&both16(1));
    pvd[124..128].copy_from_slice(&both16(1));
    pvd[128..132].copy_from_slice(&both16(SECTOR as u16));
    pvd[132..140].copy_from_slice(&both32(l_table.len() as u32));
    pvd[140..144].copy_from_slice(&L_PATH_LBA.to_le_bytes());
    pvd[148..152].copy_from_slice(&M_PATH_LBA.to_be_bytes());
    pvd[156..190].copy_from_slice(&root[0]);
    for range in [
        190..318,
        318..446,
        446..574,
        574..702,
        702..739,
        739..776,
        776..813,
    ] {
        pvd[range].fill(b' ');
    }
    pvd[574..583].copy_from_slice(b"ASSISTED ");
    let date = b"2024010100000000";
    for at in [813, 830] {
        pvd[at..at + 16].copy_from_slice(date);
    }
    for at in [847, 864] {
        pvd[at..at + 16].fill(b'0');
    }
    pvd[881] = 1;
    let term = &mut meta[sector(PVD_LBA + 1)..][..SECTOR as usize];
    term[0] = 255;
    term[1..6].copy_from_slice(b"CD001");
    term[6] = 1;

    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    out.write_all(&meta)?;
    let zeros = vec![0u8; 64 * 1024];
    for (data, len) in payloads {
        if data.is_empty() {
            write_zeros(&mut out, &zeros, len)?;
        } else {
            out.write_all(data)?;
        }
        let pad = len.next_multiple_of(SECTOR) - len;
        write_zeros(&mut out, &zeros, pad)?;
    }
    out.flush()
}

fn write_zeros(out: &mut impl Write, zeros: &[u8], mut n: u64) -> io::Result<()> {
    while n > 0 {
        let k = n.min(zeros.len() as u64) as usize;
        out.write_all(&zeros[..k])?;
        n -= k as u64;
    }
    Ok(())
}

fn both16(v: u16) -> [u8; 4] {
    let (l, b) = (v.to_le_bytes(), v.to_be_bytes());
    [l[0], l[1], b[0], b[1]]
}

fn both32(v: u32) -> [u8; 8] {
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&v.to_le_bytes());
    out[4..].copy_from_slice(&v.to_be_bytes());
    out
}

fn padded<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [b' '; N];
    out[..s.len()].copy_from_slice(s);
    out
}

/// An ISO 9660 directory record (ECMA-119 9.1) with a fixed recording date.
fn dir_record(name: &[u8], lba: u32, size: u32, is_dir: bool) -> Vec<u8> {
    let len = 33 + name.len() + (name.len() + 1) % 2;
    let mut r = vec![0u8; len];
    r[0] = len as u8;
    r[2..10].copy_from_slice(&both32(lba));
    r[10..18].copy_from_slice(&both32(size));
    r[18..25].copy_from_slice(&[124, 1, 1, 0, 0, 0, 0]); // 2024-01-01 00:00:00 UTC
    r[25] = if is_dir { 2 } else { 0 };
    r[28..32].copy_from_slice(&both16(1));
    r[32] = name.len() as u8;
    r[33..33 + name.len()].copy_from_slice(name);
    r
}
