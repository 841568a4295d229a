"""Per-tree access: estimators_, indexing, decision_path, estimators_samples_."""

import pickle

import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import load_diabetes, load_iris, make_classification
from sklearn.ensemble import RandomForestClassifier as SkRF

import obliqueforest as of
from obliqueforest.projections import ForestRC

CLASSIFIERS = [
    of.RandomForestClassifier(n_estimators=7, random_state=0),
    of.SPORFClassifier(n_estimators=7, random_state=0),
    of.ObliqueForestClassifier(n_estimators=7, projection=ForestRC(n_combined=2), random_state=0),
    of.MORFClassifier(n_estimators=7, data_shape=(2, 2), random_state=0),
]
REGRESSORS = [
    of.RandomForestRegressor(n_estimators=5, random_state=0),
    of.SPORFRegressor(n_estimators=5, random_state=0),
    of.MORFRegressor(n_estimators=5, data_shape=(10,), max_patch_size=3, random_state=0),
]
ALL = CLASSIFIERS + REGRESSORS


def _data(est):
    if hasattr(est, "classes_") or est in CLASSIFIERS:
        return load_iris(return_X_y=True)
    return load_diabetes(return_X_y=True)


def _fit(est, **params):
    X, y = _data(est)
    return est.set_params(**params).fit(X, y), X, y


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_per_tree_predictions_average_to_the_forest(est):
    forest, X, _ = _fit(est)
    trees = forest.estimators_
    assert len(forest) == len(trees) == forest.n_estimators
    assert [t.random_state % 2**20 for t in forest] == list(range(len(forest)))
    if est in CLASSIFIERS:
        mean = np.mean([t.predict_proba(X) for t in trees], axis=0)
        np.testing.assert_allclose(mean, forest.predict_proba(X), rtol=0, atol=1e-12)
        assert set(trees[0].predict(X)) <= set(forest.classes_)
    else:
        mean = np.mean([t.predict(X) for t in trees], axis=0)
        np.testing.assert_allclose(mean, forest.predict(X), rtol=1e-12)
        with pytest.raises(AttributeError):
            trees[0].predict_proba(X)


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_tree_apply_and_node_arrays_agree_with_the_forest(est):
    forest, X, _ = _fit(est)
    leaves = forest.apply(X)
    n_nodes, depth, n_leaves = forest.tree_stats()
    for t, tree in enumerate(forest.estimators_):
        np.testing.assert_array_equal(tree.apply(X), leaves[:, t])
        nodes = tree.tree_
        assert nodes.node_count == n_nodes[t]
        assert tree.get_depth() == nodes.max_depth == depth[t]
        assert tree.get_n_leaves() == nodes.n_leaves == n_leaves[t]
        is_leaf = nodes.children_left == -1
        assert is_leaf[leaves[:, t]].all()
        assert (nodes.feature[is_leaf] == -2).all() and (nodes.threshold[is_leaf] == -2).all()
        assert (nodes.feature[~is_leaf] >= -1).all()
        assert nodes.value.shape[:2] == (nodes.node_count, 1)
        assert len(nodes.projection_ptr) == nodes.node_count + 1


def test_axis_aligned_trees_name_their_split_feature():
    forest, X, _ = _fit(of.RandomForestClassifier(n_estimators=3, random_state=1))
    nodes = forest[0].tree_
    inner = np.flatnonzero(nodes.children_left != -1)
    assert (nodes.feature[inner] >= 0).all()
    np.testing.assert_array_equal(
        nodes.feature[inner], nodes.projection_features[nodes.projection_ptr[inner]]
    )
    # the rule a row follows at the root is the one feature against the threshold
    goes_left = X[:, nodes.feature[0]] <= nodes.threshold[0]
    path = forest[0].decision_path(X)
    np.testing.assert_array_equal(path[:, nodes.children_left[0]].toarray().ravel(), goes_left)


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_decision_path_is_the_chain_from_root_to_leaf(est):
    forest, X, _ = _fit(est)
    indicator, ptr = forest.decision_path(X)
    assert sparse.isspmatrix_csr(indicator)
    assert indicator.shape == (len(X), ptr[-1])
    assert len(ptr) == len(forest) + 1
    leaves = forest.apply(X)
    for t, tree in enumerate(forest):
        nodes = tree.tree_
        block = indicator[:, ptr[t] : ptr[t + 1]]
        np.testing.assert_array_equal(block.toarray(), tree.decision_path(X).toarray())
        assert (block[:, 0].toarray() == 1).all()  # every path starts at the root
        depth_of_leaf = nodes.depth[leaves[:, t]]
        np.testing.assert_array_equal(np.asarray(block.sum(axis=1)).ravel(), depth_of_leaf + 1)
        # consecutive nodes of a path are parent and child
        for i in range(0, len(X), 37):
            path = block[i].indices
            for a, b in zip(path[:-1], path[1:]):
                assert b in (nodes.children_left[a], nodes.children_right[a])
            assert path[-1] == leaves[i, t]


