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
    path : str or None
        The file, for error messages.
    """

    def __init__(self, names, columns, lines=None, path=None):
        self.names = list(names)
        self.columns = list(columns)
        self.lines = lines
        self.path = path
        self._kinds = {}  # kind() of each column, by name (a scan of a text column)

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
        table = Table(names, [self.column(n) for n in names], self.lines, self.path)
        table._kinds = {n: k for n, k in self._kinds.items() if n in table.names}
        return table

    def kind(self, name):
        """What column ``name`` holds: ``"number"``, ``"bool"`` (True/False), ``"text"``,
        ``"empty"`` (every cell missing) or ``"other"`` (values of another type, such as a
        Parquet file's dates)."""
        if name not in self._kinds:
            self._kinds[name] = _kind(self.column(name))
        return self._kinds[name]

    def categorical_names(self):
        """The columns the forests take as categorical: text and True/False ones (as the
        estimators' ``categorical_features="from_dtype"`` takes a DataFrame's)."""
        return [n for n in self.names if self.kind(n) in ("text", "bool")]

    def numeric_matrix(self, what="feature", complete=False):
        """The columns as one float64 matrix of shape (n_rows, n_columns).

        The rule for numeric feature columns, shared by every command: numbers (or
        True/False, as 1/0), without infinite values and within float32's range. A
        missing value (an empty CSV cell, ``NA``, a null) is NaN, which the forests handle
        natively; ``complete`` refuses it too (the autoencoder's decoders need complete
        rows). Tables with text columns go to the estimators by :meth:`frame` instead.

        Raises :class:`CLIError` naming any column of text or other values (and its first
        such cell), or with infinite, out-of-range or (with ``complete``) missing values.
        """
        self._refuse_non_numbers(what, self.names)
        if not self.columns:
            raise CLIError(f"the data has no {what} columns")
        X = np.column_stack([_as_float(c) for c in self.columns])
        if complete:
            self._refuse_missing(what, self.names)
        _check_numbers(what, self.names, X.T)
        return X

    def frame(self, what="feature", complete=False, as_levels=None):
        """The columns as a pandas DataFrame for the estimators, which take its object
        and bool columns as categorical (``categorical_features="from_dtype"``).

        Parameters
        ----------
        what : str
            What the columns are, for messages.
        complete : bool
            Refuse missing values in the numeric columns (as :meth:`numeric_matrix` does;
            the autoencoder takes a missing level as a value of its own).
        as_levels : list of str or None
            The columns passed as they are (text, True/False, or every cell missing: None
            where missing), for the estimator to code by its levels; default: the text and
            True/False columns (:meth:`categorical_names`). The others are numbers, by
            :meth:`numeric_matrix`'s rule.

        Returns
        -------
        frame : pandas.DataFrame of shape (n_rows, n_columns)

        Raises :class:`CLIError` naming pandas when it is not installed, or a column that
        breaks the rules.
        """
        as_levels = set(self.categorical_names() if as_levels is None else as_levels)
        numeric = [n for n in self.names if n not in as_levels]
        self._refuse_non_numbers(what, numeric)
        try:
            import pandas as pd
        except ImportError:
            raise CLIError(
                f"{what} column(s) {_quoted(sorted(as_levels, key=self.names.index))} hold "
                "text or True/False: categorical columns, which need pandas (pip install "
                "pandas); or encode them as numbers"
            ) from None
        if complete:
            self._refuse_missing(what, numeric)
        numbers = [_as_float(self.column(n)) for n in numeric]
        _check_numbers(what, numeric, numbers)
        data = dict(zip(numeric, numbers))
        for n in as_levels:
            column = self.column(n)
            data[n] = column if column.dtype.kind in "bO" else np.full(len(column), None)
        return pd.DataFrame({n: data[n] for n in self.names}, columns=self.names)

    def _refuse_non_numbers(self, what, names):
        """Refuses columns among ``names`` that are to be numbers and hold other values."""
        other = [n for n in names if self.kind(n) == "other"]
        if other:
            raise CLIError(
                f"{what} column(s) {_quoted(other)} hold neither numbers nor text "
                f"({self.first_text(other[0])}); convert them to numbers or text first"
            )
        text = [n for n in names if self.kind(n) == "text"]
        if text:
            raise CLIError(
                f"{what} column(s) {_quoted(text)} are not numeric "
                f"({self.first_text(text[0])}), and this needs numbers"
            )

    def _refuse_missing(self, what, names):
        missing = [n for n in names if _missing_cells(self.column(n)).any()]
        if missing:
            raise CLIError(
                f"{what} column(s) {_quoted(missing)} have missing values, which this "
                "command needs complete; impute them first"
            )

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


def _kind(column):
    """``Table.kind`` of one column."""
    kind = column.dtype.kind
    if kind == "b":
        return "bool"
    if kind in "iuf":
        return "empty" if kind == "f" and np.isnan(column).all() else "number"
    types = {type(v) for v in column if v is not None}
    if not types:
        return "empty"
    if all(issubclass(t, str) for t in types):
        return "text"
    if all(issubclass(t, (bool, np.bool_)) for t in types):
        return "bool"
    return "other"


def _missing_cells(column):
    if column.dtype.kind == "O":
        return np.fromiter((v is None for v in column), dtype=bool, count=len(column))
    return np.isnan(column) if column.dtype.kind == "f" else np.zeros(len(column), bool)


def _as_float(column):
    """A column of numbers, True/False or nothing (None where missing) as float64."""
    if column.dtype.kind == "O":
        return np.array([np.nan if v is None else float(v) for v in column], dtype=np.float64)
    return column.astype(np.float64)


def _check_numbers(what, names, columns):
    """Refuses numeric columns with infinite values or values beyond float32's range."""
    infinite = [n for n, c in zip(names, columns) if np.isinf(c).any()]
    if infinite:
        raise CLIError(
            f"{what} column(s) {_quoted(infinite)} have infinite values; a missing "
            "value is an empty cell"
        )
    huge = [
        n for n, c in zip(names, columns) if np.abs(np.nan_to_num(c)).max(initial=0.0) > _F32_MAX
    ]
    if huge:
        raise CLIError(
            f"{what} column(s) {_quoted(huge)} have values beyond float32's range "
            "(|x| > 3.4e38), which the forests compute in; rescale them first"
        )


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
    table = _read_parquet(path) if str(path).lower().endswith(_PARQUET_SUFFIXES) else read_csv(path)
    table.path = str(path)
    return table


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
        elif (
            col.dtype.kind in "iuf"
            or str(col.dtype) in {"Int64", "Float64"}
            or _numeric_categories(col.dtype)
        ):
            # a dictionary column of numbers reads as the numbers a CSV file would hold
            columns.append(col.to_numpy(dtype=np.float64, na_value=np.nan))
        else:  # text, True/False with nulls ("boolean"), dates, ...: objects, None if null
            values = col.to_numpy(dtype=object, copy=True)  # (pandas may lend a view)
            values[col.isna().to_numpy()] = None
            columns.append(values)
    return Table(names, columns)


def _numeric_categories(dtype):
    categories = getattr(dtype, "categories", None)
    return categories is not None and categories.dtype.kind in "iuf"


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
      cell is missing); all numbers, float64; all ``True``/``False``, bool (an object
      array of bools, None where missing, when a cell is missing); anything else is text
      (an object array of str, None where missing).

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
                if missing.any():  # True/False with gaps: None where missing, as text is
                    values = values.astype(object)
                    values[missing] = None
                out.append(values)
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
