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
//! Missing-value directions: a tree's `missing_flip` (see [`crate::tree::Tree`]) is not
//! in its serde encoding. When some tree of the payload has one, the payload is followed,
//! inside the same checksummed length, by a missing section (postcard: per tree, its
//! list) and the frame carries the next format version, which older readers refuse by
//! version instead of misreading; without one, the bytes are those of the version before,
//! unchanged.
//!
//! Kinds of forest (honest forests, forests that keep leaf values): the parameters and
//! data they add (`honest_fraction`, `store_leaf_values`, the training targets, each
//! tree's [`crate::tree::LeafRows`]) are not in the serde encoding either. A forest that
//! has any is followed, after its missing section (then always present), by a kind
//! section (`KindSection`) and carries version 4 (a model file, version 3, has one
//! optional kind section per forest); all other forests keep the bytes of the versions
//! before.
//!
//! Reading checks every field of the header, the checksum, and then every
//! index, length and value of the forest (`validate_forest`), so damaged or crafted
//! bytes give an error, never a crash, an out-of-bounds traversal or a prediction that is
//! not finite. Payloads are decoded from a reader limited to the declared length: every
//! element consumes at least one byte, so what decoding allocates is bounded by the bytes
//! present. The checksum is verified before anything is decoded.
//!
//! Reading, decoding, writing and validating stop with [`Error::Cancelled`] soon after the
//! call's [`crate::Cancel`] token is cancelled (Ctrl-C from Python): they poll it every
//! `CANCEL_STRIDE` bytes and once per tree.

use crate::cancel;
use crate::error::{Error, Result};
use crate::forest::Forest;
use crate::forest::LeafTargets;
use crate::params::Task;
use crate::tree::{LeafRows, PackedTree};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// The first bytes of a core forest.
pub const MAGIC: &[u8; 8] = b"OBLQFRST";
/// The first bytes of a model file ([`crate::model`]); named here so that each reader
/// can tell the other kind of bytes by name.
pub const MODEL_MAGIC: &[u8; 8] = b"OBLQMODL";
/// Bytes read, decoded or written between two polls of the cancel token.
pub(crate) const CANCEL_STRIDE: u64 = 1 << 20;
/// The newest format version of the core forest bytes this library writes and reads.
///
/// Version 2 stores leaf values only (version 1, from before the first release, stored a
/// value row for every node and is not read). Version 3 is version 2 followed by a
/// missing-value section, and its task may be a multi-output one and its projection
/// SPORF's with a weight scale; it is written only for such forests or when some tree has
/// missing-value directions, so other forests are still written (and read) as version 2,
/// with the bytes they always had, and older readers refuse version 3 by its number
/// instead of misreading it.
///
/// Version 4 is version 3 (its missing section always present) followed by a kind section
/// (`KindSection`); it is written only for honest forests and forests that keep leaf
/// values.
///
/// Version 5 is version 4 (its kind section always present) followed by a column section
/// (`ColumnSection`: the columns' kinds and each tree's level maps); it is written only
/// for forests grown with categorical columns.
pub const FORMAT_VERSION: u32 = 5;
/// The core forest version with missing and kind sections and no column section.
pub(crate) const FORMAT_VERSION_KIND: u32 = 4;
/// The core forest version with a missing-value section and no kind section.
pub(crate) const FORMAT_VERSION_MISSING: u32 = 3;
/// The core forest version without a missing-value section.
pub(crate) const FORMAT_VERSION_PLAIN: u32 = 2;

/// What a kind of forest adds to the serde encoding of its forest: its honest fraction,
/// whether it keeps leaf values, then the training targets and each tree's leaf rows.
#[derive(Serialize)]
pub(crate) struct KindSectionRef<'a> {
    honest_fraction: f64,
    store_leaf_values: bool,
    targets: Option<&'a LeafTargets>,
    leaf_rows: Vec<Option<&'a LeafRows>>,
}

/// [`KindSectionRef`] as read.
#[derive(Deserialize)]
pub(crate) struct KindSection {
    honest_fraction: f64,
    store_leaf_values: bool,
    targets: Option<LeafTargets>,
    leaf_rows: Vec<Option<LeafRows>>,
}

