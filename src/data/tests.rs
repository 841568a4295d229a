//! Tests of the training data: storage, gathers, statistics, weights.

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
    assert!(matches!(xf.store, Store::Strided { row_stride: 1, .. }));
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
    assert!(check_target_scale(&y, 2.0).is_err());
    assert!(check_target_scale(&Targets::Values(vec![1e100, 1.0]), 2.0).is_ok());
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

#[test]
fn present_classes_are_counted_once_each() {
    assert_eq!(Targets::Classes(vec![2, 0, 2, 5, 0]).n_present(), 3);
    assert_eq!(Targets::Classes(vec![]).n_present(), 0);
    let multi = Targets::MultiClasses {
        slots: vec![0, 3, 1, 3, 0, 4],
        k: 2,
    };
    assert_eq!(multi.n_present(), 4);
    assert_eq!(Targets::Values(vec![1.0, 2.0]).n_present(), 1);
    // codes spread far beyond the rows (a huge declared class count) are counted too
    assert_eq!(Targets::Classes(vec![4_000_000_000, 7, 7]).n_present(), 2);
}
