"""A fit is a transaction (issue 24, items 8 and 9): the estimator changes only when a fit
succeeds, and readers in other threads see one fit's model, whole.

A refit refused anywhere (scikit-learn's checks, the core's parameter check, the memory
guard, an interrupt, a bad y) leaves every fitted attribute of the previous model, which
still predicts on old-shaped X; pickle, save and predict running while another thread
refits see the old model or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import pickle
import threading
import time

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification, make_regression

import obliqueforest as of
from obliqueforest._base import FOREST_GROWER

FITTED = (
    "n_features_in_",
    "feature_names_in_",
    "classes_",
    "n_classes_",
    "n_outputs_",
    "oob_score_",
    "oob_decision_function_",
    "_forest",
    "_seed",
    "_n_samples_fit",
)


def _old_model():
    X, y = make_classification(300, n_features=5, random_state=0)
    X = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)])
    est = of.RandomForestClassifier(n_estimators=8, oob_score=True, random_state=0).fit(X, y)
    return est, X, y


def _new_data():
    # everything a refit would change: more columns, other names and labels
    X, y = make_classification(200, n_features=7, n_classes=3, n_informative=4, random_state=1)
    X = pd.DataFrame(X, columns=[f"g{j}" for j in range(7)])
    return X, np.array(["a", "b", "c"])[y]


def _snapshot(est, X, names=FITTED):
    """What a refused refit must leave: the fitted attributes ``names`` (the very
    objects), the predictions and every tree's."""
    return {
        "state": {k: est.__dict__[k] for k in names if k in est.__dict__},
        "proba": est.predict_proba(X),
        "pred": est.predict(X),
        "trees": np.stack([t.predict_proba(X) for t in est]),
        "samples": [len(s) for s in est.estimators_samples_],
    }


def _assert_unchanged(est, before, X, names=FITTED):
    state = {k: est.__dict__[k] for k in names if k in est.__dict__}
    assert state.keys() == before["state"].keys()
    for k, v in before["state"].items():
        assert state[k] is v, k
    np.testing.assert_array_equal(est.predict_proba(X), before["proba"])
    np.testing.assert_array_equal(est.predict(X), before["pred"])
    np.testing.assert_array_equal(np.stack([t.predict_proba(X) for t in est]), before["trees"])
    assert [len(s) for s in est.estimators_samples_] == before["samples"]
    assert est.estimators_[0].n_features_in_ == X.shape[1]


@contextlib.contextmanager
def _memory_limit(limit):
    before = of.memory_limit()
    of.set_memory_limit(limit)
    try:
        yield
    finally:
        of.set_memory_limit(before)


def _interrupt(*args):
    raise KeyboardInterrupt


@contextlib.contextmanager
def _grower(grower):
    token = FOREST_GROWER.set(grower)
    try:
        yield
    finally:
        FOREST_GROWER.reset(token)