/// What categorical columns add to a forest's encoding: each column's number of levels
/// (see [`crate::params::ForestParams::categorical`]) and each tree's level maps.
#[derive(Serialize)]
pub(crate) struct ColumnSectionRef<'a> {
    categorical: &'a [u32],
    level_names: &'a [Vec<String>],
    maps: Vec<&'a crate::columns::LevelMaps>,
}

/// [`ColumnSectionRef`] as read.
#[derive(Deserialize)]
pub(crate) struct ColumnSection {
    categorical: Vec<u32>,
    level_names: Vec<Vec<String>>,
    maps: Vec<crate::columns::LevelMaps>,
}

impl Forest {
    /// The forest's column section, `None` for a forest of numeric columns, whose bytes
    /// are those of the versions before column sections.
    pub(crate) fn column_section(&self) -> Option<ColumnSectionRef<'_>> {
        if self.params.categorical.is_empty() {
            return None;
        }
        Some(ColumnSectionRef {
            categorical: &self.params.categorical,
            level_names: &self.params.level_names,
            maps: self.trees.iter().map(|t| &t.level_maps).collect(),
        })
    }

    /// Gives the forest what its column section read (validation comes after).
    ///
    /// # Errors
    /// [`Error::CorruptModel`] when the section does not have one entry per tree.
    pub(crate) fn attach_columns(&mut self, section: ColumnSection) -> Result<()> {
        if section.maps.len() != self.trees.len() {
            return Err(corrupt(format!(
                "the column section has {} map tables for {} trees",
                section.maps.len(),
                self.trees.len()
            )));
        }
        self.params.categorical = section.categorical;
        self.params.level_names = section.level_names;
        for (t, maps) in self.trees.iter_mut().zip(section.maps) {
            t.level_maps = maps;
        }
        Ok(())
    }

    /// The forest's kind section, `None` for a forest of the plain kind (not honest, no
    /// leaf values) unless `always`: its bytes are then those of the versions before kind
    /// sections.
    pub(crate) fn kind_section(&self) -> Option<KindSectionRef<'_>> {
        self.kind_section_if(self.column_section().is_some())
    }

    /// [`Self::kind_section`], present whatever the kind when `always`.
    fn kind_section_if(&self, always: bool) -> Option<KindSectionRef<'_>> {
        let p = &self.params;
        let plain = p.honest_fraction == 0.0 && !p.store_leaf_values && self.leaf_targets.is_none();
        if plain && !always {
            return None;
        }
        Some(KindSectionRef {
            honest_fraction: p.honest_fraction,
            store_leaf_values: p.store_leaf_values,
            targets: self.leaf_targets.as_ref(),
            leaf_rows: self.trees.iter().map(|t| t.leaf_rows.as_ref()).collect(),
        })
    }

    /// Gives the forest what its kind section read (validation comes after).
    ///
    /// # Errors
    /// [`Error::CorruptModel`] when the section does not have one entry per tree.
    pub(crate) fn attach_kind(&mut self, section: KindSection) -> Result<()> {
        if section.leaf_rows.len() != self.trees.len() {
            return Err(corrupt(format!(
                "the kind section has {} leaf tables for {} trees",
                section.leaf_rows.len(),
                self.trees.len()
            )));
        }
        self.params.honest_fraction = section.honest_fraction;
        self.params.store_leaf_values = section.store_leaf_values;
        self.leaf_targets = section.targets;
        for (t, rows) in self.trees.iter_mut().zip(section.leaf_rows) {
            t.leaf_rows = rows;
        }
        Ok(())
    }
}

/// Per tree of a payload (in order), its `missing_flip`; present only when some is not empty.
pub(crate) type MissingSection = Vec<Vec<u32>>;

/// The section of `trees`, or `None` when no tree has missing-value directions and the
/// section is not `required` (a payload a version-2 reader could not decode, multi-output
/// or with a scaled SPORF projection, always carries one, maybe all empty).
pub(crate) fn missing_section<'a>(
    trees: impl Iterator<Item = &'a crate::tree::Tree> + Clone,
    required: bool,
) -> Option<MissingSection> {
    (required || trees.clone().any(|t| !t.missing_flip.is_empty()))
        .then(|| trees.map(|t| t.missing_flip.clone()).collect())
}

