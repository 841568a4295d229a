//! Projection samplers: the one place where forest families differ.
//!
//! At every split node the tree builder asks a [`ProjectionSampler`] for d
//! candidate directions and keeps the best. A family owns the meaning of what it
//! stores: either explicit sparse projections, feature indices and weights
//! (axis-aligned, SPORF, Forest-RC, Gaussian, user samplers), or compact descriptors
//! that its [`CompactDescriptors`] reads as (feature, weight) terms — MORF patches
//! (channels, then start and length per spatial axis, a sum over the patch) and the
//! registered families ([`family`]: dictionary atoms, patch differences, pooled filters).
//! The trees, the split search and prediction only ever see terms, and for a pooled
//! projection ([`CompactDescriptors::pooling`]) its pieces of consecutive terms, whose sums
//! combine by max or min ([`Pooling`]). Invariant: a [`ProjectionBuf`] holds
//! `len()` projections whose entries are `idx[ptr[i]..ptr[i+1]]` (and `w[...]` for
//! explicit sparse ones).
//!
//! A new family is one file in this module: a type implementing [`ProjectionFamily`] and
//! [`RegisteredFamily`], listed once in the `families!` registry below (which declares its
//! module). It reaches Python through the generic `_core.Projection.family(tag, **args)`
//! and model files as its tag and bytes ([`Family`]). The families of [`ProjectionKind`]'s
//! other variants predate the registry and stay variants, so that their model bytes (and
//! the pinned models) do not change. A family defined outside the crate is either a
//! [`ProjectionSampler`] wrapped in [`UserSampler`] (explicit projections, nothing to
//! register) or a [`RegisteredFamily`] registered at run time with [`register_family`].

pub mod family;

/// Declares the registered families' modules and lists them in [`FAMILIES`]: one line
/// (`module::Type`) per family.
macro_rules! families {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// The built-in registered families, by tag (see [`family`]).
        pub static FAMILIES: &[FamilyEntry] = &[$(FamilyEntry::of::<$module::$ty>()),*];
    };
}

families! {
    dictionary::Dictionary,
    haar::HaarPatches,
    pooled::PooledPatches,
}

pub use dictionary::Dictionary;
pub use family::{
    register_family, Family, FamilyArgs, FamilyEntry, ProjectionFamily, RegisteredFamily,
};

use std::fmt;
use std::sync::Arc;

use crate::data::FeatureMatrix;
use crate::error::{invalid, Result};
use crate::rng::{IndexPool, Rng};
use serde::{Deserialize, Serialize};

/// The largest number of axes a patch geometry may have.
pub const MAX_AXES: usize = 8;
/// The most (index, weight) entries the candidates of one split node may hold on average
/// (512 MiB of buffers): bounds `max_features` × projection size before anything is drawn.
pub const MAX_NODE_ENTRIES: usize = 1 << 26;

/// How dense a sparse signed projection matrix is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Density {
    /// λ: the fraction of nonzero entries in the p×d matrix, in (0, 1].
    Fraction(f64),
    /// λ·p: the average number of features per projection (capped at p).
    FeatureCombinations(f64),
}

/// How SPORF's ±1 weights treat features measured in different units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WeightScale {
    /// ±1 on the raw values (the paper's SPORF): a feature with a wide spread dominates
    /// every projection it enters.
    #[default]
    None,
    /// ±1/s_j, where s_j is feature j's interquartile range in the training data (its
    /// range when that is 0, and 1 for a constant feature): each projection sums features
    /// in comparable units, so a forest does not depend on the units of its features.
    /// The scales are computed whenever trees are grown and are part of the stored weights,
    /// so prediction needs nothing else.
    Robust,
}

/// The projection distribution a forest samples candidate directions from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "ProjectionKindRepr", into = "ProjectionKindRepr")]
pub enum ProjectionKind {
    /// Classic random forest: d distinct features, weight 1.
    AxisAligned,
    /// SPORF: ⌈λ·p·d⌉ nonzeros of ±1 placed uniformly in a p×d matrix.
    SparseSigned {
        /// How many nonzeros.
        density: Density,
        /// The unit each feature's ±1 is in ([`WeightScale`]).
        scaling: WeightScale,
    },
    /// Forest-RC: each projection combines `n_combined` features, weights uniform in [−1, 1].
    ForestRc {
        /// Features per projection.
        n_combined: usize,
    },
    /// Dense projections over every feature with N(0, 1) weights.
    Gaussian,
    /// MORF: contiguous patches over a structured sample shape.
    Patch(PatchGeometry),
    /// A sampler defined outside the crate; its projections are stored explicitly.
    User(UserSampler),
    /// A registered family ([`family`]): dictionary atoms, patch differences, or one
    /// registered at run time.
    Family(Family),
}

/// [`ProjectionKind`] as model files hold it: the variants in their historical order
/// (postcard writes the index), plus the dictionary as it was written before it moved
/// onto the registry (read only: such files load as [`ProjectionKind::Family`]).
#[derive(Serialize, Deserialize)]
enum ProjectionKindRepr {
    AxisAligned,
    SparseSigned {
        density: Density,
    },
    ForestRc {
        n_combined: usize,
    },
    Gaussian,
    Patch(PatchGeometry),
    LegacyDictionary(Dictionary),
    User(UserSampler),
    Family(Family),
    /// SPORF with a [`WeightScale`] other than `None` (appended, so unscaled SPORF keeps the
    /// bytes it always had).
    ScaledSparseSigned {
        density: Density,
        scaling: WeightScale,
    },
}

impl From<ProjectionKindRepr> for ProjectionKind {
    fn from(r: ProjectionKindRepr) -> Self {
        match r {
            ProjectionKindRepr::AxisAligned => ProjectionKind::AxisAligned,
            ProjectionKindRepr::SparseSigned { density } => ProjectionKind::SparseSigned {
                density,
                scaling: WeightScale::None,
            },
            ProjectionKindRepr::ScaledSparseSigned { density, scaling } => {
                ProjectionKind::SparseSigned { density, scaling }
            }
            ProjectionKindRepr::ForestRc { n_combined } => ProjectionKind::ForestRc { n_combined },
            ProjectionKindRepr::Gaussian => ProjectionKind::Gaussian,
            ProjectionKindRepr::Patch(g) => ProjectionKind::Patch(g),
            ProjectionKindRepr::LegacyDictionary(d) => ProjectionKind::Family(Family::new(d)),
            ProjectionKindRepr::User(u) => ProjectionKind::User(u),
            ProjectionKindRepr::Family(f) => ProjectionKind::Family(f),
        }
    }
}

