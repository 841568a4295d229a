//! Plain values: the one form in which loosely typed data reaches the crate from a caller
//! (the Python boundary converts its objects to it in one place): a projection family's
//! named arguments ([`crate::projection::FamilyArgs`]), and an estimator's parameters and
//! fitted attributes in model files ([`crate::model::Header`]). The serde form is part of the
//! model file format: variants are only ever appended.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A plain value: an estimator parameter, a Python-side fitted attribute, or a named
/// argument of a projection family ([`crate::projection::FamilyArgs`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Value {
    /// Python's None.
    None,
    /// A bool.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A list of bools.
    Bools(Vec<bool>),
    /// A list of integers.
    Ints(Vec<i64>),
    /// A list of floats.
    Floats(Vec<f64>),
    /// A list of strings.
    Strs(Vec<String>),
    /// An n-dimensional array, row-major.
    Array {
        /// The array's shape.
        shape: Vec<u64>,
        /// Its elements, row-major.
        data: ArrayData,
    },
}

/// The elements of an [`Value::Array`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ArrayData {
    /// float64 elements.
    F64(Vec<f64>),
    /// float32 elements.
    F32(Vec<f32>),
    /// int64 elements.
    I64(Vec<i64>),
    /// bool elements.
    Bool(Vec<bool>),
}

impl ArrayData {
    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            ArrayData::F64(v) => v.len(),
            ArrayData::F32(v) => v.len(),
            ArrayData::I64(v) => v.len(),
            ArrayData::Bool(v) => v.len(),
        }
    }
}

impl ArrayData {
    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Value {
    /// A 1-D int64 array.
    pub fn int_array(v: Vec<i64>) -> Value {
        Value::Array {
            shape: vec![v.len() as u64],
            data: ArrayData::I64(v),
        }
    }

    /// A 1-D float64 array.
    pub fn float_array(v: Vec<f64>) -> Value {
        Value::Array {
            shape: vec![v.len() as u64],
            data: ArrayData::F64(v),
        }
    }

    /// A 1-D bool array.
    pub fn bool_array(v: Vec<bool>) -> Value {
        Value::Array {
            shape: vec![v.len() as u64],
            data: ArrayData::Bool(v),
        }
    }

    /// The elements of a 1-D array value, `None` for anything else.
    pub fn as_vector(&self) -> Option<&ArrayData> {
        match self {
            Value::Array { shape, data } if shape.len() == 1 => Some(data),
            _ => None,
        }
    }
}

/// As Python prints it: `None`, `True`, `3`, `0.5`, `'text'`, `[1, 2]` (an array's elements
/// in order, whatever its shape).
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<T>(f: &mut fmt::Formatter<'_>, items: &[T], item: fn(&T) -> String) -> fmt::Result {
            let items: Vec<String> = items.iter().map(item).collect();
            write!(f, "[{}]", items.join(", "))
        }
        let boolean = |b: &bool| if *b { "True" } else { "False" }.to_string();
        match self {
            Value::None => write!(f, "None"),
            Value::Bool(b) => write!(f, "{}", boolean(b)),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(v) => write!(f, "{v:?}"),
            Value::Str(s) => write!(f, "'{s}'"),
            Value::Bools(v)
            | Value::Array {
                data: ArrayData::Bool(v),
                ..
            } => list(f, v, boolean),
            Value::Ints(v)
            | Value::Array {
                data: ArrayData::I64(v),
                ..
            } => list(f, v, |i| i.to_string()),
            Value::Floats(v)
            | Value::Array {
                data: ArrayData::F64(v),
                ..
            } => list(f, v, |x| format!("{x:?}")),
            Value::Array {
                data: ArrayData::F32(v),
                ..
            } => list(f, v, |x| format!("{x:?}")),
            Value::Strs(v) => list(f, v, |s| format!("'{s}'")),
        }
    }
}
