//! The weight of each training row in one tree ([`RowWeights`]): bootstrap count × sample
//! weight × class weight. Where they are whole bootstrap counts of rows without sample or
//! class weights (a forest's default), a tree keeps a byte a row instead of eight; every
//! read gives the same `f64`, so the trees are the same.

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

    /// The weights in row order.
    pub(crate) fn iter(self) -> impl Iterator<Item = f64> + 'a {
        let (counts, values) = match self {
            RowWeights::Counts(c) => (c, &[][..]),
            RowWeights::Values(v) => (&[][..], v),
        };
        let counts = counts.iter().map(|&c| f64::from(c));
        counts.chain(values.iter().copied())
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
