//! The coreos-installer ignition embed area (its test-side writer and reader are in
//! `test_iso`, feature `test-support`).
//!
//! A CoreOS live ISO reserves `/images/ignition.img` (zeros) for an Ignition config and
//! records where that file lives in a 24-byte header in the ISO 9660 system area, just
//! before the first volume descriptor: magic `coreiso+`, then the little-endian u64 byte
//! offset and u64 length of the area. Customising an ISO is then a byte splice: a newc
//! cpio holding `config.ign`, zero-padded to the area length.

/// Where the embed area header lives: 24 bytes before the end of the 32 KiB system area.
pub const HEADER_OFFSET: u64 = 32_768 - HEADER_LEN as u64;
/// Length of the header: magic + offset + length.
pub const HEADER_LEN: usize = 24;
const MAGIC: &[u8; 8] = b"coreiso+";

/// The byte range of the embed area inside the ISO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbedArea {
    pub offset: u64,
    pub len: u64,
}

impl EmbedArea {
    /// One past the last byte of the area.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }

    /// The 24 header bytes describing this area.
    #[cfg(any(test, feature = "test-support"))]
    pub fn header(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(MAGIC);
        h[8..16].copy_from_slice(&self.offset.to_le_bytes());
        h[16..].copy_from_slice(&self.len.to_le_bytes());
        h
    }
}

/// Decodes the 24 header bytes read at [`HEADER_OFFSET`]; `None` without the magic or
/// with an empty area.
pub fn read_embed_area(header: &[u8]) -> Option<EmbedArea> {
    let h = header.get(..HEADER_LEN)?;
    if &h[..8] != MAGIC {
        return None;
    }
    let offset = u64::from_le_bytes(h[8..16].try_into().ok()?);
    let len = u64::from_le_bytes(h[16..24].try_into().ok()?);
    (len > 0 && offset >= HEADER_OFFSET + HEADER_LEN as u64).then_some(EmbedArea { offset, len })
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::super::test_iso::{extract_embedded_ignition, legacy_test_iso};
    use super::*;

    /// Finds `name` in a directory extent by walking its records, as an ISO reader would.
    fn lookup(iso: &[u8], dir_lba: u32, name: &[u8]) -> Option<(u32, u32, bool)> {
        let dir = &iso[dir_lba as usize * 2048..][..2048];
        let mut at = 0;
        while at < dir.len() && dir[at] != 0 {
            let r = &dir[at..at + dir[at] as usize];
            let n = &r[33..33 + r[32] as usize];
            if n == name {
                let lba = u32::from_le_bytes(r[2..6].try_into().unwrap());
                let size = u32::from_le_bytes(r[10..14].try_into().unwrap());
                assert_eq!(r[6..10], lba.to_be_bytes());
                return Some((lba, size, r[25] & 2 != 0));
            }
            at += r.len();
        }
        None
    }

    #[test]
    fn header_roundtrip_and_rejects() {
        let area = EmbedArea {
            offset: 47_104,
            len: 262_144,
        };
        assert_eq!(read_embed_area(&area.header()), Some(area));
        assert_eq!(read_embed_area(&[0; 24]), None);
        assert_eq!(read_embed_area(&area.header()[..20]), None);
        let empty = EmbedArea {
            offset: 47_104,
            len: 0,
        };
        assert_eq!(read_embed_area(&empty.header()), None);
        // An area overlapping the header itself is nonsense.
        let inside = EmbedArea {
            offset: 100,
            len: 10,
        };
        assert_eq!(read_embed_area(&inside.header()), None);
    }

    #[test]
    fn test_iso_is_walkable_iso9660() {
        let (_dir, path) = legacy_test_iso(256 * 1024);
        let iso = std::fs::read(&path).unwrap();
        assert_eq!(iso.len() % 2048, 0);
        let pvd = &iso[16 * 2048..17 * 2048];
        assert_eq!(&pvd[..7], b"\x01CD001\x01");
        assert_eq!(
            u32::from_le_bytes(pvd[80..84].try_into().unwrap()) as usize * 2048,
            iso.len()
        );
        assert_eq!(&iso[17 * 2048..17 * 2048 + 6], b"\xffCD001");
        let root_lba = u32::from_le_bytes(pvd[158..162].try_into().unwrap());
        let (images, _, is_dir) = lookup(&iso, root_lba, b"IMAGES").unwrap();
        assert!(is_dir);
        let (ign_lba, ign_len, _) = lookup(&iso, images, b"IGNITION.IMG;1").unwrap();
        assert_eq!(ign_len, 256 * 1024);
        let (pxe, _, _) = lookup(&iso, images, b"PXEBOOT").unwrap();
        let (k, klen, _) = lookup(&iso, pxe, b"VMLINUZ.;1").unwrap();
        assert_eq!(&iso[k as usize * 2048..][..klen as usize], b"kernel");
        let (i, ilen, _) = lookup(&iso, pxe, b"INITRD.IMG;1").unwrap();
        assert_eq!(&iso[i as usize * 2048..][..ilen as usize], &[7u8; 5000][..]);
        let (r, rlen, _) = lookup(&iso, pxe, b"ROOTFS.IMG;1").unwrap();
        assert_eq!(&iso[r as usize * 2048..][..rlen as usize], b"rootfs!");
        // The coreiso+ header points at IGNITION.IMG's extent.
        let area = read_embed_area(&iso[HEADER_OFFSET as usize..][..HEADER_LEN]).unwrap();
        assert_eq!(area.offset, u64::from(ign_lba) * 2048);
        assert_eq!(area.len, u64::from(ign_len));
    }

    #[test]
    fn extract_finds_nothing_then_the_embedded_config() {
        let (_dir, path) = legacy_test_iso(64 * 1024);
        let mut iso = std::fs::read(&path).unwrap();
        assert_eq!(extract_embedded_ignition(Cursor::new(&iso)).unwrap(), None);
        let area = read_embed_area(&iso[HEADER_OFFSET as usize..][..HEADER_LEN]).unwrap();
        let cpio = ignition_cpio_for_test(r#"{"ignition":{"version":"3.1.0"}}"#);
        iso[area.offset as usize..][..cpio.len()].copy_from_slice(&cpio);
        let got = extract_embedded_ignition(Cursor::new(&iso)).unwrap();
        assert_eq!(got.as_deref(), Some(r#"{"ignition":{"version":"3.1.0"}}"#));
        // Garbage in the area is an error, not "nothing embedded".
        iso[area.offset as usize] = b'x';
        assert!(extract_embedded_ignition(Cursor::new(&iso)).is_err());
        // No header at all.
        assert!(extract_embedded_ignition(Cursor::new(vec![0u8; 40_000])).is_err());
    }

    fn ignition_cpio_for_test(s: &str) -> Vec<u8> {
        super::super::ignition_cpio(s.as_bytes())
    }
}
