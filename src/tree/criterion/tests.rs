//! The criteria's invariants, checked for every criterion ([`check_criterion`]), and each
//! criterion's values on hand-made nodes.

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// Node statistics of rows `rows` (all weight `w[s]`).
fn stats<C: Criterion>(c: &C, k: usize, rows: &[usize], w: &[f64]) -> (Vec<f64>, f64) {
    let mut sums = vec![0.0; c.stat_len(k)];
    let mut total = 0.0;
    for &s in rows {
        c.add_sample(&mut sums, s, w[s]);
        total += w[s];
    }
    (sums, total)
}

/// Checks the criterion's invariants on every split of `0..n` in order: the running
/// scan, the one-shot split proxy and the node proxies agree, and the proxy gain is the
/// weighted impurity decrease at every position.
fn check_criterion<C: Criterion>(c: C, k: usize, n: usize, w: &[f64]) {
    check_gain(c, k, n, w, true, |(l, r, total), (w_l, w_r, w_node)| {
        w_node * c.impurity(total, w_node) - w_l * c.impurity(l, w_l) - w_r * c.impurity(r, w_r)
    });
}

/// [`check_criterion`] with the improvement `want` expects of a split (from the left and
/// right children's statistics and the node's, and their weights); `separable`: the proxy
/// is the sum of the children's node proxies.
fn check_gain<C: Criterion>(
    c: C,
    k: usize,
    n: usize,
    w: &[f64],
    separable: bool,
    mut want: impl FnMut((&[f64], &[f64], &[f64]), (f64, f64, f64)) -> f64,
) {
    let rows: Vec<usize> = (0..n).collect();
    let (total, w_node) = stats(&c, k, &rows, w);
    let parent = c.node_proxy(&total, w_node);
    let (mut left, mut right) = (vec![0.0; total.len()], vec![0.0; total.len()]);
    let mut scan = c.scan(&total, &mut left, &mut right);
    let pairs: Vec<(f32, u32)> = (0..n as u32).map(|i| (i as f32, i)).collect();
    scan.prepare(&pairs, RowWeights::Values(w), &[]);
    let mut w_l = 0.0;
    for i in 0..n - 1 {
        scan.move_left(i, w[i]);
        w_l += w[i];
        let w_r = w_node - w_l;
        let (l, _) = stats(&c, k, &rows[..=i], w);
        let (r, _) = stats(&c, k, &rows[i + 1..], w);
        let running = scan.proxy(w_l, w_r);
        let one_shot = c.split_proxy(&l, &total, w_l, w_r);
        if running == f64::NEG_INFINITY {
            // a refused split (Poisson: a child with zero sum) is refused both ways
            assert_eq!(one_shot, running);
            continue;
        }
        assert!(close(running, one_shot), "{running} vs {one_shot}");
        if separable {
            let by_children = c.node_proxy(&l, w_l) + c.node_proxy(&r, w_r);
            assert!(close(running, by_children), "{running} vs {by_children}");
        }
        let gain = want((&l, &r, &total), (w_l, w_r, w_node));
        assert!(
            close(running - parent, gain),
            "proxy gain {} vs {gain}",
            running - parent
        );
    }
}

#[test]
fn gini_proxy_gain_is_the_impurity_decrease() {
    let classes = [0, 1, 1, 2, 0, 2, 2, 1, 0, 0];
    let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 0.25, 1.0, 2.0, 1.0];
    check_criterion(Gini::new(&classes, 1), 3, 10, &w);
}

#[test]
fn entropy_proxy_gain_is_the_impurity_decrease() {
    let classes = [1, 1, 0, 0, 1, 0, 1, 1];
    let w = [1.0, 1.0, 2.0, 0.5, 1.0, 1.0, 3.0, 1.0];
    check_criterion(Entropy::new(&classes, 1), 2, 8, &w);
}

#[test]
fn squared_error_proxy_gain_is_the_impurity_decrease() {
    let y = [0.5, -1.0, 2.0, 3.5, 0.0, 1.0, -2.5, 4.0];
    let w = [1.0, 2.0, 1.0, 0.5, 1.0, 1.5, 1.0, 1.0];
    check_criterion(SquaredError { y: &y }, 1, 8, &w);
}