/// Gives each of `trees` its list from `section` (validation of the lists comes after).
///
/// # Errors
/// [`Error::CorruptModel`] when the section does not have one list per tree.
pub(crate) fn attach_missing<'a>(
    trees: impl ExactSizeIterator<Item = &'a mut crate::tree::Tree>,
    section: MissingSection,
) -> Result<()> {
    if trees.len() != section.len() {
        return Err(corrupt(format!(
            "the missing-value section has {} lists for {} trees",
            section.len(),
            trees.len()
        )));
    }
    for (t, flips) in trees.zip(section) {
        t.missing_flip = flips;
    }
    Ok(())
}
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

/// Checks a frame header against `magic` and the supported versions `oldest..=version`;
/// returns the frame and its version.
pub(crate) fn read_frame(
    head: &[u8],
    magic: &[u8; 8],
    oldest: u32,
    version: u32,
) -> Result<(Frame, u32)> {
    if head.len() < HEADER {
        return Err(corrupt("too short to be a model (truncated?)"));
    }
    if &head[..8] != magic {
        return Err(corrupt("not an obliqueforest model (bad magic bytes)"));
    }
    let u32_at = |a: usize| u32::from_le_bytes([head[a], head[a + 1], head[a + 2], head[a + 3]]);
    let found = u32_at(8);
    if !(oldest..=version).contains(&found) {
        return Err(Error::UnsupportedVersion {
            found,
            supported: version,
        });
    }
    let frame = Frame {
        len: u32_at(12) as u64 | (u32_at(16) as u64) << 32,
        crc: u32_at(20),
    };
    Ok((frame, found))
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

/// A writer that counts and checksums what passes through it, and fails with
/// [`cancelled_io`] once the call is cancelled. It keeps the I/O error it failed with
/// (`failure`): serde's encoders report only that writing failed.
pub(crate) struct CrcWriter<W> {
    pub inner: W,
    pub hasher: crc32fast::Hasher,
    pub len: u64,
    pub failure: Option<std::io::Error>,
    next_poll: u64,
}

impl<W> CrcWriter<W> {
    pub fn new(inner: W) -> Self {
        CrcWriter {
            inner,
            hasher: crc32fast::Hasher::new(),
            len: 0,
            failure: None,
            next_poll: 0,
        }
    }
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.len >= self.next_poll {
            self.next_poll = self.len + CANCEL_STRIDE;
            if cancel::requested() {
                return Err(cancelled_io());
            }
        }
        let n = self.inner.write(buf).inspect_err(|e| {
            self.failure = Some(std::io::Error::new(e.kind(), e.to_string()));
        })?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().inspect_err(|e| {
            self.failure = Some(std::io::Error::new(e.kind(), e.to_string()));
        })
    }
}

/// The I/O error a cancelled read or write stops with (not `Interrupted`, which
/// `read_exact` and `write_all` retry).
fn cancelled_io() -> std::io::Error {
    std::io::Error::other("cancelled")
}

/// `error`, or [`Error::Cancelled`] when the call was cancelled (a cancelled read or write
/// surfaces as whatever error its caller makes of [`cancelled_io`]: a decoder's own).
pub(crate) fn unless_cancelled(error: Error) -> Error {
    if cancel::requested() {
        Error::Cancelled
    } else {
        error
    }
}

/// A reader that fails with [`cancelled_io`] once the call is cancelled, polling every
/// [`CANCEL_STRIDE`] bytes.
struct Cancellable<R> {
    inner: R,
    read: u64,
    next_poll: u64,
}

