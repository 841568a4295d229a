//! Training data as the builder sees it: the features as an f32 matrix borrowed from the
//! caller when gathering from it is fast (Fortran order, or C order with narrow rows),
//! copied once column by column otherwise, with two-valued columns packed into bits; the
//! targets; and per-row weights. Sparse X is held as its nonzeros, column by column
//! ([`crate::sparse`]), and a projection gathers only the stored entries of a node's rows.
//!
//! Missing values: dense X may hold NaN (a missing entry), never ±infinity (sparse X holds
//! neither). NaN is stored as is, and every projected sum over a row with a NaN term is
//! NaN (`w * NaN` is NaN for every weight, zero included), which is how the split search
//! recognises a row whose projection is missing. [`FeatureMatrix::has_missing`] lets it
//! skip looking when X has none.
//!
//! Rooms: this file holds [`FeatureMatrix`] (how X is stored and how a node's rows are
//! projected); `gather.rs` copies of a subtree's rows (by column, or by row where the
//! candidates share features) and the gathers of batches of candidates; `stats.rs` the
//! statistics a projection family may ask for
//! ([`crate::projection::DataStats`]); `targets.rs` the targets ([`Targets`]) and the
//! checks of targets and sample weights.

mod gather;
mod stats;
mod targets;

pub use targets::{check_target_scale, check_weights, Targets};

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::prefetch::{prefetch, AHEAD};
use crate::projection::ProjectionBuf;
use crate::sparse::{Features, Layout, SparseMatrix, SparseStore};
use ndarray::ArrayView2;
use rayon::prelude::*;

/// X as the builder reads it.
#[derive(Clone, Debug)]
pub struct FeatureMatrix<'a> {
    /// Rows.
    pub n_samples: usize,
    /// Columns.
    pub n_features: usize,
    store: Store<'a>,
    /// Columns that look discrete (few distinct values in a sample of rows): a hint that
    /// the split search may try its exact histogram path before sorting.
    discrete: Vec<bool>,
    /// Whether some column is in `discrete`.
    any_discrete: bool,
    /// The largest |value| of X (NaN aside): bounds every projected sum.
    max_abs: f32,
    /// Whether some value of X is NaN (missing).
    has_missing: bool,
}

#[derive(Clone, Debug)]
enum Store<'a> {
    /// The caller's array, or a subtree's copy of some rows in row order
    /// ([`FeatureMatrix::gather_rows`]): element (i, j) is
    /// `data[i * row_stride + j * col_stride]`.
    Strided {
        data: Cow<'a, [f32]>,
        row_stride: usize,
        col_stride: usize,
    },
    /// A copy, one column at a time.
    Columns(Vec<Column>),
    /// Sparse X in CSC layout (the caller's arrays, or a copy transposed from CSR; or a
    /// subtree's copy of some rows): only the stored entries, f32 values and u32 row
    /// indices, and X by row once a subtree is copied ([`SparseStore`]).
    Sparse(SparseStore<'a>),
}

#[derive(Clone, Debug)]
enum Column {
    Dense(Vec<f32>),
    /// A column with at most two distinct values: row i holds `values[bit i]`. A 32nd of
    /// the memory of a float column, and a node's rows are gathered from a few cache lines.
    Binary {
        bits: Vec<u64>,
        values: [f32; 2],
    },
}

/// A column as [`FeatureMatrix::project_rows`] reads it: the value at a row offset.
trait At: Copy {
    fn at(self, r: usize) -> f32;
    /// Asks the cache for the value at row offset `r` (a hint).
    fn prefetch(self, r: usize);
}

impl At for &[f32] {
    #[inline]
    fn at(self, r: usize) -> f32 {
        self[r]
    }
    #[inline(always)]
    fn prefetch(self, r: usize) {
        prefetch(self, r);
    }
}

/// A column of bits and its two values.
#[derive(Clone, Copy)]
struct Bits<'d>(&'d [u64], [f32; 2]);

