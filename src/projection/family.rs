//! The projection-family registry: a family registers itself from its own file.
//!
//! A registered family is one type, in one file of this module, that implements
//! [`ProjectionFamily`] (how it checks its settings, bounds its candidates, samples a
//! node's candidates and reads its stored descriptors) and [`RegisteredFamily`] (its tag,
//! its serde form in model files, and its construction from [`FamilyArgs`], the generic
//! arguments the Python boundary's `_core.Projection.family(tag, **args)` hands over).
//! The one line `tag => module::Type` in the `families!` list of `projection/mod.rs`
//! declares the module and registers the type; nothing else in the crate (not the
//! `ProjectionKind` enum, the sampler dispatch, the model format or `python.rs`) names it.
//!
//! A forest holds a family as a [`Family`] (in [`super::ProjectionKind::Family`]). In a
//! model file a family is its tag and its own postcard bytes; loading looks the tag up
//! in the built-in registry and then in the families registered at run time
//! ([`register_family`], for families defined outside the crate). Invariant: a `Family`
//! only ever holds a value built by its type's `from_args` or decoded from its bytes, and
//! [`ProjectionFamily::check`] runs before every fit, so a family's descriptors are read
//! only against data of the width it was checked for.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, RwLock};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{CompactDescriptors, ProjectionBuf, SamplerScratch};
use crate::error::{invalid, Error, Result};
use crate::rng::Rng;
use crate::value::{ArrayData, Value};

/// What a projection family does. Its stored descriptors are read through its
/// [`CompactDescriptors`] implementation (the same terms in training and prediction).
pub trait ProjectionFamily: CompactDescriptors {
    /// Checks the settings against the data width.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming the setting that does not fit.
    fn check(&self, n_features: usize) -> Result<()>;

    /// About how many entries (descriptor words, or terms when they are more) one
    /// candidate takes: bounds `max_features` × candidate size before anything is drawn
    /// (see [`super::MAX_NODE_ENTRIES`]).
    fn entries_per_candidate(&self, n_features: usize) -> f64;

    /// Replaces the contents of `out` with up to `n_candidates` compact descriptors (one
    /// per projection, read back by [`CompactDescriptors::for_each_term`]). Everything
    /// random comes from `rng`, so the forest depends on its seed only.
    fn sample(
        &self,
        rng: &mut Rng,
        n_candidates: usize,
        scratch: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    );

    /// The settings as generic arguments: what [`RegisteredFamily::from_args`] builds the
    /// same family from (the Python side rebuilds its object from them after loading).
    fn args(&self) -> FamilyArgs;
}

/// A [`ProjectionFamily`] with a registry tag, a serde form for model files and a
/// constructor from generic arguments.
pub trait RegisteredFamily:
    ProjectionFamily + Serialize + DeserializeOwned + PartialEq + Send + Sync + 'static
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

/// The type-erased face of a registered family (blanket-implemented; not for users).
trait Erased: Send + Sync {
    fn family(&self) -> &dyn ProjectionFamily;
    fn descriptors(&self) -> &dyn CompactDescriptors;
    fn tag(&self) -> &str;
    fn encode(&self) -> Result<Vec<u8>>;
    fn any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Erased) -> bool;
}

impl<T: RegisteredFamily> Erased for T {
    fn family(&self) -> &dyn ProjectionFamily {
        self
    }
    fn descriptors(&self) -> &dyn CompactDescriptors {
        self
    }
    fn tag(&self) -> &str {
        T::TAG
    }
    fn encode(&self) -> Result<Vec<u8>> {
        postcard::to_allocvec(self)
            .map_err(|e| Error::CorruptModel(format!("encode the {:?} family: {e}", T::TAG)))
    }
    fn any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Erased) -> bool {
        other.any().downcast_ref::<T>() == Some(self)
    }
}

