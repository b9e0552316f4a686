//! ISO helpers for tests (feature `test-support`): [`write_test_iso`] writes a tiny ISO 9660
//! image shaped like a CoreOS live ISO of today (`coreos/igninfo.json`, `coreos/kargs.json`
//! and a karg area in `EFI/redhat/grub.cfg`, no system-area header), [`write_legacy_test_iso`]
//! one of the 2020 layout (the `coreiso+` header, no karg areas); [`extract_embedded_ignition`]
//! and [`embedded_kernel_arguments`] read back what was spliced into either. The service itself
//! never needs any of them.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::ImageError;
use super::cpio::{self, Entry};
use super::iso::{EmbedArea, HEADER_LEN, HEADER_OFFSET};
use super::layout::read_layout;

const SECTOR: u64 = 2048;

/// The kernel arguments a test ISO of the current layout boots with by default.
pub const TEST_ISO_DEFAULT_KARGS: &str =
    "coreos.liveiso=ASSISTED_TEST_ISO ignition.firstboot ignition.platform.id=metal";
/// Bytes in the karg area of a test ISO of the current layout (coreos-assembler's are ~1 KiB).
pub const TEST_ISO_KARG_AREA_LEN: usize = 1024;
/// The file holding the karg area, as `kargs.json` names it.
pub const TEST_ISO_KARG_FILE: &str = "EFI/redhat/grub.cfg";
const KARG_PAD: char = '#';
const KARG_END: char = '\n';

/// The Ignition config embedded in an ISO of either layout, its area found as coreos-installer
/// finds it: `Ok(None)` when the area is still empty (all zeros); an error when the ISO has no
/// embed area or the area holds no cpio.
pub fn extract_embedded_ignition<R: Read + Seek>(mut iso: R) -> Result<Option<String>, ImageError> {
    let area = read_layout(&mut iso)?.ignition;
    let len = usize::try_from(area.len)
        .map_err(|_| ImageError::MalformedEmbed(format!("area length {} too large", area.len)))?;
    let buf = read_at(&mut iso, area.offset, len, "the ISO embed area")?;
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

/// The kernel arguments in an ISO's karg areas, as `coreos-installer iso kargs show` prints
/// them: an area's content without its padding and end character. `Ok(None)` for an ISO
/// without karg areas (no `kargs.json`); an error when the areas disagree or one is not closed
/// by its end character.
pub fn embedded_kernel_arguments<R: Read + Seek>(mut iso: R) -> Result<Option<String>, ImageError> {
    let Some(kargs) = read_layout(&mut iso)?.kargs else {
        return Ok(None);
    };
    let malformed = |why: String| ImageError::MalformedIso(why);
    let mut found: Option<String> = None;
    for area in &kargs.areas {
        let buf = read_at(&mut iso, area.offset, kargs.size as usize, "a karg area")?;
        let text = String::from_utf8(buf)
            .map_err(|_| malformed(format!("the karg area at {} is not UTF-8", area.offset)))?;
        let args = text
            .trim_end_matches(area.pad)
            .strip_suffix(area.end)
            .ok_or_else(|| {
                malformed(format!(
                    "the karg area at {} has no end character {:?}",
                    area.offset, area.end
                ))
            })?;
        match &found {
            Some(first) if first != args => {
                return Err(malformed(format!(
                    "the karg areas differ: {first:?} and {args:?}"
                )));
            }
            Some(_) => {}
            None => found = Some(args.to_string()),
        }
    }
    Ok(found)
}

fn read_at<R: Read + Seek>(
    iso: &mut R,
    offset: u64,
    len: usize,
    what: &str,
) -> Result<Vec<u8>, ImageError> {
    let mut buf = vec![0u8; len];
    iso.seek(SeekFrom::Start(offset))
        .and_then(|_| iso.read_exact(&mut buf))
        .map_err(ImageError::io(format!("reading {what}")))?;
    Ok(buf)
}

/// Dummy payloads for [`write_test_iso`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TestIsoContents<'a> {
    pub kernel: &'a [u8],
    pub initrd: &'a [u8],
    pub rootfs: &'a [u8],
}

/// Which of coreos-assembler's live-ISO layouts a test ISO has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TestIsoLayout {
    /// Since 2023: `coreos/igninfo.json` names `images/ignition.img`, `coreos/kargs.json` one
    /// karg area in `EFI/redhat/grub.cfg`; nothing in the system area.
    #[default]
    Current,
    /// 2020: the `coreiso+` system-area header points at `images/ignition.img`; no `coreos/`
    /// directory and no karg areas.
    Legacy2020,
}