impl At for Bits<'_> {
    #[inline]
    fn at(self, r: usize) -> f32 {
        self.1[((self.0[r >> 6] >> (r & 63)) & 1) as usize]
    }
    #[inline(always)]
    fn prefetch(self, r: usize) {
        prefetch(self.0, r >> 6);
    }
}

/// Either kind of column.
#[derive(Clone, Copy)]
enum ColRef<'d> {
    Strided(&'d [f32]),
    Binary(Bits<'d>),
}

impl At for ColRef<'_> {
    #[inline]
    fn at(self, r: usize) -> f32 {
        match self {
            ColRef::Strided(c) => c.at(r),
            ColRef::Binary(b) => b.at(r),
        }
    }
    #[inline(always)]
    fn prefetch(self, r: usize) {
        match self {
            ColRef::Strided(c) => c.prefetch(r),
            ColRef::Binary(b) => b.prefetch(r),
        }
    }
}

/// The offsets of a node's rows in every column (`samples[k] * stride`), each with the
/// offset of the row [`AHEAD`] places later (the last row's near the end), which the
/// gathers ask the cache for while they read row k.
fn row_offsets(
    samples: &[u32],
    stride: usize,
) -> impl Iterator<Item = (usize, usize)> + Clone + '_ {
    let last = samples.last().map_or(0, |&s| s as usize * stride);
    samples.iter().enumerate().map(move |(k, &s)| {
        let ahead = samples
            .get(k + AHEAD)
            .map_or(last, |&a| a as usize * stride);
        (s as usize * stride, ahead)
    })
}

/// `out[k] += sum_t w_t * col_t[o_k]` over up to four `(col_t, w_t)` and the row offsets
/// `o_k` ([`row_offsets`]), added in term order in one pass over the rows.
#[inline]
fn add_terms<C: At>(
    cols: &[(C, f32)],
    offsets: impl Iterator<Item = (usize, usize)>,
    out: &mut [f32],
) {
    let rows = out.iter_mut().zip(offsets);
    let ask = |ahead: usize| cols.iter().for_each(|&(c, _)| c.prefetch(ahead));
    match *cols {
        [(a, wa)] => rows.for_each(|(o, (r, ahead))| {
            ask(ahead);
            *o += wa * a.at(r);
        }),
        [(a, wa), (b, wb)] => rows.for_each(|(o, (r, ahead))| {
            ask(ahead);
            *o = *o + wa * a.at(r) + wb * b.at(r);
        }),
        [(a, wa), (b, wb), (c, wc)] => rows.for_each(|(o, (r, ahead))| {
            ask(ahead);
            *o = *o + wa * a.at(r) + wb * b.at(r) + wc * c.at(r);
        }),
        [(a, wa), (b, wb), (c, wc), (d, wd)] => rows.for_each(|(o, (r, ahead))| {
            ask(ahead);
            *o = *o + wa * a.at(r) + wb * b.at(r) + wc * c.at(r) + wd * d.at(r);
        }),
        _ => unreachable!("one to four terms"),
    }
}

