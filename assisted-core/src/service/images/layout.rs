//! Where a base live ISO takes its customisations, found the way coreos-installer (0.27) finds
//! them, for every layout coreos-assembler has written:
//!
//! - the Ignition embed area: the file `/coreos/igninfo.json` names (with an optional offset and
//!   length inside it; current ISOs), else `/images/ignition.img` (ISOs of 2020–2022, which also
//!   carry the legacy `coreiso+` header in the system area, read last);
//! - the kernel-argument areas: `/coreos/kargs.json` lists the files (`EFI/redhat/grub.cfg`,
//!   `isolinux/isolinux.cfg`, ...) holding an area of `size` bytes at an offset, the default
//!   arguments, and the padding and end characters. ISOs before 2021-09 have none.
//!
//! Reading is synchronous over `Read + Seek` (a few small files); the image server runs it on
//! a blocking thread.

use std::io::{Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};

use super::ImageError;
use super::iso::{EmbedArea, HEADER_LEN, HEADER_OFFSET, read_embed_area};
use super::iso_read::{IsoExtent, find_file};

// The primary volume's 8.3 names (the long ones are Rock Ridge's), as coreos-installer reads them.
const IGNINFO_PATH: &str = "coreos/igninfo.jso";
const DEFAULT_IGNITION_PATH: &str = "images/ignition.img";
const KARGS_PATH: &str = "coreos/kargs.jso";
/// The JSON descriptions are a few hundred bytes; anything much larger is not one.
const MAX_JSON: u64 = 64 * 1024;
/// coreos-installer refuses karg areas above this size too.
const MAX_KARG_AREA: u64 = 2048;

/// The customisable areas of one base ISO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsoLayout {
    pub ignition: EmbedArea,
    /// `None` for ISOs without `kargs.json` (before 2021-09): no kernel arguments can be added.
    pub kargs: Option<KargAreas>,
}

/// The kernel-argument areas of `kargs.json`: the same content is written into each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KargAreas {
    /// Bytes in each area.
    pub size: u64,
    /// The arguments the ISO boots with by default.
    pub default: String,
    pub areas: Vec<KargArea>,
}

/// One area: where it starts in the ISO and how its content is closed and padded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KargArea {
    pub offset: u64,
    pub pad: char,
    pub end: char,
}

#[derive(Deserialize)]
struct IgnInfo {
    file: String,
    offset: Option<u64>,
    length: Option<u64>,
}

/// `kargs.json` as coreos-installer reads and writes it (field order and skipped `None`s
/// included, so that a rewrite is byte for byte the tool's).
#[derive(Deserialize, Serialize)]
pub(super) struct KargsInfo {
    pub(super) default: String,
    files: Vec<KargsFile>,
    size: u64,
}

#[derive(Deserialize, Serialize)]
struct KargsFile {
    path: String,
    offset: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pad: Option<char>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<char>,
}

/// Finds the Ignition embed area and the kernel-argument areas of `iso`.
pub fn read_layout<R: Read + Seek>(iso: &mut R) -> Result<IsoLayout, ImageError> {
    Ok(IsoLayout {
        ignition: ignition_area(iso)?,
        kargs: karg_areas(iso)?,
    })
}

fn ignition_area<R: Read + Seek>(iso: &mut R) -> Result<EmbedArea, ImageError> {
    if let Some(json) = optional_file(iso, IGNINFO_PATH)? {
        let info: IgnInfo =
            serde_json::from_slice(&json).map_err(|e| malformed(format!("{IGNINFO_PATH}: {e}")))?;
        let file = find_file(iso, &info.file)?;
        return area_inside(file, info.offset.unwrap_or(0), info.length, &info.file);
    }
    match find_file(iso, DEFAULT_IGNITION_PATH) {
        Ok(file) => area_inside(file, 0, None, DEFAULT_IGNITION_PATH),
        Err(ImageError::NotInIso(_)) => legacy_header(iso),
        Err(e) => Err(e),
    }
}

/// `offset` and `length` (default: to the end of the file) inside `file`'s extent.
fn area_inside(
    file: IsoExtent,
    offset: u64,
    length: Option<u64>,
    name: &str,
) -> Result<EmbedArea, ImageError> {
    let len = length.unwrap_or_else(|| file.len.saturating_sub(offset));
    if len == 0 || offset.saturating_add(len) > file.len {
        return Err(malformed(format!(
            "the Ignition area ({len} bytes at {offset}) does not fit in {name} ({} bytes)",
            file.len
        )));
    }
    Ok(EmbedArea {
        offset: file.offset + offset,
        len,
    })
}

