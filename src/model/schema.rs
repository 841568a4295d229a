//! The estimators' parameter schema: which parameters a model file of each estimator may
//! hold, the values each may take, which attributes it may keep, and which projection
//! families its forests may grow. The schema is data
//! (`schema.txt`), generated from the Python estimators' parameter constraints by
//! `python -m obliqueforest._schema` and checked against them by the Python test suite,
//! so the rules live once, in the Python parameter table, and a Rust service's
//! [`super::Model::load`] refuses what the Python package refuses, with the same message
//! (the Python loader reads files through this check first). The file's format is in
//! `python/obliqueforest/_schema.py`.
//!
//! Invariant: [`check`] accepts a header only when every parameter is one of its
//! estimator's, every value takes one of that parameter's forms, and every attribute is
//! one its estimator saves; [`check_family`] only when its projection record names a
//! family its estimator grows.

use super::header::{field, Header, Param};
use crate::error::Result;
use crate::value::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The schema, as generated.
const SCHEMA: &str = include_str!("schema.txt");

/// An interval of numbers, ends closed or open (infinite ends are open).
#[derive(Clone, Copy, Debug)]
struct Range {
    lo: f64,
    lo_closed: bool,
    hi: f64,
    hi_closed: bool,
}

impl Range {
    fn contains(&self, v: f64) -> bool {
        let above = if self.lo_closed {
            v >= self.lo
        } else {
            v > self.lo
        };
        let below = if self.hi_closed {
            v <= self.hi
        } else {
            v < self.hi
        };
        above && below
    }

    fn describe(&self) -> String {
        let end = |v: f64| {
            if v.is_infinite() {
                if v > 0.0 { "inf" } else { "-inf" }.to_string()
            } else {
                v.to_string()
            }
        };
        format!(
            "{}{}, {}{}",
            if self.lo_closed { "[" } else { "(" },
            end(self.lo),
            end(self.hi),
            if self.hi_closed { "]" } else { ")" }
        )
    }
}

/// One form a stored parameter value may take (see the module doc).
#[derive(Clone, Debug)]
enum Form {
    Int(Range),
    Real(Range),
    Float(Range),
    Str(Vec<String>),
    Bool,
    None,
    Integer,
    RandomState,
    Verbose,
    Dict,
    List,
    Projection,
    Any,
    Callable,
}

impl Form {
    fn parse(text: &str) -> Option<Form> {
        if let Some(options) = text.strip_prefix("str:") {
            return Some(Form::Str(options.split(',').map(String::from).collect()));
        }
        for (prefix, make) in [
            ("int", Form::Int as fn(Range) -> Form),
            ("real", Form::Real),
            ("float", Form::Float),
        ] {
            let range = text.strip_prefix(prefix);
            if let Some(range) = range.filter(|r| r.starts_with(['[', '('])) {
                return parse_range(range).map(make);
            }
        }
        Some(match text {
            "bool" => Form::Bool,
            "none" => Form::None,
            "integer" => Form::Integer,
            "random_state" => Form::RandomState,
            "verbose" => Form::Verbose,
            "dict" => Form::Dict,
            "list" => Form::List,
            "projection" => Form::Projection,
            "any" => Form::Any,
            "callable" => Form::Callable,
            _ => return None,
        })
    }

    fn accepts(&self, param: &Param) -> bool {
        let value = match (self, param) {
            (Form::Any, _) => return true,
            (Form::Dict, Param::Map(_)) | (Form::Projection, Param::Projection { .. }) => {
                return true
            }
            (_, Param::Value(v)) => v,
            _ => return false,
        };
        match (self, value) {
            (Form::Int(r), Value::Int(i)) => r.contains(*i as f64),
            (Form::Real(r), Value::Int(i)) => r.contains(*i as f64),
            (Form::Real(r) | Form::Float(r), Value::Float(f)) => r.contains(*f),
            (Form::Str(options), Value::Str(s)) => options.iter().any(|o| o == s),
            (Form::Bool, Value::Bool(_))
            | (Form::None, Value::None)
            | (Form::Integer, Value::Int(_))
            | (Form::RandomState, Value::None)
            | (Form::Verbose, Value::Bool(_)) => true,
            (Form::RandomState, Value::Int(i)) => (0..=i64::from(u32::MAX)).contains(i),
            (Form::Verbose, Value::Int(i)) => *i >= 0,
            (
                Form::List,
                Value::Bools(_)
                | Value::Ints(_)
                | Value::Floats(_)
                | Value::Strs(_)
                | Value::Array { .. },
            ) => true,
            _ => false,
        }
    }

