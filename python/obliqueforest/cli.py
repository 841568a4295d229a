"""Command line interface: ``obliqueforest {demo,fit,predict,evaluate,embed}``.

``demo`` reruns the SPORF and MORF papers' headline simulations with this library's
forests next to scikit-learn's random forest. The other subcommands train, apply,
cross-validate and embed on CSV or Parquet tables. Expected user errors (missing file,
missing column, non-numeric column, corrupt or newer model file) print one line on stderr
and exit with status 2; nothing else is caught, so real bugs keep their tracebacks.

Feature columns follow one rule in every command: numeric (or bool), within float32's
range and without infinite values; text columns are refused with the same message (encode
them first). An empty cell is a missing value (NaN), which the forests handle natively;
``embed`` refuses it (the autoencoder's decoders need complete rows).
Output piped into a program that stops reading early (``| head``) ends the command quietly
with exit status 141 (128 + SIGPIPE), as ``yes | head`` does in a shell.

Table I/O lives in ``_cli_tables``, the demo simulations in ``_cli_demo``; this module holds
the commands and the argument parser.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time

import numpy as np

from ._cli_demo import run_demo
from ._cli_tables import (
    CLIError,
    Table,
    _have_pandas,
    _is_missing,
    _one_line,
    _quoted,
    read_table,
    write_csv,
)

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

_ESTIMATORS = {
    # name: (classifier class name, regressor class name)
    "rf": ("RandomForestClassifier", "RandomForestRegressor"),
    "sporf": ("SPORFClassifier", "SPORFRegressor"),
    "morf": ("MORFClassifier", "MORFRegressor"),
    "oblique": ("ObliqueForestClassifier", "ObliqueForestRegressor"),
}
_ESTIMATOR_CHOICES = [*_ESTIMATORS, *(f"{k}-reg" for k in _ESTIMATORS)]


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
        One of ``rf, sporf, morf, oblique``, optionally suffixed ``-reg``.
    task : {"classification", "regression"} or None
        Overrides the task implied by ``name`` (a conflicting suffix is an error).
    params : iterable of (str, object)
        Estimator parameters; unknown names are an error.
    verbose : bool
        Show the tree progress bar (``verbose=1``).
    n_jobs : int

    Returns
    -------
    estimator : obliqueforest estimator
    """
    import obliqueforest

    base, is_reg = (name[:-4], True) if name.endswith("-reg") else (name, False)
    if base not in _ESTIMATORS:
        raise CLIError(f"unknown estimator {name!r}; choose from {', '.join(_ESTIMATOR_CHOICES)}")
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
                f"unknown parameter {key!r} for {cls.__name__}; valid: {', '.join(sorted(valid))}"
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


def _is_regressor(est):
    return getattr(est, "_estimator_type", None) == "regressor" or not hasattr(est, "predict_proba")


def _feature_table(table, target, required=True):
    if target is None:
        if required:
            raise CLIError("--target is required here (--supervised grows the forest on it)")
        return table, None
    if target not in table.names:
        raise CLIError(
            f"target column {target!r} not found; the columns are {_quoted(table.names, 10)}"
        )
    return table.without(target), table.column(target)


def _target_vector(y, target, regression):
    if y.dtype.kind == "O":
        if regression:
            raise CLIError(f"target column {target!r} is not numeric; regression needs numbers")
        if any(_is_missing(v) for v in y):
            raise CLIError(f"target column {target!r} has missing values")
        return np.asarray([str(v) for v in y])
    if y.dtype.kind == "f" and np.isnan(y).any():
        raise CLIError(f"target column {target!r} has missing values")
    if y.dtype.kind == "f" and not regression:
        if np.all(y == np.round(y)):
            return y.astype(np.int64)  # CSV readers make int labels float when a value is blank
        raise CLIError(
            f"target column {target!r} holds continuous values, but the estimator is a "
            "classifier; use a regressor (-e sporf-reg, rf-reg, ...) or --task regression"
        )
    return y


def _features_for_fit(features):
    """Numeric X; a DataFrame when pandas is present so that the model keeps column names."""
    X = features.numeric_matrix()
    if _have_pandas():
        import pandas as pd

        return pd.DataFrame(X, columns=features.names)
    return X


def _fit_estimator(est, X, y):
    from sklearn.utils._param_validation import InvalidParameterError

    from . import ForestError

    try:
        return est.fit(X, y)
    except (InvalidParameterError, ForestError, ValueError) as e:  # bad input, by sklearn's rule
        raise CLIError(f"{type(est).__name__}: {_one_line(e)}") from None


def _cmd_fit(args):
    table = read_table(args.data)
    features, y = _feature_table(table, args.target)
    est = make_estimator(
        args.estimator, args.task, args.param or (), verbose=args.verbose, n_jobs=args.n_jobs
    )
    regression = _is_regressor(est)
    y = _target_vector(y, args.target, regression)
    X = _features_for_fit(features)
    _fit_estimator(est, X, y)
    try:
        est.save(args.model)
    except OSError as e:
        raise CLIError(f"cannot write model {args.model}: {e.strerror or e}") from None
    kind = "regressor" if regression else f"classifier, {len(est.classes_)} classes"
    print(
        f"fitted {type(est).__name__} ({kind}) on {table.n_rows} rows x "
        f"{len(features.names)} features; saved to {args.model}",
        file=sys.stderr,
    )
    return 0


