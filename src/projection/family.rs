//! The projection-family registry: every family, built in or defined outside the crate, is
//! one [`ProjectionFamily`], held by a forest's parameters as a [`Projection`].
//!
//! A registered family is one type, in one file of this module, that implements
//! [`ProjectionFamily`] (how it checks its settings, bounds its candidates, samples a
//! node's candidates, and reads its stored descriptors when it stores compact ones) and
//! [`RegisteredFamily`] (its tag, its serde form in model files, and its construction from
//! [`FamilyArgs`], the generic arguments the Python boundary's
//! `_core.Projection.family(tag, **args)` hands over). The one line `module::Type` in the
//! `families!` list of `projection/mod.rs` declares the module and registers the type;
//! nothing else in the crate (not the sampler dispatch, the model format or the Python
//! boundary) names it. A family defined outside the crate is either registered at run time
//! ([`register_family`]) or used unregistered ([`Projection::user`]: explicit projections,
//! not stored in model files).
//!
//! A family never reads the training data: what it needs of it (the width, SPORF's robust
//! scales) it declares in [`ProjectionFamily::needs`], and the forest computes it once per
//! fit as a [`DataStats`] that every `sample` call receives.
//!
//! In a model file a family is its tag and its own postcard bytes (the families that
//! predate the registry keep their historical encoding: `wire.rs`); loading looks the
//! tag up in the built-in registry and then in the families registered at run time.
//! Invariant: a `Projection` only ever holds a value built by its type's `from_args` or
//! constructor, or decoded from its bytes, and [`ProjectionFamily::check`] runs before every
//! fit and on every load, so a family's descriptors are read only against data of the width
//! it was checked for.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, RwLock};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{CompactDescriptors, ProjectionBuf, SamplerScratch, MAX_NODE_ENTRIES};
use crate::error::{invalid, Error, Result};
use crate::rng::Rng;
use crate::value::{ArrayData, Value};

/// What a family needs computed from the training data before it samples (see
/// [`DataStats`]); the width is always there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataNeeds {
    /// Per feature, the inverse of a robust spread ([`DataStats::robust_inverse_scales`]).
    pub robust_scales: bool,
    /// Which columns are missing on every row ([`DataStats::all_missing`]).
    pub missing_columns: bool,
}

/// What a family may know of the training data: computed once per fit by the forest
/// ([`crate::data::FeatureMatrix::stats`]) and handed to every [`ProjectionFamily::sample`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataStats {
    /// Columns of the training data.
    pub n_features: usize,
    /// Per feature, 1/s_j with s_j the column's interquartile range (its range when that is
    /// 0; 1 for a constant column), when a family asked for it ([`DataNeeds::robust_scales`]).
    pub robust_inverse_scales: Option<Arc<[f32]>>,
    /// Per feature, whether every row is missing (NaN), when a family asked for it
    /// ([`DataNeeds::missing_columns`]): a term on such a column makes every row's value
    /// missing.
    pub all_missing: Option<Arc<[bool]>>,
}

impl DataStats {
    /// The statistics of data `n_features` wide that need nothing else.
    pub fn of_width(n_features: usize) -> DataStats {
        DataStats {
            n_features,
            robust_inverse_scales: None,
            all_missing: None,
        }
    }

    /// The statistics of the data's `columns` (in range), as data of that width: what a
    /// family sampling for a random-subspace tree sees ([`Sampler::restricted`]).
    pub fn columns(&self, columns: &[u32]) -> DataStats {
        fn gather<T: Copy>(v: &Option<Arc<[T]>>, columns: &[u32]) -> Option<Arc<[T]>> {
            v.as_ref()
                .map(|v| columns.iter().map(|&j| v[j as usize]).collect())
        }
        DataStats {
            n_features: columns.len(),
            robust_inverse_scales: gather(&self.robust_inverse_scales, columns),
            all_missing: gather(&self.all_missing, columns),
        }
    }
}