/// Writes a small but real ISO 9660 image shaped like a CoreOS live ISO of today (see
/// [`TestIsoLayout::Current`]): `/IMAGES/IGNITION.IMG` (zeros, `embed_area_len` bytes) and
/// `/IMAGES/PXEBOOT/{VMLINUZ,INITRD.IMG,ROOTFS.IMG}`, found through `/COREOS/IGNINFO.JSO`,
/// and a karg area holding [`TEST_ISO_DEFAULT_KARGS`] on the `linux` line of
/// `/EFI/REDHAT/GRUB.CFG`, listed in `/COREOS/KARGS.JSO`. Names are plain ISO 9660 level 1
/// (upper case, `;1`); there is no Rock Ridge or Joliet, which tools and Linux mounts map
/// back to lower case.
pub fn write_test_iso(
    path: &Path,
    contents: &TestIsoContents<'_>,
    embed_area_len: u64,
) -> io::Result<()> {
    write_test_iso_with_layout(path, contents, embed_area_len, TestIsoLayout::Current)
}

/// [`write_test_iso`] in the 2020 layout ([`TestIsoLayout::Legacy2020`]): the `coreiso+`
/// header and `/IMAGES/IGNITION.IMG`, the PXE files, nothing else.
pub fn write_legacy_test_iso(
    path: &Path,
    contents: &TestIsoContents<'_>,
    embed_area_len: u64,
) -> io::Result<()> {
    write_test_iso_with_layout(path, contents, embed_area_len, TestIsoLayout::Legacy2020)
}

/// [`write_test_iso`] in the given layout.
pub fn write_test_iso_with_layout(
    path: &Path,
    contents: &TestIsoContents<'_>,
    embed_area_len: u64,
    layout: TestIsoLayout,
) -> io::Result<()> {
    let pxe = [
        file("IMAGES/PXEBOOT/VMLINUZ.;1", contents.kernel),
        file("IMAGES/PXEBOOT/INITRD.IMG;1", contents.initrd),
        file("IMAGES/PXEBOOT/ROOTFS.IMG;1", contents.rootfs),
    ];
    let ignition = TestFile {
        path: "IMAGES/IGNITION.IMG;1",
        data: Payload::Zeros(embed_area_len),
    };
    match layout {
        TestIsoLayout::Current => {
            let (grub, offset) = grub_cfg();
            let igninfo = serde_json::json!({ "file": "images/ignition.img" }).to_string();
            let kargs = serde_json::json!({
                "default": TEST_ISO_DEFAULT_KARGS,
                "files": [{
                    "path": TEST_ISO_KARG_FILE,
                    "offset": offset,
                    "pad": KARG_PAD.to_string(),
                    "end": KARG_END.to_string(),
                }],
                "size": TEST_ISO_KARG_AREA_LEN,
            })
            .to_string();
            let mut files = vec![
                file("COREOS/IGNINFO.JSO;1", igninfo.as_bytes()),
                file("COREOS/KARGS.JSO;1", kargs.as_bytes()),
                file("EFI/REDHAT/GRUB.CFG;1", grub.as_bytes()),
                ignition,
            ];
            files.extend(pxe);
            write_image(path, &files, false)
        }
        TestIsoLayout::Legacy2020 => {
            let mut files = vec![ignition];
            files.extend(pxe);
            write_image(path, &files, embed_area_len > 0)
        }
    }
}

/// A GRUB config whose `linux` line holds the karg area, as coreos-assembler writes it: the
/// default arguments, the end character (which ends the line), then padding (a comment line)
/// to the area size. Also returns the area's offset in the file.
fn grub_cfg() -> (String, usize) {
    let head = "# The test ISO's GRUB menu; the kernel-argument area is on the linux line.\n\
                set timeout=1\n\
                menuentry 'Assisted test ISO (live)' --class gnu-linux {\n\
                \tlinux /images/pxeboot/vmlinuz ";
    let used = TEST_ISO_DEFAULT_KARGS.len() + KARG_END.len_utf8();
    let pad = KARG_PAD.to_string().repeat(TEST_ISO_KARG_AREA_LEN - used);
    let cfg = format!(
        "{head}{TEST_ISO_DEFAULT_KARGS}{KARG_END}{pad}\n\
         \tinitrd /images/pxeboot/initrd.img /images/ignition.img\n\
         }}\n"
    );
    (cfg, head.len())
}

