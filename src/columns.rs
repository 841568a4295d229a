//! Column kinds: numeric and categorical columns.
//!
//! A categorical column holds level codes: the values `0, 1, …, levels - 1` (as `f32`,
//! exact up to [`MAX_LEVELS`]), NaN for a missing entry. The strings behind the codes
//! (the dictionary) live with whoever reads strings: the Python estimators
//! (`categories_`), the model file's header, the command line. The engine sees codes
//! only; [`crate::params::ForestParams::categorical`] gives each column's number of
//! levels (0 for a numeric column).
//!
//! # How a node splits on a categorical column
//!
//! A categorical term of a projection (an axis-aligned candidate on such a column, or a
//! term of an oblique one) is read at a node through a **level map** computed from that
//! node's in-bag rows only ([`crate::tree`]'s categorical part of the split search):
//!
//! 1. each level present among the node's rows gets the criterion's statistic of its rows
//!    (the class distribution, or the mean of each output; the median for
//!    `absolute_error`); levels with fewer than `min_category_samples` rows at the node are
//!    taken together and share the statistic of their pooled rows;
//! 2. the statistic becomes one number per level: the mean itself for one output, the
//!    proportion of the second class for two classes, and for more classes or outputs the
//!    level's coordinate on the first principal direction of the level statistics
//!    (weighted by the levels' weights; Coppersmith, Hong & Hosking 1999);
//! 3. the numbers are standardised over the node's rows (weighted mean 0, standard
//!    deviation 1) and, in a projection that also has numeric terms, scaled to the spread
//!    (weighted standard deviation) of the projection's numeric part over the node's rows,
//!    so that neither part drowns the other, times the levels' **reliability** in [0, 1]:
//!    with `eta2` the share of the node's impurity that the partition of its `n` rows into
//!    `g` groups of levels (rare ones pooled) explains, the variance-ratio statistic
//!    `F = (eta2 / (g - 1)) / ((1 - eta2) / (n - g))` is about 1 for levels of noise, with
//!    spread `s = sqrt(2 / (g - 1))`, and the reliability is `clamp((F - 1) / 2s, 0, 1)`:
//!    levels that explain no more than noise would add nothing to an oblique projection
//!    (their scores come from the same rows' targets, so they always look informative),
//!    levels two spreads above noise enter whole. The term's weight gives its sign only
//!    (the map's values are divided by its magnitude, which a family's scaling of the
//!    column's codes would otherwise set).
//!
//! The projected value is then the projection's sum with each categorical term read
//! through its map, and the split search sorts and scans it like any other. For a
//! single categorical column of a binary classification or regression node the sorted
//! scan visits the prefixes of the levels ordered by their statistic, which contain the
//! optimal partition (Fisher 1958; Breiman et al. 1984, Thm. 4.5) whenever no level is
//! pooled. Trees without targets (unsupervised and isolation forests) order the levels
//! present at random instead (a random subset of levels for isolation's random cut).
//!
//! The maps of the split chosen are stored with the tree ([`LevelMaps`]), so prediction
//! reads a row's level through the same numbers. A level that has no entry in a node's
//! map (a level never seen in training, or absent from that node's in-bag rows) reads,
//! at a split on its column alone, as missing: the row goes where the node sends missing
//! values ([`crate::tree::Tree::missing_goes_left`]); inside a projection with numeric
//! terms, as an average level (0, the standardised scores' mean), so that the numeric
//! part still decides. A missing entry (NaN) makes the projection missing, as a numeric
//! NaN does. Callers code a level never seen in training as any code without an entry
//! (e.g. `levels`, one past the last), never as NaN.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The most levels a categorical column may have: every code is exact as an `f32`.
pub const MAX_LEVELS: u32 = 1 << 24;

/// What [`check`] reads of a fit's parameters.
pub(crate) struct Kinds<'a> {
    /// [`crate::params::ForestParams::categorical`].
    pub categorical: &'a [u32],
    /// [`crate::params::ForestParams::level_names`].
    pub level_names: &'a [Vec<String>],
    /// The monotonic constraints, empty for none.
    pub monotonic_cst: &'a [i8],
    /// [`crate::params::Growth::min_category_samples`].
    pub min_category_samples: usize,
    /// The tag of the projection family when it stores compact descriptors (patches,
    /// pooled filters), which read numeric grids.
    pub compact_family: Option<&'a str>,
}

