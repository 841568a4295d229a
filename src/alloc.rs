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
    if bytes >= HUGE_MIN_BYTES {
        advise_pages(v.as_ptr() as usize, bytes, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge<T>(_v: &Vec<T>) {}

/// Maps every page of `v` now, in one call (Linux `madvise(MADV_POPULATE_WRITE)`; nothing
/// elsewhere, on a kernel before 5.14 or for a buffer under [`MAPPED_BYTES`]), instead of
/// a page fault at the first write of each 4 KiB page: for a large result the caller
/// fills at once, where a fault a page costs about as much again as writing it.
#[cfg(target_os = "linux")]
pub(crate) fn prefault<T>(v: &mut [T]) {
    let bytes = std::mem::size_of_val(v);
    if bytes >= MAPPED_BYTES {
        advise_pages(v.as_mut_ptr() as usize, bytes, libc::MADV_POPULATE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn prefault<T>(_v: &mut [T]) {}

/// `madvise(advice)` on the whole pages inside the `bytes` bytes at `start`, which must
/// be memory this process owns (a vector's allocation); a refusal (an old kernel, the
/// advice switched off) is ignored.
#[cfg(target_os = "linux")]
fn advise_pages(start: usize, bytes: usize, advice: libc::c_int) {
    let page = 4096usize;
    let first = start.next_multiple_of(page);
    let end = (start + bytes) & !(page - 1);
    if end > first {
        // SAFETY: the advice used here (huge pages, populate) only changes how the kernel
        // backs pages of this process's own mapping [first, end), inside the caller's
        // allocation; it changes no value the program reads.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, advice);
        }
    }
}

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

/// A global allocator that maps every allocation of at least [`MAPPED_BYTES`] straight
/// from the kernel (`mmap`, grown with `mremap`) and unmaps it when it is freed, and hands
/// smaller ones to the system allocator. glibc maps large blocks too, but raises that
/// threshold to the size of each mapped block freed (up to 32 MiB), so a fit's per-row
/// buffers soon come from the heap of the thread that asked, and their memory stays
/// there once freed: the rows a subtree grown on another thread copies, a node table's
/// earlier capacity, the workspaces of a tree's fragments. With this allocator that memory
/// goes back to the system when it is freed. Eight trees on two threads, 2×10^6 rows ×
/// 32: 29.2 bytes a row and tree instead of 40.1 (RF, exact; 20.9 instead of 33.3 with the
/// histogram splitter, SPORF 30.7 instead of 46.2); two trees on two threads: 40.0 instead
/// of 42.7 (SPORF 40.3 instead of 46.5), the fit about 2% slower (the freed buffers' pages
/// are mapped afresh); `benches/results/tree_memory.md`.
///
/// The Python extension installs it for the memory its Rust code allocates (the
/// interpreter and NumPy keep theirs). A Rust program embedding the crate may install it
/// the same way:
///
/// ```
/// #[global_allocator]
/// static ALLOCATOR: obliqueforest::alloc::MappedLarge = obliqueforest::alloc::MappedLarge;
/// ```
///
/// Elsewhere than on Linux (no `mremap`) every request goes to the system allocator.
#[derive(Clone, Copy, Debug, Default)]
pub struct MappedLarge;

/// Allocations of at least this many bytes (256 KiB) are mapped by [`MappedLarge`]: the
/// per-row buffers of nodes of 32,768 rows and more, never the small vectors of a node's
/// search. A fit of 40 trees on 70,000 rows took as long as with the system allocator
/// (1.274 s against 1.266, medians of 3, `benches/trim_cost.py`); a threshold of 128 KiB
/// made it about 3% slower (more of each tree's buffers mapped afresh).
pub const MAPPED_BYTES: usize = 1 << 18;

#[cfg(target_os = "linux")]
mod mapped {
    use super::MAPPED_BYTES;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::ptr::null_mut;

    const PAGE: usize = 4096;
    /// A block the kernel would not map (the process's limit on mappings reached) comes from
    /// the system allocator instead, this much larger: it starts half a page past a page
    /// boundary, so that it is never taken for a mapping, with the system's pointer just
    /// before it.
    const FALLBACK_PAD: usize = PAGE + 8;

    /// Whether [`super::MappedLarge`] maps an allocation of `size` bytes aligned to
    /// `align` (at most half a page: a fallback block is aligned to that much only).
    #[inline]
    fn mapped(size: usize, align: usize) -> bool {
        size >= MAPPED_BYTES && align <= PAGE / 2
    }

    /// `size` bytes (zeroed when `zeroed`): a fresh private anonymous mapping, page-aligned,
    /// or where the kernel refuses one, a [`FALLBACK_PAD`] block of the system allocator's;
    /// null when neither can be had.
    unsafe fn take(size: usize, zeroed: bool) -> *mut u8 {
        // SAFETY: a new anonymous private mapping touches no existing memory
        let p = unsafe {
            libc::mmap(
                null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            return p.cast(); // a new mapping reads as zeros
        }
        unsafe { fallback(size, zeroed) }
    }

    /// [`take`]'s block from the system allocator: `size` bytes starting half a page past a
    /// page boundary, the system's pointer in the 8 bytes before them; null when refused.
    unsafe fn fallback(size: usize, zeroed: bool) -> *mut u8 {
        let Ok(outer) = Layout::from_size_align(size.saturating_add(FALLBACK_PAD), 16) else {
            return null_mut();
        };
        // SAFETY: `outer` has a non-zero size; the block returned starts at least 8 bytes
        // into it and ends within it (`FALLBACK_PAD` covers the shift to half a page and
        // the 8 bytes before it), and those 8 bytes, aligned as a usize, keep its start
        let raw = unsafe {
            if zeroed {
                System.alloc_zeroed(outer)
            } else {
                System.alloc(outer)
            }
        };
        if raw.is_null() {
            return null_mut();
        }
        let base = raw as usize + 8;
        let block = base + (PAGE / 2 + PAGE - base % PAGE) % PAGE;
        unsafe {
            ((block - 8) as *mut usize).write(raw as usize);
        }
        block as *mut u8
    }

    /// Frees a block of `size` bytes that [`take`] returned.
    unsafe fn give(block: *mut u8, size: usize) {
        if block as usize % PAGE == 0 {
            // SAFETY: a mapping of `size` bytes `take` made
            unsafe {
                libc::munmap(block.cast(), size);
            }
        } else {
            // SAFETY: a fallback block: the system's pointer lies just before it, and the
            // block was allocated with this outer layout
            unsafe {
                let raw = ((block as usize - 8) as *const usize).read() as *mut u8;
                let outer = Layout::from_size_align_unchecked(size + FALLBACK_PAD, 16);
                System.dealloc(raw, outer);
            }
        }
    }

    /// A block for `layout` (zeroed when `zeroed`): mapped when large ([`take`]), else the
    /// system allocator's.
    #[inline]
    unsafe fn allocate(layout: Layout, zeroed: bool) -> *mut u8 {
        match (mapped(layout.size(), layout.align()), zeroed) {
            (true, _) => unsafe { take(layout.size(), zeroed) },
            (false, false) => unsafe { System.alloc(layout) },
            (false, true) => unsafe { System.alloc_zeroed(layout) },
        }
    }

    // SAFETY: every block is freed by the allocator that made it: whether a block is large
    // depends only on its size and alignment, which Rust passes unchanged to `dealloc` and
    // `realloc` (the size a block was allocated or last reallocated with), and a large
    // block is a mapping exactly when it is page-aligned ([`take`]); large blocks are
    // aligned to at least half a page, which satisfies any alignment `mapped` admits; a
    // failed request returns null, as `GlobalAlloc` requires.
    unsafe impl GlobalAlloc for super::MappedLarge {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            unsafe { allocate(layout, false) }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            unsafe { allocate(layout, true) }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if mapped(layout.size(), layout.align()) {
                unsafe { give(ptr, layout.size()) }
            } else {
                unsafe { System.dealloc(ptr, layout) }
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let (was, will) = (
                mapped(layout.size(), layout.align()),
                mapped(new_size, layout.align()),
            );
            if !was && !will {
                return unsafe { System.realloc(ptr, layout, new_size) };
            }
            if was && will && ptr as usize % PAGE == 0 {
                // SAFETY: `ptr` is a mapping of `layout.size()` bytes this allocator made;
                // the kernel moves it if it cannot grow where it is
                let p = unsafe {
                    libc::mremap(ptr.cast(), layout.size(), new_size, libc::MREMAP_MAYMOVE)
                };
                if p != libc::MAP_FAILED {
                    return p.cast();
                }
            }
            // a block of the other kind, or a fallback one: a new block, the contents copied
            // SAFETY: `new_size` is non-zero and, with the old alignment, a valid layout
            // (`realloc`'s contract); the copy stays within both blocks
            unsafe {
                let new = Layout::from_size_align_unchecked(new_size, layout.align());
                let q = self.alloc(new);
                if !q.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                q
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_block_the_kernel_would_not_map_comes_from_the_system_and_goes_back_there() {
            for size in [MAPPED_BYTES, MAPPED_BYTES + 13] {
                for zeroed in [false, true] {
                    // SAFETY: a fallback block, used within its size and freed once
                    unsafe {
                        let block = fallback(size, zeroed);
                        assert_eq!(block as usize % PAGE, PAGE / 2);
                        if zeroed {
                            assert!((0..size).step_by(4093).all(|i| *block.add(i) == 0));
                        }
                        block.write_bytes(9, size);
                        assert_eq!(*block.add(size - 1), 9);
                        give(block, size); // the system's free, not munmap (which would fail)
                    }
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
// SAFETY: every request goes to the system allocator, unchanged.
unsafe impl std::alloc::GlobalAlloc for MappedLarge {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mapped_allocator_keeps_contents_across_its_threshold() {
        use std::alloc::{GlobalAlloc, Layout};
        let a = MappedLarge;
        let small = Layout::from_size_align(1000, 8).unwrap();
        // SAFETY: each block is used within its size and freed once with its last layout
        unsafe {
            let p = a.alloc_zeroed(Layout::from_size_align(MAPPED_BYTES, 8).unwrap());
            assert!(!p.is_null());
            assert!((0..MAPPED_BYTES).step_by(4093).all(|i| *p.add(i) == 0));
            a.dealloc(p, Layout::from_size_align(MAPPED_BYTES, 8).unwrap());
            // small -> large -> larger -> small, the first bytes kept at each step
            let p = a.alloc(small);
            for i in 0..1000 {
                *p.add(i) = (i % 251) as u8;
            }
            let p = a.realloc(p, small, 3 * MAPPED_BYTES);
            assert!(!p.is_null());
            *p.add(3 * MAPPED_BYTES - 1) = 7;
            let big = Layout::from_size_align(3 * MAPPED_BYTES, 8).unwrap();
            let p = a.realloc(p, big, 40 * MAPPED_BYTES);
            assert!(!p.is_null());
            assert_eq!(*p.add(3 * MAPPED_BYTES - 1), 7);
            let bigger = Layout::from_size_align(40 * MAPPED_BYTES, 8).unwrap();
            let p = a.realloc(p, bigger, 1000);
            assert!((0..1000).all(|i| *p.add(i) == (i % 251) as u8));
            a.dealloc(p, small);
            // an alignment beyond a page goes to the system allocator, whatever the size
            let wide = Layout::from_size_align(MAPPED_BYTES, 1 << 13).unwrap();
            let p = a.alloc(wide);
            assert_eq!(p as usize % (1 << 13), 0);
            a.dealloc(p, wide);
        }
    }

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
