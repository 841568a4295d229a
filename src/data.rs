//! Training data as the builder sees it: the features as an f32 matrix borrowed from the
//! caller when gathering from it is fast (Fortran order, or C order with narrow rows),
//! copied once into Fortran order otherwise; the targets; and per-row weights.

use crate::error::{Error, Result};
use ndarray::ArrayView2;
use rayon::prelude::*;
use std::borrow::Cow;

/// X as the builder reads it: element (i, j) is `data[i * row_stride + j * col_stride]`.
#[derive(Clone, Debug)]
pub struct FeatureMatrix<'a> {
    pub n_samples: usize,
    pub n_features: usize,
    data: Cow<'a, [f32]>,
    row_stride: usize,
    col_stride: usize,
    /// Columns that look discrete (few distinct values in a sample of rows): a hint that
    /// the split search may try its exact histogram path before sorting.
    discrete: Vec<bool>,
}

/// Row-major (C-order) X is borrowed up to this many features, when a row fits in one
/// cache line and gathering a column over a node's rows costs about what it costs in
/// column-major order; wider row-major X is copied once into column-major order, which
/// makes every gather several times faster (a new cache line per row otherwise).
const BORROW_ROW_MAJOR_MAX_FEATURES: usize = 16;

/// `x` copied into column-major order, in parallel (on the current rayon pool) over
/// groups of 16 columns; a group reads each row's 64 bytes once and writes 16 columns.
fn column_major(x: &ArrayView2<'_, f32>) -> Vec<f32> {
    const GROUP: usize = 16;
    let n = x.nrows();
    let mut cols = vec![0.0f32; n * x.ncols()];
    cols.par_chunks_mut(GROUP * n)
        .enumerate()
        .for_each(|(g, out)| {
            let j0 = g * GROUP;
            let width = out.len() / n;
            for (i, row) in x.rows().into_iter().enumerate() {
                for jj in 0..width {
                    out[jj * n + i] = row[j0 + jj];
                }
            }
        });
    cols
}

/// A column with at most this many distinct values among the sampled rows is "discrete".
const DISCRETE_MAX_VALUES: usize = 32;
/// Rows sampled per column for the discreteness hint.
const DISCRETE_SAMPLE_ROWS: usize = 1024;

impl<'a> FeatureMatrix<'a> {
    /// Borrows `x` when it is contiguous in Fortran order, or in C order with at most 16
    /// features; copies it into Fortran order otherwise. Checks every value is finite.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty matrix or a NaN / infinite value.
    pub fn from_view(x: ArrayView2<'a, f32>) -> Result<Self> {
        let (n, p) = x.dim();
        if n == 0 || p == 0 {
            return Err(Error::InvalidInput(format!(
                "X has shape ({n}, {p}); it needs at least one row and one column"
            )));
        }
        let (data, row_stride, col_stride) =
            if let (Some(c), true) = (x.to_slice(), p <= BORROW_ROW_MAJOR_MAX_FEATURES) {
                (Cow::Borrowed(c), p, 1)
            } else if let Some(f) = x.reversed_axes().to_slice() {
                (Cow::Borrowed(f), 1, n)
            } else {
                (Cow::Owned(column_major(&x)), 1, n)
            };
        if let Some(pos) = data.iter().position(|v| !v.is_finite()) {
            let (row, col) = if row_stride == 1 {
                (pos % n, pos / n)
            } else {
                (pos / p, pos % p)
            };
            return Err(Error::InvalidInput(format!(
                "X contains NaN or infinity (row {row}, column {col}); missing values are not supported"
            )));
        }
        let mut x = FeatureMatrix {
            n_samples: n,
            n_features: p,
            data,
            row_stride,
            col_stride,
            discrete: Vec::new(),
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
        let mut seen: Vec<u32> = Vec::with_capacity(DISCRETE_MAX_VALUES + 1);
        for i in (0..self.n_samples).step_by(step) {
            let v = self.get(i, j).to_bits();
            if !seen.contains(&v) {
                if seen.len() == DISCRETE_MAX_VALUES {
                    return false;
                }
                seen.push(v);
            }
        }
        true
    }

    /// `out[k] = sum_t w_t * x[samples[k], j_t]` over the `(j_t, w_t)` of `terms`, added in
    /// term order from 0 (the order prediction uses, so values match bit for bit). Up to
    /// four columns are read per pass over the rows.
    pub fn project_rows(&self, terms: &[(usize, f32)], samples: &[u32], out: &mut Vec<f32>) {
        out.clear();
        out.resize(samples.len(), 0.0);
        let rs = self.row_stride;
        let col = |j: usize| &self.data[j * self.col_stride..];
        for chunk in terms.chunks(4) {
            let rows = out.iter_mut().zip(samples.iter().map(|&s| s as usize * rs));
            match *chunk {
                [(a, wa)] => {
                    let a = col(a);
                    rows.for_each(|(o, r)| *o += wa * a[r]);
                }
                [(a, wa), (b, wb)] => {
                    let (a, b) = (col(a), col(b));
                    rows.for_each(|(o, r)| *o = *o + wa * a[r] + wb * b[r]);
                }
                [(a, wa), (b, wb), (c, wc)] => {
                    let (a, b, c) = (col(a), col(b), col(c));
                    rows.for_each(|(o, r)| *o = *o + wa * a[r] + wb * b[r] + wc * c[r]);
                }
                [(a, wa), (b, wb), (c, wc), (d, wd)] => {
                    let (a, b, c, d) = (col(a), col(b), col(c), col(d));
                    rows.for_each(|(o, r)| {
                        *o = *o + wa * a[r] + wb * b[r] + wc * c[r] + wd * d[r];
                    });
                }
                _ => unreachable!("chunks of one to four terms"),
            }
        }
    }

    /// Value at (row, column).
    #[inline]
    pub fn get(&self, row: usize, col: usize) -> f32 {
        self.data[row * self.row_stride + col * self.col_stride]
    }
}

/// What the trees predict.
#[derive(Clone, Debug)]
pub enum Targets {
    /// Class codes `0..n_classes`.
    Classes(Vec<u32>),
    /// Real values.
    Values(Vec<f64>),
}

impl Targets {
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

/// Checks optional sample weights against the number of rows.
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
            Ok(w.to_vec())
        }
    }
}
