//! Parallel subtrees: the two children of a large node grow their subtrees on their own
//! random streams, so the second may grow on another thread while the first grows here.
//!
//! Rule: a node of at least [`FORK_ROWS`] in-bag rows, once split, draws two seeds from its
//! stream: the left child's subtree grows on a stream from the first, the right child's on
//! one from the second. The rule depends on the node's rows only, never on the threads, so
//! a tree is the same at any thread count: with one thread (or when no thread is free) both
//! subtrees grow here, one after the other; when a free thread takes the right one
//! ([`rayon::join_context`]: it *migrated*), it grows as a [`Fragment`] (its own rows' copy,
//! tree and workspace) that is then moved into the tree's node slots. Either way the nodes
//! come in the same order: the two children in adjacent slots (`right = left + 1`, as the
//! tree's layout wants), then the left child's descendants, then the right child's; each
//! slot holds the same values, since a subtree reads only its rows, in their order, and its
//! stream. Trees whose root has fewer rows never fork, and grow as they always did. While
//! a fit has at least as many trees left as threads ([`TreesGrowing`]), every thread has a
//! tree of its own: a fork then grows both subtrees here, without offering the right one
//! (nor copying its rows for another thread).
//!
//! Why [`FORK_ROWS`] = 8,192: a subtree of that many rows costs milliseconds of search
//! (about `n log n` sorted values per candidate and level), against microseconds for a
//! fork taken by another thread (a copy of 32 KiB of row indices, a workspace, the move of
//! its nodes) and nanoseconds for one that is not (two random draws). It leaves a 10^6-row
//! tree over a hundred subtrees to share out, enough to keep 16-64 threads busy after
//! the first levels, and a tree below 8,192 rows (every test's pinned model) unchanged.

use super::builder::{note_missing_side, push_slot, Builder, Pending, Slot};
use super::criterion::Criterion;
use super::growing::TreesGrowing;
use super::monotonic::Bounds;
use super::workspace::Workspace;
use super::{Tree, LEAF};
use crate::probe::{self, Count};
use crate::rng::Rng;
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

/// Nodes with at least this many in-bag rows hand their children their own random streams
/// (the module's rule; why this number: its docs).
pub(super) const FORK_ROWS: usize = 8192;