impl From<ProjectionKind> for ProjectionKindRepr {
    fn from(k: ProjectionKind) -> Self {
        match k {
            ProjectionKind::AxisAligned => ProjectionKindRepr::AxisAligned,
            ProjectionKind::SparseSigned {
                density,
                scaling: WeightScale::None,
            } => ProjectionKindRepr::SparseSigned { density },
            ProjectionKind::SparseSigned { density, scaling } => {
                ProjectionKindRepr::ScaledSparseSigned { density, scaling }
            }
            ProjectionKind::ForestRc { n_combined } => ProjectionKindRepr::ForestRc { n_combined },
            ProjectionKind::Gaussian => ProjectionKindRepr::Gaussian,
            ProjectionKind::Patch(g) => ProjectionKindRepr::Patch(g),
            ProjectionKind::User(u) => ProjectionKindRepr::User(u),
            ProjectionKind::Family(f) => ProjectionKindRepr::Family(f),
        }
    }
}

/// A [`ProjectionSampler`] defined outside the crate, as a projection family
/// ([`ProjectionKind::User`]). It must store explicit sparse projections (no
/// [`ProjectionSampler::descriptors`]), so a fitted forest predicts, validates and
/// serializes without it; the sampler itself is not serialized, and a loaded forest
/// needs it again (a new `UserSampler`) to grow more trees.
///
/// # Panics
/// Growing a tree panics if the sampler leaves `out` malformed (offsets not rising from 0
/// to `idx.len()`, a missing weight, or a feature index out of range).
///
/// ```
/// use ndarray::Array2;
/// use obliqueforest::projection::{ProjectionBuf, ProjectionSampler, SamplerScratch, UserSampler};
/// use obliqueforest::rng::Rng;
/// use obliqueforest::{Forest, ForestParams, MaxFeatures, ProjectionKind};
///
/// /// Differences of two random features: x_i - x_j.
/// struct Differences { n_features: usize }
///
/// impl ProjectionSampler for Differences {
///     fn sample(&self, rng: &mut Rng, d: usize, _: &mut SamplerScratch, out: &mut ProjectionBuf) {
///         out.clear();
///         for _ in 0..d {
///             let (i, j) = (rng.below(self.n_features), rng.below(self.n_features));
///             if i != j {
///                 out.push(&[i as u32, j as u32], &[1.0, -1.0]);
///             }
///         }
///     }
/// }
///
/// let x = Array2::from_shape_fn((300, 5), |(i, j)| ((i * 31 + j * 17) % 41) as f32 / 41.0);
/// let y: Vec<f64> = x.rows().into_iter().map(|r| f64::from(u8::from(r[1] > r[3]))).collect();
/// let mut params = ForestParams::classification(2);
/// params.projection = ProjectionKind::User(UserSampler::new(Differences { n_features: 5 }));
/// params.max_features = MaxFeatures::Count(10);
/// params.n_estimators = 10;
/// let forest = Forest::fit(&params, x.view(), &y, None)?;
/// let proba = forest.predict(x.view(), 1)?;
/// let right = proba.rows().into_iter().zip(&y).filter(|(p, &t)| (p[1] > 0.5) == (t == 1.0)).count();
/// assert!(right > 290);
/// // the model round-trips without the sampler, and predicts the same
/// let loaded = Forest::from_bytes(&forest.to_bytes()?)?;
/// assert_eq!(loaded.predict(x.view(), 1)?, proba);
/// # Ok::<(), obliqueforest::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct UserSampler(Option<Arc<dyn ProjectionSampler + Send + Sync>>);

impl UserSampler {
    /// Wraps a sampler.
    pub fn new(sampler: impl ProjectionSampler + Send + Sync + 'static) -> Self {
        UserSampler(Some(Arc::new(sampler)))
    }
}

impl fmt::Debug for UserSampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "UserSampler"
        } else {
            "UserSampler(not stored)"
        })
    }
}

/// The same sampler object (or both not stored).
impl PartialEq for UserSampler {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

/// Serialized as nothing: the projections it drew are stored explicitly in the trees.
impl Serialize for UserSampler {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl<'de> Deserialize<'de> for UserSampler {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        <()>::deserialize(d).map(|()| UserSampler(None))
    }
}

impl ProjectionKind {
    /// [`Self::check`], and that `n_candidates` projections per node stay within
    /// [`MAX_NODE_ENTRIES`] entries.
    ///
    /// # Errors
    /// As [`Self::check`], or [`crate::Error::InvalidParameter`] naming `max_features`.
    pub fn check_candidates(&self, n_features: usize, n_candidates: usize) -> Result<()> {
        self.check(n_features)?;
        let p = n_features as f64;
        let per_candidate = match self {
            ProjectionKind::AxisAligned => 1.0,
            ProjectionKind::SparseSigned { density, .. } => match density {
                Density::Fraction(d) => d * p,
                Density::FeatureCombinations(c) => c.min(p),
            },
            ProjectionKind::ForestRc { n_combined } => (*n_combined).min(n_features) as f64,
            ProjectionKind::Gaussian => p,
            ProjectionKind::Patch(g) => (1 + 3 * g.data_shape.len()) as f64,
            ProjectionKind::Family(f) => f.get().entries_per_candidate(n_features),
            ProjectionKind::User(UserSampler(None)) => {
                return Err(invalid(
                    "projection",
                    "a user sampler is not stored in a model file; give it again to grow trees",
                ))
            }
            ProjectionKind::User(_) => 1.0,
        };
        let entries = per_candidate * n_candidates as f64;
        if entries > MAX_NODE_ENTRIES as f64 {
            return Err(invalid(
                "max_features",
                format!(
                    "{n_candidates} candidates of about {per_candidate:.0} entries each exceed \
                     the {MAX_NODE_ENTRIES} entries a node may sample"
                ),
            ));
        }
        Ok(())
    }

