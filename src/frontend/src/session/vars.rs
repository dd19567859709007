//! Session variables (`SET`, `SHOW`), the parallelism of new jobs and the
//! system parameters of `ALTER SYSTEM SET`.

use ebbflow_common::ErrorKind;
use std::collections::BTreeMap;

use super::{fields, rows_result, text, FResult, LocalSession};
use crate::{FrontendError, StatementResult};
use ebbflow_common::{DataType, Field};
use ebbflow_meta::service::Parallelism;

/// Session variables.
#[derive(Clone, Debug)]
pub(super) struct Vars {
    pub(super) implicit_flush: bool,
    pub(super) streaming_parallelism: Parallelism,
    other: BTreeMap<String, String>,
}

impl Default for Vars {
    fn default() -> Self {
        let other = [
            ("application_name", ""),
            ("client_encoding", "UTF8"),
            ("datestyle", "ISO, MDY"),
            ("extra_float_digits", "1"),
            ("idle_in_transaction_session_timeout", "0"),
            ("integer_datetimes", "on"),
            ("intervalstyle", "postgres"),
            ("is_superuser", "on"),
            ("lock_timeout", "0"),
            ("max_identifier_length", "63"),
            ("search_path", "public"),
            ("server_encoding", "UTF8"),
            ("server_version", "15.0"),
            ("standard_conforming_strings", "on"),
            ("statement_timeout", "0"),
            ("timezone", "UTC"),
            ("transaction_isolation", "read committed"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Vars {
            implicit_flush: false,
            streaming_parallelism: Parallelism::Adaptive,
            other,
        }
    }
}

impl Vars {
    /// The `TimeZone` setting (always a valid one: `SET` checks it).
    pub(super) fn time_zone(&self) -> String {
        self.other
            .get("timezone")
            .cloned()
            .unwrap_or_else(|| "UTC".into())
    }

    /// The `search_path` setting as written.
    pub(super) fn search_path(&self) -> String {
        self.other
            .get("search_path")
            .cloned()
            .unwrap_or_else(|| "public".into())
    }
}

/// `WITH (parallelism = n)` of a CREATE statement.
fn with_parallelism(options: &BTreeMap<String, String>) -> FResult<Option<Parallelism>> {
    match options.get("parallelism") {
        None => Ok(None),
        Some(v) => parse_parallelism(v).map(Some),
    }
}

/// An integer system parameter within `range`.
fn int_param<T>(name: &str, value: &str, range: std::ops::RangeInclusive<T>) -> FResult<T>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    value
        .trim()
        .trim_matches('\'')
        .parse::<T>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            FrontendError::new(
                ErrorKind::InvalidParameterValue,
                format!(
                    "{name} must be an integer from {} to {}, got \"{value}\"",
                    range.start(),
                    range.end()
                ),
            )
        })
}

/// A PostgreSQL Boolean setting: on/off, true/false, yes/no, 1/0 (and
/// their unambiguous prefixes t/f).
fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().trim_matches('\'').to_ascii_lowercase().as_str() {
        "true" | "on" | "1" | "t" | "yes" => Some(true),
        "false" | "off" | "0" | "f" | "no" => Some(false),
        _ => None,
    }
}

fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.into()
}

fn parse_parallelism(v: &str) -> FResult<Parallelism> {
    let v = v.trim().trim_matches('\'');
    if v.eq_ignore_ascii_case("adaptive") || v.eq_ignore_ascii_case("default") {
        return Ok(Parallelism::Adaptive);
    }
    match v.parse::<u32>() {
        Ok(0) => Ok(Parallelism::Adaptive),
        Ok(n) => Ok(Parallelism::Fixed(n)),
        Err(_) => Err(FrontendError::new(
            ErrorKind::InvalidParameterValue,
            format!("invalid parallelism \"{v}\": expected a positive integer or ADAPTIVE"),
        )),
    }
}

impl LocalSession {
    /// The parallelism of a new job: its `WITH (parallelism = …)`, else
    /// the session's `streaming_parallelism`.
    pub(super) fn parallelism_for(
        &self,
        with_options: &BTreeMap<String, String>,
    ) -> FResult<Parallelism> {
        Ok(with_parallelism(with_options)?.unwrap_or(self.vars.lock().streaming_parallelism))
    }

