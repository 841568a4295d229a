//! Sparse X: compressed sparse rows (CSR) or columns (CSC), as scipy.sparse stores them,
//! and [`Features`], the one input type of fitting and prediction (dense or sparse).
//!
//! Invariants of a [`SparseView`] (checked once, by [`SparseView::new`]): `indptr` starts
//! at 0 and never decreases, its last entry is the number of stored entries; within each
//! major slice (a row of CSR, a column of CSC) the minor indices are strictly increasing
//! (sorted, no duplicates) and below the minor dimension; every stored value is finite.
//! An entry not stored is 0.0 (positive zero), as scipy's `toarray()` gives it.
//!
//! Sums over a sparse row or column add the stored entries only: adding `w * 0.0` (±0)
//! to a running sum that starts at +0.0 never changes it, so the sums are those of the
//! dense matrix, bit for bit, and a model fitted on sparse X is the one fitted on
//! `X.toarray()`.

use crate::alloc;
use crate::error::{Error, Result};
use ndarray::ArrayView2;

/// Which axis the compressed slices run along.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Compressed sparse rows (scipy's `csr_array`/`csr_matrix`).
    Csr,
    /// Compressed sparse columns (scipy's `csc_array`/`csc_matrix`).
    Csc,
}

/// A borrowed, checked sparse matrix of f32 values (see the module's invariants).
#[derive(Clone, Copy, Debug)]
pub struct SparseView<'a> {
    layout: Layout,
    shape: (usize, usize),
    indptr: &'a [u64],
    indices: &'a [u32],
    data: &'a [f32],
}

/// An owned sparse matrix with the same invariants (a transposed copy of a view).
#[derive(Clone, Debug)]
pub struct SparseMatrix {
    layout: Layout,
    shape: (usize, usize),
    indptr: Vec<u64>,
    indices: Vec<u32>,
    data: Vec<f32>,
}

impl<'a> SparseView<'a> {
    /// A view of scipy's arrays of a (n_rows, n_cols) matrix: slice `i` of the major axis
    /// holds minor indices `indices[indptr[i]..indptr[i + 1]]` with values `data[...]`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the arrays break an invariant of the module (lengths,
    /// an index out of range, unsorted or repeated indices within a slice, a NaN or
    /// infinite value), naming the first problem found.
    pub fn new(
        layout: Layout,
        shape: (usize, usize),
        indptr: &'a [u64],
        indices: &'a [u32],
        data: &'a [f32],
    ) -> Result<Self> {
        let (major, minor) = match layout {
            Layout::Csr => shape,
            Layout::Csc => (shape.1, shape.0),
        };
        let bad = |what: String| Err(Error::InvalidInput(format!("sparse X: {what}")));
        if indptr.len() != major + 1 {
            return bad(format!(
                "indptr has {} entries, expected {}",
                indptr.len(),
                major + 1
            ));
        }
        if indices.len() != data.len() {
            return bad(format!(
                "{} indices but {} values",
                indices.len(),
                data.len()
            ));
        }
        if indptr[0] != 0 || indptr[major] != indices.len() as u64 {
            return bad("indptr must start at 0 and end at the number of stored entries".into());
        }
        for (i, w) in indptr.windows(2).enumerate() {
            if w[0] > w[1] {
                return bad(format!("indptr decreases at {i}"));
            }
            if w[1] > indices.len() as u64 {
                return bad(format!(
                    "indptr[{}] = {} is beyond the {} stored entries",
                    i + 1,
                    w[1],
                    indices.len()
                ));
            }
            let slice = &indices[w[0] as usize..w[1] as usize];
            if slice.last().is_some_and(|&j| j as usize >= minor) {
                return bad(format!(
                    "an index is out of range (>= {minor}) in {} {i}",
                    layout.major_name()
                ));
            }
            if slice.windows(2).any(|p| p[0] >= p[1]) {
                return bad(format!(
                    "indices of {} {i} are not sorted and unique (scipy: X.sum_duplicates())",
                    layout.major_name()
                ));
            }
        }
        if let Some(k) = data.iter().position(|v| !v.is_finite()) {
            let at = indptr.partition_point(|&p| p <= k as u64) - 1;
            let (row, col) = match layout {
                Layout::Csr => (at, indices[k] as usize),
                Layout::Csc => (indices[k] as usize, at),
            };
            return bad(format!(
                "X contains NaN or infinity (row {row}, column {col}); missing values are \
                 not supported in sparse X"
            ));
        }
        Ok(SparseView {
            layout,
            shape,
            indptr,
            indices,
            data,
        })
    }

    /// (rows, columns).
    pub fn dim(&self) -> (usize, usize) {
        self.shape
    }

