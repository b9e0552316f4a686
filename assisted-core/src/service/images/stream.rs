//! Serving a customised ISO: the base ISO from disk with the Ignition embed area and the
//! kernel-argument areas replaced,
//! streamed in fixed-size chunks so memory does not grow with the ISO size; and
//! [`FileParts`], file extents and in-memory pieces concatenated (the PXE artifacts).

use std::io::SeekFrom;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http::{HeaderValue, StatusCode, header};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::ImageError;
use super::cpio::embed_area_payload;
use super::iso::EmbedArea;
use super::layout::{karg_area_content, read_layout};

/// Bytes read from disk per body chunk.
const CHUNK: usize = 256 * 1024;

/// A base live ISO plus the cpio to splice into its Ignition embed area and the content of
/// its kernel-argument areas.
#[derive(Debug, Clone)]
pub struct CustomizedIso {
    pub base_path: PathBuf,
    pub base_len: u64,
    pub area: EmbedArea,
    /// The embed area content; shorter than the area, the rest reads as zeros.
    pub embed: Bytes,
    /// Each karg area with its whole new content (empty without kernel arguments to add).
    pub karg_areas: Vec<(EmbedArea, Bytes)>,
}

/// What a `Range` header asks for, resolved against the representation length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// No (usable) range: send everything with 200.
    Full,
    /// Inclusive byte range, answered with 206.
    Partial { start: u64, end: u64 },
    /// Syntactically fine but outside the representation: 416.
    Unsatisfiable,
}

/// Resolves a `Range` header against `len`. Malformed headers and other units are
/// ignored (RFC 9110 §14.2); multi-range requests also get the full 200 rather than a
/// multipart/byteranges body, which downloaders of ISOs do not need.
pub fn parse_range(header: Option<&str>, len: u64) -> ByteRange {
    let Some(spec) = header.map(str::trim).and_then(|h| {
        h.get(..6)
            .filter(|u| u.eq_ignore_ascii_case("bytes="))
            .map(|_| &h[6..])
    }) else {
        return ByteRange::Full;
    };
    if spec.contains(',') {
        return ByteRange::Full;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return ByteRange::Full;
    };
    let num = |s: &str| -> Option<u64> {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.trim().is_empty(), last.trim().is_empty()) {
        // bytes=-n: the last n bytes.
        (true, false) => match num(last) {
            None => ByteRange::Full,
            Some(0) => ByteRange::Unsatisfiable,
            Some(_) if len == 0 => ByteRange::Unsatisfiable,
            Some(n) => ByteRange::Partial {
                start: len - n.min(len),
                end: len - 1,
            },
        },
        // bytes=a-: from a to the end.
        (false, true) => match num(first) {
            None => ByteRange::Full,
            Some(a) if a >= len => ByteRange::Unsatisfiable,
            Some(a) => ByteRange::Partial {
                start: a,
                end: len - 1,
            },
        },
        (false, false) => match (num(first), num(last)) {
            (Some(a), Some(b)) if a <= b => {
                if a >= len {
                    ByteRange::Unsatisfiable
                } else {
                    ByteRange::Partial {
                        start: a,
                        end: b.min(len - 1),
                    }
                }
            }
            _ => ByteRange::Full,
        },
        (true, true) => ByteRange::Full,
    }
}

/// Overwrites the part of `chunk` (which starts at ISO offset `chunk_start`) that falls
/// inside `area` with `embed`, zero-padded to the area length.
pub fn splice(chunk: &mut [u8], chunk_start: u64, area: EmbedArea, embed: &[u8]) {
    let chunk_end = chunk_start + chunk.len() as u64;
    let from = chunk_start.max(area.offset);
    let to = chunk_end.min(area.end());
    if from >= to {
        return;
    }
    // Offsets below are bounded by chunk.len(), so the casts cannot truncate.
    let dst = &mut chunk[(from - chunk_start) as usize..(to - chunk_start) as usize];
    let area_from = from - area.offset;
    let embed_len = embed.len() as u64;
    let copy_to = to.min(area.offset + embed_len);
    let n = copy_to.saturating_sub(from) as usize;
    if n > 0 {
        dst[..n].copy_from_slice(&embed[area_from as usize..area_from as usize + n]);
    }
    dst[n..].fill(0);
}