/// A projection distribution: what a split node samples its candidate directions from.
/// Everything a family stores is either explicit projections (feature indices in
/// `out.idx`, weights in `out.w`) or compact descriptors (words in `out.idx` that its
/// [`ProjectionFamily::descriptors`] reads back as terms, the same in training and
/// prediction).
pub trait ProjectionFamily: fmt::Debug + Send + Sync {
    /// Checks the settings against the data width.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming the setting that does not fit.
    fn check(&self, n_features: usize) -> Result<()>;

    /// About how many entries (descriptor words, or terms when they are more) one
    /// candidate takes: bounds `max_features` × candidate size before anything is drawn
    /// (see [`super::MAX_NODE_ENTRIES`]).
    fn entries_per_candidate(&self, n_features: usize) -> f64;

    /// What the family needs of the training data besides its width (nothing by default).
    fn needs(&self) -> DataNeeds {
        DataNeeds::default()
    }

    /// Replaces the contents of `out` with up to `n_candidates` projections, for data
    /// described by `data`. Everything random comes from `rng` (the node's stream), so the
    /// forest depends on its seed only.
    fn sample(
        &self,
        data: &DataStats,
        rng: &mut Rng,
        n_candidates: usize,
        scratch: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    );

    /// How this family's compact descriptors read as terms; `None` (the default) when it
    /// draws explicit projections.
    fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        None
    }

    /// Whether a projection's weights are units rather than preferences (SPORF's ±1), so
    /// that importances share a split among its features equally instead of by |weight|.
    fn unit_weights(&self) -> bool {
        false
    }

    /// The settings as generic arguments: what [`RegisteredFamily::from_args`] builds the
    /// same family from (the Python side rebuilds its object from them after loading).
    fn args(&self) -> FamilyArgs {
        FamilyArgs::new()
    }
}

/// A [`ProjectionFamily`] with a registry tag, a serde form for model files and a
/// constructor from generic arguments.
pub trait RegisteredFamily:
    ProjectionFamily + Serialize + DeserializeOwned + PartialEq + 'static
{
    /// The family's name in model files and in `_core.Projection.family(tag, ...)`.
    const TAG: &'static str;

    /// Builds (and checks what can be checked without data) the family from `args`; the
    /// caller rejects arguments it leaves untaken.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming a missing, mistyped or invalid argument.
    fn from_args(args: &mut FamilyArgs) -> Result<Self>;
}

/// Named generic arguments of a family, as plain [`Value`]s (a sequence as a list or a
/// 1-D array): built by the caller, taken by the family's [`RegisteredFamily::from_args`]
/// with typed getters whose errors name the argument.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FamilyArgs {
    values: Vec<(String, Value)>,
}

fn wrong(name: &'static str, want: &str, got: &Value) -> Error {
    invalid(name, format!("must be {want}, got {got:?}"))
}

impl FamilyArgs {
    /// No arguments.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) argument `name`.
    pub fn with(mut self, name: &str, value: Value) -> Self {
        self.values.retain(|(n, _)| n != name);
        self.values.push((name.to_string(), value));
        self
    }

    /// The arguments, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.values.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// Removes and returns argument `name`; a missing one reads as None.
    pub fn take(&mut self, name: &str) -> Value {
        match self.values.iter().position(|(n, _)| n == name) {
            Some(i) => self.values.remove(i).1,
            None => Value::None,
        }
    }

    /// A non-negative integer.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `name` if it is missing, negative or not
    /// an integer.
    pub fn count(&mut self, name: &'static str) -> Result<usize> {
        match self.take(name) {
            Value::Int(v) => {
                usize::try_from(v).map_err(|_| wrong(name, "an int >= 0", &Value::Int(v)))
            }
            other => Err(wrong(name, "an int >= 0", &other)),
        }
    }

    /// A non-negative integer or None.
    ///
    /// # Errors
    /// As [`Self::count`], None allowed.
    pub fn opt_count(&mut self, name: &'static str) -> Result<Option<usize>> {
        match self.take(name) {
            Value::None => Ok(None),
            v => self.with_back(name, v).count(name).map(Some),
        }
    }

