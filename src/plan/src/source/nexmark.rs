//! The `nexmark` connector's description: which of the benchmark's
//! streams a source reads, its columns and pacing (the events themselves
//! are the stream side's, from the `nexmark` crate).

use ebbflow_common::ErrorKind;
use std::collections::BTreeMap;

use ebbflow_common::DataType;

/// Which of the three streams a source reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum NexmarkTable {
    Person,
    Auction,
    Bid,
}

impl NexmarkTable {
    /// The stream's columns, with RisingWave's names and types.
    pub fn fields(self) -> &'static [(&'static str, DataType)] {
        use DataType::{Int64 as B, Timestamp as T, Varchar as V};
        match self {
            NexmarkTable::Person => &[
                ("id", B),
                ("name", V),
                ("email_address", V),
                ("credit_card", V),
                ("city", V),
                ("state", V),
                ("date_time", T),
                ("extra", V),
            ],
            NexmarkTable::Auction => &[
                ("id", B),
                ("item_name", V),
                ("description", V),
                ("initial_bid", B),
                ("reserve", B),
                ("date_time", T),
                ("expires", T),
                ("seller", B),
                ("category", B),
                ("extra", V),
            ],
            NexmarkTable::Bid => &[
                ("auction", B),
                ("bidder", B),
                ("price", B),
                ("channel", V),
                ("url", V),
                ("date_time", T),
                ("extra", V),
            ],
        }
    }
}

/// What one nexmark source generates.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NexmarkDesc {
    pub table: NexmarkTable,
    /// For each column of the source, the index of its field in
    /// [`NexmarkTable::fields`], or `None` for the hidden row id (the
    /// event's number in the whole stream).
    pub columns: Vec<Option<usize>>,
    /// Events of the whole stream (all types) after which it ends.
    pub event_num: Option<u64>,
    /// Pacing: the least time between two events of the whole stream
    /// (0: as fast as the job takes them).
    pub min_event_gap_ns: u64,
    pub max_chunk_size: usize,
    /// The time of event 0, ms since the Unix epoch: fixed when the source
    /// is created so every split and every recovery see the same data.
    pub base_time_ms: u64,
}

/// Error in nexmark options or columns (an invalid parameter value or a
/// datatype mismatch).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct NexmarkOptionError {
    pub kind: ErrorKind,
    pub message: String,
}

fn bad(message: String) -> NexmarkOptionError {
    NexmarkOptionError {
        kind: ErrorKind::InvalidParameterValue,
        message,
    }
}

impl NexmarkDesc {
    /// Build from `WITH (...)` options (RisingWave's names:
    /// `nexmark.table.type`, `nexmark.event.num`,
    /// `nexmark.min.event.gap.in.ns`, `nexmark.max.chunk.size`, and
    /// `nexmark.base.time` in ms) and the source's columns `(name, type,
    /// is_row_id)`. `now_ms` is the base time when none is given.
    pub fn from_options(
        options: &BTreeMap<String, String>,
        columns: &[(String, DataType, bool)],
        now_ms: u64,
    ) -> Result<Self, NexmarkOptionError> {
        let num = |key: &str| -> Result<Option<u64>, NexmarkOptionError> {
            options
                .get(key)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| bad(format!("invalid value for option \"{key}\": \"{v}\"")))
                })
                .transpose()
        };
        let table = match options
            .get("nexmark.table.type")
            .map(|s| s.to_ascii_lowercase())
            .as_deref()
        {
            Some("person") => NexmarkTable::Person,
            Some("auction") => NexmarkTable::Auction,
            Some("bid") => NexmarkTable::Bid,
            Some(other) => {
                return Err(bad(format!(
                    "invalid nexmark.table.type \"{other}\" (expected Person, Auction or Bid)"
                )))
            }
            None => {
                return Err(bad(
                    "a nexmark source needs nexmark.table.type (Person, Auction or Bid)".into(),
                ))
            }
        };
        let fields = table.fields();
        let mut cols = Vec::with_capacity(columns.len());
        for (name, ty, is_row_id) in columns {
            if *is_row_id {
                cols.push(None);
                continue;
            }
            let Some(i) = fields.iter().position(|(f, _)| f == name) else {
                let names: Vec<&str> = fields.iter().map(|(f, _)| *f).collect();
                return Err(bad(format!(
                    "column \"{name}\" is not a field of the nexmark {} stream (fields: {})",
                    format!("{table:?}").to_lowercase(),
                    names.join(", ")
                )));
            };
            if fields[i].1 != *ty {
                return Err(NexmarkOptionError {
                    kind: ErrorKind::DatatypeMismatch,
                    message: format!(
                        "column \"{name}\" of a nexmark source must be {}, not {ty}",
                        fields[i].1
                    ),
                });
            }
            cols.push(Some(i));
        }
        Ok(NexmarkDesc {
            table,
            columns: cols,
            event_num: num("nexmark.event.num")?,
            min_event_gap_ns: num("nexmark.min.event.gap.in.ns")?.unwrap_or(100_000),
            max_chunk_size: num("nexmark.max.chunk.size")?
                .unwrap_or(1024)
                .clamp(1, 1 << 16) as usize,
            base_time_ms: num("nexmark.base.time")?.unwrap_or(now_ms),
        })
    }

    /// Events per second of the whole stream, if paced.
    pub fn events_per_second(&self) -> Option<f64> {
        (self.min_event_gap_ns > 0).then(|| 1e9 / self.min_event_gap_ns as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_must_match_the_stream() {
        let opts: BTreeMap<String, String> = [("nexmark.table.type".to_string(), "bid".into())]
            .into_iter()
            .collect();
        let e = NexmarkDesc::from_options(&opts, &[("price".into(), DataType::Int32, false)], 0)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::DatatypeMismatch);
        let e = NexmarkDesc::from_options(&opts, &[("nope".into(), DataType::Int64, false)], 0)
            .unwrap_err();
        assert!(e.message.contains("not a field"), "{e}");
        assert!(NexmarkDesc::from_options(&BTreeMap::new(), &[], 0).is_err());
    }
}
