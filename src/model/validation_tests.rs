//! Model bodies are validated on load: values that would predict nonsense, labels outside
//! their dtype and a projection record that contradicts the forests or the estimator are
//! refused by name; files of versions 1 to 4 load with their forests' record and keep
//! their verdicts; loading stops when cancelled; and CRC-fixed random mutations of a file
//! either fail to load or give a model whose outputs are finite (and class distributions
//! per output).

use super::check::differing_args;
use super::tests::{forest, header, multi_output_forest};
use super::*;
use crate::cancel::Cancel;
use crate::params::ForestParams;
use crate::projection::{
    AxisAligned, Density, Gaussian, PatchGeometry, Patches, Projection, SparseSigned, WeightScale,
};
use crate::rng::Rng;

fn corrupt_message(r: Result<Model>) -> String {
    match r {
        Err(Error::CorruptModel(m)) => m,
        Err(e) => panic!("expected a corrupt-model error, got {e:?}"),
        Ok(_) => panic!("a damaged model was accepted"),
    }
}

fn rows() -> Array2<f32> {
    forest(2).1
}

/// A classifier with outputs of 2 and 3 classes, and its header.
fn multi_output() -> (Forest, Header) {
    let (f, _) = multi_output_forest();
    let mut h = header(2);
    h.task = f.params().task.clone();
    h.classes = Some(ClassLabels::PerOutput(vec![
        ClassLabels::Bool(vec![false, true]),
        ClassLabels::Int {
            bytes: 1,
            values: vec![0, 1, 2],
        },
    ]));
    (f, h)
}

/// A regressor grown with `projection`, and its header.
fn regressor(estimator: Estimator, projection: Projection) -> (Forest, Header) {
    let x = rows();
    let y: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| f64::from(r[0] - r[2]))
        .collect();
    let mut params = ForestParams::regression();
    params.n_estimators = 4;
    params.projection = projection;
    let f = Forest::fit(&params, x.view(), &y, None).unwrap();
    let h = Header {
        estimator,
        task: Task::Regression,
        classes: None,
        projection: ProjectionRecord::of(&f.params().projection),
        ..header(2)
    };
    (f, h)
}

fn patches() -> Projection {
    Projection::new(Patches {
        geometry: PatchGeometry {
            data_shape: vec![3],
            channel_axis: None,
            min_patch_size: vec![1],
            max_patch_size: vec![2],
            periodic: vec![false],
        },
    })
}

fn robust_sporf() -> Projection {
    Projection::new(SparseSigned {
        density: Density::FeatureCombinations(1.5),
        scaling: WeightScale::Robust,
    })
}

#[test]
fn leaf_values_weights_and_thresholds_that_predict_nonsense_are_refused() {
    type Damage = fn(&mut Forest);
    let cases: [(&str, Damage, &str); 6] = [
        ("NaN leaf", |f| f.trees[0].value[0] = f64::NAN, "leaf value"),
        (
            "leaf not a distribution",
            |f| f.trees[1].value[1] += 0.5,
            "not a distribution",
        ),
        (
            "negative probability",
            |f| {
                let v = &mut f.trees[2].value;
                v[0] = -0.5;
                v[1] = 1.5;
            },
            "not a distribution",
        ),
        ("NaN weight", |f| f.trees[0].proj_w[0] = f32::NAN, "weight"),
        (
            "threshold -inf",
            |f| f.trees[0].threshold[0] = f32::NEG_INFINITY,
            "threshold",
        ),
        (
            "impurity inf",
            |f| f.trees[3].impurity[0] = f64::INFINITY,
            "impurity",
        ),
    ];
    for (what, damage, fragment) in cases {
        let (mut f, _) = forest(2);
        damage(&mut f);
        let err = Forest::from_bytes(&f.to_bytes().unwrap()).unwrap_err();
        assert!(err.to_string().contains(fragment), "{what}: {err}");
        let m = corrupt_message(Model::new(header(2), Body::Forest(f)));
        assert!(m.contains(fragment), "{what}: {m}");
    }
    // finite regression leaves whose sum over the trees overflows
    let (mut f, h) = regressor(
        Estimator::RandomForestRegressor,
        Projection::new(AxisAligned),
    );
    for t in &mut f.trees {
        t.value.iter_mut().for_each(|v| *v = 1e308);
    }
    let m = corrupt_message(Model::new(h, Body::Forest(f)));
    assert!(m.contains("overflows"), "{m}");
}