    /// System parameters (committed with the catalog):
    /// `backfill_rows_per_barrier = n`, snapshot rows each stream scan
    /// actor emits per barrier while backfilling; `adaptive_scaling =
    /// on|off` and `adaptive_scaling_interval_ms = n`, the adaptive
    /// policy. Test faults (off unless set): `debug_inject_actor_failure =
    /// <fragment id>` fails the next chunk an actor of that fragment
    /// processes, and the cluster recovers from the last committed epoch;
    /// `debug_kill_worker = <id>` stops a compute node abruptly and
    /// `debug_panic_worker = <id>` makes every task of it panic;
    /// `debug_crash_at = upload | compaction` ends the process right after
    /// the next epoch's (or compaction's) files are uploaded, before the
    /// version referencing them commits.
    pub(super) fn alter_system_set(&self, name: &str, value: &str) -> FResult<()> {
        match name.to_ascii_lowercase().as_str() {
            "debug_inject_actor_failure" => {
                let fragment = int_param(name, value, 0..=u32::MAX)?;
                self.meta.inject_actor_failure(fragment);
                Ok(())
            }
            "backfill_rows_per_barrier" => {
                let rows = int_param(name, value, 1..=usize::MAX)?;
                self.meta.set_backfill_rows_per_barrier(rows);
                Ok(())
            }
            "adaptive_scaling" => {
                let on = parse_bool(value).ok_or_else(|| {
                    FrontendError::new(
                        ErrorKind::InvalidParameterValue,
                        format!("parameter \"adaptive_scaling\" requires a Boolean value, got \"{value}\""),
                    )
                })?;
                self.meta.set_adaptive_scaling(Some(on), None);
                Ok(())
            }
            "adaptive_scaling_interval_ms" => {
                let ms = int_param(name, value, 10..=86_400_000)?;
                self.meta.set_adaptive_scaling(None, Some(ms));
                Ok(())
            }
            "debug_crash_at" => {
                let point = ebbflow_storage::lsm::fault::CrashPoint::parse(value.trim())
                    .ok_or_else(|| {
                        FrontendError::new(
                            ErrorKind::InvalidParameterValue,
                            format!(
                                "invalid value for parameter \"debug_crash_at\": \"{value}\" \
                             (upload, compaction or off)"
                            ),
                        )
                    })?;
                ebbflow_storage::lsm::fault::set_crash_point(point);
                Ok(())
            }
            "debug_kill_worker" | "debug_panic_worker" => {
                let id = int_param(name, value, 0..=u32::MAX)?;
                self.meta
                    .inject_worker_failure(id, name.eq_ignore_ascii_case("debug_panic_worker"))?;
                Ok(())
            }
            other => Err(FrontendError::new(
                ErrorKind::UndefinedObject,
                format!("unrecognized system parameter \"{other}\""),
            )),
        }
    }

    pub(super) fn set_var(&self, name: &str, value: Option<String>) -> FResult<()> {
        let name = name.to_ascii_lowercase();
        let mut vars = self.vars.lock();
        match name.as_str() {
            "rw_implicit_flush" => {
                vars.implicit_flush = match value.as_deref() {
                    None => false,
                    Some(v) if parse_bool(v).is_some() => parse_bool(v).unwrap_or(false),
                    Some(v) => {
                        return Err(FrontendError::new(
                            ErrorKind::InvalidParameterValue,
                            format!(
                            "parameter \"rw_implicit_flush\" requires a Boolean value, got \"{v}\""
                        ),
                        ))
                    }
                }
            }
            "timezone" => {
                let v = value
                    .filter(|v| {
                        !v.eq_ignore_ascii_case("local") && !v.eq_ignore_ascii_case("default")
                    })
                    .unwrap_or_else(|| "UTC".into());
                let (_, shown) = ebbflow_common::Zone::for_setting(&v).ok_or_else(|| {
                    FrontendError::new(
                        ErrorKind::InvalidParameterValue,
                        format!("invalid value for parameter \"TimeZone\": \"{v}\""),
                    )
                })?;
                vars.other.insert(name, shown);
            }
            "streaming_parallelism" => {
                vars.streaming_parallelism = match value {
                    None => Parallelism::Adaptive,
                    Some(v) => parse_parallelism(&v)?,
                }
            }
            _ => {
                let v = value.unwrap_or_else(|| {
                    Vars::default()
                        .other
                        .get(&name)
                        .cloned()
                        .unwrap_or_default()
                });
                vars.other.insert(name, v);
            }
        }
        Ok(())
    }

    fn get_var(&self, name: &str) -> FResult<String> {
        let name = name.to_ascii_lowercase();
        self.all_vars()
            .into_iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
            .ok_or_else(|| {
                FrontendError::new(
                    ErrorKind::UndefinedObject,
                    format!("unrecognized configuration parameter \"{name}\""),
                )
            })
    }

    pub(super) fn all_vars(&self) -> Vec<(String, String)> {
        let vars = self.vars.lock();
        let mut out: Vec<(String, String)> = vars.other.clone().into_iter().collect();
        out.push((
            "rw_implicit_flush".into(),
            if vars.implicit_flush { "true" } else { "false" }.into(),
        ));
        out.push((
            "streaming_parallelism".into(),
            vars.streaming_parallelism.display(),
        ));
        let params = self.meta.params();
        out.push(("adaptive_scaling".into(), on_off(params.adaptive_scaling)));
        out.push((
            "adaptive_scaling_interval_ms".into(),
            params.adaptive_scaling_interval_ms.to_string(),
        ));
        out.push((
            "backfill_rows_per_barrier".into(),
            params.backfill_rows_per_barrier.to_string(),
        ));
        out.sort();
        out
    }

    pub(super) fn show_var(&self, name: String) -> FResult<StatementResult> {
        let v = self.get_var(&name)?;
        Ok(rows_result(
            vec![Field::new(name, DataType::Varchar)],
            vec![vec![text(v)]],
        ))
    }

    pub(super) fn show_all(&self) -> StatementResult {
        let rows = self
            .all_vars()
            .into_iter()
            .map(|(k, v)| vec![text(k), text(v), text("")])
            .collect();
        rows_result(
            fields(&[
                ("Name", DataType::Varchar),
                ("Setting", DataType::Varchar),
                ("Description", DataType::Varchar),
            ]),
            rows,
        )
    }
}