/// A registered projection family held by a forest's parameters
/// ([`super::ProjectionKind::Family`]); cheap to clone (shared).
///
/// ```
/// use obliqueforest::projection::{Dictionary, Family};
/// use obliqueforest::ProjectionKind;
///
/// // two atoms over 3 features: x0 + x1, and x2
/// let dict = Dictionary::from_csc(3, &[0, 2, 3], &[0, 1, 2], &[1.0, 1.0, 1.0], None)?;
/// let kind = ProjectionKind::Family(Family::new(dict));
/// assert_eq!(kind.family().map(|f| f.tag()), Some("dictionary"));
/// # Ok::<(), obliqueforest::Error>(())
/// ```
#[derive(Clone)]
pub struct Family(Arc<dyn Erased>);

impl Family {
    /// Wraps a family value.
    pub fn new<T: RegisteredFamily>(family: T) -> Family {
        Family(Arc::new(family))
    }

    /// Builds the family registered as `tag` from generic arguments (the Python
    /// boundary's path), rejecting arguments it does not take.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `projection` for an unknown tag or an
    /// argument the family does not take, or what the family's `from_args` rejects.
    pub fn from_args(tag: &str, mut args: FamilyArgs) -> Result<Family> {
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

    /// The registry tag.
    pub fn tag(&self) -> &str {
        self.0.tag()
    }

    /// The family's behaviour.
    pub fn get(&self) -> &dyn ProjectionFamily {
        self.0.family()
    }

    /// How its stored descriptors read as terms.
    pub fn descriptors(&self) -> &dyn CompactDescriptors {
        self.0.descriptors()
    }

    /// The concrete family, if it is a `T`.
    pub fn downcast<T: RegisteredFamily>(&self) -> Option<&T> {
        self.0.any().downcast_ref::<T>()
    }
}

impl fmt::Debug for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Family({:?}, {:?})", self.tag(), self.get())
    }
}

/// The same type with equal settings.
impl PartialEq for Family {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(&*other.0)
    }
}

/// The tag, then the family's own postcard bytes.
impl Serialize for Family {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let bytes = self.0.encode().map_err(serde::ser::Error::custom)?;
        (self.tag(), bytes).serialize(s)
    }
}

/// A family whose tag is not registered (or whose bytes do not decode) reads as a
/// placeholder that [`crate::Forest::validate`], run on every load, reports through
/// [`ProjectionFamily::check`]: postcard drops the text of errors raised while decoding.
impl<'de> Deserialize<'de> for Family {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let (tag, bytes) = <(String, Vec<u8>)>::deserialize(d)?;
        let reason = match lookup(&tag) {
            Some(entry) => match (entry.decode)(&bytes) {
                Ok(family) => return Ok(family),
                Err(e) => e.to_string(),
            },
            None => format!(
                "the model uses the projection family {tag:?}, which this build does not have \
                 (known: {}; a family defined outside the crate needs register_family first)",
                known().join(", ")
            ),
        };
        Ok(Family(Arc::new(Unresolved { tag, bytes, reason })))
    }
}

/// A family read from a model file that this build cannot resolve: kept (and written
/// back) as its bytes; it refuses every check, so no forest ever grows or predicts with it.
#[derive(Debug, PartialEq)]
struct Unresolved {
    tag: String,
    bytes: Vec<u8>,
    reason: String,
}

impl CompactDescriptors for Unresolved {
    fn for_each_term(&self, _: &[u32], _: &mut dyn FnMut(usize, f32)) {}
    fn is_valid(&self, _: &[u32]) -> bool {
        false
    }
}

impl ProjectionFamily for Unresolved {
    fn check(&self, _: usize) -> Result<()> {
        Err(invalid("projection", self.reason.clone()))
    }
    fn entries_per_candidate(&self, _: usize) -> f64 {
        1.0
    }
    fn sample(&self, _: &mut Rng, _: usize, _: &mut SamplerScratch, out: &mut ProjectionBuf) {
        out.clear();
    }
    fn args(&self) -> FamilyArgs {
        FamilyArgs::new()
    }
}

impl Erased for Unresolved {
    fn family(&self) -> &dyn ProjectionFamily {
        self
    }
    fn descriptors(&self) -> &dyn CompactDescriptors {
        self
    }
    fn tag(&self) -> &str {
        &self.tag
    }
    fn encode(&self) -> Result<Vec<u8>> {
        Ok(self.bytes.clone())
    }
    fn any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Erased) -> bool {
        other.any().downcast_ref::<Self>() == Some(self)
    }
}

