"""Parameters on their one path into the core: typed conversion, one builder, bounds.

Absurd values must raise a ValueError naming the parameter before anything is allocated
(issue 13, item 3), and no integer may overflow on its way from Python to Rust.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import obliqueforest as of
from obliqueforest import _core, projections
from obliqueforest._params import FOREST_PARAMS, core_fields, core_params

X = np.random.default_rng(0).normal(size=(60, 5))
Y = (X[:, 0] > 0).astype(int)
IMG = np.random.default_rng(1).normal(size=(40, 16))


def _fit(est, X=X, y=Y):
    return est.fit(X, y)


HUGE_MAX_FEATURES = [2**40, 2**62 + 1, 2**63, 2**64 + 5, 2**200, 1e30]


@pytest.mark.parametrize("value", HUGE_MAX_FEATURES)
@pytest.mark.parametrize(
    "make",
    [
        lambda v: of.SPORFClassifier(2, max_features=v),
        lambda v: of.RandomForestClassifier(2, max_features=v),
        lambda v: of.ObliqueForestClassifier(projections.ForestRC(), 2, max_features=v),
        lambda v: of.ObliqueForestClassifier(projections.Gaussian(), 2, max_features=v),
        lambda v: of.MORFClassifier(2, data_shape=(4, 4), max_features=v),
    ],
    ids=["sporf", "rf", "forest_rc", "gaussian", "morf"],
)
def test_max_features_absurd_is_a_value_error(make, value):
    Xf = IMG if "MORF" in repr(make(1)) else X
    with pytest.raises(ValueError, match="max_features"):
        make(value).fit(Xf, (Xf[:, 0] > 0).astype(int))


def test_max_features_bound_counts_the_projection_size():
    # 10**6 dense candidates over 100 features would sample 10**8 weights per node
    Xw = np.random.default_rng(2).normal(size=(30, 100))
    est = of.ObliqueForestClassifier(projections.Gaussian(), 2, max_features=10**6)
    with pytest.raises(ValueError, match="max_features"):
        est.fit(Xw, (Xw[:, 0] > 0).astype(int))
    # the same count of single-feature candidates is fine for the bound
    of.RandomForestClassifier(1, max_features=10**6, max_depth=1).fit(Xw, Xw[:, 0] > 0)


@pytest.mark.parametrize("value", [2**32, 2**40, 2**64 + 1, 1e12])
def test_max_samples_beyond_the_draw_bound_is_a_value_error(value):
    with pytest.raises(ValueError, match="max_samples"):
        _fit(of.RandomForestClassifier(2, max_samples=value))


@pytest.mark.parametrize("value", [len(X), len(X) + 1, 1.5])
def test_max_samples_up_to_and_beyond_n_samples_is_accepted(value):
    _fit(of.RandomForestClassifier(2, max_samples=value))


@pytest.mark.parametrize("value", [2**20 + 1, 10**7, 2**64, 2**100])
def test_n_estimators_absurd_is_a_value_error(value):
    with pytest.raises(ValueError, match="n_estimators"):
        _fit(of.SPORFClassifier(value))
    with pytest.raises(ValueError, match="n_estimators"):
        _fit(of.RandomForestRegressor(value), X, X[:, 0])


def test_warm_start_to_absurd_n_estimators_is_a_value_error():
    est = of.SPORFClassifier(2, warm_start=True, random_state=0).fit(X, Y)
    with pytest.raises(ValueError, match="n_estimators"):
        est.set_params(n_estimators=2**21).fit(X, Y)
    with pytest.raises(ValueError, match="n_more|n_estimators"):
        est.set_params(n_estimators=2**70).fit(X, Y)
    assert est._forest.n_trees == 2


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -1.0, 0.0])
def test_feature_combinations_out_of_range_is_a_value_error(value):
    with pytest.raises(ValueError, match="feature_combinations"):
        _fit(of.ObliqueForestClassifier(projections.SparseSigned(feature_combinations=value), 2))


def test_feature_combinations_beyond_p_is_capped():
    _fit(of.SPORFClassifier(2, feature_combinations=1e300))


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"max_patch_size": 2**40}, "max_patch_size"),
        ({"max_patch_size": 2**70}, "max_patch_size"),
        ({"min_patch_size": 2**64 + 1}, "min_patch_size"),
        ({"min_patch_size": 3, "max_patch_size": 2}, "min_patch_size"),
        ({"data_shape": (2**32, 2**32)}, "data_shape"),
        ({"data_shape": (2**64, 1)}, "data_shape"),
        ({"data_shape": (4, 4), "channel_axis": -3}, "channel_axis"),
        ({"data_shape": (4, 4), "channel_axis": 2}, "channel_axis"),
        ({"data_shape": (4, 4), "periodic": (True,)}, "periodic"),
        ({"data_shape": (4, 4), "min_patch_size": (1, 1, 1)}, "min_patch_size"),
    ],
)
def test_patch_geometry_absurd_is_a_value_error(kw, name):
    with pytest.raises(ValueError, match=name):
        of.MORFClassifier(2, **kw).fit(IMG, (IMG[:, 0] > 0).astype(int))


def test_forest_rc_n_combined_absurd_is_a_value_error():
    with pytest.raises(ValueError, match="n_combined"):
        _fit(of.ObliqueForestClassifier(projections.ForestRC(n_combined=2**70), 2))
    with pytest.raises(ValueError, match="n_combined"):
        _fit(of.ObliqueForestClassifier(projections.ForestRC(n_combined=0), 2))


def test_projection_objects_store_and_the_core_validates():
    # projections.py does not re-validate: constructing is free, fitting names the problem
    bad = projections.SparseSigned(density=2.0)
    with pytest.raises(ValueError, match="density"):
        _fit(of.ObliqueForestClassifier(bad, 2))
    both = projections.SparseSigned(density=0.5, feature_combinations=2.0)
    with pytest.raises(ValueError, match="density"):
        _fit(of.ObliqueForestClassifier(both, 2))


def _all_fields(**overrides):
    fields = dict(
        task="classification",
        n_classes=2,
        criterion="gini",
        projection=_core.Projection.family("axis"),
        splitter="best",
        max_bins=256,
        max_features="sqrt",
        n_estimators=3,
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        min_impurity_decrease=0.0,
        max_leaf_nodes=None,
        bootstrap=True,
        max_samples=None,
        class_weight_subsample=False,
        oob=False,
        seed=0,
        growth={"ccp_alpha": 0.0, "monotonic_cst": None, "n_jobs": 1},
        n_outputs=1,
    )
    fields.update(overrides)
    return fields


def test_core_params_defaults_are_the_estimators_declared_defaults():
    # one table: a field core_params is not given takes the default the forests declare
    for task, cls, n_classes in [
        ("classification", of.RandomForestClassifier, 2),
        ("regression", of.RandomForestRegressor, None),
    ]:
        common = dict(task=task, n_classes=n_classes, projection=_core.Projection.family("axis"))
        common.update(seed=0, n_jobs=1)
        explicit = core_params(**common, **core_fields(cls()))
        assert repr(core_params(**common)) == repr(explicit)
        assert repr(core_params(**common, max_depth=3)) != repr(explicit)
    signature = inspect.signature(of.SPORFClassifier).parameters
    for name in FOREST_PARAMS.names():
        if name not in ("max_features", "candidate_samples"):  # SPORF's own defaults
            assert signature[name].default is FOREST_PARAMS[name].default, name
    # the crate's ForestParams itself has no defaults: every field is passed
    fields = _all_fields()
    del fields["max_features"]
    with pytest.raises(TypeError, match="max_features"):
        _core.ForestParams(**fields)
    # the growth settings go by name: an unknown one is refused, naming it
    fields["max_features"] = "sqrt"
    growth = fields.pop("growth")
    with pytest.raises(of.ForestError, match="ccp_alfa"):
        _core.ForestParams(**fields, growth={**growth, "ccp_alfa": 0.1})
    with pytest.raises(of.ForestError, match="n_jobs"):
        _core.ForestParams(**fields, growth={**growth, "n_jobs": "all"})


def test_core_params_refuses_a_field_the_core_does_not_have():
    with pytest.raises(TypeError, match="max_feature"):
        core_params(
            task="regression",
            projection=_core.Projection.family("axis"),
            seed=0,
            n_jobs=1,
            max_feature=3,
        )


def test_core_params_converts_numpy_scalars():
    fields = _all_fields(n_estimators=np.int64(4), max_features=np.float32(0.5), seed=np.int32(3))
    params = core_params(**{k: v for k, v in fields.items() if k != "growth"}, **fields["growth"])
    assert params.n_estimators == 4
    forest = _core.Forest.fit(X.astype(np.float32), Y.astype(np.float64), None, params)
    assert forest.n_trees == 4


@pytest.mark.parametrize(
    "field, value",
    [
        ("n_estimators", -1),
        ("n_estimators", True),
        ("n_estimators", 2.5),
        ("max_depth", 2**64),
        ("max_features", "cube"),
        ("criterion", "mse"),
        ("splitter", "histogram"),
        ("task", "ranking"),
        ("n_classes", -2),
        ("min_samples_leaf", -1),
        ("max_leaf_nodes", 2**65),
        ("seed", -1),
        ("seed", 2**64),
    ],
)
def test_core_params_conversion_errors_name_the_parameter(field, value):
    with pytest.raises(ValueError, match=field):
        _core.ForestParams(**_all_fields(**{field: value}))


def test_regression_takes_no_n_classes():
    with pytest.raises(ValueError, match="n_classes"):
        _core.ForestParams(**_all_fields(task="regression"))
    _core.ForestParams(**_all_fields(task="regression", n_classes=None, criterion="squared_error"))


def test_with_seed_changes_only_the_seed():
    a = _core.ForestParams(**_all_fields(seed=1))
    b = a.with_seed(2)
    assert repr(b) == repr(_core.ForestParams(**_all_fields(seed=2)))
    assert "seed: 1" in repr(a)


@pytest.mark.parametrize("max_samples", [0.5, 10])
def test_max_samples_without_bootstrap_has_scikit_learns_message(max_samples):
    # the core's check, in scikit-learn's words (its test suite matches them)
    est = of.RandomForestRegressor(2, bootstrap=False, max_samples=max_samples)
    message = (
        r"`max_sample` cannot be set if `bootstrap=False`. Either switch to "
        r"`bootstrap=True` or set `max_sample=None`."
    )
    with pytest.raises(ValueError, match=message):
        est.fit(X, X[:, 0])
