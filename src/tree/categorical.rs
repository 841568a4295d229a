//! The categorical part of the split search: a candidate projection with categorical
//! terms is read at a node through level maps computed from the node's in-bag rows (the
//! rule is [`crate::columns`]'), and its projected values go on to the same scans as any
//! other candidate's; a single term with no missing row under the searched scans hands
//! its rows' bins to the level-bin scan instead of writing values ([`Read::LevelBins`]).
//! The maps of the best candidate so far are kept
//! ([`CatScratch::best`]), and the builder stores them with the node it splits.
//!
//! Invariant: a row's projected value here is [`crate::projection::ProjRef::value_by`] of
//! the node's projection with these maps, which is what prediction computes for it.

use super::criterion::Criterion;
use super::monotonic::Bounds;
use super::parts::Read;
use super::splitter::{Node, Scans, SplitSearch};
use super::workspace::{CatScratch, Workspace};
use crate::columns::{LevelMaps, TermMaps};
use crate::probe::{self, Switch};
use crate::projection::ProjRef;
use crate::rng::Rng;

/// A level that is not rare, where the level statistics by row place the rare levels' rows.
const NOT_RARE: u32 = u32::MAX;

/// Power iterations for the first principal direction of the level statistics.
const POWER_STEPS: usize = 48;

