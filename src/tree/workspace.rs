//! The memory one worker reuses across the nodes and trees it grows ([`Workspace`]), and
//! the projection of a node's rows ([`project`]) that the split search and the partition
//! share.
//!
//! Invariant: nothing in a workspace outlives the node (or, for the node table, the tree)
//! that filled it; every buffer is cleared or overwritten before it is read, so a
//! workspace carries no state from one tree to the next.

use super::bins::Bins;
use super::criterion::Criterion;
use super::pooled_batch::PooledBatch;
use super::repeats::Repeats;
use super::term_batch::TermBatch;
use crate::alloc::reserve_huge;
use crate::data::FeatureMatrix;
use crate::projection::{ProjRef, ProjectionBuf, SamplerScratch};
use crate::tree::RowWeights;
use std::mem::MaybeUninit;

/// Per-worker memory reused across nodes and trees.
#[derive(Default)]
pub(crate) struct Workspace {
    /// The in-bag rows; a node owns `samples[start..end]`.
    pub(super) samples: Vec<u32>,
    pub(super) pairs: Vec<(f32, u32)>,
    /// The radix sort's scratch ([`super::scan::sort_pairs`], which swaps it with `pairs`).
    /// A partition sets its right rows aside in one of the two ([`partition_room`]): no
    /// sort runs while a node is partitioned.
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
    /// The level maps of the chosen projections' categorical terms, and each node's range
    /// in them.
    pub(super) arena_maps: crate::columns::LevelMaps,
    pub(super) node_maps: Vec<(u32, u32)>,
    pub(super) node_values: Vec<f64>,
    /// Scratch of [`project`].
    pub(super) terms: Gather,
    /// The node's pooled candidates, computed together.
    pub(super) pooled: PooledBatch,
    /// The node's explicit candidates, projected together.
    pub(super) term_batch: TermBatch,
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
    /// Criterion statistics of a screened node's screen rows
    /// ([`crate::params::Growth::candidate_samples`]).
    pub(super) screen_stats: Vec<f64>,
    /// A screened node's rows in their order before the screen was drawn.
    pub(super) screen_order: Vec<u32>,
    /// The tags of a node's rows when the tree packs them ([`super::scan::Packing`]), and
    /// the row range they are for.
    pub(super) packed: Vec<u32>,
    pub(super) packed_for: Option<(usize, usize)>,
    /// The candidates of the node's draw that repeat an earlier one ([`Repeats`]).
    pub(super) repeats: Repeats,
    /// The categorical part's memory, and the level maps of the best candidate
    /// ([`super::categorical`]).
    pub(super) cat: CatScratch,
}

impl Workspace {
    /// Room for a node of `n` rows in the per-row buffers, large ones backed by huge pages
    /// ([`reserve_huge`]: the sort scatters into them, the scans read through them).
    pub(super) fn reserve_rows(&mut self, n: usize) {
        reserve_huge(&mut self.samples, n);
        reserve_huge(&mut self.pairs, n);
        reserve_huge(&mut self.sort_buf, n);
        reserve_huge(&mut self.vals, n);
        reserve_huge(&mut self.packed, n);
    }

    /// Room for criterion statistics of `stat_len` (the children's and the node's) and
    /// for a node of `n_rows` rows.
    pub(super) fn size_for(&mut self, stat_len: usize, n_rows: usize) {
        self.left.resize(stat_len, 0.0);
        self.right.resize(stat_len, 0.0);
        self.node_sums.resize(stat_len, 0.0);
        self.reserve_rows(n_rows);
    }

    /// The node's rows `samples[start..end]` projected on `proj`, into `vals` ([`project`]).
    pub(super) fn project_node(
        &mut self,
        x: &FeatureMatrix<'_>,
        proj: ProjRef<'_>,
        start: usize,
        end: usize,
    ) {
        project(
            x,
            proj,
            &self.samples[start..end],
            &mut self.terms,
            &mut self.vals,
        );
    }
}

