"""Command line interface: ``obliqueforest {demo,fit,predict,explain,evaluate,embed}``.

``demo`` reruns the SPORF and MORF papers' headline simulations with this library's
forests next to scikit-learn's random forest. The other subcommands train, apply,
cross-validate and embed on CSV or Parquet tables; ``explain`` writes the Shapley values
of a saved model's predictions (:mod:`obliqueforest.explain`). Expected user errors (bad
arguments, missing file, malformed CSV, missing column, a column of another kind than at
fit, unwritable output, corrupt or newer model file) print one line on stderr and exit
with status 2; nothing else is caught, so real bugs keep their tracebacks.

CSV files are read by one set of rules with or without pandas
(``_cli_tables.read_csv``): a header of distinct, non-empty names; every line as many
fields as the header (else an error naming the line); an empty cell or ``NA``-like
marker is missing. Feature columns follow one rule in every command: numbers within
float32's range and without infinite values, or categorical columns: text and
``True``/``False`` columns go to the estimators as a DataFrame's object and bool columns
(``categorical_features="from_dtype"``, which needs pandas), so ``fit`` saves their
levels in the model and ``predict``/``explain`` map another file's text through them (a
level never seen in training is no error: the estimators' rule for it applies); a column
that held text at fit and numbers now, or the reverse, is an error naming it. MORF and
the rotation ensembles take numeric columns only and say which forests take text. A
missing feature value is NaN, which the forests handle natively; ``embed`` refuses it in
numeric columns (the autoencoder's decoders need them complete; it takes a missing level
of a text column as a value of its own). A missing target value is an error naming its
line. ``--drop COL[,COL]`` leaves columns out of the features (an id, a leak) and
``--features COL[,COL]`` keeps only those, in every command; a name that is not a column
is an error naming it. ``fit`` stores the column names in the model, and ``predict``
finds its columns by them (other columns are ignored; a column of the model that
``--drop`` removes is an error saying so). A classifier (the default, ``sporf``) refuses
a target that scikit-learn's ``type_of_target`` calls continuous, and one of whole
numbers with more distinct values than half its rows (scikit-learn's warning rule), with
a hint to fit a regressor; ``--task classification`` fits a classifier on the latter
anyway. A misspelt estimator or ``-p`` parameter name is answered with the closest valid
one.
Output piped into a program that stops reading early (``| head``) ends the command quietly
with exit status 141 (128 + SIGPIPE), as ``yes | head`` does in a shell.

Table I/O lives in ``_cli_tables``, the demo simulations in ``_cli_demo``, what the
commands share about saved models and their columns in ``_cli_models``, the ``explain``
command in ``_cli_explain``; this module holds the other commands and the argument parser.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
import warnings

import numpy as np

from ._cli_demo import run_demo
from ._estimators import CLI_NAMES, CLI_WITHOUT_TARGETS
from ._cli_explain import _add_explain
from ._cli_models import (
    _chosen_columns,
    _column_options,
    _did_you_mean,
    _is_regressor,
    _n_jobs,
    _prediction_matrix,
    _without_targets,
    load_model,
)
from ._cli_tables import CLIError, Table, _one_line, _quoted, read_table, write_csv

__all__ = ["main", "run_demo", "read_table", "write_csv", "Table", "CLIError"]

EXIT_USAGE = 2


# ---------------------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------------------


def _cmd_demo(args):
    size = "tiny" if args.tiny else ("quick" if args.quick else "full")
    t0 = time.perf_counter()
    records = run_demo(size=size, n_jobs=args.n_jobs, seed=args.seed, datasets=args.datasets)
    total = time.perf_counter() - t0
    print(f"\ntotal wall time: {total:.1f} s")
    if args.json:
        payload = {"size": size, "n_jobs": args.n_jobs, "seed": args.seed, "results": records}
        try:
            with open(args.json, "w") as f:
                json.dump(payload, f, indent=2)
        except OSError as e:
            raise CLIError(f"cannot write {args.json}: {e.strerror}") from None
    return 0


# ---------------------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------------------

# name: (classifier class name, regressor class name), from the package's one list
_ESTIMATORS = CLI_NAMES
_ESTIMATOR_CHOICES = [
    *_ESTIMATORS,
    *(f"{k}-reg" for k in _ESTIMATORS),
    *CLI_WITHOUT_TARGETS,
]


def _estimator_name(text):
    """An ``--estimator`` value, or a usage error naming the closest name."""
    if text in _ESTIMATOR_CHOICES:
        return text
    raise argparse.ArgumentTypeError(
        f"unknown estimator {text!r}{_did_you_mean(text, _ESTIMATOR_CHOICES)}; choose from "
        f"{', '.join(_ESTIMATOR_CHOICES)}"
    )


def parse_param(text):
    """``"key=value"`` -> ``(key, value)``, the value read by ``ast.literal_eval`` when it
    is a Python literal and kept as a string otherwise (``max_features=sqrt``)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = raw.strip()
    return key, value


