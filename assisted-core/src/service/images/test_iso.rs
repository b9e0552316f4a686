//! ISO helpers for tests (feature `test-support`): [`write_test_iso`] writes a tiny ISO 9660
//! image shaped like a CoreOS live ISO of today (`coreos/igninfo.json`, `coreos/kargs.json`
//! and a karg area in `EFI/redhat/grub.cfg`, `coreos/miniso.dat` to rebuild the minimal ISO
//! from, no system-area header), [`write_legacy_test_iso`]
//! one of the 2020 layout (the `coreiso+` header, no karg areas); [`extract_embedded_ignition`]
//! and [`embedded_kernel_arguments`] read back what was spliced into either. The service itself
//! never needs any of them.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use lzma_rust2::{CheckType, XzOptions, XzWriter};
use ring::digest;

use super::ImageError;
use super::cpio::{self, Entry};
use super::iso::{EmbedArea, HEADER_LEN, HEADER_OFFSET};
use super::layout::read_layout;

const SECTOR: u64 = 2048;

const ROOTFS_PATH: &str = "IMAGES/PXEBOOT/ROOTFS.IMG;1";
const MINISO_PATH: &str = "COREOS/MINISO.DAT;1";
/// Bytes reserved for `coreos/miniso.dat`, whose content is only known once the minimal ISO
/// is packed; the data is written at its start, zeros after it (coreos-installer allows
/// trailing bytes). Ours needs under 1 KiB whatever the contents, as every file of the
/// minimal ISO is cut out of it.
const MINISO_DAT_LEN: u64 = 64 * 1024;
const MINISO_MAGIC: &[u8; 8] = b"MINISO\0\0";
const MINISO_VERSION: u64 = 1;
/// For information only; coreos-installer puts its own version there.
const MINISO_APP_VERSION: &str = concat!("assisted-core ", env!("CARGO_PKG_VERSION"));
/// Enough for the few KiB of the minimal ISO that are not files, and small enough that
/// neither the compressor nor a reader allocates much.
const MINISO_XZ_DICT_SIZE: u32 = 1 << 20;

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
/// a karg area holding [`TEST_ISO_DEFAULT_KARGS`] on the `linux` line of
/// `/EFI/REDHAT/GRUB.CFG`, listed in `/COREOS/KARGS.JSO`, and `/COREOS/MINISO.DAT`, from
/// which `coreos-installer iso extract minimal-iso` rebuilds the same ISO without
/// `ROOTFS.IMG` (and without `MINISO.DAT`). Names are plain ISO 9660 level 1
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

/// For the unit tests of the readers: a small ISO of the 2020 layout (the one with the header,
/// whose fixed sectors they poke) in a temporary directory, with an embed area of `area_len`.
#[cfg(test)]
pub(super) fn legacy_test_iso(area_len: u64) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.iso");
    let contents = TestIsoContents {
        kernel: b"kernel",
        initrd: &[7u8; 5000],
        rootfs: b"rootfs!",
    };
    write_legacy_test_iso(&path, &contents, area_len).unwrap();
    (dir, path)
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
            // Pretty-printed, as coreos-assembler writes it: `iso extract minimal-iso`
            // rewrites it pretty-printed without `coreos.liveiso=`, in the same space.
            let kargs = serde_json::json!({
                "default": TEST_ISO_DEFAULT_KARGS,
                "files": [{
                    "path": TEST_ISO_KARG_FILE,
                    "offset": offset,
                    "pad": KARG_PAD.to_string(),
                    "end": KARG_END.to_string(),
                }],
                "size": TEST_ISO_KARG_AREA_LEN,
            });
            let kargs = format!("{kargs:#}\n");
            let mut files = vec![
                file("COREOS/IGNINFO.JSO;1", igninfo.as_bytes()),
                file("COREOS/KARGS.JSO;1", kargs.as_bytes()),
                TestFile {
                    path: MINISO_PATH,
                    data: Payload::Zeros(MINISO_DAT_LEN),
                },
                file("EFI/REDHAT/GRUB.CFG;1", grub.as_bytes()),
                ignition,
            ];
            files.extend(pxe);
            // miniso.dat's length is fixed, so the sectors its table names are those of the
            // ISO written below.
            let miniso = miniso_dat(&files)?;
            let files: Vec<TestFile<'_>> = files
                .into_iter()
                .map(|f| match f.path {
                    MINISO_PATH => file(MINISO_PATH, &miniso),
                    _ => f,
                })
                .collect();
            write_image_file(path, &files, false)
        }
        TestIsoLayout::Legacy2020 => {
            let mut files = vec![ignition];
            files.extend(pxe);
            write_image_file(path, &files, embed_area_len > 0)
        }
    }
}

