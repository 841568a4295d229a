"""Exact Shapley values (SHAP) of every obliqueforest prediction, with the conventions of
the ``shap`` package's ``TreeExplainer``: switch one import and ``shap.plots`` work as
before.

>>> from sklearn.datasets import load_diabetes
>>> from obliqueforest import SPORFRegressor
>>> from obliqueforest.explain import TreeExplainer
>>> X, y = load_diabetes(return_X_y=True)
>>> model = SPORFRegressor(n_estimators=20, random_state=0).fit(X, y)
>>> explainer = TreeExplainer(model)
>>> values = explainer.shap_values(X[:5])  # shape (5, 10)
>>> bool(abs(values.sum(axis=1) + explainer.expected_value - model.predict(X[:5])).max() < 1e-6)
True

Two games, both computed exactly in the Rust core (``obliqueforest._core.Forest.shap_values``,
the ``explain`` module of the crate, whose documentation derives the algorithms):

``feature_perturbation="tree_path_dependent"`` (no background data)
    A coalition ``S`` of known features is followed down each tree: at a split whose
    projection's features are all in ``S`` the row goes where its projected value sends
    it; at a split with some feature outside ``S`` it goes both ways, weighted by the
    training weight (cover) each child received. For axis-aligned trees this is the game
    of shap's TreeSHAP, and the values equal ``shap.TreeExplainer``'s on the same trees.
    An oblique (SPORF, Forest-RC, Gaussian), patch (MORF), pooled or dictionary split
    needs *all* of its features known to be followed.

``feature_perturbation="interventional"`` (``data`` given)
    ``v(S)`` is the mean over the background rows ``b`` of the forest's output on the
    hybrid row that takes ``S`` from ``x`` and the rest from ``b``; every projection is
    evaluated on the hybrid row itself.

A rotation ensemble is explained on its original features: a split on a rotated
coordinate is an oblique split on the (scaled) features with a nonzero loading in it.

Where an exact computation would exceed the core's bounds (``max_terms``: the terms of
one tree's path for a row — many splits of several features on it — or, for the
interventional game, the cells and hybrid sides of one row and background row, with at
most 10 differing features decided at one node), that tree's values for that row are
estimated by antithetic permutation sampling instead — unbiased, their standard errors in
:attr:`TreeExplainer.std_err_`, with a warning. Exact or estimated, each row's values add
up to its prediction minus :attr:`TreeExplainer.expected_value` (local accuracy), and a
feature no split uses gets exactly 0.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._tables import numeric_columns, predict_columns
from ._validation import SPARSE_FORMATS, _validate_data, as_float32, resolve_n_jobs

__all__ = ["TreeExplainer"]

_GAMES = ("auto", "interventional", "tree_path_dependent")

#: Background rows above which the interventional game warns of its cost (shap's advice
#: is 100; every explained row visits every tree once per background row).
_LARGE_BACKGROUND = 1000


class TreeExplainer:
    """Shapley values of an obliqueforest estimator's predictions.

    Parameters
    ----------
    model : fitted estimator
        A forest classifier or regressor of any family (``RandomForest*``, ``SPORF*``,
        ``ObliqueForest*``, ``MORF*``, quantile and honest forests), a rotation ensemble
        (``RotationEnsemble*``: its trees split rotated coordinates, which are oblique
        splits on the original features, so the values are the original features'), or
        an ``IsolationForest`` (whose explained output is the mean normalised path
        length behind ``score_samples``: a negative value pushes a row towards the
        anomalies). A quantile forest's values explain its mean prediction.
    data : array-like or DataFrame of shape (n_background, n_features), default=None
        Background rows for the interventional game. Around 100 rows is usual.
    feature_perturbation : {"auto", "interventional", "tree_path_dependent"}, default="auto"
        The game: ``"auto"`` is ``"interventional"`` when ``data`` is given, else
        ``"tree_path_dependent"``.
    n_jobs : int, default=None
        Threads (rows are explained in parallel); ``None`` uses the model's ``n_jobs``.
        The values do not depend on it.
    max_terms : int, default=None
        The bound on one exact computation (the core's default, 16384, when None); beyond
        it a tree's values for a row are estimated.
    n_permutations : int, default=None
        Permutations of an estimate (the core's default, 64, when None).

    Attributes
    ----------
    expected_value : float or ndarray
        The game's value of the empty coalition: the cover-weighted mean leaf
        (path-dependent) or the mean prediction over ``data`` (interventional); an array
        of one value per class (classifiers) or output, a list of arrays per output for
        multi-output classifiers.
    feature_names : list of str or None
        The model's ``feature_names_in_`` when it was fitted on a DataFrame.
    std_err_ : ndarray or None
        After :meth:`shap_values`: standard errors in the layout of the values, where
        some were estimated (zero where exact); None when all were exact.
    n_estimated_ : int
        After :meth:`shap_values`: how many (row, tree) pairs — (row, tree, background
        row) for the interventional game — were estimated.
    """

    def __init__(
        self,
        model,
        data=None,
        feature_perturbation="auto",
        *,
        n_jobs=None,
        max_terms=None,
        n_permutations=None,
    ):
        self.model = model
        self._core = _Core(model)
        if feature_perturbation not in _GAMES:
            raise ValueError(
                f"feature_perturbation must be one of {_GAMES}, got {feature_perturbation!r}"
            )
        if feature_perturbation == "auto":
            feature_perturbation = "tree_path_dependent" if data is None else "interventional"
        if feature_perturbation == "interventional" and data is None:
            raise ValueError(
                "feature_perturbation='interventional' needs background data: pass data= "
                "(e.g. 100 training rows), or use 'tree_path_dependent'"
            )
        if feature_perturbation == "tree_path_dependent" and data is not None:
            raise ValueError(
                "feature_perturbation='tree_path_dependent' follows the trees' training "
                "cover and takes no background data: drop data=, or use 'interventional'"
            )
        self.feature_perturbation = feature_perturbation
        for name, value in (("max_terms", max_terms), ("n_permutations", n_permutations)):
            if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        self.max_terms = max_terms
        self.n_permutations = n_permutations
        self.n_jobs = n_jobs
        self.data = None if data is None else self._rows(data)
        if self.data is not None and self.data.shape[0] == 0:
            raise ValueError("data (the background) needs at least one row")
        if self.data is not None and self.data.shape[0] > _LARGE_BACKGROUND:
            warnings.warn(
                f"{self.data.shape[0]} background rows: the interventional game costs one "
                "tree walk per row, tree and background row; about 100 rows (e.g. "
                "sklearn.utils.resample(data, n_samples=100)) are usually enough",
                UserWarning,
                stacklevel=2,
            )
        names = getattr(model, "feature_names_in_", None)
        self.feature_names = None if names is None else [str(n) for n in names]
        empty = np.empty((0, model.n_features_in_), dtype=np.float64)
        _, expected, _, _ = self._call(empty)
        self.expected_value = self._layout_expected(expected)
        self.std_err_ = None
        self.n_estimated_ = 0

    def _threads(self):
        n_jobs = self.n_jobs if self.n_jobs is not None else getattr(self.model, "n_jobs", None)
        return resolve_n_jobs(n_jobs)

    def _rows(self, X):
        """X validated as the model validates it (feature count and names), dense
        float64 in row order."""
        return self._core.rows(X)

    def _call(self, X):
        return self._core.shap_values(
            X, self.data, self._threads(), self.max_terms, self.n_permutations
        )

    def _layout(self, values):
        """Core values with the outputs last ((n, p, outputs), or (n, p, p, outputs) for
        interactions) in shap's layout for the model: the output axis dropped for one
        output of a regressor, cut per output for a multi-output classifier."""
        classes = getattr(self.model, "classes_", None)
        if classes is None:
            return values[..., 0] if values.shape[-1] == 1 else values
        if isinstance(classes, list):
            bounds = np.cumsum([0, *(len(c) for c in classes)])
            return [values[..., a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        return values

    def _layout_expected(self, expected):
        """The core's expected value (outputs,) as shap gives it: a float for one output
        of a regressor, an array per class, a list of arrays per output."""
        if getattr(self.model, "classes_", None) is None and expected.shape[0] == 1:
            return float(expected[0])
        laid = self._layout(expected[None, None, :])
        return [block[0, 0] for block in laid] if isinstance(laid, list) else laid[0, 0]

    def shap_values(self, X, check_additivity=True):
        """Shapley values of the model's output for each row of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
        check_additivity : bool, default=True
            Checks that each row's values add up to its prediction minus the expected
            value (to 1e-6); raises RuntimeError otherwise.

        Returns
        -------
        values : ndarray or list of ndarray
            (n_samples, n_features) for a single-output regressor or an isolation forest;
            (n_samples, n_features, n_classes) for a classifier (probability scale),
            (n_samples, n_features, n_outputs) for a multi-output regressor, and a list
            of (n_samples, n_features, n_classes[o]) for a multi-output classifier.
        """
        X = self._rows(X)
        values, expected, std_err, n_estimated = self._call(X)
        self.n_estimated_ = int(n_estimated)
        self.std_err_ = None if std_err is None else self._layout(std_err)
        if n_estimated:
            warnings.warn(
                f"{n_estimated} tree explanation(s) exceeded the exact algorithm's bounds "
                f"(max_terms={self.max_terms or 'the default'} terms; for the interventional game "
                "also 10 differing features decided at one oblique node) and were "
                "estimated by permutation sampling: unbiased, standard errors in "
                "std_err_ (a larger max_terms makes more of them exact)",
                UserWarning,
                stacklevel=2,
            )
        if check_additivity:
            self._check_additivity(X, values, expected)
        return self._layout(values)

    def shap_interaction_values(self, X):
        """Shapley interaction values of the path-dependent game (shap's
        ``shap_interaction_values``), exact.

        Entry ``[r, i, j]`` for ``i != j`` is half the Shapley interaction index of
        features ``i`` and ``j`` in row ``r`` (the same at ``[r, j, i]``); the diagonal
        ``[r, i, i]`` is feature ``i``'s Shapley value minus its interactions, so the
        entries of ``[r, i, :]`` add up to ``shap_values(X)[r, i]``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)

        Returns
        -------
        values : ndarray or list of ndarray
            (n_samples, n_features, n_features) for a single-output regressor or an
            isolation forest, with a trailing class (output) axis for a classifier
            (multi-output regressor), a list per output for a multi-output classifier.
            A memory error names the size when n_samples * n_features**2 * outputs
            values do not fit.
        """
        if self.feature_perturbation != "tree_path_dependent":
            raise ValueError(
                "interaction values are those of the path-dependent game: create the "
                "explainer without data (feature_perturbation='tree_path_dependent')"
            )
        X = self._rows(X)
        values, _ = self._core.shap_interaction_values(X, self._threads(), self.max_terms)
        return self._layout(values)

    def _check_additivity(self, X, values, expected):
        predicted = self._core.predict(X, self._threads())
        total = values.sum(axis=1) + expected[None, :]
        gap = np.abs(total - predicted)
        bound = 1e-6 * np.maximum(1.0, np.abs(predicted))
        if np.any(gap > bound):
            raise RuntimeError(
                f"Shapley values miss the prediction by up to {gap.max():.3g} (local "
                "accuracy); please report this with the model and rows"
            )

    def __call__(self, X):
        """The values as a ``shap.Explanation`` (needs the ``shap`` package), so that
        ``shap.plots.beeswarm(explainer(X))`` and the other plots work unchanged."""
        try:
            import shap
        except ImportError as e:
            raise ImportError(
                "TreeExplainer(...)(X) returns a shap.Explanation, which needs the shap "
                "package (pip install shap); shap_values(X) needs nothing more"
            ) from e
        frame_names = getattr(X, "columns", None)
        values = self.shap_values(X)
        data = self._rows(X)
        names = self.feature_names or (
            None if frame_names is None else [str(c) for c in frame_names]
        )
        if isinstance(values, list):
            raise ValueError(
                "a multi-output classifier's values are one array per output; call "
                "shap_values(X) and build a shap.Explanation per output"
            )
        n = data.shape[0]
        expected = np.asarray(self.expected_value, dtype=np.float64)
        base = np.broadcast_to(expected, (n, *expected.shape)).copy()
        return shap.Explanation(values=values, base_values=base, data=data, feature_names=names)


class _Core:
    """The model's trees as the core explains them: a forest reading the features
    directly, or a rotation ensemble's forests reading its scaled rows rotated (their
    splits on rotated coordinates are oblique splits on the original features, so the
    values are the original features' own)."""

    def __init__(self, model):
        from .unsupervised import UnsupervisedRandomForest

        if isinstance(model, UnsupervisedRandomForest):
            raise TypeError(
                "UnsupervisedRandomForest predicts nothing to explain; explain a forest "
                "fitted on targets, or an IsolationForest's scores"
            )
        self.rotation = hasattr(model, "rotations_") or hasattr(type(model), "_rotate")
        if not (hasattr(model, "_forest") or hasattr(model, "_forests") or self.rotation):
            raise TypeError(
                "TreeExplainer explains fitted obliqueforest forests, got "
                f"{type(model).__name__} (an unfitted forest, or another kind of model)"
            )
        self.model = model._fitted() if hasattr(model, "_fitted") else model
        check_is_fitted(self.model)
        if self.rotation:
            ks, forests = zip(*self.model._rotation_forests())
            self.forests = list(forests)
            self.rotations = np.ascontiguousarray(self.model.rotations_[list(ks)])
        else:
            self.forest = self.model._forest

    def rows(self, X):
        """X validated as the model validates it, dense float64 rows: scaled as the
        ensemble scales them for a rotation ensemble."""
        # categorical columns as the model's levels code them (an unseen level: missing)
        coded = predict_columns(self.model, X)
        with numeric_columns(self.model, coded, fitting=False):
            X = _validate_data(
                self.model,
                coded,
                dtype=[np.float32, np.float64],
                reset=False,
                ensure_all_finite=False,
                accept_sparse=SPARSE_FORMATS,
            )
        if sparse.issparse(X):
            X = X.toarray()
        if self.rotation:
            return np.ascontiguousarray(self.model._scale(np.asarray(X)), dtype=np.float64)
        return np.ascontiguousarray(as_float32(np.asarray(X), "C"), dtype=np.float64)

    def shap_values(self, X, background, n_jobs, max_terms, n_permutations):
        if self.rotation:
            return _core.shap_values_rotated(
                self.forests, self.rotations, X, background, n_jobs, max_terms, n_permutations
            )
        as32 = None if background is None else background.astype(np.float32)
        return self.forest.shap_values(
            X.astype(np.float32), as32, n_jobs, max_terms, n_permutations
        )

    def shap_interaction_values(self, X, n_jobs, max_terms):
        if self.rotation:
            return _core.shap_interaction_values_rotated(
                self.forests, self.rotations, X, n_jobs, max_terms
            )
        return self.forest.shap_interaction_values(X.astype(np.float32), n_jobs, max_terms)

    def predict(self, X, n_jobs):
        """The raw output the values explain (rows as :meth:`rows` gives them): the
        ensemble's own mean over its rotations' trees, or the forest's."""
        if self.rotation:
            return self.model._mean_of_scaled(X)
        return self.forest.predict(X.astype(np.float32), n_jobs)
