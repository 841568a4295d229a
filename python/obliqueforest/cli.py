"""Command line interface: ``obliqueforest {demo,fit,predict,evaluate,embed}``.

``demo`` reruns the SPORF and MORF papers' headline simulations with this library's
forests next to scikit-learn's random forest. The other subcommands train, apply,
cross-validate and embed on CSV or Parquet tables. Expected user errors (missing file,
missing column, non-numeric column, corrupt or newer model file) print one line on stderr
and exit with status 2; nothing else is caught, so real bugs keep their tracebacks.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time

import numpy as np

__all__ = ["main"]

EXIT_USAGE = 2


class CLIError(Exception):
    """A user error reported as one line on stderr and exit status 2."""


# ---------------------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------------------

# (n_train, n_test, n_trees) per size. The full sizes follow the papers: sparse parity
# and orthant with thousands of training rows (Tomita et al. 2020, Sect. 4.2), hv_bars
# with a few hundred images (Perry et al. 2021, Sect. 4).
_DEMO_SIZES = {
    "tiny": {
        "sparse_parity": (200, 200, 10),
        "orthant": (200, 200, 10),
        "trunk": (100, 200, 10),
        "hv_bars": (20, 100, 10),
        "circle_segments": (100, 200, 10),
        "impulse": (100, 200, 10),
    },
    "quick": {
        "sparse_parity": (2000, 5000, 100),
        "orthant": (2000, 5000, 100),
        "trunk": (500, 5000, 100),
        "hv_bars": (50, 2000, 100),
        "circle_segments": (500, 2000, 100),
        "impulse": (500, 2000, 100),
    },
    "full": {
        "sparse_parity": (5000, 10000, 100),
        "orthant": (4000, 10000, 100),
        "trunk": (1000, 10000, 100),
        "hv_bars": (400, 10000, 100),
        "circle_segments": (1000, 10000, 100),
        "impulse": (1000, 10000, 100),
    },
}


def _demo_datasets():
    """name -> (make(n, random_state) -> (X, y), MORF parameters or None)."""
    from . import datasets as ds

    return {
        "sparse_parity": (
            lambda n, rs: ds.make_sparse_parity(n, n_features=20, n_informative=3, random_state=rs),
            None,
        ),
        "orthant": (lambda n, rs: ds.make_orthant(n, n_features=6, random_state=rs), None),
        "trunk": (lambda n, rs: ds.make_trunk(n, n_features=10, random_state=rs), None),
        "hv_bars": (
            lambda n, rs: ds.make_hv_bars(n, image_size=28, random_state=rs),
            {"data_shape": (28, 28), "min_patch_size": (1, 2), "max_patch_size": (2, 9)},
        ),
        "circle_segments": (
            lambda n, rs: ds.make_circle_segments(n, n_features=100, random_state=rs),
            {
                "data_shape": (100,),
                "min_patch_size": 3,
                "max_patch_size": 12,
                "periodic": True,
                "max_features": 0.5,
            },
        ),
        "impulse": (
            lambda n, rs: ds.make_impulse(n, n_features=100, random_state=rs),
            {"data_shape": (100,), "min_patch_size": 2, "max_patch_size": 12, "max_features": 0.3},
        ),
    }


def _demo_models(morf_params, n_trees, n_jobs, seed):
    """(name, unfitted estimator) pairs for one dataset."""
    from sklearn.ensemble import RandomForestClassifier as SkRF

    from . import MORFClassifier, RandomForestClassifier, SPORFClassifier

    common = {"n_estimators": n_trees, "n_jobs": n_jobs, "random_state": seed}
    models = [
        ("sklearn RF", SkRF(**common)),
        ("RF", RandomForestClassifier(**common)),
        ("SPORF", SPORFClassifier(**common)),
    ]
    if morf_params is not None:
        models.append(("MORF", MORFClassifier(**common, **morf_params)))
    return models


def run_demo(size="quick", n_jobs=-1, seed=0, datasets=None, out=None):
    """Runs the demo simulations and prints a markdown table as each row finishes.

    Parameters
    ----------
    size : {"tiny", "quick", "full"}, default="quick"
        Sample sizes and numbers of trees (see ``_DEMO_SIZES``).
    n_jobs : int, default=-1
        Threads for every model (scikit-learn's convention).
    seed : int, default=0
        Seed for the data and the models.
    datasets : list of str or None, default=None
        Subset of dataset names; None runs all.
    out : text stream or None, default=None
        Where the table goes; None is ``sys.stdout``.

    Returns
    -------
    records : list of dict
        One per (dataset, model): dataset, model, n_train, n_test, n_trees, test_error,
        fit_time_s.
    """
    from sklearn.base import clone

    out = sys.stdout if out is None else out
    sizes = _DEMO_SIZES[size]
    available = _demo_datasets()
    names = list(available) if not datasets else datasets
    unknown = [n for n in names if n not in available]
    if unknown:
        raise CLIError(f"unknown demo dataset(s) {unknown}; choose from {list(available)}")
    print(
        f"obliqueforest demo (size={size}, n_jobs={n_jobs}, seed={seed}); "
        "test error = 1 - accuracy on fresh samples",
        file=out,
    )
    print(file=out)
    print("| dataset | n_train | n_test | trees | model | test error | fit time (s) |", file=out)
    print("|---|---:|---:|---:|---|---:|---:|", file=out)
    out.flush()
    records = []
    for i, name in enumerate(names):
        make, morf_params = available[name]
        n_train, n_test, n_trees = sizes[name]
        X, y = make(n_train + n_test, seed + i)
        X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
        for model_name, model in _demo_models(morf_params, n_trees, n_jobs, seed):
            model = clone(model)
            t0 = time.perf_counter()
            model.fit(X_train, y_train)
            fit_time = time.perf_counter() - t0
            error = float(np.mean(model.predict(X_test) != y_test))
            rec = {
                "dataset": name,
                "model": model_name,
                "n_train": n_train,
                "n_test": n_test,
                "n_trees": n_trees,
                "test_error": error,
                "fit_time_s": fit_time,
            }
            records.append(rec)
            print(
                f"| {name} | {n_train} | {n_test} | {n_trees} | {model_name} "
                f"| {error:.4f} | {fit_time:.2f} |",
                file=out,
            )
            out.flush()
    return records


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
# tables
# ---------------------------------------------------------------------------------------

_PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")


class Table:
    """Named columns read from a CSV or Parquet file.

    Parameters
    ----------
    names : list of str
        Column names, in file order.
    columns : list of ndarray of shape (n_rows,)
        One array per column: a numeric dtype, bool, or object (text).
    """

    def __init__(self, names, columns):
        self.names = list(names)
        self.columns = list(columns)

    @property
    def n_rows(self):
        return len(self.columns[0]) if self.columns else 0

    def column(self, name):
        return self.columns[self.names.index(name)]

    def without(self, name):
        """The table without column ``name`` (unchanged if it has no such column)."""
        keep = [i for i, n in enumerate(self.names) if n != name]
        return Table([self.names[i] for i in keep], [self.columns[i] for i in keep])

    def select(self, names):
        return Table(names, [self.column(n) for n in names])

    def numeric_matrix(self, what="feature"):
        """The columns as one float64 matrix of shape (n_rows, n_columns).

        Raises :class:`CLIError` naming any non-numeric column or column with missing values.
        """
        bad = [n for n, c in zip(self.names, self.columns) if c.dtype.kind not in "biuf"]
        if bad:
            raise CLIError(
                f"{what} column(s) {_quoted(bad)} are not numeric; the forests need numeric "
                "features (encode categories as numbers first)"
            )
        if not self.columns:
            raise CLIError(f"the data has no {what} columns")
        X = np.column_stack([c.astype(np.float64) for c in self.columns])
        missing = [n for n, c in zip(self.names, X.T) if not np.isfinite(c).all()]
        if missing:
            raise CLIError(
                f"{what} column(s) {_quoted(missing)} have missing or infinite values; "
                "impute them first"
            )
        return X

    def to_frame(self):
        """A pandas DataFrame of the table (pandas required)."""
        import pandas as pd

        return pd.DataFrame(dict(zip(self.names, self.columns)), columns=self.names)


def _quoted(names, limit=5):
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _have_pandas():
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def read_table(path):
    """Reads a CSV (header row required) or Parquet file into a :class:`Table`.

    Parquet needs pandas and pyarrow; CSV uses pandas when installed and the standard
    library otherwise.
    """
    if not os.path.exists(path):
        raise CLIError(f"no such file: {path}")
    if os.path.isdir(path):
        raise CLIError(f"{path} is a directory, not a data file")
    parquet = str(path).lower().endswith(_PARQUET_SUFFIXES)
    try:
        if parquet:
            try:
                import pandas as pd

                frame = pd.read_parquet(path)
            except ImportError as e:
                raise CLIError(
                    f"reading Parquet needs pandas and pyarrow (pip install pandas pyarrow): {e}"
                ) from None
        elif _have_pandas():
            import pandas as pd

            frame = pd.read_csv(path)
        else:
            return _read_csv_stdlib(path)
    except CLIError:
        raise
    except (OSError, ValueError, UnicodeDecodeError) as e:
        # pandas' parser errors and pyarrow's invalid-file errors are ValueErrors
        kind = "Parquet" if parquet else "CSV"
        raise CLIError(f"cannot read {path} as {kind}: {_one_line(e)}") from None
    except Exception as e:  # pyarrow.lib.ArrowInvalid and friends
        if type(e).__module__.startswith("pyarrow"):
            raise CLIError(f"cannot read {path} as Parquet: {_one_line(e)}") from None
        raise
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        raise CLIError(f"{path} has duplicate column names")
    columns = []
    for c in frame.columns:
        col = frame[c]
        if col.dtype.kind in "biuf":
            columns.append(col.to_numpy())
        elif str(col.dtype) == "boolean" and not col.isna().any():
            columns.append(col.to_numpy(dtype=bool))
        elif col.dtype.kind in "iuf" or str(col.dtype) in {"Int64", "Float64"}:
            columns.append(col.to_numpy(dtype=np.float64, na_value=np.nan))
        else:
            columns.append(col.to_numpy(dtype=object))
    return Table(names, columns)


def _read_csv_stdlib(path):
    import csv

    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise CLIError(f"{path} is empty (a header row is required)")
    names, body = rows[0], rows[1:]
    if any(len(r) != len(names) for r in body):
        raise CLIError(f"cannot read {path} as CSV: rows have differing numbers of fields")
    columns = []
    for j in range(len(names)):
        raw = [r[j] for r in body]
        try:
            columns.append(np.array([float(v) if v.strip() else np.nan for v in raw]))
        except ValueError:
            columns.append(np.array(raw, dtype=object))
    return Table(names, columns)


def _is_missing(v):
    return v is None or (isinstance(v, (float, np.floating)) and np.isnan(v))


def _one_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def write_csv(path, names, columns):
    """Writes columns (each of shape (n_rows,)) with a header to ``path`` ("-" is stdout)."""
    import csv

    def rows():
        for i in range(len(columns[0]) if columns else 0):
            yield [_csv_value(c[i]) for c in columns]

    try:
        if path == "-":
            writer = csv.writer(sys.stdout, lineterminator="\n")
            writer.writerow(names)
            writer.writerows(rows())
            return
        with open(path, "w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(names)
            writer.writerows(rows())
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or e}") from None


def _csv_value(v):
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, np.generic):
        return v.item()
    return v


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
    return cls(**kwargs)


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
    if y.dtype.kind == "f" and not regression and np.all(y == np.round(y)):
        return y.astype(np.int64)  # CSV readers make int labels float when a value is blank
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
    except (InvalidParameterError, ForestError) as e:
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
        from sklearn.utils._param_validation import InvalidParameterError

        from . import ForestError

        if isinstance(e, (InvalidParameterError, ForestError)):
            raise CLIError(f"{type(est).__name__}: {_one_line(e)}") from None
        raise
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
    if _have_pandas():
        X = features.to_frame()
        for name, col in zip(features.names, features.columns):
            if col.dtype.kind == "O" and any(_is_missing(v) for v in col):
                raise CLIError(f"column {name!r} has missing values; impute them first")
    else:
        X = features.numeric_matrix()
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
    parser = argparse.ArgumentParser(
        prog="obliqueforest",
        description="Projection decision forests (RF, SPORF, MORF) from the command line.",
    )
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
