//! Sources as data: the connectors, how their streams are split, and what
//! a relation's `WITH (connector = …)` options mean.

pub mod datagen;
pub mod nexmark;

use ebbflow_common::ErrorKind;
use ebbflow_common::{DataType, TableId, VirtualNode, CHUNK_SIZE, VNODE_COUNT};

use crate::node::WatermarkDesc;
pub use datagen::DatagenDesc;
pub use nexmark::NexmarkDesc;

/// What a connector generates.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Connector {
    Datagen(DatagenDesc),
    Nexmark(NexmarkDesc),
}

/// A source fragment's connector and how its stream is split.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SplitSourceDesc {
    pub connector: Connector,
    pub splits: u32,
    /// The `CREATE SOURCE` relation read, or the table fed.
    pub relation: TableId,
    /// The source's `WATERMARK FOR`, kept per split (see [`SourceReader`]).
    #[serde(default)]
    pub watermark: Option<WatermarkDesc>,
}

/// Value columns of a split's progress row: split id, elements emitted,
/// whether the split has ended, and its watermark (as
/// a number: microseconds of a timestamp, days of a date; rows written
/// before watermarks lack it).
pub fn progress_types() -> Vec<DataType> {
    vec![
        DataType::Int32,
        DataType::Int64,
        DataType::Boolean,
        DataType::Int64,
    ]
}

/// The vnode holding split `split` of `splits`.
pub fn split_vnode(split: u32, splits: u32) -> VirtualNode {
    ((split as u64 * VNODE_COUNT as u64) / splits.max(1) as u64) as VirtualNode
}

impl SplitSourceDesc {
    /// Elements per second of the whole stream, if paced.
    pub fn rate(&self) -> Option<f64> {
        match &self.connector {
            Connector::Datagen(d) => Some(d.rows_per_second as f64),
            Connector::Nexmark(n) => n.events_per_second(),
        }
    }

    /// The most rows a reader emits in one chunk.
    pub fn max_chunk(&self) -> usize {
        match &self.connector {
            Connector::Datagen(_) => CHUNK_SIZE,
            Connector::Nexmark(n) => n.max_chunk_size,
        }
    }
}

/// Splits of a source unless `<connector>.split.num` says otherwise: one
/// per vnode, so any parallelism up to the vnode count gets an even
/// share.
pub const DEFAULT_SPLITS: u32 = VNODE_COUNT as u32;

/// A bad connector option or column (its kind and message).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct SourceOptionError {
    pub kind: ErrorKind,
    pub message: String,
}

impl SourceOptionError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        SourceOptionError {
            kind,
            message: message.into(),
        }
    }
}

/// The connector a relation's `WITH (connector = …)` options describe,
/// over its columns `(name, type, is_row_id)`; `Ok(None)` without a
/// connector. `now_ms` is nexmark's base time if the options fix none.
pub fn connector_from_options(
    options: &std::collections::BTreeMap<String, String>,
    columns: &[(String, DataType, bool)],
    relation: TableId,
    now_ms: u64,
) -> Result<Option<SplitSourceDesc>, SourceOptionError> {
    let Some(name) = options.get("connector").map(|s| s.to_ascii_lowercase()) else {
        return Ok(None);
    };
    let splits_key = format!("{name}.split.num");
    let connector = match name.as_str() {
        "datagen" => Connector::Datagen(
            DatagenDesc::from_options(options, columns)
                .map_err(|e| SourceOptionError::new(ErrorKind::InvalidParameterValue, e.0))?,
        ),
        "nexmark" => Connector::Nexmark(
            NexmarkDesc::from_options(options, columns, now_ms)
                .map_err(|e| SourceOptionError::new(e.kind, e.message))?,
        ),
        other => {
            return Err(SourceOptionError::new(
                ErrorKind::FeatureNotSupported,
                format!("connector \"{other}\" is not supported (datagen, nexmark)"),
            ))
        }
    };
    let splits = match options.get(&splits_key) {
        None => DEFAULT_SPLITS,
        Some(v) => match v.trim().parse::<u32>() {
            Ok(n) if (1..=VNODE_COUNT as u32).contains(&n) => n,
            _ => {
                return Err(SourceOptionError::new(
                    ErrorKind::InvalidParameterValue,
                    format!(
                        "invalid value for option \"{splits_key}\": \"{v}\" (1 to {VNODE_COUNT})"
                    ),
                ))
            }
        },
    };
    Ok(Some(SplitSourceDesc {
        watermark: None,
        connector,
        splits,
        relation,
    }))
}
