//! Training data as the builder sees it: features as a contiguous column-major
//! f32 matrix, borrowed when the caller's array is in Fortran order, else copied once (column j is `cols[j*n..(j+1)*n]`), the
//! targets, and per-row weights.

use crate::error::{Error, Result};
use ndarray::ArrayView2;
use std::borrow::Cow;

/// X in column-major order: borrowed when the caller's array already is (Fortran order),
/// copied once otherwise.
#[derive(Clone, Debug)]
pub struct ColMajor<'a> {
    pub n_samples: usize,
    pub n_features: usize,
    pub cols: Cow<'a, [f32]>,
}

impl<'a> ColMajor<'a> {
    /// Borrows (Fortran order) or copies `x` and checks every value is finite.
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
        let cols = match x.reversed_axes().to_slice() {
            Some(fortran) => Cow::Borrowed(fortran),
            None => {
                let mut cols = Vec::with_capacity(n * p);
                for j in 0..p {
                    cols.extend(x.column(j).iter().copied());
                }
                Cow::Owned(cols)
            }
        };
        if let Some(pos) = cols.iter().position(|v| !v.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "X contains NaN or infinity (row {}, column {}); missing values are not supported",
                pos % n,
                pos / n
            )));
        }
        Ok(ColMajor {
            n_samples: n,
            n_features: p,
            cols,
        })
    }

    /// Column `j`.
    #[inline]
    pub fn col(&self, j: usize) -> &[f32] {
        &self.cols[j * self.n_samples..(j + 1) * self.n_samples]
    }

    /// Value at (row, column).
    #[inline]
    pub fn get(&self, row: usize, col: usize) -> f32 {
        self.cols[col * self.n_samples + row]
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
