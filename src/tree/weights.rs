//! The weight of each training row in one tree ([`RowWeights`]): bootstrap count × sample
//! weight × class weight. Where they are whole bootstrap counts of rows without sample or
//! class weights (a forest's default), a tree keeps a byte a row instead of eight; every
//! read gives the same `f64`, so the trees are the same.

use super::criterion::whole_weight;
use crate::prefetch::prefetch;
use std::ops::Index;

/// `COUNTS[c]` is `c` as an `f64`: what a one-byte count reads as.
static COUNTS: [f64; 256] = {
    let mut table = [0.0; 256];
    let mut c = 0;
    while c < 256 {
        table[c] = c as f64;
        c += 1;
    }
    table
};

/// One tree's row weights, indexed by training row.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RowWeights<'a> {
    /// Whole counts of rows of unit weight, a byte a row.
    Counts(&'a [u8]),
    /// Any weights.
    Values(&'a [f64]),
}

impl<'a> RowWeights<'a> {
    /// Rows.
    pub(crate) fn len(self) -> usize {
        match self {
            RowWeights::Counts(c) => c.len(),
            RowWeights::Values(v) => v.len(),
        }
    }

    /// The sum of the weights when every one is whole ([`whole_weight`]), else `None`
    /// (one-byte counts are, and sum as integers: the same number while the sum is below
    /// 2^53, and above it as close as an `f64` holds).
    pub(crate) fn whole_total(self) -> Option<f64> {
        match self {
            RowWeights::Counts(c) => Some(c.iter().map(|&v| u64::from(v)).sum::<u64>() as f64),
            RowWeights::Values(v) => {
                let mut total = 0.0f64;
                for &w in v {
                    if !whole_weight(w) {
                        return None;
                    }
                    total += w;
                }
                Some(total)
            }
        }
    }

    /// The largest weight (0 for no rows) when every one is whole ([`whole_weight`]), else
    /// `None`.
    pub(crate) fn whole_max(self) -> Option<f64> {
        match self {
            RowWeights::Counts(c) => Some(f64::from(c.iter().copied().max().unwrap_or(0))),
            RowWeights::Values(v) => v
                .iter()
                .try_fold(0.0f64, |most, &w| whole_weight(w).then(|| most.max(w))),
        }
    }

    /// The rows of positive weight, ascending, into `out` (emptied first): one branch-free
    /// pass, a row's index written in place and kept when its weight is positive (a
    /// bootstrap sample leaves about a third of the rows out, in no order a branch could
    /// predict). Writes only the places it keeps and the one after.
    pub(crate) fn positive_rows(self, out: &mut Vec<u32>) {
        out.clear();
        out.reserve(self.len());
        let spare = out.spare_capacity_mut();
        let mut kept = 0;
        match self {
            RowWeights::Counts(c) => {
                for (i, &w) in c.iter().enumerate() {
                    spare[kept].write(i as u32);
                    kept += usize::from(w > 0);
                }
            }
            RowWeights::Values(v) => {
                for (i, &w) in v.iter().enumerate() {
                    spare[kept].write(i as u32);
                    kept += usize::from(w > 0.0);
                }
            }
        }
        // SAFETY: each of the first `kept` places was written (place k holds the k-th row
        // kept: a place is written before `kept` moves past it), and `kept` <= the rows,
        // which the reserved capacity holds
        unsafe { out.set_len(kept) };
    }

    /// Asks for row `i`'s weight ahead of its read.
    #[inline(always)]
    pub(crate) fn prefetch(self, i: usize) {
        match self {
            RowWeights::Counts(c) => prefetch(c, i),
            RowWeights::Values(v) => prefetch(v, i),
        }
    }

    /// The weights of `rows`, in their order (a subtree's copy of its rows).
    pub(crate) fn gather(self, rows: &[u32]) -> OwnedWeights {
        match self {
            RowWeights::Counts(c) => {
                OwnedWeights::Counts(rows.iter().map(|&s| c[s as usize]).collect())
            }
            RowWeights::Values(v) => {
                OwnedWeights::Values(rows.iter().map(|&s| v[s as usize]).collect())
            }
        }
    }
}

impl Index<usize> for RowWeights<'_> {
    type Output = f64;

    #[inline(always)]
    fn index(&self, i: usize) -> &f64 {
        match *self {
            RowWeights::Counts(c) => &COUNTS[c[i] as usize],
            RowWeights::Values(v) => &v[i],
        }
    }
}

impl<'a> From<&'a [f64]> for RowWeights<'a> {
    fn from(v: &'a [f64]) -> Self {
        RowWeights::Values(v)
    }
}

impl<'a> From<&'a Vec<f64>> for RowWeights<'a> {
    fn from(v: &'a Vec<f64>) -> Self {
        RowWeights::Values(v)
    }
}

/// [`RowWeights`] that own their rows' weights.
pub(crate) enum OwnedWeights {
    Counts(Vec<u8>),
    Values(Vec<f64>),
}

impl OwnedWeights {
    /// The weights, borrowed.
    pub(crate) fn view(&self) -> RowWeights<'_> {
        match self {
            OwnedWeights::Counts(c) => RowWeights::Counts(c),
            OwnedWeights::Values(v) => RowWeights::Values(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_rows_totals_and_maxima_read_counts_as_values() {
        let counts: Vec<u8> = vec![0, 2, 0, 0, 1, 255, 0, 3];
        let values: Vec<f64> = counts.iter().map(|&c| f64::from(c)).collect();
        let mut rows = vec![7, 7, 7];
        for w in [RowWeights::Counts(&counts), RowWeights::Values(&values)] {
            w.positive_rows(&mut rows);
            assert_eq!(rows, [1, 4, 5, 7]);
            assert_eq!(w.whole_total(), Some(261.0));
            assert_eq!(w.whole_max(), Some(255.0));
        }
        // none kept, no rows
        RowWeights::Counts(&[0, 0]).positive_rows(&mut rows);
        assert!(rows.is_empty());
        assert_eq!(RowWeights::Counts(&[]).whole_max(), Some(0.0));
        // a fractional, negative or missing weight is not whole, and only positive ones are
        // kept
        for odd in [0.5, -1.0, f64::NAN] {
            let w = [1.0, odd, 2.0];
            assert_eq!(RowWeights::Values(&w).whole_total(), None, "{odd}");
            assert_eq!(RowWeights::Values(&w).whole_max(), None, "{odd}");
            RowWeights::Values(&w).positive_rows(&mut rows);
            let want: &[u32] = if odd > 0.0 { &[0, 1, 2] } else { &[0, 2] };
            assert_eq!(rows, want, "{odd}");
        }
    }
}