    /// Checks the projection settings against the data width.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming the setting that is out of range.
    pub fn check(&self, n_features: usize) -> Result<()> {
        match self {
            ProjectionKind::SparseSigned {
                density: Density::Fraction(d),
                ..
            } => {
                if !(*d > 0.0 && *d <= 1.0) {
                    return Err(invalid("density", format!("must be in (0, 1], got {d}")));
                }
            }
            ProjectionKind::SparseSigned {
                density: Density::FeatureCombinations(c),
                ..
            } => {
                if !(*c > 0.0 && c.is_finite()) {
                    return Err(invalid(
                        "feature_combinations",
                        format!("must be > 0, got {c}"),
                    ));
                }
            }
            ProjectionKind::ForestRc { n_combined } => {
                if *n_combined == 0 {
                    return Err(invalid("n_combined", "must be at least 1"));
                }
            }
            ProjectionKind::Patch(g) => g.check(n_features)?,
            ProjectionKind::Family(f) => f.get().check(n_features)?,
            ProjectionKind::AxisAligned | ProjectionKind::Gaussian | ProjectionKind::User(_) => {}
        }
        Ok(())
    }

    /// The patch geometry, for patch forests.
    pub fn geometry(&self) -> Option<&PatchGeometry> {
        match self {
            ProjectionKind::Patch(g) => Some(g),
            _ => None,
        }
    }

    /// The registered family, for [`ProjectionKind::Family`].
    pub fn family(&self) -> Option<&Family> {
        match self {
            ProjectionKind::Family(f) => Some(f),
            _ => None,
        }
    }

    /// How the family's stored descriptors read as terms; `None` for families that store
    /// explicit sparse projections.
    pub fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        match self {
            ProjectionKind::Patch(g) => Some(g),
            ProjectionKind::Family(f) => Some(f.descriptors()),
            _ => None,
        }
    }

    /// The sampler for growing trees on `x` (call after [`Self::check`]): as
    /// [`Self::sampler`], with the feature scales of a [`WeightScale`] computed from `x`.
    pub fn sampler_for(&self, x: &FeatureMatrix<'_>) -> AnySampler {
        let mut sampler = self.sampler(x.n_features);
        if let (
            AnySampler::Sparse(s),
            ProjectionKind::SparseSigned {
                scaling: WeightScale::Robust,
                ..
            },
        ) = (&mut sampler, self)
        {
            s.inv_scale = Some(x.robust_inverse_scales().into());
        }
        sampler
    }

    /// Whether a forest of this family must be written in the newer format version (core
    /// forest 3, model file 2), which older readers refuse by its number: SPORF with a
    /// weight scale, a variant they could not decode.
    pub(crate) fn needs_v3(&self) -> bool {
        matches!(
            self,
            ProjectionKind::SparseSigned {
                scaling: WeightScale::Robust,
                ..
            }
        )
    }

    /// Whether a projection's weights are units rather than preferences: every term of a
    /// SPORF projection has weight ±1 (over its feature's scale, with [`WeightScale`]), so
    /// importances share a split among its features equally.
    pub fn unit_weights(&self) -> bool {
        matches!(self, ProjectionKind::SparseSigned { .. })
    }

    /// The sampler for data with `n_features` columns (call after [`Self::check`]).
    pub fn sampler(&self, n_features: usize) -> AnySampler {
        match self {
            ProjectionKind::AxisAligned => AnySampler::Axis(AxisAlignedSampler { n_features }),
            ProjectionKind::SparseSigned { density, .. } => {
                let p = n_features as f64;
                let density = match density {
                    Density::Fraction(d) => *d,
                    Density::FeatureCombinations(c) => (c / p).min(1.0),
                };
                AnySampler::Sparse(SparseSignedSampler {
                    n_features,
                    density,
                    inv_scale: None,
                })
            }
            ProjectionKind::ForestRc { n_combined } => AnySampler::ForestRc(ForestRcSampler {
                n_features,
                n_combined: (*n_combined).min(n_features),
            }),
            ProjectionKind::Gaussian => AnySampler::Gaussian(GaussianSampler { n_features }),
            ProjectionKind::Patch(g) => AnySampler::Patch(PatchSampler {
                geometry: g.clone(),
            }),
            ProjectionKind::Family(f) => AnySampler::Family(f.clone()),
            ProjectionKind::User(u) => AnySampler::User {
                sampler: u.clone(),
                n_features,
            },
        }
    }
}

/// How a family with compact stored descriptors (patches, dictionary atoms) reads them.
pub trait CompactDescriptors: Sync + Send + fmt::Debug {
    /// Calls `f(feature, weight)` for every term of the stored descriptor `desc`, always
    /// in the same order (training sums the terms in that order, and so does prediction).
    fn for_each_term(&self, desc: &[u32], f: &mut dyn FnMut(usize, f32));
    /// Whether `desc` is a descriptor this family could have stored (model loading).
    fn is_valid(&self, desc: &[u32]) -> bool;
    /// How `desc` combines its terms: `None` (the default) for a linear projection, the
    /// sum of every term; else a pooled one ([`Pooling`]), whose terms
    /// ([`Self::for_each_term`]) are its pieces one after the other, `piece_len` each.
    fn pooling(&self, _desc: &[u32]) -> Option<Pooling> {
        None
    }
    /// The largest sum of |weights| over the terms of any descriptor this family can
    /// store, when known: a fit refuses data whose projected sums could then leave
    /// float32's range (stored descriptors carry no weights that could be scaled down).
    fn max_weight_l1(&self) -> Option<f64> {
        None
    }
}

impl CompactDescriptors for PatchGeometry {
    fn for_each_term(&self, desc: &[u32], f: &mut dyn FnMut(usize, f32)) {
        self.for_each_feature(desc, |i| f(i, 1.0))
    }
    fn is_valid(&self, desc: &[u32]) -> bool {
        self.valid_descriptor(desc)
    }
    fn max_weight_l1(&self) -> Option<f64> {
        // unit weights: the largest patch, over every channel
        let area: f64 = self
            .spatial_axes()
            .zip(&self.max_patch_size)
            .map(|(a, &hi)| hi.min(self.data_shape[a]) as f64)
            .product();
        Some(area * self.n_channels() as f64)
    }
}

/// How a pooled projection combines the sums of its pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// The largest piece.
    Max,
    /// The smallest piece.
    Min,
}

impl Pool {
    /// `acc` combined with the next piece's sum `v`: NaN when either is (a row missing a
    /// feature of any piece has a missing projection, as for a linear one; `f32::max`
    /// would drop the NaN), else the larger (smaller) one, the first of equals.
    #[inline(always)]
    pub fn combine(self, acc: f32, v: f32) -> f32 {
        if acc.is_nan() || v.is_nan() {
            f32::NAN
        } else {
            match self {
                Pool::Max if v > acc => v,
                Pool::Min if v < acc => v,
                _ => acc,
            }
        }
    }
}