def test_decision_path_has_scikit_learns_shape_conventions():
    X, y = load_iris(return_X_y=True)
    ours = of.RandomForestClassifier(n_estimators=4, random_state=0).fit(X, y)
    theirs = SkRF(n_estimators=4, random_state=0).fit(X, y)
    (a, pa), (b, pb) = ours.decision_path(X), theirs.decision_path(X)
    assert type(a) is type(b) and a.shape[0] == b.shape[0] and pa.shape == pb.shape
    assert pa[0] == pb[0] == 0


@pytest.mark.parametrize("est", CLASSIFIERS[:2] + REGRESSORS[:1], ids=lambda e: type(e).__name__)
def test_estimators_samples_are_the_rows_each_tree_grew_on(est):
    forest, X, _ = _fit(est, oob_score=True, n_estimators=25)
    samples = forest.estimators_samples_
    assert len(samples) == 25
    n = len(X)
    in_bag = np.zeros((25, n), dtype=bool)
    for t, rows in enumerate(samples):
        assert len(rows) == n  # bootstrap draws n rows with replacement
        assert (np.diff(rows) >= 0).all()
        in_bag[t, rows] = True
        # the tree's root saw exactly its distinct in-bag rows
        assert forest[t].tree_.n_node_samples[0] == len(np.unique(rows))
    # the OOB counts the core recorded during the fit are the trees a row was not drawn by
    _, oob_counts = forest._forest.oob_prediction()
    np.testing.assert_array_equal(oob_counts, (~in_bag).sum(axis=0))


def test_estimators_samples_follow_max_samples_and_bootstrap():
    X, y = load_iris(return_X_y=True)
    forest = of.RandomForestClassifier(n_estimators=3, max_samples=40, random_state=0).fit(X, y)
    assert [len(s) for s in forest.estimators_samples_] == [40, 40, 40]
    forest = of.RandomForestClassifier(n_estimators=3, bootstrap=False, random_state=0).fit(X, y)
    for s in forest.estimators_samples_:
        np.testing.assert_array_equal(s, np.arange(len(X)))


def test_estimators_samples_survive_pickling_and_do_not_depend_on_n_jobs():
    X, y = load_iris(return_X_y=True)
    one = of.SPORFClassifier(n_estimators=5, random_state=3, n_jobs=1).fit(X, y)
    two = of.SPORFClassifier(n_estimators=5, random_state=3, n_jobs=2).fit(X, y)
    again = pickle.loads(pickle.dumps(one))
    for a, b, c in zip(one.estimators_samples_, two.estimators_samples_, again.estimators_samples_):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_indexing_slicing_and_truthiness():
    forest, X, _ = _fit(of.RandomForestClassifier(n_estimators=4, random_state=0))
    assert forest[-1].random_state % 2**20 == 3
    assert [t.random_state % 2**20 for t in forest[1:3]] == [1, 2]
    with pytest.raises(IndexError):
        forest[4]
    assert bool(of.RandomForestClassifier())  # unfitted: truthy, though len() raises
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        len(of.RandomForestClassifier())


def test_a_tree_of_a_refitted_forest_stays_the_tree_it_was():
    # as in scikit-learn, a refit replaces the forest's trees; one taken before is unchanged
    forest, X, y = _fit(of.RandomForestClassifier(n_estimators=3, random_state=0))
    tree = forest[0]
    before = tree.predict_proba(X)
    forest.set_params(random_state=1, max_depth=1).fit(X[:, :2], y)
    np.testing.assert_array_equal(tree.predict_proba(X), before)
    assert tree.max_depth is None and forest[0].max_depth == 1


def test_tree_predict_validates_its_input():
    forest, X, _ = _fit(of.RandomForestClassifier(n_estimators=3, random_state=0))
    with pytest.raises(ValueError, match="features"):
        forest[0].predict(X[:, :2])
    with pytest.raises(ValueError):
        forest[0].apply(np.full_like(X, np.inf))


def test_per_tree_spread_estimates_uncertainty():
    # far from the training data the trees disagree more than on it
    X, y = load_diabetes(return_X_y=True)
    forest = of.RandomForestRegressor(n_estimators=30, random_state=0).fit(X, y)
    spread = lambda Z: np.stack([t.predict(Z) for t in forest]).std(axis=0).mean()  # noqa: E731
    rng = np.random.default_rng(0)
    far = X[rng.integers(0, len(X), 100)] * rng.choice([-1.0, 1.0], size=(100, X.shape[1]))
    assert spread(far) > spread(X)


