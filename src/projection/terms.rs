//! What every family's projections are made of: (feature, weight) terms. A stored
//! projection is either explicit (feature indices and weights) or a compact descriptor its
//! family reads back as terms ([`CompactDescriptors`]); for a pooled projection its terms
//! are pieces of consecutive terms whose sums combine by max or min ([`Pooling`]). The trees,
//! the split search and prediction only ever see terms, through [`ProjRef`].
//!
//! Invariant: a [`ProjectionBuf`] holds `len()` projections whose entries are
//! `idx[ptr[i]..ptr[i+1]]` (and `w[...]` for explicit ones).

use std::fmt;

use crate::columns::TermMaps;
use crate::rng::IndexPool;

/// How a family with compact stored descriptors (patches, dictionary atoms) reads them.
pub trait CompactDescriptors: Sync + Send + fmt::Debug {
    /// Calls `f(feature, weight)` for every term of the stored descriptor `desc`, always
    /// in the same order (training sums the terms in that order, and so does prediction).
    fn for_each_term(&self, desc: &[u32], f: &mut dyn FnMut(usize, f32));
    /// Whether `desc` is a descriptor this family could have stored (model loading).
    fn is_valid(&self, desc: &[u32]) -> bool;
    /// How `desc` combines its terms: `None` (the default) for a linear projection, the
    /// sum of every term; else a pooled one ([`Pooling`]), whose terms
    /// ([`Self::for_each_term`]) are its pieces one after the other, `piece_len` each.
    fn pooling(&self, _desc: &[u32]) -> Option<Pooling> {
        None
    }
    /// For a pooled `desc` that is one filter slid along a line of features: its
    /// [`Sliding`] form, with the features of its first tap at position 0 of the line
    /// appended to `base`. A family returning `Some` guarantees that
    /// [`Sliding::for_each_term`] over that `base` gives exactly [`Self::for_each_term`]'s
    /// terms and [`Self::pooling`] is [`Sliding::pooling`] (the split search computes such
    /// filters in batches that share their pieces' sums, `tree/pooled_batch.rs`, and
    /// prediction reads the terms). `None` (the default) for any other descriptor.
    fn sliding(&self, _desc: &[u32], _base: &mut Vec<usize>) -> Option<Sliding> {
        None
    }
    /// The largest sum of |weights| over the terms of any descriptor this family can
    /// store, when known: a fit refuses data whose projected sums could then leave
    /// float32's range (stored descriptors carry no weights that could be scaled down).
    fn max_weight_l1(&self) -> Option<f64> {
        None
    }
}

/// How a pooled projection combines the sums of its pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// The largest piece.
    Max,
    /// The smallest piece.
    Min,
}

impl Pool {
    /// `acc` combined with the next piece's sum `v`: NaN when either is (a row missing a
    /// feature of any piece has a missing projection, as for a linear one; `f32::max`
    /// would drop the NaN), else the larger (smaller) one, the first of equals.
    #[inline(always)]
    pub fn combine(self, acc: f32, v: f32) -> f32 {
        if acc.is_nan() || v.is_nan() {
            f32::NAN
        } else {
            match self {
                Pool::Max if v > acc => v,
                Pool::Min if v < acc => v,
                _ => acc,
            }
        }
    }
}

/// A pooled projection: the [`Pool`] of several linear pieces, each the sum of
/// `piece_len` consecutive terms (a filter at one position of a window), so the value is
/// e.g. `max_p sum_k w_k x[j_pk]`. Training computes each piece with the linear machinery
/// and combines them with [`Pool::combine`] in piece order; prediction does the same with
/// [`PoolSum`], so both get the same f32 values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pooling {
    /// How pieces combine.
    pub pool: Pool,
    /// Terms per piece (at least 1).
    pub piece_len: usize,
}

/// A pooled projection made of one filter slid along a line of features (an axis of a
/// sample): piece `p` (of `positions`) puts tap `t` (of [`Self::taps`], weight
/// [`Self::weight`]`(t)`) at position `first + p + t` of the line, where it reads features
/// `base[i] + (first + p + t) * stride` in `base`'s order (`base`: the tap's features at
/// position 0). The filter has `cells.len()` cells of `cell` taps each, cell `i` weighted
/// `cells[i]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sliding {
    /// How the pieces combine.
    pub pool: Pool,
    /// The step between the features of consecutive positions.
    pub stride: usize,
    /// The position of the first piece's first tap.
    pub first: usize,
    /// Pieces (at least 1).
    pub positions: usize,
    /// Taps per cell (at least 1).
    pub cell: usize,
    /// The cells' weights.
    pub cells: &'static [f32],
}

impl Sliding {
    /// Taps of the filter.
    #[inline]
    pub fn taps(&self) -> usize {
        self.cell * self.cells.len()
    }

    /// The weight of tap `t`.
    #[inline]
    pub fn weight(&self, t: usize) -> f32 {
        self.cells[t / self.cell]
    }