/// One file of a test ISO: its full ISO 9660 path (upper case, `;1`) and its content.
struct TestFile<'a> {
    path: &'static str,
    data: Payload<'a>,
}

enum Payload<'a> {
    Bytes(&'a [u8]),
    Zeros(u64),
}

impl Payload<'_> {
    fn len(&self) -> u64 {
        match self {
            Payload::Bytes(b) => b.len() as u64,
            Payload::Zeros(n) => *n,
        }
    }
}

fn file<'a>(path: &'static str, data: &'a [u8]) -> TestFile<'a> {
    TestFile {
        path,
        data: Payload::Bytes(data),
    }
}

/// One directory, in path-table order.
struct Dir {
    /// Full path without a leading `/`; empty for the root.
    path: String,
    /// Index of the parent in the path table order (the root is its own parent).
    parent: usize,
}

impl Dir {
    fn name(&self) -> &[u8] {
        match self.path.rsplit_once('/') {
            _ if self.path.is_empty() => &[0],
            Some((_, name)) => name.as_bytes(),
            None => self.path.as_bytes(),
        }
    }
}

fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}

/// ECMA-119 9.3 ordering of identifiers: by name, then extension (shorter sorts first, as if
/// padded with spaces), the `;version` aside.
fn sort_key(id: &[u8]) -> (&[u8], &[u8]) {
    let id = id.split(|b| *b == b';').next().unwrap_or(id);
    match id.iter().position(|b| *b == b'.') {
        Some(dot) => (&id[..dot], &id[dot + 1..]),
        None => (id, &[]),
    }
}

