//! How a [`Projection`] is written in model files. A registered family is its tag and its
//! own postcard bytes; the families that predate the registry (axis, SPORF, Forest-RC,
//! Gaussian, MORF patches) keep the enum encoding they always had, so that every model
//! written before keeps its bytes (the pins in `src/pins.rs` and
//! `tests/test_model_hashes.py`) and loads as the same family. This file is that mapping,
//! both ways, and the placeholders of families a reader cannot grow with: one whose tag
//! this build does not know, and an unregistered family ([`Projection::user`]), which is
//! not stored.

use std::any::Any;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::family::{decode_registered, known, Erased, USER_TAG};
use super::{
    AxisAligned, CompactDescriptors, DataStats, Density, Dictionary, FamilyArgs, ForestRc,
    Gaussian, PatchGeometry, Patches, Projection, ProjectionBuf, ProjectionFamily, SamplerScratch,
    SparseSigned, WeightScale,
};
use crate::error::{invalid, Result};
use crate::rng::Rng;

/// A projection as model files hold it: the variants in their historical order (postcard
/// writes the index).
#[derive(Serialize, Deserialize)]
enum Repr {
    AxisAligned,
    SparseSigned {
        density: Density,
    },
    ForestRc {
        n_combined: usize,
    },
    Gaussian,
    Patch(PatchGeometry),
    /// The dictionary as it was written before it moved onto the registry (read only).
    LegacyDictionary(Dictionary),
    /// An unregistered family: nothing of it is stored.
    User,
    /// A registered family: its tag and its own bytes.
    Family(String, Vec<u8>),
    /// SPORF with a [`WeightScale`] other than `None` (appended, so unscaled SPORF keeps the
    /// bytes it always had).
    ScaledSparseSigned {
        density: Density,
        scaling: WeightScale,
    },
}

impl Repr {
    fn of(p: &Projection) -> Result<Repr> {
        if p.downcast::<AxisAligned>().is_some() {
            return Ok(Repr::AxisAligned);
        }
        if let Some(s) = p.downcast::<SparseSigned>() {
            return Ok(match s.scaling {
                WeightScale::None => Repr::SparseSigned { density: s.density },
                scaling => Repr::ScaledSparseSigned {
                    density: s.density,
                    scaling,
                },
            });
        }
        if let Some(f) = p.downcast::<ForestRc>() {
            return Ok(Repr::ForestRc {
                n_combined: f.n_combined,
            });
        }
        if p.downcast::<Gaussian>().is_some() {
            return Ok(Repr::Gaussian);
        }
        if let Some(f) = p.downcast::<Patches>() {
            return Ok(Repr::Patch(f.geometry.clone()));
        }
        Ok(match p.0.encode() {
            None => Repr::User,
            Some(bytes) => Repr::Family(p.tag().to_string(), bytes?),
        })
    }

    fn into_projection(self) -> Projection {
        match self {
            Repr::AxisAligned => Projection::new(AxisAligned),
            Repr::SparseSigned { density } => Projection::new(SparseSigned {
                density,
                scaling: WeightScale::None,
            }),
            Repr::ScaledSparseSigned { density, scaling } => {
                Projection::new(SparseSigned { density, scaling })
            }
            Repr::ForestRc { n_combined } => Projection::new(ForestRc { n_combined }),
            Repr::Gaussian => Projection::new(Gaussian),
            Repr::Patch(geometry) => Projection::new(Patches { geometry }),
            Repr::LegacyDictionary(d) => Projection::new(d),
            Repr::User => Projection(Arc::new(Placeholder::not_stored())),
            Repr::Family(tag, bytes) => {
                let reason = match decode_registered(&tag, &bytes) {
                    Some(Ok(p)) => return p,
                    Some(Err(e)) => e.to_string(),
                    None => format!(
                        "the model uses the projection family {tag:?}, which this build does not \
                         have (known: {}; a family defined outside the crate needs \
                         register_family first)",
                        known().join(", ")
                    ),
                };
                Projection(Arc::new(Placeholder::unresolved(tag, bytes, reason)))
            }
        }
    }
}

/// Whether a forest of this family must be written in the newer format version (core
/// forest 3, model file 2), which older readers refuse by its number: SPORF with a weight
/// scale, a variant they could not decode.
pub(crate) fn needs_newer_format(p: &Projection) -> bool {
    p.downcast::<SparseSigned>()
        .is_some_and(|s| s.scaling != WeightScale::None)
}

impl Serialize for Projection {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Repr::of(self)
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

/// A family whose tag is not registered (or whose bytes do not decode) reads as a
/// placeholder that [`crate::Forest::validate`], run on every load, reports through
/// [`ProjectionFamily::check`]: postcard drops the text of errors raised while decoding.
impl<'de> Deserialize<'de> for Projection {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Repr::deserialize(d).map(Repr::into_projection)
    }
}

/// A family read from a model file that no forest can grow with: one whose tag this build
/// does not know (or whose bytes do not decode), kept and written back as its bytes, which
/// refuses every check, so no forest predicts with it either; or an unregistered family
/// (nothing stored), whose forests predict and validate (their projections are explicit)
/// but cannot grow more trees.
#[derive(Debug, PartialEq)]
struct Placeholder {
    tag: String,
    /// The family's bytes as read; `None` for an unregistered family.
    bytes: Option<Vec<u8>>,
    /// Why it cannot be used.
    reason: String,
}

impl Placeholder {
    fn unresolved(tag: String, bytes: Vec<u8>, reason: String) -> Placeholder {
        Placeholder {
            tag,
            bytes: Some(bytes),
            reason,
        }
    }

