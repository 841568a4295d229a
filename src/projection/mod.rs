//! Projection families: the one place where forest kinds differ in their split directions.
//!
//! At every split node the tree builder asks the forest's [`Projection`] (one
//! [`ProjectionFamily`]) for d candidate directions and keeps the best. Every family lives
//! in one file of this module and is listed once in the `families!` registry below: axis-
//! aligned ([`axis`]), SPORF ([`sparse_signed`]), Forest-RC ([`forest_rc`]), dense Gaussian
//! ([`gaussian`]), MORF patches ([`patch`]), Haar patches ([`haar`]), pooled filters
//! ([`pooled`]) and user dictionaries ([`dictionary`]); a family defined outside the crate is
//! registered at run time or used unregistered ([`family`]). A family owns the meaning of
//! what it stores: explicit sparse projections (feature indices and weights), or compact
//! descriptors that its [`CompactDescriptors`] reads as (feature, weight) terms ([`terms`]).
//! The trees, the split search and prediction only ever see terms, and for a pooled
//! projection its pieces of consecutive terms, whose sums combine by max or min.
//!
//! A family never reads the training data: the forest computes what a family declares it
//! needs ([`DataNeeds`]) once per fit as [`DataStats`]. Model files hold a family as its tag
//! and bytes; the families that predate the registry keep their historical encoding
//! (`wire.rs`).

pub mod family;
pub mod terms;
mod wire;

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
    axis::AxisAligned,
    sparse_signed::SparseSigned,
    forest_rc::ForestRc,
    gaussian::Gaussian,
    patch::Patches,
    haar::HaarPatches,
    pooled::PooledPatches,
    dictionary::Dictionary,
}

pub use axis::AxisAligned;
pub use dictionary::Dictionary;
pub use family::{
    register_family, DataNeeds, DataStats, FamilyArgs, FamilyEntry, Projection, ProjectionFamily,
    RegisteredFamily, Sampler, USER_TAG,
};
pub use forest_rc::ForestRc;
pub use gaussian::Gaussian;
pub use haar::HaarPatches;
pub use patch::{PatchGeometry, Patches};
pub use pooled::PooledPatches;
pub use sparse_signed::{Density, SparseSigned, WeightScale};
pub use terms::{
    CompactDescriptors, Pool, PoolSum, Pooling, ProjRef, ProjectionBuf, SamplerScratch, Sliding,
};
pub(crate) use wire::needs_newer_format;

/// The largest number of axes a patch geometry may have.
pub const MAX_AXES: usize = 8;
/// The most (index, weight) entries the candidates of one split node may hold on average
/// (512 MiB of buffers): bounds `max_features` × projection size before anything is drawn.
pub const MAX_NODE_ENTRIES: usize = 1 << 26;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The candidates `family` draws for data `n_features` wide.
    pub(crate) fn draw(
        family: &dyn ProjectionFamily,
        n_features: usize,
        d: usize,
        seed: u64,
    ) -> ProjectionBuf {
        let mut out = ProjectionBuf::default();
        family.sample(
            &DataStats::of_width(n_features),
            &mut Rng::from_seed(seed),
            d,
            &mut SamplerScratch::default(),
            &mut out,
        );
        out
    }

    #[derive(Debug)]
    struct OutOfRange;
    impl ProjectionFamily for OutOfRange {
        fn check(&self, _: usize) -> crate::Result<()> {
            Ok(())
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
            out.push(&[7], &[1.0]);
        }
    }

    #[test]
    #[should_panic(expected = "malformed projections")]
    fn user_family_out_of_range_is_reported() {
        let p = Projection::user(OutOfRange);
        let data = DataStats::of_width(3);
        let mut out = ProjectionBuf::default();
        p.sampler(&data).sample(
            &mut Rng::from_seed(0),
            2,
            &mut SamplerScratch::default(),
            &mut out,
        );
    }

    #[test]
    fn every_family_builds_from_its_own_args() {
        let families = [
            Projection::new(AxisAligned),
            Projection::new(SparseSigned {
                density: Density::FeatureCombinations(1.5),
                scaling: WeightScale::Robust,
            }),
            Projection::new(ForestRc { n_combined: 2 }),
            Projection::new(Gaussian),
            Projection::new(Patches {
                geometry: PatchGeometry {
                    data_shape: vec![3, 4],
                    channel_axis: Some(0),
                    min_patch_size: vec![1],
                    max_patch_size: vec![2],
                    periodic: vec![true],
                },
            }),
        ];
        for p in families {
            let again = Projection::from_args(p.tag(), p.get().args()).unwrap();
            assert_eq!(again, p);
        }
    }
}