/// The directories holding `files`, in path-table order: by level, then parent number, then
/// name. A breadth-first walk visiting each directory's children by name gives exactly that.
fn directories(files: &[TestFile<'_>]) -> Vec<Dir> {
    let mut all: Vec<&str> = Vec::new();
    for f in files {
        let mut dir = parent_of(f.path);
        while !dir.is_empty() && !all.contains(&dir) {
            all.push(dir);
            dir = parent_of(dir);
        }
    }
    let mut dirs = vec![Dir {
        path: String::new(),
        parent: 0,
    }];
    let mut i = 0;
    while i < dirs.len() {
        let mut children: Vec<&str> = all
            .iter()
            .copied()
            .filter(|d| parent_of(d) == dirs[i].path)
            .collect();
        children.sort_by(|a, b| sort_key(a.as_bytes()).cmp(&sort_key(b.as_bytes())));
        for c in children {
            dirs.push(Dir {
                path: c.to_string(),
                parent: i,
            });
        }
        i += 1;
    }
    dirs
}

// Fixed sectors: system area, PVD, terminator, two path tables, then one sector per directory
// (in path-table order), then the file extents in the order given.
const PVD_LBA: u32 = 16;
const L_PATH_LBA: u32 = 18;
const M_PATH_LBA: u32 = 19;
const ROOT_LBA: u32 = 20;

fn write_image(path: &Path, files: &[TestFile<'_>], legacy_header: bool) -> io::Result<()> {
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
    let too_big = |what: &str| invalid(format!("{what} exceeds 4 GiB"));
    let size32 = |n: u64, what: &str| u32::try_from(n).map_err(|_| too_big(what));
    let dirs = directories(files);
    let dir_lba = |i: usize| ROOT_LBA + i as u32;
    let first_file_lba = dir_lba(dirs.len());

    // Extents in file order; empty files conventionally point at LBA 0.
    let mut next = first_file_lba;
    let mut extents = Vec::with_capacity(files.len());
    for f in files {
        let len = f.data.len();
        let sectors = size32(len.div_ceil(SECTOR), "a file")?;
        extents.push((if len == 0 { 0 } else { next }, size32(len, "a file")?));
        next = next
            .checked_add(sectors)
            .ok_or_else(|| too_big("the image"))?;
    }
    let total_sectors = next;

    let mut meta = vec![0u8; first_file_lba as usize * SECTOR as usize];
    let sector = |lba: u32| lba as usize * SECTOR as usize;
    if legacy_header {
        // The legacy layout's area is IGNITION.IMG, its first file.
        let area = EmbedArea {
            offset: u64::from(extents[0].0) * SECTOR,
            len: files[0].data.len(),
        };
        meta[HEADER_OFFSET as usize..][..HEADER_LEN].copy_from_slice(&area.header());
    }

    // Directory records: `.`, `..`, then subdirectories and files sorted by name.
    let dir_size = SECTOR as u32;
    for (i, d) in dirs.iter().enumerate() {
        let mut children: Vec<(&[u8], Vec<u8>)> = Vec::new();
        for (j, sub) in dirs.iter().enumerate().skip(1) {
            if sub.parent == i {
                children.push((
                    sub.name(),
                    dir_record(sub.name(), dir_lba(j), dir_size, true),
                ));
            }
        }
        for (f, (lba, len)) in files.iter().zip(&extents) {
            if parent_of(f.path) == d.path {
                let name = &f.path.as_bytes()[d.path.len() + usize::from(i != 0)..];
                children.push((name, dir_record(name, *lba, *len, false)));
            }
        }
        children.sort_by(|a, b| sort_key(a.0).cmp(&sort_key(b.0)));
        let records = [
            dir_record(&[0], dir_lba(i), dir_size, true),
            dir_record(&[1], dir_lba(d.parent), dir_size, true),
        ]
        .into_iter()
        .chain(children.into_iter().map(|(_, r)| r));
        let out = &mut meta[sector(dir_lba(i))..][..SECTOR as usize];
        let mut at = 0;
        for r in records {
            out.get_mut(at..at + r.len())
                .ok_or_else(|| invalid(format!("directory /{} exceeds one sector", d.path)))?
                .copy_from_slice(&r);
            at += r.len();
        }
    }

    // Path tables: (name length, extended attributes, LBA, parent number, name), in the
    // directories' order; parent numbers count from 1.
    let mut l_table = Vec::new();
    let mut m_table = Vec::new();
    for (i, d) in dirs.iter().enumerate() {
        let (name, lba, parent) = (d.name(), dir_lba(i), d.parent as u16 + 1);
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
    if l_table.len() > SECTOR as usize {
        return Err(invalid("the path table exceeds one sector".into()));
    }
    meta[sector(L_PATH_LBA)..][..l_table.len()].copy_from_slice(&l_table);
    meta[sector(M_PATH_LBA)..][..m_table.len()].copy_from_slice(&m_table);

    let root = dir_record(&[0], ROOT_LBA, dir_size, true);
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
    pvd[156..190].copy_from_slice(&root);
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
    for f in files {
        let len = f.data.len();
        match f.data {
            Payload::Bytes(data) => out.write_all(data)?,
            Payload::Zeros(n) => write_zeros(&mut out, &zeros, n)?,
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

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use http_body_util::BodyExt;

    use super::super::iso_read::find_file;
    use super::super::layout::karg_area_content;
    use super::super::stream::CustomizedIso;
    use super::*;

    const CONTENTS: TestIsoContents<'static> = TestIsoContents {
        kernel: b"kernel",
        initrd: &[7u8; 5000],
        rootfs: b"rootfs!",
    };

    fn written(layout: TestIsoLayout, area_len: u64) -> (tempfile::TempDir, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.iso");
        write_test_iso_with_layout(&path, &CONTENTS, area_len, layout).unwrap();
        let iso = std::fs::read(&path).unwrap();
        (dir, iso)
    }

    fn le32(b: &[u8]) -> u32 {
        u32::from_le_bytes(b[..4].try_into().unwrap())
    }

    /// The records of the one-sector directory at `lba`: (name, LBA, is a directory).
    fn records(iso: &[u8], lba: u32) -> Vec<(Vec<u8>, u32, bool)> {
        let dir = &iso[lba as usize * 2048..][..2048];
        let mut out = Vec::new();
        let mut at = 0;
        while at < dir.len() && dir[at] != 0 {
            let r = &dir[at..at + dir[at] as usize];
            assert_eq!(
                r[2..6],
                r[6..10].iter().rev().copied().collect::<Vec<_>>()[..]
            );
            out.push((
                r[33..33 + r[32] as usize].to_vec(),
                le32(&r[2..]),
                r[25] & 2 != 0,
            ));
            at += r.len();
        }
        out
    }

    /// The L path table, each entry (name, LBA, parent number), checked against the M one.
    fn path_table(iso: &[u8]) -> Vec<(Vec<u8>, u32, u16)> {
        let pvd = &iso[16 * 2048..];
        let len = le32(&pvd[132..]) as usize;
        let l = &iso[le32(&pvd[140..]) as usize * 2048..][..len];
        let m_lba = u32::from_be_bytes(pvd[148..152].try_into().unwrap());
        let m = &iso[m_lba as usize * 2048..][..len];
        let mut out = Vec::new();
        let mut at = 0;
        while at < len {
            let n = l[at] as usize;
            let lba = le32(&l[at + 2..]);
            let parent = u16::from_le_bytes([l[at + 6], l[at + 7]]);
            assert_eq!(m[at + 2..at + 6], lba.to_be_bytes());
            assert_eq!(m[at + 6..at + 8], parent.to_be_bytes());
            out.push((l[at + 8..at + 8 + n].to_vec(), lba, parent));
            at += 8 + n + n % 2;
        }
        out
    }

    fn names(rs: &[(Vec<u8>, u32, bool)]) -> Vec<&str> {
        rs.iter()
            .map(|r| std::str::from_utf8(&r.0).unwrap())
            .collect()
    }

    #[test]
    fn current_layout_has_sorted_records_and_ordered_path_tables() {
        let (_dir, iso) = written(TestIsoLayout::Current, 64 * 1024);
        assert!(
            iso[..32_768].iter().all(|b| *b == 0),
            "no system-area header"
        );
        let table = path_table(&iso);
        let table_names: Vec<(&[u8], u16)> =
            table.iter().map(|(n, _, p)| (n.as_slice(), *p)).collect();
        // Level, then parent number, then name.
        assert_eq!(
            table_names,
            [
                (&b"\0"[..], 1),
                (b"COREOS", 1),
                (b"EFI", 1),
                (b"IMAGES", 1),
                (b"REDHAT", 3),
                (b"PXEBOOT", 4),
            ]
        );
        let lba = |name: &[u8]| table.iter().find(|t| t.0 == name).unwrap().1;
        let root = records(&iso, lba(b"\0"));
        assert_eq!(le32(&iso[16 * 2048 + 158..]), lba(b"\0"));
        for (dir, parent, want) in [
            (&b"\0"[..], &b"\0"[..], &["COREOS", "EFI", "IMAGES"][..]),
            (b"COREOS", b"\0", &["IGNINFO.JSO;1", "KARGS.JSO;1"]),
            (b"EFI", b"\0", &["REDHAT"]),
            (b"REDHAT", b"EFI", &["GRUB.CFG;1"]),
            (b"IMAGES", b"\0", &["IGNITION.IMG;1", "PXEBOOT"]),
            (
                b"PXEBOOT",
                b"IMAGES",
                &["INITRD.IMG;1", "ROOTFS.IMG;1", "VMLINUZ.;1"],
            ),
        ] {
            let rs = records(&iso, lba(dir));
            assert_eq!(rs[0], (vec![0], lba(dir), true), "{dir:?}: .");
            assert_eq!(rs[1], (vec![1], lba(parent), true), "{dir:?}: ..");
            assert_eq!(names(&rs[2..]), want, "{dir:?}");
            // Every subdirectory record points where the path table says.
            for (name, at, is_dir) in &rs[2..] {
                if *is_dir {
                    assert_eq!(*at, lba(name), "{name:?}");
                }
            }
        }
        assert_eq!(names(&root[2..]), ["COREOS", "EFI", "IMAGES"]);
    }

    #[test]
    fn legacy_layout_keeps_the_2020_tree_and_header() {
        let (_dir, iso) = written(TestIsoLayout::Legacy2020, 64 * 1024);
        assert_eq!(&iso[HEADER_OFFSET as usize..][..8], b"coreiso+");
        let table: Vec<(Vec<u8>, u16)> = path_table(&iso)
            .into_iter()
            .map(|(n, _, p)| (n, p))
            .collect();
        assert_eq!(
            table,
            [
                (b"\0".to_vec(), 1),
                (b"IMAGES".to_vec(), 1),
                (b"PXEBOOT".to_vec(), 2)
            ]
        );
        // Root at 20, IMAGES and PXEBOOT after it: iso_read's tests poke these sectors.
        assert_eq!(names(&records(&iso, 20)[2..]), ["IMAGES"]);
        assert_eq!(
            names(&records(&iso, 21)[2..]),
            ["IGNITION.IMG;1", "PXEBOOT"]
        );
        assert_eq!(
            names(&records(&iso, 22)[2..]),
            ["INITRD.IMG;1", "ROOTFS.IMG;1", "VMLINUZ.;1"]
        );
    }

    #[test]
    fn the_karg_area_is_the_grub_linux_line() {
        let (_dir, iso) = written(TestIsoLayout::Current, 4096);
        let grub = find_file(&mut Cursor::new(&iso), TEST_ISO_KARG_FILE).unwrap();
        let grub = std::str::from_utf8(&iso[grub.offset as usize..][..grub.len as usize]).unwrap();
        let linux = grub.lines().find(|l| l.starts_with("\tlinux ")).unwrap();
        assert_eq!(
            linux,
            format!("\tlinux /images/pxeboot/vmlinuz {TEST_ISO_DEFAULT_KARGS}")
        );
        let pad = grub.lines().find(|l| l.starts_with('#') && l.len() > 100);
        let pad = pad.unwrap();
        assert!(pad.bytes().all(|b| b == b'#'));
        assert_eq!(
            TEST_ISO_DEFAULT_KARGS.len() + 1 + pad.len(),
            TEST_ISO_KARG_AREA_LEN
        );
        assert_eq!(
            embedded_kernel_arguments(Cursor::new(&iso))
                .unwrap()
                .as_deref(),
            Some(TEST_ISO_DEFAULT_KARGS)
        );
    }

    #[test]
    fn readers_follow_what_is_spliced_into_either_layout() {
        for layout in [TestIsoLayout::Current, TestIsoLayout::Legacy2020] {
            let (_dir, mut iso) = written(layout, 64 * 1024);
            assert_eq!(extract_embedded_ignition(Cursor::new(&iso)).unwrap(), None);
            let area = read_layout(&mut Cursor::new(&iso)).unwrap().ignition;
            let cpio = super::super::ignition_cpio(br#"{"ignition":{"version":"3.1.0"}}"#);
            iso[area.offset as usize..][..cpio.len()].copy_from_slice(&cpio);
            assert_eq!(
                extract_embedded_ignition(Cursor::new(&iso))
                    .unwrap()
                    .as_deref(),
                Some(r#"{"ignition":{"version":"3.1.0"}}"#),
                "{layout:?}"
            );
            iso[area.offset as usize] = b'x';
            assert!(extract_embedded_ignition(Cursor::new(&iso)).is_err());
        }
        let (_dir, iso) = written(TestIsoLayout::Legacy2020, 4096);
        assert_eq!(embedded_kernel_arguments(Cursor::new(&iso)).unwrap(), None);

        let (_dir, mut iso) = written(TestIsoLayout::Current, 4096);
        let kargs = read_layout(&mut Cursor::new(&iso)).unwrap().kargs.unwrap();
        let area = &kargs.areas[0];
        let content = karg_area_content(&kargs, area, &["console=ttyS0".into()]).unwrap();
        iso[area.offset as usize..][..content.len()].copy_from_slice(&content);
        assert_eq!(
            embedded_kernel_arguments(Cursor::new(&iso)).unwrap(),
            Some(format!("{TEST_ISO_DEFAULT_KARGS} console=ttyS0"))
        );
        // An area that lost its end character is an error, not arguments.
        iso[area.offset as usize..][..content.len()].fill(b'#');
        assert!(embedded_kernel_arguments(Cursor::new(&iso)).is_err());
    }

    #[tokio::test]
    async fn the_served_iso_boots_with_its_ignition_and_kernel_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let ign = r#"{"ignition":{"version":"3.1.0"}}"#;
        let extra = ["console=ttyS0".to_string(), "rd.neednet=1".into()];
        let current = dir.path().join("current.iso");
        write_test_iso(&current, &CONTENTS, 64 * 1024).unwrap();
        let iso = CustomizedIso::open_with_kargs(&current, ign, &extra)
            .await
            .unwrap();
        let body = iso.response(false, None).into_body().collect().await;
        let body = body.unwrap().to_bytes();
        assert_eq!(
            extract_embedded_ignition(Cursor::new(&body))
                .unwrap()
                .as_deref(),
            Some(ign)
        );
        assert_eq!(
            embedded_kernel_arguments(Cursor::new(&body)).unwrap(),
            Some(format!(
                "{TEST_ISO_DEFAULT_KARGS} console=ttyS0 rd.neednet=1"
            ))
        );
        // The 2020 layout has nowhere to put them.
        let legacy = dir.path().join("legacy.iso");
        write_legacy_test_iso(&legacy, &CONTENTS, 64 * 1024).unwrap();
        let err = CustomizedIso::open_with_kargs(&legacy, ign, &extra)
            .await
            .unwrap_err();
        assert!(matches!(err, ImageError::NoKargAreas(_)), "{err}");
    }
}