impl<C: Criterion> SplitSearch<'_, C> {
    /// Whether candidate `proj` has categorical terms (this part's values).
    pub(super) fn has_categorical_terms(&self, proj: ProjRef<'_>) -> bool {
        let kinds = &self.cfg.categorical;
        match proj {
            ProjRef::Sparse { idx, .. } if !kinds.is_empty() => {
                idx.iter().any(|&j| kinds[j as usize] > 0)
            }
            _ => false,
        }
    }

    /// Whether `proj` is a single categorical term that cannot split `node`: the node has
    /// at most `min_category_samples` rows, none missing the term's column, so its levels
    /// form one group at most (a level of fewer rows than that is rare, and the rare ones
    /// are pooled), whose score standardises to 0 for every row: the candidate is
    /// constant, as its statistics would find at more cost (the nodes of two and three
    /// rows, the most numerous of a tree grown to purity, have many such candidates). Under
    /// the searched scans of trees with targets only (a value rule orders levels at
    /// random, and a missing row could still split from the rest).
    pub(super) fn too_few_rows_for_levels(
        &self,
        ws: &Workspace,
        node: Node<'_>,
        proj: ProjRef<'_>,
    ) -> bool {
        let ProjRef::Sparse { idx: &[j], .. } = proj else {
            return false;
        };
        let kinds = &self.cfg.categorical;
        if kinds.is_empty() || kinds[j as usize] == 0 {
            return false;
        }
        let j = j as usize;
        node.n() <= self.cfg.growth.min_category_samples
            && matches!(self.scans, Scans::Searched)
            && self.crit.value_rule().is_none()
            && probe::on(Switch::FewRowsForLevels)
            && (!self.x.has_missing()
                || ws.samples[node.start..node.end]
                    .iter()
                    .all(|&s| self.x.get(s as usize, j) >= 0.0))
    }

    /// Candidate `proj`, which has categorical terms ([`Self::has_categorical_terms`]):
    /// computes their maps at `node` into `ws.cat.cur` and the node's projected values
    /// into `ws.vals`, or, for a single term whose bins suffice, the rows' bins into
    /// `ws.bins` ([`Self::project_one`]); says which.
    pub(super) fn project_categorical(
        &self,
        ws: &mut Workspace,
        rng: &mut Rng,
        node: Node<'_>,
        proj: ProjRef<'_>,
    ) -> Read {
        let kinds = &self.cfg.categorical;
        let ProjRef::Sparse { idx, w } = proj else {
            return Read::Values; // (only sparse projections have categorical terms)
        };
        ws.cat.cur.clear();
        let mixed = idx.iter().any(|&j| kinds[j as usize] == 0);
        // a level the node's map lacks: missing at a split on categorical columns only, an
        // average level (score 0) beside numeric terms
        let unseen = if mixed { 0.0 } else { f32::NAN };
        for (k, &j) in idx.iter().enumerate() {
            if kinds[j as usize] > 0 {
                let (a, b, reliability) = self.cached_scores(ws, rng, node, j, mixed);
                let cat = &mut ws.cat;
                // a term's weight gives the sign of its part: its magnitude (a family's
                // scaling of the column's codes) is divided out; beside numeric terms, the
                // part is as large as the levels are reliable
                let wk = f64::from(w[k].abs());
                let per = if wk > 0.0 { 1.0 / wk } else { 1.0 };
                let per = if mixed { per * reliability } else { per };
                let pairs = cat.cache_levels[a..b].iter().zip(&cat.cache_scores[a..b]);
                cat.cur.push(
                    k as u32,
                    pairs.map(|(&l, &s)| (l, (s * per) as f32)),
                    unseen,
                );
            }
        }
        if let ([j], [wj]) = (idx, w) {
            return self.project_one(ws, node, *j as usize, *wj);
        }
        self.scale_to_numeric_part(ws, node, idx, w);
        let samples = &ws.samples[node.start..node.end];
        let maps = ws.cat.cur.range((0, ws.cat.cur.n_maps()));
        ws.vals.clear();
        ws.vals.extend(
            samples
                .iter()
                .map(|&s| maps.value_by(idx, w, |j| self.x.get(s as usize, j))),
        );
        Read::Values
    }

    /// The node's values of a projection of one categorical term (column `j`, weight
    /// `wj`) through its map in `ws.cat.cur`: the column's values gathered once, each
    /// read from a table indexed by level where the column has few levels for the node's
    /// rows, else by a search of the map; the same numbers as
    /// [`crate::columns::TermMaps::value_by`] (`wj` times the level's value, NaN for a
    /// missing or unseen level). When the bins suffice ([`Self::bins_suffice`]) it writes
    /// no values: each row's bin goes to `ws.bins` (none for a single bin: the term is
    /// constant), and it says so ([`Read::LevelBins`]).
    fn project_one(&self, ws: &mut Workspace, node: Node<'_>, j: usize, wj: f32) -> Read {
        let cat = &mut ws.cat;
        let samples = &ws.samples[node.start..node.end];
        if cat.col_of != Some((j, node.start, node.end)) {
            gather(self.x, j, samples, &mut cat.col);
            cat.col_of = Some((j, node.start, node.end));
        }
        let n_levels = self.cfg.categorical[j] as usize;
        ws.vals.clear();
        if n_levels <= DENSE_LEVELS.max(samples.len()) {
            level_bins(cat, wj, n_levels);
            if self.bins_suffice(cat) {
                // the scan reads the rows' bins only (none when there is one: the term is
                // constant): no values to write
                let v = &cat.bin_values;
                if v.len() < 2 {
                    return Read::LevelBins(None);
                }
                assign_level_bins(cat, &mut ws.bins);
                return Read::LevelBins(Some((v[0], v[v.len() - 1])));
            }
            let (levels, values) = cat.cur.range((0, 1)).map(0);
            cat.dense.clear();
            cat.dense.resize(n_levels, f32::NAN);
            for (&l, &v) in levels.iter().zip(values) {
                cat.dense[l as usize] = v;
            }
            let dense = &cat.dense;
            ws.vals.extend(cat.col.iter().map(|&x| {
                // a code checked at fit (below n_levels) or NaN
                let v = if x >= 0.0 {
                    dense[x as usize]
                } else {
                    f32::NAN
                };
                wj * v
            }));
        } else {
            let (levels, values) = cat.cur.range((0, 1)).map(0);
            let encode = |x| crate::columns::encode(levels, values, f32::NAN, x);
            ws.vals.extend(cat.col.iter().map(|&x| wj * encode(x)));
        }
        Read::Values
    }

    /// Whether the single term whose level bins `cat` holds ([`level_bins`]) needs no
    /// projected values: the search scans every bin boundary (not a random threshold or
    /// a value rule), no row's level is missing, and the bins' values are finite and
    /// fit the rows' bins. Then the scan part reads the bins alone
    /// ([`Read::LevelBins`]): the values would be the bins' values, row by row.
    fn bins_suffice(&self, cat: &CatScratch) -> bool {
        probe::on(Switch::BinsWithoutValues)
            && matches!(self.scans, Scans::Searched)
            && cat.bin_values.len() <= usize::from(u16::MAX) + 1
            && cat.bin_values.iter().all(|v| v.is_finite())
            && (!self.x.has_missing() || cat.col.iter().all(|&x| x >= 0.0))
    }

    /// The split of a projection of one categorical term from a bin per level, in the
    /// order of its projected values ([`level_bins`]): the exact histogram scan, whose
    /// positions are the sorted scan's (between distinct values) without a sort of the
    /// rows (binned here unless the values part binned them: `assigned`). `None` when the
    /// term has one value or more values than bins hold.
    pub(super) fn level_split(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        assigned: bool,
        to_beat: Option<f64>,
        mono: Option<(i8, Bounds)>,
    ) -> Option<Option<(f64, f32)>> {
        let cat = &ws.cat;
        let n_bins = cat.bin_values.len();
        if n_bins < 2 || n_bins > usize::from(u16::MAX) + 1 {
            return None;
        }
        if !assigned {
            assign_level_bins(cat, &mut ws.bins);
        }
        Some(self.binned_split(ws, node, true, to_beat, mono))
    }

    /// The range in `ws.cat.cache_*` of the levels of column `j` present at `node` and
    /// their standardised scores ([`Self::level_scores`]), and their reliability
    /// ([`Self::level_statistics`]), computed once per node and column: every candidate of
    /// the node that reads the column reads it the same way.
    /// The reliability, which only a projection with numeric terms reads, is computed
    /// when `reliability` asks for it (NaN otherwise, until a later candidate asks).
    fn cached_scores(
        &self,
        ws: &mut Workspace,
        rng: &mut Rng,
        node: Node<'_>,
        j: u32,
        reliability: bool,
    ) -> (usize, usize, f64) {
        let cache = &mut ws.cat.cache;
        if let Some(k) = cache.iter().position(|c| c.0 == j) {
            let (_, a, b, r) = cache[k];
            if !(reliability && r.is_nan()) {
                return (a as usize, b as usize, r);
            }
            // scored before without its reliability: score again (the same scores), then
            // keep the reliability
            cache.remove(k);
        }
        self.level_scores(ws, rng, node, j as usize, reliability);
        let cat = &mut ws.cat;
        let a = cat.cache_levels.len();
        cat.cache_levels.extend(cat.groups.iter().map(|g| g.0));
        cat.cache_scores.extend_from_slice(&cat.scores);
        let b = cat.cache_levels.len();
        cat.cache.push((j, a as u32, b as u32, cat.reliability));
        (a, b, cat.reliability)
    }

    /// The standardised score of each level of column `j` present at `node`: levels
    /// (ascending) in `ws.cat.groups`, scores in `ws.cat.scores`.
    fn level_scores(
        &self,
        ws: &mut Workspace,
        rng: &mut Rng,
        node: Node<'_>,
        j: usize,
        reliability: bool,
    ) {
        let cat = &mut ws.cat;
        cat.reliability = 1.0;
        let samples = &ws.samples[node.start..node.end];
        gather(self.x, j, samples, &mut cat.col);
        cat.col_of = Some((j, node.start, node.end));
        let n_levels = self.cfg.categorical[j] as usize;
        cat.groups.clear();
        cat.stats.clear();
        cat.scores.clear();
        let targets = self.crit.value_rule().is_none();
        if !reliability && targets && probe::on(Switch::OneLevel) {
            if let Some(level) = one_level(&cat.col) {
                // what the statistics would give one level: the score 0 (standardised
                // alone), no reliability; its weight and statistic are not read
                cat.groups.push((level, 0.0, false));
                cat.scores.push(0.0);
                cat.reliability = f64::NAN;
                return;
            }
        }
        if !reliability
            && probe::on(Switch::LevelsByRow)
            && targets
            && self.crit.binned()
            && n_levels <= samples.len()
        {
            // the same statistics without sorting the rows by level
            if self.level_statistics_by_row(cat, samples, n_levels) {
                self.score_levels(cat);
            }
            return;
        }
        sort_by_level(cat, samples, n_levels);
        if cat.pairs.is_empty() {
            return;
        }
        if self.crit.value_rule().is_some() {
            // no targets: the levels in a random order
            let mut k = 0;
            while k < cat.pairs.len() {
                let level = cat.pairs[k].0;
                let mut w = 0.0;
                while k < cat.pairs.len() && cat.pairs[k].0 == level {
                    w += self.weights[cat.pairs[k].1 as usize];
                    k += 1;
                }
                cat.groups.push((level, w, false));
                cat.scores.push(rng.unit());
            }
            standardise(&cat.groups, &mut cat.scores);
            return;
        }
        cat.reliability = self.level_statistics(cat, reliability);
        self.score_levels(cat);
    }

    /// The pooled rare levels' statistic (the criterion's value of `cat.rare_sums`, of
    /// weight `rare_w`), given to each rare level of `cat.groups` in `cat.stats` (rows of
    /// `width`).
    fn pool_rare(&self, cat: &mut CatScratch, rare_w: f64, width: usize) {
        cat.value.clear();
        self.crit.push_value(&cat.rare_sums, rare_w, &mut cat.value);
        for (g, &(_, _, rare)) in cat.groups.iter().enumerate() {
            if rare {
                cat.stats[g * width..(g + 1) * width].copy_from_slice(&cat.value[..width]);
            }
        }
    }

    /// `cat.scores`: the standardised number of each level of `cat.groups` from its
    /// statistic in `cat.stats`.
    fn score_levels(&self, cat: &mut CatScratch) {
        let width = cat.stats.len() / cat.groups.len();
        level_numbers(
            &cat.groups,
            &cat.stats,
            width,
            self.crit_is_binary(width),
            &mut cat.scores,
        );
        standardise(&cat.groups, &mut cat.scores);
    }

    /// [`Self::level_statistics`] without sorting the node's rows by level, for a
    /// criterion whose statistics are running sums (nothing for `finish_node` to do) and
    /// without the reliability: each level's sums and weight are added in the node's row
    /// order, which is the order the sorted pairs hold a level's rows in, so they are the
    /// same numbers; the rare levels' rows are gathered level by level for their pooled
    /// statistic, as the sorted pairs give them. `n_levels` (the column's) is at most the
    /// node's rows. Returns false when no row has a level.
    fn level_statistics_by_row(
        &self,
        cat: &mut CatScratch,
        samples: &[u32],
        n_levels: usize,
    ) -> bool {
        let len = self.crit.stat_len(self.cfg.n_outputs);
        let width = self.crit_width(cat);
        let min_rows = self.cfg.growth.min_category_samples;
        cat.counts.clear();
        cat.counts.resize(n_levels, 0);
        cat.level_w.clear();
        cat.level_w.resize(n_levels, 0.0);
        cat.level_sums.clear();
        cat.level_sums.resize(n_levels * len, 0.0);
        // codes were checked at fit: NaN or 0..levels
        for (&s, &v) in samples.iter().zip(&cat.col) {
            if v >= 0.0 {
                let (l, w) = (v as usize, self.weights[s as usize]);
                cat.counts[l] += 1;
                cat.level_w[l] += w;
                let sums = &mut cat.level_sums[l * len..(l + 1) * len];
                self.crit.add_sample(sums, s as usize, w);
            }
        }
        cat.rare_sums.clear();
        cat.rare_sums.resize(len, 0.0);
        cat.rare_rows.clear();
        let mut rare_w = 0.0;
        let mut n_rare = 0usize;
        for l in 0..n_levels {
            let (count, w) = (cat.counts[l] as usize, cat.level_w[l]);
            if count == 0 {
                continue;
            }
            let rare = count < min_rows;
            cat.groups.push((l as u32, w, rare));
            if rare {
                rare_w += w;
                n_rare += count;
                cat.stats.extend(std::iter::repeat_n(0.0, width));
            } else {
                cat.value.clear();
                let sums = &cat.level_sums[l * len..(l + 1) * len];
                self.crit.push_value(sums, w, &mut cat.value);
                cat.stats.extend_from_slice(&cat.value);
            }
        }
        if cat.groups.is_empty() {
            return false;
        }
        if n_rare > 0 {
            // the rare levels' rows, level by level and in row order within a level
            // (each rare level's first place among them; NOT_RARE for the others)
            let mut at = 0u32;
            for count in cat.counts.iter_mut() {
                if *count > 0 && (*count as usize) < min_rows {
                    (*count, at) = (at, at + *count);
                } else {
                    *count = NOT_RARE;
                }
            }
            cat.rare_rows.resize(n_rare, 0);
            for (&s, &v) in samples.iter().zip(&cat.col) {
                if v >= 0.0 && cat.counts[v as usize] != NOT_RARE {
                    let slot = &mut cat.counts[v as usize];
                    cat.rare_rows[*slot as usize] = s;
                    *slot += 1;
                }
            }
            for &s in &cat.rare_rows {
                let w = self.weights[s as usize];
                self.crit.add_sample(&mut cat.rare_sums, s as usize, w);
            }
            self.pool_rare(cat, rare_w, width);
        }
        cat.reliability = f64::NAN; // (not computed: `level_statistics` computes it)
        true
    }

    /// Whether the statistic of width `width` is a two-class distribution (scored by the
    /// proportion of the second class).
    fn crit_is_binary(&self, width: usize) -> bool {
        width == 2
            && matches!(
                self.cfg.criterion,
                crate::params::Criterion::Gini | crate::params::Criterion::Entropy
            )
    }

    /// Each present level's statistic (the criterion's leaf value of its rows, or of the
    /// pooled rare levels' rows), from the sorted `cat.pairs`.
    ///
    /// Returns the levels' reliability ([`Self::reliability`]).
    fn level_statistics(&self, cat: &mut CatScratch, reliability: bool) -> f64 {
        let len = self.crit.stat_len(self.cfg.n_outputs);
        let mut within = 0.0; // the groups' weighted impurities
        let mut n_groups = 0usize;
        let min_rows = self.cfg.growth.min_category_samples;
        let width = self.crit_width(cat);
        cat.rare_sums.clear();
        cat.rare_sums.resize(len, 0.0);
        cat.rare_rows.clear();
        let mut rare_w = 0.0;
        let mut k = 0;
        while k < cat.pairs.len() {
            let level = cat.pairs[k].0;
            let start = k;
            while k < cat.pairs.len() && cat.pairs[k].0 == level {
                k += 1;
            }
            cat.rows.clear();
            cat.rows.extend(cat.pairs[start..k].iter().map(|&(_, s)| s));
            let w: f64 = cat.rows.iter().map(|&s| self.weights[s as usize]).sum();
            let rare = k - start < min_rows;
            if rare {
                for &s in &cat.rows {
                    let ws = self.weights[s as usize];
                    self.crit.add_sample(&mut cat.rare_sums, s as usize, ws);
                }
                cat.rare_rows.extend_from_slice(&cat.rows);
                rare_w += w;
                cat.groups.push((level, w, true));
                // its statistic is the pooled one, written below
                cat.stats.extend(std::iter::repeat_n(0.0, width));
                continue;
            }
            cat.sums.clear();
            cat.sums.resize(len, 0.0);
            for &s in &cat.rows {
                self.crit
                    .add_sample(&mut cat.sums, s as usize, self.weights[s as usize]);
            }
            self.crit
                .finish_node(&mut cat.sums, &cat.rows, self.weights);
            if w > 0.0 {
                within += w * self.crit.impurity(&cat.sums, w);
            }
            n_groups += 1;
            cat.value.clear();
            self.crit.push_value(&cat.sums, w, &mut cat.value);
            cat.groups.push((level, w, false));
            cat.stats.extend_from_slice(&cat.value);
        }
        // the pooled levels' statistic, given to each of them
        if !cat.rare_rows.is_empty() {
            cat.rare_rows.sort_unstable();
            self.crit
                .finish_node(&mut cat.rare_sums, &cat.rare_rows, self.weights);
            if rare_w > 0.0 {
                within += rare_w * self.crit.impurity(&cat.rare_sums, rare_w);
            }
            n_groups += 1;
            self.pool_rare(cat, rare_w, width);
        }
        if reliability {
            self.reliability(cat, within, n_groups)
        } else {
            f64::NAN
        }
    }

    /// How far the levels' partition of the node's rows (rare ones pooled) explains more
    /// than noise, in [0, 1], from the groups' weighted impurities `within` and their
    /// number `g`, against the impurity of all `n` rows of `cat.pairs`: with `eta2` the
    /// share of the impurity the partition explains, its variance-ratio statistic
    /// `F = (eta2 / (g - 1)) / ((1 - eta2) / (n - g))`, which is about 1 for levels of noise
    /// (spread `sqrt(2 / (g - 1))`), gives `clamp((F - 1) / (2 sqrt(2 / (g - 1))), 0, 1)`:
    /// 0 for levels that explain no more than noise would, 1 from two spreads above it.
    fn reliability(&self, cat: &mut CatScratch, within: f64, n_groups: usize) -> f64 {
        let len = self.crit.stat_len(self.cfg.n_outputs);
        cat.sums.clear();
        cat.sums.resize(len, 0.0);
        cat.rows.clear();
        let mut total = 0.0;
        for &(_, s) in &cat.pairs {
            let w = self.weights[s as usize];
            self.crit.add_sample(&mut cat.sums, s as usize, w);
            cat.rows.push(s);
            total += w;
        }
        self.crit
            .finish_node(&mut cat.sums, &cat.rows, self.weights);
        let node = if total > 0.0 {
            total * self.crit.impurity(&cat.sums, total)
        } else {
            0.0
        };
        let n = cat.pairs.len() as f64;
        if node.is_nan() || node <= 0.0 || n <= n_groups as f64 {
            return 0.0;
        }
        let g = n_groups as f64;
        if g < 2.0 {
            return 0.0;
        }
        let eta2 = (1.0 - within / node).clamp(0.0, 1.0);
        if eta2 >= 1.0 {
            return 1.0;
        }
        let f = (eta2 / (g - 1.0)) / ((1.0 - eta2) / (n - g));
        let spread = (2.0 / (g - 1.0)).sqrt();
        ((f - 1.0) / (2.0 * spread)).clamp(0.0, 1.0)
    }

    /// The width of a level's statistic (the criterion's leaf value).
    fn crit_width(&self, cat: &mut CatScratch) -> usize {
        let len = self.crit.stat_len(self.cfg.n_outputs);
        cat.sums.clear();
        cat.sums.resize(len, 0.0);
        cat.value.clear();
        self.crit.push_value(&cat.sums, 1.0, &mut cat.value);
        cat.value.len()
    }

    /// In a projection with numeric terms too: scales the maps in `ws.cat.cur` by the
    /// weighted standard deviation of the numeric part over the node's rows (left as they
    /// are when that spread is 0 or not finite).
    fn scale_to_numeric_part(&self, ws: &mut Workspace, node: Node<'_>, idx: &[u32], w: &[f32]) {
        let kinds = &self.cfg.categorical;
        if idx.iter().all(|&j| kinds[j as usize] > 0) {
            return;
        }
        let cat = &mut ws.cat;
        cat.numeric.clear();
        let samples = &ws.samples[node.start..node.end];
        for &s in samples {
            let mut v = 0.0f32;
            for (&j, &wk) in idx.iter().zip(w) {
                if kinds[j as usize] == 0 {
                    v += wk * self.x.get(s as usize, j as usize);
                }
            }
            cat.numeric.push(v);
        }
        let (mut sw, mut s1, mut s2) = (0.0f64, 0.0f64, 0.0f64);
        for (&s, &v) in samples.iter().zip(&cat.numeric) {
            if v.is_finite() {
                let wt = self.weights[s as usize];
                sw += wt;
                s1 += wt * f64::from(v);
                s2 += wt * f64::from(v) * f64::from(v);
            }
        }
        if sw <= 0.0 {
            return;
        }
        let mean = s1 / sw;
        let sd = (s2 / sw - mean * mean).max(0.0).sqrt();
        if !(sd > 0.0 && sd.is_finite()) {
            return;
        }
        for v in &mut cat.cur.values {
            *v = (f64::from(*v) * sd) as f32;
        }
    }
}