/// `apply(out[k], 0 + w_1 * col_1[o_k] + ...)` over up to four columns of bits (the sum
/// of [`add_terms`] on zeros, bit for bit), each row's sum looked up from the 2^t values
/// the sum can take.
fn from_bits(
    cols: &[(Bits<'_>, f32)],
    offsets: impl Iterator<Item = (usize, usize)>,
    out: &mut [f32],
    apply: impl Fn(&mut f32, f32),
) {
    let mut table = [0.0f32; 16];
    for (key, v) in table.iter_mut().enumerate().take(1 << cols.len()) {
        for (t, &(Bits(_, values), w)) in cols.iter().enumerate() {
            *v += w * values[(key >> t) & 1];
        }
    }
    let bit = |t: usize, r: usize| ((cols[t].0 .0[r >> 6] >> (r & 63)) & 1) as usize;
    let rows = out.iter_mut().zip(offsets.map(|(r, _)| r));
    match cols.len() {
        1 => rows.for_each(|(o, r)| apply(o, table[bit(0, r)])),
        2 => rows.for_each(|(o, r)| apply(o, table[bit(0, r) | bit(1, r) << 1])),
        3 => rows.for_each(|(o, r)| apply(o, table[bit(0, r) | bit(1, r) << 1 | bit(2, r) << 2])),
        4 => rows.for_each(|(o, r)| {
            apply(
                o,
                table[bit(0, r) | bit(1, r) << 1 | bit(2, r) << 2 | bit(3, r) << 3],
            );
        }),
        _ => unreachable!("one to four columns"),
    }
}

/// Row-major (C-order) X is borrowed up to this many features, when a row fits in one
/// cache line and gathering a column over a node's rows costs about what it costs in
/// column-major order; wider row-major X is copied once, column by column, which makes
/// every gather several times faster (a new cache line per row otherwise).
const BORROW_ROW_MAJOR_MAX_FEATURES: usize = 16;

/// Columns per task of [`columns`]: a task reads 64 bytes of each row.
const COPY_GROUP: usize = 16;

/// `x` copied column by column, in parallel (on the current rayon pool) over groups of 16
/// columns. Each group takes two passes over the rows: one finds the columns with at most
/// two distinct values (compared bit for bit), which are stored as bits; the other copies
/// or packs them.
fn columns(x: &ArrayView2<'_, f32>) -> Vec<Column> {
    let (n, p) = x.dim();
    let groups: Vec<usize> = (0..p).step_by(COPY_GROUP).collect();
    let per_group: Vec<Vec<Column>> = groups
        .par_iter()
        .map(|&j0| {
            let width = COPY_GROUP.min(p - j0);
            // per column: its first value, its other value once seen, whether it has more
            let mut seen: Vec<(u32, Option<u32>, bool)> = x
                .row(0)
                .iter()
                .skip(j0)
                .take(width)
                .map(|v| (v.to_bits(), None, false))
                .collect();
            for row in x.rows() {
                for (jj, s) in seen.iter_mut().enumerate() {
                    let v = row[j0 + jj].to_bits();
                    if v != s.0 {
                        match s.1 {
                            None => s.1 = Some(v),
                            Some(o) if o != v => s.2 = true,
                            Some(_) => {}
                        }
                    }
                }
            }
            let mut cols: Vec<Column> = seen
                .iter()
                .map(|&(first, other, many)| {
                    if many {
                        Column::Dense(vec![0.0; n])
                    } else {
                        let values = [
                            f32::from_bits(first),
                            f32::from_bits(other.unwrap_or(first)),
                        ];
                        Column::Binary {
                            bits: vec![0; n.div_ceil(64)],
                            values,
                        }
                    }
                })
                .collect();
            for (i, row) in x.rows().into_iter().enumerate() {
                for (jj, col) in cols.iter_mut().enumerate() {
                    let v = row[j0 + jj];
                    match col {
                        Column::Dense(d) => d[i] = v,
                        Column::Binary { bits, values } => {
                            bits[i >> 6] |=
                                u64::from(v.to_bits() != values[0].to_bits()) << (i & 63)
                        }
                    }
                }
            }
            cols
        })
        .collect();
    per_group.into_iter().flatten().collect()
}

/// A column with at most this many distinct values among the sampled rows is "discrete".
const DISCRETE_MAX_VALUES: usize = 32;
/// Rows sampled per column for the discreteness hint.
const DISCRETE_SAMPLE_ROWS: usize = 1024;

impl<'a> FeatureMatrix<'a> {
    /// X from either input: dense as [`FeatureMatrix::from_view`]; sparse held as its
    /// stored entries in CSC layout (borrowed when given as CSC, transposed once from CSR),
    /// never densified. Values were checked finite when the [`crate::sparse::SparseView`]
    /// was made.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty matrix or a NaN / infinite dense value.
    pub fn from_features(x: Features<'a>) -> Result<Self> {
        let x = match x {
            Features::Dense(x) => return Self::from_view(x),
            Features::Sparse(x) => x,
        };
        let (n, p) = x.dim();
        if n == 0 || p == 0 {
            return Err(Error::InvalidInput(format!(
                "X has shape ({n}, {p}); it needs at least one row and one column"
            )));
        }
        let mut x = FeatureMatrix {
            n_samples: n,
            n_features: p,
            max_abs: x.max_abs(),
            store: Store::Sparse(SparseStore::new(SparseMatrix::in_layout(x, Layout::Csc)?)),
            discrete: Vec::new(),
            any_discrete: false,
            has_missing: false, // (a sparse view holds finite values only)
        };
        x.find_discrete();
        Ok(x)
    }

    /// Borrows `x` when it is contiguous in Fortran order, or in C order with at most 16
    /// features; copies it column by column otherwise (two-valued columns as bits). Checks
    /// that no value is infinite (NaN marks a missing value and is kept).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty matrix or an infinite value.
    pub fn from_view(x: ArrayView2<'a, f32>) -> Result<Self> {
        let (n, p) = x.dim();
        if n == 0 || p == 0 {
            return Err(Error::InvalidInput(format!(
                "X has shape ({n}, {p}); it needs at least one row and one column"
            )));
        }
        let (max_abs, has_missing) = stats::max_abs(&x).map_err(|(row, col)| {
            Error::InvalidInput(format!(
                "X contains infinity (row {row}, column {col}); infinite values are not \
                 supported (a missing value is NaN)"
            ))
        })?;
        let store = match (x.to_slice(), x.reversed_axes().to_slice()) {
            (Some(c), _) if p <= BORROW_ROW_MAJOR_MAX_FEATURES => Store::Strided {
                data: Cow::Borrowed(c),
                row_stride: p,
                col_stride: 1,
            },
            (_, Some(f)) => Store::Strided {
                data: Cow::Borrowed(f),
                row_stride: 1,
                col_stride: n,
            },
            _ => Store::Columns(columns(&x)),
        };
        let mut x = FeatureMatrix {
            n_samples: n,
            n_features: p,
            store,
            discrete: Vec::new(),
            any_discrete: false,
            max_abs,
            has_missing,
        };
        x.find_discrete();
        Ok(x)
    }

    /// Whether column `j` had few distinct values in an evenly spaced sample of rows (a hint
    /// only: the split search checks every node's values before trusting it).
    #[inline]
    pub fn is_discrete(&self, j: usize) -> bool {
        self.discrete[j]
    }

    /// Whether some column [`Self::is_discrete`] (else no projection is all discrete).
    #[inline]
    pub fn any_discrete(&self) -> bool {
        self.any_discrete
    }

    /// Sets every column's discreteness hint (tests compare both split-search paths).
    pub fn set_discrete_hint(&mut self, on: bool) {
        self.discrete.iter_mut().for_each(|d| *d = on);
        self.any_discrete = on;
    }

    /// Every column's discreteness hint.
    fn find_discrete(&mut self) {
        self.discrete = (0..self.n_features)
            .map(|j| self.looks_discrete(j))
            .collect();
        self.any_discrete = self.discrete.contains(&true);
    }

    fn looks_discrete(&self, j: usize) -> bool {
        let step = self.n_samples.div_ceil(DISCRETE_SAMPLE_ROWS).max(1);
        let rows = (0..self.n_samples).step_by(step);
        match &self.store {
            Store::Sparse(x) => {
                // evenly spaced stored values, and the zero of the rows not stored: sampled
                // rows would see mostly zeros and call every sparse column discrete, sending
                // its projections to an exact histogram that gives up (the hint chooses a
                // path only; both grow the same tree)
                let (stored, vals) = x.view().slice(j);
                let step = vals.len().div_ceil(DISCRETE_SAMPLE_ROWS).max(1);
                let zero = (stored.len() < self.n_samples).then_some(0.0);
                few_distinct(zero.into_iter().chain(vals.iter().step_by(step).copied()))
            }
            _ => few_distinct(rows.map(|i| self.get(i, j))),
        }
    }

    /// Column `j`, read at offset `row * self.row_stride()`.
    #[inline]
    fn column(&self, j: usize) -> ColRef<'_> {
        match &self.store {
            Store::Strided {
                data, col_stride, ..
            } => ColRef::Strided(&data[j * col_stride..]),
            Store::Columns(cols) => match &cols[j] {
                Column::Dense(d) => ColRef::Strided(d),
                Column::Binary { bits, values } => ColRef::Binary(Bits(bits, *values)),
            },
            // every reader of a sparse store branches to its own path first
            Store::Sparse(_) => unreachable!("a sparse store has no dense columns"),
        }
    }

    /// The step between the offsets of consecutive rows in every column.
    #[inline]
    fn row_stride(&self) -> usize {
        match self.store {
            Store::Strided { row_stride, .. } => row_stride,
            Store::Columns(_) | Store::Sparse(_) => 1,
        }
    }

    /// `out[k] = sum_t w_t * x[samples[k], j_t]` over the `(j_t, w_t)` of `terms`, added in
    /// term order from 0 (the order prediction uses, so values match bit for bit). Up to
    /// four columns of one kind (floats or bits) are read per pass over the rows. Sparse X
    /// adds only its stored entries (`project_sparse`), which gives the same sums;
    /// `row_pos` is its scratch (left all `u32::MAX`; dense X does not touch it).
    pub fn project_rows(
        &self,
        terms: &[(usize, f32)],
        samples: &[u32],
        row_pos: &mut Vec<u32>,
        out: &mut Vec<f32>,
    ) {
        if let Store::Sparse(x) = &self.store {
            // one branch per projection, like the column kinds below; each path is its
            // own loop
            row_pos.resize(self.n_samples, u32::MAX);
            return project_sparse(x.view(), terms, samples, row_pos, out);
        }
        out.clear();
        out.resize(samples.len(), 0.0);
        let rs = self.row_stride();
        let offsets = row_offsets(samples, rs);
        let mut exact = None;
        for (k, chunk) in terms.chunks(4).enumerate() {
            let mut floats = [(&[][..], 0.0f32); 4];
            let mut all_floats = true;
            for (f, &(j, w)) in floats.iter_mut().zip(chunk) {
                match self.column(j) {
                    ColRef::Strided(c) => *f = (c, w),
                    ColRef::Binary(_) => {
                        all_floats = false;
                        break;
                    }
                }
            }
            if all_floats {
                add_terms(&floats[..chunk.len()], offsets.clone(), out);
            } else {
                let exact =
                    *exact.get_or_insert_with(|| terms.len() > 4 && self.sums_exactly(terms));
                self.add_chunk_with_bits(chunk, k == 0, exact, offsets.clone(), out);
            }
        }
    }

    /// One chunk of [`FeatureMatrix::project_rows`] with a column of bits: looked up from
    /// the sums it can take when it is the first chunk, or when the whole projection sums
    /// `exact`ly; else column by column as [`add_terms`] adds them.
    #[inline(never)]
    fn add_chunk_with_bits(
        &self,
        chunk: &[(usize, f32)],
        first: bool,
        exact: bool,
        offsets: impl Iterator<Item = (usize, usize)> + Clone,
        out: &mut [f32],
    ) {
        let mut bits = [(Bits(&[], [0.0; 2]), 0.0f32); 4];
        let mut nb = 0;
        for &(j, w) in chunk {
            if let ColRef::Binary(b) = self.column(j) {
                bits[nb] = (b, w);
                nb += 1;
            }
        }
        let bits = &bits[..nb];
        if nb < chunk.len() {
            // mixed kinds: one pass per term, the same sums in the same order
            for &(j, w) in chunk {
                add_terms(&[(self.column(j), w)], offsets.clone(), out);
            }
        } else if first {
            // every sum starts at 0 and takes at most 16 values: look it up
            from_bits(bits, offsets, out, |o, v| *o = v);
        } else if exact {
            // exact sums do not depend on the order of the additions
            from_bits(bits, offsets, out, |o, v| *o += v);
        } else {
            add_terms(bits, offsets, out);
        }
    }

    /// Whether every sum over `terms` is computed exactly in f32, whatever the order of the
    /// additions: all their columns are bits, every `w * value` is a whole number (e.g. 0/1
    /// pixels in a patch), and the magnitudes add up to less than 2^24. Such a projection
    /// may then be summed from lookups four terms at a time, with the values prediction gets.
    fn sums_exactly(&self, terms: &[(usize, f32)]) -> bool {
        let mut total = 0.0f64;
        for &(j, w) in terms {
            let ColRef::Binary(Bits(_, values)) = self.column(j) else {
                return false;
            };
            let mut most = 0.0f64;
            for v in values {
                let p = f64::from(w) * f64::from(v);
                if p.fract() != 0.0 || p != f64::from(w * v) {
                    return false;
                }
                most = most.max(p.abs());
            }
            total += most;
        }
        total < f64::from(1u32 << 24)
    }

    /// Value at (row, column).
    #[inline]
    pub fn get(&self, row: usize, col: usize) -> f32 {
        if let Store::Sparse(x) = &self.store {
            let (rows, vals) = x.view().slice(col);
            return match rows.binary_search(&(row as u32)) {
                Ok(k) => vals[k],
                Err(_) => 0.0,
            };
        }
        self.column(col).at(row * self.row_stride())
    }
}

/// Whether `values` hold at most [`DISCRETE_MAX_VALUES`] distinct bit patterns.
fn few_distinct(values: impl Iterator<Item = f32>) -> bool {
    let mut seen: Vec<u32> = Vec::with_capacity(DISCRETE_MAX_VALUES + 1);
    for v in values {
        let v = v.to_bits();
        if !seen.contains(&v) {
            if seen.len() == DISCRETE_MAX_VALUES {
                return false;
            }
            seen.push(v);
        }
    }
    true
}

/// [`FeatureMatrix::project_rows`] on sparse X (CSC), term by term: each term adds
/// `w * value` for the stored entries of its column that fall in the node's rows, so
/// every row's sum adds its nonzero terms in term order, from 0 — the dense sums, bit for
/// bit (adding ±0 to a sum that starts at +0 changes nothing). A term finds its entries by
/// the cheaper of two ways, as scikit-learn's sparse splitter chooses: a binary search of
/// the column per node row (m·log2(nnz) steps; deep nodes on long columns), or a scan of
/// the column through `row_pos`, each training row's position among the node's rows
/// (nnz lookups, plus filling and clearing the map once per call, 2m).
#[inline(never)]
fn project_sparse(
    x: crate::sparse::SparseView<'_>,
    terms: &[(usize, f32)],
    samples: &[u32],
    row_pos: &mut [u32],
    out: &mut Vec<f32>,
) {
    out.clear();
    out.resize(samples.len(), 0.0);
    let m = samples.len();
    let mut mapped = false;
    for &(j, w) in terms {
        let (rows, vals) = x.slice(j);
        let nnz = rows.len();
        if nnz == 0 {
            continue;
        }
        if (m as f64) * (nnz as f64).log2().max(1.0) < nnz as f64 {
            for (o, s) in out.iter_mut().zip(samples) {
                if let Ok(k) = rows.binary_search(s) {
                    *o += w * vals[k];
                }
            }
        } else {
            if !mapped {
                for (k, &s) in samples.iter().enumerate() {
                    row_pos[s as usize] = k as u32;
                }
                mapped = true;
            }
            for (&r, &v) in rows.iter().zip(vals) {
                let k = row_pos[r as usize];
                if k != u32::MAX {
                    out[k as usize] += w * v;
                }
            }
        }
    }
    if mapped {
        for &s in samples {
            row_pos[s as usize] = u32::MAX;
        }
    }
}

/// Calls `f(k_col)` for every stored entry of a column (its rows `col`, ascending) whose
/// row is one of a node's rows `node` (ascending). The cheapest of three ways, as
/// scikit-learn's sparse splitter chooses between the first two: a scan of the column
/// through `node_mask` when given (nnz lookups of a bit per training row, set for the
/// node's rows); for a node much smaller than the column, a galloping search of
/// the column for each node row, forward from the last match (about `m · log(nnz / m)`
/// steps); without `node_mask`, the same search of the node for each entry of a shorter
/// column.
#[inline]
fn for_each_node_entry(
    col: &[u32],
    node: &[u32],
    node_mask: Option<&[u64]>,
    mut f: impl FnMut(usize),
) {
    let m = node.len();
    match node_mask {
        Some(mask) if m * 8 > col.len() => {
            for (kc, &r) in col.iter().enumerate() {
                if (mask[r as usize >> 6] >> (r & 63)) & 1 != 0 {
                    f(kc);
                }
            }
        }
        None if m > col.len() => {
            let mut at = 0;
            for (kc, &r) in col.iter().enumerate() {
                at = gallop(node, at, r);
                if at == m {
                    return;
                }
                if node[at] == r {
                    f(kc);
                    at += 1;
                }
            }
        }
        _ => {
            let mut at = 0;
            for &r in node {
                at = gallop(col, at, r);
                if at == col.len() {
                    return;
                }
                if col[at] == r {
                    f(at);
                    at += 1;
                }
            }
        }
    }
}

/// The first position `i >= from` of ascending `s` with `s[i] >= x` (`s.len()` when none):
/// steps of 1, 2, 4, ... from `from`, then a binary search of the last step.
#[inline]
fn gallop(s: &[u32], from: usize, x: u32) -> usize {
    let (mut lo, mut hi, mut step) = (from, from, 1);
    // invariant: every s[..lo] < x
    while hi < s.len() && s[hi] < x {
        lo = hi + 1;
        hi = lo + step;
        step <<= 1;
    }
    let hi = hi.min(s.len());
    lo + s[lo..hi].partition_point(|&v| v < x)
}

impl FeatureMatrix<'_> {
    /// Whether X is sparse (held as its stored entries).
    #[inline]
    pub fn is_sparse(&self) -> bool {
        matches!(self.store, Store::Sparse(_))
    }

    /// Whether a subtree of `n` rows of sparse X would gain from a copy of its rows
    /// ([`SparseStore::copy_pays`]); false on dense X.
    pub(crate) fn sparse_copy_pays(&self, n: usize) -> bool {
        matches!(&self.store, Store::Sparse(x) if x.copy_pays(n))
    }

    /// On sparse X, the rows of `samples` (ascending) whose projection on `terms` is not 0,
    /// as (value, sample) pairs in no particular order, into `out`; every other row's value
    /// is +0.0. A value is the one [`Self::project_rows`] gives the row (its stored terms
    /// added in term order from 0, bit for bit), found from the stored entries alone: the
    /// cost follows the nonzeros, not the node's rows. `node_mask`, when given, marks the
    /// node's rows (bit `r % 64` of word `r / 64` set for a row `r` of `samples` only);
    /// `row_pos` is scratch as in `project_rows` (left all `u32::MAX`). Returns false,
    /// leaving `out` empty, on dense X.
    pub fn project_nonzeros(
        &self,
        terms: &[(usize, f32)],
        samples: &[u32],
        node_mask: Option<&[u64]>,
        row_pos: &mut Vec<u32>,
        out: &mut Vec<(f32, u32)>,
    ) -> bool {
        out.clear();
        let Store::Sparse(x) = &self.store else {
            return false;
        };
        debug_assert!(samples.windows(2).all(|p| p[0] < p[1]), "node rows ascend");
        let x = x.view();
        if let [(j, w)] = *terms {
            let (rows, vals) = x.slice(j);
            for_each_node_entry(rows, samples, node_mask, |kc| {
                // 0 + w·v, as the dense sum starts; ±0 products leave +0
                let v = 0.0 + w * vals[kc];
                if v != 0.0 {
                    out.push((v, rows[kc]));
                }
            });
            return true;
        }
        // several terms: each row's running sum in `out`, found through `row_pos`
        row_pos.resize(self.n_samples, u32::MAX);
        for &(j, w) in terms {
            let (rows, vals) = x.slice(j);
            for_each_node_entry(rows, samples, node_mask, |kc| {
                let r = rows[kc];
                let at = &mut row_pos[r as usize];
                if *at == u32::MAX {
                    *at = out.len() as u32;
                    out.push((0.0 + w * vals[kc], r));
                } else {
                    out[*at as usize].0 += w * vals[kc];
                }
            });
        }
        for &(_, r) in out.iter() {
            row_pos[r as usize] = u32::MAX;
        }
        // sums that cancelled to 0 are zeros like the rows no term touched
        out.retain(|&(v, _)| v != 0.0);
        true
    }
}

