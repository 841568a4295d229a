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

use crate::error::{Error, Result};
use crate::projection::{DataNeeds, DataStats, ProjectionBuf};
use crate::sparse::{CowSparse, Features, Layout, SparseMatrix};
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
    /// The largest |value| of X (NaN aside): bounds every projected sum.
    max_abs: f32,
    /// Whether some value of X is NaN (missing).
    has_missing: bool,
}

#[derive(Clone, Debug)]
enum Store<'a> {
    /// The caller's array: element (i, j) is `data[i * row_stride + j * col_stride]`.
    Borrowed {
        data: &'a [f32],
        row_stride: usize,
        col_stride: usize,
    },
    /// A copy, one column at a time.
    Columns(Vec<Column>),
    /// Sparse X in CSC layout (the caller's arrays, or a copy transposed from CSR): only
    /// the stored entries, f32 values and u32 row indices.
    Sparse(CowSparse<'a>),
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
}

impl At for &[f32] {
    #[inline]
    fn at(self, r: usize) -> f32 {
        self[r]
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
}

/// `out[k] += sum_t w_t * col_t[o_k]` over up to four `(col_t, w_t)` and the row offsets
/// `o_k`, added in term order in one pass over the rows.
#[inline]
fn add_terms<C: At>(cols: &[(C, f32)], offsets: impl Iterator<Item = usize>, out: &mut [f32]) {
    let rows = out.iter_mut().zip(offsets);
    match *cols {
        [(a, wa)] => rows.for_each(|(o, r)| *o += wa * a.at(r)),
        [(a, wa), (b, wb)] => rows.for_each(|(o, r)| *o = *o + wa * a.at(r) + wb * b.at(r)),
        [(a, wa), (b, wb), (c, wc)] => rows.for_each(|(o, r)| {
            *o = *o + wa * a.at(r) + wb * b.at(r) + wc * c.at(r);
        }),
        [(a, wa), (b, wb), (c, wc), (d, wd)] => rows.for_each(|(o, r)| {
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
    offsets: impl Iterator<Item = usize>,
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
    let rows = out.iter_mut().zip(offsets);
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

/// The largest |value| of `x` (NaN aside) and whether some value is NaN, or the position
/// (row, column) of its first infinite value.
fn max_abs(x: &ArrayView2<'_, f32>) -> std::result::Result<(f32, bool), (usize, usize)> {
    // f32::max ignores NaN; a NaN's |v| is not infinite, and NaN != NaN marks it
    let step = |(m, ok, nan): (f32, bool, bool), v: &f32| {
        (
            m.max(v.abs()),
            ok & (v.abs() != f32::INFINITY),
            nan | v.is_nan(),
        )
    };
    let (largest, finite, nan) = match x.as_slice_memory_order() {
        // folds without an early exit vectorise
        Some(s) => s
            .chunks(4096)
            .fold((0.0f32, true, false), |acc, c| c.iter().fold(acc, step)),
        None => x.iter().fold((0.0f32, true, false), step),
    };
    if finite {
        Ok((largest, nan))
    } else {
        Err(first_infinite(x).unwrap_or((0, 0)))
    }
}

/// Position (row, column) of the first infinite value of `x`, if any.
fn first_infinite(x: &ArrayView2<'_, f32>) -> Option<(usize, usize)> {
    let (n, p) = x.dim();
    let inf = |v: &f32| v.is_infinite();
    if let Some(c) = x.to_slice() {
        c.iter().position(inf).map(|k| (k / p, k % p))
    } else if let Some(f) = x.t().to_slice() {
        f.iter().position(inf).map(|k| (k % n, k / n))
    } else {
        x.indexed_iter().find(|(_, v)| inf(v)).map(|(ij, _)| ij)
    }
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
            store: Store::Sparse(SparseMatrix::in_layout(x, Layout::Csc)),
            discrete: Vec::new(),
            has_missing: false, // (a sparse view holds finite values only)
        };
        x.discrete = (0..p).map(|j| x.looks_discrete(j)).collect();
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
        let (max_abs, has_missing) = max_abs(&x).map_err(|(row, col)| {
            Error::InvalidInput(format!(
                "X contains infinity (row {row}, column {col}); infinite values are not \
                 supported (a missing value is NaN)"
            ))
        })?;
        let store = match (x.to_slice(), x.reversed_axes().to_slice()) {
            (Some(c), _) if p <= BORROW_ROW_MAJOR_MAX_FEATURES => Store::Borrowed {
                data: c,
                row_stride: p,
                col_stride: 1,
            },
            (_, Some(f)) => Store::Borrowed {
                data: f,
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
            max_abs,
            has_missing,
        };
        x.discrete = (0..p).map(|j| x.looks_discrete(j)).collect();
        Ok(x)
    }

    /// Whether column `j` had few distinct values in an evenly spaced sample of rows (a hint
    /// only: the split search checks every node's values before trusting it).
    #[inline]
    pub fn is_discrete(&self, j: usize) -> bool {
        self.discrete[j]
    }

    /// Sets every column's discreteness hint (tests compare both split-search paths).
    pub fn set_discrete_hint(&mut self, on: bool) {
        self.discrete.iter_mut().for_each(|d| *d = on);
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
            Store::Borrowed {
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
            Store::Borrowed { row_stride, .. } => row_stride,
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
        let offsets = samples.iter().map(|&s| s as usize * rs);
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
        offsets: impl Iterator<Item = usize> + Clone,
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

/// What the trees predict.
#[derive(Clone, Debug)]
pub enum Targets {
    /// Class codes `0..n_classes`.
    Classes(Vec<u32>),
    /// Real values.
    Values(Vec<f64>),
    /// Class codes of `k` outputs, row-major (row `s`, output `o` at `s * k + o`), each
    /// already offset into the concatenation of the outputs' class blocks: the entry is
    /// the row's slot in a node's statistics (`offset[o] + class`).
    MultiClasses {
        /// Slots, n × k row-major.
        slots: Vec<u32>,
        /// Outputs.
        k: usize,
    },
    /// Real values of `k` outputs, row-major.
    MultiValues {
        /// Values, n × k row-major.
        y: Vec<f64>,
        /// Outputs.
        k: usize,
    },
}

impl Targets {
    /// The number of distinct classes among the targets (1 for regression).
    pub fn n_present(&self) -> usize {
        match self {
            Targets::Values(_) | Targets::MultiValues { .. } => 1,
            Targets::Classes(c) | Targets::MultiClasses { slots: c, .. } => {
                let mut seen = std::collections::HashSet::new();
                c.iter().filter(|&&k| seen.insert(k)).count()
            }
        }
    }

    /// Converts the targets of `task` given as floats: `y` holds n values, or n × k
    /// row-major for the multi-output tasks; class codes must be whole numbers in
    /// `0..n_classes` of their output.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a NaN/inf target or a class code out of range.
    pub fn for_task(y: &[f64], task: &crate::params::Task) -> Result<Self> {
        use crate::params::Task;
        match task {
            Task::Classification { n_classes } => Self::new(y, Some(*n_classes)),
            Task::Regression => Self::new(y, None),
            Task::MultiRegression { n_outputs } => match Self::new(y, None)? {
                Targets::Values(y) => Ok(Targets::MultiValues { y, k: *n_outputs }),
                _ => Err(Error::Internal("regression targets".into())),
            },
            Task::MultiClassification { n_classes } => {
                let k = n_classes.len();
                let mut offsets = Vec::with_capacity(k);
                let mut total = 0usize;
                for &c in n_classes {
                    offsets.push(total);
                    total = total.saturating_add(c);
                }
                if total >= u32::MAX as usize {
                    return Err(Error::InvalidInput("too many classes".into()));
                }
                let slots = y
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        let o = i % k;
                        if v >= 0.0 && v < n_classes[o] as f64 && v.fract() == 0.0 {
                            Ok((offsets[o] + v as usize) as u32)
                        } else if !v.is_finite() {
                            Err(Error::InvalidInput(format!(
                                "y contains NaN or infinity at row {}, output {o}",
                                i / k
                            )))
                        } else {
                            Err(Error::InvalidInput(format!(
                                "class code {v} of output {o} is not in 0..{}",
                                n_classes[o]
                            )))
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Targets::MultiClasses { slots, k })
            }
        }
    }

    /// Converts targets given as floats; class codes must be whole numbers in `0..n_classes`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a NaN/inf target or a class code out of range.
    pub fn new(y: &[f64], n_classes: Option<usize>) -> Result<Self> {
        if let Some(pos) = y.iter().position(|v| !v.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "y contains NaN or infinity at position {pos}"
            )));
        }
        match n_classes {
            None => Ok(Targets::Values(y.to_vec())),
            Some(k) => y
                .iter()
                .map(|&v| {
                    if v >= 0.0 && v < k as f64 && v.fract() == 0.0 {
                        Ok(v as u32)
                    } else {
                        Err(Error::InvalidInput(format!(
                            "class code {v} is not in 0..{k}"
                        )))
                    }
                })
                .collect::<Result<Vec<_>>>()
                .map(Targets::Classes),
        }
    }
}

/// The range kept for (total sample weight) × (rows), the most weight a tree may give its
/// root: the criteria square weight sums (gini) and add weight × y² (squared error) in
/// f64, so weights beyond it are rescaled by a power of two, which changes no split and no
/// leaf value (every weight sum scales exactly), only the stored node weights. Weights
/// people use are far inside it, and kept bit for bit.
const WEIGHT_SCALE_RANGE: (f64, f64) = (1e-100, 1e100);

/// Checks optional sample weights against the number of rows, rescaled (by a power of
/// two) when their total is so large or small that the criteria's sums would overflow or
/// underflow.
///
/// # Errors
/// [`Error::InvalidInput`] for a length mismatch, a negative or non-finite weight, or
/// weights that are all zero.
pub fn check_weights(w: Option<&[f64]>, n: usize) -> Result<Vec<f64>> {
    match w {
        None => Ok(vec![1.0; n]),
        Some(w) => {
            if w.len() != n {
                return Err(Error::InvalidInput(format!(
                    "sample_weight has {} entries but X has {n} rows",
                    w.len()
                )));
            }
            if w.iter().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(Error::InvalidInput(
                    "sample_weight must be finite and non-negative".into(),
                ));
            }
            if w.iter().all(|&v| v == 0.0) {
                return Err(Error::InvalidInput(
                    "sample_weight is zero for every row".into(),
                ));
            }
            // log2(total · n), summed relative to the largest weight so that neither
            // weights near f64::MAX nor subnormal ones overflow or vanish
            let largest = w.iter().fold(0.0f64, |m, &v| m.max(v));
            let relative: f64 = w.iter().map(|v| v / largest).sum();
            let log_total = largest.log2() + relative.log2() + (n as f64).log2();
            let (lo, hi) = WEIGHT_SCALE_RANGE;
            if (lo.log2()..=hi.log2()).contains(&log_total) {
                return Ok(w.to_vec());
            }
            // total·n near 1 (weights near 1/n); exact, since a power of two (applied in
            // two steps: 2^±1100 is not an f64)
            let k = -(log_total.round() as i32);
            let (half, rest) = (f64::powi(2.0, k / 2), f64::powi(2.0, k - k / 2));
            Ok(w.iter().map(|v| v * half * rest).collect())
        }
    }
}

/// Checks that regression targets keep the squared-error sums finite with these weights:
/// every weighted sum of y² a tree forms is at most (total weight) × (rows) × max y².
///
/// # Errors
/// [`Error::InvalidInput`] naming the largest target when those sums would overflow f64.
pub fn check_target_scale(y: &Targets, weights: &[f64]) -> Result<()> {
    let (Targets::Values(y) | Targets::MultiValues { y, .. }) = y else {
        return Ok(());
    };
    let largest = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let total: f64 = weights.iter().sum();
    // a margin of 16 for the criterion's own sums of such terms
    if total * y.len() as f64 * largest * largest < f64::MAX / 16.0 {
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "y has values up to {largest:e} in magnitude: the squared-error sums over {} rows \
         overflow float64; divide y by a constant (predictions scale the same way)",
        y.len()
    )))
}

impl FeatureMatrix<'_> {
    /// The statistics of this data that a projection family `needs` (computed once per fit;
    /// see [`crate::projection::DataStats`]).
    pub fn stats(&self, needs: DataNeeds) -> DataStats {
        DataStats {
            n_features: self.n_features,
            robust_inverse_scales: needs
                .robust_scales
                .then(|| self.robust_inverse_scales().into()),
        }
    }