/// A pooled projection: the [`Pool`] of several linear pieces, each the sum of
/// `piece_len` consecutive terms (a filter at one position of a window), so the value is
/// e.g. `max_p sum_k w_k x[j_pk]`. Training computes each piece with the linear machinery
/// and combines them with [`Pool::combine`] in piece order; prediction does the same with
/// [`PoolSum`], so both get the same f32 values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pooling {
    /// How pieces combine.
    pub pool: Pool,
    /// Terms per piece (at least 1).
    pub piece_len: usize,
}

/// Running value of a pooled projection fed its terms' products in order: each piece
/// summed from 0 term by term (as a linear projection is), then combined.
#[derive(Clone, Copy, Debug)]
pub struct PoolSum {
    pooling: Pooling,
    k: usize,
    s: f32,
    acc: Option<f32>,
}

impl PoolSum {
    /// Nothing added yet.
    #[inline]
    pub fn new(pooling: Pooling) -> Self {
        PoolSum {
            pooling,
            k: 0,
            s: 0.0,
            acc: None,
        }
    }

    /// Adds the next term's product `w * x`.
    #[inline(always)]
    pub fn add(&mut self, t: f32) {
        self.s += t;
        self.k += 1;
        if self.k == self.pooling.piece_len {
            let s = self.s;
            self.acc = Some(self.acc.map_or(s, |a| self.pooling.pool.combine(a, s)));
            self.s = 0.0;
            self.k = 0;
        }
    }

    /// The pooled value (0 for no piece, which a valid descriptor never has).
    #[inline]
    pub fn value(&self) -> f32 {
        self.acc.unwrap_or(0.0)
    }
}

/// The shape of one sample and where patches may lie in it (MORF, Sect. 3.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchGeometry {
    /// Shape of one sample, e.g. `[28, 28]` or `[3, 32, 32]`; its product is n_features.
    pub data_shape: Vec<usize>,
    /// The axis of `data_shape` holding channels, if any.
    pub channel_axis: Option<usize>,
    /// Minimum patch size per non-channel axis.
    pub min_patch_size: Vec<usize>,
    /// Maximum patch size per non-channel axis.
    pub max_patch_size: Vec<usize>,
    /// Whether each non-channel axis wraps around.
    pub periodic: Vec<bool>,
}

impl PatchGeometry {
    /// Draws a candidate's channels into the first words of its descriptor: their count
    /// and sorted indices (a random non-empty subset), or 0 without a channel axis.
    pub(crate) fn sample_channels(
        &self,
        rng: &mut Rng,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        if let Some(ca) = self.channel_axis {
            let n_ch = self.data_shape[ca];
            let k = rng.between(1, n_ch);
            rng.distinct(n_ch, k, &mut s.pool, &mut s.chosen);
            s.chosen.sort_unstable();
            out.idx.push(k as u32);
            out.idx.extend_from_slice(&s.chosen);
        } else {
            out.idx.push(0);
        }
    }

    /// Where a patch of `h` positions lies along spatial axis `i` (of `size` positions):
    /// anywhere on a periodic axis, else MORF's zero-padded corner clipped to the sample.
    /// Returns (start, length).
    pub(crate) fn place_patch(
        &self,
        rng: &mut Rng,
        i: usize,
        size: usize,
        h: usize,
    ) -> (usize, usize) {
        if self.periodic[i] {
            (rng.below(size), h)
        } else {
            let u = rng.below(size + h - 1) as i64 - (h as i64 - 1);
            let start = u.max(0) as usize;
            let end = ((u + h as i64) as usize).min(size);
            (start, end - start)
        }
    }

    /// The non-channel axes, in order.
    pub fn spatial_axes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.data_shape.len()).filter(move |&a| Some(a) != self.channel_axis)
    }

    fn n_channels(&self) -> usize {
        self.channel_axis.map_or(1, |c| self.data_shape[c])
    }

    /// Row-major strides of `data_shape`.
    fn strides(&self) -> [usize; MAX_AXES] {
        let mut s = [0usize; MAX_AXES];
        let mut acc = 1;
        for a in (0..self.data_shape.len()).rev() {
            s[a] = acc;
            acc *= self.data_shape[a];
        }
        s
    }

    /// Checks the geometry against the data width.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `data_shape`, `channel_axis`,
    /// `min_patch_size`, `max_patch_size` or `periodic`.
    pub fn check(&self, n_features: usize) -> Result<()> {
        let shape = &self.data_shape;
        if shape.is_empty() || shape.len() > MAX_AXES {
            return Err(invalid(
                "data_shape",
                format!("must have 1 to {MAX_AXES} axes"),
            ));
        }
        if shape.contains(&0) {
            return Err(invalid("data_shape", "every axis must have length >= 1"));
        }
        let product = shape.iter().try_fold(1usize, |a, &b| a.checked_mul(b));
        if product != Some(n_features) {
            return Err(invalid(
                "data_shape",
                format!("{shape:?} holds {product:?} values but X has {n_features} features"),
            ));
        }
        if let Some(c) = self.channel_axis {
            if c >= shape.len() {
                return Err(invalid(
                    "channel_axis",
                    format!("{c} is not an axis of data_shape {shape:?}"),
                ));
            }
            if shape.len() == 1 {
                return Err(invalid(
                    "channel_axis",
                    "data_shape needs an axis besides the channels",
                ));
            }
        }
        let n_spatial = self.spatial_axes().count();
        for (name, v) in [
            ("min_patch_size", &self.min_patch_size),
            ("max_patch_size", &self.max_patch_size),
        ] {
            if v.len() != n_spatial {
                return Err(invalid(
                    name,
                    format!(
                        "needs {n_spatial} entries (one per non-channel axis), got {}",
                        v.len()
                    ),
                ));
            }
        }
        if self.periodic.len() != n_spatial {
            return Err(invalid(
                "periodic",
                format!("needs {n_spatial} entries (one per non-channel axis)"),
            ));
        }
        for (i, a) in self.spatial_axes().enumerate() {
            let (lo, hi) = (self.min_patch_size[i], self.max_patch_size[i]);
            if lo == 0 {
                return Err(invalid("min_patch_size", "patch sizes must be at least 1"));
            }
            if lo > hi {
                return Err(invalid(
                    "min_patch_size",
                    format!("{lo} exceeds max_patch_size {hi} on axis {a}"),
                ));
            }
            if hi > shape[a] {
                return Err(invalid(
                    "max_patch_size",
                    format!("{hi} does not fit axis {a} of length {}", shape[a]),
                ));
            }
        }
        Ok(())
    }

    /// Checks that a stored patch descriptor fits this geometry (model loading).
    pub(crate) fn valid_descriptor(&self, desc: &[u32]) -> bool {
        let Some((&n_ch, rest)) = desc.split_first() else {
            return false;
        };
        let n_ch = n_ch as usize;
        let n_spatial = self.spatial_axes().count();
        let want_ch = if self.channel_axis.is_some() { n_ch } else { 0 };
        if n_ch != want_ch || rest.len() != n_ch + 2 * n_spatial {
            return false;
        }
        if self.channel_axis.is_some()
            && (n_ch == 0
                || rest[..n_ch]
                    .iter()
                    .any(|&c| c as usize >= self.n_channels()))
        {
            return false;
        }
        self.spatial_axes().enumerate().all(|(i, a)| {
            let (start, len) = (rest[n_ch + 2 * i] as usize, rest[n_ch + 2 * i + 1] as usize);
            let size = self.data_shape[a];
            len >= 1 && len <= size && start < size && (self.periodic[i] || start + len <= size)
        })
    }

    /// Calls `f(feature)` for every feature inside the patch `desc`.
    #[inline]
    pub fn for_each_feature(&self, desc: &[u32], mut f: impl FnMut(usize)) {
        let strides = self.strides();
        let n_ch = desc[0] as usize;
        let channels = &desc[1..1 + n_ch];
        let boxes = &desc[1 + n_ch..];
        let mut axes = [0usize; MAX_AXES];
        let mut n_axes = 0;
        for a in self.spatial_axes() {
            axes[n_axes] = a;
            n_axes += 1;
        }
        let mut counter = [0usize; MAX_AXES];
        let channel_offsets = channels
            .iter()
            .map(|&c| c as usize * self.channel_axis.map_or(0, |ca| strides[ca]));
        let run = |base: usize, counter: &mut [usize; MAX_AXES], f: &mut dyn FnMut(usize)| {
            counter[..n_axes].fill(0);
            loop {
                let mut flat = base;
                for k in 0..n_axes {
                    let (start, size) = (boxes[2 * k] as usize, self.data_shape[axes[k]]);
                    let mut coord = start + counter[k];
                    if coord >= size {
                        coord -= size; // periodic wrap; valid descriptors never exceed one turn
                    }
                    flat += coord * strides[axes[k]];
                }
                f(flat);
                // odometer over the patch, last axis fastest
                let mut k = n_axes;
                loop {
                    if k == 0 {
                        return;
                    }
                    k -= 1;
                    counter[k] += 1;
                    if counter[k] < boxes[2 * k + 1] as usize {
                        break;
                    }
                    counter[k] = 0;
                }
            }
        };
        if n_ch == 0 {
            run(0, &mut counter, &mut f);
        } else {
            for off in channel_offsets {
                run(off, &mut counter, &mut f);
            }
        }
    }
}