/// The content of `COREOS/MINISO.DAT` for the ISO of `full_files` (its own entry a
/// placeholder of [`MINISO_DAT_LEN`] bytes), [`MINISO_DAT_LEN`] bytes long: what
/// coreos-installer 0.27's `pack minimal-iso` would write for the minimal ISO, the same files
/// without `ROOTFS.IMG` and `MINISO.DAT`. Its format (bincode 1, little endian, varints):
/// a header (magic, version, app version), then a table of the minimal ISO's files with
/// their sectors in both ISOs, the minimal ISO's SHA-256, and the minimal ISO xz-compressed
/// with every file of the table cut out (unpacking copies those from the full ISO).
fn miniso_dat(full_files: &[TestFile<'_>]) -> io::Result<Vec<u8>> {
    let minimal_files: Vec<TestFile<'_>> = full_files
        .iter()
        .filter(|f| f.path != ROOTFS_PATH && f.path != MINISO_PATH)
        .copied()
        .collect();
    let full = plan(full_files)?;
    let minimal = plan(&minimal_files)?;
    let mut table = Vec::new();
    for (f, &(lba, len)) in minimal_files.iter().zip(&minimal.extents) {
        // Empty files share LBA 0; coreos-installer drops them too.
        if len == 0 {
            continue;
        }
        let in_full = full_files.iter().position(|g| g.path == f.path);
        let Some(&(full_lba, _)) = in_full.and_then(|i| full.extents.get(i)) else {
            return Err(io::Error::other(format!(
                "{} is not in the full ISO",
                f.path
            )));
        };
        table.push(MinisoEntry {
            minimal: lba,
            full: full_lba,
            length: len,
        });
    }
    // The format wants them in minimal-ISO order (ours already are, as files are laid out).
    table.sort_by_key(|e| e.minimal);

    let mut packer = MinisoPacker::new(&table)?;
    write_image(&mut packer, &minimal_files, false)?;
    let (digest, xzpacked) = packer.finish()?;

    let mut out = Vec::new();
    out.extend_from_slice(MINISO_MAGIC);
    put_varint(&mut out, MINISO_VERSION);
    put_varint(&mut out, MINISO_APP_VERSION.len() as u64);
    out.extend_from_slice(MINISO_APP_VERSION.as_bytes());
    put_varint(&mut out, table.len() as u64);
    for e in &table {
        put_varint(&mut out, e.minimal.into());
        put_varint(&mut out, e.full.into());
        put_varint(&mut out, e.length.into());
    }
    out.extend_from_slice(&digest);
    put_varint(&mut out, xzpacked.len() as u64);
    out.extend_from_slice(&xzpacked);
    if out.len() as u64 > MINISO_DAT_LEN {
        return Err(io::Error::other(format!(
            "miniso.dat needs {} bytes, more than the {MINISO_DAT_LEN} reserved",
            out.len()
        )));
    }
    out.resize(MINISO_DAT_LEN as usize, 0);
    Ok(out)
}

/// A file both ISOs hold: its sector in each and its length in bytes.
struct MinisoEntry {
    minimal: u32,
    full: u32,
    length: u32,
}

/// bincode 1's varint for unsigned integers: up to 250 in one byte, else a marker byte and
/// the value as the smallest of u16, u32 and u64 that holds it, little endian.
fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v <= 250 {
        out.push(v as u8);
    } else if let Ok(v) = u16::try_from(v) {
        out.push(251);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = u32::try_from(v) {
        out.push(252);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        out.push(253);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Takes the minimal ISO as it is written: hashes all of it and compresses only the bytes
/// outside the table's files, so the minimal ISO is never stored.
struct MinisoPacker {
    /// The table's files as byte ranges `[start, end)` of the minimal ISO, in order.
    cuts: Vec<(u64, u64)>,
    /// The first cut not yet behind `offset`.
    next: usize,
    offset: u64,
    sha256: digest::Context,
    xz: XzWriter<Vec<u8>>,
}

impl MinisoPacker {
    fn new(table: &[MinisoEntry]) -> io::Result<Self> {
        let cuts = table
            .iter()
            .map(|e| {
                let start = u64::from(e.minimal) * SECTOR;
                (start, start + u64::from(e.length))
            })
            .collect();
        // The fast preset: a third of the time of the default in debug builds, and only a
        // few dozen bytes bigger on what is left of a test ISO.
        let mut options = XzOptions::with_preset(1);
        options.lzma_options.dict_size = MINISO_XZ_DICT_SIZE;
        options.set_check_sum_type(CheckType::Crc64);
        Ok(Self {
            cuts,
            next: 0,
            offset: 0,
            sha256: digest::Context::new(&digest::SHA256),
            xz: XzWriter::new(Vec::new(), options)?,
        })
    }

    /// The minimal ISO's SHA-256 and the xz stream.
    fn finish(self) -> io::Result<([u8; 32], Vec<u8>)> {
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(self.sha256.finish().as_ref());
        Ok((sha256, self.xz.finish()?))
    }
}

impl Write for MinisoPacker {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sha256.update(buf);
        let start = self.offset;
        let end = start + buf.len() as u64;
        let mut at = start;
        while at < end {
            while self.cuts.get(self.next).is_some_and(|&(_, e)| e <= at) {
                self.next += 1;
            }
            // Keep up to the next cut starting in this buffer, then skip what it covers.
            let (keep_until, resume_at) = match self.cuts.get(self.next) {
                Some(&(s, e)) if s < end => (s.max(at), e.min(end)),
                _ => (end, end),
            };
            self.xz
                .write_all(&buf[(at - start) as usize..(keep_until - start) as usize])?;
            at = resume_at;
        }
        self.offset = end;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
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
#[derive(Clone, Copy)]
struct TestFile<'a> {
    path: &'static str,
    data: Payload<'a>,
}

#[derive(Clone, Copy)]
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

/// Where everything of an image of `files` lands.
struct Plan {
    /// In path-table order; directory `i` is at LBA `ROOT_LBA + i`.
    dirs: Vec<Dir>,
    /// Each file's (LBA, length in bytes), in file order; empty files conventionally at LBA 0.
    extents: Vec<(u32, u32)>,
    total_sectors: u32,
}

fn plan(files: &[TestFile<'_>]) -> io::Result<Plan> {
    let too_big = |what: &str| invalid(format!("{what} exceeds 4 GiB"));
    let size32 = |n: u64, what: &str| u32::try_from(n).map_err(|_| too_big(what));
    let dirs = directories(files);
    let mut next = ROOT_LBA + dirs.len() as u32;
    let mut extents = Vec::with_capacity(files.len());
    for f in files {
        let len = f.data.len();
        let sectors = size32(len.div_ceil(SECTOR), "a file")?;
        extents.push((if len == 0 { 0 } else { next }, size32(len, "a file")?));
        next = next
            .checked_add(sectors)
            .ok_or_else(|| too_big("the image"))?;
    }
    Ok(Plan {
        dirs,
        extents,
        total_sectors: next,
    })
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

fn write_image_file(path: &Path, files: &[TestFile<'_>], legacy_header: bool) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    write_image(&mut out, files, legacy_header)?;
    out.flush()
}

/// Writes the image of `files` (laid out as [`plan`] says) to `out`, front to back.
// Over 80 lines: the metadata sectors are filled in disk order, one after another; the
// directory records loop shares its offsets with the rest.
fn write_image(
    out: &mut impl Write,
    files: &[TestFile<'_>],
    legacy_header: bool,
) -> io::Result<()> {
    let Plan {
        dirs,
        extents,
        total_sectors,
    } = plan(files)?;
    let dir_lba = |i: usize| ROOT_LBA + i as u32;
    let first_file_lba = dir_lba(dirs.len());

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

    let (l_table, m_table) = path_tables(&dirs);
    if l_table.len() > SECTOR as usize {
        return Err(invalid("the path table exceeds one sector".into()));
    }
    meta[sector(L_PATH_LBA)..][..l_table.len()].copy_from_slice(&l_table);
    meta[sector(M_PATH_LBA)..][..m_table.len()].copy_from_slice(&m_table);

    let root = dir_record(&[0], ROOT_LBA, dir_size, true);
    primary_volume_descriptor(
        &mut meta[sector(PVD_LBA)..][..SECTOR as usize],
        total_sectors,
        l_table.len() as u32,
        &root,
    );
    let term = &mut meta[sector(PVD_LBA + 1)..][..SECTOR as usize];
    term[0] = 255;
    term[1..6].copy_from_slice(b"CD001");
    term[6] = 1;

    out.write_all(&meta)?;
    let zeros = vec![0u8; 64 * 1024];
    for f in files {
        let len = f.data.len();
        match f.data {
            Payload::Bytes(data) => out.write_all(data)?,
            Payload::Zeros(n) => write_zeros(out, &zeros, n)?,
        }
        let pad = len.next_multiple_of(SECTOR) - len;
        write_zeros(out, &zeros, pad)?;
    }
    Ok(())
}

/// The little- and big-endian path tables.
fn path_tables(dirs: &[Dir]) -> (Vec<u8>, Vec<u8>) {
    // Path tables: (name length, extended attributes, LBA, parent number, name), in the
    // directories' order; parent numbers count from 1.
    let mut l_table = Vec::new();
    let mut m_table = Vec::new();
    for (i, d) in dirs.iter().enumerate() {
        let (name, lba, parent) = (d.name(), ROOT_LBA + i as u32, d.parent as u16 + 1);
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
    (l_table, m_table)
}

/// The primary volume descriptor (ECMA-119 8.4): the volume's size, its path tables and root.
fn primary_volume_descriptor(pvd: &mut [u8], total_sectors: u32, path_table_len: u32, root: &[u8]) {
    pvd[0] = 1;
    pvd[1..6].copy_from_slice(b"CD001");
    pvd[6] = 1;
    pvd[8..40].copy_from_slice(&padded::<32>(b"LINUX"));
    pvd[40..72].copy_from_slice(&padded::<32>(b"ASSISTED_TEST_ISO"));
    pvd[80..88].copy_from_slice(&both32(total_sectors));
    pvd[120..124].copy_from_slice(&both16(1));
    pvd[124..128].copy_from_slice(&both16(1));
    pvd[128..132].copy_from_slice(&both16(SECTOR as u16));
    pvd[132..140].copy_from_slice(&both32(path_table_len));
    pvd[140..144].copy_from_slice(&L_PATH_LBA.to_le_bytes());
    pvd[148..152].copy_from_slice(&M_PATH_LBA.to_be_bytes());
    pvd[156..190].copy_from_slice(root);
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
            (
                b"COREOS",
                b"\0",
                &["IGNINFO.JSO;1", "KARGS.JSO;1", "MINISO.DAT;1"],
            ),
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

    /// A bincode 1 varint, as coreos-installer reads it.
    fn varint(r: &mut &[u8]) -> u64 {
        let (marker, rest) = r.split_first().unwrap();
        let (n, value) = match marker {
            0..=250 => (0, u64::from(*marker)),
            251 => (
                2,
                u64::from(u16::from_le_bytes(rest[..2].try_into().unwrap())),
            ),
            252 => (
                4,
                u64::from(u32::from_le_bytes(rest[..4].try_into().unwrap())),
            ),
            253 => (8, u64::from_le_bytes(rest[..8].try_into().unwrap())),
            _ => panic!("marker {marker}"),
        };
        *r = &rest[n..];
        value
    }

    fn take<'a>(r: &mut &'a [u8], n: usize) -> &'a [u8] {
        let (head, rest) = r.split_at(n);
        *r = rest;
        head
    }

    /// `miniso.dat` decoded as coreos-installer 0.27 does.
    struct Miniso {
        app_version: String,
        /// (minimal sector, full sector, length).
        table: Vec<(u64, u64, u64)>,
        digest: Vec<u8>,
        xzpacked: Vec<u8>,
    }

    fn decode_miniso(mut r: &[u8]) -> Miniso {
        assert_eq!(take(&mut r, 8), b"MINISO\0\0");
        assert_eq!(varint(&mut r), 1, "version");
        let n = varint(&mut r) as usize;
        let app_version = String::from_utf8(take(&mut r, n).to_vec()).unwrap();
        let entries = varint(&mut r);
        let table = (0..entries)
            .map(|_| (varint(&mut r), varint(&mut r), varint(&mut r)))
            .collect();
        let digest = take(&mut r, 32).to_vec();
        let n = varint(&mut r) as usize;
        let xzpacked = take(&mut r, n).to_vec();
        // Trailing bytes are allowed; ours are the placeholder's zeros.
        assert!(r.iter().all(|b| *b == 0));
        Miniso {
            app_version,
            table,
            digest,
            xzpacked,
        }
    }

    /// The minimal ISO, unpacked as `coreos-installer iso extract minimal-iso` does (before it
    /// edits the kernel arguments), its digest checked.
    fn unpack_minimal(full: &[u8], miniso: &Miniso) -> Vec<u8> {
        let mut xz = lzma_rust2::XzReader::new(miniso.xzpacked.as_slice(), false);
        let mut out = Vec::new();
        for &(minimal, full_sector, length) in &miniso.table {
            let gap = minimal * 2048 - out.len() as u64;
            let copied = io::copy(&mut (&mut xz).take(gap), &mut out).unwrap();
            assert_eq!(copied, gap, "the xz stream ends early");
            out.extend_from_slice(&full[(full_sector * 2048) as usize..][..length as usize]);
        }
        xz.read_to_end(&mut out).unwrap();
        assert_eq!(
            digest::digest(&digest::SHA256, &out).as_ref(),
            miniso.digest,
            "the minimal ISO's digest"
        );
        out
    }

    fn file_bytes<'a>(iso: &'a [u8], path: &str) -> &'a [u8] {
        let f = find_file(&mut Cursor::new(iso), path).unwrap();
        &iso[f.offset as usize..][..f.len as usize]
    }

    #[test]
    fn miniso_dat_rebuilds_the_iso_without_rootfs() {
        let (_dir, full) = written(TestIsoLayout::Current, 256 * 1024);
        let dat = file_bytes(&full, "coreos/miniso.dat");
        assert_eq!(dat.len() as u64, MINISO_DAT_LEN);
        let miniso = decode_miniso(dat);
        assert!(miniso.app_version.starts_with("assisted-core "));
        // Every file but ROOTFS.IMG and MINISO.DAT, the embed area among them: only the
        // directories and padding are left to compress.
        assert_eq!(miniso.table.len(), 6);
        assert!(miniso.xzpacked.len() < 4096, "{}", miniso.xzpacked.len());
        for pair in miniso.table.windows(2) {
            assert!(pair[0].0 * 2048 + pair[0].2 <= pair[1].0 * 2048, "{pair:?}");
        }

        let minimal = unpack_minimal(&full, &miniso);
        assert_eq!(
            minimal.len() as u64,
            full.len() as u64 - MINISO_DAT_LEN - 2048
        );
        for gone in ["images/pxeboot/rootfs.img", "coreos/miniso.dat"] {
            assert!(
                find_file(&mut Cursor::new(&minimal), gone).is_err(),
                "{gone}"
            );
        }
        for (path, want) in [
            ("images/pxeboot/vmlinuz", CONTENTS.kernel),
            ("images/pxeboot/initrd.img", CONTENTS.initrd),
            ("coreos/kargs.jso", file_bytes(&full, "coreos/kargs.jso")),
            (TEST_ISO_KARG_FILE, file_bytes(&full, TEST_ISO_KARG_FILE)),
        ] {
            assert_eq!(file_bytes(&minimal, path), want, "{path}");
        }
        // The same layout: an empty embed area, the default kernel arguments.
        let full_layout = read_layout(&mut Cursor::new(&full)).unwrap();
        let minimal_layout = read_layout(&mut Cursor::new(&minimal)).unwrap();
        assert_eq!(minimal_layout.ignition.len, full_layout.ignition.len);
        assert_eq!(
            extract_embedded_ignition(Cursor::new(&minimal)).unwrap(),
            None
        );
        assert_eq!(
            embedded_kernel_arguments(Cursor::new(&minimal))
                .unwrap()
                .as_deref(),
            Some(TEST_ISO_DEFAULT_KARGS)
        );
    }

    #[test]
    fn miniso_dat_copes_with_empty_files_and_large_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.iso");
        // Empty files share LBA 0 and are left out of the table.
        write_test_iso(&path, &TestIsoContents::default(), 2048).unwrap();
        let full = std::fs::read(&path).unwrap();
        let miniso = decode_miniso(file_bytes(&full, "coreos/miniso.dat"));
        assert!(miniso.table.iter().all(|e| e.0 != 0 && e.2 != 0));
        assert_eq!(miniso.table.len(), 4);
        unpack_minimal(&full, &miniso);

        // Lengths and sectors past two bytes of varint: a kernel of 70,000 sectors puts the
        // initrd after it.
        let kernel = vec![3u8; 70_000 * 2048];
        let contents = TestIsoContents {
            kernel: &kernel,
            ..CONTENTS
        };
        write_test_iso(&path, &contents, 256 * 1024).unwrap();
        let full = std::fs::read(&path).unwrap();
        let miniso = decode_miniso(file_bytes(&full, "coreos/miniso.dat"));
        assert!(miniso.table.iter().any(|e| e.2 > u64::from(u16::MAX)));
        assert!(miniso.table.iter().any(|e| e.0 > u64::from(u16::MAX)));
        let minimal = unpack_minimal(&full, &miniso);
        assert_eq!(file_bytes(&minimal, "images/pxeboot/vmlinuz"), kernel);
        assert_eq!(
            file_bytes(&minimal, "images/pxeboot/initrd.img"),
            CONTENTS.initrd
        );
    }

    #[test]
    fn varints_are_bincodes() {
        for (v, want) in [
            (0u64, &[0u8][..]),
            (250, &[250]),
            (251, &[251, 251, 0]),
            (65_535, &[251, 255, 255]),
            (65_536, &[252, 0, 0, 1, 0]),
            (u64::from(u32::MAX) + 1, &[253, 0, 0, 0, 0, 1, 0, 0, 0]),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, want, "{v}");
            assert_eq!(varint(&mut out.as_slice()), v);
        }
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