/// Checks the column kinds of a fit against data of `n_features` columns.
///
/// # Errors
/// [`Error::InvalidParameter`] (`categorical_features`, `monotonic_cst` or
/// `min_category_samples`) naming what is wrong.
pub(crate) fn check(p: &Kinds<'_>, n_features: usize) -> Result<()> {
    let bad = |reason: String| {
        Err(Error::InvalidParameter {
            name: "categorical_features",
            reason,
        })
    };
    if p.categorical.is_empty() {
        return Ok(());
    }
    if p.categorical.len() != n_features {
        return bad(format!(
            "gives the kinds of {} columns for data of {n_features}",
            p.categorical.len()
        ));
    }
    if let Some(j) = p.categorical.iter().position(|&l| l > MAX_LEVELS) {
        return bad(format!(
            "column {j} has {} levels; at most {MAX_LEVELS} are supported",
            p.categorical[j]
        ));
    }
    if let Some(j) = level_names_mismatch(p.categorical, p.level_names) {
        return bad(format!(
            "column {j}: {} level names for {} levels",
            p.level_names.get(j).map_or(0, Vec::len),
            p.categorical[j]
        ));
    }
    if let (true, Some(tag)) = (p.categorical.iter().any(|&l| l > 0), p.compact_family) {
        return bad(format!(
            "the {tag} projection reads numeric grids (images, series); its columns cannot be \
             categorical"
        ));
    }
    let cst = p.monotonic_cst;
    if let Some(j) = (0..cst.len().min(n_features)).find(|&j| cst[j] != 0 && p.categorical[j] > 0) {
        return Err(Error::InvalidParameter {
            name: "monotonic_cst",
            reason: format!("column {j} is categorical: its levels have no order to keep"),
        });
    }
    if p.min_category_samples == 0 {
        return Err(Error::InvalidParameter {
            name: "min_category_samples",
            reason: "must be at least 1".into(),
        });
    }
    Ok(())
}

/// The first column whose level names do not match its level count (`names` empty:
/// none given, which matches).
pub(crate) fn level_names_mismatch(categorical: &[u32], names: &[Vec<String>]) -> Option<usize> {
    if names.is_empty() {
        return None;
    }
    if names.len() != categorical.len() {
        return Some(0);
    }
    (0..names.len()).find(|&j| names[j].len() != categorical[j] as usize)
}

/// Checks that every categorical column of X holds level codes (integers in
/// `0..levels`) or NaN; `get(row, column)` reads X.
///
/// # Errors
/// [`Error::InvalidInput`] naming the first column and row that does not.
pub(crate) fn check_codes(
    categorical: &[u32],
    n_samples: usize,
    get: impl Fn(usize, usize) -> f32,
) -> Result<()> {
    for (j, &levels) in categorical.iter().enumerate() {
        if levels == 0 {
            continue;
        }
        for i in 0..n_samples {
            let v = get(i, j);
            if !v.is_nan() && code(v, levels).is_none() {
                return Err(Error::InvalidInput(format!(
                    "X[{i}, {j}] = {v}: column {j} is categorical with {levels} levels, so its \
                     values must be level codes 0..{levels} (or NaN for missing)"
                )));
            }
        }
    }
    Ok(())
}

/// The level code `v` stands for, when it is one of a column of `levels` levels.
#[inline]
fn code(v: f32, levels: u32) -> Option<u32> {
    (v >= 0.0 && v < levels as f32 && v.fract() == 0.0).then_some(v as u32)
}

/// The value of a categorical term whose map at a node is `(levels, values)` (levels
/// ascending) for a row whose column holds `x`: NaN (the node's missing side) for a
/// missing entry, the level's value, or `unseen` for a level the map does not hold.
#[inline]
pub fn encode(levels: &[u32], values: &[f32], unseen: f32, x: f32) -> f32 {
    if x.is_nan() {
        return f32::NAN;
    }
    match code(x, MAX_LEVELS).map(|c| levels.binary_search(&c)) {
        Some(Ok(i)) => values[i],
        _ => unseen,
    }
}