/// A borrowed projection: where a node (or candidate) points in feature space.
#[derive(Clone, Copy, Debug)]
pub enum ProjRef<'a> {
    /// Explicit terms: feature `idx[k]` with weight `w[k]`.
    Sparse {
        /// Feature indices.
        idx: &'a [u32],
        /// Weights, parallel to `idx`.
        w: &'a [f32],
    },
    /// A compact descriptor, read by its family.
    Compact {
        /// The stored descriptor.
        desc: &'a [u32],
        /// The family that reads it.
        family: &'a dyn CompactDescriptors,
    },
}

impl<'a> ProjRef<'a> {
    /// Projection `desc` (with weights `w` for explicit ones) as stored by a family whose
    /// compact descriptors (if any) `family` reads.
    #[inline]
    pub fn new(desc: &'a [u32], w: &'a [f32], family: Option<&'a dyn CompactDescriptors>) -> Self {
        match family {
            Some(family) => ProjRef::Compact { desc, family },
            None => ProjRef::Sparse { idx: desc, w },
        }
    }

    /// Calls `f(feature, weight)` for every nonzero of the projection.
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(usize, f32)) {
        match *self {
            ProjRef::Sparse { idx, w } => {
                for (&i, &w) in idx.iter().zip(w) {
                    f(i as usize, w)
                }
            }
            ProjRef::Compact { desc, family } => family.for_each_term(desc, &mut f),
        }
    }

    /// How the projection combines its terms: `None` for a linear one (their sum).
    #[inline]
    pub fn pooling(&self) -> Option<Pooling> {
        match *self {
            ProjRef::Sparse { .. } => None,
            ProjRef::Compact { desc, family } => family.pooling(desc),
        }
    }

    /// The projected value of a row whose feature j is `get(j)`: the sum of the terms in
    /// [`Self::for_each`]'s order, or for a pooled projection the [`PoolSum`] of them.
    /// Every value prediction computes is this one (or the same sums in the same order).
    #[inline]
    pub fn value_by(&self, get: impl Fn(usize) -> f32) -> f32 {
        match self.pooling() {
            None => {
                let mut s = 0.0f32;
                self.for_each(|j, w| s += w * get(j));
                s
            }
            Some(pooling) => {
                let mut acc = PoolSum::new(pooling);
                self.for_each(|j, w| acc.add(w * get(j)));
                acc.value()
            }
        }
    }

    /// The projected value of one row (`row[j]` is feature j).
    #[inline]
    pub fn dot(&self, row: &[f32]) -> f32 {
        match *self {
            ProjRef::Sparse { idx, w } => {
                let mut s = 0.0f32;
                for (&i, &w) in idx.iter().zip(w) {
                    s += w * row[i as usize];
                }
                s
            }
            ProjRef::Compact { .. } => self.value_by(|i| row[i]),
        }
    }
}

/// A list of projections in CSR form; reused from node to node.
#[derive(Clone, Debug, Default)]
pub struct ProjectionBuf {
    /// Offsets: projection `i` is `idx[ptr[i]..ptr[i + 1]]`.
    pub ptr: Vec<u32>,
    /// Feature indices, or the words of compact descriptors.
    pub idx: Vec<u32>,
    /// Weights, parallel to `idx`; empty for compact descriptors.
    pub w: Vec<f32>,
}