    /// Per feature, 1/s_j of [`crate::projection::WeightScale::Robust`]: s_j is the
    /// interquartile range of the column's present values (quartiles interpolated linearly
    /// between order statistics, as numpy's default), its range when that is 0; 1 for a
    /// constant or all-missing column, or when 1/s_j is not a normal float. Columns are
    /// read in parallel on the current rayon pool.
    pub fn robust_inverse_scales(&self) -> Vec<f32> {
        (0..self.n_features)
            .into_par_iter()
            .map(|j| match &self.store {
                Store::Sparse(x) => {
                    let (rows, vals) = x.view().slice(j);
                    inverse_spread(vals.to_vec(), self.n_samples - rows.len())
                }
                _ => {
                    let values = (0..self.n_samples).map(|i| self.get(i, j));
                    inverse_spread(values.filter(|v| !v.is_nan()).collect(), 0)
                }
            })
            .collect()
    }
}

/// 1 / (interquartile range, or range when that is 0) of `values` together with `zeros`
/// further zeros (a sparse column's rows not stored); 1 when there is no spread or its
/// inverse is not a normal float.
fn inverse_spread(mut values: Vec<f32>, zeros: usize) -> f32 {
    let m = values.len() + zeros;
    if m == 0 {
        return 1.0;
    }
    if zeros > 0 {
        values.sort_unstable_by(f32::total_cmp);
    }
    let quartile = |values: &mut Vec<f32>, q: f64| {
        let h = q * (m - 1) as f64;
        let lo = h.floor() as usize;
        let a = order_statistic(values, zeros, lo);
        if lo + 1 < m && h > lo as f64 {
            a + (h - lo as f64) * (order_statistic(values, zeros, lo + 1) - a)
        } else {
            a
        }
    };
    let iqr = quartile(&mut values, 0.75) - quartile(&mut values, 0.25);
    let spread = if iqr > 0.0 {
        iqr
    } else {
        order_statistic(&mut values, zeros, m - 1) - order_statistic(&mut values, zeros, 0)
    };
    let inv = (1.0 / spread) as f32;
    if spread > 0.0 && inv.is_normal() {
        inv
    } else {
        1.0
    }
}