    /// Calls `f(feature, weight)` for every term, piece by piece, tap by tap, and within a
    /// tap over `base` in order: the projection's terms ([`CompactDescriptors::for_each_term`]).
    #[inline]
    pub fn for_each_term(&self, base: &[usize], f: &mut dyn FnMut(usize, f32)) {
        for p in 0..self.positions {
            for t in 0..self.taps() {
                let (w, shift) = (self.weight(t), (self.first + p + t) * self.stride);
                for &j in base {
                    f(j + shift, w);
                }
            }
        }
    }

    /// How the pieces combine, `base.len()` features per tap.
    #[inline]
    pub fn pooling(&self, base_len: usize) -> Pooling {
        Pooling {
            pool: self.pool,
            piece_len: self.taps() * base_len,
        }
    }
}

/// Running value of a pooled projection fed its terms' products in order: each piece
/// summed from 0 term by term (as a linear projection is), then combined.
#[derive(Clone, Copy, Debug)]
pub struct PoolSum {
    pooling: Pooling,
    k: usize,
    s: f32,
    acc: Option<f32>,
}

impl PoolSum {
    /// Nothing added yet.
    #[inline]
    pub fn new(pooling: Pooling) -> Self {
        PoolSum {
            pooling,
            k: 0,
            s: 0.0,
            acc: None,
        }
    }

    /// Adds the next term's product `w * x`.
    #[inline(always)]
    pub fn add(&mut self, t: f32) {
        self.s += t;
        self.k += 1;
        if self.k == self.pooling.piece_len {
            let s = self.s;
            self.acc = Some(self.acc.map_or(s, |a| self.pooling.pool.combine(a, s)));
            self.s = 0.0;
            self.k = 0;
        }
    }

    /// The pooled value (0 for no piece, which a valid descriptor never has).
    #[inline]
    pub fn value(&self) -> f32 {
        self.acc.unwrap_or(0.0)
    }
}

/// A borrowed projection: where a node (or candidate) points in feature space.
#[derive(Clone, Copy, Debug)]
pub enum ProjRef<'a> {
    /// Explicit terms: feature `idx[k]` with weight `w[k]`.
    Sparse {
        /// Feature indices.
        idx: &'a [u32],
        /// Weights, parallel to `idx`.
        w: &'a [f32],
    },
    /// Explicit terms some of which are categorical: such a term's value is its column's
    /// level read through the node's map ([`crate::columns`]).
    Coded {
        /// Feature indices.
        idx: &'a [u32],
        /// Weights, parallel to `idx`.
        w: &'a [f32],
        /// The maps of the categorical terms.
        maps: TermMaps<'a>,
    },
    /// A compact descriptor, read by its family.
    Compact {
        /// The stored descriptor.
        desc: &'a [u32],
        /// The family that reads it.
        family: &'a dyn CompactDescriptors,
    },
}

impl<'a> ProjRef<'a> {
    /// Projection `desc` (with weights `w` for explicit ones) as stored by a family whose
    /// compact descriptors (if any) `family` reads.
    #[inline]
    pub fn new(desc: &'a [u32], w: &'a [f32], family: Option<&'a dyn CompactDescriptors>) -> Self {
        match family {
            Some(family) => ProjRef::Compact { desc, family },
            None => ProjRef::Sparse { idx: desc, w },
        }
    }

    /// Calls `f(feature, weight)` for every nonzero of the projection.
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(usize, f32)) {
        match *self {
            ProjRef::Sparse { idx, w } | ProjRef::Coded { idx, w, .. } => {
                for (&i, &w) in idx.iter().zip(w) {
                    f(i as usize, w)
                }
            }
            ProjRef::Compact { desc, family } => family.for_each_term(desc, &mut f),
        }
    }

    /// The maps of its categorical terms, `None` for a projection without any.
    #[inline]
    pub fn maps(&self) -> Option<TermMaps<'a>> {
        match *self {
            ProjRef::Coded { maps, .. } => Some(maps),
            _ => None,
        }
    }

    /// The projection with the maps `maps` for its categorical terms (`None`: none). An
    /// explicit projection only.
    #[inline]
    pub fn with_maps(self, maps: Option<TermMaps<'a>>) -> Self {
        match (self, maps) {
            (ProjRef::Sparse { idx, w }, Some(maps)) => ProjRef::Coded { idx, w, maps },
            (p, _) => p,
        }
    }

    /// How the projection combines its terms: `None` for a linear one (their sum).
    #[inline]
    pub fn pooling(&self) -> Option<Pooling> {
        match *self {
            ProjRef::Sparse { .. } | ProjRef::Coded { .. } => None,
            ProjRef::Compact { desc, family } => family.pooling(desc),
        }
    }

    /// The projected value of a row whose feature j is `get(j)`: the sum of the terms in
    /// [`Self::for_each`]'s order, or for a pooled projection the [`PoolSum`] of them.
    /// Every value prediction computes is this one (or the same sums in the same order).
    #[inline]
    pub fn value_by(&self, get: impl Fn(usize) -> f32) -> f32 {
        if let ProjRef::Coded { idx, w, maps } = *self {
            return maps.value_by(idx, w, get);
        }
        match self.pooling() {
            None => {
                let mut s = 0.0f32;
                self.for_each(|j, w| s += w * get(j));
                s
            }
            Some(pooling) => {
                let mut acc = PoolSum::new(pooling);
                self.for_each(|j, w| acc.add(w * get(j)));
                acc.value()
            }
        }
    }

    /// The projected value of one row (`row[j]` is feature j).
    #[inline]
    pub fn dot(&self, row: &[f32]) -> f32 {
        match *self {
            ProjRef::Sparse { idx, w } => {
                let mut s = 0.0f32;
                for (&i, &w) in idx.iter().zip(w) {
                    s += w * row[i as usize];
                }
                s
            }
            ProjRef::Coded { .. } | ProjRef::Compact { .. } => self.value_by(|i| row[i]),
        }
    }
}