def make_estimator(name, task=None, params=(), verbose=False, n_jobs=-1):
    """An unfitted estimator from a CLI name such as ``"sporf"`` or ``"morf-reg"``.

    Parameters
    ----------
    name : str
        One of ``rf, sporf, morf, oblique, rotation``, optionally suffixed ``-reg``, or a
        forest grown without targets: ``isolation``, ``unsupervised``.
    task : {"classification", "regression"} or None
        Overrides the task implied by ``name`` (a conflicting suffix is an error; a forest
        without targets has no task).
    params : iterable of (str, object)
        Estimator parameters; an unknown name is an error naming the closest valid one.
    verbose : bool
        Show the tree progress bar (``verbose=1``).
    n_jobs : int

    Returns
    -------
    estimator : obliqueforest estimator
    """
    import obliqueforest

    base, is_reg = (name[:-4], True) if name.endswith("-reg") else (name, False)
    if name in CLI_WITHOUT_TARGETS:
        if task is not None:
            raise CLIError(f"--estimator {name} is grown without targets; --task does not apply")
        cls = getattr(obliqueforest, CLI_WITHOUT_TARGETS[name])
    elif base not in _ESTIMATORS:
        raise CLIError(
            f"unknown estimator {name!r}{_did_you_mean(name, _ESTIMATOR_CHOICES)}; choose from "
            f"{', '.join(_ESTIMATOR_CHOICES)}"
        )
    else:
        if task is not None:
            if is_reg and task == "classification":
                raise CLIError(f"--estimator {name} is a regressor but --task is classification")
            is_reg = task == "regression"
        cls = getattr(obliqueforest, _ESTIMATORS[base][int(is_reg)])
    kwargs = {"n_jobs": n_jobs}
    if verbose:
        kwargs["verbose"] = 1
    valid = cls().get_params(deep=False)
    for key, value in params:
        if key not in valid:
            raise CLIError(
                f"unknown parameter {key!r} for {cls.__name__}{_did_you_mean(key, valid)}; "
                f"valid: {', '.join(sorted(valid))}"
            )
        if isinstance(value, list) and key in ("data_shape", "min_patch_size", "max_patch_size"):
            value = tuple(value)
        kwargs[key] = value
    est = cls(**kwargs)
    _check_params(est)
    return est


def _check_params(est):
    """Validates the parameters now, so every command reports a bad ``-p`` the same way
    (naming the estimator and the parameter, not whatever function would have fitted it)."""
    from sklearn.utils._param_validation import InvalidParameterError

    from . import ForestError

    try:
        est._validate_params()
        if getattr(est, "data_shape", None) is not None:  # MORF: the patch geometry too
            est._projection_config(_n_features_hint(est))
    except (InvalidParameterError, ForestError, TypeError, ValueError) as e:
        raise CLIError(f"{type(est).__name__}: {_one_line(e)}") from None


def _n_features_hint(est):
    """The feature count a MORF ``data_shape`` implies (its product), for checking the
    geometry before the data are read."""
    shape = est.data_shape
    if isinstance(shape, int):
        return shape
    return int(np.prod(shape))


def _feature_table(table, target, required=True, drop=None, keep=None):
    """The feature columns: the table without ``target``, then without the ``drop``
    columns (``--drop``) or with only the ``keep`` columns (``--features``, in file order).
    A name that is not a column, or that names the target, is an error."""
    if target is None:
        if required:
            raise CLIError(
                "--target is required here: the forest learns it (forests grown without "
                "targets: --estimator isolation or unsupervised)"
            )
        features = table
    elif target not in table.names:
        raise CLIError(
            f"target column {target!r} not found{_did_you_mean(target, table.names)}; the "
            f"columns are {_quoted(table.names, 10)}"
        )
    else:
        features = table.without(target)
    chosen, flag = (drop, "--drop") if drop else (keep, "--features")
    if chosen and target in chosen:
        raise CLIError(f"{flag} names the target column {target!r}, which is never a feature")
    return _chosen_columns(features, table.names, drop, keep)