    fn describe(&self) -> String {
        match self {
            Form::Int(r) => format!("an int in {}", r.describe()),
            Form::Real(r) => format!("a number in {}", r.describe()),
            Form::Float(r) => format!("a float in {}", r.describe()),
            Form::Str(options) => {
                let quoted: Vec<String> = options.iter().map(|o| format!("'{o}'")).collect();
                format!("a str among {{{}}}", quoted.join(", "))
            }
            Form::Bool => "a bool".into(),
            Form::None => "None".into(),
            Form::Integer => "an int".into(),
            Form::RandomState => "None or an int in [0, 4294967295]".into(),
            Form::Verbose => "a bool or an int >= 0".into(),
            Form::Dict => "a dict".into(),
            Form::List => "a list".into(),
            Form::Projection => "a projection".into(),
            Form::Any => "anything".into(),
            Form::Callable => "a callable".into(),
        }
    }
}

/// `[a,b)`-style text (after the kind) as a [`Range`].
fn parse_range(text: &str) -> Option<Range> {
    let lo_closed = match text.chars().next()? {
        '[' => true,
        '(' => false,
        _ => return None,
    };
    let hi_closed = match text.chars().last()? {
        ']' => true,
        ')' => false,
        _ => return None,
    };
    let (lo, hi) = text.get(1..text.len() - 1)?.split_once(',')?;
    let number = |s: &str| match s {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => s.parse::<f64>().ok(),
    };
    Some(Range {
        lo: number(lo)?,
        lo_closed,
        hi: number(hi)?,
        hi_closed,
    })
}

/// One estimator's schema.
#[derive(Debug, Default)]
struct EstimatorSchema {
    /// Each parameter and its forms, in the schema's order.
    params: Vec<(String, Vec<Form>)>,
    /// Attribute names, and prefixes (written `PREFIX*`).
    attributes: Vec<String>,
    /// The registry tags of the projection families its forests may grow (`*`: any).
    families: Vec<String>,
}

impl EstimatorSchema {
    fn allows_family(&self, tag: &str) -> bool {
        self.families.iter().any(|f| f == "*" || f == tag)
    }

    fn allows_attribute(&self, name: &str) -> bool {
        self.attributes.iter().any(|a| match a.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => a == name,
        })
    }
}

/// The parsed schema of every estimator, by name.
fn schema() -> &'static HashMap<String, EstimatorSchema> {
    static PARSED: OnceLock<HashMap<String, EstimatorSchema>> = OnceLock::new();
    PARSED.get_or_init(|| parse(SCHEMA).expect("schema.txt is generated well-formed"))
}

