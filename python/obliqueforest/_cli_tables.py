"""Table I/O of the command line: CSV (pandas or the standard library) and Parquet in,
CSV out, and the one rule for feature columns shared by every command."""

from __future__ import annotations

import os
import sys

import numpy as np

__all__ = ["CLIError", "Table", "read_table", "write_csv"]

_F32_MAX = float(np.finfo(np.float32).max)


class CLIError(Exception):
    """A user error reported as one line on stderr and exit status 2."""


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

    def numeric_matrix(self, what="feature", complete=False):
        """The columns as one float64 matrix of shape (n_rows, n_columns).

        The one rule for feature columns, shared by ``fit``, ``evaluate``, ``predict`` and
        ``embed``: every column must be numeric (or bool), without infinite values and
        within float32's range; text columns are refused with the same message by every
        command (encode them first). A missing value (an empty CSV cell, a null) is NaN,
        which the forests handle natively; ``complete`` refuses it too (the autoencoder's
        decoders need complete rows).

        Raises :class:`CLIError` naming any non-numeric column or column with infinite,
        out-of-range or (with ``complete``) missing values.
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
        infinite = [n for n, c in zip(self.names, X.T) if np.isinf(c).any()]
        if infinite:
            raise CLIError(
                f"{what} column(s) {_quoted(infinite)} have infinite values; a missing "
                "value is an empty cell"
            )
        missing = [n for n, c in zip(self.names, X.T) if np.isnan(c).any()]
        if complete and missing:
            raise CLIError(
                f"{what} column(s) {_quoted(missing)} have missing values, which this "
                "command needs complete; impute them first"
            )
        huge = [
            n
            for n, c in zip(self.names, np.abs(np.nan_to_num(X.T)))
            if c.max(initial=0.0) > _F32_MAX
        ]
        if huge:
            raise CLIError(
                f"{what} column(s) {_quoted(huge)} have values beyond float32's range "
                "(|x| > 3.4e38), which the forests compute in; rescale them first"
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
    except BrokenPipeError:
        raise  # the reader went away (`| head`): the entry point ends quietly
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or e}") from None


def _csv_value(v):
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, np.generic):
        return v.item()
    return v
