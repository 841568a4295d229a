"""Table I/O of the command line: CSV (the standard library's reader, with or without
pandas) and Parquet (pandas and pyarrow) in, CSV out, and the one rule for feature columns
shared by every command."""

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
        Column names, in file order (non-empty and distinct).
    columns : list of ndarray of shape (n_rows,)
        One array per column: a numeric dtype, bool, or object (text; None where missing).
    lines : ndarray of shape (n_rows,) or None
        The file line each row came from (CSV), for error messages.
    """

    def __init__(self, names, columns, lines=None):
        self.names = list(names)
        self.columns = list(columns)
        self.lines = lines

    @property
    def n_rows(self):
        return len(self.columns[0]) if self.columns else 0

    def where(self, row):
        """Where row ``row`` (0-based) is in the file: ``"line 7"`` or ``"row 6"``."""
        return f"line {self.lines[row]}" if self.lines is not None else f"row {row + 1}"

    def column(self, name):
        return self.columns[self.names.index(name)]

    def without(self, name):
        """The table without column ``name`` (unchanged if it has no such column)."""
        keep = [i for i, n in enumerate(self.names) if n != name]
        return self.select([self.names[i] for i in keep])

    def select(self, names):
        return Table(names, [self.column(n) for n in names], self.lines)

    def numeric_matrix(self, what="feature", complete=False):
        """The columns as one float64 matrix of shape (n_rows, n_columns).

        The one rule for feature columns, shared by ``fit``, ``evaluate``, ``predict`` and
        ``embed``: every column must be numeric (or bool), without infinite values and
        within float32's range; text columns are refused with the same message by every
        command (encode them first). A missing value (an empty CSV cell, ``NA``, a null)
        is NaN, which the forests handle natively; ``complete`` refuses it too (the
        autoencoder's decoders need complete rows).

        Raises :class:`CLIError` naming any non-numeric column (and its first text cell)
        or column with infinite, out-of-range or (with ``complete``) missing values.
        """
        bad = [n for n, c in zip(self.names, self.columns) if c.dtype.kind not in "biuf"]
        if bad:
            raise CLIError(
                f"{what} column(s) {_quoted(bad)} are not numeric ({self.first_text(bad[0])}); "
                "the forests need numeric features (encode categories as numbers first)"
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

    def first_text(self, name):
        """``"'red' on line 2"``: the first cell of a text column that is not a number."""
        for i, v in enumerate(self.column(name)):
            if v is None or isinstance(v, (bool, np.bool_)):
                continue
            try:
                float(v)
            except (TypeError, ValueError):
                return f"{v!r} on {self.where(i)}"
        return "text"


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

    CSV files are read by the standard library, with or without pandas, by one set of
    rules (:func:`read_csv`). Parquet needs pandas and pyarrow.
    """
    if not os.path.exists(path):
        raise CLIError(f"no such file: {path}")
    if os.path.isdir(path):
        raise CLIError(f"{path} is a directory, not a data file")
    if str(path).lower().endswith(_PARQUET_SUFFIXES):
        return _read_parquet(path)
    return read_csv(path)


def _read_parquet(path):
    try:
        import pandas as pd

        frame = pd.read_parquet(path)
    except ImportError as e:
        raise CLIError(
            f"reading Parquet needs pandas and pyarrow (pip install pandas pyarrow): {e}"
        ) from None
    except (OSError, ValueError) as e:
        raise CLIError(f"cannot read {path} as Parquet: {_one_line(e)}") from None
    except Exception as e:  # pyarrow.lib.ArrowInvalid and friends
        if type(e).__module__.startswith("pyarrow"):
            raise CLIError(f"cannot read {path} as Parquet: {_one_line(e)}") from None
        raise
    names = [str(c) for c in frame.columns]
    _check_names(path, names)
    if len(frame) == 0:
        raise CLIError(f"{path} has no data rows")
    columns = []
    for j in range(frame.shape[1]):
        col = frame.iloc[:, j]
        if col.dtype.kind in "biuf":
            columns.append(col.to_numpy())
        elif str(col.dtype) == "boolean" and not col.isna().any():
            columns.append(col.to_numpy(dtype=bool))
        elif col.dtype.kind in "iuf" or str(col.dtype) in {"Int64", "Float64", "boolean"}:
            columns.append(col.to_numpy(dtype=np.float64, na_value=np.nan))
        else:
            values = col.to_numpy(dtype=object)
            values[col.isna().to_numpy()] = None
            columns.append(values)
    return Table(names, columns)


def _check_names(path, names):
    """Column names must be non-empty and distinct: a model keeps them, and ``predict``
    finds its columns by them."""
    for j, name in enumerate(names):
        if not name.strip():
            raise CLIError(f"{path}: column {j + 1} of the header has no name")
    first = {}
    for j, name in enumerate(names):
        if name in first:
            raise CLIError(
                f"{path}: duplicate column name {name!r} (columns {first[name] + 1} and {j + 1})"
            )
        first[name] = j


# Cells that mean "missing" (pandas' default list, so a table reads the same whichever
# tool wrote it); compared after stripping surrounding whitespace.
MISSING_MARKERS = frozenset(
    ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
     "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
)  # fmt: skip
_TRUE, _FALSE = frozenset(["True", "TRUE", "true"]), frozenset(["False", "FALSE", "false"])
# rows converted at a time: bounds the memory held as text to one block
_BLOCK_ROWS = 1 << 16


def read_csv(path):
    """Reads a comma-separated file with a header row into a :class:`Table`.

    The rules, the same with or without pandas installed:

    - the first line is the header: every column needs a name, and names must be distinct;
    - every data line has as many fields as the header (a line with fewer or more is an
      error naming the line); blank lines are skipped;
    - whitespace around a cell or a name is ignored;
    - a cell that is empty or one of :data:`MISSING_MARKERS` (``NA``, ``NaN``, ``null``,
      ...) is missing;
    - a column whose present cells are all integers is int64 (float64 with NaN when a
      cell is missing); all numbers, float64; all ``True``/``False``, bool (float64 0/1
      with NaN when a cell is missing); anything else is text (an object array of str,
      None where missing).

    Raises :class:`CLIError` naming the file and the line for every violation.
    """
    import csv
    import gc

    # the reader makes a list per row: a collection pass per few hundred rows would
    # dominate the time, and the rows are released block by block anyway
    collecting = gc.isenabled()
    gc.disable()
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise CLIError(f"{path} is empty (a header row is required)")
            names = [n.strip() for n in header]
            _check_names(path, names)
            columns = _Columns(len(names))
            block, lines = [], []
            for row in reader:
                if _blank(row, len(names)):
                    continue
                if len(row) != len(names):
                    raise CLIError(
                        f"{path}, line {reader.line_num}: {len(row)} field(s), the header "
                        f"has {len(names)}"
                    )
                block.append(row)
                lines.append(reader.line_num)
                if len(block) == _BLOCK_ROWS:
                    columns.add(block, lines)
                    block, lines = [], []
            if block:
                columns.add(block, lines)
    except CLIError:
        raise
    except UnicodeDecodeError as e:
        raise CLIError(f"cannot read {path} as CSV: it is not UTF-8 text ({e.reason})") from None
    except csv.Error as e:
        raise CLIError(f"cannot read {path} as CSV, line {reader.line_num}: {e}") from None
    except OSError as e:
        raise CLIError(f"cannot read {path}: {e.strerror or e}") from None
    finally:
        if collecting:
            gc.enable()
    if columns.n_rows == 0:
        raise CLIError(f"{path} has a header but no data rows")
    text = columns.text_columns_after_numbers()
    raw = _reread_text(path, text) if text else {}
    return Table(names, columns.arrays(raw), lines=columns.lines())


def _blank(row, n_columns):
    """A blank line (in a table of several columns, also one of only whitespace)."""
    return not row or (n_columns > 1 and len(row) == 1 and not row[0].strip())


def _reread_text(path, which):
    """The cells of columns ``which`` as text (None where missing), read again: for a
    column that looked numeric in its first blocks and turned out to be text, whose first
    blocks were kept as numbers only."""
    import csv

    out = {j: [] for j in which}
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        n_columns = len(next(reader))
        for row in reader:
            if _blank(row, n_columns):
                continue
            for j in which:
                cell = row[j].strip()
                out[j].append(None if cell in MISSING_MARKERS else cell)
    return {j: np.array(v, dtype=object) for j, v in out.items()}


class _Columns:
    """Per-column blocks converted as they are read: numbers stay numbers, so a table
    costs its numeric arrays, not its text."""

    _ORDER = {"empty": 0, "int": 1, "float": 2}

    def __init__(self, n_columns):
        self.kind = ["empty"] * n_columns
        self.blocks = [[] for _ in range(n_columns)]  # (kind, values, missing mask)
        self.line_blocks = []

    @property
    def n_rows(self):
        return sum(len(b) for b in self.line_blocks)

    def lines(self):
        return np.concatenate(self.line_blocks) if self.line_blocks else np.empty(0, int)

    def add(self, rows, lines):
        self.line_blocks.append(np.asarray(lines, dtype=np.int64))
        for j, cells in enumerate(zip(*rows)):
            kind, values, missing = _convert(cells)
            self.kind[j] = _join_kinds(self.kind[j], kind)
            self.blocks[j].append((kind, values, missing))

    def text_columns_after_numbers(self):
        """Text columns some of whose blocks were kept as numbers or booleans."""
        return [
            j
            for j, kind in enumerate(self.kind)
            if kind == "text" and any(b[0] not in ("text", "empty") for b in self.blocks[j])
        ]

    def arrays(self, raw):
        out = []
        for j, kind in enumerate(self.kind):
            blocks = self.blocks[j]
            if j in raw:
                out.append(raw[j])
            elif kind == "text":
                out.append(np.concatenate([_as_text(*b) for b in blocks]))
            elif kind == "bool":
                values = np.concatenate(
                    [np.zeros(len(b[2]), bool) if b[1] is None else b[1] for b in blocks]
                )
                missing = np.concatenate([b[2] for b in blocks])
                out.append(np.where(missing, np.nan, values) if missing.any() else values)
            else:  # int, float, or every cell missing; int64 only without a missing cell
                out.append(np.concatenate([_as_number(*b) for b in blocks]))
        return out


def _join_kinds(a, b):
    if a == b or b == "empty":
        return a
    if a == "empty":
        return b
    if {a, b} == {"int", "float"}:
        return "float"
    return "text"


def _convert(cells):
    """One block of one column (a tuple of str cells) -> (kind, values, missing mask)."""
    n = len(cells)
    for kind, parse, dtype in (("int", int, np.int64), ("float", float, np.float64)):
        try:  # the common case: every cell a number (int and float ignore whitespace)
            values = np.fromiter(map(parse, cells), dtype=dtype, count=n)
        except (ValueError, OverflowError):
            continue
        if kind == "float":  # "nan" parses, and is a missing marker
            return kind, values, np.isnan(values)
        return kind, values, np.zeros(n, dtype=bool)
    stripped = [c.strip() for c in cells]
    missing = np.fromiter((c in MISSING_MARKERS for c in stripped), dtype=bool, count=n)
    present = [c for c, m in zip(stripped, missing) if not m]
    if not present:
        return "empty", None, missing
    for kind, parse, dtype in (("int", int, np.int64), ("float", float, np.float64)):
        try:
            values = np.zeros(n, dtype=dtype)
            values[~missing] = np.fromiter(map(parse, present), dtype=dtype, count=len(present))
            return kind, values, missing
        except (ValueError, OverflowError):
            pass
    if all(c in _TRUE or c in _FALSE for c in present):
        values = np.zeros(n, dtype=bool)
        values[~missing] = [c in _TRUE for c in present]
        return "bool", values, missing
    values = np.array(stripped, dtype=object)
    values[missing] = None
    return "text", values, missing


def _as_text(kind, values, missing):
    if kind == "text":
        return values
    return np.full(len(missing), None, dtype=object)  # an all-missing block


def _as_number(kind, values, missing):
    if kind == "empty":
        return np.full(len(missing), np.nan)
    if kind == "int" and not missing.any():
        return values  # float64 blocks, if any, promote the column when concatenated
    out = values.astype(np.float64)
    out[missing] = np.nan
    return out


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
