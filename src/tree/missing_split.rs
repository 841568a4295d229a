//! The missing-value part of the split search ([`super::parts`]), for a candidate whose
//! projected values include NaN on some (not all) of the node's rows (rows with a
//! missing term; only where X holds NaN, [`crate::data::FeatureMatrix::has_missing`]).
//! Its present values are scanned (sorted, or binned where a histogram applies) twice,
//! with the missing rows on the right and then on the left, as scikit-learn's splitter
//! does; the split of every present row left and every missing row right (threshold
//! +inf) is offered too. The best records the side its missing rows took
//! ([`super::splitter::Best::missing`]). The random splitter's counterpart is
//! [`super::random_split`]'s.
//!
//! Invariant: a candidate without NaN never comes here, so data without NaN grow the
//! trees they grew before missing values were supported; the threshold lies strictly
//! between the present values sent left and right, and a row's side at prediction is
//! the one scored (NaN follows the recorded side).

use super::bins::Binned;
use super::criterion::Criterion;
use super::scan::{finite_range, midpoint, sort_pairs, ByRow, Missing, Sorted};
use super::splitter::{Found, Node, SplitSearch};
use super::workspace::Workspace;

impl<C: Criterion> SplitSearch<'_, C> {
    /// Moves the missing (NaN) rows of the node's projected values out: afterwards
    /// `ws.vals` holds the present values in row order, `ws.present` their samples and
    /// `ws.missing` the samples of the missing rows. Returns the missing rows' weight.
    pub(super) fn separate_missing(&self, ws: &mut Workspace, node: Node<'_>) -> f64 {
        ws.present.clear();
        ws.missing.clear();
        let mut w_missing = 0.0;
        let mut kept = 0;
        for k in 0..node.n() {
            let (v, s) = (ws.vals[k], ws.samples[node.start + k]);
            if v.is_nan() {
                ws.missing.push(s);
                w_missing += self.weights[s as usize];
            } else {
                ws.vals[kept] = v;
                ws.present.push(s);
                kept += 1;
            }
        }
        ws.vals.truncate(kept);
        w_missing
    }

    /// Split search of a candidate whose projection is missing on some (not all) rows of the
    /// node: the sorted or binned scan over the present values, with the missing rows on
    /// the right (also offering every present row left, threshold +inf), then on the left;
    /// the better of the two, ties to the right as scikit-learn. A split no better than
    /// `to_beat` is dropped before its threshold is computed.
    pub(super) fn split_missing(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        discrete: bool,
        to_beat: Option<f64>,
    ) -> Found {
        let w_missing = self.separate_missing(ws, node);
        let (m, n_missing) = (ws.present.len(), ws.missing.len());
        let sides = [
            Missing {
                n: n_missing,
                n_left: 0,
                w_left: 0.0,
                to_end: true,
            },
            Missing {
                n: n_missing,
                n_left: n_missing,
                w_left: w_missing,
                to_end: false,
            },
        ];
        // present values that vary may use a histogram; constant ones split from the missing
        // rows only, which the sorted scan of their one value offers
        let hist = finite_range(&ws.vals).and_then(|(lo, hi)| {
            self.histogram_kind(|| discrete, lo, hi, m)
                .map(|(n_bins, exact)| (lo, hi, n_bins, exact))
        });
        let per_bin = self.crit.bin_width(self.cfg.n_outputs);
        let binned = hist
            .is_some_and(|(lo, hi, n_bins, exact)| ws.bins.assign(&ws.vals, lo, hi, n_bins, exact));
        let mut best: Option<(f64, usize, bool)> = None;
        if binned {
            self.fill_by_row(&mut ws.bins, per_bin, &ws.present);
        } else {
            ws.pairs.clear();
            ws.pairs
                .extend(ws.vals.iter().copied().zip(ws.present.iter().copied()));
            sort_pairs(&mut ws.pairs, &mut ws.sort_buf, false);
        }
        let limits = self.limits(node);
        for (side, missing) in sides.into_iter().enumerate() {
            let Workspace {
                pairs,
                bins,
                left,
                right,
                missing: missing_rows,
                ..
            } = &mut *ws;
            let on_left: &[u32] = if side == 1 { missing_rows } else { &[] };
            // (monotonic constraints refuse data with NaN)
            let found = if binned {
                let driver = Binned {
                    bins,
                    per_bin,
                    n: m + n_missing,
                    limits,
                    missing,
                };
                self.scan_with(node.stats, (left, right), on_left, None, driver)
            } else {
                let driver = Sorted {
                    pairs,
                    rows: ByRow(self.weights),
                    limits,
                    missing,
                    stay_right: if side == 0 { missing_rows } else { &[] },
                };
                self.scan_with(node.stats, (left, right), on_left, None, driver)
            };
            if let Some((proxy, at)) = found {
                if best.is_none_or(|b| proxy > b.0) {
                    best = Some((proxy, at, side == 1));
                }
            }
        }
        let (proxy, at, missing_left) = best.filter(|b| to_beat.is_none_or(|t| b.0 > t))?;
        // the split after the last present value sends every present row left
        let threshold = if binned {
            let last = (0..ws.bins.n_bins).rposition(|b| ws.bins.n[b] > 0);
            if Some(at) == last {
                f32::INFINITY
            } else {
                ws.bins.threshold(&ws.vals, at, hist.is_some_and(|h| h.3))
            }
        } else if at + 1 == m {
            f32::INFINITY
        } else {
            midpoint(ws.pairs[at].0, ws.pairs[at + 1].0)
        };
        Some((proxy, threshold, Some(missing_left)))
    }
}