#[test]
fn multi_output_criteria_proxy_gain_is_the_impurity_decrease() {
    // two outputs of 3 and 2 classes: slots 0..3 and 3..5
    let slots = [0, 3, 1, 4, 1, 3, 2, 4, 0, 4, 2, 3, 0, 3];
    let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 0.25];
    check_criterion(MultiGini::new(&slots, 2), 5, 7, &w);
    check_criterion(MultiEntropy::new(&slots, 2), 5, 7, &w);
    let y = [
        0.5, 1.0, -1.0, 2.0, 2.0, 0.0, 3.5, -1.0, 0.0, 4.0, 1.0, 1.0, -2.5, 0.5,
    ];
    check_criterion(MultiSquaredError { y: &y, k: 2 }, 2, 7, &w);
    let counts = [
        0.0, 1.0, 2.0, 0.0, 3.0, 1.0, 1.0, 5.0, 0.0, 2.0, 4.0, 1.0, 2.0, 2.0,
    ];
    check_criterion(Poisson { y: &counts, k: 2 }, 2, 7, &w);
    check_criterion(
        Poisson {
            y: &counts[..7],
            k: 1,
        },
        1,
        7,
        &w,
    );
}

#[test]
fn multi_output_impurity_is_the_mean_over_outputs() {
    // output 0 classes [0, 1], output 1 classes [0, 0]: Gini 0.5 and 0
    let slots = [0, 2, 1, 2];
    let g = MultiGini::new(&slots, 2);
    let (sums, total) = stats(&g, 3, &[0, 1], &[1.0, 1.0]);
    assert!(close(g.impurity(&sums, total), 0.25));
    let mut v = Vec::new();
    g.push_value(&sums, total, &mut v);
    assert_eq!(v, vec![0.5, 0.5, 1.0]);
    let y = [1.0, 10.0, 3.0, 10.0];
    let se = MultiSquaredError { y: &y, k: 2 };
    let (sums, total) = stats(&se, 2, &[0, 1], &[1.0, 1.0]);
    assert!(close(se.impurity(&sums, total), 0.5)); // variances 1 and 0
}

/// Weighted absolute deviation around the best constant, by brute force over the
/// targets (the minimum of a piecewise-linear convex function lies at a target).
fn brute_deviation(y: &[f64], w: &[f64]) -> f64 {
    y.iter()
        .map(|&m| y.iter().zip(w).map(|(v, w)| w * (v - m).abs()).sum::<f64>())
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn absolute_error_scan_matches_brute_force_and_median_matches_scikit_learn() {
    let y = [3.0, -1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0];
    let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 0.25, 1.0, 2.0, 1.0];
    let c = AbsoluteError { y: &y, k: 1 };
    let n = y.len();
    let rows: Vec<u32> = (0..n as u32).collect();
    let mut sums = vec![0.0; c.stat_len(1)];
    rows.iter()
        .for_each(|&s| c.add_sample(&mut sums, s as usize, w[s as usize]));
    c.finish_node(&mut sums, &rows, RowWeights::Values(&w));
    let w_node: f64 = w.iter().sum();
    assert!(close(sums[1], brute_deviation(&y, &w)));
    assert!(close(
        c.impurity(&sums, w_node) * w_node,
        brute_deviation(&y, &w)
    ));
    let (mut l, mut r) = (vec![0.0; 3], vec![0.0; 3]);
    let mut scan = c.scan(&sums, &mut l, &mut r);
    let pairs: Vec<(f32, u32)> = rows.iter().map(|&i| (i as f32, i)).collect();
    scan.prepare(&pairs, RowWeights::Values(&w), &[]);
    let mut w_l = 0.0;
    for i in 0..n - 1 {
        scan.move_left(i, w[i]);
        w_l += w[i];
        let want = brute_deviation(&y[..=i], &w[..=i]) + brute_deviation(&y[i + 1..], &w[i + 1..]);
        assert!(close(-scan.proxy(w_l, w_node - w_l), want), "at {i}");
    }
    // the same splits given by a threshold on the values (random thresholds)
    let vals: Vec<f32> = (0..n).map(|s| s as f32).collect();
    let mut w_l = 0.0;
    for i in 0..n - 1 {
        w_l += w[i];
        let want = brute_deviation(&y[..=i], &w[..=i]) + brute_deviation(&y[i + 1..], &w[i + 1..]);
        let split = RowSplit {
            rows: &rows,
            vals: &vals,
            threshold: i as f32,
            missing_left: false,
            weights: RowWeights::Values(&w),
        };
        let at = c.split_proxy_at(&[], &sums, (w_l, w_node - w_l), split);
        assert!(close(-at, want), "threshold at {i}");
    }
    // scikit-learn's weighted medians: 2.5 for [1, 2, 3, 10]; with weights [1, 1, 2, 1]
    // it is 3; with [1, 2, 2, 1] the weight below 2 is exactly half: (2 + 3) / 2
    let y = [1.0, 2.0, 3.0, 10.0];
    let c = AbsoluteError { y: &y, k: 1 };
    for (w, want) in [
        ([1.0, 1.0, 1.0, 1.0], 2.5),
        ([1.0, 1.0, 2.0, 1.0], 3.0),
        ([1.0, 2.0, 2.0, 1.0], 2.5),
    ] {
        let mut sums = vec![0.0; 3];
        c.finish_node(&mut sums, &[0, 1, 2, 3], RowWeights::Values(&w));
        let mut v = Vec::new();
        c.push_value(&sums, 4.0, &mut v);
        assert_eq!(v, vec![want]);
    }
}

