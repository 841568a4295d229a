//! Rotations computed the same way on every machine: the orthogonal matrices of the
//! rotation ensembles ([`orthogonal_factor`]) and X's products with them ([`rotate`],
//! [`rotate_csr`]).
//!
//! A BLAS library picks its kernels by processor, and kernels that sum in another order
//! round otherwise: with numpy's QR and matrix product, the rotations and the rotated data,
//! and so every tree of a rotation ensemble, depended on the processor the fit ran on (the
//! same seed grew other trees on an AMD and an Intel machine, or on a Dask worker of another
//! kind). Here every sum runs in one fixed order, ascending index, one f64 product and one
//! f64 addition a term (never fused), so the same inputs give the same bits anywhere.

use ndarray::{Array2, ArrayView1, ArrayView2, ShapeBuilder};
use std::ops::Range;

/// The orthogonal factor Q of the QR decomposition of the square matrix `a`, each column's
/// sign chosen so that R's diagonal is positive (0 counts as positive): for a standard
/// Gaussian `a`, Q is distributed uniformly (Haar) on the orthogonal group (Mezzadri, 2007).
/// Householder reflections, applied in a fixed order.
///
/// # Panics
/// When `a` is not square.
pub fn orthogonal_factor(a: ArrayView2<'_, f64>) -> Array2<f64> {
    let p = a.nrows();
    assert_eq!(a.ncols(), p, "a square matrix");
    let mut r = a.to_owned();
    let mut q = Array2::<f64>::eye(p);
    let mut v = vec![0.0f64; p];
    for j in 0..p {
        if crate::cancel::requested() {
            break; // cancelled: the caller returns the cancellation, not this matrix
        }
        // the reflection that maps column j's entries from row j down onto row j
        let mut norm2 = 0.0;
        for i in j..p {
            norm2 += r[[i, j]] * r[[i, j]];
        }
        let norm = norm2.sqrt();
        if norm == 0.0 {
            continue;
        }
        let alpha = if r[[j, j]] > 0.0 { -norm } else { norm };
        let mut v2 = 0.0;
        for i in j..p {
            v[i] = r[[i, j]] - if i == j { alpha } else { 0.0 };
            v2 += v[i] * v[i];
        }
        if v2 == 0.0 {
            continue;
        }
        let scale = 2.0 / v2;
        // R <- H R on rows j.., columns j..
        for c in j..p {
            let mut dot = 0.0;
            for i in j..p {
                dot += v[i] * r[[i, c]];
            }
            let f = dot * scale;
            for i in j..p {
                r[[i, c]] -= f * v[i];
            }
        }
        // Q <- Q H on columns j..
        for row in 0..p {
            let mut dot = 0.0;
            for i in j..p {
                dot += q[[row, i]] * v[i];
            }
            let f = dot * scale;
            for i in j..p {
                q[[row, i]] -= f * v[i];
            }
        }
    }
    for j in 0..p {
        if r[[j, j]] < 0.0 {
            q.column_mut(j).mapv_inplace(|x| -x);
        }
    }
    q
}

/// `x @ q` (n × p times p × m) as f32, in column-major order when `fortran`: each value an
/// f64 sum over ascending k. A term whose x is NaN (missing) is left out, and makes the value
/// NaN when its weight is not 0: a rotated coordinate is missing where a feature with weight
/// in it is (the identity keeps each feature's own missingness).
///
/// # Panics
/// When `x` has not `q`'s number of rows as columns.
pub fn rotate(x: ArrayView2<'_, f64>, q: ArrayView2<'_, f64>, fortran: bool) -> Array2<f32> {
    rotate_in(x, q, fortran, None)
}