def _target_vector(table, target, regression):
    """The target column as labels (classification) or numbers (regression).

    A missing label (an empty cell, ``NA``, ...) is an error naming its line; text labels
    are the cells' text without surrounding whitespace; integral numbers are int64 labels.
    """
    y = table.column(target)
    if y.dtype.kind == "O":
        missing = np.flatnonzero([v is None for v in y])
    else:
        missing = np.flatnonzero(np.isnan(y)) if y.dtype.kind == "f" else []
    if len(missing):
        raise CLIError(
            f"target column {target!r} has {len(missing)} missing value(s), the first on "
            f"{table.where(missing[0])}; drop those rows or fill them in"
        )
    if y.dtype.kind == "O":
        if regression:
            raise CLIError(
                f"target column {target!r} is not numeric ({table.first_text(target)}); "
                "regression needs numbers"
            )
        return y.astype(str)
    if y.dtype.kind == "f" and not regression:
        from sklearn.utils.multiclass import type_of_target

        # scikit-learn's rule: floats that are not all whole numbers are "continuous"
        if type_of_target(y) == "continuous":
            raise CLIError(
                f"target column {target!r} holds continuous values, but the estimator is a "
                "classifier; use a regressor (-e sporf-reg, rf-reg, ...) or --task regression"
            )
        return y.astype(np.int64)  # labels written as 1.0, 2.0
    return y


def _refuse_regression_like_labels(y, target, task):
    """Refuses whole numbers that look like a regression target as a classifier's labels,
    by scikit-learn's rule (``check_classification_targets`` warns when more than 20 rows
    hold more distinct labels than half the rows), unless ``--task classification`` asked
    for a classifier. Text and boolean labels are classes whatever their number."""
    if task == "classification" or y.dtype.kind not in "iu":
        return
    n, distinct = len(y), len(np.unique(y))
    if n > 20 and distinct > round(0.5 * n):
        raise CLIError(
            f"target column {target!r} holds {distinct} distinct numbers in {n} rows, a "
            "regression target rather than class labels; use a regressor (-e sporf-reg, "
            "rf-reg, ...) or --task regression (--task classification fits a classifier anyway)"
        )


def _check_model_path(path):
    """Refuses, before any fitting, an output path the model cannot be written to."""
    if os.path.isdir(path):
        raise CLIError(
            f"cannot write model {path}: it is a directory (give a file name, such as "
            f"{os.path.join(path, 'model.of')})"
        )
    if os.path.exists(path) and not os.path.isfile(path):
        raise CLIError(f"cannot write model {path}: it exists and is not a regular file")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CLIError(f"cannot write model {path}: directory {parent} does not exist")


def _fit_input(est, features):
    """X for fitting ``est`` on the ``features`` table: the float matrix of old when every
    column is numeric; a DataFrame when some column holds text or True/False, which the
    estimators take as categorical (``categorical_features="from_dtype"``), or when ``-p
    categorical_features`` names columns. Estimators that take numeric columns only (MORF,
    rotation ensembles) refuse text columns, saying which forests take them."""
    categorical = features.categorical_names()
    params = est.get_params(deep=False)
    if categorical and "categorical_features" not in params:
        why = getattr(est, "_numeric_only_why", "")
        reg = "-reg" if _is_regressor(est) else ""
        raise CLIError(
            f"{type(est).__name__} takes numeric columns only{f' ({why})' if why else ''}, "
            f"and column(s) {_quoted(categorical)} hold text or True/False: use -e rf{reg} "
            f"or -e sporf{reg}, which split on categories, leave them out with --drop, or "
            "encode them as numbers"
        )
    value = params.get("categorical_features")
    if not categorical and (value is None or isinstance(value, str)):
        return features.numeric_matrix()
    return features.frame()


def _fit_estimator(est, X, y):
    from sklearn.utils._param_validation import InvalidParameterError

    from . import ForestError

    try:
        return est.fit(X) if y is None else est.fit(X, y)
    except (InvalidParameterError, ForestError, ValueError) as e:  # bad input, by sklearn's rule
        raise CLIError(f"{type(est).__name__}: {_one_line(e)}") from None