/// A list of projections in CSR form; reused from node to node.
#[derive(Clone, Debug, Default)]
pub struct ProjectionBuf {
    /// Offsets: projection `i` is `idx[ptr[i]..ptr[i + 1]]`.
    pub ptr: Vec<u32>,
    /// Feature indices, or the words of compact descriptors.
    pub idx: Vec<u32>,
    /// Weights, parallel to `idx`; empty for compact descriptors.
    pub w: Vec<f32>,
}

impl ProjectionBuf {
    /// Removes every projection.
    pub fn clear(&mut self) {
        self.ptr.clear();
        self.ptr.push(0);
        self.idx.clear();
        self.w.clear();
    }
    /// The number of projections.
    pub fn len(&self) -> usize {
        self.ptr.len().saturating_sub(1)
    }
    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Keeps, in each explicit projection of more than one term, the terms whose feature
    /// `keep` accepts, and of a projection left with none its first term; projections of
    /// one term stay as they are. The order of projections and of their kept terms stays.
    pub fn retain_terms(&mut self, keep: impl Fn(u32) -> bool) {
        let mut out = 0usize;
        for i in 0..self.len() {
            let (a, b) = (self.ptr[i] as usize, self.ptr[i + 1] as usize);
            let start = out;
            for k in a..b {
                if b - a == 1 || keep(self.idx[k]) {
                    self.idx[out] = self.idx[k];
                    self.w[out] = self.w[k];
                    out += 1;
                }
            }
            if out == start {
                self.idx[out] = self.idx[a];
                self.w[out] = self.w[a];
                out += 1;
            }
            self.ptr[i] = start as u32;
        }
        let n = self.len();
        self.ptr[n] = out as u32;
        self.idx.truncate(out);
        self.w.truncate(out);
    }
    /// The entries of projection `i` in `idx` (its features, or its compact descriptor).
    pub fn entries(&self, i: usize) -> &[u32] {
        &self.idx[self.ptr[i] as usize..self.ptr[i + 1] as usize]
    }
    /// Closes the projection whose entries were pushed (onto `idx`, and `w`) since the
    /// last call.
    pub fn close(&mut self) {
        self.ptr.push(self.idx.len() as u32);
    }
    /// Appends one explicit projection: features `idx` with weights `w`; an empty
    /// projection is dropped.
    pub fn push(&mut self, idx: &[u32], w: &[f32]) {
        debug_assert_eq!(idx.len(), w.len());
        if !idx.is_empty() {
            self.idx.extend_from_slice(idx);
            self.w.extend_from_slice(w);
            self.close();
        }
    }
    /// Whether the buffer holds well-formed explicit projections over `n_features`
    /// features: offsets from 0 rising to `idx.len()`, a weight per index, indices in range.
    pub(crate) fn is_explicit_within(&self, n_features: usize) -> bool {
        self.ptr.first() == Some(&0)
            && self.ptr.windows(2).all(|p| p[0] <= p[1])
            && self.ptr.last().map(|&e| e as usize) == Some(self.idx.len())
            && self.w.len() == self.idx.len()
            && self.idx.iter().all(|&j| (j as usize) < n_features)
    }
    /// Projection `i`, read by the family's descriptors (if it stores compact ones).
    #[inline]
    pub fn get<'a>(&'a self, i: usize, family: Option<&'a dyn CompactDescriptors>) -> ProjRef<'a> {
        let (a, b) = (self.ptr[i] as usize, self.ptr[i + 1] as usize);
        let w = if family.is_some() {
            &[][..]
        } else {
            &self.w[a..b]
        };
        ProjRef::new(&self.idx[a..b], w, family)
    }
}

/// Reusable memory of a sampler (one per worker).
#[derive(Debug, Default)]
pub struct SamplerScratch {
    pub(crate) pool: IndexPool,
    pub(crate) chosen: Vec<u32>,
    pub(crate) positions: Vec<u64>,
}