/// [`rotate`] on `threads` threads, the same values (each one row's sums over one block of
/// 16 columns of q, whichever thread computes it): column-major output in groups of those
/// blocks, row-major in groups of rows, each group a contiguous part of the result. One
/// thread computes in the calling thread.
///
/// # Errors
/// [`Error::Cancelled`](crate::Error::Cancelled) when the call's token is cancelled, and
/// [`Error::Internal`](crate::Error::Internal) when the operating system refuses the threads.
///
/// # Panics
/// When `x` has not `q`'s number of rows as columns.
pub fn rotate_on(
    x: ArrayView2<'_, f64>,
    q: ArrayView2<'_, f64>,
    fortran: bool,
    threads: usize,
) -> crate::Result<Array2<f32>> {
    let pool = match threads {
        0 | 1 => None,
        _ => Some(crate::threads::thread_pool(threads)?),
    };
    let rotated = rotate_in(x, q, fortran, pool.as_deref());
    crate::cancel::check()?;
    Ok(rotated)
}

/// [`rotate`], on `pool`'s threads when given ([`rotate_on`]).
fn rotate_in(
    x: ArrayView2<'_, f64>,
    q: ArrayView2<'_, f64>,
    fortran: bool,
    pool: Option<&rayon::ThreadPool>,
) -> Array2<f32> {
    use rayon::prelude::*;
    assert_eq!(x.ncols(), q.nrows(), "x @ q: x has q's rows as columns");
    let (n, p, m) = (x.nrows(), x.ncols(), q.ncols());
    // q's columns in blocks of ROTATE_LANES (the last padded with zeros), block b's row k
    // at b * p + k: a row's sums for one block are held in registers, and every value still
    // sums its terms over ascending k, one product and one addition a term
    let lanes = q_lanes(q);
    // X by row as one slice (a copy only when it is not row-major already)
    let x = x.as_standard_layout();
    let x = x.as_slice().expect("a standard-layout array is one slice");
    // group g: parts [g * parts / groups, (g + 1) * parts / groups), as blocks of columns
    // (column-major) or tiles of rows
    let parts = if fortran {
        m.div_ceil(ROTATE_LANES)
    } else {
        n.div_ceil(FORTRAN_TILE)
    };
    let threads = pool.map_or(1, rayon::ThreadPool::current_num_threads);
    let groups = threads.min(parts).max(1);
    let bounds = |g: usize, unit: usize, len: usize| (g * parts / groups * unit).min(len);
    let spans: Vec<_> = (0..groups)
        .map(|g| match fortran {
            true => (
                0..n,
                bounds(g, ROTATE_LANES, m)..bounds(g + 1, ROTATE_LANES, m),
            ),
            false => (
                bounds(g, FORTRAN_TILE, n)..bounds(g + 1, FORTRAN_TILE, n),
                0..m,
            ),
        })
        .collect();
    let mut out = vec![0.0f32; n * m];
    let mut parts_out = Vec::with_capacity(groups);
    let mut rest = &mut out[..];
    for (rows, cols) in &spans {
        let (part, tail) = rest.split_at_mut(rows.len() * cols.len());
        parts_out.push(part);
        rest = tail;
    }
    match pool {
        Some(pool) if groups > 1 => {
            let carried = crate::cancel::carry();
            crate::cancel::install(pool, || {
                spans
                    .into_par_iter()
                    .zip(parts_out)
                    .with_min_len(1)
                    .for_each(|(span, part)| {
                        carried.run(|| {
                            crate::alloc::prefault(part);
                            rotate_block((x, p), &lanes, span, fortran, part);
                        });
                    });
            });
        }
        _ => {
            for (span, part) in spans.into_iter().zip(parts_out) {
                crate::alloc::prefault(part);
                rotate_block((x, p), &lanes, span, fortran, part);
            }
        }
    }
    to_matrix(out, n, m, fortran)
}

/// An `n` × `m` matrix of `values` (column-major when `fortran`).
fn to_matrix(values: Vec<f32>, n: usize, m: usize, fortran: bool) -> Array2<f32> {
    if fortran {
        Array2::from_shape_vec((n, m).f(), values).expect("n * m values")
    } else {
        Array2::from_shape_vec((n, m), values).expect("n * m values")
    }
}

