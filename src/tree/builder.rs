//! Growing one tree: nodes are added depth-first (or best-first under `max_leaf_nodes`),
//! each searched for its best split by the [`super::splitter`] and partitioned in place.
//!
//! Invariant: a pending node owns `ws.samples[start..end]`; after [`Builder::partition`],
//! `ws.samples[start..start + n_left]` are the rows whose projection is `<= threshold`
//! (and those whose projection is missing when the split sends them left), in their
//! previous order. Node `i`'s statistics, value and projection wait in the
//! workspace until the tree is laid out at the end of [`Builder::grow`].

use super::categorical::maps_of;
use super::criterion::{
    average_path_length, AbsoluteError, Criterion, Entropy, FriedmanMse, Gini, MultiEntropy,
    MultiGini, MultiSquaredError, Poisson, SquaredError, Unlabelled, ValueRule,
};
use super::fill::{Fill, Filler};
use super::growing::TreesGrowing;
use super::monotonic::Bounds;
use super::splitter::{Node, SplitSearch};
use super::workspace::{node_stats, partition_room, project, stable_partition, Workspace};
use super::{Tree, LEAF};
use crate::data::{FeatureMatrix, Targets};
use crate::params::{self, TreeConfig};
use crate::probe::{self, Count};
use crate::projection::{ProjRef, Sampler};
use crate::rng::Rng;
use crate::tree::RowWeights;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Impurities at or below this are treated as pure nodes.
const PURE: f64 = 1e-7;

/// A chosen split waiting to be applied.
#[derive(Clone)]
pub(super) struct Pending {
    pub(super) node: u32,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) depth: u32,
    improvement: f64,
    threshold: f32,
    proj: (usize, usize),
    /// The range of its projection's level maps in `ws.arena_maps` (empty: none).
    maps: (usize, usize),
    /// Bounds of the node's values under monotonic constraints, and its split's direction.
    bounds: Bounds,
    dir: i8,
    /// Side of the rows whose projection is missing (true: left); `None` when there are none.
    pub(super) missing: Option<bool>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    // best-first: largest improvement first, ties to the older node
    fn cmp(&self, o: &Self) -> Ordering {
        self.improvement
            .total_cmp(&o.improvement)
            .then(o.node.cmp(&self.node))
    }
}

/// Everything fixed while growing one tree.
pub(crate) struct Grower<'a> {
    /// The checked configuration.
    pub(crate) cfg: &'a TreeConfig,
    /// Draws each node's candidate projections.
    pub(crate) sampler: &'a Sampler<'a>,
    /// The training data.
    pub(crate) x: &'a FeatureMatrix<'a>,
    /// The training targets.
    pub(crate) y: &'a Targets,
    /// The trees of the fit still growing or waiting, when the fit counts them: subtrees
    /// fork onto other threads only while some thread may be free ([`TreesGrowing`]);
    /// `None`: whenever the pool has another thread.
    pub(crate) growing: Option<&'a TreesGrowing>,
}

