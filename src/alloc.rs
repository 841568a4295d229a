//! Fallible allocation of buffers whose size comes from user data (rows, columns, classes,
//! stored entries): a request the allocator refuses is an [`Error::OutOfMemory`] naming
//! what was asked for, never an abort of the process.

use crate::error::{Error, Result};

/// `len` copies of `value`, or [`Error::OutOfMemory`] naming `what` when the allocation
/// (or its size in bytes) cannot be had.
///
/// # Errors
/// [`Error::OutOfMemory`].
pub fn filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    let bytes = len.checked_mul(std::mem::size_of::<T>());
    match bytes {
        Some(b) if b <= isize::MAX as usize && v.try_reserve_exact(len).is_ok() => {
            v.resize(len, value);
            Ok(v)
        }
        _ => Err(Error::OutOfMemory(format!(
            "{what}: {len} values ({:.1} GiB) cannot be allocated",
            len as f64 * std::mem::size_of::<T>() as f64 / (1u64 << 30) as f64
        ))),
    }
}

/// `rows * width` default values (a result of `rows` rows of `width` values each), or
/// [`Error::OutOfMemory`] when the product overflows or cannot be allocated.
///
/// # Errors
/// [`Error::OutOfMemory`].
pub fn table<T: Clone + Default>(rows: usize, width: usize, what: &str) -> Result<Vec<T>> {
    match rows.checked_mul(width) {
        Some(len) => filled(len, T::default(), what),
        None => Err(Error::OutOfMemory(format!(
            "{what}: {rows} rows x {width} values overflow the address space"
        ))),
    }
}

/// Makes room for `n` elements in `v` and, when that is large, asks the kernel to back the
/// buffer with transparent huge pages (Linux `madvise(MADV_HUGEPAGE)`; a hint, nothing
/// elsewhere or when refused). For the per-row arrays the split search reads in an order
/// of its own (a tree's row weights and targets, in sorted-value order; a node's sort
/// buffers, scattered into): with 4 KiB pages nearly every such read of a large node
/// misses the TLB. Pages already touched keep their size, so call it before filling.
pub(crate) fn reserve_huge<T>(v: &mut Vec<T>, n: usize) {
    if v.capacity() >= n {
        return;
    }
    v.reserve(n - v.len());
    advise_huge(v);
}

/// A vector with room for `n` elements, advised as [`reserve_huge`] says.
pub(crate) fn with_capacity_huge<T>(n: usize) -> Vec<T> {
    let mut v = Vec::new();
    reserve_huge(&mut v, n);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge<T>(v: &Vec<T>) {
    /// Smallest buffer worth backing with huge pages (two of them).
    const HUGE_MIN_BYTES: usize = 4 << 20;
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_MIN_BYTES {
        return;
    }
    // the whole pages inside the buffer
    let page = 4096usize;
    let start = v.as_ptr() as usize;
    let first = start.next_multiple_of(page);
    let end = (start + bytes) & !(page - 1);
    if end > first {
        // SAFETY: madvise only changes how the kernel backs pages of this process's own
        // mapping [first, end), which lies inside the vector's allocation; it reads and
        // writes no memory, and a failure (an old kernel, THP disabled) is ignored.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge<T>(_v: &Vec<T>) {}

/// Hands the memory freed so far back to the system (glibc's `malloc_trim`; nothing
/// elsewhere). A tree's growth frees buffers of every size as it goes (its node tables'
/// earlier capacities, the rows of its subtrees, their workspaces); glibc keeps such
/// memory in each thread's arena unless it lies at the top of a heap, so without this the
/// process keeps the garbage of every tree a thread grew, about 24 bytes a row and
/// thread beside the buffers in use (`benches/tree_memory.py --trees 8 --threads 2`).
/// Called once a tree is grown, it costs a walk of the free lists, microseconds to a few
/// milliseconds against the tree's growth.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn release_free_memory() {
    // SAFETY: malloc_trim only returns free pages of glibc's own heaps to the kernel; it
    // touches no memory the program holds, and takes the allocator's locks itself.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn release_free_memory() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_requests_are_errors_not_aborts() {
        assert!(matches!(
            filled(usize::MAX / 2, 0u64, "x"),
            Err(Error::OutOfMemory(_))
        ));
        assert!(matches!(
            table::<f64>(1 << 40, 1 << 30, "x"),
            Err(Error::OutOfMemory(_))
        ));
        // 2^46 bytes: no machine this runs on has them
        let e = table::<f64>(1 << 40, 8, "predictions")
            .unwrap_err()
            .to_string();
        assert!(e.contains("predictions"), "{e}");
        assert_eq!(table::<u8>(3, 2, "x").unwrap(), vec![0; 6]);
    }

    #[test]
    fn huge_reservations_keep_contents_and_make_room() {
        // small (no advice) and large (advised on Linux) buffers behave as Vec::reserve
        for n in [10usize, 3 << 20] {
            let mut v: Vec<u32> = vec![7, 8, 9];
            reserve_huge(&mut v, n);
            assert!(v.capacity() >= n);
            assert_eq!(v, [7, 8, 9]);
            v.resize(n, 1);
            assert_eq!(v[n - 1], 1);
            let cap = v.capacity();
            reserve_huge(&mut v, n / 2); // enough room already: nothing moves
            assert_eq!(v.capacity(), cap);
            let w: Vec<f64> = with_capacity_huge(n);
            assert!(w.is_empty() && w.capacity() >= n);
        }
    }
}