/// The values of [`rotate`] at rows `rows` and columns `cols` (which start on a block of
/// [`ROTATE_LANES`] and end on one or at q's last column) into `out` (column-major when
/// `fortran`): `x` by row as one slice of rows of `p`, q's columns as [`q_lanes`] lays
/// them out.
fn rotate_block(
    (x, p): (&[f64], usize),
    lanes: &[[f64; ROTATE_LANES]],
    (rows, cols): (Range<usize>, Range<usize>),
    fortran: bool,
    out: &mut [f32],
) {
    let lanes = &lanes[cols.start / ROTATE_LANES * p..cols.end.div_ceil(ROTATE_LANES) * p];
    let x = &x[rows.start * p..rows.end * p];
    let (n, m) = (rows.len(), cols.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, checked above
        return unsafe { rotate_rows_avx2((x, p), lanes, (n, m), fortran, out) };
    }
    rotate_rows((x, p), lanes, (n, m), fortran, out);
}

/// [`rotate_block`]'s values: the `n` rows of `x` (rows of `p`) times the `m` columns of q
/// in `lanes`, into `out`. Column-major output goes a tile of [`FORTRAN_TILE`] rows at a
/// time, and within it one block of [`ROTATE_LANES`] columns at a time: the tile's values
/// of a block (1 KiB) are computed, then written as one cache line of each of its columns.
#[inline(always)]
fn rotate_rows(
    (x, p): (&[f64], usize),
    lanes: &[[f64; ROTATE_LANES]],
    (n, m): (usize, usize),
    fortran: bool,
    out: &mut [f32],
) {
    debug_assert_eq!(out.len(), n * m);
    if !fortran {
        // (rows_into's row-major loop, written out: through its closure the AVX2 build
        // lost its kernel, a fifth slower)
        let mut row = RowTerms::new(p);
        for (i, out) in out.chunks_exact_mut(m.max(1)).enumerate() {
            if i % CANCEL_ROWS == 0 && crate::cancel::requested() {
                break; // cancelled: the caller returns the cancellation, not these values
            }
            row.read(&x[i * p..(i + 1) * p]);
            rotate_row(&row.values, &row.missing, lanes, out);
        }
        return;
    }
    let mut tile: Vec<RowTerms> = (0..FORTRAN_TILE).map(|_| RowTerms::new(p)).collect();
    let mut values = [[0.0f32; ROTATE_LANES]; FORTRAN_TILE];
    for start in (0..n).step_by(FORTRAN_TILE) {
        if start % CANCEL_ROWS == 0 && crate::cancel::requested() {
            break; // cancelled: the caller returns the cancellation, not these values
        }
        let rows = FORTRAN_TILE.min(n - start);
        for (t, row) in tile.iter_mut().take(rows).enumerate() {
            row.read(&x[(start + t) * p..(start + t + 1) * p]);
        }
        for (b, block) in lanes.chunks_exact(p.max(1)).enumerate() {
            let first = b * ROTATE_LANES;
            let width = ROTATE_LANES.min(m - first);
            for (row, v) in tile.iter().zip(values.iter_mut()).take(rows) {
                rotate_row(&row.values, &row.missing, block, &mut v[..width]);
            }
            for c in 0..width {
                let column = &mut out[(first + c) * n + start..][..rows];
                for (o, v) in column.iter_mut().zip(&values) {
                    *o = v[c];
                }
            }
        }
    }
}

/// [`rotate_rows`] compiled for AVX2: four of a block's sums to an instruction instead of
/// two, each still one product and one addition a term (AVX2 has no fused multiply-add),
/// so the same values.
///
/// # Safety
/// The processor must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rotate_rows_avx2(
    x: (&[f64], usize),
    lanes: &[[f64; ROTATE_LANES]],
    shape: (usize, usize),
    fortran: bool,
    out: &mut [f32],
) {
    rotate_rows(x, lanes, shape, fortran, out)
}

/// One row of X as [`rotate_row`] reads it: its values with NaN as 0, and its missing
/// features.
struct RowTerms {
    values: Vec<f64>,
    missing: Vec<usize>,
}

impl RowTerms {
    fn new(p: usize) -> Self {
        RowTerms {
            values: vec![0.0; p],
            missing: Vec::new(),
        }
    }

