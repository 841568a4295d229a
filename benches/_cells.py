"""Resumable benchmark cells: a JSON dict of finished results, saved atomically."""

from __future__ import annotations

import json
import os


def load_cells(path):
    """The cells saved at ``path`` ({} when there is none yet)."""
    return json.loads(path.read_text()) if path.exists() else {}


def save_cells(cells, path):
    """Writes ``cells`` merged with those other runs saved at ``path`` meanwhile (runs with
    other models may share the file); ``cells`` gains the others too."""
    merged = {**load_cells(path), **cells}
    cells.update(merged)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(merged, indent=0, sort_keys=True))
    os.replace(tmp, path)
