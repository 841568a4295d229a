//! The memory one worker reuses across the nodes and trees it grows ([`Workspace`]), and
//! the projection of a node's rows ([`project`]) that the split search and the partition
//! share.
//!
//! Invariant: nothing in a workspace outlives the node (or, for the node table, the tree)
//! that filled it; every buffer is cleared or overwritten before it is read, so a
//! workspace carries no state from one tree to the next.

use super::bins::Bins;
use crate::data::FeatureMatrix;
use crate::projection::{ProjRef, ProjectionBuf, SamplerScratch};

/// Per-worker memory reused across nodes and trees.
#[derive(Default)]
pub(crate) struct Workspace {
    /// The in-bag rows; a node owns `samples[start..end]`.
    pub(super) samples: Vec<u32>,
    pub(super) pairs: Vec<(f32, u32)>,
    pub(super) sort_buf: Vec<(f32, u32)>,
    /// The node's rows projected on one candidate (or on the chosen split).
    pub(super) vals: Vec<f32>,
    pub(super) cand: ProjectionBuf,
    pub(super) scratch: SamplerScratch,
    /// The criterion statistics of the left and right children while scanning.
    pub(super) left: Vec<f64>,
    pub(super) right: Vec<f64>,
    pub(super) node_sums: Vec<f64>,
    /// The chosen projections of the tree's nodes, and each node's range in them.
    pub(super) arena_idx: Vec<u32>,
    pub(super) arena_w: Vec<f32>,
    pub(super) node_proj: Vec<(u32, u32)>,
    pub(super) node_values: Vec<f64>,
    pub(super) right_rows: Vec<u32>,
    /// Scratch of [`project`].
    pub(super) terms: Gather,
    pub(super) bins: Bins,
    /// Samples of a node's rows whose candidate projection is present / missing (NaN).
    pub(super) present: Vec<u32>,
    pub(super) missing: Vec<u32>,
    /// Criterion statistics of the missing rows (random splitter).
    pub(super) miss_stats: Vec<f64>,
    /// Sparse X's zero block ([`super::sparse_split`]): the statistics of a candidate's
    /// rows projected to zero.
    pub(super) zero_bin: Vec<f64>,
    /// Sparse X: a bit per training row, set for the rows of the node being searched
    /// (none between searches).
    pub(super) node_mask: Vec<u64>,
}

/// Memory [`project`] reuses: a projection's terms, and the row map sparse X gathers
/// through ([`FeatureMatrix::project_rows`]).
#[derive(Default)]
pub(crate) struct Gather {
    terms: Vec<(usize, f32)>,
    row_pos: Vec<u32>,
    /// One piece's values of a pooled projection.
    piece: Vec<f32>,
    /// A pooled projection's columns over the node's rows, each gathered once
    /// (`block[c * m..(c + 1) * m]` is column c), and each feature's column in it
    /// (`u32::MAX` for features not gathered; all of them between projections).
    block: Vec<f32>,
    column_of: Vec<u32>,
    used: Vec<u32>,
}

/// Projected values of the rows `samples` of `x` under projection `proj`, into `out`.
#[inline]
pub(super) fn project(
    x: &FeatureMatrix<'_>,
    proj: ProjRef<'_>,
    samples: &[u32],
    gather: &mut Gather,
    out: &mut Vec<f32>,
) {
    gather.terms.clear();
    proj.for_each(|j, w| gather.terms.push((j, w)));
    let Some(pooling) = proj.pooling() else {
        x.project_rows(&gather.terms, samples, &mut gather.row_pos, out);
        return;
    };
    // pooled: every feature gathered once over the node's rows (its pieces overlap: a
    // filter slid along a window reads each position span times), then each piece summed
    // from the block in term order from 0 (the linear path's sums, bit for bit: adding
    // a term of +0 or -0 to a sum that starts at +0 changes nothing, so the gathered
    // +0 of a -0 entry gives the same sums) and combined in piece order (the values
    // `ProjRef::value_by` computes)
    let m = samples.len();
    gather.column_of.resize(x.n_features, u32::MAX);
    gather.block.clear();
    gather.used.clear();
    for &(j, _) in &gather.terms {
        if gather.column_of[j] == u32::MAX {
            gather.column_of[j] = gather.used.len() as u32;
            gather.used.push(j as u32);
            x.project_rows(&[(j, 1.0)], samples, &mut gather.row_pos, &mut gather.piece);
            gather.block.extend_from_slice(&gather.piece);
        }
    }
    out.clear();
    out.resize(m, 0.0);
    gather.piece.resize(m, 0.0);
    for (k, piece) in gather.terms.chunks(pooling.piece_len).enumerate() {
        let sums: &mut [f32] = if k == 0 { out } else { &mut gather.piece };
        sums.fill(0.0);
        for &(j, w) in piece {
            let c = gather.column_of[j] as usize;
            let col = &gather.block[c * m..(c + 1) * m];
            for (s, &v) in sums.iter_mut().zip(col) {
                *s += w * v;
            }
        }
        if k > 0 {
            for (o, &v) in out.iter_mut().zip(&gather.piece) {
                *o = pooling.pool.combine(*o, v);
            }
        }
    }
    for &j in &gather.used {
        gather.column_of[j as usize] = u32::MAX;
    }
}

/// On sparse X, the rows of `samples` (ascending, marked in `node_mask` if given) whose
/// projection
/// under `proj` (linear, not pooled) is not 0, as (value, sample) pairs into `out`
/// ([`FeatureMatrix::project_nonzeros`]); false on dense X.
#[inline]
pub(super) fn project_nonzeros(
    x: &FeatureMatrix<'_>,
    proj: ProjRef<'_>,
    samples: &[u32],
    node_mask: Option<&[u64]>,
    gather: &mut Gather,
    out: &mut Vec<(f32, u32)>,
) -> bool {
    debug_assert!(proj.pooling().is_none());
    gather.terms.clear();
    proj.for_each(|j, w| gather.terms.push((j, w)));
    x.project_nonzeros(&gather.terms, samples, node_mask, &mut gather.row_pos, out)
}