/// Memory [`project`] reuses: a projection's terms, and the row map sparse X gathers
/// through ([`FeatureMatrix::project_rows`]).
#[derive(Default)]
pub(crate) struct Gather {
    terms: Vec<(usize, f32)>,
    row_pos: Vec<u32>,
    /// One piece's values of a pooled projection.
    piece: Vec<f32>,
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
    if proj.maps().is_some() {
        // categorical terms, read through the node's level maps: as prediction reads them
        out.clear();
        out.extend(
            samples
                .iter()
                .map(|&s| proj.value_by(|j| x.get(s as usize, j))),
        );
        return;
    }
    gather.terms.clear();
    proj.for_each(|j, w| gather.terms.push((j, w)));
    let Some(pooling) = proj.pooling() else {
        x.project_rows(&gather.terms, samples, &mut gather.row_pos, out);
        return;
    };
    // pooled: each piece through the linear path, combined in piece order (the values
    // `ProjRef::value_by` computes)
    for (k, piece) in gather.terms.chunks(pooling.piece_len).enumerate() {
        if k == 0 {
            x.project_rows(piece, samples, &mut gather.row_pos, out);
            continue;
        }
        x.project_rows(piece, samples, &mut gather.row_pos, &mut gather.piece);
        for (o, &v) in out.iter_mut().zip(&gather.piece) {
            *o = pooling.pool.combine(*o, v);
        }
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

/// A node's criterion statistics from its `rows` with `weights`, into `sums`; returns the
/// node's weight.
pub(super) fn node_stats<C: Criterion>(
    crit: &C,
    sums: &mut [f64],
    rows: &[u32],
    weights: RowWeights<'_>,
) -> f64 {
    sums.fill(0.0);
    let mut total = 0.0;
    for &s in rows {
        let w = weights[s as usize];
        total += w;
        crit.add_sample(sums, s as usize, w);
    }
    crit.finish_node(sums, rows, weights);
    total
}

/// Moves the rows of `samples` whose projected value (`vals`, parallel to it) `goes_left`
/// to the front and returns their count; `scratch` (a sort buffer, [`partition_room`])
/// holds the right rows meanwhile ([`RightRows`]). Stable: rows keep their
/// (initially ascending) order in both children, so the gathers of every later node walk
/// X in address order, and a node's rows stay ascending.
pub(super) fn stable_partition(
    samples: &mut [u32],
    vals: &[f32],
    scratch: &mut Vec<(f32, u32)>,
    goes_left: impl Fn(f32) -> bool,
) -> usize {
    partition_rows(samples, scratch, |k, _| goes_left(vals[k]))
}

/// [`stable_partition`] by a rule on each row's place `k` in `samples` and the row `s`
/// itself, asked once a row in order.
pub(super) fn partition_rows(
    samples: &mut [u32],
    scratch: &mut Vec<(f32, u32)>,
    mut goes_left: impl FnMut(usize, u32) -> bool,
) -> usize {
    let mut right = RightRows::in_buffer(scratch, samples.len());
    let mut i = 0;
    for k in 0..samples.len() {
        let s = samples[k];
        if goes_left(k, s) {
            samples[i] = s;
            i += 1;
        } else {
            right.push(s);
        }
    }
    right.copy_to(&mut samples[i..]);
    i
}

/// Of the workspace's two sort buffers (`pairs` and `sort_buf`, which a radix sort swaps),
/// the one at the lower address: the buffer a partition sets its right rows aside in
/// ([`RightRows`]). The exact search's sorts fill both anyway; always the same one, so
/// that the histogram search, which sorts little, touches no more of them than the rows
/// set aside. Both hold nothing a partition's caller reads.
pub(super) fn partition_room<'a>(
    pairs: &'a mut Vec<(f32, u32)>,
    sort_buf: &'a mut Vec<(f32, u32)>,
) -> &'a mut Vec<(f32, u32)> {
    if pairs.as_ptr() < sort_buf.as_ptr() {
        pairs
    } else {
        sort_buf
    }
}

/// A partition's right rows, four bytes each, set aside in the free capacity of a sort
/// buffer ([`partition_room`]).
struct RightRows<'a> {
    room: &'a mut [MaybeUninit<u32>],
    len: usize,
}