    #[inline(always)]
    fn read(&mut self, xi: &[f64]) {
        let mut any_missing = false;
        for (r, &v) in self.values.iter_mut().zip(xi) {
            let nan = v.is_nan();
            any_missing |= nan;
            *r = if nan { 0.0 } else { v };
        }
        self.missing.clear();
        if any_missing {
            self.missing
                .extend((0..xi.len()).filter(|&k| xi[k].is_nan()));
        }
    }
}

/// q's columns in blocks of [`ROTATE_LANES`], the last padded with zeros: block b's row k
/// at `b * p + k`.
fn q_lanes(q: ArrayView2<'_, f64>) -> Vec<[f64; ROTATE_LANES]> {
    let (p, m) = q.dim();
    let mut lanes = vec![[0.0f64; ROTATE_LANES]; m.div_ceil(ROTATE_LANES) * p];
    for ((k, c), &w) in q.indexed_iter() {
        lanes[c / ROTATE_LANES * p + k][c % ROTATE_LANES] = w;
    }
    lanes
}

/// One row's values of [`rotate`]: `row` (its missing values as 0, their features in
/// `missing`) times q's columns laid out in blocks of [`ROTATE_LANES`] (`lanes`, block b's
/// row k at `b * p + k`), into `out`.
#[inline(always)]
fn rotate_row(row: &[f64], missing: &[usize], lanes: &[[f64; ROTATE_LANES]], out: &mut [f32]) {
    let p = row.len();
    for (out, lanes) in out
        .chunks_mut(ROTATE_LANES)
        .zip(lanes.chunks_exact(p.max(1)))
    {
        let mut acc = [0.0f64; ROTATE_LANES];
        for (&v, lane) in row.iter().zip(lanes) {
            for (a, &w) in acc.iter_mut().zip(lane) {
                *a += v * w;
            }
        }
        for (o, &a) in out.iter_mut().zip(&acc) {
            *o = a as f32;
        }
        // a missing term with weight makes the value missing
        for &k in missing {
            for (o, &w) in out.iter_mut().zip(&lanes[k]) {
                if w != 0.0 {
                    *o = f32::NAN;
                }
            }
        }
    }
}

/// Columns of q a [`rotate`] pass computes at once (their sums fit in registers).
const ROTATE_LANES: usize = 16;

/// Rows of X between two checks for cancellation in [`rotate`] and [`rotate_csr`] (a
/// multiple of [`FORTRAN_TILE`]).
const CANCEL_ROWS: usize = 1024;

/// Rows [`rows_into`] computes before writing them out column by column (16 f32: a cache
/// line of each column).
const FORTRAN_TILE: usize = 16;

/// `(S + 1 offset) @ q` as f32 for S in CSR (`indptr`, `indices`, `data`; `n_rows` × p) and
/// `offset` a row added to every row of S: each row's stored entries summed in their order,
/// plus `offset @ q` (summed over ascending k); column-major when `fortran`. S holds no NaN.
///
/// # Panics
/// When the arrays do not describe an `n_rows` × p matrix, p = `offset.len()` = q's rows.
pub fn rotate_csr(
    (n_rows, indptr, indices, data): (usize, &[i64], &[i64], &[f64]),
    offset: ArrayView1<'_, f64>,
    q: ArrayView2<'_, f64>,
    fortran: bool,
) -> Array2<f32> {
    let (p, m) = q.dim();
    assert!(offset.len() == p && indptr.len() == n_rows + 1 && indices.len() == data.len());
    let q = q.as_standard_layout();
    let q = q.as_slice().unwrap_or(&[]);
    let mut shift = vec![0.0f64; m];
    for (&o, w) in offset.iter().zip(q.chunks_exact(m.max(1))) {
        shift.iter_mut().zip(w).for_each(|(s, &w)| *s += o * w);
    }
    let mut acc = vec![0.0f64; m];
    let mut rotated = vec![0.0f32; n_rows * m];
    rows_into(&mut rotated, n_rows, m, fortran, |i, out| {
        acc.fill(0.0);
        for e in indptr[i] as usize..indptr[i + 1] as usize {
            let (k, v) = (indices[e] as usize, data[e]);
            let w = &q[k * m..(k + 1) * m];
            acc.iter_mut().zip(w).for_each(|(a, &w)| *a += v * w);
        }
        for ((o, &a), &s) in out.iter_mut().zip(&acc).zip(&shift) {
            *o = (a + s) as f32;
        }
    });
    to_matrix(rotated, n_rows, m, fortran)
}

