//! The prediction layout of a tree (SPORF paper, Sect. 6.4.3, "forest packing"). Node
//! indices are those of the [`Tree`] it was built from, and a leaf points to itself, which
//! is how a walk recognises it. A row whose projection is NaN at a node goes where
//! [`Tree::missing_goes_left`] says, looked up from a per-node table (a NaN compares false
//! both ways, so a walk's common path is one compare).
//!
//! Blocks of rows go down a tree either row by row (eight lanes of dependent loads in
//! flight) or node by node, each node projecting all its rows at once (vectorised across
//! rows for dense projections); whichever walk computes it, a row's projection at a node
//! is the same `f32` value: its terms' products added in term order from 0 (pieces
//! combined as [`PoolSum`] does for a pooled one), as at fit.

use super::{Tree, MULTI};
use crate::projection::{CompactDescriptors, Pool, PoolSum, Pooling};

/// With [`MULTI`]: the node's projection is pooled; its packed entries open with a header
/// (piece length, 1.0 for [`Pool::Min`] else 0.0).
const POOLED: u32 = 1 << 30;
/// With [`MULTI`]: the node's projection has categorical terms; a packed entry whose
/// feature has [`CAT_TERM`] reads its column through the packed level map whose index is
/// the bits of its weight ([`PackedTree::project_coded`]).
const CODED: u32 = 1 << 29;
/// In a coded node's entry: the term is categorical.
const CAT_TERM: u32 = 1 << 31;
use crate::sparse::Row;

/// Rows [`PackedTree::leaves`] sends down a node together ([`PackedTree::leaves_grouped`]);
/// fewer walk one by one.
const GROUP: usize = 16;

/// Rows whose dense projections [`dense_sums`] computes together.
const LANES: usize = 8;

/// The rows a node-by-node walk ([`PackedTree::leaves_among`]) reads: a block laid out by
/// row ([`ByRow`]), or X's own columns ([`ByColumn`]). Either gives each row's features
/// as they are, so the same leaves.
pub(crate) trait Block<'a>: Copy {
    /// A row read feature by feature.
    type Row: Row;
    /// Whether rows are slices ([`Block::slice`]), which dense projections sum eight at
    /// a time.
    const BY_ROW: bool;
    /// Features of a row.
    fn n_features(self) -> usize;
    /// Row `r`.
    fn row(self, r: u32) -> Self::Row;
    /// Row `r` as a slice, for a block by row (`None` otherwise).
    fn slice(self, r: u32) -> Option<&'a [f32]>;
    /// Column `j` over every row, for a block by column (`None` otherwise): a node on one
    /// feature reads its rows' values from it.
    fn column(self, j: usize) -> Option<&'a [f32]>;
}

/// A row-major block: `p` features a row, row `r` at `r * p`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ByRow<'a> {
    /// The rows' values.
    pub(crate) rows: &'a [f32],
    /// Features a row.
    pub(crate) p: usize,
}

impl<'a> Block<'a> for ByRow<'a> {
    type Row = &'a [f32];
    const BY_ROW: bool = true;
    #[inline(always)]
    fn n_features(self) -> usize {
        self.p
    }
    #[inline(always)]
    fn row(self, r: u32) -> &'a [f32] {
        &self.rows[r as usize * self.p..(r as usize + 1) * self.p]
    }
    #[inline(always)]
    fn slice(self, r: u32) -> Option<&'a [f32]> {
        Some(self.row(r))
    }
    #[inline(always)]
    fn column(self, _: usize) -> Option<&'a [f32]> {
        None
    }
}

/// Columns of X, each one slice over every row: row `r`'s feature `j` at `[j][r]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ByColumn<'a>(pub(crate) &'a [&'a [f32]]);

/// Row `.1` of a [`ByColumn`] block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ColumnRow<'a>(&'a [&'a [f32]], usize);

impl Row for ColumnRow<'_> {
    #[inline(always)]
    fn at(self, j: usize) -> f32 {
        self.0[j][self.1]
    }
}