impl ProjectionBuf {
    /// Removes every projection.
    pub fn clear(&mut self) {
        self.ptr.clear();
        self.ptr.push(0);
        self.idx.clear();
        self.w.clear();
    }
    /// The number of projections.
    pub fn len(&self) -> usize {
        self.ptr.len().saturating_sub(1)
    }
    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Closes the projection whose entries were pushed (onto `idx`, and `w`) since the
    /// last call.
    pub fn close(&mut self) {
        self.ptr.push(self.idx.len() as u32);
    }
    /// Appends one explicit projection: features `idx` with weights `w`; an empty
    /// projection is dropped.
    pub fn push(&mut self, idx: &[u32], w: &[f32]) {
        debug_assert_eq!(idx.len(), w.len());
        if !idx.is_empty() {
            self.idx.extend_from_slice(idx);
            self.w.extend_from_slice(w);
            self.close();
        }
    }
    /// Whether the buffer holds well-formed explicit projections over `n_features`
    /// features: offsets from 0 rising to `idx.len()`, a weight per index, indices in range.
    fn is_explicit_within(&self, n_features: usize) -> bool {
        self.ptr.first() == Some(&0)
            && self.ptr.windows(2).all(|p| p[0] <= p[1])
            && self.ptr.last().map(|&e| e as usize) == Some(self.idx.len())
            && self.w.len() == self.idx.len()
            && self.idx.iter().all(|&j| (j as usize) < n_features)
    }
    /// Projection `i`, read by the family's descriptors (if it stores compact ones).
    #[inline]
    pub fn get<'a>(&'a self, i: usize, family: Option<&'a dyn CompactDescriptors>) -> ProjRef<'a> {
        let (a, b) = (self.ptr[i] as usize, self.ptr[i + 1] as usize);
        let w = if family.is_some() {
            &[][..]
        } else {
            &self.w[a..b]
        };
        ProjRef::new(&self.idx[a..b], w, family)
    }
}

/// Reusable memory of a sampler (one per worker).
#[derive(Debug, Default)]
pub struct SamplerScratch {
    pool: IndexPool,
    chosen: Vec<u32>,
    positions: Vec<u64>,
}

/// Draws the candidate projections of one split node: the one thing a projection family
/// must do. Implement it outside the crate and wrap it in [`UserSampler`] to grow forests
/// with your own projections.
pub trait ProjectionSampler {
    /// Replaces the contents of `out` with up to `n_candidates` projections (clear it
    /// first). Everything random must come from `rng` (the node's stream), so that the
    /// forest depends on its seed only.
    fn sample(
        &self,
        rng: &mut Rng,
        n_candidates: usize,
        scratch: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    );

    /// How this family's compact descriptors read as terms; `None` (the default) when it
    /// draws explicit sparse projections (indices in `out.idx`, weights in `out.w`).
    fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        None
    }
}

/// Classic random forest: `d` distinct features with weight 1 (at most p).
#[derive(Clone, Debug)]
pub struct AxisAlignedSampler {
    /// Features to draw from.
    pub n_features: usize,
}

impl ProjectionSampler for AxisAlignedSampler {
    fn sample(&self, rng: &mut Rng, d: usize, s: &mut SamplerScratch, out: &mut ProjectionBuf) {
        out.clear();
        rng.distinct(self.n_features, d, &mut s.pool, &mut s.chosen);
        for &f in &s.chosen {
            out.idx.push(f);
            out.w.push(1.0);
            out.close();
        }
    }
}

/// SPORF (Tomita et al. 2020, Sect. 3.1): ⌈λ·p·d⌉ nonzeros placed uniformly at random in
/// a p×d matrix, each ±1 with equal probability; empty columns are dropped.
#[derive(Clone, Debug)]
pub struct SparseSignedSampler {
    /// Features p.
    pub n_features: usize,
    /// λ: the fraction of nonzero entries of the p×d matrix.
    pub density: f64,
    /// Per feature, the weight's magnitude (1/s_j of [`WeightScale::Robust`]); `None` for 1.
    pub inv_scale: Option<Arc<[f32]>>,
}

impl ProjectionSampler for SparseSignedSampler {
    fn sample(&self, rng: &mut Rng, d: usize, s: &mut SamplerScratch, out: &mut ProjectionBuf) {
        out.clear();
        let p = self.n_features as u64;
        let total = p * d as u64;
        let nnz = ((self.density * total as f64).ceil() as u64).clamp(1, total);
        s.positions.clear();
        if nnz * 2 > total {
            // dense enough: partial Fisher-Yates over all positions
            rng.distinct_u64(total, nnz as usize, &mut s.pool, &mut s.positions);
            s.positions.sort_unstable();
        } else {
            // sparse: draw, sort, drop repeats, top up
            while (s.positions.len() as u64) < nnz {
                let missing = nnz as usize - s.positions.len();
                for _ in 0..missing {
                    s.positions
                        .push(((rng.next_u64() as u128 * total as u128) >> 64) as u64);
                }
                s.positions.sort_unstable();
                s.positions.dedup();
            }
        }
        // positions are column-major (col * p + row): consecutive runs are one projection
        let mut current = u64::MAX;
        for &pos in &s.positions {
            let (col, row) = (pos / p, pos % p);
            if col != current && current != u64::MAX {
                out.close();
            }
            current = col;
            out.idx.push(row as u32);
            let unit = self.inv_scale.as_ref().map_or(1.0, |s| s[row as usize]);
            out.w.push(if rng.coin() { unit } else { -unit });
        }
        if current != u64::MAX {
            out.close();
        }
    }
}

/// Forest-RC (Breiman 2001): each projection combines L distinct features with weights
/// uniform in [−1, 1].
#[derive(Clone, Debug)]
pub struct ForestRcSampler {
    /// Features to draw from.
    pub n_features: usize,
    /// Features per projection (at most `n_features`).
    pub n_combined: usize,
}

impl ProjectionSampler for ForestRcSampler {
    fn sample(&self, rng: &mut Rng, d: usize, s: &mut SamplerScratch, out: &mut ProjectionBuf) {
        out.clear();
        for _ in 0..d {
            rng.distinct(self.n_features, self.n_combined, &mut s.pool, &mut s.chosen);
            for &f in &s.chosen {
                out.idx.push(f);
                out.w.push((2.0 * rng.unit() - 1.0) as f32);
            }
            out.close();
        }
    }
}

/// Dense random projections: every feature, N(0, 1) weights.
#[derive(Clone, Debug)]
pub struct GaussianSampler {
    /// Features (every projection uses all).
    pub n_features: usize,
}

impl ProjectionSampler for GaussianSampler {
    fn sample(&self, rng: &mut Rng, d: usize, _s: &mut SamplerScratch, out: &mut ProjectionBuf) {
        out.clear();
        for _ in 0..d {
            for f in 0..self.n_features {
                out.idx.push(f as u32);
                out.w.push(rng.normal() as f32);
            }
            out.close();
        }
    }
}