#[test]
fn poisson_refuses_a_child_with_zero_sum() {
    let y = [0.0, 0.0, 1.0, 3.0];
    let c = Poisson { y: &y, k: 1 };
    let total = [4.0, 4.0, 3.0 * 3f64.ln()];
    assert_eq!(
        c.split_proxy(&[2.0, 0.0, 0.0], &total, 2.0, 2.0),
        f64::NEG_INFINITY
    );
    assert!(c
        .split_proxy(&[3.0, 1.0, 0.0], &total, 3.0, 1.0)
        .is_finite());
}

#[test]
fn criteria_value_a_node_as_its_distribution_or_mean() {
    let classes = [0, 2, 2, 1];
    let w = [1.0, 1.0, 2.0, 0.0];
    let g = Gini::new(&classes, 1);
    let (sums, total) = stats(&g, 3, &[0, 1, 2, 3], &w);
    let mut v = Vec::new();
    g.push_value(&sums, total, &mut v);
    assert_eq!(v, vec![0.25, 0.0, 0.75]);
    assert!(close(g.impurity(&sums, total), 1.0 - 0.0625 - 0.5625));
    let e = Entropy::new(&classes, 1);
    assert!(close(
        e.impurity(&sums, total),
        -(0.25f64 * 0.25f64.log2() + 0.75 * 0.75f64.log2())
    ));
    let y = [1.0, 3.0, 5.0];
    let se = SquaredError { y: &y };
    let (sums, total) = stats(&se, 1, &[0, 1, 2], &[1.0, 1.0, 2.0]);
    v.clear();
    se.push_value(&sums, total, &mut v);
    assert_eq!(v, vec![3.5]);
    // mean 3.5: (6.25 + 0.25 + 2 * 2.25) / 4
    assert!(close(se.impurity(&sums, total), 2.75));
}

#[test]
fn histogram_bins_move_like_their_rows() {
    // moving a bin's slots equals moving its rows one by one
    let classes = [0, 1, 1, 2, 0, 1];
    let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0];
    let c = Gini::new(&classes, 1);
    let (total, _) = stats(&c, 3, &[0, 1, 2, 3, 4, 5], &w);
    let mut bin = vec![0.0; c.bin_width(3)];
    for (s, &ws) in w.iter().enumerate().take(3) {
        let (at, f) = c.bin_slot(s);
        bin[at] += f * ws;
    }
    let (mut l1, mut r1, mut l2, mut r2) = (vec![0.0; 3], vec![0.0; 3], vec![0.0; 3], vec![0.0; 3]);
    let mut by_rows = c.scan(&total, &mut l1, &mut r1);
    (0..3).for_each(|s| by_rows.move_left(s, w[s]));
    let mut by_bin = c.scan(&total, &mut l2, &mut r2);
    by_bin.move_bin(&bin);
    assert!(close(by_rows.proxy(3.5, 5.0), by_bin.proxy(3.5, 5.0)));
    let y = [1.0, -2.0, 4.0];
    let se = SquaredError { y: &y };
    let (total, _) = stats(&se, 1, &[0, 1, 2], &[1.0, 2.0, 1.0]);
    let (mut l1, mut r1) = (vec![0.0; 3], vec![0.0; 3]);
    let mut by_rows = se.scan(&total, &mut l1, &mut r1);
    by_rows.move_left(0, 1.0);
    by_rows.move_left(1, 2.0);
    let mut bin = [0.0];
    for (s, w) in [(0, 1.0), (1, 2.0)] {
        let (at, f) = se.bin_slot(s);
        bin[at] += f * w;
    }
    let (mut l2, mut r2) = (vec![0.0; 3], vec![0.0; 3]);
    let mut by_bin = se.scan(&total, &mut l2, &mut r2);
    by_bin.move_bin(&bin);
    assert!(close(by_rows.proxy(3.0, 1.0), by_bin.proxy(3.0, 1.0)));
}