/// Fills `out`, an `n` × `m` f32 matrix (column-major when `fortran`), row `i` as
/// `row(i, out)` writes it.
fn rows_into(
    out: &mut [f32],
    n: usize,
    m: usize,
    fortran: bool,
    mut row: impl FnMut(usize, &mut [f32]),
) {
    debug_assert_eq!(out.len(), n * m);
    if m == 0 || n == 0 {
        return;
    }
    if fortran {
        // rows a tile at a time, each column's values of the tile then written together
        // (a cache line of f32) instead of one value a column and row
        let mut tile = vec![0.0f32; FORTRAN_TILE * m];
        for start in (0..n).step_by(FORTRAN_TILE) {
            if start % CANCEL_ROWS == 0 && crate::cancel::requested() {
                break; // cancelled: the caller returns the cancellation, not these values
            }
            let rows = FORTRAN_TILE.min(n - start);
            for (t, buf) in tile.chunks_exact_mut(m).take(rows).enumerate() {
                row(start + t, buf);
            }
            for (c, column) in out.chunks_exact_mut(n).enumerate() {
                let column = &mut column[start..start + rows];
                for (t, v) in column.iter_mut().enumerate() {
                    *v = tile[t * m + c];
                }
            }
        }
    } else {
        for (i, chunk) in out.chunks_exact_mut(m).enumerate() {
            if i % CANCEL_ROWS == 0 && crate::cancel::requested() {
                break; // cancelled: the caller returns the cancellation, not these values
            }
            row(i, chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn gaussian(p: usize, seed: u64) -> Array2<f64> {
        let mut rng = Rng::from_seed(seed);
        Array2::from_shape_fn((p, p), |_| {
            // Box-Muller on the crate's uniform draws
            let (u, v) = (rng.unit().max(1e-300), rng.unit());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        })
    }

    #[test]
    fn orthogonal_factor_is_orthogonal_with_a_positive_r_diagonal() {
        for (p, seed) in [(1, 1), (2, 2), (7, 3), (24, 4), (60, 5)] {
            let a = gaussian(p, seed);
            let q = orthogonal_factor(a.view());
            let eye = q.t().dot(&q);
            for i in 0..p {
                for j in 0..p {
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((eye[[i, j]] - want).abs() < 1e-12, "p={p}: Q'Q[{i},{j}]");
                }
            }
            // R = Q'A is upper triangular with a positive diagonal
            let r = q.t().dot(&a);
            for i in 0..p {
                assert!(r[[i, i]] > 0.0, "p={p}: R[{i},{i}] = {}", r[[i, i]]);
                for j in 0..i {
                    assert!(r[[i, j]].abs() < 1e-10, "p={p}: R[{i},{j}] = {}", r[[i, j]]);
                }
            }
        }
        // the identity is its own factor
        assert_eq!(
            orthogonal_factor(Array2::eye(4).view()),
            Array2::<f64>::eye(4)
        );
    }

    #[test]
    fn rotations_sum_in_ascending_order_and_keep_missing_values() {
        let x = ndarray::array![[1.0, f64::NAN, 3.0], [0.5, -2.0, 1e-3]];
        let q = ndarray::array![[1.0, 0.0], [0.0, 2.0], [0.25, -1.0]];
        for fortran in [false, true] {
            let r = rotate(x.view(), q.view(), fortran);
            assert_eq!(r.is_standard_layout(), !fortran);
            // row 0: feature 1 is missing and weighs on column 1 only
            assert_eq!(r[[0, 0]], (1.0f64 + 3.0 * 0.25) as f32);
            assert!(r[[0, 1]].is_nan());
            let want1 = ((0.5f64 * q[[0, 1]] + -2.0 * q[[1, 1]]) + 1e-3 * q[[2, 1]]) as f32;
            assert_eq!(r[[1, 1]], want1);
        }
        // the same products from CSR with an offset
        let dense = ndarray::array![[0.0, 2.0, 0.0], [1.5, 0.0, -1.0]];
        let offset = ndarray::array![0.5, -1.0, 2.0];
        let (indptr, indices, data) = (vec![0i64, 1, 3], vec![1i64, 0, 2], vec![2.0, 1.5, -1.0]);
        let sparse = rotate_csr((2, &indptr, &indices, &data), offset.view(), q.view(), true);
        let shifted = &dense + &offset;
        let direct = rotate(shifted.view(), q.view(), true);
        for (a, b) in sparse.iter().zip(direct.iter()) {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{a} {b}");
        }
    }

    #[test]
    fn rotated_rows_are_the_ascending_sums_in_every_build() {
        // 37 columns: two full blocks of lanes and a padded one; 41 rows: two full tiles
        // of a column-major result and part of one; NaN in some features, some weights 0
        // (a missing feature without weight leaves the value alone)
        let (n, p, m) = (41, 21, 37);
        let mut rng = Rng::from_seed(7);
        let x = Array2::from_shape_fn((n, p), |(i, k)| {
            if (i + 2 * k) % 11 == 0 {
                f64::NAN
            } else {
                rng.unit() * 8.0 - 4.0
            }
        });
        let q = Array2::from_shape_fn((p, m), |(k, c)| {
            if (k * 3 + c) % 7 == 0 {
                0.0
            } else {
                rng.unit() - 0.5
            }
        });
        let want = Array2::from_shape_fn((n, m), |(i, c)| {
            let (mut sum, mut missing) = (0.0f64, false);
            for k in 0..p {
                if x[[i, k]].is_nan() {
                    missing |= q[[k, c]] != 0.0;
                } else {
                    sum += x[[i, k]] * q[[k, c]];
                }
            }
            if missing {
                f32::NAN
            } else {
                sum as f32
            }
        });
        let same = |got: &[f32], want: &[f32]| {
            for (g, w) in got.iter().zip(want) {
                assert!(g == w || (g.is_nan() && w.is_nan()), "{g} against {w}");
            }
        };
        // X by row, and by column (read through a row-major copy)
        let x_by_column = x.t().to_owned().reversed_axes();
        for x in [x.view(), x_by_column.view()] {
            for fortran in [false, true] {
                let got = rotate(x, q.view(), fortran);
                for i in 0..n {
                    same(&got.row(i).to_vec(), &want.row(i).to_vec());
                }
                // on threads: groups of lane blocks (column-major) or of row tiles, the
                // same bits in the same layout
                let bits = |a: &Array2<f32>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                for threads in [2, 3, 5] {
                    let on = rotate_on(x, q.view(), fortran, threads).expect("not cancelled");
                    assert_eq!(on.is_standard_layout(), !fortran);
                    assert_eq!(
                        bits(&on),
                        bits(&got),
                        "{threads} threads, fortran {fortran}"
                    );
                }
            }
        }
        // each build of the kernel on its own (an AVX2 machine runs only one in rotate)
        let lanes = q_lanes(q.view());
        let x_rows = x.as_standard_layout();
        let x_rows = x_rows.as_slice().expect("standard layout");
        let bits_of = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for fortran in [false, true] {
            // want's values in the layout's order
            let want: Vec<u32> = match fortran {
                true => want.t().iter().map(|v| v.to_bits()).collect(),
                false => want.iter().map(|v| v.to_bits()).collect(),
            };
            let mut got = vec![0.0f32; n * m];
            rotate_rows((x_rows, p), &lanes, (n, m), fortran, &mut got);
            assert_eq!(bits_of(&got), want, "portable build, fortran {fortran}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                let mut got = vec![0.0f32; n * m];
                // SAFETY: the processor has AVX2
                unsafe { rotate_rows_avx2((x_rows, p), &lanes, (n, m), fortran, &mut got) };
                assert_eq!(bits_of(&got), want, "AVX2 build, fortran {fortran}");
            }
        }
    }
}