/// A registry entry: a family's tag and how to build it.
#[derive(Clone, Copy)]
pub struct FamilyEntry {
    tag: &'static str,
    decode: fn(&[u8]) -> Result<Family>,
    from_args: fn(&mut FamilyArgs) -> Result<Family>,
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

fn decode<T: RegisteredFamily>(bytes: &[u8]) -> Result<Family> {
    let (value, rest) = postcard::take_from_bytes::<T>(bytes)
        .map_err(|e| Error::CorruptModel(format!("the {:?} family's settings: {e}", T::TAG)))?;
    if !rest.is_empty() {
        return Err(Error::CorruptModel(format!(
            "the {:?} family's settings have {} trailing bytes",
            T::TAG,
            rest.len()
        )));
    }
    Ok(Family::new(value))
}

fn build<T: RegisteredFamily>(args: &mut FamilyArgs) -> Result<Family> {
    T::from_args(args).map(Family::new)
}

/// Families registered at run time (defined outside the crate).
static RUNTIME: RwLock<Vec<FamilyEntry>> = RwLock::new(Vec::new());

/// Registers a family defined outside the crate, so that model files using it load and
/// [`Family::from_args`] finds it. Registering a tag again replaces the entry.
///
/// # Errors
/// [`crate::Error::InvalidParameter`] naming `projection` if `T::TAG` is a built-in tag.
pub fn register_family<T: RegisteredFamily>() -> Result<()> {
    if super::FAMILIES.iter().any(|e| e.tag == T::TAG) {
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

fn lookup(tag: &str) -> Option<FamilyEntry> {
    super::FAMILIES
        .iter()
        .find(|e| e.tag == tag)
        .copied()
        .or_else(|| {
            let r = RUNTIME.read().unwrap_or_else(|e| e.into_inner());
            r.iter().find(|e| e.tag == tag).copied()
        })
}

fn known() -> Vec<&'static str> {
    let mut tags: Vec<_> = super::FAMILIES.iter().map(|e| e.tag).collect();
    let r = RUNTIME.read().unwrap_or_else(|e| e.into_inner());
    tags.extend(r.iter().map(|e| e.tag));
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let e = Family::from_args("nope", FamilyArgs::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"nope\"") && e.contains("dictionary"), "{e}");
        let args = FamilyArgs::new()
            .with("n_features", Value::Int(2))
            .with("indptr", Value::Ints(vec![0, 1]))
            .with("indices", Value::Ints(vec![1]))
            .with("data", Value::Floats(vec![1.0]))
            .with("bogus", Value::Bool(true));
        let e = Family::from_args("dictionary", args)
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
        fn sample(&self, rng: &mut Rng, d: usize, _: &mut SamplerScratch, out: &mut ProjectionBuf) {
            out.clear();
            for _ in 0..d {
                let a = rng.below(self.n_features);
                let b = (a + 1 + rng.below(self.n_features - 1)) % self.n_features;
                out.idx.extend([a as u32, b as u32]);
                out.close();
            }
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
        use crate::{Forest, ForestParams, MaxFeatures, ProjectionKind};
        let x = ndarray::Array2::from_shape_fn((200, 6), |(i, j)| {
            ((i * 11 + j * 7) % 19) as f32 / 19.0
        });
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| f64::from(u8::from(r[1] > r[4])))
            .collect();
        let mut params = ForestParams::classification(2);
        params.projection = ProjectionKind::Family(Family::new(PairDifferences { n_features: 6 }));
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
        let built = Family::from_args("test_pair_differences", args).unwrap();
        assert_eq!(built, Family::new(PairDifferences { n_features: 6 }));
        assert_ne!(built, Family::new(PairDifferences { n_features: 7 }));
    }

    #[test]
    fn arg_getters_name_bad_values() {
        let mut a = FamilyArgs::new()
            .with("k", Value::Int(-1))
            .with("s", Value::Str("x".into()));
        assert!(a.count("k").unwrap_err().to_string().contains("k"));
        assert!(a.floats("s").is_err());
        assert_eq!(a.opt_count("missing").unwrap(), None);
    }
}