#[test]
fn a_class_split_reinterpreted_per_output_is_refused() {
    let (mut f, mut h) = multi_output();
    assert!(Model::new(h.clone(), Body::Forest(f.clone())).is_ok());
    // the same leaf values read as outputs of 3 and 2 classes
    let swapped = Task::MultiClassification {
        n_classes: vec![3, 2],
    };
    f.params.task = swapped.clone();
    h.task = swapped;
    h.classes = Some(ClassLabels::PerOutput(vec![
        ClassLabels::Int {
            bytes: 1,
            values: vec![0, 1, 2],
        },
        ClassLabels::Bool(vec![false, true]),
    ]));
    let m = corrupt_message(Model::new(h, Body::Forest(f)));
    assert!(m.contains("not a distribution"), "{m}");
}

#[test]
fn float_labels_outside_their_dtype_are_refused() {
    let with = |bytes: u8, values: Vec<f64>| {
        let mut h = header(2);
        h.classes = Some(ClassLabels::Float { bytes, values });
        Model::new(h, Body::Forest(forest(2).0))
    };
    assert!(with(2, vec![-65504.0, 0.5]).is_ok());
    assert!(with(2, vec![2f64.powi(-24), 2048.0]).is_ok()); // float16's smallest subnormal
    assert!(with(4, vec![f64::from(0.1f32), f64::from(3.0e38f32)]).is_ok());
    assert!(with(8, vec![0.1, 1e300]).is_ok());
    for (bytes, values) in [
        (2, vec![0.1, 1.0]),     // not a float16
        (2, vec![1.0, 2049.0]),  // 2049 needs 12 bits
        (2, vec![1.0, 70000.0]), // beyond float16's range
        (4, vec![0.1, 1.0]),     // not a float32
        (4, vec![1.0, 1e39]),    // beyond float32's range
        (8, vec![0.0, f64::INFINITY]),
    ] {
        let m = corrupt_message(with(bytes, values.clone()));
        assert!(
            m.contains("classes") && m.contains("dtype float"),
            "{values:?}: {m}"
        );
    }
}

#[test]
fn a_projection_record_that_contradicts_the_forests_or_the_estimator_is_refused() {
    let with = |record: &mut ProjectionRecord, k: &str, v: Value| {
        record.args.iter_mut().find(|(n, _)| n == k).unwrap().1 = v;
    };
    // MORF: the record of its patches, whatever its parameters say (Python judges those)
    let (f, mut h) = regressor(Estimator::MORFRegressor, patches());
    h.params = vec![("data_shape".into(), Param::Value(Value::Ints(vec![1, 3])))];
    assert!(Model::new(h.clone(), Body::Forest(f.clone())).is_ok());
    let record = h.projection.clone();
    let mut cases: Vec<(ProjectionRecord, &str)> = vec![];
    let mut r = record.clone();
    with(&mut r, "data_shape", Value::int_array(vec![1, 3]));
    cases.push((r, "data_shape=[1, 3]"));
    let mut r = record.clone();
    with(&mut r, "channel_axis", Value::Int(0));
    cases.push((r, "channel_axis=0"));
    let mut r = record.clone();
    r.args.push(("evil".into(), Value::Int(1)));
    cases.push((r, "takes no argument \"evil\""));
    let mut r = record.clone();
    r.args.push(("data_shape".into(), Value::None));
    cases.push((r, "appears twice"));
    let mut r = record.clone();
    with(
        &mut r,
        "data_shape",
        Value::Array {
            shape: vec![2, 2],
            data: ArrayData::I64(vec![3]),
        },
    );
    cases.push((r, "does not hold"));
    // a family MORF does not grow, named by the estimator
    cases.push((
        ProjectionRecord::of(&Projection::new(AxisAligned)),
        "estimator",
    ));
    for (record, fragment) in cases {
        let h = Header {
            projection: record,
            ..h.clone()
        };
        let m = corrupt_message(Model::new(h, Body::Forest(f.clone())));
        assert!(m.contains(fragment), "{fragment}: {m}");
    }
    // SPORF: its scaling, in the record
    let (f, h) = regressor(Estimator::SPORFRegressor, robust_sporf());
    assert!(Model::new(h.clone(), Body::Forest(f.clone())).is_ok());
    let mut r = h.projection.clone();
    with(&mut r, "scaling", Value::None);
    let m = corrupt_message(Model::new(
        Header {
            projection: r,
            ..h.clone()
        },
        Body::Forest(f.clone()),
    ));
    assert!(
        m.contains("projection") && m.contains("scaling=None"),
        "{m}"
    );
    // an oblique forest grows any registered family, but the one it records
    let h = Header {
        estimator: Estimator::ObliqueForestRegressor,
        ..h
    };
    assert!(Model::new(h.clone(), Body::Forest(f.clone())).is_ok());
    for (record, fragment) in [
        (
            ProjectionRecord::of(&Projection::new(Gaussian)),
            "\"gaussian\" family",
        ),
        (
            ProjectionRecord {
                tag: "evil".into(),
                args: vec![],
            },
            "registered",
        ),
    ] {
        let h = Header {
            projection: record,
            ..h.clone()
        };
        let m = corrupt_message(Model::new(h, Body::Forest(f.clone())));
        assert!(m.contains("`projection`") && m.contains(fragment), "{m}");
    }
}

