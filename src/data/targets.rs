//! The targets as the criteria read them, and the checks of targets and sample weights
//! against what the criteria's sums can hold.

use crate::alloc::with_capacity_huge;
use crate::error::{Error, Result};

/// What the trees predict.
#[derive(Clone, Debug)]
pub enum Targets {
    /// Class codes `0..n_classes`.
    Classes(Vec<u32>),
    /// Real values.
    Values(Vec<f64>),
    /// Class codes of `k` outputs, row-major (row `s`, output `o` at `s * k + o`), each
    /// already offset into the concatenation of the outputs' class blocks: the entry is
    /// the row's slot in a node's statistics (`offset[o] + class`).
    MultiClasses {
        /// Slots, n × k row-major.
        slots: Vec<u32>,
        /// Outputs.
        k: usize,
    },
    /// Real values of `k` outputs, row-major.
    MultiValues {
        /// Values, n × k row-major.
        y: Vec<f64>,
        /// Outputs.
        k: usize,
    },
    /// No targets ([`crate::params::Task::Unsupervised`]): the split rule reads the
    /// projected values.
    Unlabelled,
}

impl Targets {
    /// The targets of `rows`, in that order (a subtree's own copy, read where its rows'
    /// features are: see [`crate::data::FeatureMatrix::gather_rows`]).
    pub(crate) fn gather_rows(&self, rows: &[u32]) -> Targets {
        fn pick<T: Copy>(v: &[T], k: usize, rows: &[u32]) -> Vec<T> {
            let mut out = Vec::with_capacity(rows.len() * k);
            for &s in rows {
                out.extend_from_slice(&v[s as usize * k..(s as usize + 1) * k]);
            }
            out
        }
        match self {
            Targets::Classes(c) => Targets::Classes(pick(c, 1, rows)),
            Targets::Values(y) => Targets::Values(pick(y, 1, rows)),
            &Targets::MultiClasses { ref slots, k } => Targets::MultiClasses {
                slots: pick(slots, k, rows),
                k,
            },
            &Targets::MultiValues { ref y, k } => Targets::MultiValues {
                y: pick(y, k, rows),
                k,
            },
            Targets::Unlabelled => Targets::Unlabelled,
        }
    }

    /// The number of distinct classes among the targets (1 for regression).
    pub fn n_present(&self) -> usize {
        match self {
            Targets::Values(_) | Targets::MultiValues { .. } | Targets::Unlabelled => 1,
            Targets::Classes(c) | Targets::MultiClasses { slots: c, .. } => {
                // a flag a class up to the largest code, unless the codes are far more
                // spread than the rows (a caller's huge class count): then sorted codes
                let n_slots = c.iter().max().map_or(0, |&m| m as usize + 1);
                if n_slots > 4 * c.len() + 1024 {
                    let mut codes = c.clone();
                    codes.sort_unstable();
                    codes.dedup();
                    return codes.len();
                }
                let mut seen = vec![false; n_slots];
                c.iter()
                    .filter(|&&k| !std::mem::replace(&mut seen[k as usize], true))
                    .count()
            }
        }
    }

    /// Converts the targets of `task` given as floats: `y` holds n values, or n × k
    /// row-major for the multi-output tasks; class codes must be whole numbers in
    /// `0..n_classes` of their output.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a NaN/inf target or a class code out of range.
    pub fn for_task(y: &[f64], task: &crate::params::Task) -> Result<Self> {
        use crate::params::Task;
        match task {
            Task::Classification { n_classes } => Self::new(y, Some(*n_classes)),
            Task::Regression => Self::new(y, None),
            Task::Unsupervised { .. } if y.is_empty() => Ok(Targets::Unlabelled),
            Task::Unsupervised { .. } => Err(Error::InvalidInput(format!(
                "a forest without targets takes no y, got {} values",
                y.len()
            ))),
            Task::MultiRegression { n_outputs } => match Self::new(y, None)? {
                Targets::Values(y) => Ok(Targets::MultiValues { y, k: *n_outputs }),
                _ => Err(Error::Internal("regression targets".into())),
            },
            Task::MultiClassification { n_classes } => {
                let k = n_classes.len();
                let mut offsets = Vec::with_capacity(k);
                let mut total = 0usize;
                for &c in n_classes {
                    offsets.push(total);
                    total = total.saturating_add(c);
                }
                if total >= u32::MAX as usize {
                    return Err(Error::InvalidInput("too many classes".into()));
                }
                let slots = y
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        let o = i % k;
                        if v >= 0.0 && v < n_classes[o] as f64 && whole_code(v) {
                            Ok((offsets[o] + v as usize) as u32)
                        } else if !v.is_finite() {
                            Err(Error::InvalidInput(format!(
                                "y contains NaN or infinity at row {}, output {o}",
                                i / k
                            )))
                        } else {
                            Err(Error::InvalidInput(format!(
                                "class code {v} of output {o} is not in 0..{}",
                                n_classes[o]
                            )))
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Targets::MultiClasses { slots, k })
            }
        }
    }