/// The level maps of one projection's categorical terms: map `m` belongs to its term
/// `term[m]` (ascending positions in the projection) and holds the levels
/// `levels[ptr[m]..ptr[m + 1]]` with their values.
#[derive(Clone, Copy, Debug)]
pub struct TermMaps<'a> {
    /// Each map's term (its position in the projection), ascending.
    pub term: &'a [u32],
    /// Offsets of each map in `levels` and `values` (`term.len() + 1` of them).
    pub ptr: &'a [u32],
    /// Level codes, ascending within a map.
    pub levels: &'a [u32],
    /// The value of each level, parallel to `levels`.
    pub values: &'a [f32],
    /// Each map's value for a level it does not hold.
    pub unseen: &'a [f32],
}

impl<'a> TermMaps<'a> {
    /// Map `m`: its levels and their values.
    #[inline]
    pub fn map(&self, m: usize) -> (&'a [u32], &'a [f32]) {
        let (a, b) = (self.ptr[m] as usize, self.ptr[m + 1] as usize);
        (&self.levels[a..b], &self.values[a..b])
    }

    /// The sum `sum_k w_k v_k` of a projection's terms (features `idx`, weights `w`) for
    /// a row whose feature j is `get(j)`, each categorical term's value read through its
    /// map ([`encode`]): the same products added in term order as a numeric projection's.
    #[inline]
    pub fn value_by(&self, idx: &[u32], w: &[f32], get: impl Fn(usize) -> f32) -> f32 {
        let mut s = 0.0f32;
        let mut m = 0;
        for (k, (&j, &wk)) in idx.iter().zip(w).enumerate() {
            let mut v = get(j as usize);
            if self.term.get(m) == Some(&(k as u32)) {
                let (levels, values) = self.map(m);
                v = encode(levels, values, self.unseen[m], v);
                m += 1;
            }
            s += wk * v;
        }
        s
    }
}

/// Level maps in CSR form: the maps of a tree's nodes ([`crate::tree::Tree::level_maps`]),
/// or of the projections a tree is growing. Map `m` belongs to term `term[m]` of its
/// node's projection and holds `levels[ptr[m]..ptr[m + 1]]` (ascending) with `values`;
/// in a tree, node `i`'s maps are `node_ptr[i]..node_ptr[i + 1]` (empty `node_ptr` when
/// no node has one, as in every tree grown on numeric data).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LevelMaps {
    /// Per node, offsets into the maps (`n_nodes + 1`), or empty.
    pub node_ptr: Vec<u32>,
    /// Each map's term: its position in its node's projection.
    pub term: Vec<u32>,
    /// Offsets of each map in `levels` and `values` (`maps + 1`, or empty for none).
    pub ptr: Vec<u32>,
    /// Level codes, ascending within a map.
    pub levels: Vec<u32>,
    /// Each level's value, parallel to `levels`.
    pub values: Vec<f32>,
    /// Each map's value for a level it does not hold (one never seen in training, or
    /// absent from its node's rows): NaN (the missing side) for a split on the column
    /// alone, 0 (an average level) beside numeric terms.
    pub unseen: Vec<f32>,
}

impl PartialEq for LevelMaps {
    /// The same maps (an `unseen` of NaN equals NaN: the same rule).
    fn eq(&self, o: &Self) -> bool {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        self.node_ptr == o.node_ptr
            && self.term == o.term
            && self.ptr == o.ptr
            && self.levels == o.levels
            && self.values == o.values
            && bits(&self.unseen) == bits(&o.unseen)
    }
}

impl LevelMaps {
    /// Maps held.
    pub fn n_maps(&self) -> usize {
        self.term.len()
    }

    /// Empties the store (keeping its memory).
    pub(crate) fn clear(&mut self) {
        self.node_ptr.clear();
        self.term.clear();
        self.ptr.clear();
        self.levels.clear();
        self.values.clear();
        self.unseen.clear();
    }

    /// Adds a map for term `term` whose levels and values are `pairs`' (levels ascending),
    /// reading `unseen` for the levels it does not hold.
    pub(crate) fn push(&mut self, term: u32, pairs: impl Iterator<Item = (u32, f32)>, unseen: f32) {
        if self.ptr.is_empty() {
            self.ptr.push(0);
        }
        self.term.push(term);
        self.unseen.push(unseen);
        for (l, v) in pairs {
            self.levels.push(l);
            self.values.push(v);
        }
        self.ptr.push(self.levels.len() as u32);
    }