/// The `k`-th smallest (from 0) of `values` and `zeros` zeros: `values` is sorted when
/// `zeros > 0`, and is reordered by a selection otherwise.
fn order_statistic(values: &mut [f32], zeros: usize, k: usize) -> f64 {
    let v = if zeros == 0 {
        *values.select_nth_unstable_by(k, f32::total_cmp).1
    } else {
        let negative = values.partition_point(|v| *v < 0.0);
        if k < negative {
            values[k]
        } else if k < negative + zeros {
            0.0
        } else {
            values[k - zeros]
        }
    };
    f64::from(v)
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
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::sparse::SparseView;
    use ndarray::Array2;

    /// Wide X with float columns, two-valued columns (0/1, -3.5/2, 0.0/-0.0), a constant
    /// and a three-valued column.
    fn mixed(n: usize) -> Array2<f32> {
        let mut rng = Rng::from_seed(3);
        Array2::from_shape_fn((n, 40), |(_, j)| {
            let u = rng.unit();
            match j % 6 {
                0 | 1 => (u * 2.0 - 1.0) as f32,
                2 => f32::from(u8::from(u < 0.3)),
                3 => [-3.5, 2.0][usize::from(u < 0.5)],
                4 => [0.0, -0.0, 7.0][(u * 3.0) as usize % (2 + j % 12 / 6)],
                _ => [1.0, 2.0, 4.0][(u * 3.0) as usize],
            }
        })
    }

    #[test]
    fn robust_scales_are_interquartile_ranges_also_over_a_sparse_columns_zeros() {
        // column 0: 0..=8 (quartiles 2 and 6 -> 1/4); column 1: quartiles interpolated,
        // with a NaN left out (values 1, 2, 4, 8: q25 = 1.75, q75 = 5 -> 1/3.25);
        // column 2: IQR 0, range 10 -> 1/10; column 3: constant -> 1
        let mut x = Array2::<f32>::zeros((9, 4));
        for i in 0..9 {
            x[[i, 0]] = i as f32;
            x[[i, 1]] = f32::NAN;
            x[[i, 3]] = 5.0;
        }
        for (i, v) in [1.0, 2.0, 4.0, 8.0].into_iter().enumerate() {
            x[[i, 1]] = v;
        }
        x[[8, 2]] = 10.0;
        let dense = FeatureMatrix::from_view(x.view()).unwrap();
        assert_eq!(
            dense.robust_inverse_scales(),
            vec![0.25, (1.0 / 3.25) as f32, 0.1, 1.0]
        );

        // sparse: the rows not stored are zeros, on either side of the stored values
        let x = Array2::from_shape_fn((8, 2), |(i, j)| match (i, j) {
            (0, 0) => -4.0,
            (1, 0) => 3.0,
            (2, 0) => 5.0,
            (_, 1) if i >= 6 => 1.0,
            _ => 0.0,
        });
        let (ptr, idx, val) = (
            vec![0u64, 3, 5],
            vec![0u32, 1, 2, 6, 7],
            vec![-4.0f32, 3.0, 5.0, 1.0, 1.0],
        );
        let view = SparseView::new(Layout::Csc, (8, 2), &ptr, &idx, &val).unwrap();
        let sparse = FeatureMatrix::from_features(Features::Sparse(view)).unwrap();
        let dense = FeatureMatrix::from_view(x.view()).unwrap();
        assert_eq!(
            sparse.robust_inverse_scales(),
            dense.robust_inverse_scales()
        );
        // column 0 sorted: -4 0 0 0 0 0 3 5: q25 = 0, q75 = 0.75 * 7 = 5.25 -> 0 + 0.25 * 3
        assert_eq!(dense.robust_inverse_scales()[0], 1.0 / 0.75);
    }

    #[test]
    fn wide_row_major_x_is_copied_by_columns_with_two_valued_ones_as_bits() {
        let c = mixed(130);
        let f = c.t().as_standard_layout().t().to_owned();
        let (xc, xf) = (
            FeatureMatrix::from_view(c.view()).unwrap(),
            FeatureMatrix::from_view(f.view()).unwrap(),
        );
        let Store::Columns(cols) = &xc.store else {
            panic!("wide C-order X should be copied");
        };
        assert!(matches!(xf.store, Store::Borrowed { row_stride: 1, .. }));
        for (j, col) in cols.iter().enumerate() {
            let distinct: std::collections::HashSet<u32> =
                c.column(j).iter().map(|v| v.to_bits()).collect();
            assert_eq!(
                matches!(col, Column::Binary { .. }),
                distinct.len() <= 2,
                "column {j}"
            );
        }
        for ((i, j), v) in c.indexed_iter() {
            assert_eq!(xc.get(i, j).to_bits(), v.to_bits());
        }
        // projections mixing bit and float columns: the sums of prediction, bit for bit
        let samples: Vec<u32> = (0..130).rev().step_by(3).collect();
        let mut rng = Rng::from_seed(5);
        let random = (1..9).map(|k| {
            (0..k)
                .map(|_| (rng.below(40), [1.0, -1.0, 0.37][rng.below(3)]))
                .collect::<Vec<_>>()
        });
        // and bit columns only (2, 3, 8, 9, ...), one to six of them
        let binary = (1..7).map(|k| {
            (0..k)
                .map(|t| (6 * (t / 2) + 2 + t % 2, [1.0, -1.0, 0.37][t % 3]))
                .collect::<Vec<_>>()
        });
        // and whole-number sums over many bit columns (0/1 and 0.0/-0.0), summed from
        // lookups four terms at a time
        let whole = (5..12).map(|k| {
            [2, 4, 8, 14, 16, 20, 26, 28, 32, 38, 2]
                .into_iter()
                .zip([1.0, -1.0, 2.0, -3.0, 1.0, 1.0, -1.0, 4.0, 1.0, -2.0, 1.0])
                .take(k)
                .collect::<Vec<_>>()
        });
        for terms in random.chain(binary).chain(whole) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            xc.project_rows(&terms, &samples, &mut Vec::new(), &mut a);
            xf.project_rows(&terms, &samples, &mut Vec::new(), &mut b);
            for (r, (&s, (&va, &vb))) in samples.iter().zip(a.iter().zip(&b)).enumerate() {
                let mut want = 0.0f32;
                for &(j, w) in &terms {
                    want += w * c[[s as usize, j]];
                }
                assert_eq!(va.to_bits(), want.to_bits(), "row {r}, terms {terms:?}");
                assert_eq!(vb.to_bits(), want.to_bits(), "row {r}, terms {terms:?}");
            }
        }
    }

    #[test]
    fn huge_weights_are_rescaled_by_a_power_of_two_and_ordinary_ones_kept() {
        let ordinary = [0.5, 3.0, 1e-3, 7.0];
        assert_eq!(
            check_weights(Some(&ordinary), 4).unwrap(),
            ordinary.to_vec()
        );
        for w in [1e308, f64::MAX, 1e-300, 5e-324] {
            let got = check_weights(Some(&[w, w / 2.0, 0.0]), 3).unwrap();
            assert!(got.iter().all(|v| v.is_finite()));
            assert_eq!(got[2], 0.0);
            if w > 1e-300 {
                assert_eq!(got[0], 2.0 * got[1], "{w}: relative weights kept exactly");
            }
            let total: f64 = got.iter().sum::<f64>() * 3.0;
            assert!((0.5..=2.0).contains(&total), "{w}: total·n {total}");
        }
        let y = Targets::Values(vec![1e200, -1.0]);
        assert!(check_target_scale(&y, &[1.0, 1.0]).is_err());
        assert!(check_target_scale(&Targets::Values(vec![1e100, 1.0]), &[1.0, 1.0]).is_ok());
    }

    #[test]
    fn projections_that_could_overflow_are_halved_and_others_kept() {
        use crate::projection::ProjectionBuf;
        let x = Array2::from_shape_fn((4, 3), |(i, j)| if i == j { 3e38f32 } else { -2e38 });
        let m = FeatureMatrix::from_view(x.view()).unwrap();
        let mut cand = ProjectionBuf {
            ptr: vec![0, 1, 3],
            idx: vec![0, 0, 1],
            w: vec![1.0, 1.0, -1.0],
        };
        m.keep_sums_finite(&mut cand, 0);
        assert_eq!(cand.w[0], 1.0, "one unit term cannot overflow");
        m.keep_sums_finite(&mut cand, 1);
        assert_eq!(&cand.w[1..], &[0.25, -0.25]);
        let (mut out, samples) = (Vec::new(), [0u32, 1, 2, 3]);
        m.project_rows(
            &[(0, 0.25), (1, -0.25)],
            &samples,
            &mut Vec::new(),
            &mut out,
        );
        assert!(out.iter().all(|v| v.is_finite()));
        let small = Array2::from_elem((2, 2), 1e30f32);
        let m = FeatureMatrix::from_view(small.view()).unwrap();
        cand.w = vec![1.0, 1.0, -1.0];
        m.keep_sums_finite(&mut cand, 1);
        assert_eq!(&cand.w[1..], &[1.0, -1.0]);
    }
}
