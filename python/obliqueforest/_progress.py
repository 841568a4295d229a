"""Progress bars for long fits. The Rust core counts finished trees in a shared
atomic counter; Python runs the fit in a worker thread (the core releases the GIL)
and redraws a bar from the counter; an exception in the waiting thread (Ctrl-C)
cancels the fit through the same object. Without ``verbose`` nothing of this runs."""

from __future__ import annotations

import sys
import threading

from . import _core


def run_with_progress(fit, total: int, verbose: int, desc: str = "trees"):
    """Calls ``fit(progress)``; with ``verbose > 0`` shows a bar of grown trees on stderr."""
    if not verbose:
        return fit(None)
    progress = _core.Progress()
    result: dict = {}

    def work():
        try:
            result["value"] = fit(progress)
        except BaseException as e:  # re-raised in the caller's thread
            result["error"] = e

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    bar = _make_bar(total, desc)
    shown = 0
    try:
        while thread.is_alive():
            thread.join(0.1)
            done = progress.trees_done
            if done > shown:
                bar.update(done - shown)
                shown = done
    except BaseException:
        # Ctrl-C reaches this (main) thread only: stop the fit, and wait for it so that
        # no thread keeps computing after the exception
        progress.cancel()
        thread.join()
        bar.close()
        raise
    done = progress.trees_done
    if done > shown:
        bar.update(done - shown)
    bar.close()
    if "error" in result:
        raise result["error"]
    return result["value"]


def _make_bar(total, desc):
    try:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, file=sys.stderr, leave=True)
    except ImportError:
        return _TextBar(total, desc)


class _TextBar:
    """A minimal bar for when tqdm is not installed."""

    def __init__(self, total, desc):
        self.total, self.desc, self.n = total, desc, 0

    def update(self, k):
        self.n += k
        sys.stderr.write(f"\r{self.desc}: {self.n}/{self.total}")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")