    /// A float (an integer converts).
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `name` if it is missing or not a number.
    pub fn float(&mut self, name: &'static str) -> Result<f64> {
        match self.take(name) {
            Value::Float(v) => Ok(v),
            Value::Int(v) => Ok(v as f64),
            other => Err(wrong(name, "a number", &other)),
        }
    }

    /// A float or None.
    ///
    /// # Errors
    /// As [`Self::float`], None allowed.
    pub fn opt_float(&mut self, name: &'static str) -> Result<Option<f64>> {
        match self.take(name) {
            Value::None => Ok(None),
            v => self.with_back(name, v).float(name).map(Some),
        }
    }

    /// A string or None.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `name` if it is neither.
    pub fn opt_str(&mut self, name: &'static str) -> Result<Option<String>> {
        match self.take(name) {
            Value::None => Ok(None),
            Value::Str(s) => Ok(Some(s)),
            other => Err(wrong(name, "a string or None", &other)),
        }
    }

    /// A sequence of integers (an empty sequence of any kind is empty).
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `name` if it is missing or not integers.
    pub fn ints(&mut self, name: &'static str) -> Result<Vec<i64>> {
        let v = self.take(name);
        match (&v, v.as_vector()) {
            (_, Some(ArrayData::I64(a))) => Ok(a.clone()),
            (_, Some(a)) if a.is_empty() => Ok(vec![]),
            (Value::Ints(a), _) => Ok(a.clone()),
            (Value::Floats(a), _) if a.is_empty() => Ok(vec![]),
            (Value::Bools(a), _) if a.is_empty() => Ok(vec![]),
            _ => Err(wrong(name, "a sequence of ints", &v)),
        }
    }

    /// A sequence of non-negative integers.
    ///
    /// # Errors
    /// As [`Self::ints`], and a negative entry.
    pub fn counts(&mut self, name: &'static str) -> Result<Vec<usize>> {
        self.ints(name)?
            .into_iter()
            .map(|v| {
                usize::try_from(v)
                    .map_err(|_| invalid(name, format!("entries must be >= 0, got {v}")))
            })
            .collect()
    }

    /// A sequence of bools (an empty sequence of any kind too).
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `name` if it is missing or not bools.
    pub fn bools(&mut self, name: &'static str) -> Result<Vec<bool>> {
        let v = self.take(name);
        match (&v, v.as_vector()) {
            (_, Some(ArrayData::Bool(a))) => Ok(a.clone()),
            (_, Some(a)) if a.is_empty() => Ok(vec![]),
            (Value::Bools(a), _) => Ok(a.clone()),
            (Value::Ints(a), _) if a.is_empty() => Ok(vec![]),
            (Value::Floats(a), _) if a.is_empty() => Ok(vec![]),
            _ => Err(wrong(name, "a sequence of bools", &v)),
        }
    }

    /// A sequence of floats (integers convert).
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `name` if it is missing or not numbers.
    pub fn floats(&mut self, name: &'static str) -> Result<Vec<f64>> {
        let v = self.take(name);
        match (&v, v.as_vector()) {
            (_, Some(ArrayData::F64(a))) => Ok(a.clone()),
            (_, Some(ArrayData::F32(a))) => Ok(a.iter().map(|&x| f64::from(x)).collect()),
            (_, Some(ArrayData::I64(a))) => Ok(a.iter().map(|&x| x as f64).collect()),
            (_, Some(a)) if a.is_empty() => Ok(vec![]),
            (Value::Floats(a), _) => Ok(a.clone()),
            (Value::Ints(a), _) => Ok(a.iter().map(|&x| x as f64).collect()),
            (Value::Bools(a), _) if a.is_empty() => Ok(vec![]),
            _ => Err(wrong(name, "a sequence of numbers", &v)),
        }
    }

    /// Errors naming the first argument nobody took.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `projection`.
    pub fn finish(self, tag: &str) -> Result<()> {
        match self.values.first() {
            Some((n, _)) => Err(invalid(
                "projection",
                format!("the {tag:?} family takes no argument {n:?}"),
            )),
            None => Ok(()),
        }
    }

    fn with_back(&mut self, name: &str, v: Value) -> &mut Self {
        self.values.push((name.to_string(), v));
        self
    }
}

