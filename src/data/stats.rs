//! The statistics of the training data: what every fit checks of X as it reads it (its
//! largest magnitude, whether it is finite, whether a value is missing: `max_abs`), and
//! what a projection family may ask for, computed once per fit
//! ([`FeatureMatrix::stats`]): SPORF's robust per-feature scales, and which columns are
//! missing (NaN) on every row.

use super::{At, FeatureMatrix, Store};
use crate::projection::{DataNeeds, DataStats};
use ndarray::ArrayView2;
use rayon::prelude::*;

impl FeatureMatrix<'_> {
    /// The statistics of this data that a projection family `needs` (computed once per fit;
    /// see [`crate::projection::DataStats`]).
    pub fn stats(&self, needs: DataNeeds) -> DataStats {
        DataStats {
            n_features: self.n_features,
            robust_inverse_scales: needs
                .robust_scales
                .then(|| self.robust_inverse_scales().into()),
            all_missing: needs
                .missing_columns
                .then(|| self.all_missing_columns().into()),
        }
    }

    /// Per feature, whether every row is missing (NaN): nothing a projection can use. Sparse
    /// X and X without NaN have none. Columns are read in parallel on the current rayon pool.
    pub fn all_missing_columns(&self) -> Vec<bool> {
        if !self.has_missing {
            return vec![false; self.n_features];
        }
        (0..self.n_features)
            .into_par_iter()
            .map(|j| (0..self.n_samples).all(|i| self.get(i, j).is_nan()))
            .collect()
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
                    let (col, rs) = (self.column(j), self.row_stride());
                    let values = (0..self.n_samples).map(|i| col.at(i * rs));
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
    let (q1, q3) = if zeros > 0 {
        values.sort_unstable_by(f32::total_cmp);
        let stat = |k| order_statistic(&values, zeros, k);
        (quartile(m, 0.25, stat), quartile(m, 0.75, stat))
    } else {
        selected_quartiles(&mut values)
    };
    let iqr = q3 - q1;
    let spread = if iqr > 0.0 {
        iqr
    } else if zeros > 0 {
        order_statistic(&values, zeros, m - 1) - order_statistic(&values, zeros, 0)
    } else {
        let (lo, hi) = (
            smallest(&values),
            values.iter().copied().max_by(f32::total_cmp),
        );
        f64::from(hi.unwrap_or(0.0)) - lo
    };
    let inv = (1.0 / spread) as f32;
    if spread > 0.0 && inv.is_normal() {
        inv
    } else {
        1.0
    }
}

/// The `q`-quantile of `m` values whose `k`-th smallest is `stat(k)`: linear between order
/// statistics, as numpy's default.
fn quartile(m: usize, q: f64, mut stat: impl FnMut(usize) -> f64) -> f64 {
    let h = q * (m - 1) as f64;
    let lo = h.floor() as usize;
    let a = stat(lo);
    if lo + 1 < m && h > lo as f64 {
        a + (h - lo as f64) * (stat(lo + 1) - a)
    } else {
        a
    }
}

/// The first and third quartiles of `values` (at least one, no NaN), by two selections: the
/// third quartile's order statistic over all the values, the first's over the ones that
/// selection put before it (they are the smallest). The statistic after a selected one is
/// the smallest of the values behind it.
fn selected_quartiles(values: &mut [f32]) -> (f64, f64) {
    let m = values.len();
    let k3 = (0.75 * (m - 1) as f64).floor() as usize;
    let q3 = quartile(m, 0.75, |k| {
        if k == k3 {
            f64::from(*values.select_nth_unstable_by(k3, f32::total_cmp).1)
        } else {
            smallest(&values[k3 + 1..])
        }
    });
    let k1 = (0.25 * (m - 1) as f64).floor() as usize;
    let q1 = quartile(m, 0.25, |k| {
        if k == k1 {
            f64::from(*values[..=k3].select_nth_unstable_by(k1, f32::total_cmp).1)
        } else {
            smallest(&values[k1 + 1..])
        }
    });
    (q1, q3)
}

/// The smallest of `values` (none NaN; 0 for none) in the order of `f32::total_cmp`.
fn smallest(values: &[f32]) -> f64 {
    f64::from(values.iter().copied().min_by(f32::total_cmp).unwrap_or(0.0))
}

/// The `k`-th smallest (from 0) of the sorted `values` and `zeros` zeros.
fn order_statistic(values: &[f32], zeros: usize, k: usize) -> f64 {
    let negative = values.partition_point(|v| *v < 0.0);
    let v = if k < negative {
        values[k]
    } else if k < negative + zeros {
        0.0
    } else {
        values[k - zeros]
    };
    f64::from(v)
}

/// The largest |value| of `x` (NaN aside) and whether some value is NaN, or the position
/// (row, column) of its first infinite value.
pub(super) fn max_abs(x: &ArrayView2<'_, f32>) -> std::result::Result<(f32, bool), (usize, usize)> {
    // (a maximum and two flags: the same in any order)
    let join = |(m, ok, nan): Scan, (m2, ok2, nan2): Scan| (m.max(m2), ok & ok2, nan | nan2);
    let none: Scan = (0.0, true, false);
    let (largest, finite, nan) = match x.as_slice_memory_order() {
        // blocks in parallel on the current pool
        Some(s) => s.par_chunks(1 << 16).map(scan_abs).reduce(|| none, join),
        None => {
            // X laid out otherwise: its values a block at a time through a small buffer
            let (mut values, mut buf, mut acc) = (x.iter().copied(), Vec::new(), none);
            loop {
                buf.clear();
                buf.extend(values.by_ref().take(4096));
                if buf.is_empty() {
                    break acc;
                }
                acc = join(acc, scan_abs(&buf));
            }
        }
    };
    if finite {
        Ok((largest, nan))
    } else {
        Err(first_infinite(x).unwrap_or((0, 0)))
    }
}