/// Columns of at most this many levels (or of at most as many levels as the node has
/// rows) read a single categorical term through a table indexed by level.
const DENSE_LEVELS: usize = 1 << 12;

/// Prepares [`SplitSearch::level_split`] for a single term of weight `wj` whose map is
/// `cat.cur`'s first: each level's bin (`cat.level_bin`, by level) and the bins'
/// projected values in increasing order (`cat.bin_values`; levels of equal values share
/// a bin).
fn level_bins(cat: &mut CatScratch, wj: f32, n_levels: usize) {
    let CatScratch {
        cur,
        order,
        bin_values,
        level_bin,
        level_bins,
        ..
    } = cat;
    let (levels, values) = cur.range((0, 1)).map(0);
    order.clear();
    order.extend(levels.iter().zip(values).map(|(&l, &v)| (wj * v, l)));
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    bin_values.clear();
    level_bin.resize(n_levels, 0);
    for &(v, l) in order.iter() {
        if bin_values.last() != Some(&v) {
            bin_values.push(v);
        }
        level_bin[l as usize] = (bin_values.len() - 1) as u32;
    }
    *level_bins = true;
}

/// Each row of `cat.col` in its level's bin ([`level_bins`]) in `bins`: every row's level
/// is one of the node's (its map holds them all), none missing.
fn assign_level_bins(cat: &CatScratch, bins: &mut super::bins::Bins) {
    let bin_of = &cat.level_bin;
    let of_row = cat.col.iter().map(|&x| bin_of[x as usize] as usize);
    bins.assign_given(of_row, &cat.bin_values);
}