/// The `coreiso+` header of ISOs that predate `igninfo.json` and have no `images/ignition.img`
/// in their tree (only our own test ISOs of the 2020 layout would).
fn legacy_header<R: Read + Seek>(iso: &mut R) -> Result<EmbedArea, ImageError> {
    let mut header = [0u8; HEADER_LEN];
    iso.seek(SeekFrom::Start(HEADER_OFFSET))
        .and_then(|_| iso.read_exact(&mut header))
        .map_err(ImageError::io("reading the ISO system area"))?;
    read_embed_area(&header).ok_or_else(|| {
        malformed(format!(
            "no Ignition embed area: neither {IGNINFO_PATH}, {DEFAULT_IGNITION_PATH} nor a \
             coreiso+ header (not a CoreOS live ISO?)"
        ))
    })
}

fn karg_areas<R: Read + Seek>(iso: &mut R) -> Result<Option<KargAreas>, ImageError> {
    let Some(json) = optional_file(iso, KARGS_PATH)? else {
        return Ok(None);
    };
    let info: KargsInfo =
        serde_json::from_slice(&json).map_err(|e| malformed(format!("{KARGS_PATH}: {e}")))?;
    if info.size == 0 || info.size > MAX_KARG_AREA {
        return Err(malformed(format!(
            "{KARGS_PATH}: area size {} is not in 1..={MAX_KARG_AREA}",
            info.size
        )));
    }
    if info.default.len() as u64 >= info.size {
        return Err(malformed(format!(
            "{KARGS_PATH}: the default arguments do not fit in the {}-byte areas",
            info.size
        )));
    }
    if info.files.is_empty() {
        return Err(malformed(format!("{KARGS_PATH} lists no areas")));
    }
    let mut areas = Vec::with_capacity(info.files.len());
    for f in &info.files {
        let file = find_file(iso, &f.path)?;
        if f.offset.saturating_add(info.size) > file.len {
            return Err(malformed(format!(
                "{KARGS_PATH}: the area at {} in {} runs past its end ({} bytes)",
                f.offset, f.path, file.len
            )));
        }
        areas.push(KargArea {
            offset: file.offset + f.offset,
            pad: f.pad.unwrap_or('#'),
            end: f.end.unwrap_or('\n'),
        });
    }
    areas.sort_by_key(|a| a.offset);
    Ok(Some(KargAreas {
        size: info.size,
        default: info.default,
        areas,
    }))
}

