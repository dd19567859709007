//! The `datagen` connector: rows generated deterministically from their
//! offset in the stream, so that a split resumes after a recovery at the
//! offset committed with the last epoch and emits no row twice.

use std::collections::BTreeMap;

use arrow_array::{Int16Array, Int32Array, Int64Array};

use crate::common::{datum_ref, Column, ColumnBuilder, DataType, Datum, Row, ScalarValue};
use rust_decimal::Decimal;

/// How one column is generated.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum FieldGen {
    /// `start, start+1, ... end` (inclusive); the source ends after `end`.
    Sequence { start: i64, end: Option<i64> },
    /// Uniform in `[min, max]` (numbers), or `length` random letters
    /// (strings), derived from `seed` and the row's offset.
    Random {
        min: f64,
        max: f64,
        seed: u64,
        length: usize,
    },
    /// The hidden row id of a table without primary key.
    RowId,
}

/// A datagen source: what to generate and how fast.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DatagenDesc {
    pub fields: Vec<(DataType, FieldGen)>,
    pub rows_per_second: u64,
}

/// Error in datagen options (SQLSTATE 22023 invalid_parameter_value).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DatagenOptionError(pub String);

impl DatagenDesc {
    /// Build from `WITH (...)` options and the table's columns
    /// (`(name, type, is_row_id)`), using RisingWave's option names:
    /// `rows_per_second`, `fields.<col>.kind` (`sequence` | `random`),
    /// `.start`, `.end`, `.min`, `.max`, `.seed`, `.length`.
    pub fn from_options(
        options: &BTreeMap<String, String>,
        columns: &[(String, DataType, bool)],
    ) -> Result<Self, DatagenOptionError> {
        let num = |key: &str| -> Result<Option<f64>, DatagenOptionError> {
            options
                .get(key)
                .map(|v| {
                    v.trim().parse::<f64>().map_err(|_| {
                        DatagenOptionError(format!("invalid value for option \"{key}\": \"{v}\""))
                    })
                })
                .transpose()
        };
        let rows_per_second = num("rows_per_second")?.unwrap_or(10.0).max(1.0) as u64;
        let mut fields = Vec::new();
        for (i, (name, ty, is_row_id)) in columns.iter().enumerate() {
            if *is_row_id {
                fields.push((*ty, FieldGen::RowId));
                continue;
            }
            let p = format!("fields.{name}");
            let kind = options
                .get(&format!("{p}.kind"))
                .map(|s| s.to_ascii_lowercase())
                .unwrap_or_else(|| "random".into());
            let gen = match kind.as_str() {
                "sequence" => {
                    if !ty.is_integer() {
                        return Err(DatagenOptionError(format!(
                            "sequence generator needs an integer column, \"{name}\" is {ty}"
                        )));
                    }
                    FieldGen::Sequence {
                        start: num(&format!("{p}.start"))?.unwrap_or(0.0) as i64,
                        end: num(&format!("{p}.end"))?.map(|e| e as i64),
                    }
                }
                "random" => FieldGen::Random {
                    min: num(&format!("{p}.min"))?.unwrap_or(0.0),
                    max: num(&format!("{p}.max"))?.unwrap_or(32767.0),
                    seed: num(&format!("{p}.seed"))?.unwrap_or(i as f64) as u64,
                    length: num(&format!("{p}.length"))?.unwrap_or(10.0) as usize,
                },
                other => {
                    return Err(DatagenOptionError(format!(
                        "unknown datagen kind \"{other}\" for column \"{name}\""
                    )))
                }
            };
            fields.push((*ty, gen));
        }
        Ok(DatagenDesc {
            fields,
            rows_per_second,
        })
    }

    /// Total rows if a sequence column is bounded (the shortest wins).
    pub fn total_rows(&self) -> Option<u64> {
        self.fields
            .iter()
            .filter_map(|(_, g)| match g {
                FieldGen::Sequence {
                    start,
                    end: Some(e),
                } => Some((e - start + 1).max(0) as u64),
                _ => None,
            })
            .min()
    }

    /// The row at `offset`.
    pub fn row(&self, offset: u64) -> Row {
        self.fields
            .iter()
            .map(|(ty, g)| gen_value(*ty, g, offset))
            .collect()
    }