impl Grower<'_> {
    /// Grows one tree on the rows with positive `weights` (bootstrap counts × sample
    /// weights), passes it through `finish` (pruning), then fills it from `fill` when given
    /// ([`super::fill`]: honest leaf values, the leaves' rows).
    pub(crate) fn grow(
        &self,
        weights: RowWeights<'_>,
        fill: Option<&Fill<'_>>,
        finish: impl FnOnce(Tree) -> Tree,
        rng: &mut Rng,
        ws: &mut Workspace,
    ) -> Tree {
        self.with_criterion(Job {
            weights,
            fill,
            finish,
            rng,
            ws,
        })
    }

    /// Makes the criterion of these targets and configuration and runs `job` with it: the
    /// one dispatch on the criterion, everything below is monomorphised over it.
    fn with_criterion<J: WithCriterion>(&self, job: J) -> J::Out {
        use params::Criterion as C;
        match (self.y, self.cfg.criterion) {
            (Targets::Classes(classes), C::Gini) => job.run(self, Gini::new(classes, 1)),
            (Targets::Classes(classes), _) => job.run(self, Entropy::new(classes, 1)),
            (Targets::Values(y), C::Poisson) => job.run(self, Poisson { y, k: 1 }),
            (Targets::Values(y), C::AbsoluteError) => job.run(self, AbsoluteError { y, k: 1 }),
            (Targets::Values(y), C::FriedmanMse) => {
                let crit = FriedmanMse {
                    y,
                    row_sums: y,
                    k: 1,
                };
                job.run(self, crit)
            }
            (Targets::Values(y), _) => job.run(self, SquaredError { y }),
            (&Targets::MultiClasses { ref slots, k }, C::Gini) => {
                job.run(self, MultiGini::new(slots, k))
            }
            (&Targets::MultiClasses { ref slots, k }, _) => {
                job.run(self, MultiEntropy::new(slots, k))
            }
            (&Targets::MultiValues { ref y, k }, C::Poisson) => job.run(self, Poisson { y, k }),
            (&Targets::MultiValues { ref y, k }, C::AbsoluteError) => {
                job.run(self, AbsoluteError { y, k })
            }
            (&Targets::MultiValues { ref y, k }, C::FriedmanMse) => {
                let row_sums: Vec<f64> = y.chunks(k).map(|r| r.iter().sum()).collect();
                let crit = FriedmanMse {
                    y,
                    row_sums: &row_sums,
                    k,
                };
                job.run(self, crit)
            }
            (&Targets::MultiValues { ref y, k }, _) => job.run(self, MultiSquaredError { y, k }),
            (Targets::Unlabelled, c) => {
                // (the parameters' check pairs a task without targets with a value rule, and
                // refuses leaf filling for it)
                let rule = ValueRule::of(c).unwrap_or(ValueRule::TwoMeans);
                job.run(self, Unlabelled { rule })
            }
        }
    }

    /// The builder of a tree, or with `subtree` of a subtree on its rows' copy, under
    /// `crit` with these row `weights`.
    fn builder<'b, C: Criterion>(
        &'b self,
        crit: C,
        weights: RowWeights<'b>,
        subtree: bool,
    ) -> Builder<'b, C> {
        Builder {
            search: SplitSearch::new(self.cfg, self.sampler, self.x, crit, weights),
            // a subtree grows on its own copy already
            targets: (!subtree).then_some(self.y),
            growing: self.growing,
        }
    }
}

/// What runs once a tree's criterion is made ([`Grower::with_criterion`]).
trait WithCriterion {
    type Out;
    fn run<C: Criterion>(self, grower: &Grower<'_>, crit: C) -> Self::Out;
}

/// The inputs of one tree's growth that the criterion dispatch passes through.
struct Job<'j, 'f, F> {
    weights: RowWeights<'j>,
    fill: Option<&'j Fill<'f>>,
    finish: F,
    rng: &'j mut Rng,
    ws: &'j mut Workspace,
}

impl<F: FnOnce(Tree) -> Tree> WithCriterion for Job<'_, '_, F> {
    type Out = Tree;

    /// Grows, finishes and fills one tree with criterion `crit`.
    fn run<C: Criterion>(self, grower: &Grower<'_>, crit: C) -> Tree {
        let builder = grower.builder(crit, self.weights, false);
        let mut tree = builder.grow(self.rng, self.ws);
        if crit.value_rule().is_some() {
            set_path_lengths(&mut tree, grower.cfg.n_draws);
        }
        let tree = (self.finish)(tree);
        match self.fill {
            Some(fill) => {
                let filler = Filler {
                    x: grower.x,
                    descriptors: grower.sampler.descriptors(),
                    crit,
                };
                filler.fill(tree, fill, self.ws)
            }
            None => tree,
        }
    }
}

/// The subtree under a pending node, grown on its rows' own copy of X, the targets and
/// the weights ([`Builder::grow_local`]).
struct Subtree<'j> {
    weights: RowWeights<'j>,
    tree: &'j mut Tree,
    ws: &'j mut Workspace,
    rng: &'j mut Rng,
    top: Pending,
    limits: (f64, f64),
}

