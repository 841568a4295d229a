//! The crate's thread pools and the one rule turning `n_jobs` into a thread count.
//!
//! Work runs in rayon pools of this module only, never in rayon's global pool: a pool's
//! threads do not survive `fork()`, and only pools we own can be forgotten and built
//! again. `thread_pool` keeps at most [`MAX_POOLS`] pools (the least recently used goes)
//! and forgets every pool when the process id changed, so a forked child builds fresh
//! pools instead of waiting forever on threads that were not copied into it.

use crate::error::{Error, Result};
use std::sync::{Arc, Mutex, OnceLock};

/// The most thread pools kept at once. Each distinct thread count gets its own pool (a
/// pool cannot be resized); a long-running process predicting with many different
/// `n_jobs` would otherwise keep every pool it ever built, and all their threads.
pub const MAX_POOLS: usize = 4;

/// Cached pools, the least recently used first, and the process they were built in.
struct Pools {
    pid: u32,
    pools: Vec<(usize, Arc<rayon::ThreadPool>)>,
}

static POOLS: Mutex<Pools> = Mutex::new(Pools {
    pid: 0,
    pools: Vec::new(),
});

impl Pools {
    /// The pool of `n` threads, built when missing; keeps at most `keep` pools.
    fn get(&mut self, n: usize, keep: usize) -> Result<Arc<rayon::ThreadPool>> {
        let pid = std::process::id();
        if self.pid != pid {
            // a fork: the pools' threads exist only in the parent. Their memory (and any
            // lock a parent thread held at the fork) is abandoned, never touched
            for (_, pool) in self.pools.drain(..) {
                std::mem::forget(pool);
            }
            self.pid = pid;
        }
        if let Some(at) = self.pools.iter().position(|(size, _)| *size == n) {
            let entry = self.pools.remove(at);
            let pool = entry.1.clone();
            self.pools.push(entry);
            return Ok(pool);
        }
        let pool = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("obliqueforest-{i}"))
                .build()
                .map_err(|e| Error::Internal(format!("thread pool of {n} threads: {e}")))?,
        );
        if self.pools.len() >= keep {
            // its threads end once calls still using it return their handle
            self.pools.remove(0);
        }
        self.pools.push((n, pool.clone()));
        Ok(pool)
    }
}

/// A pool of `n` threads (see the module doc for how pools are kept). Building a pool
/// spawns threads, which would dominate short predictions and the many small fits of a
/// rotation ensemble, so pools are reused.
///
/// # Errors
/// [`Error::Internal`] when the operating system refuses new threads.
pub(crate) fn thread_pool(n: usize) -> Result<Arc<rayon::ThreadPool>> {
    POOLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get(n.max(1), MAX_POOLS)
}

/// The number of cores this process may use (CPU affinity and cgroup quotas included),
/// read once.
pub fn available_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The number of threads `n_jobs` stands for, scikit-learn's and joblib's rule: `None`
/// is 1, a positive count is capped at the available cores, and -1 is every core, -2 all
/// but one, and so on (at least 1).
///
/// # Errors
/// [`Error::InvalidParameter`] for `n_jobs == 0`.
pub fn n_threads(n_jobs: Option<i64>) -> Result<usize> {
    let cores = available_cores();
    match n_jobs {
        None => Ok(1),
        Some(0) => Err(crate::error::invalid(
            "n_jobs",
            "0 threads has no meaning; use None (1), a positive number or -1 (all cores)",
        )),
        Some(j) if j > 0 => Ok(usize::try_from(j).unwrap_or(usize::MAX).min(cores)),
        Some(j) => {
            let spare = usize::try_from(j.unsigned_abs() - 1).unwrap_or(usize::MAX);
            Ok(cores.saturating_sub(spare).max(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_threads_follows_joblib_and_caps_at_the_cores() {
        let cores = available_cores();
        assert_eq!(n_threads(None), Ok(1));
        assert_eq!(n_threads(Some(1)), Ok(1));
        assert_eq!(n_threads(Some(-1)), Ok(cores));
        assert_eq!(n_threads(Some(-2)), Ok(cores.saturating_sub(1).max(1)));
        assert_eq!(n_threads(Some(i64::MIN)), Ok(1));
        assert_eq!(n_threads(Some(i64::MAX)), Ok(cores));
        assert_eq!(n_threads(Some(10_000)), Ok(cores));
        assert!(matches!(
            n_threads(Some(0)),
            Err(Error::InvalidParameter { name: "n_jobs", .. })
        ));
    }

    #[test]
    fn pool_cache_keeps_the_most_recently_used_pools() {
        let mut cache = Pools {
            pid: std::process::id(),
            pools: Vec::new(),
        };
        let one = cache.get(1, 3).unwrap();
        for n in 2..=6 {
            cache.get(n, 3).unwrap();
            cache.get(1, 3).unwrap(); // keeps 1 recently used
        }
        let sizes: Vec<usize> = cache.pools.iter().map(|(n, _)| *n).collect();
        assert_eq!(sizes, vec![5, 6, 1]);
        assert!(Arc::ptr_eq(&one, &cache.get(1, 3).unwrap()));
        // a changed process id (a fork) forgets every pool
        cache.pid = cache.pid.wrapping_add(1);
        let fresh = cache.get(1, 3).unwrap();
        assert!(!Arc::ptr_eq(&one, &fresh));
        assert_eq!(cache.pools.len(), 1);
    }
}