/// The level of every row of `col` (a column's values at a node) when they all have the
/// same one, none missing; else (or for no rows) `None`.
fn one_level(col: &[f32]) -> Option<u32> {
    let &first = col.first()?;
    // (codes were checked at fit: NaN or 0..levels; NaN fails both comparisons)
    (first >= 0.0 && col.iter().all(|&v| v == first)).then_some(first as u32)
}

/// Column `j` of `x` at the rows `samples`, into `out`.
fn gather(x: &crate::data::FeatureMatrix<'_>, j: usize, samples: &[u32], out: &mut Vec<f32>) {
    out.clear();
    if x.is_sparse() {
        out.extend(samples.iter().map(|&s| x.get(s as usize, j)));
    } else {
        // (dense X: the column's layout read once, not at every row)
        out.resize(samples.len(), 0.0);
        x.gather_column(j, samples, out);
    }
}

/// `cat.pairs`: (level, row) of the rows `samples` whose gathered value `cat.col` is
/// present, ordered by level and, within a level, as the rows come; by counting when the
/// column's `n_levels` are at most the rows, else by sorting.
fn sort_by_level(cat: &mut CatScratch, samples: &[u32], n_levels: usize) {
    cat.pairs.clear();
    // codes were checked at fit: NaN or 0..levels
    let present = samples.iter().zip(&cat.col).filter(|(_, &v)| v >= 0.0);
    if n_levels > samples.len() {
        cat.pairs.extend(present.map(|(&s, &v)| (v as u32, s)));
        cat.pairs.sort_by_key(|&(l, _)| l); // stable: rows in node order within a level
        return;
    }
    cat.counts.clear();
    cat.counts.resize(n_levels + 1, 0);
    for (_, &v) in present.clone() {
        cat.counts[v as usize + 1] += 1;
    }
    for l in 0..n_levels {
        cat.counts[l + 1] += cat.counts[l];
    }
    let n = cat.counts[n_levels] as usize;
    cat.pairs.resize(n, (0, 0));
    for (&s, &v) in present {
        let at = &mut cat.counts[v as usize];
        cat.pairs[*at as usize] = (v as u32, s);
        *at += 1;
    }
}