#[test]
fn differing_args_names_each_argument_with_both_values() {
    let a = robust_sporf();
    assert!(differing_args(&a, &a.clone()).is_empty());
    let b = Projection::new(SparseSigned {
        density: Density::Fraction(0.5),
        scaling: WeightScale::None,
    });
    let names: Vec<String> = differing_args(&a, &b).into_iter().map(|d| d.0).collect();
    assert_eq!(names, ["density", "feature_combinations", "scaling"]);
    let (_, said, has) = differing_args(&a, &b).pop().unwrap();
    assert_eq!((said, has), (Value::Str("robust".into()), Value::None));
}

/// `model` written as the writer of versions 1 to 4 did, with the version it took.
fn legacy_bytes(model: &Model) -> (Vec<u8>, u32) {
    let file = ModelFile {
        header: model.header().clone(),
        body: model.body().clone(),
    };
    let mut out = std::io::Cursor::new(Vec::new());
    write_legacy(&file, &mut out).unwrap();
    let bytes = out.into_inner();
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    (bytes, version)
}

#[test]
fn files_of_versions_1_to_4_load_with_their_forests_record() {
    let (f, x) = forest(2);
    let plain = Model::new(header(2), Body::Forest(f)).unwrap();
    let (f, h) = multi_output();
    let multi = Model::new(h, Body::Forest(f)).unwrap();
    let (f, h) = regressor(Estimator::SPORFRegressor, robust_sporf());
    let mut params = f.params().clone();
    params.store_leaf_values = true;
    params.honest_fraction = 0.25;
    let y: Vec<f64> = x.rows().into_iter().map(|r| f64::from(r[0])).collect();
    let f = Forest::fit(&params, x.view(), &y, None).unwrap();
    let kept = Header {
        params: vec![
            ("n_estimators".into(), Param::Value(Value::Int(4))),
            ("store_leaf_values".into(), Param::Value(Value::Bool(true))),
            ("honest_fraction".into(), Param::Value(Value::Float(0.25))),
        ],
        ..h
    };
    let honest = Model::new(kept, Body::Forest(f)).unwrap();
    let xf = x.mapv(f64::from);
    for (model, version) in [(plain, 1), (multi, 2), (honest, 3)] {
        let (bytes, written) = legacy_bytes(&model);
        assert_eq!(written, version);
        let again = Model::from_bytes(&bytes).unwrap();
        let record = ProjectionRecord::of(&model.body().forests()[0].params().projection);
        assert_eq!(again.header().projection, record);
        assert_eq!(again.header(), model.header());
        assert_eq!(
            again.predict_raw(xf.view()).unwrap(),
            model.predict_raw(xf.view()).unwrap()
        );
        // and saved again, as version 5, the same bytes as the model's own
        assert_eq!(again.to_bytes().unwrap(), model.to_bytes().unwrap());
    }
    // a file's verdict is kept: a random forest's header over a SPORF forest names the
    // estimator, as the checker of those versions did
    let (f, h) = regressor(Estimator::SPORFRegressor, robust_sporf());
    let file = ModelFile {
        header: Header {
            estimator: Estimator::RandomForestRegressor,
            ..h
        },
        body: Body::Forest(f),
    };
    let mut out = std::io::Cursor::new(Vec::new());
    write_legacy(&file, &mut out).unwrap();
    let m = corrupt_message(Model::from_bytes(&out.into_inner()));
    assert!(m.contains("`estimator`"), "{m}");
}

