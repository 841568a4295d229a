//! # obliqueforest
//!
//! Projection decision forests in one engine. Every split node samples d
//! candidate directions from a projection distribution and splits on the best
//! one (Tomita et al., *Sparse Projection Oblique Randomer Forests*, JMLR 2020,
//! Sect. 3.1). Axis-aligned random forests, SPORF (sparse ±1 projections),
//! Forest-RC, dense Gaussian projections and MORF patches (Perry et al.,
//! *Manifold Oblique Random Forests*) are [`projection`] samplers of the same
//! tree builder; so are user dictionaries ([`Dictionary`], e.g. graph neighbourhood
//! averages), Haar patches and pooled filters. Every family is one [`ProjectionFamily`]
//! held as a [`Projection`]: a [`RegisteredFamily`] of your own is registered at run time,
//! or used unregistered ([`Projection::user`]).
//!
//! The crate has no Python in its dependency tree; the pyo3 boundary lives in
//! the `python` module behind the `python` cargo feature.
//!
//! ```
//! use ndarray::Array2;
//! use obliqueforest::{Density, Forest, ForestParams, MaxFeatures, Projection, SparseSigned, WeightScale};
//!
//! // two classes separated by the sign of x0 + x1
//! let x = Array2::from_shape_fn((200, 4), |(i, j)| (((i * 7 + j * 13) % 23) as f32 - 11.0) / 11.0);
//! let y: Vec<f64> = x.rows().into_iter().map(|r| if r[0] + r[1] > 0.0 { 1.0 } else { 0.0 }).collect();
//!
//! let mut params = ForestParams::classification(2);
//! // SPORF: about two features per projection, each over its interquartile range
//! params.projection = Projection::new(SparseSigned {
//!     density: Density::FeatureCombinations(2.0),
//!     scaling: WeightScale::Robust,
//! });
//! params.max_features = MaxFeatures::All;
//! params.n_estimators = 20;
//! params.seed = 42;
//! let forest = Forest::fit(&params, x.view(), &y, None)?;
//!
//! let proba = forest.predict(x.view(), 1)?; // shape (200, 2)
//! let accuracy = proba.rows().into_iter().zip(&y)
//!     .filter(|(p, &t)| (p[1] > 0.5) == (t == 1.0)).count() as f64 / 200.0;
//! assert!(accuracy > 0.95);
//!
//! // models round-trip through a validated, versioned byte format
//! let bytes = forest.to_bytes()?;
//! assert_eq!(Forest::from_bytes(&bytes)?, forest);
//! # Ok::<(), obliqueforest::Error>(())
//! ```

#![warn(missing_docs)]

pub mod alloc;
pub mod cancel;
pub mod columns;
pub mod data;
pub mod error;
pub mod explain;
pub mod forest;
pub mod growth;
pub mod limits;
pub mod linalg;
pub mod model;
pub mod params;
pub mod part;
mod prefetch;
mod probe;
pub mod projection;
pub mod prune;
pub mod rng;
pub mod serialize;
pub mod sparse;
pub mod threads;
pub mod tree;
pub mod value;

#[cfg(feature = "python")]
mod python;

#[cfg(test)]
mod pins;
#[cfg(test)]
mod proptests;

/// The README's Rust blocks, compiled (and run, unless marked `no_run`) by `cargo test`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use cancel::Cancel;
pub use error::{Error, Result};
pub use explain::{Game, Limits, Shap};
pub use forest::{Forest, OobPrediction};
pub use limits::MemoryLimit;
pub use model::{ClassLabels, Estimator, Label, Model, Predictions, MODEL_FORMAT_VERSION};
pub use params::{Criterion, ForestParams, Growth, MaxFeatures, SampleCount, Splitter, Task};
pub use part::ForestPart;
pub use projection::{
    AxisAligned, CompactDescriptors, DataStats, Density, Dictionary, ForestRc, Gaussian,
    HaarPatches, PatchGeometry, Patches, Pool, PooledPatches, Pooling, Projection,
    ProjectionFamily, RegisteredFamily, SparseSigned, WeightScale,
};
pub use serialize::FORMAT_VERSION;
pub use tree::Tree;