def test_estimators_samples_survive_save_and_load(tmp_path):
    X, y = load_iris(return_X_y=True)
    forest = of.SPORFClassifier(n_estimators=4, random_state=2).fit(X, y)
    forest.save(tmp_path / "f.of")
    again = of.load(tmp_path / "f.of")
    for a, b in zip(forest.estimators_samples_, again.estimators_samples_):
        np.testing.assert_array_equal(a, b)


def test_trees_carry_their_parameters_and_random_state_like_scikit_learns():
    X, y = make_classification(200, n_features=5, random_state=0)
    grown = of.RandomForestClassifier(
        n_estimators=3, min_impurity_decrease=0.01, warm_start=True, random_state=4
    ).fit(X, y)
    grown.set_params(n_estimators=6).fit(X, y)
    once = of.RandomForestClassifier(n_estimators=6, min_impurity_decrease=0.01, random_state=4)
    once.fit(X, y)
    states = [t.random_state for t in grown.estimators_]
    assert states == [t.random_state for t in once.estimators_]
    assert len(set(states)) == 6
    assert all(t.min_impurity_decrease == 0.01 and t.criterion == "gini" for t in grown)
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        grown[0].nonsense  # noqa: B018
    assert all(s.dtype == np.int32 for s in grown.estimators_samples_)


# -- the scikit-learn contract of per-tree objects (issue 26) ------------------------------


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_tree_nodes_apply_and_decision_path_as_scikit_learns(est):
    forest, X, _ = _fit(est)
    for tree in forest.estimators_[:3]:
        nodes = tree.tree_
        np.testing.assert_array_equal(nodes.apply(X), tree.apply(X))
        path = nodes.decision_path(X)
        assert sparse.isspmatrix_csr(path) and path.shape == (len(X), nodes.node_count)
        np.testing.assert_array_equal(path[np.arange(len(X)), nodes.apply(X)], 1)
        np.testing.assert_array_equal(path.sum(axis=1).A1, nodes.depth[nodes.apply(X)] + 1)


@pytest.mark.parametrize("est", [CLASSIFIERS[0], REGRESSORS[0]], ids=lambda e: type(e).__name__)
def test_compute_feature_importances_raw_and_normalised(est):
    # axis-aligned trees: each split's weighted impurity decrease goes to its feature,
    # as scikit-learn's Tree.compute_feature_importances sums them
    forest, X, _ = _fit(est)
    for tree in forest.estimators_:
        t = tree.tree_
        raw = np.zeros(X.shape[1])
        for i in np.flatnonzero(t.children_left != -1):
            left, right = t.children_left[i], t.children_right[i]
            w, imp = t.weighted_n_node_samples, t.impurity
            raw[t.feature[i]] += w[i] * imp[i] - w[left] * imp[left] - w[right] * imp[right]
        raw /= t.weighted_n_node_samples[0]
        np.testing.assert_allclose(t.compute_feature_importances(normalize=False), raw, atol=1e-9)
        np.testing.assert_allclose(t.compute_feature_importances(), raw / raw.sum(), atol=1e-9)
        np.testing.assert_allclose(t.compute_feature_importances(), tree.feature_importances_)


FAMILIES = [
    of.RandomForestClassifier(n_estimators=6, max_features=0.5, random_state=1),
    of.RandomForestRegressor(n_estimators=6, max_samples=0.5, random_state=1),
    of.SPORFClassifier(n_estimators=6, scaling=None, random_state=1),
    of.MORFClassifier(n_estimators=6, data_shape=(10,), random_state=1),
    of.ObliqueForestRegressor(ForestRC(n_combined=2), n_estimators=6, bootstrap=False),
]


@pytest.mark.parametrize("est", FAMILIES, ids=lambda e: type(e).__name__)
def test_a_cloned_tree_regrows_on_its_in_bag_rows(est):
    from sklearn.base import clone
    from sklearn.datasets import make_hastie_10_2

    # scikit-learn's data (+-1 targets for the regressors too): with continuous targets a
    # node of two distinct rows is split equally well by every feature, and which of those
    # tied candidates wins can differ in the last bit between a row drawn twice (weight 2)
    # and the same row repeated
    X, y = make_hastie_10_2(n_samples=200, random_state=1)
    forest = clone(est).fit(X, y)
    for t, rows in enumerate(forest.estimators_samples_):
        tree = forest[t]
        again = clone(tree)
        assert type(again) is type(tree) and again.get_params() == tree.get_params()
        assert not hasattr(again, "tree_") or again.__sklearn_is_fitted__() is False
        again.fit(X[rows], y[rows])
        np.testing.assert_allclose(again.tree_.value, tree.tree_.value)
        np.testing.assert_array_equal(again.apply(X), tree.apply(X))