/// Parses schema text; `None` at the first line it cannot read.
fn parse(text: &str) -> Option<HashMap<String, EstimatorSchema>> {
    let mut out: HashMap<String, EstimatorSchema> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut words = line.split(' ');
        match (words.next()?, words.next()?, words.next()) {
            ("estimator", name, None) => {
                out.insert(name.to_string(), EstimatorSchema::default());
                current = Some(name.to_string());
            }
            ("param", name, Some(forms)) => {
                let forms = forms.split('|').map(Form::parse).collect::<Option<_>>()?;
                out.get_mut(current.as_ref()?)?
                    .params
                    .push((name.to_string(), forms));
            }
            ("attribute", name, None) => out
                .get_mut(current.as_ref()?)?
                .attributes
                .push(name.to_string()),
            ("families", tags, None) => {
                out.get_mut(current.as_ref()?)?.families =
                    tags.split(',').map(String::from).collect()
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A stored value as Python would print it, shortened.
fn shown(param: &Param) -> String {
    let text = match param {
        Param::Value(
            v @ (Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_)),
        ) => v.to_string(),
        Param::Value(_) => "a list".into(),
        Param::Projection { name, .. } => format!("a {name} projection"),
        Param::Map(_) => "a dict".into(),
    };
    text.chars().take(80).collect()
}

/// Checks a header's parameters and attribute names against its estimator's schema (see
/// the module invariant).
///
/// # Errors
/// [`crate::Error::CorruptModel`] naming the unknown parameters or attributes, or the first
/// parameter whose value takes none of its forms.
pub(super) fn check(h: &Header) -> Result<()> {
    let name = h.estimator.name();
    let Some(schema) = schema().get(name) else {
        return Err(field(
            "estimator",
            format!("{name} has no parameter schema"),
        ));
    };
    let known = |p: &str| schema.params.iter().find(|(k, _)| k == p);
    let mut unknown: Vec<&str> = h
        .params
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| known(k).is_none())
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        return Err(field(
            "params",
            format!("{name} has no parameters {}", python_list(&unknown)),
        ));
    }
    for (k, v) in &h.params {
        let (_, forms) = known(k).expect("checked above");
        if !forms.iter().any(|f| f.accepts(v)) {
            let described: Vec<String> = forms.iter().map(Form::describe).collect();
            return Err(field(
                "params",
                format!(
                    "the '{k}' parameter of {name} must be {}; the file holds {}",
                    described.join(" or "),
                    shown(v)
                ),
            ));
        }
    }
    let mut extra: Vec<&str> = h
        .attributes
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !schema.allows_attribute(k))
        .collect();
    if !extra.is_empty() {
        extra.sort_unstable();
        return Err(field(
            "attributes",
            format!("{name} has no attributes {}", python_list(&extra)),
        ));
    }
    Ok(())
}

/// Checks that the header's projection record names a family its estimator's forests may
/// grow (see the module invariant).
///
/// # Errors
/// [`crate::Error::CorruptModel`] naming `estimator` when it does not.
pub(super) fn check_family(h: &Header) -> Result<()> {
    let name = h.estimator.name();
    let tag = h.projection.tag.as_str();
    let Some(schema) = schema().get(name) else {
        return Err(field(
            "estimator",
            format!("{name} has no parameter schema"),
        ));
    };
    if schema.allows_family(tag) {
        return Ok(());
    }
    let families: Vec<&str> = schema.families.iter().map(String::as_str).collect();
    Err(field(
        "estimator",
        format!(
            "a {name} grows projections of the families {}, but the header records '{tag}'",
            python_list(&families),
        ),
    ))
}

/// Names as Python prints a list of strings: `['a', 'b']`.
fn python_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    format!("[{}]", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_schema_parses_and_names_every_estimator() {
        let parsed = parse(SCHEMA).expect("well-formed");
        for e in super::super::header::Estimator::ALL {
            let s = parsed.get(e.name()).expect("every estimator has a schema");
            assert!(s.params.iter().any(|(k, _)| k == "random_state"));
            assert!(!s.families.is_empty(), "{} grows no family", e.name());
        }
    }

    #[test]
    fn forms_accept_the_values_their_python_constraints_accept() {
        let int = Form::parse("int[1,inf)").unwrap();
        assert!(int.accepts(&Param::Value(Value::Int(1))));
        assert!(!int.accepts(&Param::Value(Value::Int(0))));
        assert!(!int.accepts(&Param::Value(Value::Float(2.0))));
        let real = Form::parse("real[0.0,0.5]").unwrap();
        assert!(real.accepts(&Param::Value(Value::Int(0))));
        assert!(real.accepts(&Param::Value(Value::Float(0.5))));
        assert!(!real.accepts(&Param::Value(Value::Float(f64::NAN))));
        let float = Form::parse("float(0.0,1.0)").unwrap();
        assert!(!float.accepts(&Param::Value(Value::Int(0))));
        assert!(!float.accepts(&Param::Value(Value::Float(1.0))));
        let options = Form::parse("str:gini,entropy").unwrap();
        assert!(options.accepts(&Param::Value(Value::Str("gini".into()))));
        assert!(!options.accepts(&Param::Value(Value::Str("mse".into()))));
        assert!(!Form::parse("callable")
            .unwrap()
            .accepts(&Param::Value(Value::None)));
        assert!(Form::parse("random_state")
            .unwrap()
            .accepts(&Param::Value(Value::Int(4294967295))));
        assert!(!Form::parse("random_state")
            .unwrap()
            .accepts(&Param::Value(Value::Int(-1))));
        assert!(Form::parse("int[1,inf").is_none() && Form::parse("bogus").is_none());
    }
}