def _seeded(args):
    """``-p`` parameters with ``--seed`` as ``random_state`` (given once)."""
    params = list(args.param or ())
    if args.seed is not None:
        if any(key == "random_state" for key, _ in params):
            raise CLIError("give the seed once: --seed or -p random_state, not both")
        params.append(("random_state", args.seed))
    return params


def _cmd_fit(args):
    _check_model_path(args.model)
    est = make_estimator(
        args.estimator, args.task, _seeded(args), verbose=args.verbose, n_jobs=args.n_jobs
    )
    table = read_table(args.data)
    # a forest without targets grows on the features alone (--target, if given, is a column
    # left out of them)
    unsupervised = _without_targets(est)
    features = _feature_table(
        table, args.target, not unsupervised, drop=args.drop, keep=args.features
    )
    regression = _is_regressor(est)
    y = None if unsupervised else _target_vector(table, args.target, regression)
    if not (unsupervised or regression):
        _refuse_regression_like_labels(y, args.target, args.task)
    _fit_estimator(est, _fit_input(est, features), y)
    # the model keeps the column names (as after a fit on a DataFrame): predict finds its
    # columns by name, in Python and in Rust
    est.feature_names_in_ = np.asarray(features.names, dtype=object)
    from . import ForestError

    try:
        est.save(args.model)
    except (OSError, ForestError) as e:
        raise CLIError(f"cannot write model {args.model}: {_one_line(e)}") from None
    if unsupervised:
        kind = "grown without targets"
    elif regression:
        kind = "regressor"
    else:
        kind = f"classifier, {len(est.classes_)} classes"
    print(
        f"fitted {type(est).__name__} ({kind}) on {table.n_rows} rows x "
        f"{len(features.names)} features; saved to {args.model}",
        file=sys.stderr,
    )
    summary = _categorical_summary(est)
    if summary:
        print(summary, file=sys.stderr)
    return 0


def _categorical_summary(est, limit=10):
    """``"2 categorical columns: city (12 levels), industry (40 levels)"``, or None when
    every column of the fitted ``est`` is numeric."""
    levels = getattr(est, "categories_", None)
    if levels is None:
        return None
    named = [(str(n), len(lv)) for n, lv in zip(est.feature_names_in_, levels) if lv is not None]
    if not named:
        return None
    shown = ", ".join(f"{n} ({k} level{'s' * (k != 1)})" for n, k in named[:limit])
    more = f" and {len(named) - limit} more" if len(named) > limit else ""
    return f"{len(named)} categorical column{'s' * (len(named) != 1)}: {shown}{more}"


def _predict(est, X, proba, quantiles=None):
    """The predictions of ``est`` and what goes beside them: its class probabilities
    (``proba``), its ``quantiles``, or, for an isolation forest, its ``score_samples``."""
    from . import ForestError

    try:
        with warnings.catch_warnings():
            # the columns were matched by name above; the model need not check them again
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            pred = est.predict(X)
            extra = est.predict_proba(X) if proba else None
            if quantiles is not None:
                extra = est.predict_quantiles(X, quantiles)
            if hasattr(est, "score_samples"):
                extra = est.score_samples(X)
            return pred, extra
    except (ForestError, ValueError) as e:
        raise CLIError(f"{type(est).__name__}: {_one_line(e)}") from None


