//! Copies of some of X's rows, and the gathers that batches of candidates read: a
//! subtree's rows copied once, column by column or row by row
//! ([`FeatureMatrix::gather_rows`]), and a block of rows' features gathered contiguously
//! ([`FeatureMatrix::gather_column`], [`FeatureMatrix::gather_block`]), or a range of
//! rows laid out by row for walks down trees ([`FeatureMatrix::copy_rows_by_row`]).

use std::borrow::Cow;

use super::{row_offsets, At, Bits, ColRef, Column, FeatureMatrix, Store};

/// `out[k] = col[samples[k] * row_stride]`.
#[inline]
fn gather<C: At>(col: C, row_stride: usize, samples: &[u32], out: &mut [f32]) {
    for (o, &s) in out.iter_mut().zip(samples) {
        *o = col.at(s as usize * row_stride);
    }
}

impl FeatureMatrix<'_> {
    /// The rows `rows` of X, in that order, as a matrix of their own, keeping X's hints
    /// (discrete columns, largest value, missing values): every projection and split
    /// search reads the same values from it as from X's rows (`super::tree`'s builder).
    /// Dense X is copied column by column (two-valued columns stay bits), or with `by_row`
    /// row by row (every value a float: what a batch of candidates that share features
    /// gathers fastest, [`Self::gather_block`]), into memory a node's subtree keeps in the
    /// caches; sparse X into columns of the rows' own entries
    /// ([`crate::sparse::SparseStore::gather_rows`]: `None` unless the rows ascend and the copy can be
    /// allocated).
    pub(crate) fn gather_rows(&self, rows: &[u32], by_row: bool) -> Option<FeatureMatrix<'static>> {
        if let Store::Sparse(x) = &self.store {
            return Some(self.with_store(rows.len(), Store::Sparse(x.gather_rows(rows)?)));
        }
        let rs = self.row_stride();
        if by_row {
            // every value as the f32 the columns hold (two-valued columns too)
            let p = self.n_features;
            let mut data = vec![0.0f32; rows.len() * p];
            for j in 0..p {
                let col = self.column(j);
                for (k, (r, ahead)) in row_offsets(rows, rs).enumerate() {
                    col.prefetch(ahead);
                    data[k * p + j] = col.at(r);
                }
            }
            let store = Store::Strided {
                data: Cow::Owned(data),
                row_stride: p,
                col_stride: 1,
            };
            return Some(self.with_store(rows.len(), store));
        }
        let columns = (0..self.n_features)
            .map(|j| match self.column(j) {
                ColRef::Strided(c) => {
                    let mut out = vec![0.0; rows.len()];
                    for (o, (r, ahead)) in out.iter_mut().zip(row_offsets(rows, rs)) {
                        c.prefetch(ahead);
                        *o = c.at(r);
                    }
                    Column::Dense(out)
                }
                ColRef::Binary(Bits(of_row, values)) => {
                    let mut bits = vec![0u64; rows.len().div_ceil(64)];
                    for (k, (r, _)) in row_offsets(rows, rs).enumerate() {
                        bits[k >> 6] |= ((of_row[r >> 6] >> (r & 63)) & 1) << (k & 63);
                    }
                    Column::Binary { bits, values }
                }
            })
            .collect();
        Some(self.with_store(rows.len(), Store::Columns(columns)))
    }

    /// A copy of `n` of X's rows held in `store`, with X's column hints and bounds.
    fn with_store(&self, n: usize, store: Store<'static>) -> FeatureMatrix<'static> {
        FeatureMatrix {
            n_samples: n,
            n_features: self.n_features,
            store,
            discrete: self.discrete.clone(),
            any_discrete: self.any_discrete,
            max_abs: self.max_abs,
            has_missing: self.has_missing,
        }
    }

    /// `out[f * block + k] = x[samples[k], features[f]]` for dense X (sparse X never asks):
    /// the features a batch of explicit candidates sums from ([`crate::tree`]'s
    /// `term_batch`); row by row where X is stored by row (each row's features are then one
    /// or two cache lines), else feature by feature.
    pub(crate) fn gather_block(
        &self,
        features: &[usize],
        samples: &[u32],
        out: &mut [f32],
        block: usize,
    ) {
        debug_assert!(samples.len() <= block && out.len() >= features.len() * block);
        if let Store::Strided {
            data,
            row_stride,
            col_stride,
        } = &self.store
        {
            if *row_stride > 1 {
                for (k, &s) in samples.iter().enumerate() {
                    let row = &data[s as usize * row_stride..];
                    for (f, &j) in features.iter().enumerate() {
                        out[f * block + k] = row[j * col_stride];
                    }
                }
                return;
            }
        }
        for (f, &j) in features.iter().enumerate() {
            self.gather_column(j, samples, &mut out[f * block..][..samples.len()]);
        }
    }

    /// Every column of dense X as one slice over its rows, where X lies so (by column, or a
    /// copy of float columns; no column stored as bits): what the out-of-bag walks read
    /// node by node without a copy. None otherwise (X by row, bits, sparse).
    pub(crate) fn unit_columns(&self) -> Option<Vec<&[f32]>> {
        let n = self.n_samples;
        match &self.store {
            Store::Strided {
                data,
                row_stride: 1,
                col_stride,
            } if n == 0 || *col_stride >= n => Some(
                (0..self.n_features)
                    .map(|j| &data[j * col_stride..][..n])
                    .collect(),
            ),
            Store::Columns(columns) => columns
                .iter()
                .map(|c| match c {
                    Column::Dense(d) => Some(&d[..n]),
                    Column::Binary { .. } => None,
                })
                .collect(),
            _ => None,
        }
    }

    /// Rows `start..start + n` of dense X by row into `out` (`out[i * p + j] = x[start + i,
    /// j]`, the same values): what the out-of-bag walks down a fit's trees read. False,
    /// leaving `out` empty, for sparse X.
    pub(crate) fn copy_rows_by_row(&self, start: usize, n: usize, out: &mut Vec<f32>) -> bool {
        out.clear();
        if self.is_sparse() {
            return false;
        }
        let p = self.n_features;
        out.resize(n * p, 0.0);
        let rs = self.row_stride();
        for j in 0..p {
            let col = self.column(j);
            for (i, o) in out.iter_mut().skip(j).step_by(p.max(1)).enumerate() {
                *o = col.at((start + i) * rs);
            }
        }
        true
    }

    /// `out[k] = x[samples[k], j]` for dense X (sparse X never asks): the columns a
    /// batch of pooled candidates sums from ([`crate::tree`]'s `pooled_batch`), and a
    /// categorical column's values at a node (its `categorical` part).
    pub(crate) fn gather_column(&self, j: usize, samples: &[u32], out: &mut [f32]) {
        let rs = self.row_stride();
        match self.column(j) {
            ColRef::Strided(c) => gather(c, rs, samples, out),
            ColRef::Binary(b) => gather(b, rs, samples, out),
        }
    }
}
