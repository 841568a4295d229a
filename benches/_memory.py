"""Memory readings of the current process for the benchmarks (Linux ``/proc``)."""

from __future__ import annotations


def status_kb(field):
    """A ``/proc/self/status`` field in kB (``VmRSS``, ``VmHWM``, ...); -1 when absent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def reset_peak_rss():
    """Resets the kernel's high-water mark of the resident set (``VmHWM``); False where
    unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False
