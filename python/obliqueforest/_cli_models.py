"""What the command line's subcommands share about saved models and their columns:
loading a model file, the feature matrix a model reads from a table (its columns found by
name, its categorical columns given as at fit), the ``--drop``/``--features`` choice, and
the argument types of those options."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from ._cli_tables import _FALSE, _TRUE, CLIError, Table, _one_line, _quoted


def _did_you_mean(name, candidates):
    """``" (did you mean 'x'?)"`` for the candidate closest to a misspelt ``name``, or ``""``
    when none is close (difflib's ratio of at least 0.6)."""
    import difflib

    close = difflib.get_close_matches(name, sorted(candidates), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _is_regressor(est):
    return getattr(est, "_estimator_type", None) == "regressor" or not hasattr(est, "predict_proba")


def _without_targets(est):
    """Whether ``est`` is grown on X alone (an isolation or unsupervised forest)."""
    return not est.__sklearn_tags__().target_tags.required


def _chosen_columns(features, all_names, drop=None, keep=None):
    """``features`` without the ``drop`` columns or with only the ``keep`` ones (in file
    order); a name among neither ``features`` nor ``all_names`` (the file's columns) is an
    error naming it."""
    if not drop and not keep:
        return features
    chosen, flag = (drop, "--drop") if drop else (keep, "--features")
    unknown = [n for n in chosen if n not in all_names]
    if unknown:
        hint = _did_you_mean(unknown[0], all_names) if len(unknown) == 1 else ""
        raise CLIError(
            f"{flag} names column(s) {_quoted(unknown)} not in the data{hint}; its columns "
            f"are {_quoted(all_names, 10)}"
        )
    if drop:
        return features.select([n for n in features.names if n not in set(drop)])
    return features.select([n for n in features.names if n in set(keep)])


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


def _prediction_matrix(est, table, target, drop=None, keep=None):
    """The feature matrix for ``est``, columns found by the names the model was fitted
    with (in any order; other columns are ignored, and said so on stderr). A model fitted
    without names (from an array in Python) takes the columns in file order, which then
    must be exactly its features. ``drop`` (``--drop``) and ``keep`` (``--features``)
    choose the columns first, as at fit."""
    chosen = _chosen_columns(table.without(target), table.names, drop, keep)
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        names = [str(n) for n in names]
        missing = [n for n in names if n not in chosen.names]
        removed = [n for n in missing if n in table.names and n != target]
        if removed:
            flag = "--drop removes" if drop else "--features leaves out"
            raise CLIError(
                f"{flag} column(s) {_quoted(removed)}, which the model was fitted on; its "
                f"columns are {_quoted(names, 10)}"
            )
        if missing:
            raise CLIError(
                f"the data lacks column(s) {_quoted(missing)} the model was fitted on; its "
                f"columns are {_quoted(names, 10)}"
            )
        extra = [n for n in chosen.names if n not in set(names)]
        if extra:
            print(
                f"ignoring column(s) {_quoted(extra)}: not features of the model", file=sys.stderr
            )
        return _model_input(est, chosen.select(names), named=True)
    if len(chosen.names) != est.n_features_in_:
        raise CLIError(
            f"the data has {len(chosen.names)} feature columns, the model was fitted with "
            f"{est.n_features_in_} and has no column names (name the target column with "
            "--target, or other columns with --drop, to leave them out)"
        )
    print(
        "the model has no column names (fitted on an array): taking the columns in file order",
        file=sys.stderr,
    )
    return _model_input(est, chosen, named=False)


def _fitted_levels(est):
    """Per feature of ``est``, its levels (a categorical column) or None (numeric)."""
    levels = getattr(est, "categories_", None)
    return [None] * est.n_features_in_ if levels is None else list(levels)


def _held(levels):
    """What a column of these levels held at fit, in the words of :func:`_holds`."""
    if levels is None or levels.dtype.kind in "iuf":
        return "numbers"
    return "True/False" if levels.dtype.kind == "b" else "text"


def _holds(kind):
    return {"number": "numbers", "bool": "True/False"}.get(kind, kind)


def _model_input(est, table, named):
    """X for ``est`` from ``table``, whose columns are the model's features in its order:
    the float matrix of old when every feature was numeric at fit; else a DataFrame
    (``named``) or object array whose categorical columns the model codes by its levels
    (a level it never saw is never an error: the estimators' rule for it applies).

    A column must hold what it held at fit: text (or True/False) for a categorical column
    of text, numbers for a numeric one (True/False read as 1/0 there, as always); a column
    of text that was numbers, or the reverse, is an error naming it. Every cell missing
    suits either. True/False given for a column of text levels, or text for one of
    True/False levels, goes by the reader's words for them (``True``, ``false``, ...).
    """
    levels = _fitted_levels(est)
    where = f" in {table.path}" if table.path else ""
    for name, fitted in zip(table.names, levels):
        now = table.kind(name)
        was = _held(fitted)
        if now in ("empty", "other", "bool"):
            continue  # "other": numeric_matrix and frame name the column
        if was == "numbers" and now == "text" or was != "numbers" and now == "number":
            cell = f" ({table.first_text(name)})" if now == "text" else ""
            raise CLIError(
                f"column {name!r} held {was} in the training data and holds {_holds(now)}"
                f"{where}{cell}: give it as at fit"
            )
    categorical = [n for n, lv in zip(table.names, levels) if lv is not None]
    if not categorical:
        return table.numeric_matrix()
    try:
        import pandas  # noqa: F401  (the estimators code categorical columns with it)
    except ImportError:
        raise CLIError(
            f"the model has categorical column(s) {_quoted(categorical)}, whose levels "
            "need pandas to map (pip install pandas)"
        ) from None
    as_levels = [n for n, lv in zip(table.names, levels) if _held(lv) != "numbers"]
    columns = [
        _as_fitted_kind(table.column(n), table.kind(n), lv) if n in as_levels else table.column(n)
        for n, lv in zip(table.names, levels)
    ]
    X = Table(table.names, columns, table.lines, table.path).frame(as_levels=as_levels)
    return X if named else X.to_numpy(dtype=object)


def _as_fitted_kind(column, kind, levels):
    """A column of True/False for text levels as the levels write True and False (one of
    the reader's words for them, else missing), and text for True/False levels as bools
    where the reader reads it so (other text is an unseen level)."""
    if levels.dtype.kind == "b" and kind == "text":
        return np.array(
            [True if v in _TRUE else False if v in _FALSE else v for v in column], dtype=object
        )
    if levels.dtype.kind != "b" and kind == "bool":
        words = [str(v) for v in levels]
        true = next((w for w in words if w in _TRUE), None)
        false = next((w for w in words if w in _FALSE), None)
        return np.array([None if v is None else true if v else false for v in column], object)
    return column


def _column_list(text):
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected column names separated by commas, got {text!r}")
    return names


def _n_jobs(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("n_jobs must be a positive number or -1, not 0")
    return value


def _column_options(p, note=""):
    """--drop or --features (one of them) on subcommand ``p``."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--drop",
        type=_column_list,
        action="extend",
        metavar="COL[,COL]",
        help=f"columns to leave out of the features (an id, a leak){note}; repeatable",
    )
    group.add_argument(
        "--features",
        type=_column_list,
        action="extend",
        metavar="COL[,COL]",
        help=f"the only columns to use as features, in file order{note}",
    )