#[test]
fn a_cancelled_load_or_save_stops_and_leaves_no_file() {
    let (f, x) = forest(2);
    let model = Model::new(header(2), Body::Forest(f)).unwrap();
    let dir = std::env::temp_dir().join(format!("obliqueforest-cancel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.of");
    model.save(&path).unwrap();
    let bytes = model.to_bytes().unwrap();
    let cancel = Cancel::new();
    cancel.cancel();
    assert_eq!(
        cancel.run(|| Model::load(&path)).unwrap_err(),
        Error::Cancelled
    );
    assert_eq!(
        cancel.run(|| Model::from_bytes(&bytes)).unwrap_err(),
        Error::Cancelled
    );
    let other = dir.join("other.of");
    assert_eq!(
        cancel.run(|| model.save(&other)).unwrap_err(),
        Error::Cancelled
    );
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["m.of"]);
    // and without a cancel the same calls work
    let again = Model::load(&path).unwrap();
    let xf = x.mapv(f64::from);
    assert_eq!(
        again.predict_raw(xf.view()).unwrap(),
        model.predict_raw(xf.view()).unwrap()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every output a loaded model gives for finite rows is finite, and a classifier's class
/// probabilities are distributions per output. (A rotation ensemble may refuse rows its
/// scaling and rotations take beyond float32's range, by name, as a fitted one does.)
fn assert_outputs_are_sane(m: &Model, x: &Array2<f64>, case: usize) {
    if let Body::Encoder(_) = m.body() {
        let z = m.transform(x.view()).unwrap();
        assert!(z.iter().all(|v| v.is_finite()), "case {case}: embedding");
        return;
    }
    let raw = match (m.predict_raw(x.view()), m.body()) {
        (Ok(raw), _) => raw,
        (Err(Error::InvalidInput(e)), Body::Rotation(_)) if e.contains("beyond float32") => return,
        (Err(e), _) => panic!("case {case}: {e:?}"),
    };
    assert!(raw.iter().all(|v| v.is_finite()), "case {case}: {raw:?}");
    let blocks: Vec<usize> = match &m.header().task {
        Task::Classification { n_classes } => vec![*n_classes],
        Task::MultiClassification { n_classes } => n_classes.clone(),
        _ => vec![],
    };
    for row in raw.rows() {
        let mut at = 0;
        for &k in &blocks {
            let block = row.slice(ndarray::s![at..at + k]);
            at += k;
            let sum: f64 = block.sum();
            assert!(
                block.iter().all(|&p| p >= 0.0) && (sum - 1.0).abs() < 1e-6,
                "case {case}: {block:?}"
            );
        }
    }
    m.predict(x.view()).unwrap();
    m.apply(x.view()).unwrap();
}

/// A model of each kind of body: classifier, multi-output classifier, regressor, rotation
/// ensemble, autoencoder.
fn fuzz_models() -> Vec<Model> {
    let (f, _) = forest(3);
    let mut h3 = header(3);
    h3.classes = Some(ClassLabels::Float {
        bytes: 2,
        values: vec![-1.5, 0.0, 2.0],
    });
    let clf = Model::new(h3, Body::Forest(f)).unwrap();
    let (f, h) = multi_output();
    let multi = Model::new(h, Body::Forest(f)).unwrap();
    let (f, h) = regressor(Estimator::SPORFRegressor, robust_sporf());
    let reg = Model::new(h, Body::Forest(f)).unwrap();
    let identity: Vec<f64> = (0..9).map(|i| f64::from(u8::from(i % 4 == 0))).collect();
    let rotation = Body::Rotation(Rotation {
        scaling: Scaling::MinMax {
            min: vec![-8.0; 3],
            span: vec![16.0; 3],
        },
        rotations: [identity.clone(), identity].concat(),
        n_trees: vec![4, 4],
        forests: vec![Some(forest(2).0), Some(forest(2).0)],
    });
    let h = Header {
        estimator: Estimator::RotationEnsembleClassifier,
        params: vec![],
        ..header(2)
    };
    let rot = Model::new(h, rotation).unwrap();
    let (f, _) = forest(2);
    let n_leaves = *f.leaf_offsets().last().unwrap();
    let encoder = Body::Encoder(Encoder {
        forest: f,
        n_components: 2,
        leaf_map: (0..2 * n_leaves).map(|i| i as f64 / 7.0).collect(),
        leaf_mass: vec![0.25; n_leaves],
    });
    let h = Header {
        estimator: Estimator::ForestAutoencoder,
        classes: None,
        params: vec![],
        ..header(2)
    };
    let ae = Model::new(h, encoder).unwrap();
    vec![clf, multi, reg, rot, ae]
}

/// Runs `n` CRC-fixed mutations (1 to 3 random bytes of the payload) of each model.
fn fuzz(n: usize, seed: u64) -> (usize, usize) {
    let mut rng = Rng::from_seed(seed);
    let x = {
        let base = rows().mapv(f64::from);
        let mut x = ndarray::concatenate![ndarray::Axis(0), base, base.mapv(|v| v * 1e30)];
        x[[0, 0]] = 3.0e38;
        x[[1, 1]] = -3.0e38;
        x
    };
    let (mut loaded, mut rejected) = (0, 0);
    for model in fuzz_models() {
        let bytes = model.to_bytes().unwrap();
        assert_outputs_are_sane(&model, &x, usize::MAX);
        for case in 0..n {
            let mut b = bytes.clone();
            for _ in 0..rng.between(1, 3) {
                let at = rng.between(HEADER_LEN, b.len() - 1);
                b[at] = rng.next_u64() as u8;
            }
            let crc = crc32fast::hash(&b[HEADER_LEN..]);
            b[20..24].copy_from_slice(&crc.to_le_bytes());
            match Model::from_bytes(&b) {
                Ok(m) => {
                    loaded += 1;
                    assert_outputs_are_sane(&m, &x, case);
                }
                Err(Error::Internal(e)) => panic!("case {case}: internal error {e}"),
                Err(_) => rejected += 1,
            }
        }
    }
    (loaded, rejected)
}

const HEADER_LEN: usize = crate::serialize::HEADER;

#[test]
fn crc_fixed_mutations_load_only_as_models_with_sane_outputs() {
    let (loaded, rejected) = fuzz(120, 0);
    eprintln!("{loaded} loaded, {rejected} rejected");
    assert!(
        loaded > 0 && rejected > 0,
        "{loaded} loaded, {rejected} rejected"
    );
}

/// The long run: `cargo test -- --ignored`.
#[test]
#[ignore]
fn crc_fixed_mutations_long_run() {
    let (loaded, rejected) = fuzz(4000, 1);
    assert!(
        loaded > 0 && rejected > 0,
        "{loaded} loaded, {rejected} rejected"
    );
}

#[test]
fn models_explain_their_raw_outputs_in_both_games() {
    let models = fuzz_models();
    let p = models[0].n_features();
    let x = Array2::from_shape_fn((12, p), |(i, j)| ((i * 5 + j * 3) % 7) as f64 - 3.0);
    let mut explained = 0;
    for (case, m) in models.into_iter().enumerate() {
        assert_eq!(m.n_features(), p);
        let raw = match (m.predict_raw(x.view()), m.body()) {
            (Ok(raw), _) => raw,
            (Err(_), Body::Rotation(_)) => continue, // rows beyond float32 once rotated
            (Err(e), _) => panic!("case {case}: {e}"),
        };
        for background in [None, Some(x.slice(ndarray::s![..5, ..]))] {
            let shap = m.shap_values(x.view(), background).unwrap();
            assert_eq!(shap.n_estimated, 0);
            for i in 0..x.nrows() {
                for c in 0..raw.ncols() {
                    let sum: f64 = shap.values.index_axis(ndarray::Axis(0), i).column(c).sum();
                    let want = raw[[i, c]] - shap.expected_value[c];
                    assert!((sum - want).abs() < 1e-9, "case {case}: {sum} vs {want}");
                }
            }
        }
        explained += 1;
    }
    assert!(explained >= 4, "{explained}");
}
