//! Property tests (bounded fuzzing run by `cargo test`): the split search on arbitrary
//! data keeps every tree invariant, and the model loader turns arbitrary or mutated
//! bytes into an error, never a panic or a forest that could traverse out of bounds.

use crate::forest::Forest;
use crate::params::{ForestParams, MaxFeatures, SampleCount, Splitter};
use crate::projection::haar::HaarPatches;
use crate::projection::pooled::PooledPatches;
use crate::projection::{
    AxisAligned, Density, Dictionary, ForestRc, Gaussian, PatchGeometry, Patches, Projection,
    SparseSigned, WeightScale,
};
use ndarray::Array2;
use proptest::prelude::*;

fn projection(kind: u8, p: usize) -> Projection {
    match kind % 7 {
        6 => Projection::new(PooledPatches {
            haar: HaarPatches {
                geometry: PatchGeometry {
                    data_shape: vec![p],
                    channel_axis: None,
                    min_patch_size: vec![1],
                    max_patch_size: vec![p.min(2)],
                    periodic: vec![false],
                },
                differences: 0.5,
            },
            pooled: 0.7,
            max_filter: 3,
            min_window: 2,
        }),
        5 => Projection::new(Dictionary {
            // every feature, and the mean of each adjacent pair
            n_features: p,
            atom_ptr: (0..p as u32)
                .chain((0..p as u32).map(|a| p as u32 + 2 * a))
                .collect::<Vec<_>>()
                .into_iter()
                .chain(std::iter::once(3 * p as u32))
                .collect(),
            atom_idx: (0..p as u32)
                .chain((0..p as u32).flat_map(|a| [a, (a + 1) % p as u32]))
                .collect(),
            atom_w: std::iter::repeat_n(1.0, p)
                .chain(std::iter::repeat_n(0.5, 2 * p))
                .collect(),
            n_candidates: Some(1 + kind as usize % 3),
        }),
        0 => Projection::new(AxisAligned),
        1 => Projection::new(SparseSigned {
            density: Density::FeatureCombinations(1.5),
            scaling: WeightScale::None,
        }),
        2 => Projection::new(ForestRc { n_combined: 2 }),
        3 => Projection::new(Gaussian),
        _ => Projection::new(Patches {
            geometry: PatchGeometry {
                data_shape: vec![p],
                channel_axis: None,
                min_patch_size: vec![1],
                max_patch_size: vec![p.min(3)],
                periodic: vec![kind % 2 == 0],
            },
        }),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn split_search_keeps_tree_invariants(
        n in 1usize..60,
        p in 1usize..5,
        seed in any::<u64>(),
        kind in any::<u8>(),
        min_leaf in 1usize..4,
        splitter in 0u8..3,
        max_bins in 2usize..6,
        values in proptest::collection::vec(prop_oneof![-3.0f32..3.0, Just(0.0f32), Just(1e30f32), Just(-1e-30f32)], 240),
        labels in proptest::collection::vec(0u8..3, 60),
    ) {
        let x = Array2::from_shape_fn((n, p), |(i, j)| values[(i * p + j) % values.len()]);
        let y: Vec<f64> = (0..n).map(|i| labels[i] as f64).collect();
        let mut params = ForestParams::classification(3);
        params.projection = projection(kind, p);
        params.max_features = MaxFeatures::All;
        params.n_estimators = 2;
        params.seed = seed;
        params.min_samples_leaf = SampleCount::Count(min_leaf);
        params.splitter = match splitter {
            0 => Splitter::Best,
            1 => Splitter::Random,
            _ => Splitter::Histogram { max_bins },
        };
        let forest = Forest::fit(&params, x.view(), &y, None).unwrap();
        forest.validate().unwrap();
        for tree in forest.trees() {
            for node in 0..tree.n_nodes() {
                if tree.is_leaf(node) {
                    prop_assert!(tree.n_node_samples[node] as usize >= min_leaf.min(n) || node == 0);
                    let total: f64 = tree.leaf_value(node).iter().sum();
                    prop_assert!((total - 1.0).abs() < 1e-9);
                } else {
                    let (l, r) = (tree.left[node] as usize, tree.right[node] as usize);
                    prop_assert_eq!(
                        tree.n_node_samples[l] + tree.n_node_samples[r],
                        tree.n_node_samples[node]
                    );
                }
            }
        }
        // the packed layout and the table walk (through the family's descriptors) agree
        for (tree, packed) in forest.trees().iter().zip(forest.packed()) {
            for row in x.rows() {
                let row = row.to_vec();
                prop_assert_eq!(tree.leaf(forest.descriptors(), &row), packed.leaf(&row));
            }
        }
        let proba = forest.predict(x.view(), 1).unwrap();
        for row in proba.rows() {
            prop_assert!((row.sum() - 1.0).abs() < 1e-9);
        }
        // the bytes of a grown forest always load back to the same forest
        prop_assert!(Forest::from_bytes(&forest.to_bytes().unwrap()).unwrap() == forest);
    }

    #[test]
    fn loader_rejects_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = Forest::from_bytes(&bytes);
    }

    #[test]
    fn loader_survives_mutated_models(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let x = Array2::from_shape_fn((40, 3), |(i, j)| ((i * 5 + j * 3) % 11) as f32);
        let y: Vec<f64> = (0..40).map(|i| (i % 2) as f64).collect();
        let mut params = ForestParams::classification(2);
        params.n_estimators = 2;
        let mut bytes = Forest::fit(&params, x.view(), &y, None).unwrap().to_bytes().unwrap();
        for (at, v) in &flips {
            let i = at.index(bytes.len());
            bytes[i] = *v;
        }
        let keep = cut.index(bytes.len() + 1);
        if let Ok(f) = Forest::from_bytes(&bytes[..keep]) {
            // whatever loads is structurally sound: prediction stays in bounds
            let _ = f.predict(x.view(), 1);
        }
        // the checksum-covered payload: mutate after recomputing the checksum so the
        // structural validation, not the CRC, has to catch it
        let mut forged = Forest::fit(&params, x.view(), &y, None).unwrap().to_bytes().unwrap();
        let (at, v) = flips[0];
        let i = 24 + at.index(forged.len() - 24);
        forged[i] = v;
        let crc = crc32fast::hash(&forged[24..]);
        forged[20..24].copy_from_slice(&crc.to_le_bytes());
        if let Ok(f) = Forest::from_bytes(&forged) {
            let _ = f.predict(x.view(), 1);
        }
    }
}
