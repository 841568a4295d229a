//! Reading and writing model files: the frame ([`crate::serialize`]) around a postcard
//! payload of a [`ModelFile`], streamed both ways (the forests are never copied into a
//! buffer), the missing-value section of versions 2 and 3, and the kind sections of
//! version 3. Files are read from regular files
//! only, at most their declared length; they are saved through [`super::atomic`], which
//! replaces the target whole or not at all. What is read here is decoded, not yet checked:
//! [`super::check::validated`] does that.

use super::atomic;
use super::check::check;
use super::header::{Body, ModelFile};
use crate::error::{io_error, Error, Result};
use crate::forest::Forest;
use crate::serialize::{self, corrupt, CrcWriter, Frame, HEADER, MODEL_MAGIC};
use serde::Serialize;
use std::borrow::Borrow;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The model file version this library writes and reads.
///
/// Version 1 replaced the Python-only layout `OBLQPY01` (a JSON header around core forest
/// bytes) of obliqueforest 0.1, which is not read: refit and save again. Version 2 is
/// version 1 followed by a missing-value section, and its task and classes may be
/// multi-output ones; it is written only for a multi-output model or when some tree
/// learned a missing-value side, so other models are still written (and read) as version
/// 1, and older readers refuse version 2 by its number.
///
/// Version 3 is version 2 (its missing section always present) followed by one kind
/// section per forest, in [`Body::forests`] order (`None` for a forest of the plain kind;
/// see [`crate::serialize`]); it is written only when some forest is honest or keeps leaf
/// values.
///
/// Version 4 is version 3 followed by one column section per forest (`None` for a forest
/// of numeric columns); it is written only when some forest was grown with categorical
/// columns.
pub const MODEL_FORMAT_VERSION: u32 = 4;
/// The model file version with kind sections and no column sections.
pub(super) const MODEL_FORMAT_VERSION_KIND: u32 = 3;
/// The model file version with a missing-value section and no kind sections.
pub(super) const MODEL_FORMAT_VERSION_MISSING: u32 = 2;
/// The model file version without a missing-value section.
pub(super) const MODEL_FORMAT_VERSION_PLAIN: u32 = 1;

/// The kind sections of a model file, one per forest.
type KindSections = Vec<Option<serialize::KindSection>>;
/// The column sections of a model file, one per forest.
type ColumnSections = Vec<Option<serialize::ColumnSection>>;

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
    mut w: W,
) -> Result<()> {
    let io = |e: std::io::Error| {
        serialize::unless_cancelled(Error::InvalidInput(format!("cannot write the model: {e}")))
    };
    let start = w.stream_position().map_err(io)?;
    w.write_all(&[0u8; HEADER]).map_err(io)?;
    let mut cw = CrcWriter::new(BufWriter::with_capacity(1 << 16, &mut w));
    // the writer's own failure (a full disk, say) is an I/O error; anything else a bug
    let encode = |e: postcard::Error, failure: Option<std::io::Error>| match failure {
        Some(f) => io(f),
        None => serialize::unless_cancelled(Error::Internal(format!("encode: {e}"))),
    };
    if let Err(e) = postcard::to_io(file, &mut cw) {
        return Err(encode(e, cw.failure.take()));
    }
    let forests = file.body.forests();
    let kinds: Vec<_> = forests
        .iter()
        .map(|f| (*f).borrow().kind_section())
        .collect();
    let columns: Vec<_> = forests
        .iter()
        .map(|f| (*f).borrow().column_section())
        .collect();
    let with_columns = columns.iter().any(Option::is_some);
    let with_kinds = with_columns || kinds.iter().any(Option::is_some);
    // (the header's task is every forest's; checked too for a model without forests)
    let required = with_kinds
        || file.header.task.n_targets() > 1
        || forests.iter().any(|f| (*f).borrow().beyond_v2());
    let section = serialize::missing_section(
        forests.iter().flat_map(|f| (*f).borrow().trees.iter()),
        required,
    );
    if let Some(section) = &section {
        if let Err(e) = postcard::to_io(section, &mut cw) {
            return Err(encode(e, cw.failure.take()));
        }
    }
    if with_kinds {
        if let Err(e) = postcard::to_io(&kinds, &mut cw) {
            return Err(encode(e, cw.failure.take()));
        }
    }
    if with_columns {
        if let Err(e) = postcard::to_io(&columns, &mut cw) {
            return Err(encode(e, cw.failure.take()));
        }
    }
    let version = match (&section, with_kinds, with_columns) {
        (_, _, true) => MODEL_FORMAT_VERSION,
        (_, true, false) => MODEL_FORMAT_VERSION_KIND,
        (Some(_), false, _) => MODEL_FORMAT_VERSION_MISSING,
        (None, false, _) => MODEL_FORMAT_VERSION_PLAIN,
    };
    cw.flush().map_err(io)?;
    let (len, crc) = (cw.len, cw.hasher.clone().finalize());
    drop(cw);
    let end = w.stream_position().map_err(io)?;
    w.seek(SeekFrom::Start(start)).map_err(io)?;
    w.write_all(&serialize::frame_header(MODEL_MAGIC, version, len, crc))
        .map_err(io)?;
    w.seek(SeekFrom::Start(end)).map_err(io)?;
    w.flush().map_err(io)
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
        MODEL_FORMAT_VERSION_PLAIN,
        MODEL_FORMAT_VERSION,
    )
}

