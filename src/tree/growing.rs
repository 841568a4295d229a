//! How many of a fit's trees are left to grow against its threads ([`TreesGrowing`]):
//! what decides whether a fork ([`super::fork`]) offers its right subtree to another
//! thread.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The trees of a fit not yet grown, against its pool's threads: while there are at least
/// as many as threads, every thread has a tree of its own to grow or to take next, so a
/// fork grows both subtrees on its own thread, without the right rows' copy that another
/// thread would need (4 bytes a row of the right child, held while the left subtree grows;
/// along a tree's left side, about its in-bag rows) nor the fragments' workspaces. Once
/// fewer are left, the forks offer their right subtrees to the threads that ran out of
/// trees. The trees are the same either way (a fork's streams do not depend on it).
#[derive(Debug)]
pub(crate) struct TreesGrowing {
    unfinished: AtomicUsize,
    threads: usize,
}

impl TreesGrowing {
    /// `n_trees` to grow on `threads`.
    pub(crate) fn new(n_trees: usize, threads: usize) -> Self {
        TreesGrowing {
            unfinished: AtomicUsize::new(n_trees),
            threads,
        }
    }

    /// Counts one tree grown.
    pub(crate) fn finished_one(&self) {
        // (saturating: the count never wraps, however often it is called)
        let _ = self
            .unfinished
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// Whether a thread may be free for a subtree: fewer trees left than threads.
    pub(crate) fn may_spare(&self) -> bool {
        self.unfinished.load(Ordering::Relaxed) < self.threads
    }
}
