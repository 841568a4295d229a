"""``obliqueforest explain``: the Shapley values of a saved model's predictions
(:mod:`obliqueforest.explain`), one column per feature."""

from __future__ import annotations

import sys
import warnings

import numpy as np

from ._cli_models import (
    _column_options,
    _n_jobs,
    _prediction_matrix,
    _without_targets,
    load_model,
)
from ._cli_tables import CLIError, _one_line, read_table, write_csv


def _explained_model(path):
    """A loaded model ``explain`` can explain, or a CLIError saying why not."""
    est = load_model(path)
    explainable = hasattr(est, "_forest") or hasattr(est, "rotations_")
    if not explainable or _without_targets(est) and not hasattr(est, "score_samples"):
        raise CLIError(
            f"{path} holds a {type(est).__name__}, whose predictions this command cannot "
            "explain (autoencoders and unsupervised forests predict nothing to explain)"
        )
    if isinstance(getattr(est, "classes_", None), list) or getattr(est, "n_outputs_", 1) > 1:
        raise CLIError(
            "explain writes one value per feature and row: for a multi-output model use "
            "obliqueforest.explain.TreeExplainer in Python"
        )
    return est


def _background_rows(est, args):
    """The --background table's feature rows (at most --n-background of them, drawn
    without replacement with seed 0), or None for the path-dependent game."""
    if args.background is None:
        return None
    table = read_table(args.background)
    rows = _prediction_matrix(est, table, args.target, args.drop, args.features)
    if len(rows) > args.n_background:
        keep = np.random.default_rng(0).choice(len(rows), args.n_background, replace=False)
        keep = np.sort(keep)
        rows = rows.iloc[keep] if hasattr(rows, "iloc") else rows[keep]
    return rows


def _cmd_explain(args):
    from . import ForestError
    from .explain import TreeExplainer

    est = _explained_model(args.model)
    table = read_table(args.data)
    X = _prediction_matrix(est, table, args.target, args.drop, args.features)
    background = _background_rows(est, args)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            explainer = TreeExplainer(est, background, n_jobs=args.n_jobs)
            values = explainer.shap_values(X)
            pred = est.predict(X)
    except (ForestError, ValueError) as e:
        raise CLIError(f"{type(est).__name__}: {_one_line(e)}") from None
    names = getattr(est, "feature_names_in_", None)
    features = (
        [str(n) for n in names] if names is not None else [f"x{j}" for j in range(X.shape[1])]
    )
    expected = np.asarray(explainer.expected_value, dtype=np.float64)
    if values.ndim == 3:
        # a classifier: each row's values towards its predicted class's probability
        index = np.searchsorted(est.classes_, pred) if args.cls is None else None
        if args.cls is not None:
            labels = [str(c) for c in est.classes_]
            if args.cls not in labels:
                raise CLIError(f"--class {args.cls!r} is not a class of the model: {labels}")
            index = np.full(len(pred), labels.index(args.cls))
        rows = np.arange(len(pred))
        values = values[rows, :, index]
        head = ["prediction", "class", "expected_value"]
        columns = [pred, est.classes_[index], expected[index]]
    elif hasattr(est, "score_samples"):
        # an isolation forest: the explained output is the mean normalised path length
        head = ["normalised_path_length", "expected_value"]
        columns = [values.sum(axis=1) + expected, np.full(len(pred), expected)]
    else:
        head = ["prediction", "expected_value"]
        columns = [pred, np.full(len(pred), expected)]
    columns += list(values.T)
    write_csv(args.out, head + [f"shap_{f}" for f in features], columns)
    if args.out != "-":
        game = "interventional" if background is not None else "path-dependent"
        print(f"wrote {game} Shapley values of {len(X)} rows to {args.out}", file=sys.stderr)
    return 0


def _add_explain(sub):
    """The ``explain`` subcommand."""
    p = sub.add_parser(
        "explain",
        help="Shapley values (SHAP) of a saved model's predictions, one column per feature",
        description="Exact Shapley values of each row's prediction: for a classifier, of "
        "the probability of the predicted class (or of --class); for an isolation forest, "
        "of the mean normalised path length behind its score. Without --background, the "
        "path-dependent game (shap's tree_path_dependent); with it, the interventional "
        "game against those rows. Each row's values add up to its prediction (or class "
        "probability) minus expected_value. Columns are found by name as in predict.",
    )
    p.add_argument("model", metavar="MODEL", help="model file written by fit")
    p.add_argument("data", metavar="DATA", help="CSV (header row) or Parquet file of rows")
    p.add_argument("--out", "-o", default="-", metavar="SHAP.csv", help="output CSV (default -)")
    p.add_argument("--target", metavar="COL", help="target column to drop if present")
    _column_options(p, ", as given to fit")
    p.add_argument(
        "--background",
        metavar="DATA",
        help="table of background rows: the interventional game (e.g. the training data)",
    )
    p.add_argument(
        "--n-background",
        type=int,
        default=100,
        metavar="N",
        help="background rows used at most, drawn with seed 0 (default 100)",
    )
    p.add_argument(
        "--class", dest="cls", metavar="LABEL", help="explain this class (default: predicted)"
    )
    p.add_argument("--n-jobs", type=_n_jobs, default=-1, help="threads (default -1: all)")
    p.set_defaults(func=_cmd_explain)