    /// Adds the maps `a..b` of `other`, their terms shifted by `shift`.
    pub(crate) fn extend_from(&mut self, other: &LevelMaps, (a, b): (usize, usize)) {
        for m in a..b {
            let (lo, hi) = (other.ptr[m] as usize, other.ptr[m + 1] as usize);
            let pairs = other.levels[lo..hi]
                .iter()
                .copied()
                .zip(other.values[lo..hi].iter().copied());
            self.push(other.term[m], pairs, other.unseen[m]);
        }
    }

    /// The maps `a..b` as one projection's.
    #[inline]
    pub fn range(&self, (a, b): (usize, usize)) -> TermMaps<'_> {
        TermMaps {
            term: &self.term[a..b],
            ptr: if a == b { &[] } else { &self.ptr[a..=b] },
            levels: &self.levels,
            values: &self.values,
            unseen: &self.unseen[a..b],
        }
    }

    /// The maps of node `node` of a tree, `None` when it has none.
    #[inline]
    pub fn of_node(&self, node: usize) -> Option<TermMaps<'_>> {
        if self.node_ptr.is_empty() {
            return None;
        }
        let (a, b) = (
            self.node_ptr[node] as usize,
            self.node_ptr[node + 1] as usize,
        );
        (a < b).then(|| self.range((a, b)))
    }

    /// Checks the store as the maps of a tree whose node `i` has a projection of
    /// `proj_len(i)` terms (0 for leaves): offsets in range and non-decreasing, terms
    /// ascending within a node and inside its projection, levels ascending within a map,
    /// values finite.
    ///
    /// # Errors
    /// [`Error::CorruptModel`] naming what is wrong.
    pub(crate) fn validate(&self, n_nodes: usize, proj_len: impl Fn(usize) -> usize) -> Result<()> {
        let bad = |what: &str| Err(Error::CorruptModel(format!("level maps: {what}")));
        if self.node_ptr.is_empty() {
            if self.term.is_empty()
                && self.ptr.is_empty()
                && self.levels.is_empty()
                && self.unseen.is_empty()
            {
                return Ok(());
            }
            return bad("maps without nodes");
        }
        let n_maps = self.term.len();
        if self.node_ptr.len() != n_nodes + 1
            || self.node_ptr[0] != 0
            || self.node_ptr[n_nodes] as usize != n_maps
            || self.node_ptr.windows(2).any(|w| w[0] > w[1])
        {
            return bad("node offsets");
        }
        if n_maps > 0
            && (self.ptr.len() != n_maps + 1
                || self.ptr[0] != 0
                || self.ptr[n_maps] as usize != self.levels.len()
                || self.ptr.windows(2).any(|w| w[0] > w[1]))
        {
            return bad("map offsets");
        }
        if self.values.len() != self.levels.len()
            || self.values.iter().any(|v| !v.is_finite())
            || self.unseen.len() != n_maps
            || self.unseen.iter().any(|v| v.is_infinite())
        {
            return bad("values");
        }
        for node in 0..n_nodes {
            let (a, b) = (
                self.node_ptr[node] as usize,
                self.node_ptr[node + 1] as usize,
            );
            let terms = &self.term[a..b];
            if terms.windows(2).any(|w| w[0] >= w[1])
                || terms.last().is_some_and(|&t| t as usize >= proj_len(node))
            {
                return bad("terms out of order or beyond their projection");
            }
        }
        for m in 0..n_maps {
            let (a, b) = (self.ptr[m] as usize, self.ptr[m + 1] as usize);
            let levels = &self.levels[a..b];
            if levels.windows(2).any(|w| w[0] >= w[1]) || levels.iter().any(|&l| l >= MAX_LEVELS) {
                return bad("levels out of order or out of range");
            }
        }
        Ok(())
    }

    /// Bytes held.
    pub(crate) fn n_bytes(&self) -> u64 {
        4 * (self.node_ptr.len()
            + self.term.len()
            + self.ptr.len()
            + self.levels.len()
            + self.values.len()
            + self.unseen.len()) as u64
    }

    /// Releases spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.node_ptr.shrink_to_fit();
        self.term.shrink_to_fit();
        self.ptr.shrink_to_fit();
        self.levels.shrink_to_fit();
        self.values.shrink_to_fit();
        self.unseen.shrink_to_fit();
    }
}