impl FeatureMatrix<'_> {
    /// On sparse X, asks the cache for where the columns `features` start and end, the
    /// first of two steps ([`Self::prefetch_columns`] is the second): the split search calls
    /// it a few candidates ahead, so that the second step finds the bounds cached instead of
    /// waiting for them. Nothing on dense X; results never depend on it.
    #[inline]
    pub fn prefetch_column_bounds(&self, features: &[u32]) {
        if let Store::Sparse(x) = &self.store {
            let x = x.view();
            for &j in features {
                x.prefetch_bounds(j as usize);
            }
        }
    }

    /// On sparse X, asks the cache for the first stored entries (rows and values) of the
    /// columns `features`: the split search calls it for a candidate a little ahead of the
    /// one it scores, so that that candidate's short columns are on their way when its
    /// turn comes. Nothing on dense X; results never depend on it.
    #[inline]
    pub fn prefetch_columns(&self, features: &[u32]) {
        let Store::Sparse(x) = &self.store else {
            return;
        };
        let x = x.view();
        for &j in features {
            let (rows, vals) = x.slice(j as usize);
            // the first 4 cache lines of each (64 entries); the hardware's own prefetch
            // follows a longer column
            for i in (0..rows.len().min(64)).step_by(16) {
                prefetch(rows, i);
                prefetch(vals, i);
            }
        }
    }
}