#[test]
fn absolute_error_scores_missing_rows_on_either_side_as_brute_force() {
    // rows 0..6 present (sorted by value = row), rows 6..9 missing
    let y = [3.0, -1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0];
    let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 0.25, 1.0, 2.0];
    let c = AbsoluteError { y: &y, k: 1 };
    let (m, missing) = (6usize, [6u32, 7, 8]);
    let pairs: Vec<(f32, u32)> = (0..m as u32).map(|i| (i as f32, i)).collect();
    let dev = |rows: &[usize]| {
        let ys: Vec<f64> = rows.iter().map(|&s| y[s]).collect();
        let ws: Vec<f64> = rows.iter().map(|&s| w[s]).collect();
        if rows.is_empty() {
            0.0
        } else {
            brute_deviation(&ys, &ws)
        }
    };
    let miss: Vec<usize> = missing.iter().map(|&s| s as usize).collect();
    let (mut l, mut r) = (vec![0.0; 3], vec![0.0; 3]);
    // missing rows right: every position, and the one after the last present row
    let mut scan = c.scan(&[], &mut l, &mut r);
    scan.prepare(&pairs, RowWeights::Values(&w), &missing);
    for (i, &wi) in w.iter().enumerate().take(m) {
        scan.move_left(i, wi);
        let right: Vec<usize> = (i + 1..m).chain(miss.iter().copied()).collect();
        let want = dev(&(0..=i).collect::<Vec<_>>()) + dev(&right);
        assert!(close(-scan.proxy(1.0, 1.0), want), "missing right, at {i}");
    }
    // missing rows left: they move before the scan starts
    let mut scan = c.scan(&[], &mut l, &mut r);
    for &s in &missing {
        scan.move_left(s as usize, w[s as usize]);
    }
    scan.prepare(&pairs, RowWeights::Values(&w), &[]);
    for (i, &wi) in w.iter().enumerate().take(m - 1) {
        scan.move_left(i, wi);
        let left: Vec<usize> = miss.iter().copied().chain(0..=i).collect();
        let want = dev(&left) + dev(&(i + 1..m).collect::<Vec<_>>());
        assert!(close(-scan.proxy(1.0, 1.0), want), "missing left, at {i}");
    }
    // the same splits given by a threshold (the random splitter), NaN for the missing rows
    let rows: Vec<u32> = (0..9).collect();
    let vals: Vec<f32> = (0..9)
        .map(|s| if s < m { s as f32 } else { f32::NAN })
        .collect();
    for missing_left in [false, true] {
        for i in 0..m - 1 {
            let split = RowSplit {
                rows: &rows,
                vals: &vals,
                threshold: i as f32 + 0.5,
                missing_left,
                weights: RowWeights::Values(&w),
            };
            let (mut left, mut right): (Vec<usize>, Vec<usize>) =
                ((0..=i).collect(), (i + 1..m).collect());
            if missing_left {
                left.extend(&miss);
            } else {
                right.extend(&miss);
            }
            let at = c.split_proxy_at(&[], &[], (1.0, 1.0), split);
            assert!(
                close(-at, dev(&left) + dev(&right)),
                "threshold after {i}, missing left {missing_left}"
            );
        }
    }
}

#[test]
fn friedman_score_is_the_impurity_decrease_of_one_output_and_friedmans_of_several() {
    let y = [0.5, -1.0, 2.0, 3.5, 0.0, 1.0, -2.5, 4.0];
    let w = [1.0, 2.0, 1.0, 0.5, 1.0, 1.5, 1.0, 1.0];
    let one = FriedmanMse {
        y: &y,
        row_sums: &y,
        k: 1,
    };
    // one output: w_l w_r (mean_l - mean_r)^2 / w is squared error's weighted decrease
    check_gain(one, 1, 8, &w, false, |(l, r, total), (w_l, w_r, w_node)| {
        let se = SquaredError { y: &y };
        w_node * se.impurity(total, w_node) - w_l * se.impurity(l, w_l) - w_r * se.impurity(r, w_r)
    });
    // two outputs: ((w_r S_l - w_l S_r) / 2)^2 / (w_l w_r w), S the children's target sums
    // over both outputs, computed here from the rows
    let y2 = [
        0.5, 1.0, -1.0, 2.0, 2.0, 0.0, 3.5, -1.0, 0.0, 4.0, 1.0, 1.0, -2.5, 0.5, 4.0, -3.0,
    ];
    let sums: Vec<f64> = y2.chunks(2).map(|r| r[0] + r[1]).collect();
    let two = FriedmanMse {
        y: &y2,
        row_sums: &sums,
        k: 2,
    };
    let mut at = 0;
    check_gain(two, 2, 8, &w, false, |_, (w_l, w_r, w_node)| {
        at += 1; // the split after row at - 1
        let s = |rows: std::ops::Range<usize>| -> f64 {
            rows.map(|i| w[i] * (y2[2 * i] + y2[2 * i + 1])).sum()
        };
        let d = (w_r * s(0..at) - w_l * s(at..8)) / 2.0;
        d * d / (w_l * w_r * w_node)
    });
}

