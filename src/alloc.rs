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
}