/// The most a sum of terms may reach in magnitude (bounded from the data) and still be
/// computed in f32 without overflow: half of f32::MAX leaves room for rounding.
const SUM_LIMIT: f64 = f32::MAX as f64 / 2.0;

impl FeatureMatrix<'_> {
    /// The largest |value| in X (NaN aside).
    pub fn max_abs(&self) -> f32 {
        self.max_abs
    }

    /// Whether X holds a missing value (NaN): when it does not, no projected value is NaN
    /// and the split search skips looking for them.
    #[inline]
    pub fn has_missing(&self) -> bool {
        self.has_missing
    }

    /// Halves the weights of candidate `c` (sparse projections only) as often as it takes
    /// for every sum over this data to stay within f32: on data with magnitudes near
    /// f32::MAX, a sum of two values overflows to infinity and the candidate could not
    /// split. Scaling by a power of two changes no order between rows (no rounding
    /// changes), and the stored weights are the scaled ones, so prediction computes the
    /// same sums. On data with ordinary magnitudes nothing changes.
    #[inline]
    pub fn keep_sums_finite(&self, cand: &mut ProjectionBuf, c: usize) {
        let (a, b) = (cand.ptr[c] as usize, cand.ptr[c + 1] as usize);
        let Some(w) = cand.w.get_mut(a..b) else {
            return; // patches: implicit unit weights
        };
        let l1: f64 = w.iter().map(|v| f64::from(v.abs())).sum();
        let bound = l1 * f64::from(self.max_abs);
        // one term is one rounded product: it overflows only beyond f32::MAX itself
        if bound <= SUM_LIMIT || (b - a == 1 && bound <= f64::from(f32::MAX)) {
            return;
        }
        let halvings = (bound / SUM_LIMIT).log2().ceil() as i32;
        let scale = f32::powi(2.0, -halvings);
        w.iter_mut().for_each(|v| *v *= scale);
    }
}

#[cfg(test)]
mod tests;