#[test]
fn friedman_score_on_a_hand_made_node() {
    // one output, y = [1, 2, 4, 7] with weights [1, 1, 2, 1], split after row 1: left mean
    // 1.5 (w 2), right mean 5 (w 3): 2 * 3 * 3.5^2 / 5 = 14.7
    let y = [1.0, 2.0, 4.0, 7.0];
    let w = [1.0, 1.0, 2.0, 1.0];
    let c = FriedmanMse {
        y: &y,
        row_sums: &y,
        k: 1,
    };
    let (total, w_node) = stats(&c, 1, &[0, 1, 2, 3], &w);
    let (left, _) = stats(&c, 1, &[0, 1], &w);
    let (mut l, mut r) = (vec![0.0; 3], vec![0.0; 3]);
    let mut scan = c.scan(&total, &mut l, &mut r);
    scan.move_left(0, 1.0);
    scan.move_left(1, 1.0);
    assert!(close(scan.proxy(2.0, 3.0), 14.7));
    assert!(close(c.split_proxy(&left, &total, 2.0, 3.0), 14.7));
    assert_eq!(c.node_proxy(&total, w_node), 0.0);
    // its impurity and value are squared error's, to the bit
    let se = SquaredError { y: &y };
    assert_eq!(c.impurity(&total, w_node), se.impurity(&total, w_node));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    c.push_value(&total, w_node, &mut a);
    se.push_value(&total, w_node, &mut b);
    assert_eq!(a, b);
    // two outputs, rows [1, 0], [2, 4], [4, 1], [7, 3]: S_l = 1 + 6 = 7, S_r = 2 * 5 + 10
    // = 20; ((3 * 7 - 2 * 20) / 2)^2 / (2 * 3 * 5) = 90.25 / 30
    let y2 = [1.0, 0.0, 2.0, 4.0, 4.0, 1.0, 7.0, 3.0];
    let sums = [1.0, 6.0, 5.0, 10.0];
    let c = FriedmanMse {
        y: &y2,
        row_sums: &sums,
        k: 2,
    };
    let (total, _) = stats(&c, 2, &[0, 1, 2, 3], &w);
    let (left, _) = stats(&c, 2, &[0, 1], &w);
    let (mut l, mut r) = (vec![0.0; 5], vec![0.0; 5]);
    let mut scan = c.scan(&total, &mut l, &mut r);
    scan.move_left(0, 1.0);
    scan.move_left(1, 1.0);
    assert!(close(scan.proxy(2.0, 3.0), 90.25 / 30.0));
    assert!(close(c.split_proxy(&left, &total, 2.0, 3.0), 90.25 / 30.0));
    // a histogram bin holds a row's sum over the outputs
    let mut bin = [0.0];
    for (s, &ws) in w.iter().enumerate().take(2) {
        let (at, f) = c.bin_slot(s);
        bin[at] += f * ws;
    }
    let mut by_bin = c.scan(&total, &mut l, &mut r);
    by_bin.move_bin(&bin);
    assert!(close(by_bin.proxy(2.0, 3.0), 90.25 / 30.0));
}

#[test]
fn whole_weights_are_the_ones_fract_calls_whole() {
    let edges = [
        0.0,
        -0.0,
        1.0,
        2.5,
        -1.0,
        0.5,
        1e-300,
        3.0e15,
        4503599627370495.5,
        9.007e15,
        1.8e19,
        1.9e19,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        u32::MAX as f64,
        u32::MAX as f64 + 0.5,
    ];
    for w in edges {
        let by_fract = w.fract() == 0.0 && (0.0..18446744073709551616.0).contains(&w);
        assert_eq!(super::whole_weight(w), by_fract, "{w}");
    }
}
