//! Reading and writing model files: the frame ([`crate::serialize`]) around a postcard
//! payload of a [`ModelFile`] and its sections, streamed both ways (the forests are never
//! copied into a buffer). Files are read from regular files only, at most their declared
//! length; they are saved through [`super::atomic`], which replaces the target whole or
//! not at all. What is read here is decoded, not yet checked: [`super::check::validated`]
//! does that. Files of versions 1 to 4 are read (and, for tests, written) by
//! [`super::compat`], the one place that knows their layout; both write and decode
//! through [`super::payload`].

use super::atomic;
use super::check::check;
use super::compat;
use super::header::ModelFile;
use super::payload::{
    attach, write_frame, ColumnSections, FromReader, KindSections, Layout, Source,
};
use crate::error::{io_error, Error, Result};
use crate::forest::Forest;
use crate::serialize::{self, corrupt, Frame, HEADER, MODEL_MAGIC};
use serde::Serialize;
use std::borrow::Borrow;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The model file version this library writes, and the newest it reads.
///
/// Version 5 is a [`ModelFile`] payload whose [`super::Header`] ends with the projection
/// record ([`super::ProjectionRecord`]), followed by three sections: per tree of every
/// forest (in [`super::Body::forests`] order) its missing-value list, then per forest its kind
/// section and its column section (`None` for a forest of the plain kind, or of numeric
/// columns; see [`crate::serialize`]). Every model is written as version 5: its header
/// holds the record, which no earlier layout has, so the sections are always written too
/// (a few bytes for a model that needs none) and readers of earlier versions refuse the
/// file by its number.
///
/// Earlier versions are read (`compat.rs`), their record taken from their forests.
/// Version 1 (which replaced the Python-only layout `OBLQPY01` of obliqueforest 0.1, not
/// read: refit and save again) had no section; version 2 added the missing-value section
/// (and multi-output tasks and classes), version 3 the kind sections, version 4 the
/// column sections; each was written only for a model that needed it.
pub const MODEL_FORMAT_VERSION: u32 = 5;
/// The oldest model file version read.
const MODEL_FORMAT_VERSION_OLDEST: u32 = 1;

/// Writes `file` (after [`check`]) as a model frame to `w`, streaming the payload: the
/// forests are never copied into a buffer.
///
/// # Errors
/// [`check`]'s errors, an I/O error as [`Error::InvalidInput`], [`Error::Cancelled`].
pub fn write<F: Borrow<Forest> + Serialize, W: Write + Seek>(
    file: &ModelFile<F>,
    w: W,
) -> Result<()> {
    check(file)?;
    write_unchecked(file, w)
}

/// [`write()`] without [`check`]: only for tests that craft bad files.
#[doc(hidden)]
pub fn write_unchecked<F: Borrow<Forest> + Serialize, W: Write + Seek>(
    file: &ModelFile<F>,
    w: W,
) -> Result<()> {
    let all = Layout {
        missing: true,
        kinds: true,
        columns: true,
    };
    write_frame(file, &file.body, all, MODEL_FORMAT_VERSION, w)
}

/// Writes `file` (after [`check`]) to `path`, replacing it whole or not at all
/// (`atomic::replace_file`: only a regular file or a missing path is replaced; the
/// bytes go to a temporary file of their own, synced, then renamed over the target).
///
/// # Errors
/// As [`write()`]; [`Error::InvalidInput`] naming the path when it is a directory, a
/// device, a FIFO or a socket, or cannot be written.
pub fn save_file<F: Borrow<Forest> + Serialize>(file: &ModelFile<F>, path: &Path) -> Result<()> {
    check(file)?;
    save_file_unchecked(file, path)
}

/// [`save_file`] without [`check`]: only for tests that craft bad files.
#[doc(hidden)]
pub fn save_file_unchecked<F: Borrow<Forest> + Serialize>(
    file: &ModelFile<F>,
    path: &Path,
) -> Result<()> {
    atomic::replace_file(path, |f| write_unchecked(file, f))
}

/// The frame of a model file's first bytes, naming the other layouts it may be instead.
fn frame_of(head: &[u8]) -> Result<(Frame, u32)> {
    if head.len() >= 8 && &head[..8] == b"OBLQPY01" {
        return Err(corrupt(
            "this model file was written by obliqueforest 0.1 (layout OBLQPY01), which this \
             version does not read; refit the model and save it again",
        ));
    }
    if head.len() >= 8 && &head[..8] == serialize::MAGIC {
        return Err(corrupt(
            "these are bare core forest bytes (Forest::to_bytes), not a model file; read them \
             with Forest::from_bytes",
        ));
    }
    serialize::read_frame(
        head,
        MODEL_MAGIC,
        MODEL_FORMAT_VERSION_OLDEST,
        MODEL_FORMAT_VERSION,
    )
}

/// Decodes the payload of a file of version `version` from `source`, its sections given
/// to its forests.
fn decode(version: u32, source: impl Source) -> Result<ModelFile<Forest>> {
    if version < MODEL_FORMAT_VERSION {
        return compat::decode(version, source);
    }
    let (file, missing, sections) = source
        .decode::<ModelFile<Forest>, (KindSections, ColumnSections)>(
            serialize::Sections::MissingAndKind,
        )?;
    let (kinds, columns) = sections.unzip();
    attach(file, missing, kinds, columns)
}

/// Reads (not yet checks) the model file at `path`.
///
/// # Errors
/// [`Error::InvalidInput`] when `path` is not a regular file (a device, FIFO or
/// directory) or cannot be read; [`Error::CorruptModel`] naming what is wrong with its
/// contents; [`Error::UnsupportedVersion`] for another format version;
/// [`Error::Cancelled`].
pub(super) fn read_path(path: &Path) -> Result<ModelFile<Forest>> {
    let io = |e: std::io::Error| io_error("read", path, &e);
    let not_regular = || {
        Error::InvalidInput(format!(
            "{} is not a regular file (a device, FIFO, socket or directory); models are \
             read from regular files only",
            path.display()
        ))
    };
    // checked before opening: opening a FIFO blocks until someone writes to it
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(not_regular());
    }
    let mut file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let mut head = [0u8; HEADER];
    let got = (&mut file)
        .take(HEADER as u64)
        .read(&mut head)
        .map_err(io)?;
    let (frame, version) = frame_of(&head[..got])?;
    let present = meta.len().saturating_sub(HEADER as u64);
    if present != frame.len {
        return Err(corrupt(format!(
            "the file holds {present} payload bytes, its header says {} (truncated or \
             appended to?)",
            frame.len
        )));
    }
    serialize::check_crc(BufReader::new(&mut file), &frame)?;
    file.seek(SeekFrom::Start(HEADER as u64)).map_err(io)?;
    let reader = BufReader::with_capacity(1 << 16, file);
    decode(
        version,
        FromReader {
            reader,
            len: frame.len,
        },
    )
}

/// Reads (not yet checks) a model from the bytes of a model file.
///
/// # Errors
/// As [`read_path`].
pub(super) fn read_bytes(bytes: &[u8]) -> Result<ModelFile<Forest>> {
    let (frame, version) = frame_of(bytes)?;
    let payload = &bytes[HEADER..];
    if payload.len() as u64 != frame.len {
        return Err(corrupt(format!(
            "{} payload bytes, the header says {} (truncated?)",
            payload.len(),
            frame.len
        )));
    }
    serialize::check_crc(payload, &frame)?;
    decode(version, payload)
}
