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
/// epoch in `state`), the pacing, and the throttle that keeps epochs from
/// growing when the job is slower than the configured rate.
///
/// # Throttle
///
/// Meta runs one barrier at a time and commits its epoch before the next
/// one, and closing an epoch (flushing aggregates, committing to the
/// store) costs time in proportion to its rows. A source that generated
/// whatever downstream channels accepted would keep filling the next epoch
/// while the previous one is being closed; when the job is slower than the
/// configured rate, each epoch would then be larger than the last and a
/// barrier (FLUSH, a scale) would wait seconds, then minutes. So while the
/// epoch this source closed last is not committed, it generates at most as
/// many rows into the current epoch as that one had (at least one batch);
/// once the commit is seen, pacing alone applies again. An epoch outgrows
/// its predecessor only by what the configured rate adds between a commit
/// and the next barrier, so epochs stop growing once closing one takes a
/// barrier interval. Only the timing of rows changes, never which rows
/// belong to which offset.
pub struct DatagenReader {
    desc: DatagenDesc,
    offset: u64,
    total: Option<u64>,
    /// Offset kept under the empty key.
    state: StateTable,
    loaded: bool,
    paused: bool,
    /// Pacing origin: the instant and offset the rate is measured from.
    started: Option<(Instant, u64)>,
    /// Rows generated since the last barrier.
    epoch_rows: u64,
    /// Rows of the epoch closed by the last barrier.
    prev_epoch_rows: u64,
    /// The epoch closed by the last barrier, until it is seen committed.
    uncommitted: Option<u64>,
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
            epoch_rows: 0,
            prev_epoch_rows: 0,
            uncommitted: None,
        }
    }

    fn batch_size(&self) -> u64 {
        (self.desc.rows_per_second / 20).clamp(1, CHUNK_SIZE as u64)
    }

    /// Whether the throttle (see the type's doc) holds the generator back,
    /// given the last committed epoch. Once the awaited commit is seen,
    /// the pacing restarts from now: rows not generated while throttled
    /// are not made up for in a burst.
    pub fn throttled(&mut self, committed: u64) -> bool {
        let Some(epoch) = self.uncommitted else {
            return false;
        };
        if committed >= epoch {
            self.uncommitted = None;
            if self.epoch_rows >= self.quota() {
                self.started = None;
            }
            return false;
        }
        self.epoch_rows >= self.quota()
    }

    /// Rows the current epoch may have while the previous one is
    /// uncommitted.
    fn quota(&self) -> u64 {
        self.prev_epoch_rows.max(self.batch_size())
    }

    pub async fn load(&mut self) -> crate::storage::StorageResult<()> {
        if !self.loaded {
            self.loaded = true;
            if let Some(row) = self.state.get(&[]).await? {
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
        let batch = self.batch_size();
        let end = match self.total {
            Some(t) => (self.offset + batch).min(t),
            None => self.offset + batch,
        };
        let rows = (self.offset..end).map(|o| self.desc.row(o)).collect();
        self.epoch_rows += end - self.offset;
        self.offset = end;
        StreamChunk::inserts(rows)
    }

    /// Save the offset at the epoch the barrier closes.
    pub fn commit(&mut self, epoch: u64) -> crate::storage::StorageResult<()> {
        self.state
            .put(&[], &[Some(ScalarValue::Int64(self.offset as i64))]);
        let _committed = self.state.commit(epoch)?;
        self.prev_epoch_rows = std::mem::take(&mut self.epoch_rows);
        self.uncommitted = Some(epoch);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::common::Bitmap;
    use crate::storage::{MemoryStateStore, StateStore};

    async fn reader(rows_per_second: u64) -> DatagenReader {
        let store: Arc<dyn StateStore> = Arc::new(MemoryStateStore::new());
        let state = StateTable::new(
            1,
            store,
            vec![],
            vec![],
            vec![],
            crate::storage::state_table::ValueCodec::Schema(vec![DataType::Int64]),
            Bitmap::full(),
        );
        let desc = DatagenDesc {
            fields: vec![(
                DataType::Int64,
                FieldGen::Sequence {
                    start: 0,
                    end: None,
                },
            )],
            rows_per_second,
        };
        let mut r = DatagenReader::new(desc, state);
        r.load().await.unwrap();
        r
    }

    #[tokio::test]
    async fn an_epoch_outgrows_an_uncommitted_one_only_after_its_commit() {
        let mut r = reader(20_000).await; // batches of 1000
        assert!(!r.throttled(0), "nothing to wait for before a barrier");
        for _ in 0..3 {
            r.next_chunk();
        }
        r.commit(5).unwrap(); // epoch 5 has 3000 rows, not yet committed
        for _ in 0..3 {
            assert!(!r.throttled(4));
            r.next_chunk();
        }
        assert!(r.throttled(4), "as many rows as the uncommitted epoch");
        assert!(!r.throttled(5), "released by the commit");
        r.next_chunk();
        r.commit(6).unwrap(); // 4000 rows
        for _ in 0..4 {
            assert!(!r.throttled(5));
            r.next_chunk();
        }
        assert!(r.throttled(5));
        // Offsets are untouched by the throttle.
        assert_eq!(r.offset, 11_000);
    }

    #[tokio::test]
    async fn a_small_epoch_still_lets_one_batch_through() {
        let mut r = reader(100).await; // batches of 5
        r.commit(1).unwrap(); // an empty epoch
        assert!(!r.throttled(0));
        r.next_chunk();
        assert!(r.throttled(0));
        assert!(!r.throttled(1));
    }
}
