//! Serving a model saved from Python: reads a model file and CSV rows, prints one
//! prediction per row.
//!
//! ```text
//! cargo run --release --example predict -- model.of rows.csv
//! cat rows.csv | cargo run --release --example predict -- model.of
//! ```
//!
//! Rows are comma-separated numbers, one column per feature; an empty cell (or `NaN`) is a
//! missing value, which each split sends to the side it learned. A first line that is not
//! numeric is a header: when the model knows its feature names, the columns are matched
//! to them by name (in any order, extra columns ignored).
//!
//! Output, one line per row: for a classifier the predicted label, then the class
//! probabilities in the order of the model's classes; for a regressor the estimate; for a
//! forest autoencoder the row's embedding (its `transform`).
//! Floats are printed with `{:?}`, the shortest text that reads back to the same bits.

use ndarray::Array2;
use obliqueforest::{Estimator, Model, Predictions};
use std::error::Error;
use std::io::{BufRead, BufReader, Read, Write};

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (model_path, rows_path) = match args.as_slice() {
        [m] => (m, None),
        [m, r] => (m, Some(r)),
        _ => {
            return Err(
                "usage: predict MODEL.of [ROWS.csv]   (rows from stdin without ROWS)".into(),
            )
        }
    };
    let model = Model::load(model_path)?;
    let input: Box<dyn Read> = match rows_path {
        Some(p) => Box::new(std::fs::File::open(p)?),
        None => Box::new(std::io::stdin()),
    };
    let x = read_rows(BufReader::new(input), &model)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if model.estimator() == Estimator::ForestAutoencoder {
        // an autoencoder's "prediction" is its embedding of the rows
        for row in model.transform(x.view())?.rows() {
            let cells: Vec<String> = row.iter().map(|v| format!("{v:?}")).collect();
            writeln!(out, "{}", cells.join(","))?;
        }
        out.flush()?;
        return Ok(());
    }
    match model.predict(x.view())? {
        Predictions::Classes(idx) => {
            let proba = model.predict_proba(x.view())?;
            let classes = model.classes().ok_or("a classifier without classes")?;
            for (i, row) in idx.iter().zip(proba.rows()) {
                write!(out, "{}", classes.get(*i))?;
                for p in row {
                    write!(out, ",{p:?}")?;
                }
                writeln!(out)?;
            }
        }
        Predictions::Values(v) => {
            for y in v {
                writeln!(out, "{y:?}")?;
            }
        }
        Predictions::ClassesPerOutput { k, classes } => {
            // one label per output, comma-separated
            let labels = model.classes().ok_or("a classifier without classes")?;
            let outputs = labels.outputs();
            for row in classes.chunks(k) {
                let cells: Vec<String> = row
                    .iter()
                    .zip(&outputs)
                    .map(|(&c, o)| o.get(c).to_string())
                    .collect();
                writeln!(out, "{}", cells.join(","))?;
            }
        }
        Predictions::ValuesPerOutput { k, values } => {
            for row in values.chunks(k) {
                let cells: Vec<String> = row.iter().map(|v| format!("{v:?}")).collect();
                writeln!(out, "{}", cells.join(","))?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// One CSV cell: a number, or a missing value (NaN) when empty.
fn cell(field: &str) -> Result<f64, std::num::ParseFloatError> {
    if field.is_empty() {
        Ok(f64::NAN)
    } else {
        field.parse::<f64>()
    }
}

/// Reads CSV rows into an n × n_features matrix, in the model's column order.
fn read_rows(input: impl BufRead, model: &Model) -> Result<Array2<f64>, Box<dyn Error>> {
    let p = model.n_features();
    let mut order: Vec<usize> = (0..p).collect();
    let mut values = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let parsed: Result<Vec<f64>, _> = fields.iter().map(|f| cell(f)).collect();
        match parsed {
            Ok(row) => {
                if row.len() < order.iter().max().map_or(0, |m| m + 1) {
                    return Err(
                        format!("line {}: {} values, expected {p}", n + 1, row.len()).into(),
                    );
                }
                values.extend(order.iter().map(|&j| row[j]));
            }
            Err(_) if n == 0 => {
                if let Some(names) = model.feature_names() {
                    order = names
                        .iter()
                        .map(|name| {
                            fields
                                .iter()
                                .position(|f| f == name)
                                .ok_or_else(|| format!("the header has no column {name:?}"))
                        })
                        .collect::<Result<_, _>>()?;
                }
            }
            Err(e) => return Err(format!("line {}: {e}", n + 1).into()),
        }
    }
    Ok(Array2::from_shape_vec((values.len() / p, p), values)?)
}