def _cmd_predict(args):
    est = load_model(args.model)
    if not hasattr(est, "predict"):
        raise CLIError(
            f"{args.model} holds a {type(est).__name__}, which does not predict (an "
            "autoencoder's transform, an unsupervised forest's apply and proximity run in "
            "Python; examples/predict.rs serves both from Rust)"
        )
    if args.proba and _is_regressor(est):
        kind = "a regressor" if not _without_targets(est) else type(est).__name__
        raise CLIError(f"--proba needs a classifier; this model is {kind}")
    if args.proba and isinstance(est.classes_, list):
        raise CLIError("--proba is for single-output classifiers; this model has several")
    forest = getattr(est, "_forest", None)
    if args.quantiles is not None and not (
        _is_regressor(est) and forest is not None and forest.has_leaf_values
    ):
        raise CLIError(
            "--quantiles needs a regressor fitted with -p store_leaf_values=True (quantile "
            "regression forest)"
        )
    table = read_table(args.data)
    X = _prediction_matrix(est, table, args.target, args.drop, args.features)
    pred, extra = _predict(est, X, args.proba, args.quantiles)
    if pred.ndim == 2:  # several outputs: one column each
        names, columns = [f"prediction_{k}" for k in range(pred.shape[1])], list(pred.T)
    else:
        names, columns = ["prediction"], [pred]
    if args.proba:
        names += [f"proba_{c}" for c in est.classes_]
        columns += list(extra.T)
    if args.quantiles is not None:
        if pred.ndim == 2:  # (n, outputs, quantiles)
            q_names = [_quantile_name(q) for q in args.quantiles]
            names += [f"q{q}_{k}" for k in range(pred.shape[1]) for q in q_names]
            columns += list(extra.reshape(len(pred), -1).T)
        else:
            names += [f"q{_quantile_name(q)}" for q in args.quantiles]
            columns += list(extra.T)
    elif extra is not None and extra.ndim == 1:  # an isolation forest's scores
        names.append("score")
        columns.append(extra)
    write_csv(args.out, names, columns)
    if args.out != "-":
        print(f"wrote {len(pred)} predictions to {args.out}", file=sys.stderr)
    return 0


def _cmd_evaluate(args):
    from sklearn.metrics import get_scorer
    from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

    params = list(args.param or ())
    if not any(key == "random_state" for key, _ in params):
        params.append(("random_state", args.seed))  # the folds' seed seeds the forest too
    est = make_estimator(args.estimator, args.task, params, args.verbose, args.n_jobs)
    if _without_targets(est):
        raise CLIError(
            f"evaluate cross-validates a forest's predictions of --target; "
            f"{type(est).__name__} is grown without targets"
        )
    table = read_table(args.data)
    features = _feature_table(table, args.target, drop=args.drop, keep=args.features)
    regression = _is_regressor(est)
    y = _target_vector(table, args.target, regression)
    if not regression:
        _refuse_regression_like_labels(y, args.target, args.task)
    X = _fit_input(est, features)
    n = len(y)
    if not 2 <= args.cv <= n:
        raise CLIError(f"--cv must be between 2 and the number of rows ({n}), got {args.cv}")
    scoring = args.scoring or ("r2" if regression else "accuracy")
    try:
        get_scorer(scoring)
    except ValueError:
        raise CLIError(f"unknown --scoring {scoring!r} (any scikit-learn scorer name)") from None
    if regression:
        cv = KFold(args.cv, shuffle=True, random_state=args.seed)
    else:
        counts = np.unique(y, return_counts=True)[1]
        if counts.min() < args.cv:
            raise CLIError(
                f"the smallest class has {counts.min()} rows, fewer than --cv {args.cv} folds"
            )
        cv = StratifiedKFold(args.cv, shuffle=True, random_state=args.seed)
    try:
        scores = cross_val_score(est, X, y, cv=cv, scoring=scoring, error_score="raise")
    except ValueError as e:
        raise CLIError(f"{type(est).__name__}: {_one_line(e)}") from None
    sd = float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0
    n_categorical = len(features.categorical_names())
    of_them = f" ({n_categorical} categorical)" if n_categorical else ""
    print(
        f"{type(est).__name__}, {args.cv}-fold CV on {n} rows x {len(features.names)} "
        f"features{of_them}"
    )
    print(f"{scoring}: {np.mean(scores):.4f} ± {sd:.4f}")
    print("folds: " + " ".join(f"{s:.4f}" for s in scores))
    return 0


