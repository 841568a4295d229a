//! A hint to the cache ([`prefetch`]) for the loops that read rows of large arrays in an
//! order of their own: the split search's gathers of X over a node's rows, and its reads
//! of the rows' weights and targets in sorted order. On large data these arrays outgrow
//! the caches, and each read waits for memory unless it was asked for some rows earlier.

/// Rows ahead at which the hot loops ask for what they will read.
pub(crate) const AHEAD: usize = 16;

/// Asks the cache for `v[i]`: a hint, nothing when `i` is out of range or the target has
/// no prefetch instruction. Results never depend on it.
#[inline(always)]
pub(crate) fn prefetch<T>(v: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(r) = v.get(i) {
        // SAFETY: a prefetch loads nothing architecturally, and the address is in bounds
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (r as *const T).cast::<i8>(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, i);
}