/// The type-erased face of a family held by a [`Projection`] (blanket-implemented for
/// registered families; the user wrapper and the placeholders of `wire.rs` implement
/// it by hand).
pub(super) trait Erased: Send + Sync {
    fn family(&self) -> &dyn ProjectionFamily;
    fn tag(&self) -> &str;
    /// The family's own bytes in a model file; `None` for a family that is not stored.
    fn encode(&self) -> Option<Result<Vec<u8>>>;
    fn any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Erased) -> bool;
    /// Whether trees may be grown with it (not a placeholder read from a file).
    fn growable(&self) -> Result<()> {
        Ok(())
    }
}

impl<T: RegisteredFamily> Erased for T {
    fn family(&self) -> &dyn ProjectionFamily {
        self
    }
    fn tag(&self) -> &str {
        T::TAG
    }
    fn encode(&self) -> Option<Result<Vec<u8>>> {
        Some(
            postcard::to_allocvec(self)
                .map_err(|e| Error::CorruptModel(format!("encode the {:?} family: {e}", T::TAG))),
        )
    }
    fn any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Erased) -> bool {
        other.any().downcast_ref::<T>() == Some(self)
    }
}

/// A family defined outside the crate and not registered ([`Projection::user`]): its
/// projections must be explicit, and each node's draw is checked before a tree reads it.
struct UserFamily<T>(T);

impl<T: ProjectionFamily> fmt::Debug for UserFamily<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UserFamily({:?})", self.0)
    }
}

impl<T: ProjectionFamily> ProjectionFamily for UserFamily<T> {
    fn check(&self, n_features: usize) -> Result<()> {
        self.0.check(n_features)
    }
    fn entries_per_candidate(&self, n_features: usize) -> f64 {
        self.0.entries_per_candidate(n_features)
    }
    fn needs(&self) -> DataNeeds {
        self.0.needs()
    }
    fn sample(
        &self,
        data: &DataStats,
        rng: &mut Rng,
        n_candidates: usize,
        scratch: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        self.0.sample(data, rng, n_candidates, scratch, out);
        // a foreign family's output is checked before the tree reads it: a malformed
        // buffer is a bug in that family, reported, never grown on
        assert!(
            out.is_explicit_within(data.n_features),
            "a user projection family drew malformed projections (offsets, a weight per index \
             and indices below n_features = {} are required)",
            data.n_features
        );
    }
    fn unit_weights(&self) -> bool {
        self.0.unit_weights()
    }
    fn args(&self) -> FamilyArgs {
        self.0.args()
    }
}

impl<T: ProjectionFamily + 'static> Erased for UserFamily<T> {
    fn family(&self) -> &dyn ProjectionFamily {
        self
    }
    fn tag(&self) -> &str {
        USER_TAG
    }
    fn encode(&self) -> Option<Result<Vec<u8>>> {
        None
    }
    fn any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Erased) -> bool {
        // the same family object
        std::ptr::eq(
            self.any() as *const dyn Any as *const u8,
            other.any() as *const dyn Any as *const u8,
        )
    }
}

/// The tag of an unregistered family ([`Projection::user`]) and of its placeholder in a
/// loaded forest.
pub const USER_TAG: &str = "user";

/// A projection distribution held by a forest's parameters: one [`ProjectionFamily`],
/// registered or not; cheap to clone (shared).
///
/// ```
/// use obliqueforest::projection::{Dictionary, Projection};
///
/// // two atoms over 3 features: x0 + x1, and x2
/// let dict = Dictionary::from_csc(3, &[0, 2, 3], &[0, 1, 2], &[1.0, 1.0, 1.0], None)?;
/// let projection = Projection::new(dict);
/// assert_eq!(projection.tag(), "dictionary");
/// # Ok::<(), obliqueforest::Error>(())
/// ```
#[derive(Clone)]
pub struct Projection(pub(super) Arc<dyn Erased>);

impl Projection {
    /// A registered family.
    pub fn new<T: RegisteredFamily>(family: T) -> Projection {
        Projection(Arc::new(family))
    }