    /// CSR or CSC.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The number of stored entries.
    pub fn nnz(&self) -> usize {
        self.data.len()
    }

    /// Slice `i` of the major axis: (minor indices, values).
    #[inline]
    pub fn slice(&self, i: usize) -> (&'a [u32], &'a [f32]) {
        let (a, b) = (self.indptr[i] as usize, self.indptr[i + 1] as usize);
        (&self.indices[a..b], &self.data[a..b])
    }

    /// Asks the cache for where slice `i` starts and ends (its `indptr` entries), without
    /// waiting for them: the first step of fetching a slice ahead of its use.
    #[inline]
    pub fn prefetch_bounds(&self, i: usize) {
        crate::prefetch::prefetch(self.indptr, i);
    }

    /// The largest |stored value| (0 for no entries).
    pub fn max_abs(&self) -> f32 {
        self.data.iter().fold(0.0f32, |m, v| m.max(v.abs()))
    }

    /// The same matrix in the other layout (a counting sort over the minor indices, so
    /// every new slice is sorted).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when its arrays (the new `indptr` has an entry per minor
    /// index, e.g. per column of CSR X) cannot be allocated.
    pub fn transposed_layout(&self) -> Result<SparseMatrix> {
        let (major, minor) = match self.layout {
            Layout::Csr => self.shape,
            Layout::Csc => (self.shape.1, self.shape.0),
        };
        let what = "sparse X in the other layout";
        let mut indptr = alloc::filled(minor.saturating_add(1), 0u64, what)?;
        for &j in self.indices {
            indptr[j as usize + 1] += 1;
        }
        for j in 0..minor {
            indptr[j + 1] += indptr[j];
        }
        let mut next = alloc::filled(minor, 0u64, what)?;
        next.copy_from_slice(&indptr[..minor]);
        let mut indices = alloc::filled(self.nnz(), 0u32, what)?;
        let mut data = alloc::filled(self.nnz(), 0.0f32, what)?;
        for i in 0..major {
            let (idx, val) = self.slice(i);
            for (&j, &v) in idx.iter().zip(val) {
                let at = &mut next[j as usize];
                indices[*at as usize] = i as u32;
                data[*at as usize] = v;
                *at += 1;
            }
        }
        Ok(SparseMatrix {
            layout: match self.layout {
                Layout::Csr => Layout::Csc,
                Layout::Csc => Layout::Csr,
            },
            shape: self.shape,
            indptr,
            indices,
            data,
        })
    }
}

impl Layout {
    fn major_name(self) -> &'static str {
        match self {
            Layout::Csr => "row",
            Layout::Csc => "column",
        }
    }
}

impl SparseMatrix {
    /// A view of the matrix (its invariants hold by construction).
    pub fn view(&self) -> SparseView<'_> {
        SparseView {
            layout: self.layout,
            shape: self.shape,
            indptr: &self.indptr,
            indices: &self.indices,
            data: &self.data,
        }
    }

    /// The matrix in `layout`: `x` borrowed when it has it, else a transposed copy.
    ///
    /// # Errors
    /// As [`SparseView::transposed_layout`].
    pub fn in_layout<'v>(x: SparseView<'v>, layout: Layout) -> Result<CowSparse<'v>> {
        Ok(if x.layout == layout {
            CowSparse::Borrowed(x)
        } else {
            CowSparse::Owned(x.transposed_layout()?)
        })
    }
}

/// A sparse matrix borrowed from the caller or converted to another layout.
#[derive(Clone, Debug)]
pub enum CowSparse<'a> {
    /// The caller's arrays.
    Borrowed(SparseView<'a>),
    /// A converted copy.
    Owned(SparseMatrix),
}

impl CowSparse<'_> {
    /// A view of either.
    pub fn view(&self) -> SparseView<'_> {
        match self {
            CowSparse::Borrowed(v) => *v,
            CowSparse::Owned(m) => m.view(),
        }
    }
}

/// Subtrees grow on copies of their rows' entries ([`SparseStore::gather_rows`]) only when
/// X's columns hold at least this many entries on average ([`SparseStore::copy_pays`]):
/// shorter ones are scanned in a few cache lines, and copies made fits slower (hashed text,
/// ~20 entries a column: `python benches/sparse.py --data text`, 0.30 -> 0.35 of
/// scikit-learn's fit time).
const MIN_COLUMN_ENTRIES: usize = 64;

