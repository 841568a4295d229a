"""Tests of obliqueforest.tuning (OOB choice of projection parameters)."""

import numpy as np
import pytest
from obliqueforest import RandomForestClassifier, SPORFClassifier, SPORFRegressor, datasets
from obliqueforest.tuning import default_grid, tune_projection


def test_tune_projection_fits_final_forest_with_best_setting():
    X, y = datasets.make_orthant(500, random_state=0)
    result = tune_projection(SPORFClassifier(n_estimators=40, random_state=0), X, y)
    assert len(result.oob_errors) == 6
    errors = [e for _, e in result.oob_errors]
    assert result.best_params == result.oob_errors[int(np.argmin(errors))][0]
    est = result.estimator
    assert est.n_estimators == 40 and not est.oob_score
    for name, value in result.best_params.items():
        assert est.get_params()[name] == value
    assert est.score(X, y) > 0.9


def test_tune_projection_search_costs_at_most_budget():
    # the search forests together hold search_budget x n_estimators trees (at least 16 each)
    X, y = datasets.make_trunk(300, random_state=0)
    result = tune_projection(
        SPORFClassifier(n_estimators=90, random_state=1), X, y, search_budget=2.0
    )
    assert result.search_trees * len(result.oob_errors) <= 2.0 * 90 + 1


def test_tune_projection_is_reproducible_and_leaves_estimator_untouched():
    X, y = datasets.make_sparse_parity(400, random_state=0)
    est = SPORFClassifier(n_estimators=30, random_state=3)
    a = tune_projection(est, X, y)
    b = tune_projection(est, X, y)
    assert a.oob_errors == b.oob_errors and a.best_params == b.best_params
    assert not hasattr(est, "estimators_") and est.get_params()["oob_score"] is False
    np.testing.assert_array_equal(a.estimator.predict(X), b.estimator.predict(X))


def test_tune_projection_regressor_and_custom_grid():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=300)
    result = tune_projection(
        SPORFRegressor(n_estimators=30, random_state=0),
        X,
        y,
        param_grid={"feature_combinations": [1.0, 2.0]},
    )
    assert [s for s, _ in result.oob_errors] == [
        {"feature_combinations": 1.0},
        {"feature_combinations": 2.0},
    ]
    assert all(0 <= e < 1 for _, e in result.oob_errors)


def test_default_grid_follows_estimator_parameters():
    assert default_grid(RandomForestClassifier()) == {"max_features": ["sqrt", 1.0]}
    assert set(default_grid(SPORFClassifier())) == {"max_features", "feature_combinations"}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"param_grid": {"feature_combinations": []}}, "empty"),
        ({"param_grid": {"no_such_parameter": [1]}}, "lacks"),
        ({"search_budget": 0}, "positive"),
    ],
)
def test_tune_projection_rejects_bad_arguments(kwargs, match):
    X, y = datasets.make_orthant(100, random_state=0)
    with pytest.raises(ValueError, match=match):
        tune_projection(SPORFClassifier(n_estimators=10), X, y, **kwargs)


def test_tune_projection_needs_bootstrap():
    X, y = datasets.make_orthant(100, random_state=0)
    with pytest.raises(ValueError, match="bootstrap"):
        tune_projection(SPORFClassifier(n_estimators=10, bootstrap=False), X, y)