    /// Converts targets given as floats; class codes must be whole numbers in `0..n_classes`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a NaN/inf target or a class code out of range.
    pub fn new(y: &[f64], n_classes: Option<usize>) -> Result<Self> {
        if let Some(pos) = y.iter().position(|v| !v.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "y contains NaN or infinity at position {pos}"
            )));
        }
        // read at random by the split search: huge pages (`with_capacity_huge`)
        match n_classes {
            None => {
                let mut values = with_capacity_huge(y.len());
                values.extend_from_slice(y);
                Ok(Targets::Values(values))
            }
            Some(k) => {
                let mut codes = with_capacity_huge(y.len());
                for &v in y {
                    if !(v >= 0.0 && v < k as f64 && whole_code(v)) {
                        return Err(Error::InvalidInput(format!(
                            "class code {v} is not in 0..{k}"
                        )));
                    }
                    codes.push(v as u32);
                }
                Ok(Targets::Classes(codes))
            }
        }
    }
}

/// Whether a class code (a target at least 0) is a whole number a `u32` holds, as the
/// targets store codes: a round trip through `u32`, where `f64::fract` is a libm call per
/// row on the baseline x86-64 target (a fit checks every target).
#[inline]
fn whole_code(v: f64) -> bool {
    f64::from(v as u32) == v
}

/// The range kept for (total sample weight) × (rows), the most weight a tree may give its
/// root: the criteria square weight sums (gini) and add weight × y² (squared error) in
/// f64, so weights beyond it are rescaled by a power of two, which changes no split and no
/// leaf value (every weight sum scales exactly), only the stored node weights. Weights
/// people use are far inside it, and kept bit for bit.
const WEIGHT_SCALE_RANGE: (f64, f64) = (1e-100, 1e100);

/// Checks optional sample weights against the number of rows, rescaled (by a power of
/// two) when their total is so large or small that the criteria's sums would overflow or
/// underflow.
///
/// # Errors
/// [`Error::InvalidInput`] for a length mismatch, a negative or non-finite weight, or
/// weights that are all zero.
pub fn check_weights(w: Option<&[f64]>, n: usize) -> Result<Vec<f64>> {
    match w {
        None => Ok(vec![1.0; n]),
        Some(w) => {
            if w.len() != n {
                return Err(Error::InvalidInput(format!(
                    "sample_weight has {} entries but X has {n} rows",
                    w.len()
                )));
            }
            if w.iter().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(Error::InvalidInput(
                    "sample_weight must be finite and non-negative".into(),
                ));
            }
            if w.iter().all(|&v| v == 0.0) {
                return Err(Error::InvalidInput(
                    "sample_weight is zero for every row".into(),
                ));
            }
            // log2(total · n), summed relative to the largest weight so that neither
            // weights near f64::MAX nor subnormal ones overflow or vanish
            let largest = w.iter().fold(0.0f64, |m, &v| m.max(v));
            let relative: f64 = w.iter().map(|v| v / largest).sum();
            let log_total = largest.log2() + relative.log2() + (n as f64).log2();
            let (lo, hi) = WEIGHT_SCALE_RANGE;
            if (lo.log2()..=hi.log2()).contains(&log_total) {
                return Ok(w.to_vec());
            }
            // total·n near 1 (weights near 1/n); exact, since a power of two (applied in
            // two steps: 2^±1100 is not an f64)
            let k = -(log_total.round() as i32);
            let (half, rest) = (f64::powi(2.0, k / 2), f64::powi(2.0, k - k / 2));
            Ok(w.iter().map(|v| v * half * rest).collect())
        }
    }
}

/// Checks that regression targets keep the squared-error sums finite with sample weights
/// summing to `total`: every weighted sum of y² a tree forms is at most (total weight) ×
/// (rows) × max y².
///
/// # Errors
/// [`Error::InvalidInput`] naming the largest target when those sums would overflow f64.
pub fn check_target_scale(y: &Targets, total: f64) -> Result<()> {
    let (Targets::Values(y) | Targets::MultiValues { y, .. }) = y else {
        return Ok(());
    };
    let largest = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    // a margin of 16 for the criterion's own sums of such terms
    if total * y.len() as f64 * largest * largest < f64::MAX / 16.0 {
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "y has values up to {largest:e} in magnitude: the squared-error sums over {} rows \
         overflow float64; divide y by a constant (predictions scale the same way)",
        y.len()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `whole_code` calls a code whole exactly when `f64::fract` does, for codes a `u32`
    /// holds (the edges included), and rejects whole numbers beyond `u32`, which the codes'
    /// storage could not hold.
    #[test]
    fn whole_codes_are_the_ones_fract_calls_whole() {
        let edges = [
            0.0,
            -0.0,
            1.0,
            2.5,
            0.5,
            1e-300,
            f64::MIN_POSITIVE,
            3.0 - f64::EPSILON * 2.0,
            1e9,
            1e9 + 0.5,
            f64::from(u32::MAX),
            f64::from(u32::MAX) - 0.5,
        ];
        for v in edges {
            assert_eq!(whole_code(v), v.fract() == 0.0, "{v}");
        }
        assert!(!whole_code(f64::from(u32::MAX) + 1.0));
        assert!(!whole_code(1e300));
        // and the targets take or refuse codes accordingly
        assert!(Targets::new(&[0.0, 1.0, 2.0, -0.0], Some(3)).is_ok());
        assert!(Targets::new(&[0.0, 1.5], Some(3)).is_err());
        assert!(Targets::new(&[0.0, 3.0], Some(3)).is_err());
    }
}