    /// A family defined outside the crate, used without registering it: it must draw
    /// explicit projections (indices and weights), so a fitted forest predicts, validates
    /// and serializes without it. The family itself is not stored in model files: a loaded
    /// forest predicts, but needs the family again to grow more trees.
    ///
    /// # Panics
    /// Growing a tree panics if the family leaves `out` malformed (offsets not rising from
    /// 0 to `idx.len()`, a missing weight, or a feature index out of range).
    ///
    /// ```
    /// use ndarray::Array2;
    /// use obliqueforest::projection::{
    ///     DataStats, FamilyArgs, Projection, ProjectionBuf, ProjectionFamily, SamplerScratch,
    /// };
    /// use obliqueforest::rng::Rng;
    /// use obliqueforest::{Forest, ForestParams, MaxFeatures, Result};
    ///
    /// /// Differences of two random features: x_i - x_j.
    /// #[derive(Debug)]
    /// struct Differences;
    ///
    /// impl ProjectionFamily for Differences {
    ///     fn check(&self, n_features: usize) -> Result<()> { Ok(()) }
    ///     fn entries_per_candidate(&self, _: usize) -> f64 { 2.0 }
    ///     fn sample(&self, data: &DataStats, rng: &mut Rng, d: usize, _: &mut SamplerScratch,
    ///               out: &mut ProjectionBuf) {
    ///         out.clear();
    ///         for _ in 0..d {
    ///             let (i, j) = (rng.below(data.n_features), rng.below(data.n_features));
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
    /// params.projection = Projection::user(Differences);
    /// params.max_features = MaxFeatures::Count(10);
    /// params.n_estimators = 10;
    /// let forest = Forest::fit(&params, x.view(), &y, None)?;
    /// let proba = forest.predict(x.view(), 1)?;
    /// let right = proba.rows().into_iter().zip(&y).filter(|(p, &t)| (p[1] > 0.5) == (t == 1.0)).count();
    /// assert!(right > 290);
    /// // the model round-trips without the family, and predicts the same
    /// let loaded = Forest::from_bytes(&forest.to_bytes()?)?;
    /// assert_eq!(loaded.predict(x.view(), 1)?, proba);
    /// # Ok::<(), obliqueforest::Error>(())
    /// ```
    pub fn user<T: ProjectionFamily + 'static>(family: T) -> Projection {
        Projection(Arc::new(UserFamily(family)))
    }

    /// Builds the family registered as `tag` from generic arguments (the Python
    /// boundary's path), rejecting arguments it does not take.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `projection` for an unknown tag or an
    /// argument the family does not take, or what the family's `from_args` rejects.
    pub fn from_args(tag: &str, mut args: FamilyArgs) -> Result<Projection> {
        let entry = lookup(tag).ok_or_else(|| {
            invalid(
                "projection",
                format!(
                    "no projection family is registered as {tag:?} (known: {})",
                    known().join(", ")
                ),
            )
        })?;
        let family = (entry.from_args)(&mut args)?;
        args.finish(tag)?;
        Ok(family)
    }

    /// The registry tag (`"user"` for an unregistered family).
    pub fn tag(&self) -> &str {
        self.0.tag()
    }

    /// The family's behaviour.
    pub fn get(&self) -> &dyn ProjectionFamily {
        self.0.family()
    }

    /// How its stored descriptors read as terms; `None` for explicit projections.
    pub fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        self.get().descriptors()
    }

    /// The concrete family, if it is a `T`.
    pub fn downcast<T: RegisteredFamily>(&self) -> Option<&T> {
        self.0.any().downcast_ref::<T>()
    }

    /// Whether a projection's weights are units ([`ProjectionFamily::unit_weights`]).
    pub fn unit_weights(&self) -> bool {
        self.get().unit_weights()
    }

    /// Checks the settings against the data width.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming the setting that is out of range.
    pub fn check(&self, n_features: usize) -> Result<()> {
        self.get().check(n_features)
    }

    /// [`Self::check`], that trees may be grown with this family, and that `n_candidates`
    /// projections per node stay within [`MAX_NODE_ENTRIES`] entries.
    ///
    /// # Errors
    /// As [`Self::check`], or [`crate::Error::InvalidParameter`] naming `projection` (a
    /// family not stored in a model file) or `max_features`.
    pub fn check_candidates(&self, n_features: usize, n_candidates: usize) -> Result<()> {
        self.check(n_features)?;
        self.0.growable()?;
        let per_candidate = self.get().entries_per_candidate(n_features);
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

    /// The family bound to the statistics of the data its trees grow on: what the tree
    /// builder samples from.
    ///
    /// # Panics
    /// If `data` lacks a statistic the family [needs](ProjectionFamily::needs).
    pub fn sampler<'a>(&'a self, data: &'a DataStats) -> Sampler<'a> {
        let needs = self.get().needs();
        assert!(
            (!needs.robust_scales || data.robust_inverse_scales.is_some())
                && (!needs.missing_columns || data.all_missing.is_some()),
            "the {:?} family needs statistics the data statistics do not hold",
            self.tag()
        );
        Sampler {
            family: self.get(),
            descriptors: self.descriptors(),
            data,
            columns: None,
        }
    }
}