impl WithCriterion for Subtree<'_> {
    type Out = ();

    fn run<C: Criterion>(self, grower: &Grower<'_>, crit: C) {
        let builder = grower.builder(crit, self.weights, true);
        let mut queue = Queue::Depth(vec![self.top]);
        builder.grow_nodes(self.tree, self.ws, self.rng, &mut queue, self.limits);
    }
}

/// What the leaves of a tree without targets keep: the path length of their rows, the
/// leaf's depth plus the average path length `c(n)` of the `n` training rows that reached
/// it (rows the tree never separated), over `c(ψ)` for the `rows_per_tree` (ψ) rows the
/// tree drew (Liu et al. 2008), so that a forest's mean is isolation forest's
/// `E[h(x)] / c(ψ)`.
fn set_path_lengths(tree: &mut Tree, rows_per_tree: usize) {
    let c_psi = average_path_length(rows_per_tree as f64);
    let norm = if c_psi > 0.0 { c_psi } else { 1.0 };
    for node in 0..tree.n_nodes() {
        if tree.is_leaf(node) {
            let row = tree.right[node] as usize;
            let n = f64::from(tree.n_node_samples[node]);
            tree.value[row] = (f64::from(tree.depth[node]) + average_path_length(n)) / norm;
        }
    }
}

/// A node slot to fill: its index in the tree, its rows `samples[start..end]` and depth as
/// `rows`, and its bounds under monotonic constraints.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) node: usize,
    pub(super) rows: (usize, usize, u32),
    pub(super) bounds: Bounds,
}

/// Appends an empty node slot to the tree (a leaf until a split is applied to it; its
/// statistics come from [`Builder::search_node`]); returns its index. `k`: outputs.
pub(super) fn push_slot(tree: &mut Tree, ws: &mut Workspace, k: usize) -> usize {
    let node = tree.n_nodes();
    tree.left.push(LEAF);
    tree.right.push(LEAF);
    tree.threshold.push(0.0);
    tree.impurity.push(0.0);
    tree.n_node_samples.push(0);
    tree.weighted_n_node_samples.push(0.0);
    tree.depth.push(0);
    ws.node_proj.push((0, 0));
    ws.node_maps.push((0, 0));
    ws.node_values.resize(ws.node_values.len() + k, 0.0);
    node
}

/// Records the side of split node `node`'s missing rows (`Some(true)`: left), once its
/// children are in the tree: a learned side is stored only where it is not the default.
pub(super) fn note_missing_side(tree: &mut Tree, node: usize, missing: Option<bool>) {
    if missing.is_some_and(|left| left != tree.default_missing_left(node)) {
        tree.missing_flip.push(node as u32);
    }
}

/// A [`Grower`] with its criterion and the tree's row weights resolved: the split search,
/// and the tree it grows from what the search finds.
pub(super) struct Builder<'a, C> {
    pub(super) search: SplitSearch<'a, C>,
    /// The tree's targets, when its subtrees may grow on copies of their rows
    /// ([`Builder::grow_local`]); `None` in such a subtree.
    targets: Option<&'a Targets>,
    /// As [`Grower::growing`].
    pub(super) growing: Option<&'a TreesGrowing>,
}

/// The nodes waiting to be split: a stack (depth-first), or under `max_leaf_nodes` a heap
/// (best-first).
enum Queue {
    Depth(Vec<Pending>),
    Best(BinaryHeap<Pending>),
}

impl Queue {
    fn push(&mut self, p: Pending) {
        match self {
            Queue::Depth(stack) => stack.push(p),
            Queue::Best(heap) => heap.push(p),
        }
    }
    fn pop(&mut self) -> Option<Pending> {
        match self {
            Queue::Depth(stack) => stack.pop(),
            Queue::Best(heap) => heap.pop(),
        }
    }
}

/// When a subtree grows on a copy of its rows ([`Builder::grow_local`]): when it has at
/// least `min_rows` rows (a smaller one would not repay the copy) and, on dense X, its
/// rows' features take at most `bytes` and X's rows are spread over at least
/// `min_x_bytes` (beyond the caches). Sparse X has its own rule ([`Builder::localizes`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LocalLimits {
    pub(crate) bytes: usize,
    pub(crate) min_rows: usize,
    pub(crate) min_x_bytes: usize,
}

