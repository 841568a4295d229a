//! Serving a model saved from Python: reads a model file and CSV rows, prints one
//! prediction per row.
//!
//! ```text
//! cargo run --release --example predict -- model.of rows.csv
//! cat rows.csv | cargo run --release --example predict -- model.of
//! ```
//!
//! From any directory (the files are read from the current one), name the crate's manifest:
//! `cargo run --release --manifest-path path/to/obliqueforest/Cargo.toml --example predict
//! -- model.of rows.csv`.
//!
//! Rows are comma-separated cells: numbers for numeric columns, level names for the
//! categorical columns of a model fitted on text columns (the model file carries each
//! column's levels; a level never seen in training reads as missing,
//! [`Model::encode_cells`]); an empty cell (or `NaN`) is a missing value, which each split
//! sends to the side it learned. When the model knows its feature names (a model fitted
//! on named columns: a DataFrame in Python, or `obliqueforest fit`), a first line that
//! names some of them is a header (it must name all of them): the columns are found by name, in any order, and other
//! columns are ignored whatever they hold (an id, a text label). For a model without
//! names, a first line with text in a numeric column is a header. Without a header every
//! line holds exactly the model's features, in its order. Every line has as many fields
//! as the first; a line that does not, a duplicate header name, or a cell that is not a
//! number in a numeric column the model reads is an error naming the line.
//!
//! Output, one line per row: for a classifier the predicted label, then the class
//! probabilities in the order of the model's classes; for a regressor the estimate; for a
//! forest autoencoder the row's embedding (its `transform`); for an isolation forest
//! scikit-learn's label (1 inlier, -1 outlier) and `score_samples` (the lower, the more
//! anomalous); for an unsupervised forest the leaf the row reaches in each tree (`apply`).
//! Floats are printed with `{:?}`, the shortest text that reads back to the same bits.
//! An error (a model file that does not load, a line it cannot read) is one line on
//! stderr and exit status 2.

use ndarray::Array2;
use obliqueforest::model::Cell;
use obliqueforest::{Estimator, Model, Predictions};
use std::error::Error;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        // the reader of stdout went away (`| head`): end quietly, as a shell reports it
        Err(e)
            if e.downcast_ref::<std::io::Error>().map(|e| e.kind())
                == Some(std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::from(141)
        }
        Err(e) => {
            eprintln!("predict: error: {e}"); // one line, as the Python command line does
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
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
    if model.estimator() == Estimator::UnsupervisedRandomForest {
        // an unsupervised forest does not predict: the row's leaves, one per tree
        for row in model.apply(x.view())?.rows() {
            let cells: Vec<String> = row.iter().map(|v| v.to_string()).collect();
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
        Predictions::Inliers(inlier) => {
            // scikit-learn's labels (+1 inlier, -1 outlier) and the anomaly score
            let scores = model.score_samples(x.view())?;
            for (i, s) in inlier.iter().zip(scores) {
                writeln!(out, "{},{s:?}", if *i { 1 } else { -1 })?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// One CSV cell: a missing value when empty, else its text (a number, or a level).
fn cell(field: &str) -> Cell<'_> {
    if field.is_empty() {
        Cell::Missing
    } else {
        Cell::Str(field)
    }
}

/// Whether the first line `fields` is a header: it names some feature of a model with
/// names; for a model without names, it has text where a numeric feature is.
fn is_header(fields: &[&str], model: &Model) -> bool {
    if let Some(names) = model.feature_names() {
        return names.iter().any(|n| fields.contains(&n.as_str()));
    }
    let levels = model.level_names();
    fields.iter().enumerate().any(|(j, f)| {
        let categorical = levels.get(j).is_some_and(|l| !l.is_empty());
        !categorical && !f.is_empty() && f.parse::<f64>().is_err()
    })
}

/// Which fields of a line hold the model's features, in the model's order, from the
/// header (matched by name when the model has names) or, without one, all of them.
fn columns(header: Option<&[&str]>, model: &Model) -> Result<Vec<usize>, String> {
    let p = model.n_features();
    let Some(header) = header else {
        return Ok((0..p).collect());
    };
    for (j, name) in header.iter().enumerate() {
        if header[..j].contains(name) {
            return Err(format!("line 1: the header names column {name:?} twice"));
        }
    }
    match model.feature_names() {
        Some(names) => names
            .iter()
            .map(|name| {
                header
                    .iter()
                    .position(|f| f == name)
                    .ok_or_else(|| format!("line 1: the header has no column {name:?}"))
            })
            .collect(),
        None if header.len() == p => Ok((0..p).collect()),
        None => Err(format!(
            "line 1: the header has {} columns; the model has no column names, so the \
             columns must be its {p} features in order",
            header.len()
        )),
    }
}

/// Reads CSV rows into an n × n_features matrix, in the model's column order.
fn read_rows(input: impl BufRead, model: &Model) -> Result<Array2<f64>, Box<dyn Error>> {
    let p = model.n_features();
    let mut order = Vec::new(); // the fields holding the model's features, in its order
    let mut width = None; // fields per line, set by the first line
    let mut values = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if width.is_none() {
            width = Some(fields.len());
            let header = is_header(&fields, model);
            order = columns(header.then_some(&fields[..]), model)?;
            if header {
                continue;
            }
            if fields.len() != p {
                return Err(format!(
                    "line {}: {} values, the model has {p} features (a header naming the \
                     model's columns lets a file hold others)",
                    n + 1,
                    fields.len()
                )
                .into());
            }
        }
        if Some(fields.len()) != width {
            let expected = width.unwrap_or(p);
            return Err(format!(
                "line {}: {} fields, expected {expected}",
                n + 1,
                fields.len()
            )
            .into());
        }
        let cells = vec![order.iter().map(|&j| cell(fields[j])).collect()];
        let row = model.encode_cells(&cells).map_err(|e| match e {
            obliqueforest::Error::InvalidInput(m) => format!("line {}: {m}", n + 1),
            e => format!("line {}: {e}", n + 1),
        })?;
        values.extend(row.iter());
    }
    Ok(Array2::from_shape_vec((values.len() / p, p), values)?)
}