def _cmd_embed(args):
    try:
        from .autoencoder import ForestAutoencoder
    except ImportError as e:
        raise CLIError(f"ForestAutoencoder is not available in this installation: {e}") from None
    table = read_table(args.data)
    features = _feature_table(
        table, args.target, required=args.supervised, drop=args.drop, keep=args.features
    )
    # text and True/False columns go to the autoencoder as a DataFrame's categorical
    # columns, which its forest splits (a missing level is a value of its own there)
    if features.categorical_names():
        X = features.frame(complete=True)
    else:
        X = features.numeric_matrix(complete=True)
    y = None if args.target is None else table.column(args.target)
    kwargs = {"n_components": args.n_components, "n_jobs": args.n_jobs}
    valid = ForestAutoencoder().get_params(deep=False)
    for key, value in args.param or ():
        if key not in valid:
            raise CLIError(
                f"unknown parameter {key!r} for ForestAutoencoder{_did_you_mean(key, valid)}"
            )
        kwargs[key] = value
    ae = ForestAutoencoder(**kwargs)
    y_fit = None
    if args.supervised:
        y_fit = _target_vector(table, args.target, regression=y.dtype.kind == "f")
    from sklearn.utils._param_validation import InvalidParameterError

    try:
        Z = ae.fit_transform(X, y_fit)
    except (InvalidParameterError, TypeError, ValueError) as e:
        # the autoencoder reports bad input (too few rows, odd dtypes) as ValueError/TypeError
        raise CLIError(f"ForestAutoencoder: {_one_line(e)}") from None
    names = [f"component_{k + 1}" for k in range(Z.shape[1])]
    columns = list(Z.T)
    if y is not None:
        names.append(args.target)
        columns.append(y)
    write_csv(args.out, names, columns)
    if args.out != "-":
        print(
            f"wrote a {Z.shape[1]}-dimensional embedding of {len(Z)} rows to {args.out}",
            file=sys.stderr,
        )
    return 0


# ---------------------------------------------------------------------------------------
# argument parsing and entry point
# ---------------------------------------------------------------------------------------