/// MORF (Perry et al., Sect. 3.1): for each axis a size uniform in [min, max], then a
/// corner uniform over the zero-padded range u ∈ {−h+1, …, H−1} (clipped to the sample), so
/// every feature is equally likely to be covered; periodic axes take u ∈ {0, …, H−1} and
/// wrap. With a channel axis, the patch spans a random non-empty subset of channels.
#[derive(Clone, Debug)]
pub struct PatchSampler {
    /// Where patches lie.
    pub geometry: PatchGeometry,
}

impl ProjectionSampler for PatchSampler {
    fn sample(&self, rng: &mut Rng, d: usize, s: &mut SamplerScratch, out: &mut ProjectionBuf) {
        let g = &self.geometry;
        out.clear();
        for _ in 0..d {
            g.sample_channels(rng, s, out);
            for (i, a) in g.spatial_axes().enumerate() {
                let size = g.data_shape[a];
                let h = rng.between(g.min_patch_size[i], g.max_patch_size[i]);
                let (start, len) = g.place_patch(rng, i, size, h);
                out.idx.push(start as u32);
                out.idx.push(len as u32);
            }
            out.close();
        }
    }

    fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        Some(&self.geometry)
    }
}

/// Static dispatch over the families of [`ProjectionKind`].
#[derive(Clone, Debug)]
pub enum AnySampler {
    /// [`ProjectionKind::AxisAligned`].
    Axis(AxisAlignedSampler),
    /// [`ProjectionKind::SparseSigned`].
    Sparse(SparseSignedSampler),
    /// [`ProjectionKind::ForestRc`].
    ForestRc(ForestRcSampler),
    /// [`ProjectionKind::Gaussian`].
    Gaussian(GaussianSampler),
    /// [`ProjectionKind::Patch`].
    Patch(PatchSampler),
    /// [`ProjectionKind::Family`].
    Family(Family),
    /// [`ProjectionKind::User`], with the data width its projections must fit.
    User {
        /// The user's sampler.
        sampler: UserSampler,
        /// Features of the data.
        n_features: usize,
    },
}

impl ProjectionSampler for AnySampler {
    #[inline]
    fn sample(&self, rng: &mut Rng, d: usize, s: &mut SamplerScratch, out: &mut ProjectionBuf) {
        match self {
            AnySampler::Axis(x) => x.sample(rng, d, s, out),
            AnySampler::Sparse(x) => x.sample(rng, d, s, out),
            AnySampler::ForestRc(x) => x.sample(rng, d, s, out),
            AnySampler::Gaussian(x) => x.sample(rng, d, s, out),
            AnySampler::Patch(x) => x.sample(rng, d, s, out),
            AnySampler::Family(f) => f.get().sample(rng, d, s, out),
            AnySampler::User {
                sampler: UserSampler(Some(x)),
                n_features,
            } => {
                x.sample(rng, d, s, out);
                // a foreign sampler's output is checked before the tree reads it: a
                // malformed buffer is a bug in that sampler, reported, never grown on
                assert!(
                    out.is_explicit_within(*n_features),
                    "a UserSampler drew malformed projections (offsets, a weight per index \
                     and indices below n_features = {n_features} are required)"
                );
            }
            AnySampler::User { .. } => out.clear(),
        }
    }

