//! The model file format. A model is
//!
//! | bytes | content |
//! |---|---|
//! | 0..8 | magic `OBLQFRST` |
//! | 8..12 | format version, u32 little-endian |
//! | 12..20 | payload length, u64 little-endian |
//! | 20..24 | CRC-32 (IEEE) of the payload, u32 little-endian |
//! | 24.. | payload: the [`Forest`] in postcard's serde encoding |
//!
//! Reading checks every field of the header, the checksum, and then every
//! index and length of the forest ([`Forest::validate`]), so damaged or crafted
//! bytes give an error, never a crash or an out-of-bounds traversal.

use crate::error::{Error, Result};
use crate::forest::Forest;

/// The first bytes of every model.
pub const MAGIC: &[u8; 8] = b"OBLQFRST";
/// The format version this library writes (and the newest it reads).
///
/// Version 2 stores leaf values only (version 1, from before the first release, stored a
/// value row for every node and is not read).
pub const FORMAT_VERSION: u32 = 2;
const HEADER: usize = 24;

impl Forest {
    /// Encodes the forest (header, checksum, payload).
    ///
    /// # Errors
    /// [`Error::Internal`] if serde fails (it should not).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let payload =
            postcard::to_stdvec(self).map_err(|e| Error::Internal(format!("encode: {e}")))?;
        let mut out = Vec::with_capacity(HEADER + payload.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        Ok(out)
    }

    /// Decodes and validates a forest written by [`Forest::to_bytes`].
    ///
    /// # Errors
    /// [`Error::CorruptModel`] for anything malformed, [`Error::UnsupportedVersion`] for a
    /// model from a newer format.
    pub fn from_bytes(bytes: &[u8]) -> Result<Forest> {
        let corrupt = |m: &str| Error::CorruptModel(m.to_string());
        if bytes.len() < HEADER {
            return Err(corrupt("too short to be a model (truncated?)"));
        }
        if &bytes[..8] != MAGIC {
            return Err(corrupt("not an obliqueforest model (bad magic bytes)"));
        }
        let u32_at =
            |a: usize| u32::from_le_bytes([bytes[a], bytes[a + 1], bytes[a + 2], bytes[a + 3]]);
        let version = u32_at(8);
        if version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if version < FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let len = u32_at(12) as u64 | (u32_at(16) as u64) << 32;
        let crc = u32_at(20);
        let payload = &bytes[HEADER..];
        if payload.len() as u64 != len {
            return Err(corrupt(&format!(
                "payload is {} bytes, header says {len} (truncated?)",
                payload.len()
            )));
        }
        if crc32fast::hash(payload) != crc {
            return Err(corrupt("checksum mismatch (the file was damaged)"));
        }
        let (forest, rest): (Forest, &[u8]) = postcard::take_from_bytes(payload)
            .map_err(|e| Error::CorruptModel(format!("decode: {e}")))?;
        if !rest.is_empty() {
            return Err(corrupt("trailing bytes after the model"));
        }
        forest.validate()?;
        forest.packed(); // only a validated forest is laid out for prediction
        Ok(forest)
    }
}
