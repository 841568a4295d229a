//! The prediction layout of a tree (SPORF paper, Sect. 6.4.3, "forest packing"). Node
//! indices are those of the [`Tree`] it was built from, and a leaf points to itself, which
//! is how a walk recognises it. A row whose projection is NaN at a node goes where
//! [`Tree::missing_goes_left`] says, looked up from a per-node table consulted only for
//! such rows (a NaN compares false both ways, so the common path is one compare).

use super::{Tree, MULTI};
use crate::projection::{CompactDescriptors, Pool, PoolSum, Pooling};

/// With [`MULTI`]: the node's projection is pooled; its packed entries open with a header
/// (piece length, 1.0 for [`Pool::Min`] else 0.0).
const POOLED: u32 = 1 << 30;
use crate::sparse::Row;

/// One node of a [`PackedTree`]: 16 bytes, one cache line holds four.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct PackedNode {
    /// Single feature index, or `MULTI | start` (`MULTI | POOLED | start` for a pooled
    /// projection) into the packed projection arrays; for a
    /// leaf, its row in the leaf-value table.
    a: u32,
    /// The single feature's weight (f32 bits), or the projection's length; for a leaf,
    /// 1 + its class when its value is one-hot, else 0.
    b: u32,
    threshold: f32,
    /// Left child (the right child is `left + 1`), or [`super::LEAF`].
    left: u32,
}

/// A tree laid out for prediction (SPORF paper, Sect. 6.4.3, "forest packing"): nodes as
/// one array of 16-byte records with children adjacent, the common single-feature split
/// stored inline so traversal touches one record per level. Node indices are those of
/// the [`Tree`] it was built from, so leaves map back to `Tree::value` directly.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedTree {
    nodes: Vec<PackedNode>,
    /// (feature, weight) of multi-feature projections, interleaved: one cache line, not two.
    proj: Vec<(u32, f32)>,
    /// Per node, 1 when a row with a missing (NaN) projection goes right
    /// ([`Tree::missing_goes_left`]); read only for such rows.
    missing_right: Vec<u8>,
}

impl PackedTree {
    /// Packs a tree for prediction.
    pub fn new(tree: &Tree, descriptors: Option<&dyn CompactDescriptors>) -> PackedTree {
        let mut p = PackedTree {
            nodes: Vec::with_capacity(tree.n_nodes()),
            proj: Vec::new(),
            missing_right: (0..tree.n_nodes())
                .map(|i| u8::from(!tree.is_leaf(i) && !tree.missing_goes_left(i)))
                .collect(),
        };
        for node in 0..tree.n_nodes() {
            let (a, b, threshold, left) = if tree.is_leaf(node) {
                // a leaf points to itself, which is how a walk recognises it; its `a` holds
                // its row in the tree's leaf-value table, its `b` 1 + the class of a one-hot
                // value (a pure classification leaf), else 0
                let value = tree.leaf_value(node);
                let b = match value.iter().position(|&v| v != 0.0) {
                    Some(c) if value[c] == 1.0 && value[c + 1..].iter().all(|&v| v == 0.0) => {
                        1 + c as u32
                    }
                    _ => 0,
                };
                (tree.right[node], b, f32::INFINITY, node as u32)
            } else {
                // patches are expanded here (prediction cache only; the model keeps the
                // compact descriptor), in the order training summed them
                let start = p.proj.len();
                let proj = tree.proj(node, descriptors);
                let pooling = proj.pooling();
                if let Some(pl) = pooling {
                    // a pooled projection: a header (piece length, Min as 1.0), then its terms
                    let min = f32::from(u8::from(pl.pool == Pool::Min));
                    p.proj.push((pl.piece_len as u32, min));
                }
                proj.for_each(|j, w| p.proj.push((j as u32, w)));
                let (a, b) = if pooling.is_some() {
                    (MULTI | POOLED | start as u32, (p.proj.len() - start) as u32)
                } else if p.proj.len() - start == 1 {
                    let (j, w) = p.proj.pop().unwrap_or((0, 0.0));
                    (j, w.to_bits())
                } else {
                    (MULTI | start as u32, (p.proj.len() - start) as u32)
                };
                (a, b, tree.threshold[node], tree.left[node])
            };
            p.nodes.push(PackedNode {
                a,
                b,
                threshold,
                left,
            });
        }
        p
    }

    #[inline(always)]
    fn project<R: Row>(&self, nd: PackedNode, row: R) -> f32 {
        if nd.a & MULTI == 0 {
            f32::from_bits(nd.b) * row.at(nd.a as usize)
        } else if nd.a & POOLED == 0 {
            let start = (nd.a & !MULTI) as usize;
            let end = start + nd.b as usize;
            let mut s = 0.0f32;
            for &(j, w) in &self.proj[start..end] {
                s += w * row.at(j as usize);
            }
            s
        } else {
            self.project_pooled(nd, row)
        }
    }