/// Sparse X as a fit stores it: its entries by column (CSC), and, from the first time a
/// subtree grows on its own copy of its rows ([`SparseStore::gather_rows`]), the same
/// entries by row, made once and shared by every tree of the fit (memory as X's entries).
#[derive(Clone, Debug)]
pub(crate) struct SparseStore<'a> {
    by_column: CowSparse<'a>,
    by_row: std::sync::OnceLock<Option<SparseMatrix>>,
}

impl<'a> SparseStore<'a> {
    /// The store of `x`, by column (CSC).
    pub(crate) fn new(by_column: CowSparse<'a>) -> Self {
        debug_assert!(by_column.view().layout == Layout::Csc);
        SparseStore {
            by_column,
            by_row: std::sync::OnceLock::new(),
        }
    }

    /// A view of the entries by column (CSC).
    #[inline]
    pub(crate) fn view(&self) -> SparseView<'_> {
        self.by_column.view()
    }

    /// Whether a copy of `m` of X's rows ([`Self::gather_rows`]) would pay: X's columns
    /// hold at least [`MIN_COLUMN_ENTRIES`] entries on average (shorter ones are scanned in
    /// a few cache lines), and the copy's entries, `m` rows' share of X's, are at least
    /// its columns (the copy's work per column, a count and an offset, stays below its
    /// work per entry, so the copies of a tree cost at most about twice X's entries).
    pub(crate) fn copy_pays(&self, m: usize) -> bool {
        let x = self.view();
        let (n, p) = x.shape;
        x.nnz() >= MIN_COLUMN_ENTRIES.saturating_mul(p)
            && (m as u128) * (x.nnz() as u128) >= (n as u128) * (p as u128)
    }

    /// The store of X's rows `rows` (strictly ascending), row `rows[k]` becoming row `k`:
    /// every column holds the entries of those rows, in the same order and with the same
    /// values as X's column, so a search on the copy reads the entries a search on X
    /// reads, in the same order (only its own: a column of the copy is as long as the
    /// part of X's column in these rows). `None` when the rows are not ascending or the
    /// copy or X by row cannot be allocated: the subtree then grows on X itself.
    pub(crate) fn gather_rows(&self, rows: &[u32]) -> Option<SparseStore<'static>> {
        let x = self.view();
        if !rows.windows(2).all(|r| r[0] < r[1]) {
            return None;
        }
        let by_row = self
            .by_row
            .get_or_init(|| x.transposed_layout().ok())
            .as_ref()?
            .view();
        let (_, p) = x.shape;
        let what = "a subtree's copy of sparse X's rows";
        let mut indptr = alloc::filled(p + 1, 0u64, what).ok()?;
        for &r in rows {
            for &j in by_row.slice(r as usize).0 {
                indptr[j as usize + 1] += 1;
            }
        }
        for j in 0..p {
            indptr[j + 1] += indptr[j];
        }
        let nnz = indptr[p] as usize;
        let mut next = alloc::filled(p, 0u64, what).ok()?;
        next.copy_from_slice(&indptr[..p]);
        let mut indices = alloc::filled(nnz, 0u32, what).ok()?;
        let mut data = alloc::filled(nnz, 0.0f32, what).ok()?;
        for (k, &r) in rows.iter().enumerate() {
            let (cols, vals) = by_row.slice(r as usize);
            for (&j, &v) in cols.iter().zip(vals) {
                let at = &mut next[j as usize];
                indices[*at as usize] = k as u32;
                data[*at as usize] = v;
                *at += 1;
            }
        }
        Some(SparseStore::new(CowSparse::Owned(SparseMatrix {
            layout: Layout::Csc,
            shape: (rows.len(), p),
            indptr,
            indices,
            data,
        })))
    }
}

/// X as fitting and prediction take it: a dense array (any memory order) or a sparse
/// matrix. `ArrayView2` and [`SparseView`] convert into it, so `Forest::fit(&p, x.view(),
/// ...)` keeps working.
#[derive(Clone, Copy, Debug)]
pub enum Features<'a> {
    /// A dense array.
    Dense(ArrayView2<'a, f32>),
    /// A sparse matrix, CSR or CSC.
    Sparse(SparseView<'a>),
}

impl<'a> From<ArrayView2<'a, f32>> for Features<'a> {
    fn from(x: ArrayView2<'a, f32>) -> Self {
        Features::Dense(x)
    }
}

impl<'a> From<SparseView<'a>> for Features<'a> {
    fn from(x: SparseView<'a>) -> Self {
        Features::Sparse(x)
    }
}

impl<'a> Features<'a> {
    /// The same input under a shorter lifetime (ndarray's views are not covariant).
    pub fn reborrow<'b>(self) -> Features<'b>
    where
        'a: 'b,
    {
        match self {
            Features::Dense(x) => Features::Dense(x.reborrow()),
            Features::Sparse(x) => Features::Sparse(x),
        }
    }

