//! PostgreSQL text format of values: what psql prints and what a literal or
//! a text-format parameter parses from.
//!
//! CONTRACT (owned by the expr work): `format_datum` must print exactly what
//! PostgreSQL 15 prints for the same value and type (`t`/`f`, numeric scale
//! kept, `1.5`/`Infinity`/`NaN` for floats with shortest round-trip digits,
//! `2024-01-02 03:04:05.123456`, intervals in `postgres` IntervalStyle like
//! `1 year 2 mons 3 days 04:05:06`). `parse_datum` accepts what PostgreSQL's
//! input functions accept for these types.

use super::types::{DataType, ScalarValue};

/// Error parsing a value from text; always SQLSTATE class 22.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// SQLSTATE, e.g. `22P02` (invalid text representation), `22003` (out of range),
    /// `22007` (bad datetime), `22008` (datetime field overflow).
    pub code: &'static str,
    pub message: String,
}

pub fn format_datum(v: &ScalarValue) -> String {
    match v {
        ScalarValue::Int16(x) => x.to_string(),
        ScalarValue::Int32(x) => x.to_string(),
        ScalarValue::Int64(x) => x.to_string(),
        ScalarValue::Float32(x) => (x.0 as f32).to_string(),
        ScalarValue::Float64(x) => x.0.to_string(),
        ScalarValue::Decimal(x) => x.to_string(),
        ScalarValue::Varchar(s) => s.to_string(),
        ScalarValue::Boolean(b) => if *b { "t" } else { "f" }.to_string(),
        ScalarValue::Date(d) => d.to_string(),
        ScalarValue::Timestamp(t) => t.to_string(),
        ScalarValue::Interval(i) => format!("{} mons {} days {} us", i.months, i.days, i.micros),
    }
}

pub fn parse_datum(ty: DataType, s: &str) -> Result<ScalarValue, ParseError> {
    let bad = || ParseError {
        code: "22P02",
        message: format!("invalid input syntax for type {}: \"{}\"", ty.pg_name(), s),
    };
    Ok(match ty {
        DataType::Int16 => ScalarValue::Int16(s.trim().parse().map_err(|_| bad())?),
        DataType::Int32 => ScalarValue::Int32(s.trim().parse().map_err(|_| bad())?),
        DataType::Int64 => ScalarValue::Int64(s.trim().parse().map_err(|_| bad())?),
        DataType::Float32 => ScalarValue::float32(s.trim().parse().map_err(|_| bad())?),
        DataType::Float64 => ScalarValue::float64(s.trim().parse().map_err(|_| bad())?),
        DataType::Decimal => ScalarValue::Decimal(s.trim().parse().map_err(|_| bad())?),
        DataType::Varchar => ScalarValue::varchar(s),
        DataType::Boolean => match s.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "yes" | "on" | "1" => ScalarValue::Boolean(true),
            "f" | "false" | "no" | "off" | "0" => ScalarValue::Boolean(false),
            _ => return Err(bad()),
        },
        DataType::Date => ScalarValue::Date(s.trim().parse().map_err(|_| bad())?),
        DataType::Timestamp => ScalarValue::Timestamp(
            chrono::NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%d %H:%M:%S%.f")
                .map_err(|_| bad())?,
        ),
        DataType::Interval => return Err(bad()),
    })
}
