"""What the command line's subcommands share about saved models and their columns:
loading a model file, the feature matrix a model reads from a table (its columns found by
name), the ``--drop``/``--features`` choice, and the argument types of those options."""

from __future__ import annotations

import argparse
import os
import sys

from ._cli_tables import CLIError, _one_line, _quoted


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
        return chosen.select(names).numeric_matrix()
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
    return chosen.numeric_matrix()


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