impl CustomizedIso {
    /// Finds the embed areas of `base_path` and prepares `ignition` for splicing.
    pub async fn open(base_path: impl Into<PathBuf>, ignition: &str) -> Result<Self, ImageError> {
        Self::open_with_kargs(base_path, ignition, &[]).await
    }

    /// Like [`CustomizedIso::open`], also appending `kernel_arguments` to the ISO's default
    /// ones in every karg area (what `coreos-installer iso kargs modify --append` does).
    pub async fn open_with_kargs(
        base_path: impl Into<PathBuf>,
        ignition: &str,
        kernel_arguments: &[String],
    ) -> Result<Self, ImageError> {
        Self::with_embed(
            base_path,
            Bytes::from(embed_area_payload(ignition.as_bytes(), &[])?),
            kernel_arguments,
        )
        .await
    }

    /// Like [`CustomizedIso::open_with_kargs`] with a ready-made embed area payload.
    pub async fn with_embed(
        base_path: impl Into<PathBuf>,
        embed: Bytes,
        kernel_arguments: &[String],
    ) -> Result<Self, ImageError> {
        let base_path = base_path.into();
        let path = base_path.clone();
        let no_area = |reason: String| ImageError::NoEmbedArea {
            path: base_path.clone(),
            reason,
        };
        // A few small reads through the ISO 9660 tree: on a blocking thread.
        let (base_len, layout) = tokio::task::spawn_blocking(move || {
            let ctx = format!("reading {}", path.display());
            let mut file = std::fs::File::open(&path).map_err(ImageError::io(&ctx))?;
            let base_len = file.metadata().map_err(ImageError::io(&ctx))?.len();
            let layout = read_layout(&mut file)?;
            Ok::<_, ImageError>((base_len, layout))
        })
        .await
        .map_err(|e| no_area(format!("reading the layout stopped: {e}")))?
        .map_err(|e| match e {
            ImageError::Io { .. } => e,
            other => no_area(other.to_string()),
        })?;
        let area = layout.ignition;
        if area.end() > base_len {
            return Err(no_area(format!(
                "the area ends at {} beyond the file length {base_len}",
                area.end()
            )));
        }
        if embed.len() as u64 > area.len {
            return Err(ImageError::EmbedTooLarge {
                size: embed.len() as u64,
                area: area.len,
            });
        }
        let karg_areas = match (&layout.kargs, kernel_arguments.is_empty()) {
            (_, true) => Vec::new(),
            (None, false) => return Err(ImageError::NoKargAreas(kernel_arguments.to_vec())),
            (Some(kargs), false) => kargs
                .areas
                .iter()
                .map(|a| {
                    let content = karg_area_content(kargs, a, kernel_arguments)?;
                    let where_ = EmbedArea {
                        offset: a.offset,
                        len: content.len() as u64,
                    };
                    Ok((where_, Bytes::from(content)))
                })
                .collect::<Result<Vec<_>, ImageError>>()?,
        };
        Ok(Self {
            base_path,
            base_len,
            area,
            embed,
            karg_areas,
        })
    }

    /// The HTTP answer for a GET or HEAD with an optional `Range` header.
    pub fn response(&self, method_is_head: bool, range_header: Option<&str>) -> Response {
        ranged_response(self.base_len, method_is_head, range_header, |start, end| {
            Body::from_stream(self.chunks(start, end))
        })
    }