impl LocalLimits {
    const DEFAULT: LocalLimits = LocalLimits {
        bytes: 4 << 20,
        min_rows: 256,
        min_x_bytes: 64 << 20,
    };

    /// The limits in force: the defaults (tests set others, through the probes, to grow
    /// subtrees on copies of small data).
    fn get() -> LocalLimits {
        probe::local_limits().map_or(Self::DEFAULT, |[bytes, min_rows, min_x_bytes]| {
            LocalLimits {
                bytes,
                min_rows,
                min_x_bytes,
            }
        })
    }
}

/// Sparse X: a subtree grows on a copy of its rows when they are at most this share of X's
/// rows ([`Builder::localizes`]).
const SPARSE_SHARE: usize = 8;

impl<C: Criterion> Builder<'_, C> {
    /// Grows one tree on the rows with positive weights.
    fn grow(&self, rng: &mut Rng, ws: &mut Workspace) -> Tree {
        let SplitSearch {
            cfg,
            sampler,
            weights,
            ..
        } = self.search;
        let k = cfg.n_outputs;
        self.prepare(ws, weights.len());
        weights.positive_rows(&mut ws.samples);
        ws.arena_idx.clear();
        ws.arena_w.clear();
        ws.node_proj.clear();
        ws.node_maps.clear();
        ws.arena_maps.clear();
        ws.node_values.clear();
        let mut tree = Tree {
            n_outputs: k,
            ..Tree::default()
        };
        let n_in_bag = ws.samples.len();
        let root_weight: f64 = ws.samples.iter().map(|&s| weights[s as usize]).sum();
        let min_weight_leaf = cfg.min_weight_fraction_leaf * root_weight;
        let limits = (root_weight, min_weight_leaf);
        let mut queue = if cfg.max_leaf_nodes.is_some() {
            Queue::Best(BinaryHeap::new())
        } else {
            Queue::Depth(Vec::new())
        };
        let root = (0, n_in_bag, 0);
        if let Some(p) = self.add_node(&mut tree, ws, rng, root, limits, Bounds::NONE) {
            queue.push(p);
        }
        self.grow_nodes(&mut tree, ws, rng, &mut queue, limits);
        tree.missing_flip.sort_unstable();
        // lay the projections of inner nodes out in node order (CSR), and the leaves' values
        tree.proj_ptr.push(0);
        let mut leaf_rows = 0u32;
        for node in 0..tree.n_nodes() {
            if tree.is_leaf(node) {
                tree.right[node] = leaf_rows;
                leaf_rows += 1;
                tree.value
                    .extend_from_slice(&ws.node_values[node * k..(node + 1) * k]);
            } else {
                let (a, b) = ws.node_proj[node];
                tree.proj_idx
                    .extend_from_slice(&ws.arena_idx[a as usize..b as usize]);
                if sampler.descriptors().is_none() {
                    tree.proj_w
                        .extend_from_slice(&ws.arena_w[a as usize..b as usize]);
                }
            }
            tree.proj_ptr.push(tree.proj_idx.len() as u32);
        }
        if ws.arena_maps.n_maps() > 0 {
            let maps = &mut tree.level_maps;
            maps.node_ptr.push(0);
            for &(a, b) in &ws.node_maps {
                maps.extend_from(&ws.arena_maps, (a as usize, b as usize));
                maps.node_ptr.push(maps.n_maps() as u32);
            }
        }
        tree.shrink_to_fit();
        tree
    }

    /// Sizes the workspace's buffers for this criterion and a tree of at most `n_rows`
    /// rows.
    pub(super) fn prepare(&self, ws: &mut Workspace, n_rows: usize) {
        let stat_len = self.search.crit.stat_len(self.search.cfg.n_outputs);
        ws.size_for(stat_len, n_rows);
    }

    /// Fills `slot` with its node and grows its subtree (depth-first) when it splits.
    pub(super) fn grow_child(
        &self,
        tree: &mut Tree,
        ws: &mut Workspace,
        rng: &mut Rng,
        slot: Slot,
        limits: (f64, f64),
    ) {
        if let Some(p) = self.search_node(tree, ws, rng, slot, limits) {
            let mut queue = Queue::Depth(vec![p]);
            self.grow_nodes(tree, ws, rng, &mut queue, limits);
        }
    }

    /// Splits the nodes of `queue` and adds their children until none is left (or the fit
    /// is cancelled, or `max_leaf_nodes` is reached). `limits` = (root weight, minimum
    /// leaf weight).
    fn grow_nodes(
        &self,
        tree: &mut Tree,
        ws: &mut Workspace,
        rng: &mut Rng,
        queue: &mut Queue,
        limits: (f64, f64),
    ) {
        let cfg = self.search.cfg;
        let mut n_leaves = 1usize;
        while let Some(p) = queue.pop() {
            if crate::cancel::requested() {
                break; // cancel: leave the rest as leaves; the forest drops this tree
            }
            if cfg.max_leaf_nodes.is_some_and(|m| n_leaves >= m) {
                break;
            }
            if self.localizes(&p) && self.grow_local(tree, ws, rng, &p, limits) {
                continue;
            }
            let n_left = self.partition(ws, &p);
            if n_left == 0 || n_left == p.end - p.start {
                continue; // cannot happen with a consistent projection; keep the node a leaf
            }
            let node = p.node as usize;
            ws.node_proj[node] = (p.proj.0 as u32, p.proj.1 as u32);
            ws.node_maps[node] = (p.maps.0 as u32, p.maps.1 as u32);
            tree.threshold[node] = p.threshold;
            let mid = p.start + n_left;
            let (bounds_l, bounds_r) = if p.dir == 0 {
                (p.bounds, p.bounds)
            } else {
                let (v_l, v_r) = self.child_values(ws, p.start, mid, p.end);
                p.bounds.children(p.dir, v_l, v_r)
            };
            if self.forks(&p) {
                // each child's subtree on its own random stream, perhaps on another thread
                self.fork(tree, ws, rng, &p, (mid, bounds_l, bounds_r), limits);
                n_leaves += 1;
                continue;
            }
            let left = (p.start, mid, p.depth + 1);
            let l = self.add_node(tree, ws, rng, left, limits, bounds_l);
            let left_id = tree.n_nodes() as u32 - 1;
            let right = (mid, p.end, p.depth + 1);
            let r = self.add_node(tree, ws, rng, right, limits, bounds_r);
            let right_id = tree.n_nodes() as u32 - 1;
            tree.left[node] = left_id;
            tree.right[node] = right_id;
            note_missing_side(tree, node, p.missing);
            n_leaves += 1;
            // depth-first: the right child waits under the left one
            if let Some(r) = r {
                queue.push(r);
            }
            if let Some(l) = l {
                queue.push(l);
            }
        }
    }

    /// Whether the subtree under `p` grows on its own copy of its rows
    /// ([`Self::grow_local`]), under depth-first growth, for a node of at least
    /// `min_rows` rows: on dense X whose rows lie beyond the caches, a node whose rows'
    /// features fit in them; on sparse X, a node of at most an eighth of X's rows whose
    /// copy pays ([`crate::sparse::SparseStore::copy_pays`]: its columns hold its rows'
    /// entries only, so the searches below it stop scanning the entries of every other
    /// row of X).
    fn localizes(&self, p: &Pending) -> bool {
        let (x, limits) = (self.search.x, LocalLimits::get());
        let row_bytes = 4 * x.n_features.max(1);
        let n = p.end - p.start;
        if self.search.cfg.max_leaf_nodes.is_some() || n < limits.min_rows {
            return false;
        }
        if x.is_sparse() {
            return n.saturating_mul(SPARSE_SHARE) <= x.n_samples && x.sparse_copy_pays(n);
        }
        n <= limits.bytes / row_bytes && x.n_samples.saturating_mul(row_bytes) >= limits.min_x_bytes
    }

    /// Grows the subtree under `p` (split already found) on a copy of its rows: their
    /// features, targets and weights gathered once, in the order of the node's samples, which
    /// become `0..n` in `ws.samples`. Every search and partition below then reads only
    /// these rows (on dense X, memory that stays in the caches), and finds the same
    /// splits: the rows keep their order, so sorts, sums and partitions see the same values
    /// in the same order (the tree's bytes do not change). Depth-first growth finishes a
    /// node's subtree before any other node, so the tree's node order is the same too.
    /// Returns false, having done nothing, when the rows cannot be copied (in a subtree
    /// already; sparse X's rows out of order, or its copy not allocated).
    fn grow_local(
        &self,
        tree: &mut Tree,
        ws: &mut Workspace,
        rng: &mut Rng,
        top: &Pending,
        limits: (f64, f64),
    ) -> bool {
        let SplitSearch { x, weights, .. } = self.search;
        let Some(targets) = self.targets else {
            return false;
        };
        let rows = ws.samples[top.start..top.end].to_vec();
        // candidates that share features are projected together, from rows (`term_batch`)
        let by_row = self
            .search
            .sampler
            .shares_features(self.search.cfg.n_candidates);
        let Some(x) = x.gather_rows(&rows, by_row) else {
            return false;
        };
        probe::count(Count::LocalCopies);
        let y = targets.gather_rows(&rows);
        let weights = weights.gather(&rows);
        for (k, s) in ws.samples[top.start..top.end].iter_mut().enumerate() {
            *s = k as u32;
        }
        let grower = Grower {
            cfg: self.search.cfg,
            sampler: self.search.sampler,
            x: &x,
            y: &y,
            growing: self.growing,
        };
        grower.with_criterion(Subtree {
            weights: weights.view(),
            tree,
            ws,
            rng,
            top: top.clone(),
            limits,
        });
        true
    }

    /// Appends a node for `samples[start..end]` at `depth` and, when it may split, finds
    /// its split. `(root_weight, min_weight_leaf)` are the tree's.
    fn add_node(
        &self,
        tree: &mut Tree,
        ws: &mut Workspace,
        rng: &mut Rng,
        range: (usize, usize, u32),
        limits: (f64, f64),
        bounds: Bounds,
    ) -> Option<Pending> {
        let node = push_slot(tree, ws, self.search.cfg.n_outputs);
        let slot = Slot {
            node,
            rows: range,
            bounds,
        };
        self.search_node(tree, ws, rng, slot, limits)
    }

    /// Fills `slot` ([`push_slot`]) with its node and, when it may split, finds its split.
    /// `(root_weight, min_weight_leaf)` are the tree's.
    pub(super) fn search_node(
        &self,
        tree: &mut Tree,
        ws: &mut Workspace,
        rng: &mut Rng,
        slot: Slot,
        (root_weight, min_weight_leaf): (f64, f64),
    ) -> Option<Pending> {
        let Slot {
            node,
            rows: (start, end, depth),
            bounds,
        } = slot;
        let SplitSearch {
            cfg,
            sampler,
            crit,
            weights,
            ..
        } = self.search;
        let w_node = node_stats(&crit, &mut ws.node_sums, &ws.samples[start..end], weights);
        let impurity = if w_node > 0.0 {
            crit.impurity(&ws.node_sums, w_node)
        } else {
            0.0
        };
        tree.impurity[node] = impurity;
        tree.n_node_samples[node] = (end - start) as u32;
        tree.weighted_n_node_samples[node] = w_node;
        tree.depth[node] = depth;
        // every node's value waits here (in its slot); the tree keeps the leaves' only
        let k = cfg.n_outputs;
        let len = ws.node_values.len();
        crit.push_value(&ws.node_sums, w_node, &mut ws.node_values);
        ws.node_values.copy_within(len.., node * k);
        ws.node_values.truncate(len);
        if !cfg.growth.monotonic_cst.is_empty() {
            bounds.clip(&mut ws.node_values[node * k..(node + 1) * k]);
        }
        let n = end - start;
        if depth as usize >= cfg.max_depth
            || n < cfg.min_samples_split
            || n < 2 * cfg.min_samples_leaf
            || w_node < 2.0 * min_weight_leaf
            || impurity <= PURE
        {
            return None;
        }
        // the node totals leave the workspace while its buffers are borrowed by the search
        let sums = std::mem::take(&mut ws.node_sums);
        let found = self.search.find_split(
            ws,
            rng,
            Node {
                start,
                end,
                stats: &sums,
                w: w_node,
                min_weight_leaf,
                bounds,
            },
        );
        let parent = crit.node_proxy(&sums, w_node);
        ws.node_sums = sums;
        let best = found?;
        let improvement = best.proxy - parent;
        if improvement / root_weight + 1e-10 < cfg.min_impurity_decrease {
            return None;
        }
        // the winning candidate's projection joins the tree's
        let (a, b) = (
            ws.cand.ptr[best.cand] as usize,
            ws.cand.ptr[best.cand + 1] as usize,
        );
        let at = ws.arena_idx.len();
        ws.arena_idx.extend_from_slice(&ws.cand.idx[a..b]);
        if sampler.descriptors().is_none() {
            ws.arena_w.extend_from_slice(&ws.cand.w[a..b]);
        }
        let m0 = ws.arena_maps.n_maps();
        ws.arena_maps
            .extend_from(&ws.cat.best, (0, ws.cat.best.n_maps()));
        Some(Pending {
            node: node as u32,
            start,
            end,
            depth,
            improvement,
            threshold: best.threshold,
            proj: (at, ws.arena_idx.len()),
            maps: (m0, ws.arena_maps.n_maps()),
            bounds,
            dir: best.dir,
            missing: best.missing,
        })
    }

    /// The monotone values ([`super::monotonic`]) of the children `samples[start..mid]` and
    /// `samples[mid..end]` of a split node.
    fn child_values(&self, ws: &mut Workspace, start: usize, mid: usize, end: usize) -> (f64, f64) {
        let SplitSearch { crit, weights, .. } = self.search;
        let (left, total) = (&mut ws.left, &mut ws.right);
        left.fill(0.0);
        total.fill(0.0);
        let (mut w_l, mut w_r) = (0.0, 0.0);
        for (i, &s) in ws.samples[start..end].iter().enumerate() {
            let w = weights[s as usize];
            crit.add_sample(total, s as usize, w);
            if start + i < mid {
                crit.add_sample(left, s as usize, w);
                w_l += w;
            } else {
                w_r += w;
            }
        }
        crit.split_values(left, total, w_l, w_r)
    }

    /// Moves the rows of `p` whose projection is `<= threshold` (or missing, when `p` sends
    /// missing rows left) to the front, keeping the order of both sides; returns their count.
    fn partition(&self, ws: &mut Workspace, p: &Pending) -> usize {
        let family = self.search.sampler.descriptors();
        if self.search.zeros_as_block {
            // sparse X: from the stored entries (the projection leaves the workspace while
            // its buffers are borrowed)
            let (idx, w) = (
                std::mem::take(&mut ws.arena_idx),
                std::mem::take(&mut ws.arena_w),
            );
            let wp = if family.is_some() {
                &[][..]
            } else {
                &w[p.proj.0..p.proj.1]
            };
            let proj = ProjRef::new(&idx[p.proj.0..p.proj.1], wp, family);
            let n_left = self
                .search
                .partition_sparse(ws, (p.start, p.end), proj, p.threshold);
            (ws.arena_idx, ws.arena_w) = (idx, w);
            if let Some(n_left) = n_left {
                return n_left;
            }
        }
        let w = if family.is_some() {
            &[][..]
        } else {
            &ws.arena_w[p.proj.0..p.proj.1]
        };
        let proj = ProjRef::new(&ws.arena_idx[p.proj.0..p.proj.1], w, family)
            .with_maps(maps_of(&ws.arena_maps, p.maps));
        project(
            self.search.x,
            proj,
            &ws.samples[p.start..p.end],
            &mut ws.terms,
            &mut ws.vals,
        );
        let missing_left = p.missing == Some(true);
        stable_partition(
            &mut ws.samples[p.start..p.end],
            &ws.vals,
            partition_room(&mut ws.pairs, &mut ws.sort_buf),
            |v| v <= p.threshold || (missing_left && v.is_nan()),
        )
    }
}
