//! One file part out of a `multipart/form-data` body already on disk: upstream's log upload
//! (`POST /v2/clusters/{id}/logs`) sends the archive as the part `upfile`. The body can be
//! hundreds of MiB, so it is scanned as a stream, never held in memory.

use std::io::{Read, Seek, SeekFrom};

/// The `boundary` parameter of a `multipart/form-data` content type; `None` for other types.
pub fn boundary(content_type: &str) -> Option<String> {
    let (mime, params) = content_type.split_once(';')?;
    if !mime.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (key, value) = p.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| value.trim().trim_matches('"').to_string())
            .filter(|b| !b.is_empty())
    })
}

/// Why a multipart body has no usable part.
#[derive(Debug, thiserror::Error)]
pub enum MultipartError {
    #[error("no multipart boundary in the body")]
    NoBoundary,
    #[error("the body has no part named {0:?}")]
    NoPart(String),
    #[error("a part's headers never end")]
    HeadersNeverEnd,
    #[error("a part never ends")]
    PartNeverEnds,
    #[error("the multipart body ends too early")]
    EndsEarly,
    #[error("reading the body: {0}")]
    Read(std::io::Error),
}

/// Where the content of the part named `name` lies in a multipart body: `[start, end)`.
pub fn part_range<R: Read + Seek>(
    body: &mut R,
    boundary: &str,
    name: &str,
) -> Result<(u64, u64), MultipartError> {
    let delimiter = format!("--{boundary}").into_bytes();
    let mut at = find(body, &delimiter, 0)?.ok_or(MultipartError::NoBoundary)?;
    loop {
        let after = at + delimiter.len() as u64;
        let mut next = [0u8; 2];
        read_at(body, after, &mut next)?;
        if &next == b"--" {
            return Err(MultipartError::NoPart(name.to_string()));
        }
        let headers_end = find(body, b"\r\n\r\n", after)?.ok_or(MultipartError::HeadersNeverEnd)?;
        let mut headers = vec![0u8; (headers_end - after).min(16 * 1024) as usize];
        read_at(body, after, &mut headers)?;
        let content_start = headers_end + 4;
        let mut closing = b"\r\n".to_vec();
        closing.extend_from_slice(&delimiter);
        let content_end =
            find(body, &closing, content_start)?.ok_or(MultipartError::PartNeverEnds)?;
        if disposition_name(&String::from_utf8_lossy(&headers)).as_deref() == Some(name) {
            return Ok((content_start, content_end));
        }
        at = content_end + 2;
    }
}

/// The `name` of a part's `Content-Disposition: form-data; name="..."` header.
fn disposition_name(headers: &str) -> Option<String> {
    let line = headers
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))?;
    line.split(';').find_map(|p| {
        let (key, value) = p.split_once('=')?;
        (key.trim() == "name").then(|| value.trim().trim_matches('"').to_string())
    })
}

fn read_at<R: Read + Seek>(body: &mut R, at: u64, buf: &mut [u8]) -> Result<(), MultipartError> {
    body.seek(SeekFrom::Start(at))
        .and_then(|_| body.read_exact(buf))
        .map_err(|_| MultipartError::EndsEarly)
}

/// The first offset at or after `from` where `pattern` occurs, reading in chunks.
fn find<R: Read + Seek>(
    body: &mut R,
    pattern: &[u8],
    from: u64,
) -> Result<Option<u64>, MultipartError> {
    const CHUNK: usize = 64 * 1024;
    body.seek(SeekFrom::Start(from))
        .map_err(MultipartError::Read)?;
    // Keeps the last `pattern.len() - 1` bytes of the previous chunk, so a match across two
    // chunks is found.
    let mut window: Vec<u8> = Vec::with_capacity(CHUNK + pattern.len());
    let mut window_start = from;
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = body.read(&mut chunk).map_err(MultipartError::Read)?;
        if n == 0 {
            return Ok(None);
        }
        window.extend_from_slice(&chunk[..n]);
        if let Some(i) = window.windows(pattern.len()).position(|w| w == pattern) {
            return Ok(Some(window_start + i as u64));
        }
        let keep = pattern.len().saturating_sub(1).min(window.len());
        let drop = window.len() - keep;
        window.drain(..drop);
        window_start += drop as u64;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn form(boundary: &str, parts: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, content) in parts {
            out.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}.tar.gz\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes());
            out.extend_from_slice(content);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        out
    }

    fn extract(body: &[u8], boundary: &str, name: &str) -> Result<Vec<u8>, String> {
        let (start, end) =
            part_range(&mut Cursor::new(body), boundary, name).map_err(|e| e.to_string())?;
        Ok(body[start as usize..end as usize].to_vec())
    }

    #[test]
    fn the_boundary_comes_from_the_content_type() {
        assert_eq!(
            boundary("multipart/form-data; boundary=abc").as_deref(),
            Some("abc")
        );
        assert_eq!(
            boundary("Multipart/Form-Data;boundary=\"a b\"").as_deref(),
            Some("a b")
        );
        assert_eq!(boundary("application/octet-stream"), None);
        assert_eq!(boundary("multipart/form-data"), None);
        assert_eq!(boundary("multipart/form-data; boundary="), None);
    }

    #[test]
    fn the_named_part_is_found_among_others_byte_for_byte() {
        let archive: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let body = form("X-b0und", &[("meta", b"{}"), ("upfile", &archive)]);
        assert_eq!(extract(&body, "X-b0und", "upfile").unwrap(), archive);
        assert_eq!(extract(&body, "X-b0und", "meta").unwrap(), b"{}");
    }

    #[test]
    fn content_that_looks_like_a_boundary_without_crlf_is_kept() {
        let tricky = b"--X-b0und but not at a line start\r\n--X-b0unX".to_vec();
        let body = form("X-b0und", &[("upfile", &tricky)]);
        assert_eq!(extract(&body, "X-b0und", "upfile").unwrap(), tricky);
    }

    #[test]
    fn malformed_bodies_are_errors() {
        let body = form("b", &[("other", b"x")]);
        assert!(
            extract(&body, "b", "upfile")
                .unwrap_err()
                .contains("no part named")
        );
        assert!(extract(b"no boundary here", "b", "upfile").is_err());
        assert!(
            extract(
                b"--b\r\nContent-Disposition: form-data; name=\"upfile\"",
                "b",
                "upfile"
            )
            .is_err()
        );
        assert!(
            extract(
                b"--b\r\nContent-Disposition: form-data; name=\"upfile\"\r\n\r\nbytes",
                "b",
                "upfile"
            )
            .is_err()
        );
        assert!(extract(b"--b", "b", "upfile").is_err());
    }
}