REFUSALS = {
    # the core's ForestParams::check (bounds no scikit-learn constraint knows)
    "core_parameter_check": (dict(max_samples=2**33), ValueError, contextlib.nullcontext),
    "core_cross_parameter_rule": (
        dict(monotonic_cst=[1, 0]),
        ValueError,
        contextlib.nullcontext,
    ),
    # scikit-learn's constraint check
    "parameter_constraint": (dict(max_depth=-1), ValueError, contextlib.nullcontext),
    # the memory guard refuses the request before growing
    "memory_guard": (dict(n_estimators=10**6), ValueError, lambda: _memory_limit(10**7)),
    # Ctrl-C while the trees grow (the grower is where a fit spends its time)
    "interrupt": ({}, KeyboardInterrupt, lambda: _grower(_interrupt)),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_a_refused_refit_leaves_the_old_model_usable(case):
    est, X, _ = _old_model()
    before = _snapshot(est, X)
    params, error, context = REFUSALS[case]
    est.set_params(**params)
    X_new, y_new = _new_data()
    with context(), pytest.raises(error):
        est.fit(X_new, y_new)
    _assert_unchanged(est, before, X)


def test_a_refit_with_a_bad_y_leaves_the_old_model_usable():
    est, X, _ = _old_model()
    before = _snapshot(est, X)
    X_new, _ = _new_data()
    with pytest.raises(ValueError):
        est.fit(X_new, np.full(len(X_new), np.nan))
    with pytest.raises(ValueError):
        est.fit(X_new, np.arange(len(X_new) + 1))
    _assert_unchanged(est, before, X)


def test_a_refused_warm_start_keeps_the_grown_trees(monkeypatch):
    est, X, y = _old_model()
    est.set_params(warm_start=True)
    before = _snapshot(est, X)
    with pytest.raises(ValueError, match="n_estimators"):
        est.set_params(n_estimators=4).fit(X, y)
    # Ctrl-C while the added trees grow (on a copy of the forest)
    monkeypatch.setattr("obliqueforest._base.run_with_progress", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        est.set_params(n_estimators=12, oob_score=True).fit(X, y)
    monkeypatch.undo()
    _assert_unchanged(est, before, X)
    assert est.set_params(n_estimators=12).fit(X, y)._forest.n_trees == 12


def test_a_refit_sets_every_attribute_from_that_fit_only():
    est, X, y = _old_model()
    assert hasattr(est, "oob_score_")
    X_new, y_new = _new_data()
    est.set_params(oob_score=False).fit(X_new.to_numpy(), y_new)
    # no leftovers of the first fit: no OOB estimate, no column names
    assert not hasattr(est, "oob_score_") and not hasattr(est, "oob_decision_function_")
    assert not hasattr(est, "feature_names_in_")
    assert est.n_features_in_ == 7 and list(est.classes_) == ["a", "b", "c"]


def test_a_regressor_refit_refused_keeps_its_oob_prediction():
    X, y = make_regression(200, n_features=4, random_state=0)
    est = of.SPORFRegressor(n_estimators=5, oob_score=True, random_state=0).fit(X, y)
    oob, pred = est.oob_prediction_, est.predict(X)
    with pytest.raises(ValueError):
        est.set_params(max_samples=2**33).fit(X[:, :2], y)
    assert est.oob_prediction_ is oob and est.n_features_in_ == 4
    np.testing.assert_array_equal(est.predict(X), pred)


def _two_fits():
    # the same columns, disjoint labels: a reader mixing two fits would give labels
    # outside its classes_
    X, y = make_classification(3000, n_features=6, n_informative=4, n_classes=3, random_state=2)
    return X, [np.array([0, 1, 2])[y], np.array([10, 20, 30])[y]]


LABEL_SETS = ({0, 1, 2}, {10, 20, 30})


def _read_during_refits(est, refits, check, tmp_path, reads=30):
    """Refits ``est`` in another thread, with each of ``refits`` (functions of the
    estimator) in turn, while this thread reads it: ``check(model, where)`` on a pickled
    copy ("pickle"), a saved and loaded copy ("save") and the live estimator ("live"),
    for 4 s or until there were 6 refits and ``reads`` rounds of reads."""
    stop = threading.Event()
    done = [0]

    def refit():
        while not stop.is_set():
            refits[done[0] % len(refits)](est)
            done[0] += 1

    worker = threading.Thread(target=refit)
    worker.start()
    try:
        deadline, rounds = time.monotonic() + 4.0, 0
        while time.monotonic() < deadline and (done[0] < 6 or rounds < reads):
            check(pickle.loads(pickle.dumps(est)), "pickle")
            est.save(tmp_path / "m.of")
            check(of.load(tmp_path / "m.of"), "save")
            check(est, "live")
            rounds += 1
    finally:
        stop.set()
        worker.join()
    assert done[0] >= 2, "the refits did not overlap the reads"


def test_pickle_save_and_predict_during_refits_see_one_model_whole(tmp_path):
    X, labels = _two_fits()
    est = of.RandomForestClassifier(n_estimators=30, n_jobs=1, random_state=0)
    est.fit(X, labels[0])
    problems = []

    def check(model, where):
        # a copy (unpickled, loaded) is one model: its labels are its classes_; the live
        # estimator may be refitted between two reads, but each call sees one model
        pred = set(model.predict(X[:50]).tolist())
        classes = set(model.classes_.tolist()) if where != "live" else None
        if not (pred <= {0, 1, 2} or pred <= {10, 20, 30}) or (
            classes is not None and (not pred <= classes or classes not in LABEL_SETS)
        ):
            problems.append((where, classes, sorted(pred)))

    refits = [lambda e, y=y: e.fit(X, y) for y in labels]
    _read_during_refits(est, refits, check, tmp_path)
    assert not problems, problems[:3]


# ------------------------------------------------------------------- rotation ensembles
# (issue 24: the rotation ensembles' fits are transactions too; a fit used to set
# rotations_ and the scaling before the forests)

ROTATION_FITTED = (
    "n_features_in_",
    "feature_names_in_",
    "classes_",
    "n_classes_",
    "n_outputs_",
    "rotations_",
    "rotation_complexity_",
    "rotation_oob_error_",
    "rotation_order_",
    "rotation_weights_",
    "n_trees_per_rotation_",
    "h_",
    "complexity_",
    "oob_score_",
    "oob_decision_function_",
    "_forests",
    "_scale_min",
    "_scale_span",
    "_n_samples_fit",
    "_n_outputs",
)


def _old_rotation_model():
    X, y = make_classification(300, n_features=5, random_state=0)
    X = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)])
    est = of.RotationEnsembleClassifier(
        n_estimators=12, n_rotations=3, micro_forest_size=4, oob_score=True, random_state=0
    ).fit(X, y)
    return est, X, y