impl<'a> Block<'a> for ByColumn<'a> {
    type Row = ColumnRow<'a>;
    const BY_ROW: bool = false;
    #[inline(always)]
    fn n_features(self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn row(self, r: u32) -> ColumnRow<'a> {
        ColumnRow(self.0, r as usize)
    }
    #[inline(always)]
    fn slice(self, _: u32) -> Option<&'a [f32]> {
        None
    }
    #[inline(always)]
    fn column(self, j: usize) -> Option<&'a [f32]> {
        Some(self.0[j])
    }
}

/// The projections of `LANES` rows (`x[l]`, at least `w.len()` features each) on the dense
/// weights `w` (features `0..w.len()` in order): for each row `0 + w0 x0 + w1 x1 + ...`,
/// added in term order as [`PackedTree::project`] adds them. The eight sums are
/// independent chains of additions, which the processor overlaps (or a vector
/// instruction does at once); a single row's sum is never reassociated.
#[inline(always)]
fn dense_sums(w: &[(u32, f32)], x: &[&[f32]; LANES]) -> [f32; LANES] {
    let mut acc = [0.0f32; LANES];
    for (j, &(_, wj)) in w.iter().enumerate() {
        for l in 0..LANES {
            acc[l] += wj * x[l][j];
        }
    }
    acc
}