def test_the_forest_estimator_is_the_template_of_its_trees():
    from sklearn.exceptions import NotFittedError

    forest = of.SPORFClassifier(n_estimators=3, max_depth=4, feature_combinations=2.0)
    template = forest.estimator
    assert isinstance(template, of._trees.ObliqueTreeClassifier)
    assert template.max_depth == 4 and template.random_state is None
    assert template.projection == of.projections.SparseSigned(
        feature_combinations=2.0, scaling="robust"
    )
    assert "estimator" not in forest.get_params()
    with pytest.raises(NotFittedError):
        forest.estimator_  # noqa: B018
    X, y = load_iris(return_X_y=True)
    forest.fit(X, y)
    assert forest.estimator_.get_params() == template.get_params()
    assert {k: v for k, v in forest[0].get_params().items() if k != "random_state"} == {
        k: v for k, v in template.get_params().items() if k != "random_state"
    }
    assert isinstance(of.RandomForestRegressor().estimator, of._trees.ObliqueTreeRegressor)


def test_n_outputs_is_an_attribute_set_by_fit_and_load(tmp_path):
    # scikit-learn's tests set it on an unfitted forest; fit and load set it
    forest = of.RandomForestClassifier(n_estimators=3, random_state=0)
    forest.n_outputs_ = 1
    X, y = load_iris(return_X_y=True)
    forest.fit(X, np.stack([y, y > 0], axis=1))
    assert forest.n_outputs_ == 2
    forest.save(tmp_path / "m.of")
    assert of.load(tmp_path / "m.of").n_outputs_ == 2


def test_multi_output_integer_regression_oob_is_the_per_tree_out_of_bag_mean():
    # scikit-learn's test_forest_multioutput_integral_regression_target with this library's
    # public per-tree API (scikit-learn's version draws the bootstrap with numpy's
    # generator, which this library does not use)
    X = load_iris().data
    y = np.random.RandomState(42).randint(low=0, high=10, size=(X.shape[0], 2))
    forest = of.RandomForestRegressor(n_estimators=30, oob_score=True, random_state=0)
    forest.fit(X, y)
    assert forest.oob_prediction_.shape == y.shape
    trees, samples = forest.estimators_, forest.estimators_samples_
    for i in range(X.shape[0] // 4):
        out = [t for t, rows in zip(trees, samples) if i not in rows]
        expected = np.mean([t.predict(X[i : i + 1])[0] for t in out], axis=0)
        np.testing.assert_allclose(forest.oob_prediction_[i], expected)


def test_a_pickled_tree_carries_its_own_tree_only():
    forest, X, _ = _fit(of.RandomForestClassifier(n_estimators=40, random_state=0))
    tree = forest[3]
    data = pickle.dumps(tree)
    assert len(data) < len(pickle.dumps(forest)) / 10
    again = pickle.loads(data)
    np.testing.assert_array_equal(again.predict_proba(X), tree.predict_proba(X))
    np.testing.assert_array_equal(again.tree_.value, tree.tree_.value)
    assert again.get_params() == tree.get_params()


def test_a_tree_refitted_in_place_is_the_new_tree():
    forest, X, y = _fit(of.RandomForestClassifier(n_estimators=3, random_state=0))
    tree = forest[1]
    tree.set_params(max_depth=1).fit(X, y)
    assert tree.get_depth() == tree.tree_.max_depth == 1
    assert tree.tree_.node_count == 3 and set(tree.apply(X)) <= {1, 2}
    assert forest[1].get_depth() > 1  # the forest keeps its own tree


@pytest.mark.parametrize("candidate_samples", [None, 64])
def test_a_cloned_tree_regrows_with_its_forests_candidate_screening(candidate_samples):
    # the trees take every forest parameter that is not about many trees (issue 44): a
    # forest's candidate_samples reaches its trees, which before screened at the table's
    # default whatever the forest had
    from sklearn.base import clone

    from obliqueforest.datasets import make_sparse_parity

    X, y = make_sparse_parity(6000, n_features=20, n_informative=3, random_state=0)
    forest = of.SPORFClassifier(
        3, candidate_samples=candidate_samples, bootstrap=False, random_state=0
    ).fit(X, y)
    tree = forest.estimators_[1]
    assert tree.get_params()["candidate_samples"] == candidate_samples
    again = clone(tree).fit(X, y)
    np.testing.assert_array_equal(again.apply(X), tree.apply(X))