/// One number per level from its statistic (rows of `width` in `stats`): the value for a
/// width of 1, the second class's proportion for a binary distribution, else the
/// coordinate on the first principal direction of the weighted statistics.
fn level_numbers(
    groups: &[(u32, f64, bool)],
    stats: &[f64],
    width: usize,
    binary: bool,
    out: &mut Vec<f64>,
) {
    out.clear();
    if width == 1 || binary {
        let at = usize::from(binary);
        out.extend((0..groups.len()).map(|g| stats[g * width + at]));
        return;
    }
    let total: f64 = groups.iter().map(|g| g.1).sum();
    let mut mean = vec![0.0; width];
    if total > 0.0 {
        for (g, &(_, w, _)) in groups.iter().enumerate() {
            for c in 0..width {
                mean[c] += w * stats[g * width + c] / total;
            }
        }
    }
    // power iteration on the weighted covariance, from a fixed start, until the direction
    // no longer moves in its last bit (at most POWER_STEPS steps)
    let mut u: Vec<f64> = (0..width).map(|c| 1.0 + c as f64).collect();
    let mut next = vec![0.0; width];
    for _ in 0..POWER_STEPS {
        next.iter_mut().for_each(|v| *v = 0.0);
        for (g, &(_, w, _)) in groups.iter().enumerate() {
            let row = &stats[g * width..(g + 1) * width];
            let dot: f64 = (0..width).map(|c| (row[c] - mean[c]) * u[c]).sum();
            for c in 0..width {
                next[c] += w * dot * (row[c] - mean[c]);
            }
        }
        let norm = next.iter().map(|v| v * v).sum::<f64>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            out.extend(std::iter::repeat_n(0.0, groups.len()));
            return;
        }
        let mut moved = false;
        for (a, b) in u.iter_mut().zip(&next) {
            let v = b / norm;
            moved |= v.to_bits() != a.to_bits();
            *a = v;
        }
        if !moved {
            break; // a fixed point: every further step gives the same direction, bit for bit
        }
    }
    out.extend((0..groups.len()).map(|g| {
        (0..width)
            .map(|c| (stats[g * width + c] - mean[c]) * u[c])
            .sum::<f64>()
    }));
}

/// Standardises `scores` over the levels' weights (mean 0, standard deviation 1); all 0
/// when they do not vary.
fn standardise(groups: &[(u32, f64, bool)], scores: &mut [f64]) {
    let total: f64 = groups.iter().map(|g| g.1).sum();
    if total <= 0.0 {
        scores.iter_mut().for_each(|s| *s = 0.0);
        return;
    }
    let mean = groups
        .iter()
        .zip(&*scores)
        .map(|(g, s)| g.1 * s)
        .sum::<f64>()
        / total;
    let var = groups
        .iter()
        .zip(&*scores)
        .map(|(g, s)| g.1 * (s - mean) * (s - mean))
        .sum::<f64>()
        / total;
    let sd = var.sqrt();
    for s in scores.iter_mut() {
        *s = if sd > 1e-12 * (1.0 + mean.abs()) {
            (*s - mean) / sd
        } else {
            0.0
        };
    }
}

/// The maps of `store`'s maps `range`, for a projection read at prediction.
pub(super) fn maps_of(store: &LevelMaps, range: (usize, usize)) -> Option<TermMaps<'_>> {
    (range.0 < range.1).then(|| store.range(range))
}
