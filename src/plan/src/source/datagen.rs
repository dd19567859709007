//! The `datagen` connector's description: what each column generates and
//! how fast (the rows themselves are the stream side's).

use std::collections::BTreeMap;

use ebbflow_common::DataType;

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

/// Error in datagen options (an invalid parameter value).
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
}