#[cfg(test)]
mod tests {
    use crate::data::{FeatureMatrix, Targets};
    use crate::params::{Criterion, ForestParams, MaxFeatures, Splitter, Task};
    use crate::projection::{AxisAligned, DataStats, Projection};
    use crate::rng::Rng;
    use crate::tree::{Grower, Tree, Workspace};
    use ndarray::Array2;

    /// One axis-aligned tree grown on every row of `x` with unit weights.
    fn grow(params: &ForestParams, x: &Array2<f32>, y: &[f64]) -> Tree {
        let (n, p) = x.dim();
        let cfg = params.check(n, p).unwrap();
        let fm = FeatureMatrix::from_view(x.view()).unwrap();
        let targets = Targets::for_task(y, &params.task).unwrap();
        let projection = Projection::new(AxisAligned);
        let stats = DataStats::of_width(p);
        let sampler = projection.sampler(&stats);
        let grower = Grower {
            cfg: &cfg,
            sampler: &sampler,
            x: &fm,
            y: &targets,
            growing: None,
        };
        let mut rng = Rng::from_seed(params.seed);
        grower.grow(
            crate::tree::RowWeights::Values(&vec![1.0; n]),
            None,
            |t| t,
            &mut rng,
            &mut Workspace::default(),
        )
    }

    fn absolute_error(splitter: Splitter, max_depth: Option<usize>) -> ForestParams {
        ForestParams {
            criterion: Criterion::AbsoluteError,
            splitter,
            max_depth,
            max_features: MaxFeatures::All,
            ..ForestParams::regression()
        }
    }

    /// Weighted absolute deviation of `y` around its best constant (a median).
    fn deviation(y: &[f64]) -> f64 {
        y.iter()
            .map(|&m| y.iter().map(|v| (v - m).abs()).sum::<f64>())
            .fold(
                0.0f64.max(if y.is_empty() { 0.0 } else { f64::INFINITY }),
                f64::min,
            )
    }

    #[test]
    fn absolute_error_sends_missing_rows_to_the_side_they_resemble() {
        // x = row for rows 0..30 (y 0 below 15, 10 above), missing for rows 30..40
        let x = Array2::from_shape_fn((40, 1), |(i, _)| if i < 30 { i as f32 } else { f32::NAN });
        for (missing_y, goes_left) in [(10.0, false), (0.0, true)] {
            let y: Vec<f64> = (0..40)
                .map(|i| match i {
                    0..15 => 0.0 + (i % 3) as f64 * 0.1,
                    15..30 => 10.0 + (i % 2) as f64 * 0.1,
                    _ => missing_y,
                })
                .collect();
            for splitter in [Splitter::Best, Splitter::Random] {
                let tree = grow(&absolute_error(splitter, Some(1)), &x, &y);
                assert_eq!(tree.n_nodes(), 3, "{splitter:?}");
                assert_eq!(tree.missing_goes_left(0), goes_left, "{splitter:?}");
                if splitter == Splitter::Best {
                    assert!((14.0..15.0).contains(&tree.threshold[0]));
                    // a missing row lands with the rows whose targets it shares
                    let leaf = tree.leaf(None, &[f32::NAN]);
                    assert!((tree.leaf_value(leaf)[0] - missing_y).abs() < 0.2);
                }
                // whatever the threshold, the missing rows took the better side
                let t = tree.threshold[0];
                let (mut l, mut r, mut m) = (vec![], vec![], vec![]);
                for i in 0..40 {
                    let v = x[(i, 0)];
                    let side = if v.is_nan() {
                        &mut m
                    } else if v <= t {
                        &mut l
                    } else {
                        &mut r
                    };
                    side.push(y[i]);
                }
                let with = |a: &[f64], b: &[f64]| [a, b].concat();
                let (left, right) = (
                    deviation(&with(&l, &m)) + deviation(&r),
                    deviation(&l) + deviation(&with(&r, &m)),
                );
                let chosen = if goes_left { left } else { right };
                assert!(chosen <= left.min(right) + 1e-9, "{splitter:?}");
            }
        }
    }

    #[test]
    fn absolute_error_with_missing_values_grows_the_same_tree_sorted_or_histogram() {
        // a discrete column (the exact histogram path of other criteria), a continuous one
        // and a binary one, each with holes; two outputs as well as one
        let (n, p) = (300, 3);
        let x = Array2::from_shape_fn((n, p), |(i, j)| {
            if (i * 7 + j * 3) % 11 == 0 {
                return f32::NAN;
            }
            match j {
                0 => (i % 5) as f32,
                1 => ((i * 37) % 101) as f32 / 7.0,
                _ => (i % 2) as f32,
            }
        });
        let y: Vec<f64> = (0..n)
            .map(|i| (i % 5) as f64 + ((i * 37) % 101) as f64 / 50.0)
            .collect();
        let y2: Vec<f64> = y.iter().flat_map(|&v| [v, (v * 3.0).sin()]).collect();
        for (task, y) in [
            (Task::Regression, &y),
            (Task::MultiRegression { n_outputs: 2 }, &y2),
        ] {
            let params = |splitter| ForestParams {
                task: task.clone(),
                min_samples_leaf: crate::params::SampleCount::Count(3),
                ..absolute_error(splitter, None)
            };
            let sorted = grow(&params(Splitter::Best), &x, y);
            let hist = grow(&params(Splitter::Histogram { max_bins: 4 }), &x, y);
            assert!(sorted.n_nodes() > 20 && !sorted.missing_flip.is_empty());
            sorted.validate(p, None).unwrap();
            assert_eq!(sorted, hist, "{task:?}");
        }
    }
}