class _Runner:
    """A rotation runner (as obliqueforest.dask installs one) growing on this machine,
    interrupted (Ctrl-C) in the micro-forests ("fit") or while the favoured rotations'
    forests are completed ("fit_more")."""

    def __init__(self, interrupt_in):
        self.interrupt_in = interrupt_in

    def share(self, X_scaled, y, sample_weight):
        self.data = (X_scaled, y, sample_weight)

    def _grow(self, rotation, params):
        from obliqueforest import _core
        from obliqueforest.rotation import rotate

        X_scaled, y, sw = self.data
        return _core.Forest.fit(rotate(X_scaled, rotation, "F"), y, sw, params)

    def fit(self, rotation, params):
        if self.interrupt_in == "fit":
            raise KeyboardInterrupt
        return self._grow(rotation, params)

    def fit_more(self, forest, rotation, params):
        raise KeyboardInterrupt


@contextlib.contextmanager
def _rotation_runner(runner):
    from obliqueforest.rotation import ROTATION_RUNNER

    token = ROTATION_RUNNER.set(runner)
    try:
        yield
    finally:
        ROTATION_RUNNER.reset(token)


ROTATION_REFUSALS = {
    "parameter_constraint": (dict(max_depth=-1), ValueError, contextlib.nullcontext),
    "combined_parameter_check": (dict(weighting="cut", h=2.5), ValueError, contextlib.nullcontext),
    "core_parameter_check": (dict(max_samples=2**33), ValueError, contextlib.nullcontext),
    "memory_guard": (dict(micro_forest_size=10**6), ValueError, lambda: _memory_limit(10**7)),
    "interrupt_in_micro_forests": (
        {},
        KeyboardInterrupt,
        lambda: _rotation_runner(_Runner("fit")),
    ),
    "interrupt_completing_forests": (
        dict(weighting="bst", scaling="rank"),
        KeyboardInterrupt,
        lambda: _rotation_runner(_Runner("fit_more")),
    ),
}


@pytest.mark.parametrize("case", ROTATION_REFUSALS)
def test_a_refused_rotation_ensemble_refit_leaves_the_old_model_usable(case):
    est, X, _ = _old_rotation_model()
    before = _snapshot(est, X, ROTATION_FITTED)
    params, error, context = ROTATION_REFUSALS[case]
    est.set_params(**params)
    X_new, y_new = _new_data()
    with context(), pytest.raises(error):
        est.fit(X_new, y_new)
    _assert_unchanged(est, before, X, ROTATION_FITTED)


