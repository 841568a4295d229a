//! Byte framing shared by the core forest bytes ([`Forest::to_bytes`]) and the model file
//! ([`crate::model`]). A frame is
//!
//! | bytes | content |
//! |---|---|
//! | 0..8 | magic (`OBLQFRST` for a core forest, `OBLQMODL` for a model file) |
//! | 8..12 | format version, u32 little-endian |
//! | 12..20 | payload length, u64 little-endian |
//! | 20..24 | CRC-32 (IEEE) of the payload, u32 little-endian |
//! | 24.. | payload: postcard's serde encoding |
//!
//! Reading checks every field of the header, the checksum, and then every
//! index and length of the forest ([`Forest::validate`]), so damaged or crafted
//! bytes give an error, never a crash or an out-of-bounds traversal. Payloads are
//! decoded from a reader limited to the declared length: every element consumes at
//! least one byte, so what decoding allocates is bounded by the bytes present. The
//! checksum is verified before anything is decoded.

use crate::error::{Error, Result};
use crate::forest::Forest;
use std::io::{Read, Write};

/// The first bytes of a core forest.
pub const MAGIC: &[u8; 8] = b"OBLQFRST";
/// The format version of the core forest bytes this library writes (and the newest it reads).
///
/// Version 2 stores leaf values only (version 1, from before the first release, stored a
/// value row for every node and is not read).
pub const FORMAT_VERSION: u32 = 2;
/// The version written for a multi-output forest (a 2-D y): its task is a variant older
/// readers do not know, so they refuse it by version instead of failing to decode it.
/// Single-output forests keep [`FORMAT_VERSION`] and the bytes they always had.
pub const FORMAT_VERSION_MULTI_OUTPUT: u32 = 3;
/// Length of the frame header.
pub(crate) const HEADER: usize = 24;
/// Scratch for postcard's reader: the longest string (a label or feature name) it decodes.
pub(crate) const SCRATCH: usize = 1 << 20;

/// The parsed frame header.
pub(crate) struct Frame {
    pub len: u64,
    pub crc: u32,
}

pub(crate) fn corrupt(m: impl Into<String>) -> Error {
    Error::CorruptModel(m.into())
}

/// Checks a frame header against `magic` and the supported versions `versions`.
pub(crate) fn read_frame(
    head: &[u8],
    magic: &[u8; 8],
    versions: std::ops::RangeInclusive<u32>,
) -> Result<Frame> {
    if head.len() < HEADER {
        return Err(corrupt("too short to be a model (truncated?)"));
    }
    if &head[..8] != magic {
        return Err(corrupt("not an obliqueforest model (bad magic bytes)"));
    }
    let u32_at = |a: usize| u32::from_le_bytes([head[a], head[a + 1], head[a + 2], head[a + 3]]);
    let found = u32_at(8);
    if !versions.contains(&found) {
        return Err(Error::UnsupportedVersion {
            found,
            supported: *versions.end(),
        });
    }
    Ok(Frame {
        len: u32_at(12) as u64 | (u32_at(16) as u64) << 32,
        crc: u32_at(20),
    })
}

/// The 24 header bytes of a frame.
pub(crate) fn frame_header(magic: &[u8; 8], version: u32, len: u64, crc: u32) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(magic);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    h[12..20].copy_from_slice(&len.to_le_bytes());
    h[20..24].copy_from_slice(&crc.to_le_bytes());
    h
}

/// A writer that counts and checksums what passes through it.
pub(crate) struct CrcWriter<W> {
    pub inner: W,
    pub hasher: crc32fast::Hasher,
    pub len: u64,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Checks that the `frame.len` bytes `reader` yields have the frame's checksum.
pub(crate) fn check_crc(reader: impl Read, frame: &Frame) -> Result<()> {
    let mut limited = reader.take(frame.len);
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = limited
            .read(&mut buf)
            .map_err(|e| corrupt(format!("read: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    if limited.limit() != 0 {
        return Err(corrupt(
            "the payload is shorter than its header says (truncated?)",
        ));
    }
    if hasher.finalize() != frame.crc {
        return Err(corrupt("checksum mismatch (the file was damaged)"));
    }
    Ok(())
}

/// Decodes a checksummed payload held in memory.
pub(crate) fn decode_slice<T: serde::de::DeserializeOwned>(payload: &[u8]) -> Result<T> {
    let (value, rest): (T, &[u8]) =
        postcard::take_from_bytes(payload).map_err(|e| corrupt(format!("decode: {e}")))?;
    if !rest.is_empty() {
        return Err(corrupt("trailing bytes after the model"));
    }
    Ok(value)
}

/// Decodes a checksummed payload of `len` bytes from a reader, without holding the bytes.
pub(crate) fn decode_reader<T: serde::de::DeserializeOwned>(
    reader: impl Read,
    len: u64,
) -> Result<T> {
    let mut limited = reader.take(len);
    let mut scratch = vec![0u8; SCRATCH];
    let value = postcard::from_io::<T, _>((&mut limited, &mut scratch[..]))
        .map(|(v, _)| v)
        .map_err(|e| corrupt(format!("decode: {e}")))?;
    if limited.limit() != 0 {
        return Err(corrupt("trailing bytes after the model"));
    }
    Ok(value)
}

impl Forest {
    /// Encodes the forest (header, checksum, payload).
    ///
    /// # Errors
    /// [`Error::Internal`] if serde fails (it should not).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let payload =
            postcard::to_stdvec(self).map_err(|e| Error::Internal(format!("encode: {e}")))?;
        let mut out = Vec::with_capacity(HEADER + payload.len());
        let version = if self.params.task.n_targets() > 1 {
            FORMAT_VERSION_MULTI_OUTPUT
        } else {
            FORMAT_VERSION
        };
        out.extend_from_slice(&frame_header(
            MAGIC,
            version,
            payload.len() as u64,
            crc32fast::hash(&payload),
        ));
        out.extend_from_slice(&payload);
        Ok(out)
    }

    /// Decodes and validates a forest written by [`Forest::to_bytes`].
    ///
    /// # Errors
    /// [`Error::CorruptModel`] for anything malformed, [`Error::UnsupportedVersion`] for a
    /// model from another format version.
    pub fn from_bytes(bytes: &[u8]) -> Result<Forest> {
        if bytes.len() >= 8 && &bytes[..8] == crate::model::MODEL_MAGIC {
            return Err(corrupt(
                "this is a model file (estimator header and forests), not a bare core forest; \
                 read it with Model::from_bytes / obliqueforest.load",
            ));
        }
        let frame = read_frame(bytes, MAGIC, FORMAT_VERSION..=FORMAT_VERSION_MULTI_OUTPUT)?;
        let payload = &bytes[HEADER..];
        if payload.len() as u64 != frame.len {
            return Err(corrupt(format!(
                "payload is {} bytes, header says {} (truncated?)",
                payload.len(),
                frame.len
            )));
        }
        check_crc(payload, &frame)?;
        let forest: Forest = decode_slice(payload)?;
        forest.validate()?;
        forest.packed(); // only a validated forest is laid out for prediction
        Ok(forest)
    }
}