impl fmt::Debug for Projection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Projection({:?}, {:?})", self.tag(), self.get())
    }
}

/// The same type with equal settings (an unregistered family: the same object).
impl PartialEq for Projection {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(&*other.0)
    }
}

/// A family bound to the statistics of the data it grows on ([`Projection::sampler`]),
/// or of some of its columns ([`Sampler::restricted`]).
#[derive(Clone, Copy)]
pub struct Sampler<'a> {
    family: &'a dyn ProjectionFamily,
    descriptors: Option<&'a dyn CompactDescriptors>,
    data: &'a DataStats,
    /// The data's columns the family samples over, as the features `0..len` it sees;
    /// `None` for all of them.
    columns: Option<&'a [u32]>,
}

impl<'a> Sampler<'a> {
    /// Replaces the contents of `out` with up to `n_candidates` projections drawn from
    /// `rng` ([`ProjectionFamily::sample`]).
    #[inline]
    pub fn sample(
        &self,
        rng: &mut Rng,
        n_candidates: usize,
        scratch: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        self.family
            .sample(self.data, rng, n_candidates, scratch, out);
        if let Some(columns) = self.columns {
            // explicit projections (a restricted sampler has no descriptors): feature j of
            // the family's view is column columns[j]; ascending, so order is kept
            out.idx.iter_mut().for_each(|j| *j = columns[*j as usize]);
        }
    }

    /// The same family sampling over the data's `columns` only (ascending, in range),
    /// whose statistics are `data` ([`DataStats::columns`]): the sampler of a
    /// random-subspace tree.
    ///
    /// # Panics
    /// When the family stores compact descriptors (they name the data's columns
    /// themselves; the parameters' check refuses such forests), or `data` is not
    /// `columns` wide.
    pub fn restricted<'b>(&self, data: &'b DataStats, columns: &'b [u32]) -> Sampler<'b>
    where
        'a: 'b,
    {
        assert!(
            self.descriptors.is_none() && data.n_features == columns.len(),
            "a restricted sampler needs explicit projections over its columns"
        );
        Sampler {
            family: self.family,
            descriptors: None,
            data,
            columns: Some(columns),
        }
    }

    /// The statistics of the data the family samples for.
    pub fn data(&self) -> &'a DataStats {
        self.data
    }

    /// How the family's compact descriptors read as terms; `None` for explicit ones.
    #[inline]
    pub fn descriptors(&self) -> Option<&'a dyn CompactDescriptors> {
        self.descriptors
    }

    /// Whether a node's `n_candidates` projections are expected to share features: explicit
    /// ones whose terms outnumber the features they are drawn from (SPORF's ~1.5 a
    /// candidate, 2p candidates over p features; never the axis-aligned family's √p).
    pub fn shares_features(&self, n_candidates: usize) -> bool {
        let n_features = self.data.n_features;
        let terms = self.family.entries_per_candidate(n_features) * n_candidates as f64;
        self.descriptors.is_none() && terms > n_features as f64
    }
}

