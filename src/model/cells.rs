//! Rows of cells — numbers, strings, missing entries — turned into the numeric rows a
//! model predicts from: a categorical column's string is looked up in the level names the
//! model file carries ([`crate::params::ForestParams::level_names`]), so a service can
//! predict from the strings of a CSV line or a request without an encoding step of its
//! own.

use super::header::Body;
use super::Model;
use crate::error::{Error, Result};
use ndarray::Array2;

/// One cell of a row given to [`Model::encode_cells`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell<'a> {
    /// A number: the value of a numeric column, or a level code of a categorical one.
    Num(f64),
    /// A string: a level of a categorical column (by its name), or a number written out
    /// for a numeric column.
    Str(&'a str),
    /// A missing entry (NaN).
    Missing,
}

impl Model {
    /// Each column's level names (empty for a numeric column); empty when the model's
    /// forests were grown on numeric columns only.
    pub fn level_names(&self) -> &[Vec<String>] {
        match self.body() {
            Body::Forest(f) => &f.params().level_names,
            Body::Encoder(e) => &e.forest.params().level_names,
            Body::Rotation(_) => &[],
        }
    }

    /// The rows of `cells` as the numeric matrix [`Model::predict`] and the other
    /// predictions take: a categorical column's string becomes its level's code, and a
    /// string that names no level (a category never seen in training) the code one past
    /// the last level, which no split's level map holds (a split on the column alone sends
    /// it where it sends missing values, an oblique projection reads it as an average
    /// level; [`crate::columns`]), and `"NaN"` that names no level is missing; a numeric
    /// column's string is parsed as a number (an empty string or `"NaN"` is missing).
    ///
    /// ```
    /// # fn run(model: &obliqueforest::model::Model) -> obliqueforest::error::Result<()> {
    /// use obliqueforest::model::Cell;
    /// // a model fitted (in Python or Rust) on columns (carat: number, clarity: category)
    /// let x = model.encode_cells(&[
    ///     vec![Cell::Num(0.31), Cell::Str("VS2")],
    ///     vec![Cell::Str("1.2"), Cell::Missing],
    /// ])?;
    /// let prices = model.predict(x.view())?;
    /// # let _ = prices; Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the row and column of a row of the wrong length, a
    /// string in a numeric column that is no number, or a string in a categorical column
    /// of a model without level names.
    pub fn encode_cells(&self, cells: &[Vec<Cell<'_>>]) -> Result<Array2<f64>> {
        let p = self.n_features();
        let names = self.level_names();
        let mut out = Array2::<f64>::zeros((cells.len(), p));
        for (i, row) in cells.iter().enumerate() {
            if row.len() != p {
                return Err(Error::InvalidInput(format!(
                    "row {i} has {} cells; the model takes {p} columns",
                    row.len()
                )));
            }
            for (j, cell) in row.iter().enumerate() {
                let levels = names.get(j).filter(|l| !l.is_empty());
                out[[i, j]] = match (*cell, levels) {
                    (Cell::Missing, _) => f64::NAN,
                    (Cell::Num(v), _) => v,
                    // a level never seen in training: the code past the last, which no
                    // split's level map holds
                    (Cell::Str(s), Some(levels)) => match levels.iter().position(|l| l == s) {
                        Some(c) => c as f64,
                        // "NaN" (no level of that name): missing, as in a numeric column
                        None if s.trim().eq_ignore_ascii_case("nan") => f64::NAN,
                        None => levels.len() as f64,
                    },
                    (Cell::Str(s), None) => parse_number(s, i, j, self.is_categorical(j))?,
                };
            }
        }
        Ok(out)
    }

    /// Whether column `j` is categorical in the model's forests.
    fn is_categorical(&self, j: usize) -> bool {
        let kinds = match self.body() {
            Body::Forest(f) => &f.params().categorical,
            Body::Encoder(e) => &e.forest.params().categorical,
            Body::Rotation(_) => return false,
        };
        kinds.get(j).is_some_and(|&l| l > 0)
    }
}

/// A numeric column's string as a number (empty or "nan": missing).
fn parse_number(s: &str, i: usize, j: usize, categorical: bool) -> Result<f64> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("nan") {
        return Ok(f64::NAN);
    }
    t.parse::<f64>().map_err(|_| {
        Error::InvalidInput(if categorical {
            format!(
                "{s:?} in column {j} (row {i}): the column is categorical but the model \
                 file carries no level names; give its level code as a number"
            )
        } else {
            format!("{s:?} in column {j} (row {i}) is not a number (the column is numeric)")
        })
    })
}
