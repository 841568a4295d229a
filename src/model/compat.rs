//! Model files of versions 1 to 4, whose header had no projection record: the one place
//! that knows their layout. It reads them, giving each the record of its forests' own
//! projection, so that the checker finds the record equal to the forests and judges what
//! it always judged, and the Python loader still compares the estimator's parameters
//! with the forests (through the record), as it does for every file. It also writes them,
//! as the writer of those versions did, for the tests of this reader.
//!
//! Layout: a payload of the header without its record and the body, then the sections
//! its version has: none (version 1), the missing-value section (2), and the kind
//! sections (3) and the column sections (4) too. Each version was written only when a
//! model needed its sections ([`write_legacy`] keeps that rule).
//!
//! One file of those versions reads differently: a forest of an unregistered family
//! (`Projection::user`, which a Rust program, never Python, may have saved under the
//! autoencoder) has no record the registry can build, so the checker refuses it.

use super::atomic;
use super::header::{Body, ClassLabels, Estimator, Header, ModelFile, Param, ProjectionRecord};
use super::payload::{attach, write_frame, ColumnSections, KindSections, Layout, Source};
use crate::error::Result;
use crate::forest::Forest;
use crate::params::Task;
use crate::serialize::{self, Sections};
use crate::value::Value;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::io::{Seek, Write};
use std::path::Path;

/// The header of versions 1 to 4: [`Header`] without its projection record.
#[derive(Serialize, Deserialize)]
struct LegacyHeader {
    estimator: Estimator,
    task: Task,
    n_features: u64,
    feature_names: Option<Vec<String>>,
    classes: Option<ClassLabels>,
    params: Vec<(String, Param)>,
    attributes: Vec<(String, Value)>,
}

/// The payload of versions 1 to 4 (`B`: the body, or a borrowed one for writing).
#[derive(Serialize, Deserialize)]
struct LegacyFile<B> {
    header: LegacyHeader,
    body: B,
}

/// A file of versions 1 to 4 as this version's model: the record is that of its forests'
/// projection (of the first forest: a body whose forests disagree, or that has none, is
/// refused by the checker all the same).
fn upgrade(old: LegacyFile<Body<Forest>>) -> ModelFile<Forest> {
    let h = old.header;
    let projection = match old.body.forests().first() {
        Some(f) => ProjectionRecord::of(&f.params().projection),
        None => ProjectionRecord {
            tag: String::new(),
            args: vec![],
        },
    };
    ModelFile {
        header: Header {
            estimator: h.estimator,
            task: h.task,
            n_features: h.n_features,
            feature_names: h.feature_names,
            classes: h.classes,
            params: h.params,
            attributes: h.attributes,
            projection,
        },
        body: old.body,
    }
}

/// Decodes the payload of a file of version `version` (1 to 4) from `source`, its
/// sections given to its forests.
///
/// # Errors
/// As [`Source::decode`] and [`attach`].
pub(super) fn decode(version: u32, source: impl Source) -> Result<ModelFile<Forest>> {
    type Old = LegacyFile<Body<Forest>>;
    let (old, missing, kinds, columns) = match version {
        1 | 2 => {
            let sections = if version == 1 {
                Sections::None
            } else {
                Sections::Missing
            };
            let (old, missing, _) = source.decode::<Old, KindSections>(sections)?;
            (old, missing, None, None)
        }
        3 => {
            let (old, missing, kinds) =
                source.decode::<Old, KindSections>(Sections::MissingAndKind)?;
            (old, missing, kinds, None)
        }
        _ => {
            let (old, missing, sections) =
                source.decode::<Old, (KindSections, ColumnSections)>(Sections::MissingAndKind)?;
            let (kinds, columns) = sections.unzip();
            (old, missing, kinds, columns)
        }
    };
    attach(upgrade(old), missing, kinds, columns)
}

/// Writes `file` (unchecked) as the writer of versions 1 to 4 did: its header
/// without the record, as the oldest version whose sections the model needs. Only for
/// the tests of this reader.
///
/// # Errors
/// As [`super::write_unchecked`].
#[doc(hidden)]
pub fn write_legacy<F: Borrow<Forest> + Serialize, W: Write + Seek>(
    file: &ModelFile<F>,
    w: W,
) -> Result<()> {
    let forests: Vec<&Forest> = file
        .body
        .forests()
        .into_iter()
        .map(|f| f.borrow())
        .collect();
    let columns = forests.iter().any(|f| f.column_section().is_some());
    let kinds = columns || forests.iter().any(|f| f.kind_section().is_some());
    // (the header's task is every forest's; checked too for a model without forests)
    let required =
        kinds || file.header.task.n_targets() > 1 || forests.iter().any(|f| f.beyond_v2());
    let trees = forests.iter().flat_map(|f| f.trees.iter());
    let missing = serialize::missing_section(trees, required).is_some();
    let version = match (missing, kinds, columns) {
        (_, _, true) => 4,
        (_, true, false) => 3,
        (true, false, _) => 2,
        (false, false, _) => 1,
    };
    let h = &file.header;
    let old = LegacyFile {
        header: LegacyHeader {
            estimator: h.estimator,
            task: h.task.clone(),
            n_features: h.n_features,
            feature_names: h.feature_names.clone(),
            classes: h.classes.clone(),
            params: h.params.clone(),
            attributes: h.attributes.clone(),
        },
        body: &file.body,
    };
    let layout = Layout {
        missing,
        kinds,
        columns,
    };
    write_frame(&old, &file.body, layout, version, w)
}

/// [`write_legacy`] to `path`, replacing it whole or not at all. Only for the tests of
/// this reader.
///
/// # Errors
/// As [`super::save_file_unchecked`].
#[doc(hidden)]
pub fn save_file_legacy<F: Borrow<Forest> + Serialize>(
    file: &ModelFile<F>,
    path: &Path,
) -> Result<()> {
    atomic::replace_file(path, |f| write_legacy(file, f))
}