def test_a_rotation_ensemble_refit_with_a_bad_y_leaves_the_old_model_usable():
    est, X, _ = _old_rotation_model()
    before = _snapshot(est, X, ROTATION_FITTED)
    X_new, _ = _new_data()
    with pytest.raises(ValueError):
        est.fit(X_new, np.full(len(X_new), np.nan))
    with pytest.raises(ValueError):
        of.RotationEnsembleRegressor.fit(est, X_new, np.arange(len(X_new) + 1.0))
    _assert_unchanged(est, before, X, ROTATION_FITTED)


def test_a_rotation_ensemble_refit_sets_every_attribute_from_that_fit_only():
    est, X, _ = _old_rotation_model()
    X_new, y_new = _new_data()
    params = dict(oob_score=False, scaling=None, weighting="rre")
    est.set_params(**params).fit(X_new.to_numpy(), y_new)
    # no leftovers of the first fit: no OOB estimate, column names or min-max scaling
    assert not hasattr(est, "oob_score_") and not hasattr(est, "oob_decision_function_")
    assert not hasattr(est, "feature_names_in_") and not hasattr(est, "_scale_min")
    assert est.n_features_in_ == 7 and list(est.classes_) == ["a", "b", "c"]
    fresh = of.RotationEnsembleClassifier(**est.get_params()).fit(X_new.to_numpy(), y_new)
    X_new = X_new.to_numpy()
    np.testing.assert_array_equal(est.predict_proba(X_new), fresh.predict_proba(X_new))


def _two_rotation_fits():
    # two models a reader must not mix: other labels, and the second fit's columns on
    # another scale and in another order (the scaling of one with the forests of the
    # other predicts its own training data badly)
    X, y = make_classification(1000, n_features=6, n_informative=4, n_classes=3, random_state=2)
    X_other = X[:, ::-1] * 100.0 + 50.0
    return [(X, np.array([0, 1, 2])[y]), (X_other, np.array([10, 20, 30])[y])]


def test_rotation_predict_pickle_and_save_during_refits_see_one_model_whole(tmp_path):
    fits = _two_rotation_fits()
    est = of.RotationEnsembleClassifier(
        n_estimators=12, n_rotations=3, micro_forest_size=4, n_jobs=1, random_state=0
    )
    est.fit(*fits[0])
    problems = []

    def check(model, where):
        # each whole model predicts its own training data well; the live estimator's
        # labels tell which model a call used
        for o, (X, y) in enumerate(fits):
            pred = model.predict(X)
            labels = set(pred.tolist())
            if where != "live" and not labels <= set(model.classes_.tolist()):
                problems.append((where, "labels outside classes_"))
            if labels <= set(y.tolist()):
                if np.mean(pred == y) < 0.9:
                    problems.append((where, o, float(np.mean(pred == y))))
                for tree in model.estimators_[:3] if where != "live" else ():
                    if not set(tree.predict(X).tolist()) <= set(y.tolist()):
                        problems.append((where, "a tree of another model"))

    refits = [lambda e, fit=fit: e.fit(*fit) for fit in fits]
    _read_during_refits(est, refits, check, tmp_path, reads=20)
    assert not problems, problems[:3]


# ------------------------------------------------------------------------ autoencoder

AUTOENCODER_FITTED = (
    "n_features_in_",
    "forest_",
    "embedding_",
    "eigenvalues_",
    "leaf_map_",
    "kernel_trees_",
    "kernel_method_",
    "n_distinct_",
    "arf_accuracies_",
    "_embedding_fit",
    "_decode_points",
    "_leaf_mass",
    "_X_fit",
    "_nn",
    "_decode_seed",
)


def _old_autoencoder():
    X, _ = make_classification(120, n_features=5, random_state=0)
    est = of.ForestAutoencoder(n_components=2, n_estimators=30, random_state=0).fit(X)
    return est, X


