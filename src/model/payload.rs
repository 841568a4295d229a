//! A model file's payload and the sections after it, both ways, whatever the layout:
//! [`write_frame`] writes a payload and the sections a [`Layout`] names in a frame of a
//! given version, streaming (the forests are never copied into a buffer); a [`Source`]
//! decodes a payload and its sections; [`attach`] gives the sections to the forests.
//! Which layout a version has is [`super::file`]'s (version 5) and [`super::compat`]'s
//! (versions 1 to 4).

use super::header::{Body, ModelFile};
use crate::error::{Error, Result};
use crate::forest::Forest;
use crate::serialize::{self, corrupt, CrcWriter, MissingSection, HEADER, MODEL_MAGIC};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Borrow;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};

/// The kind sections of a model file, one per forest.
pub(super) type KindSections = Vec<Option<serialize::KindSection>>;
/// The column sections of a model file, one per forest.
pub(super) type ColumnSections = Vec<Option<serialize::ColumnSection>>;

/// The sections written after a payload (version 5 has all three; `compat.rs` says which
/// an earlier version has).
#[derive(Clone, Copy, Debug)]
pub(super) struct Layout {
    /// Per tree, its missing-value list.
    pub(super) missing: bool,
    /// Per forest, its kind section.
    pub(super) kinds: bool,
    /// Per forest, its column section.
    pub(super) columns: bool,
}

/// Writes `payload` as a model frame of version `version` to `w`, followed by the
/// sections of `body`'s forests that `layout` names.
pub(super) fn write_frame<P: Serialize, F: Borrow<Forest>, W: Write + Seek>(
    payload: &P,
    body: &Body<F>,
    layout: Layout,
    version: u32,
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
    let forests: Vec<&Forest> = body.forests().into_iter().map(|f| f.borrow()).collect();
    let mut result = postcard::to_io(payload, &mut cw).map(drop);
    if layout.missing && result.is_ok() {
        let trees = forests.iter().flat_map(|f| f.trees.iter());
        // (always a section: it is required)
        if let Some(section) = serialize::missing_section(trees, true) {
            result = postcard::to_io(&section, &mut cw).map(drop);
        }
    }
    if layout.kinds && result.is_ok() {
        let kinds: Vec<_> = forests.iter().map(|f| f.kind_section()).collect();
        result = postcard::to_io(&kinds, &mut cw).map(drop);
    }
    if layout.columns && result.is_ok() {
        let columns: Vec<_> = forests.iter().map(|f| f.column_section()).collect();
        result = postcard::to_io(&columns, &mut cw).map(drop);
    }
    if let Err(e) = result {
        return Err(encode(e, cw.failure.take()));
    }
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

/// Where a payload is decoded from: a file's reader, or bytes in memory.
pub(super) trait Source {
    /// The payload as a `T`, then the `sections` after it (the kind sections as a `K`).
    ///
    /// # Errors
    /// [`Error::CorruptModel`] for bytes that do not decode or trailing bytes,
    /// [`Error::Cancelled`].
    fn decode<T: DeserializeOwned, K: DeserializeOwned>(
        self,
        sections: serialize::Sections,
    ) -> Result<serialize::Decoded<T, K>>;
}

/// A reader of a payload of `len` bytes.
pub(super) struct FromReader<R> {
    /// The reader, at the payload's first byte.
    pub(super) reader: R,
    /// The payload's length.
    pub(super) len: u64,
}

impl<R: Read> Source for FromReader<R> {
    fn decode<T: DeserializeOwned, K: DeserializeOwned>(
        self,
        sections: serialize::Sections,
    ) -> Result<serialize::Decoded<T, K>> {
        serialize::decode_reader(self.reader, self.len, sections)
    }
}

impl Source for &[u8] {
    fn decode<T: DeserializeOwned, K: DeserializeOwned>(
        self,
        sections: serialize::Sections,
    ) -> Result<serialize::Decoded<T, K>> {
        serialize::decode_slice(self, sections)
    }
}

/// A decoded model with its sections given to it: each tree its missing-value list, each
/// forest its kind and column sections (`None`: the file's version has no such section).
///
/// # Errors
/// [`Error::CorruptModel`] when a section does not have one entry per tree or forest, or
/// a forest refuses its section.
pub(super) fn attach(
    mut file: ModelFile<Forest>,
    missing: Option<MissingSection>,
    kinds: Option<KindSections>,
    columns: Option<ColumnSections>,
) -> Result<ModelFile<Forest>> {
    let mut forests: Vec<&mut Forest> = match &mut file.body {
        Body::Forest(f) => vec![f],
        Body::Rotation(r) => r.forests.iter_mut().flatten().collect(),
        Body::Encoder(e) => vec![&mut e.forest],
    };
    if let Some(section) = missing {
        let trees = forests.iter_mut().flat_map(|f| f.trees.iter_mut());
        serialize::attach_missing(trees.collect::<Vec<_>>().into_iter(), section)?;
    }
    attach_each(&mut forests, kinds, "kind", Forest::attach_kind)?;
    attach_each(&mut forests, columns, "column", Forest::attach_columns)?;
    Ok(file)
}

/// Gives each forest its entry of `sections` (one per forest, `None` for a forest without
/// one) through `attach`; nothing when the file's version has no such sections.
fn attach_each<S>(
    forests: &mut [&mut Forest],
    sections: Option<Vec<Option<S>>>,
    what: &str,
    attach: impl Fn(&mut Forest, S) -> Result<()>,
) -> Result<()> {
    let Some(sections) = sections else {
        return Ok(());
    };
    if sections.len() != forests.len() {
        return Err(corrupt(format!(
            "{} {what} sections for {} forests",
            sections.len(),
            forests.len()
        )));
    }
    for (forest, section) in forests.iter_mut().zip(sections) {
        if let Some(section) = section {
            attach(forest, section)?;
        }
    }
    Ok(())
}