    /// The bytes `[start, end)` of the customised ISO as a stream of chunks.
    fn chunks(
        &self,
        start: u64,
        end: u64,
    ) -> impl futures::Stream<Item = Result<Bytes, ImageError>> + Send + 'static {
        struct State {
            file: Option<tokio::fs::File>,
            pos: u64,
            end: u64,
            path: PathBuf,
            area: EmbedArea,
            embed: Bytes,
            karg_areas: Vec<(EmbedArea, Bytes)>,
        }
        let state = State {
            file: None,
            pos: start,
            end,
            path: self.base_path.clone(),
            area: self.area,
            embed: self.embed.clone(),
            karg_areas: self.karg_areas.clone(),
        };
        futures::stream::try_unfold(state, |mut s| async move {
            if s.pos >= s.end {
                return Ok(None);
            }
            let n = (s.end - s.pos).min(CHUNK as u64) as usize;
            let mut buf = BytesMut::zeroed(n);
            let inside_area = s.pos >= s.area.offset && s.pos + n as u64 <= s.area.end();
            // Chunks entirely inside the area need no disk read.
            if !inside_area {
                read_at(&mut s.file, &s.path, s.pos, &mut buf).await?;
            } else {
                // Keep the file offset in step with `pos` for the next read.
                s.file = None;
            }
            splice(&mut buf, s.pos, s.area, &s.embed);
            for (area, content) in &s.karg_areas {
                splice(&mut buf, s.pos, *area, content);
            }
            s.pos += n as u64;
            Ok(Some((buf.freeze(), s)))
        })
    }
}

/// A 200/206/416 answer for a representation of `len` bytes; `body` streams `[start, end)`
/// and is not called for HEAD.
fn ranged_response(
    len: u64,
    method_is_head: bool,
    range_header: Option<&str>,
    body: impl FnOnce(u64, u64) -> Body,
) -> Response {
    let (status, start, end_excl) = match parse_range(range_header, len) {
        ByteRange::Full => (StatusCode::OK, 0, len),
        ByteRange::Partial { start, end } => (StatusCode::PARTIAL_CONTENT, start, end + 1),
        ByteRange::Unsatisfiable => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
            set(&mut r, header::CONTENT_RANGE, format!("bytes */{len}"));
            set(&mut r, header::ACCEPT_RANGES, "bytes".into());
            return r;
        }
    };
    let body = if method_is_head {
        Body::empty()
    } else {
        body(start, end_excl)
    };
    let mut r = Response::new(body);
    *r.status_mut() = status;
    set(&mut r, header::ACCEPT_RANGES, "bytes".into());
    set(
        &mut r,
        header::CONTENT_TYPE,
        "application/octet-stream".into(),
    );
    set(
        &mut r,
        header::CONTENT_LENGTH,
        (end_excl - start).to_string(),
    );
    if status == StatusCode::PARTIAL_CONTENT {
        set(
            &mut r,
            header::CONTENT_RANGE,
            format!("bytes {start}-{}/{len}", end_excl - 1),
        );
    }
    r
}

/// One piece of a [`FileParts`] body.
#[derive(Debug, Clone)]
pub enum Part {
    /// `len` bytes of the file starting at byte `offset`.
    File { offset: u64, len: u64 },
    /// Bytes already in memory (small: an ignition cpio, an initrd overlay).
    Bytes(Bytes),
}

impl Part {
    fn len(&self) -> u64 {
        match self {
            Part::File { len, .. } => *len,
            Part::Bytes(b) => b.len() as u64,
        }
    }
}

/// A body concatenated from extents of one file and in-memory pieces: a PXE artifact
/// straight out of the base ISO, or its initrd with cpio archives appended. Streamed in
/// chunks like [`CustomizedIso`], with Range and HEAD.
#[derive(Debug, Clone)]
pub struct FileParts {
    pub path: PathBuf,
    pub parts: Vec<Part>,
}

