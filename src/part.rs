//! Forests grown in parts, elsewhere, and joined. A [`ForestPart`] holds trees
//! `start..start + len` of a forest; tree `t` is grown from the (seed, `t`) streams
//! whichever process grows it, so parts covering `0..n_estimators` joined by
//! [`Forest::from_parts`] are the forest [`Forest::fit`] grows on the same data —
//! the same trees, and out-of-bag sums added in the same order (tree by tree in
//! index order, rows ascending within a tree), hence equal to the last bit.
//!
//! A part keeps, per tree, its out-of-bag rows and the leaf each reaches, so the
//! join needs no training data. Parts travel between processes as bytes:
//!
//! | bytes | content |
//! |---|---|
//! | 0..8 | magic `OBLQPART` |
//! | 8.. | postcard: `start`, `n_samples`, per-tree `(row, leaf)` lists, then the trees as a model ([`Forest::to_bytes`], checksummed and validated on reading) |

use crate::error::{Error, Result};
use crate::forest::{grow_trees, ones, prepare, Forest, OobPrediction};
use crate::params::ForestParams;
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicUsize;
use std::sync::OnceLock;

const MAGIC: &[u8; 8] = b"OBLQPART";

/// Trees `start..start + forest.trees.len()` of a forest of `params.n_estimators` trees.
#[derive(Clone, Debug)]
pub struct ForestPart {
    /// The whole forest's parameters, this part's trees only.
    pub(crate) forest: Forest,
    pub(crate) start: usize,
    /// Rows of the training data the trees were grown on.
    pub(crate) n_samples: usize,
    /// Per tree, its out-of-bag rows (ascending) and the leaf each reaches; empty without OOB.
    pub(crate) oob: Vec<Vec<(u32, u32)>>,
}

#[derive(Serialize, Deserialize)]
struct Wire {
    start: usize,
    n_samples: usize,
    oob: Vec<Vec<(u32, u32)>>,
    model: Vec<u8>,
}

impl ForestPart {
    /// Index of the part's first tree in the whole forest.
    pub fn start(&self) -> usize {
        self.start
    }
    /// The part's trees, as a forest of their own (predicts like the trees it holds).
    pub fn forest(&self) -> &Forest {
        &self.forest
    }
    /// Rows of the data the part was grown on.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }

    /// Encodes the part (the trees in the model format, checksummed).
    ///
    /// # Errors
    /// [`Error::Internal`] if serde fails (it should not).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let wire = Wire {
            start: self.start,
            n_samples: self.n_samples,
            oob: self.oob.clone(),
            model: self.forest.to_bytes()?,
        };
        postcard::to_extend(&wire, MAGIC.to_vec())
            .map_err(|e| Error::Internal(format!("encode: {e}")))
    }

    /// Decodes and validates a part written by [`ForestPart::to_bytes`].
    ///
    /// # Errors
    /// [`Error::CorruptModel`] for anything malformed: bad magic or model bytes, an OOB
    /// list per tree missing, a row beyond `n_samples`, rows out of order, or a leaf that
    /// is not a leaf of its tree.
    pub fn from_bytes(bytes: &[u8]) -> Result<ForestPart> {
        let corrupt = |m: &str| Error::CorruptModel(m.to_string());
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(corrupt("not a forest part (bad magic bytes)"));
        }
        let (wire, rest): (Wire, &[u8]) = postcard::take_from_bytes(&bytes[MAGIC.len()..])
            .map_err(|e| Error::CorruptModel(format!("decode part: {e}")))?;
        if !rest.is_empty() {
            return Err(corrupt("trailing bytes after the part"));
        }
        let forest = Forest::from_bytes(&wire.model)?;
        if !wire.oob.is_empty() && wire.oob.len() != forest.trees.len() {
            return Err(corrupt("one out-of-bag list per tree expected"));
        }
        for (tree, rows) in forest.trees.iter().zip(&wire.oob) {
            let mut last = None;
            for &(row, leaf) in rows {
                if row as usize >= wire.n_samples || last.is_some_and(|l| row <= l) {
                    return Err(corrupt("out-of-bag rows out of range or order"));
                }
                if leaf as usize >= tree.n_nodes() || !tree.is_leaf(leaf as usize) {
                    return Err(corrupt("out-of-bag leaf is not a leaf of its tree"));
                }
                last = Some(row);
            }
        }
        Ok(ForestPart {
            forest,
            start: wire.start,
            n_samples: wire.n_samples,
            oob: wire.oob,
        })
    }
}