def _autoencoder_snapshot(est, X):
    return {
        "state": {k: est.__dict__[k] for k in AUTOENCODER_FITTED if k in est.__dict__},
        "Z": est.transform(X),
        "X_hat": est.inverse_transform(est.transform(X[:10])),
    }


def _assert_autoencoder_unchanged(est, before, X):
    state = {k: est.__dict__[k] for k in AUTOENCODER_FITTED if k in est.__dict__}
    assert state.keys() == before["state"].keys()
    for k, v in before["state"].items():
        assert state[k] is v, k
    np.testing.assert_array_equal(est.transform(X), before["Z"])
    np.testing.assert_array_equal(est.inverse_transform(est.transform(X[:10])), before["X_hat"])


def _interrupt_growing(monkeypatch):
    monkeypatch.setattr("obliqueforest.autoencoder._estimator._grow_adversarial_forest", _interrupt)
    return contextlib.nullcontext()


AUTOENCODER_REFUSALS = {
    # refused after the forest has grown: the kernel of 9 distinct rows has rank < 12
    "n_components_for_the_data": (dict(n_components=12), ValueError, None),
    "parameter_constraint": (dict(k=0), ValueError, None),
    "memory_guard": (dict(n_estimators=10**6), ValueError, lambda mp: _memory_limit(10**7)),
    "interrupt": ({}, KeyboardInterrupt, _interrupt_growing),
}


@pytest.mark.parametrize("case", AUTOENCODER_REFUSALS)
def test_a_refused_autoencoder_refit_leaves_the_old_model_usable(case, monkeypatch):
    est, X = _old_autoencoder()
    before = _autoencoder_snapshot(est, X)
    params, error, context = AUTOENCODER_REFUSALS[case]
    est.set_params(**params)
    X_new = pd.DataFrame(
        np.repeat(np.arange(9.0)[:, None] * [1.0, -2.0, 0.5], 4, axis=0), columns=["a", "b", "c"]
    )
    with context(monkeypatch) if context else contextlib.nullcontext(), pytest.raises(error):
        est.fit(X_new)
    est.set_params(n_components=2, k=10, n_estimators=30)
    _assert_autoencoder_unchanged(est, before, X)


def test_an_autoencoder_refit_sets_every_attribute_from_that_fit_only():
    X = pd.DataFrame(
        {
            "x": np.linspace(0, 1, 80),
            "c": pd.Categorical(np.array(["u", "v"])[np.arange(80) % 2]),
        }
    )
    est = of.ForestAutoencoder(n_estimators=30, random_state=0).fit(X)
    assert est._codec is not None and hasattr(est, "feature_names_in_")
    X_new, _ = make_classification(100, n_features=4, random_state=1)
    est.fit(X_new)
    assert est._codec is None and not hasattr(est, "feature_names_in_")
    fresh = of.ForestAutoencoder(n_estimators=30, random_state=0).fit(X_new)
    np.testing.assert_array_equal(est.transform(X_new), fresh.transform(X_new))


def test_autoencoder_transform_pickle_and_save_during_refits_see_one_model_whole(tmp_path):
    X, _ = make_classification(150, n_features=5, random_state=0)
    est = of.ForestAutoencoder(n_components=2, n_estimators=20, random_state=0).fit(X)
    problems = []

    def check(model, where):
        Z = model.transform(X[:20])
        if where == "live":
            if Z.shape[1] not in (2, 3):
                problems.append((where, Z.shape))
            return
        d = model.embedding_.shape[1]
        if Z.shape[1] != d or model.leaf_map_.shape[1] != d or model.eigenvalues_.size != d:
            problems.append((where, Z.shape, d))
        # the training rows' Nystrom embedding is their diffusion map
        elif not np.allclose(Z, model.embedding_[:20], atol=1e-8):
            problems.append((where, "transform disagrees with embedding_"))

    refits = [lambda e, d=d: e.set_params(n_components=d).fit(X) for d in (3, 2)]
    _read_during_refits(est, refits, check, tmp_path, reads=20)
    assert not problems, problems[:3]