impl FileParts {
    /// Total length of the body.
    pub fn len(&self) -> u64 {
        self.parts.iter().map(Part::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The HTTP answer for a GET or HEAD with an optional `Range` header.
    pub fn response(&self, method_is_head: bool, range_header: Option<&str>) -> Response {
        ranged_response(self.len(), method_is_head, range_header, |start, end| {
            Body::from_stream(self.chunks(start, end))
        })
    }

    /// The bytes `[start, end)` of the concatenation as a stream of chunks.
    fn chunks(
        &self,
        start: u64,
        end: u64,
    ) -> impl futures::Stream<Item = Result<Bytes, ImageError>> + Send + 'static {
        struct State {
            file: Option<tokio::fs::File>,
            /// The file offset `file` is positioned at.
            file_pos: u64,
            pos: u64,
            end: u64,
            path: PathBuf,
            parts: Vec<Part>,
        }
        let state = State {
            file: None,
            file_pos: 0,
            pos: start,
            end,
            path: self.path.clone(),
            parts: self.parts.clone(),
        };
        futures::stream::try_unfold(state, |mut s| async move {
            // Find the part holding `pos`; the list is a handful of entries.
            let mut part_start = 0;
            let mut found = None;
            for p in &s.parts {
                let part_end = part_start + p.len();
                if s.pos < part_end {
                    found = Some((p.clone(), part_start, part_end));
                    break;
                }
                part_start = part_end;
            }
            let Some((part, part_start, part_end)) = found.filter(|_| s.pos < s.end) else {
                return Ok(None);
            };
            let within = s.pos - part_start;
            let n = (s.end.min(part_end) - s.pos).min(CHUNK as u64);
            let chunk = match part {
                Part::Bytes(b) => {
                    // `within + n` is bounded by the part length, so the casts cannot truncate.
                    b.slice(within as usize..(within + n) as usize)
                }
                Part::File { offset, .. } => {
                    let at = offset + within;
                    if s.file_pos != at {
                        // A jump (first read or after an in-memory part): reopen at `at`.
                        s.file = None;
                    }
                    let mut buf = BytesMut::zeroed(n as usize);
                    read_at(&mut s.file, &s.path, at, &mut buf).await?;
                    s.file_pos = at + n;
                    buf.freeze()
                }
            };
            s.pos += n;
            Ok(Some((chunk, s)))
        })
    }
}

/// Reads exactly `buf.len()` bytes at `pos`, opening (and seeking) the file lazily so
/// that sequential chunks cost one read each.
async fn read_at(
    file: &mut Option<tokio::fs::File>,
    path: &Path,
    pos: u64,
    buf: &mut [u8],
) -> Result<(), ImageError> {
    let ctx = || format!("streaming {} at byte {pos}", path.display());
    let f = match file {
        Some(f) => f,
        None => {
            let mut f = tokio::fs::File::open(path)
                .await
                .map_err(ImageError::io(ctx()))?;
            f.seek(SeekFrom::Start(pos))
                .await
                .map_err(ImageError::io(ctx()))?;
            file.insert(f)
        }
    };
    f.read_exact(buf).await.map_err(ImageError::io(ctx()))?;
    Ok(())
}

fn set(r: &mut Response, name: header::HeaderName, value: String) {
    // All values are ASCII digits and fixed text, so this conversion cannot fail.
    if let Ok(v) = HeaderValue::from_str(&value) {
        r.headers_mut().insert(name, v);
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::super::test_iso::{TestIsoContents, write_test_iso};
    use super::*;

    #[test]
    fn range_parsing() {
        use ByteRange::*;
        let p = |h: &str| parse_range(Some(h), 1000);
        assert_eq!(parse_range(None, 1000), Full);
        assert_eq!(p("bytes=0-499"), Partial { start: 0, end: 499 });
        assert_eq!(
            p("Bytes=500-"),
            Partial {
                start: 500,
                end: 999
            }
        );
        assert_eq!(
            p("bytes=-200"),
            Partial {
                start: 800,
                end: 999
            }
        );
        assert_eq!(p("bytes=-5000"), Partial { start: 0, end: 999 });
        assert_eq!(
            p("bytes=990-2000"),
            Partial {
                start: 990,
                end: 999
            }
        );
        assert_eq!(p(" bytes= 3 - 3 "), Partial { start: 3, end: 3 });
        assert_eq!(p("bytes=1000-"), Unsatisfiable);
        assert_eq!(p("bytes=1000-1001"), Unsatisfiable);
        assert_eq!(p("bytes=-0"), Unsatisfiable);
        assert_eq!(parse_range(Some("bytes=-1"), 0), Unsatisfiable);
        // Ignored: multi-range, malformed, other units, reversed.
        for h in [
            "bytes=0-1,5-6",
            "bytes=a-b",
            "items=0-1",
            "bytes=5-1",
            "bytes=-",
            "bytes=1",
            "bytes=+1-2",
        ] {
            assert_eq!(p(h), Full, "{h}");
        }
    }

    #[test]
    fn splice_cases() {
        let area = EmbedArea { offset: 10, len: 6 };
        let embed = [1u8, 2, 3];
        let mut c = [9u8; 20];
        splice(&mut c, 0, area, &embed);
        assert_eq!(
            c,
            [9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 0, 0, 0, 9, 9, 9, 9]
        );
        // A chunk that starts inside the area.
        let mut c = [9u8; 4];
        splice(&mut c, 11, area, &embed);
        assert_eq!(c, [2, 3, 0, 0]);
        // A chunk that ends inside the area.
        let mut c = [9u8; 4];
        splice(&mut c, 8, area, &embed);
        assert_eq!(c, [9, 9, 1, 2]);
        // No overlap.
        let mut c = [9u8; 4];
        splice(&mut c, 16, area, &embed);
        assert_eq!(c, [9; 4]);
    }

    async fn fixture(area_len: u64) -> (tempfile::TempDir, CustomizedIso, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("base.iso");
        // Non-zero rootfs big enough to span several chunks.
        let rootfs: Vec<u8> = (0..(CHUNK * 2 + 1234)).map(|i| (i % 251) as u8).collect();
        let contents = TestIsoContents {
            kernel: b"k",
            initrd: b"i",
            rootfs: &rootfs,
        };
        write_test_iso(&path, &contents, area_len).unwrap();
        let ign = format!(
            r#"{{"ignition":{{"version":"3.1.0"}},"pad":"{}"}}"#,
            "x".repeat(3000)
        );
        let iso = CustomizedIso::open(&path, &ign).await.unwrap();
        let mut expected = std::fs::read(&path).unwrap();
        let a = iso.area;
        expected[a.offset as usize..][..iso.embed.len()].copy_from_slice(&iso.embed);
        (dir, iso, expected)
    }

    async fn body(r: Response) -> Vec<u8> {
        r.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    #[tokio::test]
    async fn full_get_matches_spliced_file() {
        let (_dir, iso, expected) = fixture(CHUNK as u64 + 4096).await;
        let r = iso.response(false, None);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(
            r.headers()[header::CONTENT_LENGTH],
            expected.len().to_string().as_str()
        );
        assert_eq!(r.headers()[header::ACCEPT_RANGES], "bytes");
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "application/octet-stream"
        );
        let got = body(r).await;
        assert!(got == expected, "full body differs");
        let ign = super::super::extract_embedded_ignition(std::io::Cursor::new(&got)).unwrap();
        assert!(ign.unwrap().starts_with(r#"{"ignition""#));
    }

    #[tokio::test]
    async fn ranged_reads_across_area_boundaries_are_exact() {
        let (_dir, iso, expected) = fixture(64 * 1024).await;
        let a = iso.area;
        let e = iso.embed.len() as u64;
        for (start, end) in [
            (a.offset - 100, a.offset + 100),
            (a.offset + e - 10, a.offset + e + 10),
            (a.end() - 50, a.end() + 50),
            (a.offset - 1, a.end()),
            (0, expected.len() as u64 - 1),
            (a.offset + 5, a.offset + 5),
        ] {
            let h = format!("bytes={start}-{end}");
            let r = iso.response(false, Some(&h));
            assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT, "{h}");
            assert_eq!(
                r.headers()[header::CONTENT_RANGE],
                format!("bytes {start}-{end}/{}", expected.len()).as_str()
            );
            let got = body(r).await;
            assert!(got == expected[start as usize..=end as usize], "{h}");
        }
        let r = iso.response(false, Some("bytes=-10"));
        assert_eq!(body(r).await, expected[expected.len() - 10..]);
    }

    #[tokio::test]
    async fn head_and_unsatisfiable() {
        let (_dir, iso, expected) = fixture(4096).await;
        let r = iso.response(true, Some("bytes=10-19"));
        assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(r.headers()[header::CONTENT_LENGTH], "10");
        assert!(body(r).await.is_empty());
        let r = iso.response(false, Some("bytes=999999999-"));
        assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);
        assert_eq!(
            r.headers()[header::CONTENT_RANGE],
            format!("bytes */{}", expected.len()).as_str()
        );
    }

    #[tokio::test]
    async fn open_rejects_oversized_embed_and_plain_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("base.iso");
        write_test_iso(&path, &TestIsoContents::default(), 2048).unwrap();
        // Pseudo-random text: xz cannot squeeze it into the 2 KiB area.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let big: String = (0..16 * 1024)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'!' + (state % 90) as u8)
            })
            .collect();
        let err = CustomizedIso::open(&path, &big).await.unwrap_err();
        assert!(
            matches!(err, ImageError::EmbedTooLarge { area: 2048, .. }),
            "{err}"
        );
        let plain = dir.path().join("plain.iso");
        std::fs::write(&plain, vec![0u8; 40_000]).unwrap();
        let err = CustomizedIso::open(&plain, "{}").await.unwrap_err();
        assert!(
            err.to_string().contains("no usable Ignition embed area"),
            "{err}"
        );
        let err = CustomizedIso::open(dir.path().join("missing.iso"), "{}")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("missing.iso"), "{err}");
    }
    #[tokio::test]
    async fn file_parts_concatenate_extents_and_bytes_under_any_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file: Vec<u8> = (0..(CHUNK * 2 + 777)).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &file).unwrap();
        let parts = FileParts {
            path: path.clone(),
            parts: vec![
                Part::File {
                    offset: 100,
                    len: CHUNK as u64 + 50,
                },
                Part::Bytes(Bytes::from_static(b"-middle-")),
                Part::File { offset: 5, len: 3 },
                Part::Bytes(Bytes::new()),
                Part::Bytes(Bytes::from_static(b"tail")),
            ],
        };
        let mut expected = file[100..100 + CHUNK + 50].to_vec();
        expected.extend_from_slice(b"-middle-");
        expected.extend_from_slice(&file[5..8]);
        expected.extend_from_slice(b"tail");
        assert_eq!(parts.len(), expected.len() as u64);
        let r = parts.response(false, None);
        assert_eq!(r.status(), StatusCode::OK);
        assert!(body(r).await == expected);
        let n = expected.len() as u64;
        let b = CHUNK as u64 + 50;
        for (start, end) in [
            (0, 0),
            (b - 2, b + 9),
            (b + 7, n - 1),
            (10, CHUNK as u64 + 20),
        ] {
            let h = format!("bytes={start}-{end}");
            let r = parts.response(false, Some(&h));
            assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT, "{h}");
            assert!(
                body(r).await == expected[start as usize..=end as usize],
                "{h}"
            );
        }
        let r = parts.response(true, None);
        assert_eq!(r.headers()[header::CONTENT_LENGTH], n.to_string().as_str());
        assert!(body(r).await.is_empty());
        let r = parts.response(false, Some(&format!("bytes={n}-")));
        assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    }
}