    /// [`Self::project`] of a pooled node: [`PoolSum`] over its terms, as
    /// [`crate::projection::ProjRef::value_by`] computes it.
    #[inline(never)]
    fn project_pooled<R: Row>(&self, nd: PackedNode, row: R) -> f32 {
        let start = (nd.a & !(MULTI | POOLED)) as usize;
        let end = start + nd.b as usize;
        let (piece_len, min) = self.proj[start];
        let pool = if min == 1.0 { Pool::Min } else { Pool::Max };
        let mut acc = PoolSum::new(Pooling {
            pool,
            piece_len: piece_len as usize,
        });
        for &(j, w) in &self.proj[start + 1..end] {
            acc.add(w * row.at(j as usize));
        }
        acc.value()
    }

    /// The leaf (node index) a row reaches; identical to [`Tree::leaf`].
    #[inline]
    pub fn leaf(&self, row: &[f32]) -> usize {
        self.leaf_of(row)
    }

    /// [`PackedTree::leaf`] of a row read through [`Row`].
    #[inline]
    fn leaf_of<R: Row>(&self, row: R) -> usize {
        let mut i = 0usize;
        loop {
            let nd = self.nodes[i];
            if nd.left as usize == i {
                return i;
            }
            i = nd.left as usize + self.goes_right(i, nd, self.project(nd, row));
        }
    }

    /// 1 when a row with projected value `v` at inner node `i` goes right: `v > threshold`,
    /// or the node's missing-value side when `v` is NaN.
    #[inline(always)]
    fn goes_right(&self, i: usize, nd: PackedNode, v: f32) -> usize {
        if v.is_nan() {
            self.missing_right[i] as usize
        } else {
            (v > nd.threshold) as usize
        }
    }

    /// The leaves of every row of a row-major block (`p` features a row) into `out`.
    /// Eight rows go down the tree side by side, so eight independent chains of dependent
    /// loads are in flight instead of one; a lane that reaches its leaf takes the next row
    /// at once, so the work follows the total path length, not the deepest leaf.
    pub fn leaves(&self, rows: &[f32], p: usize, out: &mut [u32]) {
        self.leaves_by(|k| &rows[k * p..(k + 1) * p], out);
    }

    /// [`PackedTree::leaves`] of rows `0..out.len()`, row `k` read through `row(k)` (a
    /// dense slice, or a sparse row of a CSR matrix).
    #[inline]
    pub fn leaves_by<R: Row>(&self, row: impl Fn(usize) -> R, out: &mut [u32]) {
        const LANES: usize = 8;
        let n = out.len();
        if n < LANES {
            for (k, o) in out.iter_mut().enumerate() {
                *o = self.leaf_of(row(k)) as u32;
            }
            return;
        }
        let mut lane_row = [0usize; LANES];
        let mut idx = [0u32; LANES];
        for (l, r) in lane_row.iter_mut().enumerate() {
            *r = l;
        }
        let mut next = LANES;
        let mut active = LANES;
        let mut live = [true; LANES];
        while active > 0 {
            for l in 0..LANES {
                if !live[l] {
                    continue;
                }
                let i = idx[l];
                let nd = self.nodes[i as usize];
                if nd.left == i {
                    // at its leaf: record it and start the next row in this lane
                    out[lane_row[l]] = i;
                    if next < n {
                        lane_row[l] = next;
                        idx[l] = 0;
                        next += 1;
                    } else {
                        live[l] = false;
                        active -= 1;
                    }
                } else {
                    let v = self.project(nd, row(lane_row[l]));
                    idx[l] = nd.left + self.goes_right(i as usize, nd, v) as u32;
                }
            }
        }
    }

    /// The class of leaf `node` when its value is one-hot (1 for that class, 0 for the
    /// others), so that adding it to a sum is adding 1 at the class.
    #[inline]
    pub fn pure_class(&self, node: usize) -> Option<usize> {
        (self.nodes[node].b as usize).checked_sub(1)
    }

    /// The row of leaf `node` in its tree's leaf-value table ([`Tree::leaf_row`]).
    #[inline]
    pub fn leaf_row(&self, node: usize) -> usize {
        self.nodes[node].a as usize
    }

    /// Bytes used by the packed layout (the leaf values stay in the [`Tree`]).
    pub fn n_bytes(&self) -> usize {
        self.nodes.len() * std::mem::size_of::<PackedNode>()
            + self.proj.len() * 8
            + self.missing_right.len()
    }
}