/// The sections that follow a payload of version `version`.
fn sections_of(version: u32) -> serialize::Sections {
    match version {
        MODEL_FORMAT_VERSION_PLAIN => serialize::Sections::None,
        MODEL_FORMAT_VERSION_MISSING => serialize::Sections::Missing,
        _ => serialize::Sections::MissingAndKind,
    }
}

/// A decoded payload with its missing-value section given to its trees and its kind
/// sections to its forests.
fn with_section(
    (mut file, section, sections): serialize::Decoded<
        ModelFile<Forest>,
        (KindSections, Option<ColumnSections>),
    >,
) -> Result<ModelFile<Forest>> {
    let (kinds, columns) = match sections {
        Some((k, c)) => (Some(k), c),
        None => (None, None),
    };
    let mut forests: Vec<&mut Forest> = match &mut file.body {
        Body::Forest(f) => vec![f],
        Body::Rotation(r) => r.forests.iter_mut().flatten().collect(),
        Body::Encoder(e) => vec![&mut e.forest],
    };
    if let Some(section) = section {
        let trees = forests.iter_mut().flat_map(|f| f.trees.iter_mut());
        serialize::attach_missing(trees.collect::<Vec<_>>().into_iter(), section)?;
    }
    if let Some(kinds) = kinds {
        if kinds.len() != forests.len() {
            return Err(corrupt(format!(
                "{} kind sections for {} forests",
                kinds.len(),
                forests.len()
            )));
        }
        for (forest, kind) in forests.iter_mut().zip(kinds) {
            if let Some(kind) = kind {
                forest.attach_kind(kind)?;
            }
        }
    }
    if let Some(columns) = columns {
        if columns.len() != forests.len() {
            return Err(corrupt(format!(
                "{} column sections for {} forests",
                columns.len(),
                forests.len()
            )));
        }
        for (forest, c) in forests.into_iter().zip(columns) {
            if let Some(c) = c {
                forest.attach_columns(c)?;
            }
        }
    }
    Ok(file)
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
    let sections = sections_of(version);
    with_section(if version == MODEL_FORMAT_VERSION {
        let (f, m, k): Decoded<(KindSections, ColumnSections)> =
            serialize::decode_reader(reader, frame.len, sections)?;
        (f, m, k.map(|(k, c)| (k, Some(c))))
    } else {
        let (f, m, k): Decoded<KindSections> =
            serialize::decode_reader(reader, frame.len, sections)?;
        (f, m, k.map(|k| (k, None)))
    })
}

/// A decoded model payload with the sections of type `K` after it.
type Decoded<K> = serialize::Decoded<ModelFile<Forest>, K>;

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
    let sections = sections_of(version);
    with_section(if version == MODEL_FORMAT_VERSION {
        let (f, m, k): Decoded<(KindSections, ColumnSections)> =
            serialize::decode_slice(payload, sections)?;
        (f, m, k.map(|(k, c)| (k, Some(c))))
    } else {
        let (f, m, k): Decoded<KindSections> = serialize::decode_slice(payload, sections)?;
        (f, m, k.map(|k| (k, None)))
    })
}
