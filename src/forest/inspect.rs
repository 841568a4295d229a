//! Explaining a fitted forest: the nodes a row passes, the boxes its axis-aligned splits
//! bound, leaf ids under replacement rules (the autoencoder's decoder), the rows each tree
//! drew, and importances.

use super::sampling::{draw_counts, honest_mask};
use super::Forest;
use crate::cancel;
use crate::error::{Error, Result};
use crate::projection::ProjRef;
use crate::sparse::{Features, Row, RowBlock};
use crate::tree::normalise;
use ndarray::{Array2, ArrayView2};

impl Forest {
    /// Per row, the box given by the axis-aligned splits on its paths through all trees:
    /// (lower, upper), each n_samples × n_features; ±inf where unconstrained. A split the
    /// row passed with its feature missing (NaN, following the node's missing-value side)
    /// does not bound that feature.
    ///
    /// # Errors
    /// As [`Forest::predict`].
    pub fn leaf_bounds<'x>(
        &self,
        x: impl Into<Features<'x>>,
        n_jobs: i64,
    ) -> Result<(Array2<f64>, Array2<f64>)> {
        let x = x.into();
        let (p, n) = (self.n_features, x.nrows());
        let out = self.per_block(x, 2 * p, n_jobs, |_, rows, out| {
            let out = out.chunks_exact_mut(2 * p);
            match rows {
                RowBlock::Dense { rows, p } => rows
                    .chunks_exact(p)
                    .zip(out)
                    .for_each(|(row, o)| self.row_bounds(row, o)),
                RowBlock::Csr { x, start, .. } => out
                    .enumerate()
                    .for_each(|(k, o)| self.row_bounds(RowBlock::sparse_row(&x, start + k), o)),
            }
        })?;
        let both =
            Array2::from_shape_vec((n, 2 * p), out).map_err(|e| Error::Internal(e.to_string()))?;
        Ok((
            both.slice(ndarray::s![.., ..p]).to_owned(),
            both.slice(ndarray::s![.., p..]).to_owned(),
        ))
    }

    /// [`Forest::leaf_bounds`] of one row into `out` (lower bounds, then upper ones).
    fn row_bounds(&self, row: impl Row, out: &mut [f64]) {
        let g = self.descriptors();
        let (lo, hi) = out.split_at_mut(self.n_features);
        lo.fill(f64::NEG_INFINITY);
        hi.fill(f64::INFINITY);
        for tree in &self.trees {
            let mut node = 0usize;
            while !tree.is_leaf(node) {
                let proj = tree.proj(node, g);
                // the value `ProjRef::dot` forms (pooled ones included), in the same order
                let v = proj.value_by(|j| row.at(j));
                let next = tree.child(node, v);
                let go_left = next == tree.left[node] as usize;
                // a missing value is not bounded by the split it went through
                if let ProjRef::Sparse { idx: [j], w: [w] } = proj {
                    if *w != 0.0 && !v.is_nan() {
                        let cut = tree.threshold[node] as f64 / *w as f64;
                        let j = *j as usize;
                        // w·x <= t  ⇔  x <= t/w for w > 0, x >= t/w for w < 0
                        if go_left == (*w > 0.0) {
                            hi[j] = hi[j].min(cut);
                        } else {
                            lo[j] = lo[j].max(cut);
                        }
                    }
                }
                node = next;
            }
        }
    }

    /// Per leaf, in the forest-wide numbering of [`Forest::apply_leaves`], the box given by
    /// the axis-aligned splits on its path from the root: (lower, upper), each
    /// total leaves × n_features, ±inf where unconstrained. A leaf holds the points x with
    /// lower < x <= upper along every feature; multi-feature (oblique, patch) splits leave
    /// the box unconstrained, as in [`Forest::leaf_bounds`], which is the intersection of
    /// the boxes of the leaves a row reaches. The box bounds present values only: a row
    /// missing feature j (NaN) may reach a leaf whose box bounds j, through the
    /// missing-value side of a split on j.
    pub fn leaf_boxes(&self) -> (Array2<f64>, Array2<f64>) {
        let (p, g) = (self.n_features, self.descriptors());
        let n_leaves = self.leaf_offsets().last().copied().unwrap_or(0);
        let mut lower = Array2::from_elem((n_leaves, p), f64::NEG_INFINITY);
        let mut upper = Array2::from_elem((n_leaves, p), f64::INFINITY);
        let mut leaf = 0usize;
        for tree in &self.trees {
            // leaves are numbered in node order, so record each leaf's box by node index first
            let mut boxes: Vec<Option<(Vec<f64>, Vec<f64>)>> = vec![None; tree.n_nodes()];
            let mut stack = vec![(0usize, vec![f64::NEG_INFINITY; p], vec![f64::INFINITY; p])];
            while let Some((node, lo, hi)) = stack.pop() {
                if tree.is_leaf(node) {
                    boxes[node] = Some((lo, hi));
                    continue;
                }
                let (mut llo, mut lhi, mut rlo, mut rhi) = (lo.clone(), hi.clone(), lo, hi);
                if let ProjRef::Sparse { idx: [j], w: [w] } = tree.proj(node, g) {
                    if *w != 0.0 {
                        let cut = tree.threshold[node] as f64 / *w as f64;
                        let j = *j as usize;
                        // w·x <= t  ⇔  x <= t/w for w > 0, x >= t/w for w < 0
                        if *w > 0.0 {
                            lhi[j] = lhi[j].min(cut);
                            rlo[j] = rlo[j].max(cut);
                        } else {
                            llo[j] = llo[j].max(cut);
                            rhi[j] = rhi[j].min(cut);
                        }
                    }
                }
                stack.push((tree.left[node] as usize, llo, lhi));
                stack.push((tree.right[node] as usize, rlo, rhi));
            }
            for (lo, hi) in boxes.into_iter().flatten() {
                lower.row_mut(leaf).assign(&ndarray::ArrayView1::from(&lo));
                upper.row_mut(leaf).assign(&ndarray::ArrayView1::from(&hi));
                leaf += 1;
            }
        }
        (lower, upper)
    }

    /// Forest-wide leaf ids (as [`Forest::apply_leaves`]) reached by the rows of `z` when
    /// every split node follows a replacement rule instead of its projection: at node `i` of
    /// tree `t` a row goes left iff `(z[dim[k]] <= threshold[k]) != flip[k]`, with
    /// `k = s + i` and `s` the number of nodes of the trees before `t`. The rule arrays are
    /// indexed by node (entries of leaves are ignored). The autoencoder's split relabeling
    /// decoder routes latent vectors this way through splits relabeled in latent space.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when a rule array's length is not the forest's total number
    /// of nodes, or a split node's `dim` is not a column of `z`.
    pub fn apply_leaves_with_rules(
        &self,
        z: ArrayView2<'_, f64>,
        dim: &[i64],
        threshold: &[f64],
        flip: &[bool],
    ) -> Result<Array2<i64>> {
        let total: usize = self.trees.iter().map(|t| t.n_nodes()).sum();
        if dim.len() != total || threshold.len() != total || flip.len() != total {
            return Err(Error::InvalidInput(format!(
                "rule arrays have lengths {}, {}, {}; the forest has {total} nodes",
                dim.len(),
                threshold.len(),
                flip.len()
            )));
        }
        let mut start = 0usize;
        for tree in &self.trees {
            for node in (0..tree.n_nodes()).filter(|&i| !tree.is_leaf(i)) {
                let d = dim[start + node];
                if d < 0 || d as usize >= z.ncols() {
                    return Err(Error::InvalidInput(format!(
                        "rule dimension {d} is not a column of z (z has {} columns)",
                        z.ncols()
                    )));
                }
            }
            start += tree.n_nodes();
        }
        let off = self.leaf_offsets();
        let mut out = Array2::zeros((z.nrows(), self.trees.len()));
        let mut start = 0usize;
        for (t, tree) in self.trees.iter().enumerate() {
            let mut rank = Vec::with_capacity(tree.n_nodes());
            let mut r = 0usize;
            for i in 0..tree.n_nodes() {
                rank.push(r);
                r += usize::from(tree.is_leaf(i));
            }
            for (row, z_row) in z.rows().into_iter().enumerate() {
                let mut node = 0usize;
                while !tree.is_leaf(node) {
                    let k = start + node;
                    let go_left = (z_row[dim[k] as usize] <= threshold[k]) != flip[k];
                    node = if go_left {
                        tree.left[node]
                    } else {
                        tree.right[node]
                    } as usize;
                }
                out[[row, t]] = (off[t] + rank[node]) as i64;
            }
            start += tree.n_nodes();
        }
        Ok(out)
    }

    /// How often tree `tree` drew each of the `n_samples` training rows into its bootstrap
    /// sample (or its subsample: 0 or 1), recomputed from the tree's seed (nothing is
    /// stored); all ones when the forest was grown on every row. `n_samples` must be the
    /// number of rows of the fit.
    ///
    /// # Errors
    /// A tree index out of range, or `n_samples` that the forest's `max_samples` rejects.
    pub fn in_bag_counts(&self, tree: usize, n_samples: usize) -> Result<Vec<u32>> {
        if tree >= self.trees.len() {
            return Err(Error::InvalidInput(format!(
                "tree {tree} does not exist (the forest has {} trees)",
                self.trees.len()
            )));
        }
        if !self.params.bootstrap && self.params.max_samples.is_none() {
            return Ok(vec![1; n_samples]);
        }
        let cfg = self.params.check(n_samples, self.n_features)?;
        Ok(draw_counts(&self.params, &cfg, tree, n_samples).unwrap_or_else(|| vec![1; n_samples]))
    }

    /// How often tree `tree` drew each of the `n_samples` training rows into its honest
    /// part, the rows that filled its leaves instead of growing it (see
    /// [`Forest::in_bag_counts`], of which these are a part), recomputed from the tree's
    /// seed; all zeros for a forest that is not honest.
    ///
    /// # Errors
    /// As [`Forest::in_bag_counts`].
    pub fn honest_counts(&self, tree: usize, n_samples: usize) -> Result<Vec<u32>> {
        let mut counts = self.in_bag_counts(tree, n_samples)?;
        let fraction = self.params.honest_fraction;
        if fraction == 0.0 {
            counts.fill(0);
            return Ok(counts);
        }
        // the rows drawn (all ones when the tree grew on every row: the same rows)
        let mask = honest_mask(self.params.seed, tree, n_samples, Some(&counts), fraction);
        for (c, honest) in counts.iter_mut().zip(mask) {
            if !honest {
                *c = 0;
            }
        }
        Ok(counts)
    }

    /// The nodes each row passes through, as a CSR indicator over the forest's nodes
    /// (scikit-learn's `decision_path`): returns `(indptr, indices, n_nodes_ptr)` where row
    /// `i` visits the forest-wide nodes `indices[indptr[i]..indptr[i + 1]]` (ascending), and
    /// tree `t`'s node `j` is column `n_nodes_ptr[t] + j`. A path is the chain of ancestors
    /// of the leaf [`Forest::apply`] reaches, so it follows prediction's arithmetic exactly.
    ///
    /// # Errors
    /// As [`Forest::predict`].
    #[allow(clippy::type_complexity)]
    pub fn decision_path<'x>(
        &self,
        x: impl Into<Features<'x>>,
        n_jobs: i64,
    ) -> Result<(Vec<i64>, Vec<i64>, Vec<i64>)> {
        let leaves = self.apply(x, n_jobs)?;
        let mut n_nodes_ptr = vec![0i64];
        let parents: Vec<Vec<u32>> = self
            .trees
            .iter()
            .map(|t| {
                let mut parent = vec![u32::MAX; t.n_nodes()];
                for node in (0..t.n_nodes()).filter(|&i| !t.is_leaf(i)) {
                    parent[t.left[node] as usize] = node as u32;
                    parent[t.right[node] as usize] = node as u32;
                }
                n_nodes_ptr.push(n_nodes_ptr[n_nodes_ptr.len() - 1] + t.n_nodes() as i64);
                parent
            })
            .collect();
        let mut indptr = Vec::with_capacity(leaves.nrows() + 1);
        indptr.push(0i64);
        let mut indices = Vec::new();
        let mut path = Vec::new();
        for (i, row) in leaves.rows().into_iter().enumerate() {
            // the paths of a large X take seconds after `apply`: a cancel is looked for
            // every block of rows
            if i % 1024 == 0 {
                cancel::check()?;
            }
            for (t, &leaf) in row.iter().enumerate() {
                path.clear();
                let mut node = leaf as u32;
                while node != u32::MAX {
                    path.push(n_nodes_ptr[t] + node as i64);
                    node = parents[t][node as usize];
                }
                // ancestors carry smaller ids than their descendants in both growth orders
                indices.extend(path.iter().rev());
            }
            indptr.push(indices.len() as i64);
        }
        Ok((indptr, indices, n_nodes_ptr))
    }

    /// Mean decrease in impurity per feature (each tree normalised, averaged, renormalised).
    pub fn feature_importances(&self) -> Vec<f64> {
        let mut imp = vec![0.0; self.n_features];
        for t in &self.trees {
            for (a, b) in imp.iter_mut().zip(t.feature_importances(
                self.n_features,
                self.descriptors(),
                self.params.projection.unit_weights(),
            )) {
                *a += b;
            }
        }
        normalise(&mut imp);
        imp
    }

    /// How often each feature is part of a split projection, normalised to sum to 1
    /// (the count-based importance of MORF, Sect. 3.2).
    pub fn projection_counts(&self) -> Vec<f64> {
        let mut c = vec![0.0; self.n_features];
        for t in &self.trees {
            t.add_projection_counts(self.descriptors(), &mut c);
        }
        normalise(&mut c);
        c
    }

    /// Every node's decision in tree `tree` for every row of `x`: the node's projected value
    /// (the value prediction computes, in float32; NaN where a term is missing, and at
    /// leaves) and whether the row goes left there (the node's missing-value side for a
    /// missing value; false at leaves), each of shape (n_samples, n_nodes). Every
    /// explanation of a path (`interpret.decision_path_rules`, the autoencoder's relabeling
    /// decoder) reads these, so it follows the arithmetic and the missing-value rule of
    /// prediction exactly.
    ///
    /// # Errors
    /// A tree index out of range, and as [`Forest::predict`].
    #[allow(clippy::type_complexity)]
    pub fn node_decisions<'x>(
        &self,
        x: impl Into<Features<'x>>,
        tree: usize,
        n_jobs: i64,
    ) -> Result<(Array2<f32>, Array2<bool>)> {
        let t = self.trees.get(tree).ok_or_else(|| {
            Error::InvalidInput(format!(
                "tree {tree} does not exist (the forest has {} trees)",
                self.trees.len()
            ))
        })?;
        let x = x.into();
        let (m, n) = (t.n_nodes(), x.nrows());
        let g = self.descriptors();
        let decide = |row: &dyn Fn(usize) -> f32, out: &mut [(f32, bool)]| {
            for (node, o) in out.iter_mut().enumerate() {
                *o = if t.is_leaf(node) {
                    (f32::NAN, false)
                } else {
                    let v = t.proj(node, g).value_by(row);
                    (v, t.child(node, v) == t.left[node] as usize)
                };
            }
        };
        let out = self.per_block(x, m, n_jobs, |_, rows, out| {
            let out = out.chunks_exact_mut(m);
            match rows {
                RowBlock::Dense { rows, p } => rows
                    .chunks_exact(p)
                    .zip(out)
                    .for_each(|(row, o)| decide(&|j| row[j], o)),
                RowBlock::Csr { x, start, .. } => out.enumerate().for_each(|(k, o)| {
                    let row = RowBlock::sparse_row(&x, start + k);
                    decide(&|j| row.at(j), o)
                }),
            }
        })?;
        let (values, left): (Vec<f32>, Vec<bool>) = out.into_iter().unzip();
        let internal = |e: ndarray::ShapeError| Error::Internal(e.to_string());
        Ok((
            Array2::from_shape_vec((n, m), values).map_err(internal)?,
            Array2::from_shape_vec((n, m), left).map_err(internal)?,
        ))
    }
}