/// (largest |value|, no value infinite, some value NaN) of some values.
type Scan = (f32, bool, bool);

/// Values [`scan_abs`] folds side by side.
const SCAN_LANES: usize = 16;

/// (largest |v| of `values`, NaN aside, or 0; whether none is infinite; whether some is
/// NaN), folded in [`SCAN_LANES`] independent lanes without a branch or an early exit, so
/// that the loop vectorises: a lane keeps |v| when it is larger (a NaN compares false),
/// and the lanes' maximum is the same value in any order.
fn scan_abs(values: &[f32]) -> Scan {
    let mut largest = [0.0f32; SCAN_LANES];
    let (mut infinite, mut nan) = ([0u32; SCAN_LANES], [0u32; SCAN_LANES]);
    // value v folded into lane l
    let mut fold = |l: usize, v: f32| {
        let a = v.abs();
        largest[l] = if a > largest[l] { a } else { largest[l] };
        infinite[l] |= u32::from(a == f32::INFINITY);
        nan[l] |= u32::from(a.is_nan());
    };
    let mut chunks = values.chunks_exact(SCAN_LANES);
    for chunk in &mut chunks {
        for (l, &v) in chunk.iter().enumerate() {
            fold(l, v);
        }
    }
    for (l, &v) in chunks.remainder().iter().enumerate() {
        fold(l, v);
    }
    let m = largest.iter().fold(0.0f32, |m, &a| m.max(a));
    (m, !infinite.contains(&1), nan.contains(&1))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// `inverse_spread` of values with no zeros aside, by a full sort.
    fn sorted_inverse_spread(values: &[f32]) -> f32 {
        let mut v = values.to_vec();
        v.sort_unstable_by(f32::total_cmp);
        let m = v.len();
        let stat = |k: usize| f64::from(v[k]);
        let iqr = quartile(m, 0.75, stat) - quartile(m, 0.25, stat);
        let spread = if iqr > 0.0 {
            iqr
        } else {
            stat(m - 1) - stat(0)
        };
        let inv = (1.0 / spread) as f32;
        if spread > 0.0 && inv.is_normal() {
            inv
        } else {
            1.0
        }
    }

    /// `max_abs` against a plain fold of every value: lengths around the lanes and the
    /// parallel blocks, negative and signed-zero values, NaN (ignored by the maximum,
    /// reported), infinities (the first one's position), X by row, by column and strided.
    #[test]
    fn max_abs_is_the_plain_fold() {
        let mut rng = Rng::from_seed(21);
        for n in [0usize, 1, 15, 16, 17, 33, 1000, (1 << 16) + 37] {
            for case in 0..4 {
                let p = 3;
                let mut v: Vec<f32> = (0..n * p)
                    .map(|_| (rng.unit() as f32 - 0.5) * 1e3)
                    .collect();
                if n > 0 {
                    let k = rng.below(n * p);
                    match case {
                        1 => v[k] = f32::NAN,
                        2 => v[k] = -f32::INFINITY,
                        3 => {
                            v[k] = -0.0;
                            v[(k + 1) % (n * p)] = -4e3; // the largest is negative
                        }
                        _ => {}
                    }
                }
                let x = ArrayView2::from_shape((n, p), &v).unwrap();
                let want_max = v.iter().fold(0.0f32, |m, a| m.max(a.abs()));
                let want_nan = v.iter().any(|a| a.is_nan());
                let first_inf = v
                    .iter()
                    .position(|a| a.is_infinite())
                    .map(|k| (k / p, k % p));
                let by_column = x.t().to_owned();
                let by_column = by_column.t();
                for (view, inf) in [(x, first_inf), (by_column, first_inf)] {
                    match (max_abs(&view), inf) {
                        (Ok((m, nan)), None) => {
                            assert_eq!(m.to_bits(), want_max.to_bits(), "n={n} case={case}");
                            assert_eq!(nan, want_nan, "n={n} case={case}");
                        }
                        (Err(at), Some(want)) => assert_eq!(at, want, "n={n} case={case}"),
                        (got, want) => panic!("n={n} case={case}: {got:?} against {want:?}"),
                    }
                }
                // every other column: no contiguous memory order
                let strided = x.slice(ndarray::s![.., ..;2]);
                let plain = strided.iter().fold(0.0f32, |m, a| m.max(a.abs()));
                if let Ok((m, _)) = max_abs(&strided) {
                    assert_eq!(m.to_bits(), plain.to_bits(), "strided n={n} case={case}");
                }
            }
        }
    }

    #[test]
    fn selected_quartiles_are_the_sorted_ones() {
        let mut rng = Rng::from_seed(8);
        for m in (1..60).chain([255, 256, 1000, 4097]) {
            for kind in 0..4 {
                let values: Vec<f32> = (0..m)
                    .map(|_| {
                        let u = rng.unit();
                        match kind {
                            0 => (u * 4.0 - 1.0) as f32,
                            1 => [-0.0, 0.0, 1.0, -2.0][(u * 4.0) as usize], // ties, signed zeros
                            2 => (u * 3.0) as u32 as f32 * 0.5,              // few values
                            _ => [3.0, 3.0, 3.0, 7.5][(u * 4.0) as usize],   // IQR often 0
                        }
                    })
                    .collect();
                let expected = sorted_inverse_spread(&values);
                let got = inverse_spread(values.clone(), 0);
                assert_eq!(
                    got.to_bits(),
                    expected.to_bits(),
                    "m {m}, kind {kind}: {values:?}"
                );
            }
        }
    }
}