/// A registry entry: a family's tag and how to build it.
#[derive(Clone, Copy)]
pub struct FamilyEntry {
    tag: &'static str,
    decode: fn(&[u8]) -> Result<Projection>,
    from_args: fn(&mut FamilyArgs) -> Result<Projection>,
}

impl FamilyEntry {
    /// The entry of family type `T`.
    pub const fn of<T: RegisteredFamily>() -> FamilyEntry {
        FamilyEntry {
            tag: T::TAG,
            decode: decode::<T>,
            from_args: build::<T>,
        }
    }

    /// The tag.
    pub fn tag(&self) -> &'static str {
        self.tag
    }
}

fn decode<T: RegisteredFamily>(bytes: &[u8]) -> Result<Projection> {
    let (value, rest) = postcard::take_from_bytes::<T>(bytes)
        .map_err(|e| Error::CorruptModel(format!("the {:?} family's settings: {e}", T::TAG)))?;
    if !rest.is_empty() {
        return Err(Error::CorruptModel(format!(
            "the {:?} family's settings have {} trailing bytes",
            T::TAG,
            rest.len()
        )));
    }
    Ok(Projection::new(value))
}

fn build<T: RegisteredFamily>(args: &mut FamilyArgs) -> Result<Projection> {
    T::from_args(args).map(Projection::new)
}

/// Families registered at run time (defined outside the crate).
static RUNTIME: RwLock<Vec<FamilyEntry>> = RwLock::new(Vec::new());

/// Registers a family defined outside the crate, so that model files using it load and
/// [`Projection::from_args`] finds it. Registering a tag again replaces the entry.
///
/// # Errors
/// [`crate::Error::InvalidParameter`] naming `projection` if `T::TAG` is a built-in tag (or
/// `"user"`).
pub fn register_family<T: RegisteredFamily>() -> Result<()> {
    if T::TAG == USER_TAG || super::FAMILIES.iter().any(|e| e.tag == T::TAG) {
        return Err(invalid(
            "projection",
            format!("{:?} is the tag of a built-in family", T::TAG),
        ));
    }
    let mut r = RUNTIME.write().unwrap_or_else(|e| e.into_inner());
    r.retain(|e| e.tag != T::TAG);
    r.push(FamilyEntry::of::<T>());
    Ok(())
}

/// The registry entry of `tag`: built-in first, then registered at run time.
pub(super) fn lookup(tag: &str) -> Option<FamilyEntry> {
    super::FAMILIES
        .iter()
        .find(|e| e.tag == tag)
        .copied()
        .or_else(|| {
            let r = RUNTIME.read().unwrap_or_else(|e| e.into_inner());
            r.iter().find(|e| e.tag == tag).copied()
        })
}

/// Decodes the bytes of the family registered as `tag`, if it is.
pub(super) fn decode_registered(tag: &str, bytes: &[u8]) -> Option<Result<Projection>> {
    lookup(tag).map(|entry| (entry.decode)(bytes))
}