/// What `shared` holds, unless it is held already (a panic elsewhere set aside).
pub(super) fn held_now<T>(shared: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match shared.try_lock() {
        Ok(held) => Some(held),
        Err(TryLockError::Poisoned(held)) => Some(held.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// A subtree grown on another thread: node 0 is its root, the rest its descendants, its
/// workspace holding their projections, level maps and values.
struct Fragment {
    tree: Tree,
    ws: Workspace,
}

impl<C: Criterion> Builder<'_, C> {
    /// Whether the split node `p` forks (depth-first growth only: best-first growth under
    /// `max_leaf_nodes` orders its nodes across the whole tree).
    pub(super) fn forks(&self, p: &Pending) -> bool {
        // (tests fork the subtrees of small data)
        let at_least = self.search.cfg.fork_rows.unwrap_or(FORK_ROWS);
        self.search.cfg.max_leaf_nodes.is_none() && p.end - p.start >= at_least
    }

    /// Grows the children of the split node `p` (rows `start..mid` left, `mid..end` right,
    /// with their monotonic bounds) and their subtrees, each on a stream seeded from
    /// `rng`; the right one on a free thread when there is one.
    pub(super) fn fork(
        &self,
        tree: &mut Tree,
        ws: &mut Workspace,
        rng: &mut Rng,
        p: &Pending,
        (mid, bounds_l, bounds_r): (usize, Bounds, Bounds),
        limits: (f64, f64),
    ) {
        let k = self.search.cfg.n_outputs;
        let node = p.node as usize;
        let l = push_slot(tree, ws, k);
        let r = push_slot(tree, ws, k);
        tree.left[node] = l as u32;
        tree.right[node] = r as u32;
        let mut rng_l = Rng::from_seed(rng.next_u64());
        let mut rng_r = Rng::from_seed(rng.next_u64());
        let depth = p.depth + 1;
        let left = Slot {
            node: l,
            rows: (p.start, mid, depth),
            bounds: bounds_l,
        };
        let right = Slot {
            node: r,
            rows: (mid, p.end, depth),
            bounds: bounds_r,
        };
        let offered =
            rayon::current_num_threads() > 1 && self.growing.is_none_or(TreesGrowing::may_spare);
        if !offered {
            // (no thread to take the right subtree: both here, without the right rows' copy)
            self.grow_child(tree, ws, &mut rng_l, left, limits);
            self.grow_child(tree, ws, &mut rng_r, right, limits);
        } else {
            // the right rows' copy, for a thread that takes them (the left subtree
            // reorders only `start..mid`)
            let rows = ws.samples[mid..p.end].to_vec();
            let shared = Mutex::new((&mut *tree, &mut *ws));
            let carried = crate::cancel::carry();
            let (_, fragment) = rayon::join_context(
                |_| {
                    let mut held = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    let (tree, ws) = &mut *held;
                    self.grow_child(tree, ws, &mut rng_l, left, limits);
                },
                |ctx| {
                    // here, after the left subtree: in place, as with one thread
                    if let Some(mut held) = (!ctx.migrated()).then(|| held_now(&shared)).flatten() {
                        let (tree, ws) = &mut *held;
                        self.grow_child(tree, ws, &mut rng_r, right, limits);
                        return None;
                    }
                    // on another thread (or here while the left subtree holds the tree,
                    // which rayon's order of jobs rules out): a fragment, the same nodes
                    probe::count(Count::Fragments);
                    let grown = carried
                        .run(|| self.grow_fragment(rows, &mut rng_r, depth, limits, bounds_r));
                    Some(grown)
                },
            );
            if let Some(fragment) = fragment {
                fragment.move_into(tree, ws, r);
            }
        }
        note_missing_side(tree, node, p.missing);
    }

    /// The subtree of `rows` (a node at `depth`) grown in a fragment of its own.
    fn grow_fragment(
        &self,
        rows: Vec<u32>,
        rng: &mut Rng,
        depth: u32,
        limits: (f64, f64),
        bounds: Bounds,
    ) -> Fragment {
        let mut ws = Workspace::default();
        self.prepare(&mut ws, rows.len());
        let n = rows.len();
        ws.samples = rows;
        let mut tree = Tree {
            n_outputs: self.search.cfg.n_outputs,
            ..Tree::default()
        };
        let root = push_slot(&mut tree, &mut ws, self.search.cfg.n_outputs);
        let slot = Slot {
            node: root,
            rows: (0, n, depth),
            bounds,
        };
        self.grow_child(&mut tree, &mut ws, rng, slot, limits);
        Fragment { tree, ws }
    }
}

impl Fragment {
    /// Moves the fragment into `tree` (and its workspace's node table): its root into
    /// slot `slot`, its other nodes appended in their order, child links, projections'
    /// and level maps' ranges renumbered.
    fn move_into(self, tree: &mut Tree, ws: &mut Workspace, slot: usize) {
        let Fragment { tree: f, ws: fw } = self;
        let k = tree.n_outputs;
        let base = tree.n_nodes() as u32;
        // fragment node `c` >= 1 lands at `base + c - 1`; node 0 is nobody's child
        let id = |c: u32| match c {
            LEAF => LEAF,
            0 => slot as u32,
            c => base + c - 1,
        };
        let idx_at = ws.arena_idx.len() as u32;
        let maps_at = ws.arena_maps.n_maps() as u32;
        ws.arena_idx.extend_from_slice(&fw.arena_idx);
        ws.arena_w.extend_from_slice(&fw.arena_w);
        ws.arena_maps
            .extend_from(&fw.arena_maps, (0, fw.arena_maps.n_maps()));
        let shift = |(a, b): (u32, u32), by: u32| if a == b { (a, b) } else { (a + by, b + by) };
        for i in 0..f.n_nodes() {
            let at = if i == 0 { slot } else { push_slot(tree, ws, k) };
            tree.left[at] = id(f.left[i]);
            tree.right[at] = id(f.right[i]);
            tree.threshold[at] = f.threshold[i];
            tree.impurity[at] = f.impurity[i];
            tree.n_node_samples[at] = f.n_node_samples[i];
            tree.weighted_n_node_samples[at] = f.weighted_n_node_samples[i];
            tree.depth[at] = f.depth[i];
            ws.node_proj[at] = shift(fw.node_proj[i], idx_at);
            ws.node_maps[at] = shift(fw.node_maps[i], maps_at);
            ws.node_values[at * k..(at + 1) * k]
                .copy_from_slice(&fw.node_values[i * k..(i + 1) * k]);
        }
        tree.missing_flip
            .extend(f.missing_flip.iter().map(|&m| id(m)));
    }
}
