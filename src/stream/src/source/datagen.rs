//! The `datagen` connector: rows generated deterministically from their
//! offset in the stream, so that a split resumes after a recovery at the
//! offset committed with the last epoch and emits no row twice.

use arrow_array::{Int16Array, Int32Array, Int64Array};

use ebbflow_common::{datum_ref, Column, ColumnBuilder, DataType, Datum, Row, ScalarValue};
use ebbflow_plan::source::datagen::{DatagenDesc, FieldGen};
use rust_decimal::Decimal;

/// The row at `offset`.
pub fn row(desc: &DatagenDesc, offset: u64) -> Row {
    desc.fields
        .iter()
        .map(|(ty, g)| gen_value(*ty, g, offset))
        .collect()
}

/// The rows at these offsets, a column at a time (the same values as
/// [`row`]).
pub fn columns(desc: &DatagenDesc, offsets: &[u64]) -> Vec<Column> {
    desc.fields
        .iter()
        .map(|(ty, g)| match (ty, g) {
            (_, FieldGen::RowId) | (DataType::Int64, _) => {
                Column::Int64(Int64Array::from(int_values(g, offsets, |v| v)))
            }
            (DataType::Int32, _) => {
                Column::Int32(Int32Array::from(int_values(g, offsets, |v| v as i32)))
            }
            (DataType::Int16, _) => {
                Column::Int16(Int16Array::from(int_values(g, offsets, |v| v as i16)))
            }
            _ => {
                let mut b = ColumnBuilder::new(None, offsets.len());
                for &o in offsets {
                    b.push(datum_ref(&gen_value(*ty, g, o)));
                }
                b.finish()
            }
        })
        .collect()
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The random bits of a `Random` field with this seed at `offset`.
fn random_bits(seed: u64, offset: u64) -> u64 {
    mix(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ mix(offset))
}

/// `bits` as a number uniform in `[0, 1)`.
fn unit_of(bits: u64) -> f64 {
    // 53 bits convert exactly through i64, one instruction on x86-64
    // (from u64 it takes several).
    ((bits >> 11) as i64) as f64 / (1u64 << 53) as f64
}

/// A random integer in `[min, max]` from `unit`.
fn random_int(min: f64, max: f64, unit: f64) -> i64 {
    let span = (max - min).max(0.0);
    // The floor of a product that is never negative: a truncating cast,
    // which unlike `f64::floor` needs no libm call on baseline x86-64
    // (and through i64 is one instruction, below 2^63).
    let x = unit * (span + 1.0);
    let steps = if x < 9.0e18 {
        x as i64 as f64
    } else {
        x as u64 as f64
    };
    (min + steps).min(max) as i64
}

/// The integers [`gen_value`] gives at `offsets` (before narrowing to the
/// column's type), through `narrow`; the generator is matched once.
fn int_values<T>(g: &FieldGen, offsets: &[u64], narrow: impl Fn(i64) -> T) -> Vec<T> {
    match g {
        FieldGen::RowId => offsets
            .iter()
            .map(|&o| narrow((1i64 << 62) | o as i64))
            .collect(),
        FieldGen::Sequence { start, .. } => {
            offsets.iter().map(|&o| narrow(start + o as i64)).collect()
        }
        FieldGen::Random { min, max, seed, .. } => offsets
            .iter()
            .map(|&o| narrow(random_int(*min, *max, unit_of(random_bits(*seed, o)))))
            .collect(),
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
            let r = random_bits(*seed, offset);
            let unit = unit_of(r);
            let span = (max - min).max(0.0);
            let int = || random_int(*min, *max, unit);
            Some(match ty {
                DataType::Int16 => ScalarValue::Int16(int() as i16),
                DataType::Int32 => ScalarValue::Int32(int() as i32),
                DataType::Int64 => ScalarValue::Int64(int()),
                DataType::Float32 => ScalarValue::float32((min + unit * span) as f32),
                DataType::Float64 => ScalarValue::float64(min + unit * span),
                DataType::Decimal => ScalarValue::decimal(
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
                DataType::Timestamptz => {
                    ScalarValue::Timestamptz((1_700_000_000 + int().clamp(0, 1 << 32)) * 1_000_000)
                }
                DataType::Interval => {
                    ScalarValue::Interval(ebbflow_common::Interval::new(0, 0, int() * 1_000_000))
                }
                // Arrays and jsonb are not generated: NULL.
                DataType::Array(_) | DataType::Jsonb | DataType::Bytea => return None,
                DataType::Time => ScalarValue::Time(int().rem_euclid(86_400) * 1_000_000),
                DataType::Uuid => ScalarValue::Uuid(u128::from(r) << 64 | u128::from(mix(r))),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_int_is_the_floor_of_the_scaled_unit() {
        let ranges = [
            (0.0, 999.0),
            (-5.0, 1000.0),
            (1.0, 1.0),
            (-1e6, -3.0),
            (i64::MIN as f64, i64::MAX as f64),
        ];
        for (min, max) in ranges {
            for o in 0..10_000u64 {
                let unit = unit_of(random_bits(7, o));
                let floor = (min + (unit * ((max - min) + 1.0)).floor()).min(max) as i64;
                assert_eq!(random_int(min, max, unit), floor);
            }
        }
        assert_eq!(random_int(0.0, 9.0, 0.0), 0);
        assert_eq!(random_int(0.0, 9.0, 0.999_999_999), 9);
    }

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
        let columns = columns(&desc, &offsets);
        for (i, &o) in offsets.iter().enumerate() {
            let got: Row = columns.iter().map(|c| c.datum(i)).collect();
            assert_eq!(got, row(&desc, o));
        }
    }
}