    fn not_stored() -> Placeholder {
        Placeholder {
            tag: USER_TAG.into(),
            bytes: None,
            reason: "a user projection family is not stored in a model file; give it again to \
                     grow trees"
                .into(),
        }
    }
}

impl CompactDescriptors for Placeholder {
    fn for_each_term(&self, _: &[u32], _: &mut dyn FnMut(usize, f32)) {}
    fn is_valid(&self, _: &[u32]) -> bool {
        false
    }
}

impl ProjectionFamily for Placeholder {
    fn check(&self, _: usize) -> Result<()> {
        match self.bytes {
            Some(_) => Err(invalid("projection", self.reason.clone())),
            None => Ok(()),
        }
    }
    fn entries_per_candidate(&self, _: usize) -> f64 {
        1.0
    }
    fn sample(
        &self,
        _: &DataStats,
        _: &mut Rng,
        _: usize,
        _: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        out.clear();
    }
    /// An unresolved family's descriptors are never valid; an unregistered family stored
    /// explicit projections.
    fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        self.bytes.as_ref().map(|_| self as &dyn CompactDescriptors)
    }
    fn args(&self) -> FamilyArgs {
        FamilyArgs::new()
    }
}

impl Erased for Placeholder {
    fn family(&self) -> &dyn ProjectionFamily {
        self
    }
    fn tag(&self) -> &str {
        &self.tag
    }
    fn encode(&self) -> Option<Result<Vec<u8>>> {
        self.bytes.clone().map(Ok)
    }
    fn any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Erased) -> bool {
        other.any().downcast_ref::<Self>() == Some(self)
    }
    fn growable(&self) -> Result<()> {
        Err(invalid("projection", self.reason.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> PatchGeometry {
        PatchGeometry {
            data_shape: vec![4, 4],
            channel_axis: None,
            min_patch_size: vec![1; 2],
            max_patch_size: vec![2; 2],
            periodic: vec![false; 2],
        }
    }

    #[test]
    fn pre_registry_dictionary_bytes_load_as_the_registered_family() {
        let dict =
            Dictionary::from_csc(3, &[0, 2, 3], &[0, 1, 2], &[0.5, 0.5, 1.0], Some(1)).unwrap();
        // what a model file held before the registry: variant 5, then the fields
        let old = postcard::to_allocvec(&Repr::LegacyDictionary(dict.clone())).unwrap();
        let loaded: Projection = postcard::from_bytes(&old).unwrap();
        assert_eq!(loaded, Projection::new(dict));
        assert_eq!(loaded.tag(), "dictionary");
        // written back as the registered family, which reads back the same
        let new = postcard::to_allocvec(&loaded).unwrap();
        assert_ne!(new, old);
        assert_eq!(postcard::from_bytes::<Projection>(&new).unwrap(), loaded);
    }

    #[test]
    fn families_that_predate_the_registry_keep_their_bytes() {
        let cases: Vec<(Projection, Repr)> = vec![
            (Projection::new(AxisAligned), Repr::AxisAligned),
            (Projection::new(Gaussian), Repr::Gaussian),
            (
                Projection::new(ForestRc { n_combined: 3 }),
                Repr::ForestRc { n_combined: 3 },
            ),
            (
                Projection::new(SparseSigned {
                    density: Density::FeatureCombinations(1.5),
                    scaling: WeightScale::None,
                }),
                Repr::SparseSigned {
                    density: Density::FeatureCombinations(1.5),
                },
            ),
            (
                Projection::new(SparseSigned {
                    density: Density::Fraction(0.1),
                    scaling: WeightScale::Robust,
                }),
                Repr::ScaledSparseSigned {
                    density: Density::Fraction(0.1),
                    scaling: WeightScale::Robust,
                },
            ),
            (
                Projection::new(Patches {
                    geometry: geometry(),
                }),
                Repr::Patch(geometry()),
            ),
        ];
        for (p, repr) in cases {
            let bytes = postcard::to_allocvec(&p).unwrap();
            assert_eq!(bytes, postcard::to_allocvec(&repr).unwrap(), "{p:?}");
            assert_eq!(postcard::from_bytes::<Projection>(&bytes).unwrap(), p);
        }
        assert_eq!(
            postcard::to_allocvec(&Projection::new(Gaussian)).unwrap(),
            vec![3]
        );
        assert!(needs_newer_format(&Projection::new(SparseSigned {
            density: Density::Fraction(0.1),
            scaling: WeightScale::Robust,
        })));
        assert!(!needs_newer_format(&Projection::new(AxisAligned)));
    }

    #[test]
    fn unknown_family_tag_in_a_model_is_an_error_naming_it() {
        let bytes = postcard::to_allocvec(&(7u8, "wavelets", vec![0u8; 3])).unwrap();
        let p = postcard::from_bytes::<Projection>(&bytes).unwrap();
        let e = p.check(4).unwrap_err().to_string();
        assert!(
            e.contains("\"wavelets\"") && e.contains("register_family"),
            "{e}"
        );
        assert_eq!(postcard::to_allocvec(&p).unwrap(), bytes, "kept as it was");
        // a known tag whose settings do not decode
        let bad = postcard::to_allocvec(&(7u8, "dictionary", vec![200u8; 2])).unwrap();
        let p = postcard::from_bytes::<Projection>(&bad).unwrap();
        assert!(p.check(4).unwrap_err().to_string().contains("dictionary"));
        let e = Projection::from_args("wavelets", FamilyArgs::new()).unwrap_err();
        assert!(e.to_string().contains("wavelets"));
    }
}