impl Forest {
    /// Grows trees `start..end` of the forest `params` describes (`params.n_estimators`
    /// trees in all) on `n_jobs` threads when given; the trees do not depend on it, and
    /// the part keeps `params` as given.
    ///
    /// # Errors
    /// As [`Forest::fit`], plus an empty range or one beyond `params.n_estimators`.
    #[allow(clippy::too_many_arguments)]
    pub fn grow_part<'x>(
        params: &ForestParams,
        x: impl Into<crate::sparse::Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
        start: usize,
        end: usize,
        n_jobs: Option<i64>,
        progress: Option<&AtomicUsize>,
    ) -> Result<ForestPart> {
        if start >= end || end > params.n_estimators {
            return Err(Error::InvalidInput(format!(
                "trees {start}..{end} are not a non-empty range of a forest of {} trees",
                params.n_estimators
            )));
        }
        let mut grow_params = params.clone();
        grow_params.growth.n_jobs = n_jobs.unwrap_or(params.growth.n_jobs);
        let data = prepare(&grow_params, x, y, sample_weight)?;
        let grown = grow_trees(&data, start..end, 0, progress)?;
        let descriptors = params.projection.descriptors();
        let oob = if params.oob {
            grown
                .iter()
                .map(|(tree, bits)| {
                    ones(bits.as_deref().unwrap_or_default())
                        .map(|r| {
                            let leaf = tree.leaf_by(descriptors, |j| data.x.get(r, j));
                            (r as u32, leaf as u32)
                        })
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(ForestPart {
            forest: Forest {
                params: params.clone(),
                n_features: data.x.n_features,
                trees: grown.into_iter().map(|(t, _)| t).collect(),
                oob: None,
                packed: OnceLock::new(),
                leaf_targets: crate::forest::LeafTargets::of(&data),
                quantile_order: OnceLock::new(),
            },
            start,
            n_samples: data.x.n_samples,
            oob,
        })
    }

    /// Joins parts covering trees `0..n_estimators` (in any order) into one forest; the
    /// out-of-bag sums are added tree by tree in index order, as a single fit adds them.
    ///
    /// # Errors
    /// No parts; parts of forests with different parameters (the growth settings aside) or
    /// feature counts; gaps or overlaps in the tree ranges; with OOB, parts grown on
    /// different numbers of rows.
    pub fn from_parts<'a>(parts: impl IntoIterator<Item = &'a ForestPart>) -> Result<Forest> {
        let bad = |m: String| Err(Error::InvalidInput(m));
        let mut order: Vec<&ForestPart> = parts.into_iter().collect();
        order.sort_by_key(|p| p.start);
        let Some(first) = order.first() else {
            return bad("no parts to join".into());
        };
        let params = first.forest.params.clone();
        let same = |p: &ForestParams| p.without_growth() == params.without_growth();
        let mut trees = Vec::with_capacity(params.n_estimators);
        for part in &order {
            if !same(&part.forest.params) || part.forest.n_features != first.forest.n_features {
                return bad("parts of different forests (parameters or features differ)".into());
            }
            if part.forest.leaf_targets != first.forest.leaf_targets {
                return bad("parts grown on different targets (leaf values differ)".into());
            }
            if part.start != trees.len() {
                return bad(format!(
                    "parts leave a gap or overlap at tree {} (a part starts at {})",
                    trees.len(),
                    part.start
                ));
            }
            trees.extend(part.forest.trees.iter().cloned());
        }
        if trees.len() != params.n_estimators {
            return bad(format!(
                "parts hold {} trees, the forest has {}",
                trees.len(),
                params.n_estimators
            ));
        }
        let oob = if params.oob {
            let n = first.n_samples;
            let k = params.task.n_outputs();
            let mut oob = OobPrediction {
                sums: vec![0.0; n * k],
                counts: vec![0; n],
            };
            for part in &order {
                if part.n_samples != n || part.oob.len() != part.forest.trees.len() {
                    return bad("out-of-bag records of parts grown on different rows".into());
                }
                for (tree, rows) in part.forest.trees.iter().zip(&part.oob) {
                    for &(row, leaf) in rows {
                        oob.add(row as usize, tree.leaf_value(leaf as usize));
                    }
                }
            }
            Some(oob)
        } else {
            None
        };
        let forest = Forest {
            params,
            n_features: first.forest.n_features,
            trees,
            oob,
            packed: OnceLock::new(),
            leaf_targets: first.forest.leaf_targets.clone(),
            quantile_order: OnceLock::new(),
        };
        forest.packed();
        Ok(forest)
    }
}

impl Forest {
    /// Appends a part grown elsewhere as [`Forest::grow_more`] would grow it here: trees
    /// `self.trees.len()..` of the same forest (its parameters may ask for more trees),
    /// with their out-of-bag predictions added onto this forest's in tree order.
    ///
    /// # Errors
    /// A part of another forest (parameters other than the tree count and the growth
    /// settings, or features, differ), one that does not start at this forest's next tree,
    /// or one grown on a different number of rows when OOB is kept.
    pub fn append_part(&mut self, part: &ForestPart) -> Result<()> {
        let comparable = |p: &ForestParams| ForestParams {
            n_estimators: 0,
            ..p.without_growth()
        };
        if comparable(&part.forest.params) != comparable(&self.params)
            || part.forest.n_features != self.n_features
            || part.forest.leaf_targets != self.leaf_targets
        {
            return Err(Error::InvalidInput(
                "the part belongs to another forest (parameters or features differ)".into(),
            ));
        }
        if part.start != self.trees.len() {
            return Err(Error::InvalidInput(format!(
                "the part starts at tree {}, the forest has {} trees",
                part.start,
                self.trees.len()
            )));
        }
        if self.params.oob {
            let oob = self
                .oob
                .as_mut()
                .filter(|o| {
                    o.counts.len() == part.n_samples && part.oob.len() == part.forest.trees.len()
                })
                .ok_or_else(|| {
                    Error::InvalidInput("out-of-bag records of different rows".into())
                })?;
            for (tree, rows) in part.forest.trees.iter().zip(&part.oob) {
                for &(row, leaf) in rows {
                    oob.add(row as usize, tree.leaf_value(leaf as usize));
                }
            }
        }
        self.trees.extend(part.forest.trees.iter().cloned());
        self.params.n_estimators = self.trees.len();
        self.packed = OnceLock::new();
        self.packed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::MaxFeatures;
    use crate::projection::{Density, Projection, SparseSigned, WeightScale};
    use crate::rng::Rng;
    use ndarray::Array2;

    fn data(n: usize, p: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
        let mut rng = Rng::from_seed(seed);
        let x = Array2::from_shape_fn((n, p), |_| (rng.unit() * 2.0 - 1.0) as f32);
        let y = x
            .rows()
            .into_iter()
            .map(|r| (r[0] + 0.3 * r[1]) as f64)
            .collect();
        (x, y)
    }

    fn params(n_estimators: usize) -> ForestParams {
        let mut p = ForestParams::regression();
        p.projection = Projection::new(SparseSigned {
            density: Density::FeatureCombinations(2.0),
            scaling: WeightScale::None,
        });
        p.max_features = MaxFeatures::All;
        p.n_estimators = n_estimators;
        p.oob = true;
        p.seed = 5;
        p
    }

    #[test]
    fn joined_parts_equal_a_single_fit_with_oob() {
        let (x, y) = data(400, 5, 1);
        let p = params(7);
        let whole = Forest::fit(&p, x.view(), &y, None).unwrap();
        // parts out of order, grown on other thread counts, through their bytes
        let parts: Vec<ForestPart> = [(4, 7), (0, 1), (1, 4)]
            .into_iter()
            .map(|(a, b)| {
                let part = Forest::grow_part(&p, x.view(), &y, None, a, b, Some(2), None).unwrap();
                ForestPart::from_bytes(&part.to_bytes().unwrap()).unwrap()
            })
            .collect();
        let joined = Forest::from_parts(&parts).unwrap();
        assert_eq!(joined.to_bytes().unwrap(), whole.to_bytes().unwrap());
        let (a, b) = (joined.oob().unwrap(), whole.oob().unwrap());
        assert_eq!(a.counts, b.counts);
        // bit for bit: regression leaf means are not exact sums in any order
        let bits = |v: &[f64]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a.sums), bits(&b.sums));
    }

    #[test]
    fn appended_part_equals_growing_more_trees() {
        let (x, y) = data(300, 4, 4);
        let mut here = Forest::fit(&params(3), x.view(), &y, None).unwrap();
        let mut there = here.clone();
        let growth = here.params().growth.clone();
        here.grow_more(x.view(), &y, None, 4, &growth, None)
            .unwrap();
        let part = Forest::grow_part(&params(7), x.view(), &y, None, 3, 7, None, None).unwrap();
        let part = ForestPart::from_bytes(&part.to_bytes().unwrap()).unwrap();
        there.append_part(&part).unwrap();
        assert_eq!(there.to_bytes().unwrap(), here.to_bytes().unwrap());
        let bits = |f: &Forest| {
            f.oob()
                .unwrap()
                .sums
                .iter()
                .map(|s| s.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&there), bits(&here));
        assert!(there.append_part(&part).is_err(), "tree 7 follows, not 3");
    }

    #[test]
    fn parts_that_do_not_cover_the_forest_are_refused() {
        let (x, y) = data(100, 3, 2);
        let p = params(4);
        let part = |a, b| Forest::grow_part(&p, x.view(), &y, None, a, b, None, None).unwrap();
        assert!(Forest::from_parts(&Vec::new()).is_err());
        assert!(Forest::from_parts(&[part(0, 2)]).is_err(), "missing trees");
        assert!(
            Forest::from_parts(&[part(0, 3), part(2, 4)]).is_err(),
            "overlap"
        );
        let mut other = p.clone();
        other.seed = 6;
        let alien = Forest::grow_part(&other, x.view(), &y, None, 2, 4, None, None).unwrap();
        assert!(Forest::from_parts(&[part(0, 2), alien]).is_err());
        assert!(Forest::grow_part(&p, x.view(), &y, None, 3, 3, None, None).is_err());
        assert!(Forest::grow_part(&p, x.view(), &y, None, 2, 5, None, None).is_err());
    }

    #[test]
    fn damaged_part_bytes_are_an_error() {
        let (x, y) = data(100, 3, 3);
        let bytes = Forest::grow_part(&params(2), x.view(), &y, None, 0, 2, None, None)
            .unwrap()
            .to_bytes()
            .unwrap();
        assert!(ForestPart::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(ForestPart::from_bytes(b"OBLQFRST").is_err());
        let mut flipped = bytes.clone();
        let at = bytes.len() - 30;
        flipped[at] ^= 0x40;
        assert!(ForestPart::from_bytes(&flipped).is_err());
    }
}