impl<'a> RightRows<'a> {
    /// Room for `n` rows in `buf`, emptied (every user of the sort buffer fills what it
    /// reads first).
    fn in_buffer(buf: &'a mut Vec<(f32, u32)>, n: usize) -> Self {
        const _: () = assert!(std::mem::size_of::<(f32, u32)>() == 2 * std::mem::size_of::<u32>());
        buf.clear();
        buf.reserve(n.div_ceil(2));
        let spare = buf.spare_capacity_mut();
        // SAFETY: a (f32, u32) pair is two 4-byte fields without padding (its size,
        // asserted above, is that of two u32) and aligned as a u32, so the vector's spare
        // capacity, borrowed mutably for 'a, is 2 * len places of a u32, uninitialised as
        // MaybeUninit allows; the vector's length stays 0, so it reads none of them.
        let room = unsafe {
            std::slice::from_raw_parts_mut(
                spare.as_mut_ptr().cast::<MaybeUninit<u32>>(),
                2 * spare.len(),
            )
        };
        RightRows { room, len: 0 }
    }

    /// Sets row `s` aside (at most `n` of them).
    #[inline]
    fn push(&mut self, s: u32) {
        self.room[self.len].write(s);
        self.len += 1;
    }

    /// The rows set aside, in order, into `out` (as many places).
    fn copy_to(&self, out: &mut [u32]) {
        assert_eq!(out.len(), self.len, "as many places as rows set aside");
        for (o, r) in out.iter_mut().zip(&self.room[..self.len]) {
            // SAFETY: `push` wrote every place below `len`
            *o = unsafe { r.assume_init() };
        }
    }
}

/// Memory the categorical part of the split search ([`super::categorical`]) reuses from
/// node to node.
#[derive(Default)]
pub(crate) struct CatScratch {
    /// The maps of the candidate being scored (empty for one without categorical terms).
    pub(super) cur: crate::columns::LevelMaps,
    /// The maps of the best candidate so far at this node.
    pub(super) best: crate::columns::LevelMaps,
    /// (level, sample) of the node's rows with a present level, sorted.
    pub(super) pairs: Vec<(u32, u32)>,
    pub(super) rows: Vec<u32>,
    pub(super) sums: Vec<f64>,
    pub(super) rare_sums: Vec<f64>,
    pub(super) rare_rows: Vec<u32>,
    /// Each present level: (level, weight, whether pooled as rare).
    pub(super) groups: Vec<(u32, f64, bool)>,
    /// Each present level's statistic (a row of `width`).
    pub(super) stats: Vec<f64>,
    pub(super) value: Vec<f64>,
    pub(super) scores: Vec<f64>,
    pub(super) numeric: Vec<f32>,
    /// The reliability of the levels last scored.
    pub(super) reliability: f64,
    /// A column's values at a node's rows, and which (column, node range) they are.
    pub(super) col: Vec<f32>,
    pub(super) col_of: Option<(usize, usize, usize)>,
    /// Counts per level (counting sort), and a single term's values by level.
    pub(super) counts: Vec<u32>,
    /// Per level, its rows' weight and criterion sums (level statistics by row).
    pub(super) level_w: Vec<f64>,
    pub(super) level_sums: Vec<f64>,
    pub(super) dense: Vec<f32>,
    /// A single term's levels as bins of its projected values: whether they are ready for
    /// the candidate being scored, each level's bin, the bins' values, and scratch.
    pub(super) level_bins: bool,
    pub(super) level_bin: Vec<u32>,
    pub(super) bin_values: Vec<f32>,
    pub(super) order: Vec<(f32, u32)>,
    /// The node's level scores per column so far: (column, range in `cache_levels` and
    /// `cache_scores`, the levels' reliability); emptied for each node
    /// ([`CatScratch::enter_node`]).
    pub(super) cache: Vec<(u32, u32, u32, f64)>,
    pub(super) cache_levels: Vec<u32>,
    pub(super) cache_scores: Vec<f64>,
}

impl CatScratch {
    /// Called when a node's split search starts: no best maps, no scores of its levels.
    #[inline]
    pub(super) fn enter_node(&mut self) {
        self.best.clear();
        self.col_of = None;
        self.cache.clear();
        self.cache_levels.clear();
        self.cache_scores.clear();
    }

    /// Called before each candidate: no maps yet.
    #[inline]
    pub(super) fn start_candidate(&mut self) {
        self.cur.clear();
        self.new_values();
    }

    /// Called as a candidate's values part starts: no level bins yet.
    #[inline]
    pub(super) fn new_values(&mut self) {
        self.level_bins = false;
    }

    /// The candidate just scored became the best: its maps (maybe none) are kept.
    #[inline]
    pub(super) fn keep_as_best(&mut self) {
        std::mem::swap(&mut self.cur, &mut self.best);
    }
}
