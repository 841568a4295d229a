//! Test probes: what the crate's tests observe of the engine (which fast path a node
//! took) and change in it (a fast path switched off, to compare with the plain one;
//! smaller thresholds, to reach a path on small data), in one place instead of test-only
//! items inside the production files.
//!
//! Invariant: outside `cargo test` every probe is inert: [`count`] does nothing,
//! [`on`] is `true`, [`local_limits`] is `None` and [`test_or`] is its production value,
//! each a constant the compiler folds away, so a build for users runs exactly the code it
//! would without them. Under test, counts and switches are process-wide; a test that
//! reads a count or sets a switch holds `hold()` (test builds only) so that such tests
//! run one at a time.

/// What a test may count: a fast path taken.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Count {
    /// Nodes the lane scan of classes scanned (`tree::scan_lanes`).
    LaneScans,
    /// Repeated candidates found and skipped (`tree::repeats`).
    RepeatsFound,
    /// Batches of candidates projected together (`tree::term_batch`).
    TermBatches,
    /// Sparse candidates scanned by their nonzeros (`tree::sparse_split`).
    SparseScans,
    /// Subtrees grown on a copy of their rows (`tree::builder`).
    LocalCopies,
    /// Subtrees grown on another thread (`tree::fork`).
    Fragments,
    /// Halves of a node's candidates scored on another thread (`tree::par_candidates`).
    TakenCandidates,
}

/// A fast path a test may switch off.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Switch {
    /// The lane scan of classes (`tree::scan_lanes::class_scan`).
    Lanes,
    /// Skipping repeated candidates (`tree::repeats`).
    SkipRepeats,
    /// A categorical column's level statistics summed row by row, without sorting the
    /// rows by level (`tree::categorical`).
    LevelsByRow,
    /// A single categorical term's rows binned by level with no projected values written
    /// (`tree::categorical`).
    BinsWithoutValues,
    /// A categorical column of one level at a node scored without its statistics
    /// (`tree::categorical`).
    OneLevel,
    /// A single categorical term at a node of too few rows for two groups of levels
    /// found constant without its statistics (`tree::categorical`).
    FewRowsForLevels,
}

/// Counts one `c`.
#[inline(always)]
pub(crate) fn count(c: Count) {
    #[cfg(test)]
    tested::COUNTS[c as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let _ = c;
}

/// Whether the fast path `s` runs (always, but in tests that switch it off).
#[inline(always)]
pub(crate) fn on(s: Switch) -> bool {
    #[cfg(test)]
    return tested::SWITCHES[s as usize].load(std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(test))]
    {
        let _ = s;
        true
    }
}

/// The limits of growing a subtree on a copy of its rows that a test set, as
/// (bytes, min_rows, min_x_bytes); `None`: the builder's own.
#[inline(always)]
pub(crate) fn local_limits() -> Option<[usize; 3]> {
    #[cfg(test)]
    return *tested::LOCAL_LIMITS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    #[cfg(not(test))]
    None
}

/// The fork threshold a test set on this thread ([`crate::tree`]'s parallel subtrees), to
/// fork the subtrees of small data; `None`: the builder's own. Read where a fit's
/// parameters are checked, on the calling thread ([`crate::params::TreeConfig`]).
#[inline(always)]
pub(crate) fn fork_rows() -> Option<usize> {
    #[cfg(test)]
    return tested::fork_rows();
    #[cfg(not(test))]
    None
}

/// The node size from which a test on this thread scores candidates on several threads
/// ([`crate::tree`]'s parallel candidates); `None`: the search's own. Read as
/// [`fork_rows`] is.
#[inline(always)]
pub(crate) fn par_rows() -> Option<usize> {
    #[cfg(test)]
    return tested::par_rows();
    #[cfg(not(test))]
    None
}

/// `production`, or in the crate's tests `tests` (a threshold lowered so that small test
/// data reaches the path behind it).
pub(crate) const fn test_or(production: usize, tests: usize) -> usize {
    if cfg!(test) {
        tests
    } else {
        production
    }
}

#[cfg(test)]
pub(crate) use tested::{counted, hold, set, set_fork_rows, set_local_limits, set_par_rows};

#[cfg(test)]
mod tested {
    use super::{Count, Switch};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Mutex, MutexGuard, PoisonError};

    pub(super) static COUNTS: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];
    pub(super) static SWITCHES: [AtomicBool; 6] = [const { AtomicBool::new(true) }; 6];
    pub(super) static LOCAL_LIMITS: Mutex<Option<[usize; 3]>> = Mutex::new(None);

    /// The count of `c` so far in this process.
    pub(crate) fn counted(c: Count) -> usize {
        COUNTS[c as usize].load(Ordering::Relaxed)
    }

    /// Switches the fast path `s` on or off.
    pub(crate) fn set(s: Switch, on: bool) {
        SWITCHES[s as usize].store(on, Ordering::Relaxed);
    }

    /// Sets the local-copy limits (see [`super::local_limits`]); `None` for the builder's.
    pub(crate) fn set_local_limits(limits: Option<[usize; 3]>) {
        *LOCAL_LIMITS.lock().unwrap_or_else(PoisonError::into_inner) = limits;
    }

    thread_local! {
        // per test thread: a fork threshold changes the trees, so it must not reach the
        // fits of tests running beside the one that sets it
        static FORK_ROWS: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
        static PAR_ROWS: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
    }

    /// Sets the parallel-candidates threshold of the fits this thread checks (see
    /// [`super::par_rows`]); `None` for the search's.
    pub(crate) fn set_par_rows(rows: Option<usize>) {
        PAR_ROWS.with(|f| f.set(rows));
    }

    pub(super) fn par_rows() -> Option<usize> {
        PAR_ROWS.with(std::cell::Cell::get)
    }

    /// Sets the fork threshold of the fits this thread checks (see [`super::fork_rows`]);
    /// `None` for the builder's.
    pub(crate) fn set_fork_rows(rows: Option<usize>) {
        FORK_ROWS.with(|f| f.set(rows));
    }

    pub(super) fn fork_rows() -> Option<usize> {
        FORK_ROWS.with(std::cell::Cell::get)
    }

    /// Held by a test while it reads counts or changes switches or limits: such tests run
    /// one at a time, and dropping it (also when the test fails) puts every switch and
    /// limit back.
    pub(crate) struct Held {
        _held: MutexGuard<'static, ()>,
    }

    impl Drop for Held {
        fn drop(&mut self) {
            for s in &SWITCHES {
                s.store(true, Ordering::Relaxed);
            }
            set_local_limits(None);
            set_fork_rows(None);
            set_par_rows(None);
        }
    }

    /// [`Held`], once no other test holds it.
    pub(crate) fn hold() -> Held {
        static HELD: Mutex<()> = Mutex::new(());
        Held {
            _held: HELD.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }
}