def load_model(path):
    """Loads a model file, turning the expected failures into :class:`CLIError`."""
    from . import ForestError, load

    if not os.path.exists(path):
        raise CLIError(f"no such model file: {path}")
    try:
        return load(path)
    except ForestError as e:
        raise CLIError(f"cannot load model {path}: {_one_line(e)}") from None
    except OSError as e:
        raise CLIError(f"cannot read model {path}: {e.strerror or e}") from None


def _prediction_matrix(est, table, target):
    if target is not None and target in table.names:
        table = table.without(target)
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        names = [str(n) for n in names]
        missing = [n for n in names if n not in table.names]
        if missing:
            raise CLIError(f"the data lacks column(s) {_quoted(missing)} the model was fitted on")
        table = table.select(names)
    elif len(table.names) != est.n_features_in_:
        raise CLIError(
            f"the data has {len(table.names)} feature columns, the model was fitted with "
            f"{est.n_features_in_} (name the target column with --target to drop it)"
        )
    X = table.numeric_matrix()
    if names is not None and _have_pandas():
        import pandas as pd

        return pd.DataFrame(X, columns=names)
    return X


def _cmd_predict(args):
    est = load_model(args.model)
    table = read_table(args.data)
    X = _prediction_matrix(est, table, args.target)
    if args.proba and _is_regressor(est):
        raise CLIError("--proba needs a classifier; this model is a regressor")
    pred = est.predict(X)
    names, columns = ["prediction"], [pred]
    if args.proba:
        proba = est.predict_proba(X)
        names += [f"proba_{c}" for c in est.classes_]
        columns += list(proba.T)
    write_csv(args.out, names, columns)
    if args.out != "-":
        print(f"wrote {len(pred)} predictions to {args.out}", file=sys.stderr)
    return 0


def _cmd_evaluate(args):
    from sklearn.metrics import get_scorer
    from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

    table = read_table(args.data)
    features, y = _feature_table(table, args.target)
    est = make_estimator(
        args.estimator, args.task, args.param or (), verbose=args.verbose, n_jobs=args.n_jobs
    )
    regression = _is_regressor(est)
    y = _target_vector(y, args.target, regression)
    X = features.numeric_matrix()
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
    print(f"{type(est).__name__}, {args.cv}-fold CV on {n} rows x {len(features.names)} features")
    print(f"{scoring}: {np.mean(scores):.4f} ± {sd:.4f}")
    print("folds: " + " ".join(f"{s:.4f}" for s in scores))
    return 0


def _cmd_embed(args):
    try:
        from .autoencoder import ForestAutoencoder
    except ImportError as e:
        raise CLIError(f"ForestAutoencoder is not available in this installation: {e}") from None
    table = read_table(args.data)
    features, y = _feature_table(table, args.target, required=args.supervised)
    X = features.numeric_matrix(complete=True)
    kwargs = {"n_components": args.n_components, "n_jobs": args.n_jobs}
    valid = ForestAutoencoder().get_params(deep=False)
    for key, value in args.param or ():
        if key not in valid:
            raise CLIError(f"unknown parameter {key!r} for ForestAutoencoder")
        kwargs[key] = value
    ae = ForestAutoencoder(**kwargs)
    y_fit = None
    if args.supervised:
        y_fit = _target_vector(y, args.target, regression=y.dtype.kind == "f")
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


def _n_jobs(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("n_jobs must be a positive number or -1, not 0")
    return value


def build_parser():
    """The argparse parser of all subcommands."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="obliqueforest",
        description="Projection decision forests (RF, SPORF, MORF) from the command line.",
    )
    parser.add_argument("--version", action="version", version=f"obliqueforest {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

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

    def model_options(p, target_required=True):
        p.add_argument("data", metavar="DATA", help="CSV (header row) or Parquet file")
        p.add_argument(
            "--target", required=target_required, metavar="COL", help="name of the target column"
        )
        p.add_argument(
            "--estimator",
            "-e",
            default="sporf",
            choices=_ESTIMATOR_CHOICES,
            help="forest; a -reg suffix makes it a regressor (default sporf)",
        )
        p.add_argument(
            "--task",
            choices=("classification", "regression"),
            help="override the task implied by --estimator",
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

    p = sub.add_parser("fit", help="train a forest on a table and save it")
    model_options(p)
    p.add_argument("--model", "-o", required=True, metavar="OUT", help="model file to write")
    p.set_defaults(func=_cmd_fit)

    p = sub.add_parser("predict", help="apply a saved model to a table")
    p.add_argument("model", metavar="MODEL", help="model file written by fit")
    p.add_argument("data", metavar="DATA", help="CSV (header row) or Parquet file")
    p.add_argument("--out", "-o", default="-", metavar="PRED.csv", help="output CSV (default -)")
    p.add_argument("--target", metavar="COL", help="target column to drop if present")
    p.add_argument("--proba", action="store_true", help="also write class probabilities")
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser("evaluate", help="k-fold cross-validation of a forest on a table")
    model_options(p)
    p.add_argument("--cv", type=int, default=5, metavar="K", help="number of folds (default 5)")
    p.add_argument("--scoring", help="scikit-learn scorer (default accuracy or r2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the fold split (default 0)")
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("embed", help="forest-autoencoder embedding of a table")
    p.add_argument("data", metavar="DATA", help="CSV (header row) or Parquet file")
    p.add_argument("--out", "-o", default="-", metavar="EMB.csv", help="output CSV (default -)")
    p.add_argument("--n-components", "-k", type=int, default=2, help="dimension (default 2)")
    p.add_argument(
        "--target",
        metavar="COL",
        help="column left out of the features and copied next to the embedding",
    )
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