/// The content of the file at `path`, `None` when the ISO has no such file.
fn optional_file<R: Read + Seek>(iso: &mut R, path: &str) -> Result<Option<Vec<u8>>, ImageError> {
    let extent = match find_file(iso, path) {
        Ok(e) => e,
        Err(ImageError::NotInIso(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    if extent.len > MAX_JSON {
        return Err(malformed(format!("{path} is {} bytes", extent.len)));
    }
    let mut buf = vec![0u8; extent.len as usize];
    iso.seek(SeekFrom::Start(extent.offset))
        .and_then(|_| iso.read_exact(&mut buf))
        .map_err(ImageError::io(&format!("reading {path} from the ISO")))?;
    Ok(Some(buf))
}

/// The bytes of one karg area holding the ISO's default arguments followed by `extra`, as
/// coreos-installer writes them: the arguments, the end character, then padding to the size.
pub fn karg_area_content(
    kargs: &KargAreas,
    area: &KargArea,
    extra: &[String],
) -> Result<Vec<u8>, ImageError> {
    let args = std::iter::once(kargs.default.trim())
        .chain(extra.iter().map(|a| a.trim()))
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut content = format!("{args}{}", area.end).into_bytes();
    if content.len() as u64 > kargs.size {
        return Err(ImageError::KargsTooLarge {
            size: content.len() as u64,
            area: kargs.size,
        });
    }
    let mut pad = [0u8; 4];
    let pad = area.pad.encode_utf8(&mut pad).as_bytes();
    while (content.len() as u64) < kargs.size {
        content.extend_from_slice(pad);
    }
    content.truncate(kargs.size as usize);
    Ok(content)
}

fn malformed(reason: impl Into<String>) -> ImageError {
    ImageError::MalformedIso(reason.into())
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::super::iso_read::find_file;
    use super::super::test_iso::{
        TEST_ISO_DEFAULT_KARGS, TEST_ISO_KARG_AREA_LEN, TEST_ISO_KARG_FILE, TestIsoContents,
        TestIsoLayout, write_test_iso_with_layout,
    };
    use super::*;

    fn test_iso(layout: TestIsoLayout) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.iso");
        let contents = TestIsoContents {
            kernel: b"kernel",
            initrd: b"initrd",
            rootfs: b"rootfs",
        };
        write_test_iso_with_layout(&path, &contents, 8192, layout).unwrap();
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn finds_the_areas_of_todays_test_iso_through_the_coreos_directory() {
        let iso = test_iso(TestIsoLayout::Current);
        // Nothing in the system area: only igninfo.json leads to the Ignition area.
        assert_eq!(read_embed_area(&iso[HEADER_OFFSET as usize..]), None);
        let layout = read_layout(&mut Cursor::new(&iso)).unwrap();
        let ign = find_file(&mut Cursor::new(&iso), DEFAULT_IGNITION_PATH).unwrap();
        assert_eq!(
            layout.ignition,
            EmbedArea {
                offset: ign.offset,
                len: 8192
            }
        );
        let kargs = layout.kargs.expect("kargs.json");
        assert_eq!(kargs.size, TEST_ISO_KARG_AREA_LEN as u64);
        assert_eq!(kargs.default, TEST_ISO_DEFAULT_KARGS);
        let grub = find_file(&mut Cursor::new(&iso), TEST_ISO_KARG_FILE).unwrap();
        let [area] = &kargs.areas[..] else {
            panic!("one karg area: {:?}", kargs.areas);
        };
        assert_eq!((area.pad, area.end), ('#', '\n'));
        assert!(area.offset > grub.offset && area.offset + kargs.size < grub.offset + grub.len);
        let at = area.offset as usize;
        assert_eq!(
            &iso[at..at + TEST_ISO_DEFAULT_KARGS.len() + 2],
            format!("{TEST_ISO_DEFAULT_KARGS}\n#").as_bytes()
        );
        assert_eq!(iso[at - 1], b' ', "the area follows `linux <kernel> `");
    }

    #[test]
    fn finds_the_area_of_the_2020_test_iso_and_no_karg_areas() {
        let iso = test_iso(TestIsoLayout::Legacy2020);
        let layout = read_layout(&mut Cursor::new(&iso)).unwrap();
        let header = read_embed_area(&iso[HEADER_OFFSET as usize..]).expect("coreiso+ header");
        assert_eq!(layout.ignition, header);
        let ign = find_file(&mut Cursor::new(&iso), DEFAULT_IGNITION_PATH).unwrap();
        assert_eq!((ign.offset, ign.len), (header.offset, 8192));
        assert_eq!(layout.kargs, None);
    }

    fn areas() -> KargAreas {
        KargAreas {
            size: 40,
            default: "coreos.liveiso=x ignition.firstboot".into(),
            areas: vec![KargArea {
                offset: 0,
                pad: '#',
                end: '\n',
            }],
        }
    }

    #[test]
    fn karg_content_is_default_then_extra_then_end_then_padding() {
        let k = areas();
        let c = karg_area_content(&k, &k.areas[0], &["a=1".into()]).unwrap();
        assert_eq!(c.len(), 40);
        assert_eq!(
            String::from_utf8(c).unwrap(),
            "coreos.liveiso=x ignition.firstboot a=1\n"
        );
        let c = karg_area_content(&k, &k.areas[0], &[]).unwrap();
        assert_eq!(
            String::from_utf8(c).unwrap(),
            "coreos.liveiso=x ignition.firstboot\n####"
        );
    }

    #[test]
    fn kargs_that_do_not_fit_are_an_error() {
        let k = areas();
        let err = karg_area_content(&k, &k.areas[0], &["much=too-long".into()]).unwrap_err();
        assert!(
            matches!(err, ImageError::KargsTooLarge { area: 40, .. }),
            "{err}"
        );
    }

    #[test]
    fn the_area_must_fit_in_its_file() {
        let file = IsoExtent {
            offset: 4096,
            len: 100,
        };
        assert_eq!(
            area_inside(file, 10, Some(20), "f").unwrap(),
            EmbedArea {
                offset: 4106,
                len: 20
            }
        );
        assert_eq!(area_inside(file, 0, None, "f").unwrap().len, 100);
        assert!(area_inside(file, 90, Some(20), "f").is_err());
        assert!(area_inside(file, 100, None, "f").is_err());
    }
}
