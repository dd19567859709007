//! The `datagen` connector: a source actor that generates rows at a given
//! rate, deterministically from its offset, so that after a recovery it
//! resumes at the offset committed with the last epoch and emits no row
//! twice.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use tokio::time::{Duration, Instant};

use crate::common::{DataType, Datum, Row, ScalarValue, StreamChunk, CHUNK_SIZE};
use crate::storage::StateTable;

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

    /// Total rows if every sequence column is bounded (the shortest wins).
    pub fn total_rows(&self) -> Option<u64> {
        self.fields
            .iter()
            .filter_map(|(_, g)| match g {
                FieldGen::Sequence { start, end } => {
                    Some(end.map(|e| (e - start + 1).max(0) as u64))
                }
                _ => None,
            })
            .min()
            .flatten()
    }

    /// The row at `offset`.
    pub fn row(&self, offset: u64) -> Row {
        self.fields
            .iter()
            .map(|(ty, g)| gen_value(*ty, g, offset))
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

/// The generator of one source actor: its offset (committed with each
/// epoch in `state`), and the pacing.
pub struct DatagenReader {
    desc: DatagenDesc,
    offset: u64,
    total: Option<u64>,
    /// Offset kept under the empty key.
    state: StateTable,
    loaded: bool,
    paused: bool,
    started: Option<(Instant, u64)>,
}

impl DatagenReader {
    pub fn new(desc: DatagenDesc, state: StateTable) -> Self {
        DatagenReader {
            total: desc.total_rows(),
            desc,
            offset: 0,
            state,
            loaded: false,
            paused: false,
            started: None,
        }
    }

    pub fn load(&mut self) -> crate::storage::StorageResult<()> {
        if !self.loaded {
            self.loaded = true;
            if let Some(row) = self.state.get(&[])? {
                self.offset = row.first().and_then(|d| d.as_ref()?.as_i64()).unwrap_or(0) as u64;
            }
        }
        Ok(())
    }

    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
        self.started = None;
    }

    pub fn is_active(&self) -> bool {
        self.loaded && !self.paused && self.total.is_none_or(|t| self.offset < t)
    }

    /// When the next chunk is due, at the configured rate.
    pub fn next_due(&mut self) -> Instant {
        let now = Instant::now();
        let (t0, o0) = *self.started.get_or_insert((now, self.offset));
        let produced = self.offset - o0;
        t0 + Duration::from_secs_f64(produced as f64 / self.desc.rows_per_second as f64)
    }

    /// Generate the next chunk (called when due).
    pub fn next_chunk(&mut self) -> StreamChunk {
        let batch = (self.desc.rows_per_second / 20).clamp(1, CHUNK_SIZE as u64);
        let end = match self.total {
            Some(t) => (self.offset + batch).min(t),
            None => self.offset + batch,
        };
        let rows = (self.offset..end).map(|o| self.desc.row(o)).collect();
        self.offset = end;
        StreamChunk::inserts(rows)
    }

    /// Save the offset at the epoch the barrier closes.
    pub fn commit(&mut self, epoch: u64) -> crate::storage::StorageResult<()> {
        self.state
            .put(&[], &[Some(ScalarValue::Int64(self.offset as i64))]);
        let _committed = self.state.commit(epoch)?;
        Ok(())
    }
}