    /// (rows, columns).
    pub fn dim(&self) -> (usize, usize) {
        match self {
            Features::Dense(x) => x.dim(),
            Features::Sparse(x) => x.dim(),
        }
    }
    /// Columns.
    pub fn ncols(&self) -> usize {
        self.dim().1
    }
    /// Rows.
    pub fn nrows(&self) -> usize {
        self.dim().0
    }
}

/// One row of X as a tree walk reads it: the value of feature `j`.
pub trait Row: Copy {
    /// Feature `j` of the row.
    fn at(self, j: usize) -> f32;
}

impl Row for &[f32] {
    #[inline(always)]
    fn at(self, j: usize) -> f32 {
        self[j]
    }
}

/// A row of a CSR matrix: its sorted column indices and their values.
#[derive(Clone, Copy, Debug)]
pub struct SparseRow<'a> {
    indices: &'a [u32],
    data: &'a [f32],
}

impl Row for SparseRow<'_> {
    /// A binary search of the row's sorted indices; 0.0 when `j` is not stored.
    #[inline]
    fn at(self, j: usize) -> f32 {
        match self.indices.binary_search(&(j as u32)) {
            Ok(k) => self.data[k],
            Err(_) => 0.0,
        }
    }
}

/// A block of consecutive rows, as prediction walks trees over them.
#[derive(Clone, Copy, Debug)]
pub enum RowBlock<'a> {
    /// Row-major rows, `p` values each.
    Dense {
        /// The rows' values, `p` per row.
        rows: &'a [f32],
        /// Features per row.
        p: usize,
    },
    /// Rows `start..end` of a CSR matrix.
    Csr {
        /// The matrix (CSR).
        x: SparseView<'a>,
        /// First row of the block.
        start: usize,
        /// One past the last row.
        end: usize,
    },
}

impl<'a> RowBlock<'a> {
    /// Rows in the block.
    pub fn len(&self) -> usize {
        match *self {
            RowBlock::Dense { rows, p } => rows.len() / p.max(1),
            RowBlock::Csr { start, end, .. } => end - start,
        }
    }

    /// Whether the block has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `k` of a CSR block.
    #[inline]
    pub fn sparse_row(x: &SparseView<'a>, i: usize) -> SparseRow<'a> {
        let (indices, data) = x.slice(i);
        SparseRow { indices, data }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_view_rejects_broken_arrays_and_transposes_exactly() {
        // [[1, 0, 2], [0, 0, 3]]
        let (ptr, idx, val) = ([0u64, 2, 3], [0u32, 2, 2], [1.0f32, 2.0, 3.0]);
        let x = SparseView::new(Layout::Csr, (2, 3), &ptr, &idx, &val).unwrap();
        let t = x.transposed_layout().unwrap();
        let v = t.view();
        assert_eq!(v.layout(), Layout::Csc);
        assert_eq!(v.slice(0), (&[0u32][..], &[1.0f32][..]));
        assert_eq!(v.slice(1), (&[][..], &[][..]));
        assert_eq!(v.slice(2), (&[0u32, 1][..], &[2.0f32, 3.0][..]));
        let back = v.transposed_layout().unwrap();
        assert_eq!(back.view().slice(0), x.slice(0));
        assert_eq!(back.view().slice(1), x.slice(1));
        for (ptr, idx, val, what) in [
            (
                &[0u64, 2, 3][..],
                &[2u32, 0, 2][..],
                &[1.0f32, 2.0, 3.0][..],
                "not sorted",
            ),
            (&[0, 2, 3], &[0, 0, 2], &[1.0, 2.0, 3.0], "not sorted"),
            (&[0, 2, 3], &[0, 3, 2], &[1.0, 2.0, 3.0], "out of range"),
            (&[0, 2, 2], &[0, 2, 2], &[1.0, 2.0, 3.0], "end at"),
            (&[0, 2], &[0, 2], &[1.0, 2.0], "indptr has"),
            // corrupted after construction: beyond the entries, or decreasing
            (
                &[0, 1_000_000_000, 3],
                &[0, 2, 2],
                &[1.0, 2.0, 3.0],
                "beyond the 3",
            ),
            (
                &[0, 2, 3],
                &[0, 2, 2],
                &[1.0, f32::NAN, 3.0],
                "row 0, column 2",
            ),
        ] {
            let e = SparseView::new(Layout::Csr, (2, 3), ptr, idx, val).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
        }
        let r = RowBlock::sparse_row(&x, 0);
        assert_eq!([r.at(0), r.at(1), r.at(2)], [1.0, 0.0, 2.0]);
    }
}