def _quantile_list(text):
    """``--quantiles``: distinct numbers in [0, 1] (``0.1,0.10`` names one twice)."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected numbers such as 0.05,0.95, got {text!r}"
        ) from None
    if not all(0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"quantiles must be in [0, 1], got {text!r}")
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        raise argparse.ArgumentTypeError(
            f"quantile {_quantile_name(twice[0])} is given twice in {text!r} (each quantile "
            "is one output column)"
        )
    return values


def _quantile_name(q):
    """A quantile as its column names write it: ``0.05``, ``0.5``, ``1`` (``:g``), or the
    shortest form that reads back as ``q`` where ``:g``'s six digits would not, so that
    distinct quantiles never share a column name."""
    short = f"{q:g}"
    return short if float(short) == q else repr(q)


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's own error form: one line on stderr, exit status 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _model_options(p):
    """The data, target, columns, estimator and its parameters: the options fit and
    evaluate share."""
    p.add_argument("data", metavar="DATA", help="CSV (header row) or Parquet file")
    p.add_argument(
        "--target",
        metavar="COL",
        help="name of the target column (required but for isolation and unsupervised, "
        "whose forests grow on the features alone: there it is a column left out)",
    )
    _column_options(p)
    p.add_argument(
        "--estimator",
        "-e",
        default="sporf",
        type=_estimator_name,
        metavar="NAME",
        help=f"forest: {', '.join(_ESTIMATOR_CHOICES)}. A -reg suffix makes it a "
        "regressor; rotation is a rotation ensemble; isolation and unsupervised grow "
        "without targets (default sporf, a classifier)",
    )
    p.add_argument(
        "--task",
        choices=("classification", "regression"),
        help="override the task implied by --estimator. A classifier refuses a target "
        "of continuous values, and one of whole numbers with more distinct values than "
        "half the rows (scikit-learn's rule for a regression target) unless --task "
        "classification is given",
    )
    p.add_argument(
        "--param",
        "-p",
        action="append",
        type=parse_param,
        metavar="KEY=VALUE",
        help="estimator parameter, e.g. n_estimators=500 or max_features=sqrt (repeatable)",
    )
    p.add_argument("--n-jobs", type=_n_jobs, default=-1, help="threads (default -1: all)")
    p.add_argument("--verbose", "-v", action="store_true", help="show a tree progress bar")


def _add_demo(sub):
    """The ``demo`` subcommand."""
    p = sub.add_parser(
        "demo",
        help="rerun the SPORF/MORF papers' simulations against scikit-learn",
        description="Sparse parity, orthant, trunk, hv_bars, circle segments and impulse: "
        "test error and fit time of this library's RF, SPORF and MORF next to "
        "scikit-learn's RandomForestClassifier, as a markdown table.",
    )
    p.add_argument("--quick", action="store_true", help="small sizes (well under two minutes)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--n-jobs", type=_n_jobs, default=-1, help="threads per model (default -1)")
    p.add_argument("--seed", type=int, default=0, help="seed for data and models (default 0)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument(
        "--datasets", nargs="+", metavar="NAME", help="run only these datasets (default all)"
    )
    p.set_defaults(func=_cmd_demo)


def _add_fit(sub):
    """The ``fit`` subcommand."""
    p = sub.add_parser(
        "fit",
        help="train a forest on a table and save it",
        description="Text and True/False columns are categorical features (their levels "
        "are saved in the model; predict reads another file's text through them, a level "
        "never seen here being no error); the other columns must be numbers. An empty cell "
        "is a missing value, which the forests handle natively.",
    )
    _model_options(p)
    p.add_argument("--model", "-o", required=True, metavar="OUT", help="model file to write")
    p.add_argument(
        "--seed", type=int, metavar="N", help="random_state of the forest (default: unseeded)"
    )
    p.set_defaults(func=_cmd_fit)


def _add_predict(sub):
    """The ``predict`` subcommand."""
    p = sub.add_parser(
        "predict",
        help="apply a saved model to a table",
        description="Columns are found by the names the model was fitted with, in any "
        "order; other columns are ignored (a note on stderr lists them), a missing one is "
        "an error. A model fitted without names (on an array in Python) takes the columns "
        "in file order.",
    )
    p.add_argument("model", metavar="MODEL", help="model file written by fit")
    p.add_argument("data", metavar="DATA", help="CSV (header row) or Parquet file")
    p.add_argument("--out", "-o", default="-", metavar="PRED.csv", help="output CSV (default -)")
    p.add_argument("--target", metavar="COL", help="target column to drop if present")
    _column_options(p, ", as given to fit")
    p.add_argument("--proba", action="store_true", help="also write class probabilities")
    p.add_argument(
        "--quantiles",
        type=_quantile_list,
        metavar="Q,...",
        help="also write conditional quantiles, e.g. 0.05,0.5,0.95 (a regressor fitted with "
        "-p store_leaf_values=True)",
    )
    p.set_defaults(func=_cmd_predict)


def _add_evaluate(sub):
    """The ``evaluate`` subcommand."""
    p = sub.add_parser("evaluate", help="k-fold cross-validation of a forest on a table")
    _model_options(p)
    p.add_argument("--cv", type=int, default=5, metavar="K", help="number of folds (default 5)")
    p.add_argument("--scoring", help="scikit-learn scorer (default accuracy or r2)")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the fold split and random_state of the forest (default 0)",
    )
    p.set_defaults(func=_cmd_evaluate)


def _add_embed(sub):
    """The ``embed`` subcommand."""
    p = sub.add_parser("embed", help="forest-autoencoder embedding of a table")
    p.add_argument("data", metavar="DATA", help="CSV (header row) or Parquet file")
    p.add_argument("--out", "-o", default="-", metavar="EMB.csv", help="output CSV (default -)")
    p.add_argument("--n-components", "-k", type=int, default=2, help="dimension (default 2)")
    p.add_argument(
        "--target",
        metavar="COL",
        help="column left out of the features and copied next to the embedding",
    )
    _column_options(p)
    p.add_argument(
        "--supervised",
        action="store_true",
        help="grow the forest on --target (default: unsupervised)",
    )
    p.add_argument(
        "--param",
        "-p",
        action="append",
        type=parse_param,
        metavar="KEY=VALUE",
        help="ForestAutoencoder parameter (repeatable)",
    )
    p.add_argument("--n-jobs", type=_n_jobs, default=-1, help="threads (default -1: all)")
    p.set_defaults(func=_cmd_embed)


def build_parser():
    """The argparse parser of all subcommands."""
    from . import __version__

    parser = _Parser(
        prog="obliqueforest",
        description="Projection decision forests (RF, SPORF, MORF) from the command line.",
    )
    parser.add_argument("--version", action="version", version=f"obliqueforest {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for add in (_add_demo, _add_fit, _add_predict, _add_explain, _add_evaluate, _add_embed):
        add(sub)
    return parser


def main(argv=None):
    """Entry point of the ``obliqueforest`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CLIError as e:
        print(f"obliqueforest {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _broken_pipe()


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for `yes | head`


def _broken_pipe():
    """The reader of stdout went away: end quietly. Python would otherwise complain again
    when it flushes stdout at exit, so stdout is pointed at /dev/null first."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