impl<R: Read> Read for Cancellable<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.read >= self.next_poll {
            self.next_poll = self.read + CANCEL_STRIDE;
            if cancel::requested() {
                return Err(cancelled_io());
            }
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Checks that the `frame.len` bytes `reader` yields have the frame's checksum.
///
/// # Errors
/// [`Error::CorruptModel`] for a short payload or a wrong checksum, [`Error::Cancelled`].
pub(crate) fn check_crc(reader: impl Read, frame: &Frame) -> Result<()> {
    let mut limited = reader.take(frame.len);
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        cancel::check()?;
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

/// Which sections follow a payload's value: none, the missing section, or the missing
/// section and a kind section.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Sections {
    None,
    Missing,
    MissingAndKind,
}

/// A decoded payload: the value, then its sections when present.
pub(crate) type Decoded<T, K> = (T, Option<MissingSection>, Option<K>);

/// Decodes a checksummed payload held in memory, followed by the `sections` (a kind
/// section of type `K`).
///
/// (Not cancellable: slices decode several times faster than readers, and whoever holds
/// the bytes in memory holds a model of a size that decodes quickly.)
///
/// # Errors
/// [`Error::CorruptModel`] for bytes that do not decode or trailing bytes.
pub(crate) fn decode_slice<T: serde::de::DeserializeOwned, K: serde::de::DeserializeOwned>(
    payload: &[u8],
    sections: Sections,
) -> Result<Decoded<T, K>> {
    let decode = |e: postcard::Error| corrupt(format!("decode: {e}"));
    let (value, mut rest): (T, &[u8]) = postcard::take_from_bytes(payload).map_err(decode)?;
    let (mut missing, mut kind) = (None, None);
    if sections >= Sections::Missing {
        let (s, after): (MissingSection, &[u8]) =
            postcard::take_from_bytes(rest).map_err(decode)?;
        (missing, rest) = (Some(s), after);
    }
    if sections == Sections::MissingAndKind {
        let (s, after): (K, &[u8]) = postcard::take_from_bytes(rest).map_err(decode)?;
        (kind, rest) = (Some(s), after);
    }
    if !rest.is_empty() {
        return Err(corrupt("trailing bytes after the model"));
    }
    Ok((value, missing, kind))
}

/// Decodes a checksummed payload of `len` bytes from a reader, without holding the bytes,
/// followed by the `sections`.
///
/// # Errors
/// [`Error::CorruptModel`] for bytes that do not decode or trailing bytes,
/// [`Error::Cancelled`].
pub(crate) fn decode_reader<T: serde::de::DeserializeOwned, K: serde::de::DeserializeOwned>(
    reader: impl Read,
    len: u64,
    sections: Sections,
) -> Result<Decoded<T, K>> {
    let decode = |e: postcard::Error| unless_cancelled(corrupt(format!("decode: {e}")));
    let mut limited = Cancellable {
        inner: reader,
        read: 0,
        next_poll: 0,
    }
    .take(len);
    let mut scratch = vec![0u8; SCRATCH];
    let (value, _) = postcard::from_io::<T, _>((&mut limited, &mut scratch[..])).map_err(decode)?;
    let missing = if sections >= Sections::Missing {
        let (s, _) = postcard::from_io::<MissingSection, _>((&mut limited, &mut scratch[..]))
            .map_err(decode)?;
        Some(s)
    } else {
        None
    };
    let kind = if sections == Sections::MissingAndKind {
        let (s, _) = postcard::from_io::<K, _>((&mut limited, &mut scratch[..])).map_err(decode)?;
        Some(s)
    } else {
        None
    };
    if limited.limit() != 0 {
        return Err(corrupt("trailing bytes after the model"));
    }
    Ok((value, missing, kind))
}

impl Forest {
    /// Whether a version-2 reader could not decode this forest (a multi-output task, SPORF
    /// with a weight scale, the friedman_mse criterion, a forest without targets (its task
    /// and criteria), or a sample count of "sqrt": variants it does not know), so that it
    /// is written in the newer version, with its missing section, whether or not a tree
    /// has missing-value directions.
    pub(crate) fn beyond_v2(&self) -> bool {
        use crate::params::SampleCount::Sqrt;
        let p = &self.params;
        p.task.n_targets() != 1
            || crate::projection::needs_newer_format(&p.projection)
            || p.criterion == crate::params::Criterion::FriedmanMse
            || [p.min_samples_split, p.min_samples_leaf].contains(&Sqrt)
            || p.max_samples == Some(Sqrt)
    }