    #[inline]
    fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        match self {
            AnySampler::Patch(x) => x.descriptors(),
            AnySampler::Family(f) => Some(f.descriptors()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(sampler: &dyn ProjectionSampler, d: usize, seed: u64) -> ProjectionBuf {
        let mut out = ProjectionBuf::default();
        sampler.sample(
            &mut Rng::from_seed(seed),
            d,
            &mut SamplerScratch::default(),
            &mut out,
        );
        out
    }

    struct OutOfRange;
    impl ProjectionSampler for OutOfRange {
        fn sample(&self, _: &mut Rng, _: usize, _: &mut SamplerScratch, out: &mut ProjectionBuf) {
            out.clear();
            out.push(&[7], &[1.0]);
        }
    }

    #[test]
    #[should_panic(expected = "malformed projections")]
    fn user_sampler_out_of_range_is_reported() {
        let s = ProjectionKind::User(UserSampler::new(OutOfRange)).sampler(3);
        draw(&s, 2, 0);
    }

    #[test]
    fn pre_registry_dictionary_bytes_load_as_the_registered_family() {
        let dict =
            Dictionary::from_csc(3, &[0, 2, 3], &[0, 1, 2], &[0.5, 0.5, 1.0], Some(1)).unwrap();
        // what a model file held before the registry: variant 5, then the fields
        let old =
            postcard::to_allocvec(&ProjectionKindRepr::LegacyDictionary(dict.clone())).unwrap();
        let loaded: ProjectionKind = postcard::from_bytes(&old).unwrap();
        assert_eq!(loaded, ProjectionKind::Family(Family::new(dict)));
        assert_eq!(loaded.family().unwrap().tag(), "dictionary");
        // written back as the registered family, which reads back the same
        let new = postcard::to_allocvec(&loaded).unwrap();
        assert_ne!(new, old);
        assert_eq!(
            postcard::from_bytes::<ProjectionKind>(&new).unwrap(),
            loaded
        );
        // the variants that predate the registry keep their bytes
        let patch = ProjectionKind::Patch(geometry(vec![4, 4], 1, 2, false));
        let repr = ProjectionKindRepr::Patch(geometry(vec![4, 4], 1, 2, false));
        assert_eq!(
            postcard::to_allocvec(&patch).unwrap(),
            postcard::to_allocvec(&repr).unwrap()
        );
        assert_eq!(
            postcard::to_allocvec(&ProjectionKind::Gaussian).unwrap(),
            vec![3]
        );
    }

    #[test]
    fn unknown_family_tag_in_a_model_is_an_error_naming_it() {
        let bytes = postcard::to_allocvec(&(7u8, "wavelets", vec![0u8; 3])).unwrap();
        let kind = postcard::from_bytes::<ProjectionKind>(&bytes).unwrap();
        let e = kind.check(4).unwrap_err().to_string();
        assert!(
            e.contains("\"wavelets\"") && e.contains("register_family"),
            "{e}"
        );
        assert_eq!(
            postcard::to_allocvec(&kind).unwrap(),
            bytes,
            "kept as it was"
        );
        // a known tag whose settings do not decode
        let bad = postcard::to_allocvec(&(7u8, "dictionary", vec![200u8; 2])).unwrap();
        let kind = postcard::from_bytes::<ProjectionKind>(&bad).unwrap();
        assert!(kind
            .check(4)
            .unwrap_err()
            .to_string()
            .contains("dictionary"));
        let e = Family::from_args("wavelets", FamilyArgs::new()).unwrap_err();
        assert!(e.to_string().contains("wavelets"));
    }

    #[test]
    fn axis_sampler_draws_distinct_unit_features() {
        let out = draw(&AxisAlignedSampler { n_features: 10 }, 4, 1);
        assert_eq!(out.len(), 4);
        let mut f = out.idx.clone();
        f.sort();
        f.dedup();
        assert_eq!(f.len(), 4);
        assert!(out.w.iter().all(|&w| w == 1.0));
    }

    #[test]
    fn sparse_sampler_draws_expected_density() {
        let (p, d) = (50usize, 50usize);
        let s = SparseSignedSampler {
            n_features: p,
            density: 3.0 / p as f64,
            inv_scale: None,
        };
        let mut total = 0;
        for seed in 0..20 {
            let out = draw(&s, d, seed);
            assert_eq!(out.idx.len(), 3 * d); // ceil(λ p d) nonzeros exactly
            assert!(out.len() <= d);
            assert!(out.w.iter().all(|&w| w == 1.0 || w == -1.0));
            for i in 0..out.len() {
                let (a, b) = (out.ptr[i] as usize, out.ptr[i + 1] as usize);
                assert!(b > a, "empty projections are dropped");
                let mut f = out.idx[a..b].to_vec();
                f.dedup();
                assert_eq!(f.len(), b - a, "a feature appears once per projection");
            }
            total += out.w.iter().filter(|&&w| w > 0.0).count();
        }
        let frac = total as f64 / (20.0 * 150.0);
        assert!((0.45..0.55).contains(&frac), "signs balanced: {frac}");
    }

    #[test]
    fn sparse_sampler_allows_more_candidates_than_features_and_full_density() {
        let out = draw(
            &SparseSignedSampler {
                n_features: 4,
                density: 1.0,
                inv_scale: None,
            },
            9,
            3,
        );
        assert_eq!(out.len(), 9);
        assert_eq!(out.idx.len(), 36);
    }

    #[test]
    fn forest_rc_sampler_combines_n_features_with_bounded_weights() {
        let out = draw(
            &ForestRcSampler {
                n_features: 8,
                n_combined: 3,
            },
            5,
            4,
        );
        assert_eq!(out.len(), 5);
        assert_eq!(out.idx.len(), 15);
        assert!(out.w.iter().all(|w| (-1.0..=1.0).contains(w)));
    }

    fn geometry(shape: Vec<usize>, lo: usize, hi: usize, periodic: bool) -> PatchGeometry {
        let n = shape.len();
        PatchGeometry {
            data_shape: shape,
            channel_axis: None,
            min_patch_size: vec![lo; n],
            max_patch_size: vec![hi; n],
            periodic: vec![periodic; n],
        }
    }

    #[test]
    fn patch_sampler_covers_every_feature_equally() {
        let g = geometry(vec![6, 5], 1, 3, false);
        let s = PatchSampler {
            geometry: g.clone(),
        };
        let mut counts = vec![0usize; 30];
        let out = draw(&s, 200_000, 5);
        for i in 0..out.len() {
            out.get(i, Some(&g as &dyn CompactDescriptors))
                .for_each(|f, _| counts[f] += 1);
        }
        let mean = counts.iter().sum::<usize>() as f64 / 30.0;
        for c in &counts {
            assert!((*c as f64 - mean).abs() < 0.03 * mean, "{counts:?}");
        }
    }

    #[test]
    fn patch_sampler_wraps_only_on_periodic_axes() {
        let g = PatchGeometry {
            periodic: vec![true, false],
            ..geometry(vec![6, 6], 2, 4, false)
        };
        let s = PatchSampler {
            geometry: g.clone(),
        };
        let out = draw(&s, 5_000, 6);
        let (mut wrapped_rows, mut wrapped_cols) = (0, 0);
        for i in 0..out.len() {
            let desc = &out.idx[out.ptr[i] as usize..out.ptr[i + 1] as usize];
            assert!(g.valid_descriptor(desc));
            let mut rows = vec![];
            let mut cols = vec![];
            out.get(i, Some(&g as &dyn CompactDescriptors))
                .for_each(|f, _| {
                    rows.push(f / 6);
                    cols.push(f % 6);
                });
            let span = |v: &Vec<usize>| v.iter().max().unwrap() - v.iter().min().unwrap() + 1;
            let distinct = |v: &Vec<usize>| {
                let mut v = v.clone();
                v.sort();
                v.dedup();
                v.len()
            };
            if span(&rows) > distinct(&rows) {
                wrapped_rows += 1;
            }
            if span(&cols) > distinct(&cols) {
                wrapped_cols += 1;
            }
        }
        assert!(wrapped_rows > 100, "periodic axis wraps");
        assert_eq!(wrapped_cols, 0, "non-periodic axis never wraps");
    }

    #[test]
    fn patch_geometry_rejects_shapes_that_do_not_fit() {
        assert!(geometry(vec![5, 5], 1, 3, false).check(24).is_err());
        assert!(geometry(vec![5, 5], 1, 6, false).check(25).is_err());
        assert!(geometry(vec![5, 5], 3, 2, false).check(25).is_err());
        assert!(geometry(vec![5, 5], 1, 5, false).check(25).is_ok());
    }

    #[test]
    fn patch_sampler_picks_channel_subsets() {
        let g = PatchGeometry {
            data_shape: vec![3, 10],
            channel_axis: Some(0),
            min_patch_size: vec![2],
            max_patch_size: vec![4],
            periodic: vec![false],
        };
        g.check(30).unwrap();
        let out = draw(
            &PatchSampler {
                geometry: g.clone(),
            },
            300,
            7,
        );
        let mut n_ch_seen = [0; 4];
        for i in 0..out.len() {
            let desc = &out.idx[out.ptr[i] as usize..out.ptr[i + 1] as usize];
            assert!(g.valid_descriptor(desc));
            n_ch_seen[desc[0] as usize] += 1;
        }
        assert!(n_ch_seen[1] > 0 && n_ch_seen[2] > 0 && n_ch_seen[3] > 0);
    }
}