    /// The rows at these offsets, a column at a time (the same values as
    /// [`Self::row`]).
    pub fn columns(&self, offsets: &[u64]) -> Vec<Column> {
        self.fields
            .iter()
            .map(|(ty, g)| {
                let ints = || offsets.iter().map(|&o| gen_int(g, o));
                match (ty, g) {
                    (_, FieldGen::RowId) | (DataType::Int64, _) => {
                        Column::Int64(Int64Array::from_iter_values(ints()))
                    }
                    (DataType::Int32, _) => {
                        Column::Int32(Int32Array::from_iter_values(ints().map(|v| v as i32)))
                    }
                    (DataType::Int16, _) => {
                        Column::Int16(Int16Array::from_iter_values(ints().map(|v| v as i16)))
                    }
                    _ => {
                        let mut b = ColumnBuilder::new(None, offsets.len());
                        for &o in offsets {
                            b.push(datum_ref(&gen_value(*ty, g, o)));
                        }
                        b.finish()
                    }
                }
            })
            .collect()
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The integer [`gen_value`] gives (before narrowing to the column's type).
fn gen_int(g: &FieldGen, offset: u64) -> i64 {
    match g {
        FieldGen::RowId => (1i64 << 62) | offset as i64,
        FieldGen::Sequence { start, .. } => start + offset as i64,
        FieldGen::Random { min, max, seed, .. } => {
            let r = mix(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ mix(offset));
            let unit = (r >> 11) as f64 / (1u64 << 53) as f64;
            let span = (max - min).max(0.0);
            (min + (unit * (span + 1.0)).floor()).min(*max) as i64
        }
    }
}

fn gen_value(ty: DataType, g: &FieldGen, offset: u64) -> Datum {
    match g {
        FieldGen::RowId => Some(ScalarValue::Int64((1i64 << 62) | offset as i64)),
        FieldGen::Sequence { start, .. } => {
            let v = start + offset as i64;
            Some(match ty {
                DataType::Int16 => ScalarValue::Int16(v as i16),
                DataType::Int32 => ScalarValue::Int32(v as i32),
                _ => ScalarValue::Int64(v),
            })
        }
        FieldGen::Random {
            min,
            max,
            seed,
            length,
        } => {
            let r = mix(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ mix(offset));
            let unit = (r >> 11) as f64 / (1u64 << 53) as f64;
            let span = (max - min).max(0.0);
            let int = || (min + (unit * (span + 1.0)).floor()).min(*max) as i64;
            Some(match ty {
                DataType::Int16 => ScalarValue::Int16(int() as i16),
                DataType::Int32 => ScalarValue::Int32(int() as i32),
                DataType::Int64 => ScalarValue::Int64(int()),
                DataType::Float32 => ScalarValue::float32((min + unit * span) as f32),
                DataType::Float64 => ScalarValue::float64(min + unit * span),
                DataType::Decimal => ScalarValue::Decimal(
                    Decimal::from_f64_retain(min + unit * span)
                        .unwrap_or_default()
                        .round_dp(4),
                ),
                DataType::Boolean => ScalarValue::Boolean(r & 1 == 1),
                DataType::Varchar => {
                    let mut s = String::with_capacity(*length);
                    let mut x = r;
                    for _ in 0..*length {
                        s.push((b'a' + (x % 26) as u8) as char);
                        x = mix(x);
                    }
                    ScalarValue::varchar(s)
                }
                DataType::Date => ScalarValue::Date(
                    chrono::NaiveDate::default() + chrono::Duration::days(int().clamp(0, 100_000)),
                ),
                DataType::Timestamp => ScalarValue::Timestamp(
                    chrono::DateTime::from_timestamp(1_700_000_000 + int().clamp(0, 1 << 32), 0)
                        .map(|t| t.naive_utc())
                        .unwrap_or_default(),
                ),
                DataType::Interval => {
                    ScalarValue::Interval(crate::common::Interval::new(0, 0, int() * 1_000_000))
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_hold_the_rows() {
        let random = |seed| FieldGen::Random {
            min: -5.0,
            max: 1000.0,
            seed,
            length: 3,
        };
        let desc = DatagenDesc {
            fields: vec![
                (DataType::Int64, FieldGen::RowId),
                (
                    DataType::Int16,
                    FieldGen::Sequence {
                        start: 7,
                        end: None,
                    },
                ),
                (DataType::Int32, random(1)),
                (DataType::Int64, random(2)),
                (DataType::Int16, random(3)),
                (DataType::Varchar, random(4)),
                (DataType::Float64, random(5)),
                (DataType::Decimal, random(6)),
            ],
            rows_per_second: 1,
        };
        let offsets: Vec<u64> = (0..300).map(|k| 3 + k * 5).collect();
        let columns = desc.columns(&offsets);
        for (i, &o) in offsets.iter().enumerate() {
            let row: Row = columns.iter().map(|c| c.datum(i)).collect();
            assert_eq!(row, desc.row(o));
        }
    }
}