    /// Encodes the forest (header, checksum, payload).
    ///
    /// # Errors
    /// [`Error::Internal`] if serde fails (it should not).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let encode = |e: postcard::Error| Error::Internal(format!("encode: {e}"));
        let mut payload = postcard::to_stdvec(self).map_err(encode)?;
        let kind = self.kind_section();
        let columns = self.column_section();
        let section = missing_section(self.trees.iter(), self.beyond_v2() || kind.is_some());
        if let Some(section) = &section {
            payload.extend(postcard::to_stdvec(section).map_err(encode)?);
        }
        if let Some(kind) = &kind {
            payload.extend(postcard::to_stdvec(kind).map_err(encode)?);
        }
        if let Some(columns) = &columns {
            payload.extend(postcard::to_stdvec(columns).map_err(encode)?);
        }
        let version = match (&section, &kind, &columns) {
            (_, _, Some(_)) => FORMAT_VERSION,
            (_, Some(_), None) => FORMAT_VERSION_KIND,
            (Some(_), None, None) => FORMAT_VERSION_MISSING,
            (None, None, None) => FORMAT_VERSION_PLAIN,
        };
        let mut out = Vec::with_capacity(HEADER + payload.len());
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
        if bytes.len() >= 8 && &bytes[..8] == MODEL_MAGIC {
            return Err(corrupt(
                "this is a model file (estimator header and forests), not a bare core forest; \
                 read it with Model::from_bytes / obliqueforest.load",
            ));
        }
        let (frame, version) = read_frame(bytes, MAGIC, FORMAT_VERSION_PLAIN, FORMAT_VERSION)?;
        let payload = &bytes[HEADER..];
        if payload.len() as u64 != frame.len {
            return Err(corrupt(format!(
                "payload is {} bytes, header says {} (truncated?)",
                payload.len(),
                frame.len
            )));
        }
        check_crc(payload, &frame)?;
        let sections = match version {
            FORMAT_VERSION_PLAIN => Sections::None,
            FORMAT_VERSION_MISSING => Sections::Missing,
            _ => Sections::MissingAndKind,
        };
        // version 5: the kind section is followed by the column section (postcard encodes
        // a pair as its two parts in turn)
        let (mut forest, missing, kind, columns) = if version == FORMAT_VERSION {
            let (f, m, k): Decoded<Forest, (KindSection, ColumnSection)> =
                decode_slice(payload, sections)?;
            let (k, c) = k.map_or((None, None), |(k, c)| (Some(k), Some(c)));
            (f, m, k, c)
        } else {
            let (f, m, k): Decoded<Forest, KindSection> = decode_slice(payload, sections)?;
            (f, m, k, None)
        };
        if let Some(section) = missing {
            attach_missing(forest.trees.iter_mut(), section)?;
        }
        if let Some(kind) = kind {
            forest.attach_kind(kind)?;
        }
        if let Some(columns) = columns {
            forest.attach_columns(columns)?;
        }
        validate_forest(&forest)?;
        Ok(forest)
    }
}

/// The sum over a forest's trees of its largest leaf value in magnitude: every prediction
/// (a sum of one leaf value per tree, divided by the number of trees) is at most this.
pub(crate) fn leaf_value_bound(forest: &Forest) -> f64 {
    forest
        .trees
        .iter()
        .map(|t| t.value.iter().fold(0.0f64, |m, v| m.max(v.abs())))
        .sum()
}

/// The tolerance on the sum of a classification leaf's class distribution (per output).
const DISTRIBUTION_TOLERANCE: f64 = 1e-6;

/// Validates a decoded forest, then lays it out for prediction (only a validated forest
/// is): every index and length ([`Forest::validate`], which also checks that thresholds,
/// weights and leaf values are finite), that the sum over trees of the largest leaf value
/// is finite (a prediction adds one leaf value per tree before dividing), and for
/// classification that every leaf holds a class distribution per output. A forest that
/// passes predicts finite values (class probabilities that sum to 1 per output) for every
/// input.
///
/// # Errors
/// [`Error::CorruptModel`] naming what is wrong, [`Error::Cancelled`].
pub(crate) fn validate_forest(forest: &Forest) -> Result<()> {
    forest.validate()?;
    if !leaf_value_bound(forest).is_finite() {
        return Err(corrupt(
            "leaf values so large that their sum over the trees overflows",
        ));
    }
    let classes: &[usize] = match &forest.params.task {
        Task::Classification { n_classes } => std::slice::from_ref(n_classes),
        Task::MultiClassification { n_classes } => n_classes,
        Task::Regression | Task::MultiRegression { .. } | Task::Unsupervised { .. } => &[],
    };
    if !classes.is_empty() {
        for tree in &forest.trees {
            cancel::check()?;
            tree.validate_distributions(classes, DISTRIBUTION_TOLERANCE)?;
        }
    }
    // laid out tree by tree, polling between trees (`Forest::packed` would build the
    // layout in one go, which takes about a second for a model of several hundred MB)
    let mut packed = Vec::with_capacity(forest.trees.len());
    for tree in &forest.trees {
        cancel::check()?;
        packed.push(PackedTree::new(tree, forest.descriptors()));
    }
    let _ = forest.packed.set(packed); // (already set: laid out before, the same way)
    Ok(())
}