/// Every registered tag, built-in first.
pub(super) fn known() -> Vec<&'static str> {
    let mut tags: Vec<_> = super::FAMILIES.iter().map(|e| e.tag).collect();
    let r = RUNTIME.read().unwrap_or_else(|e| e.into_inner());
    tags.extend(r.iter().map(|e| e.tag));
    tags
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn registry_tags_are_distinct() {
        let mut tags: Vec<_> = super::super::FAMILIES.iter().map(|e| e.tag).collect();
        let n = tags.len();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), n);
    }

    #[test]
    fn unknown_tag_and_unknown_argument_are_named() {
        let e = Projection::from_args("nope", FamilyArgs::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"nope\"") && e.contains("dictionary"), "{e}");
        let args = FamilyArgs::new()
            .with("n_features", Value::Int(2))
            .with("indptr", Value::Ints(vec![0, 1]))
            .with("indices", Value::Ints(vec![1]))
            .with("data", Value::Floats(vec![1.0]))
            .with("bogus", Value::Bool(true));
        let e = Projection::from_args("dictionary", args)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
    }

    /// A family defined "outside" the built-in list: x[a] - x[b] for a random pair.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct PairDifferences {
        n_features: usize,
    }

    impl CompactDescriptors for PairDifferences {
        fn for_each_term(&self, desc: &[u32], f: &mut dyn FnMut(usize, f32)) {
            f(desc[0] as usize, 1.0);
            f(desc[1] as usize, -1.0);
        }
        fn is_valid(&self, desc: &[u32]) -> bool {
            matches!(desc, [a, b] if a != b && (*a as usize) < self.n_features && (*b as usize) < self.n_features)
        }
    }

    impl ProjectionFamily for PairDifferences {
        fn check(&self, n_features: usize) -> Result<()> {
            if n_features != self.n_features || n_features < 2 {
                return Err(invalid("n_features", "must match X and be at least 2"));
            }
            Ok(())
        }
        fn entries_per_candidate(&self, _: usize) -> f64 {
            2.0
        }
        fn sample(
            &self,
            _: &DataStats,
            rng: &mut Rng,
            d: usize,
            _: &mut SamplerScratch,
            out: &mut ProjectionBuf,
        ) {
            out.clear();
            for _ in 0..d {
                let a = rng.below(self.n_features);
                let b = (a + 1 + rng.below(self.n_features - 1)) % self.n_features;
                out.idx.extend([a as u32, b as u32]);
                out.close();
            }
        }
        fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
            Some(self)
        }
        fn args(&self) -> FamilyArgs {
            FamilyArgs::new().with("n_features", Value::Int(self.n_features as i64))
        }
    }

    impl RegisteredFamily for PairDifferences {
        const TAG: &'static str = "test_pair_differences";
        fn from_args(args: &mut FamilyArgs) -> Result<Self> {
            Ok(PairDifferences {
                n_features: args.count("n_features")?,
            })
        }
    }

    #[test]
    fn runtime_registered_family_fits_saves_and_loads() {
        use crate::{Forest, ForestParams, MaxFeatures};
        let x = ndarray::Array2::from_shape_fn((200, 6), |(i, j)| {
            ((i * 11 + j * 7) % 19) as f32 / 19.0
        });
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| f64::from(u8::from(r[1] > r[4])))
            .collect();
        let mut params = ForestParams::classification(2);
        params.projection = Projection::new(PairDifferences { n_features: 6 });
        params.max_features = MaxFeatures::Count(30);
        params.n_estimators = 5;
        let forest = Forest::fit(&params, x.view(), &y, None).unwrap();
        let bytes = forest.to_bytes().unwrap();
        assert!(
            register_family::<crate::projection::Dictionary>().is_err(),
            "built-in tag"
        );
        register_family::<PairDifferences>().unwrap();
        let loaded = Forest::from_bytes(&bytes).unwrap();
        assert_eq!(loaded, forest);
        let args = FamilyArgs::new().with("n_features", Value::Int(6));
        let built = Projection::from_args("test_pair_differences", args).unwrap();
        assert_eq!(built, Projection::new(PairDifferences { n_features: 6 }));
        assert_ne!(built, Projection::new(PairDifferences { n_features: 7 }));
    }

    #[test]
    fn arg_getters_name_bad_values() {
        let mut a = FamilyArgs::new()
            .with("k", Value::Int(-1))
            .with("s", Value::Str("x".into()));
        assert!(a.count("k").unwrap_err().to_string().contains("k"));
        assert!(a.floats("s").is_err());
        assert_eq!(a.opt_count("missing").unwrap(), None);
        // a sequence may come as a list or as a 1-D array
        let mut b = FamilyArgs::new()
            .with("i", Value::int_array(vec![1, 2]))
            .with("f", Value::Ints(vec![3]))
            .with(
                "m",
                Value::Array {
                    shape: vec![1, 1],
                    data: ArrayData::I64(vec![1]),
                },
            );
        assert_eq!(b.ints("i").unwrap(), vec![1, 2]);
        assert_eq!(b.floats("f").unwrap(), vec![3.0]);
        assert!(b.ints("m").is_err(), "a 2-D array is not a sequence");
    }
}