/// [`dense_sums`] with AVX: the eight rows are the lanes of one vector, four features of
/// each read at once and transposed in registers, each term a multiplication then an
/// addition (never fused), so every lane is the same `f32` sum as [`dense_sums`]'.
///
/// # Safety
/// The processor must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn dense_sums_avx(w: &[(u32, f32)], x: &[&[f32]; LANES]) -> [f32; LANES] {
    use std::arch::x86_64::*;
    let m = w.len();
    // the reads below stay within each row
    assert!(x.iter().all(|r| r.len() >= m));
    let mut acc = _mm256_setzero_ps();
    let mut j = 0;
    while j + 4 <= m {
        // SAFETY: features j..j + 4 of each row are in it (j + 4 <= m <= its length)
        let quad = |l: usize| unsafe { _mm_loadu_ps(x[l].as_ptr().add(j)) };
        // rows l and l + 4 in the low and high halves; a 4 x 4 transpose in each half
        // gives one vector per feature, lane l holding row l's
        let r0 = _mm256_set_m128(quad(4), quad(0));
        let r1 = _mm256_set_m128(quad(5), quad(1));
        let r2 = _mm256_set_m128(quad(6), quad(2));
        let r3 = _mm256_set_m128(quad(7), quad(3));
        let t0 = _mm256_unpacklo_ps(r0, r1);
        let t1 = _mm256_unpackhi_ps(r0, r1);
        let t2 = _mm256_unpacklo_ps(r2, r3);
        let t3 = _mm256_unpackhi_ps(r2, r3);
        let features = [
            _mm256_shuffle_ps::<0x44>(t0, t2),
            _mm256_shuffle_ps::<0xEE>(t0, t2),
            _mm256_shuffle_ps::<0x44>(t1, t3),
            _mm256_shuffle_ps::<0xEE>(t1, t3),
        ];
        for (k, f) in features.into_iter().enumerate() {
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(w[j + k].1), f));
        }
        j += 4;
    }
    let mut out = [0.0f32; LANES];
    // SAFETY: `out` holds eight floats
    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), acc) };
    for (jj, &(_, wj)) in w.iter().enumerate().skip(j) {
        for l in 0..LANES {
            out[l] += wj * x[l][jj];
        }
    }
    out
}

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
    /// `m` when every inner node's projection is linear with the terms features `0..m` in
    /// that order (dense projections over every feature: Gaussian's), else 0: such a tree
    /// reads a row's first `m` features as a slice ([`dense_sums`]).
    dense: u32,
    /// The level maps of coded nodes' categorical terms, each level's value multiplied
    /// by its term's weight (the product training computes): map `m` is
    /// `map_levels[map_ptr[m]..map_ptr[m + 1]]`. Empty for a tree of numeric splits.
    map_ptr: Vec<u32>,
    map_levels: Vec<u32>,
    map_values: Vec<f32>,
    map_unseen: Vec<f32>,
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
            dense: 0,
            map_ptr: Vec::new(),
            map_levels: Vec::new(),
            map_values: Vec::new(),
            map_unseen: Vec::new(),
        };
        // the length of every inner node's dense projection so far (None before the first)
        let mut dense: Option<usize> = None;
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
                let maps = proj.maps();
                proj.for_each(|j, w| p.proj.push((j as u32, w)));
                if let Some(maps) = maps {
                    p.pack_maps(start, maps);
                }
                let (a, b) = if maps.is_some() {
                    (MULTI | CODED | start as u32, (p.proj.len() - start) as u32)
                } else if pooling.is_some() {
                    (MULTI | POOLED | start as u32, (p.proj.len() - start) as u32)
                } else if p.proj.len() - start == 1 {
                    let (j, w) = p.proj.pop().unwrap_or((0, 0.0));
                    (j, w.to_bits())
                } else {
                    (MULTI | start as u32, (p.proj.len() - start) as u32)
                };
                let terms = &p.proj[start..];
                let contiguous = a & (MULTI | POOLED | CODED) == MULTI
                    && terms.iter().enumerate().all(|(k, &(j, _))| j as usize == k);
                dense = match dense {
                    _ if !contiguous => Some(0),
                    None => Some(terms.len()),
                    Some(m) if m == terms.len() => Some(m),
                    Some(_) => Some(0),
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
        p.dense = dense.unwrap_or(0) as u32;
        p
    }

    #[inline(always)]
    fn project<R: Row>(&self, nd: PackedNode, row: R) -> f32 {
        if nd.a & MULTI == 0 {
            f32::from_bits(nd.b) * row.at(nd.a as usize)
        } else if nd.a & (POOLED | CODED) == 0 {
            self.linear(nd, row)
        } else if nd.a & POOLED != 0 {
            self.project_pooled(nd, row)
        } else {
            self.project_coded(nd, row)
        }
    }

    /// Marks the categorical terms of the node whose entries start at `start` and packs
    /// their maps (values times the term's weight).
    fn pack_maps(&mut self, start: usize, maps: crate::columns::TermMaps<'_>) {
        if self.map_ptr.is_empty() {
            self.map_ptr.push(0);
        }
        for (m, &k) in maps.term.iter().enumerate() {
            let entry = &mut self.proj[start + k as usize];
            let (levels, values) = maps.map(m);
            let index = (self.map_ptr.len() - 1) as u32;
            self.map_levels.extend_from_slice(levels);
            self.map_values.extend(values.iter().map(|&v| entry.1 * v));
            self.map_unseen.push(entry.1 * maps.unseen[m]);
            self.map_ptr.push(self.map_levels.len() as u32);
            *entry = (entry.0 | CAT_TERM, f32::from_bits(index));
        }
    }

    /// [`Self::project`] of a node with categorical terms: the products added in term
    /// order, a categorical term's product looked up from its packed map (NaN for a level
    /// it does not hold), as [`crate::columns::TermMaps::value_by`] computes them.
    #[inline(never)]
    fn project_coded<R: Row>(&self, nd: PackedNode, row: R) -> f32 {
        let start = (nd.a & !(MULTI | CODED)) as usize;
        let mut s = 0.0f32;
        for &(j, w) in &self.proj[start..start + nd.b as usize] {
            if j & CAT_TERM == 0 {
                s += w * row.at(j as usize);
            } else {
                let m = w.to_bits() as usize;
                let (a, b) = (self.map_ptr[m] as usize, self.map_ptr[m + 1] as usize);
                let x = row.at((j & !CAT_TERM) as usize);
                let (levels, values) = (&self.map_levels[a..b], &self.map_values[a..b]);
                s += crate::columns::encode(levels, values, self.map_unseen[m], x);
            }
        }
        s
    }

    /// [`Self::project`] of a linear node of several terms: their sum in order.
    #[inline(always)]
    fn linear<R: Row>(&self, nd: PackedNode, row: R) -> f32 {
        let start = (nd.a & !MULTI) as usize;
        let mut s = 0.0f32;
        for &(j, w) in &self.proj[start..start + nd.b as usize] {
            s += w * row.at(j as usize);
        }
        s
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
        self.leaf_below(0, row)
    }

    /// The leaf a row reaches from node `i` on.
    #[inline]
    fn leaf_below<R: Row>(&self, mut i: usize, row: R) -> usize {
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

    /// The leaves of every row of a row-major block (`p` features a row) into `out`:
    /// node by node (each node projecting all the rows that reach it) where nodes get
    /// many rows, else row by row ([`Self::leaves_by`]); the same leaves either way.
    pub fn leaves(&self, rows: &[f32], p: usize, out: &mut [u32]) {
        let n = out.len();
        if self.by_node(n) {
            self.leaves_grouped_dispatch(ByRow { rows, p }, (0..n as u32).collect(), out);
        } else {
            self.leaves_by(|k| &rows[k * p..(k + 1) * p], out);
        }
    }

    /// [`PackedTree::leaves`] of the rows `among` of a row-major block only (indices
    /// into the block, each at most once): `out[r]` for every `r` in `among`, the other
    /// entries of `out` untouched. `reached` is scratch for the row-by-row walk.
    pub fn leaves_among(
        &self,
        rows: &[f32],
        p: usize,
        among: &[u32],
        out: &mut [u32],
        reached: &mut Vec<u32>,
    ) {
        if self.by_node(among.len()) {
            self.leaves_grouped_dispatch(ByRow { rows, p }, among.to_vec(), out);
        } else {
            let row = |k: usize| {
                let r = among[k] as usize;
                &rows[r * p..(r + 1) * p]
            };
            reached.resize(among.len(), 0);
            self.leaves_by(row, reached);
            for (&r, &leaf) in among.iter().zip(reached.iter()) {
                out[r as usize] = leaf;
            }
        }
    }

    /// [`PackedTree::leaves_among`] on X's own columns (`columns[j][r]`: feature j of
    /// row r), where it takes `among` down node by node (true: `out` holds their leaves);
    /// else false, `out` untouched (the caller walks those rows by row).
    pub fn leaves_among_by_column(
        &self,
        columns: &[&[f32]],
        among: &[u32],
        out: &mut [u32],
    ) -> bool {
        if !self.by_node(among.len()) {
            return false;
        }
        self.leaves_grouped_dispatch(ByColumn(columns), among.to_vec(), out);
        true
    }

    /// Whether `n` rows go down node by node ([`Self::leaves_grouped`]): it pays where
    /// nodes get many rows, dense projections (whose sums it vectorises) or trees with
    /// fewer nodes than rows (isolation trees, shallow ones, the small trees of a
    /// rotation ensemble's micro-forests); the deep levels of a fully grown tree see a
    /// row or two a node, which the eight-lane walk takes faster.
    fn by_node(&self, n: usize) -> bool {
        n >= GROUP && (self.dense > 0 || n >= self.nodes.len())
    }

    /// [`Self::leaves_grouped`] in its AVX2 build where the processor has AVX2.
    fn leaves_grouped_dispatch<'a>(&self, x: impl Block<'a>, among: Vec<u32>, out: &mut [u32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, checked just above
            return unsafe { self.leaves_grouped_avx2(x, among, out) };
        }
        self.leaves_grouped::<_, false>(x, among, out);
    }

    /// [`Self::leaves_grouped`] compiled for AVX2: the same operations (vector and
    /// scalar arithmetic round alike, and multiplications and additions stay apart), eight
    /// lanes to an instruction instead of four.
    ///
    /// # Safety
    /// The processor must have AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn leaves_grouped_avx2<'a>(&self, x: impl Block<'a>, among: Vec<u32>, out: &mut [u32]) {
        self.leaves_grouped::<_, true>(x, among, out)
    }

    /// [`PackedTree::leaves`] of the rows `among` (at least [`GROUP`] of them; indices
    /// into the block, each at most once): the rows go down the tree together, node by
    /// node (depth first), each node projecting all the rows that reach it while its
    /// projection is in registers and cache, and sending each to its side without a
    /// branch. There is no chain of dependent loads from node to node as in a
    /// walk, and a side mispredicted half the time costs nothing. A node reached by fewer
    /// than [`GROUP`] rows walks each of them down the rest of the way instead.
    ///
    /// A tree whose inner nodes are all dense over features `0..m` ([`Self::dense`])
    /// projects eight rows at a time, their sums independent chains the processor
    /// overlaps (one row's sum is a chain of dependent additions), reading four
    /// features of each row at once. Every row's sum is still `0 + w0 x0 + w1 x1 + ...`
    /// in term order, the value [`Self::project`] computes.
    ///
    /// `AVX` (only from [`Self::leaves_grouped_avx2`]): the dense sums use
    /// [`dense_sums_avx`].
    #[inline(always)]
    fn leaves_grouped<'a, B: Block<'a>, const AVX: bool>(
        &self,
        x: B,
        among: Vec<u32>,
        out: &mut [u32],
    ) {
        let m = self.dense as usize;
        let dense = m > 0 && m <= x.n_features();
        let n = among.len();
        let row = |r: u32| x.row(r);
        // the rows at each node: a node's rows are a range of one of two buffers, which
        // it partitions into the other (children take their parent's range; ranges of
        // nodes at one depth do not overlap, so depth parity picks the buffer)
        let mut idx = [among, vec![0u32; n]];
        let mut stack = vec![(0usize, 0usize, n, 0usize)];
        while let Some((i, start, end, depth)) = stack.pop() {
            let nd = self.nodes[i];
            let [a, b] = &mut idx;
            let (src, dst) = if depth % 2 == 0 { (&*a, b) } else { (&*b, a) };
            let src = &src[start..end];
            if nd.left as usize == i {
                for &r in src {
                    out[r as usize] = i as u32;
                }
                continue;
            }
            if src.len() < GROUP {
                for &r in src {
                    out[r as usize] = self.leaf_below(i, row(r)) as u32;
                }
                continue;
            }
            let dst = &mut dst[start..end];
            let (mut lo, mut hi) = (0usize, dst.len());
            // Self::goes_right without a branch (a row's side is a coin toss a predictor
            // would miss half the time; a NaN compares false, so it goes right when the
            // node's missing side is), the row written at both ends, one of which a later
            // row may overwrite
            let missing_right = usize::from(self.missing_right[i]);
            let mut place = |r: u32, v: f32| {
                let right =
                    usize::from(v > nd.threshold) | (usize::from(v.is_nan()) & missing_right);
                debug_assert!(lo < hi && hi <= dst.len());
                // SAFETY: each of the node's rows is placed once, and a placed row moves
                // lo up or hi down by one, so before the t-th row lo + (len - hi) = t < len:
                // lo <= t < hi <= len, both positions inside `dst`
                unsafe {
                    *dst.get_unchecked_mut(lo) = r;
                    *dst.get_unchecked_mut(hi - 1) = r;
                }
                lo += 1 - right;
                hi -= right;
            };
            if dense && B::BY_ROW {
                let w_start = (nd.a & !MULTI) as usize;
                let w = &self.proj[w_start..w_start + m];
                let mut chunks = src.chunks_exact(LANES);
                for chunk in &mut chunks {
                    let x: [&[f32]; LANES] = std::array::from_fn(|l| {
                        &x.slice(chunk[l]).expect("a block by row (checked above)")[..m]
                    });
                    #[cfg(target_arch = "x86_64")]
                    let acc = if AVX {
                        // SAFETY: AVX is only true in a function compiled for AVX2, called
                        // where the processor has it
                        unsafe { dense_sums_avx(w, &x) }
                    } else {
                        dense_sums(w, &x)
                    };
                    #[cfg(not(target_arch = "x86_64"))]
                    let acc = dense_sums(w, &x);
                    for l in 0..LANES {
                        place(chunk[l], acc[l]);
                    }
                }
                for &r in chunks.remainder() {
                    place(r, self.project(nd, row(r)));
                }
            } else if nd.a & MULTI == 0 {
                // one feature (axis-aligned splits): its index and weight stay in registers
                let (j, w) = (nd.a as usize, f32::from_bits(nd.b));
                if let Some(column) = x.column(j) {
                    for &r in src {
                        place(r, w * column[r as usize]);
                    }
                } else {
                    for &r in src {
                        place(r, w * row(r).at(j));
                    }
                }
            } else if nd.a & (POOLED | CODED) == 0 {
                for &r in src {
                    place(r, self.linear(nd, row(r)));
                }
            } else {
                for &r in src {
                    place(r, self.project(nd, row(r)));
                }
            }
            let left = nd.left as usize;
            stack.push((left, start, start + lo, depth + 1));
            stack.push((left + 1, start + lo, end, depth + 1));
        }
    }

    /// [`PackedTree::leaves`] of rows `0..out.len()`, row `k` read through `row(k)` (a
    /// dense slice, or a sparse row of a CSR matrix).
    #[inline]
    pub fn leaves_by<R: Row>(&self, row: impl Fn(usize) -> R, out: &mut [u32]) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::Forest;
    use crate::params::ForestParams;
    use crate::projection::{
        AxisAligned, Density, Gaussian, Projection, SparseSigned, WeightScale,
    };
    use crate::rng::Rng;
    use ndarray::Array2;

    /// `n` x `p` normal values spread over many binary orders of magnitude, so that a sum
    /// added in another order would often round differently; some NaN when `missing`.
    fn rows(n: usize, p: usize, seed: u64, missing: bool) -> Array2<f32> {
        let mut rng = Rng::from_seed(seed);
        Array2::from_shape_fn((n, p), |_| {
            let v = rng.normal() * 2f64.powi((rng.normal() * 8.0) as i32);
            if missing && rng.normal() > 1.8 {
                f32::NAN
            } else {
                v as f32
            }
        })
    }

    #[test]
    fn dense_sums_add_each_rows_terms_in_order() {
        let mut reordered_differs = false;
        for m in 1..=23 {
            let x = rows(LANES, m, m as u64, false);
            let w: Vec<(u32, f32)> = rows(1, m, 100 + m as u64, false)
                .iter()
                .enumerate()
                .map(|(j, &w)| (j as u32, w))
                .collect();
            let lanes: [&[f32]; LANES] = std::array::from_fn(|l| x.row(l).to_slice().unwrap());
            let want: Vec<u32> = lanes
                .iter()
                .map(|row| {
                    let mut s = 0.0f32;
                    for (&(_, w), &v) in w.iter().zip(*row) {
                        s += w * v;
                    }
                    s.to_bits()
                })
                .collect();
            let bits = |s: [f32; LANES]| s.map(f32::to_bits).to_vec();
            assert_eq!(bits(dense_sums(&w, &lanes)), want, "m = {m}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx") {
                // SAFETY: the processor has AVX, checked just above
                let avx = unsafe { dense_sums_avx(&w, &lanes) };
                assert_eq!(bits(avx), want, "m = {m}");
            }
            // (the data tell orders apart: the same terms added last to first differ)
            for row in lanes {
                let mut s = 0.0f32;
                for (&(_, w), &v) in w.iter().zip(row).rev() {
                    s += w * v;
                }
                reordered_differs |= !want.contains(&s.to_bits());
            }
        }
        assert!(reordered_differs);
    }

    #[test]
    fn grouped_walk_reaches_the_leaves_of_the_row_walk() {
        let isolation = |projection| ForestParams {
            n_estimators: 6,
            ..crate::forest::unsupervised_tests::isolation(projection, 128)
        };
        let sporf = Projection::new(SparseSigned {
            density: Density::FeatureCombinations(2.0),
            scaling: WeightScale::None,
        });
        let p = 7;
        let x = rows(301, p, 1, true);
        let mut no_first = x.clone();
        no_first.column_mut(0).fill(f32::NAN);
        let cases = [
            // every inner node dense over features 0..7
            (isolation(Projection::new(Gaussian)), &x, true),
            // dense over features 1..7: the general path
            (isolation(Projection::new(Gaussian)), &no_first, false),
            (isolation(Projection::new(AxisAligned)), &x, false),
            (isolation(sporf), &x, false),
        ];
        let mut by_column_walks = 0usize;
        for (params, x, dense) in cases {
            let f = Forest::fit(&params, x.view(), &[], None).unwrap();
            let flat: Vec<f32> = x.iter().copied().collect();
            for pt in f.packed() {
                assert_eq!(pt.dense > 0, dense);
                assert_eq!(pt.dense, if dense { p as u32 } else { 0 });
                for n in [0, 1, 7, 15, 16, 17, 23, 24, 25, 64, 301] {
                    let want: Vec<u32> = (0..n)
                        .map(|i| pt.leaf(&flat[i * p..(i + 1) * p]) as u32)
                        .collect();
                    let mut got = vec![u32::MAX; n];
                    pt.leaves(&flat[..n * p], p, &mut got);
                    assert_eq!(got, want, "n = {n}");
                    if n >= GROUP {
                        // the portable build of the walk, which AVX2 machines skip
                        let mut got = vec![u32::MAX; n];
                        pt.leaves_grouped::<_, false>(
                            ByRow {
                                rows: &flat[..n * p],
                                p,
                            },
                            (0..n as u32).collect(),
                            &mut got,
                        );
                        assert_eq!(got, want, "n = {n}");
                    }
                    // only some rows of the block: every `step`-th from `first`, the rest
                    // of `out` untouched
                    for (first, step) in [(0, 1), (3, 2), (1, 5), (2, 13)] {
                        let among: Vec<u32> = (first..n as u32).step_by(step as usize).collect();
                        let mut got = vec![u32::MAX; n];
                        let mut reached = Vec::new();
                        pt.leaves_among(&flat[..n * p], p, &among, &mut got, &mut reached);
                        let expected = |r: usize| {
                            if among.contains(&(r as u32)) {
                                want[r]
                            } else {
                                u32::MAX
                            }
                        };
                        for (r, &leaf) in got.iter().enumerate() {
                            assert_eq!(leaf, expected(r), "n = {n}, row {r} of {among:?}");
                        }
                        // the same rows read from the block's columns, where the tree
                        // takes them node by node
                        let columns: Vec<Vec<f32>> = (0..p)
                            .map(|j| (0..n).map(|i| flat[i * p + j]).collect())
                            .collect();
                        let columns: Vec<&[f32]> = columns.iter().map(Vec::as_slice).collect();
                        let mut got = vec![u32::MAX; n];
                        let by_node = pt.leaves_among_by_column(&columns, &among, &mut got);
                        assert_eq!(by_node, pt.by_node(among.len()), "n = {n}");
                        for (r, &leaf) in got.iter().enumerate() {
                            let expected = if by_node { expected(r) } else { u32::MAX };
                            assert_eq!(leaf, expected, "by column, n = {n}, row {r}");
                        }
                        by_column_walks += usize::from(by_node);
                    }
                }
            }
        }
        assert!(by_column_walks > 0);
    }
}
