//! Query results as text rows, and their comparison as multisets with
//! numbers compared by value.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use rust_decimal::Decimal;
use tokio_postgres::{Client, SimpleQueryMessage};

use super::describe_pg_error;

/// A result row in text format, NULL as `None`.
pub type Row = Vec<Option<String>>;

/// A multiset of canonical rows.
pub type Multiset = BTreeMap<Vec<String>, i64>;

/// Runs one statement (simple protocol), returning its rows.
pub async fn run(client: &Client, sql: &str) -> Result<Vec<Row>, String> {
    run_raw(client, sql)
        .await
        .map_err(|e| describe_pg_error(&e))
}

/// [`run`] keeping the driver's error (for its SQLSTATE, or to tell a
/// closed connection from a server error).
pub async fn run_raw(client: &Client, sql: &str) -> Result<Vec<Row>, tokio_postgres::Error> {
    let msgs = client.simple_query(sql).await?;
    let mut rows = Vec::new();
    for m in msgs {
        if let SimpleQueryMessage::Row(r) = m {
            rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
        }
    }
    Ok(rows)
}

/// [`run_raw`] bounded by `limit`: the outer error is a statement that
/// hangs (`no answer within N s`), the inner one the driver's.
pub async fn run_raw_within(
    client: &Client,
    sql: &str,
    limit: Duration,
) -> Result<Result<Vec<Row>, tokio_postgres::Error>, String> {
    tokio::time::timeout(limit, run_raw(client, sql))
        .await
        .map_err(|_| format!("no answer within {} s", limit.as_secs()))
}

/// [`run`] bounded by `limit`.
pub async fn run_within(client: &Client, sql: &str, limit: Duration) -> Result<Vec<Row>, String> {
    run_raw_within(client, sql, limit)
        .await?
        .map_err(|e| describe_pg_error(&e))
}

/// [`run_within`] for an ebbflow statement that must succeed: the error
/// names it.
pub async fn must(client: &Client, sql: &str, limit: Duration) -> Result<Vec<Row>, String> {
    run_within(client, sql, limit)
        .await
        .map_err(|e| format!("ebbflow `{sql}`: {e}"))
}

/// A text cell parsed, if it is there and parses.
pub fn cell<T: FromStr>(c: &Option<String>) -> Option<T> {
    c.as_deref().and_then(|s| s.parse().ok())
}

/// The first cell of the first row, parsed.
pub fn first_cell<T: FromStr>(rows: &[Row]) -> Option<T> {
    rows.first().and_then(|r| r.first()).and_then(cell)
}

/// Text of a value for comparison: numbers by value (so `1.50` = `1.5` and
/// PostgreSQL's 16-digit avg matches a longer one), the rest verbatim.
pub fn canonical(v: &Option<String>) -> String {
    match v {
        None => "NULL".to_string(),
        Some(s) => match Decimal::from_str(s.trim()) {
            Ok(d) => d.round_dp(9).normalize().to_string(),
            Err(_) => match s.parse::<f64>() {
                Ok(f) if s.contains(['e', 'E']) => format!("{:.9e}", f),
                _ => s.clone(),
            },
        },
    }
}

pub fn multiset(rows: &[Row]) -> Multiset {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(r.iter().map(canonical).collect()).or_insert(0) += 1;
    }
    m
}

/// Rows in `a` missing from `b` (with multiplicity).
pub fn minus(a: &Multiset, b: &Multiset) -> Vec<String> {
    let mut out = Vec::new();
    for (row, &n) in a {
        let have = b.get(row).copied().unwrap_or(0);
        for _ in 0..(n - have).max(0) {
            out.push(row.join(" | "));
        }
    }
    out
}

/// "missing (n): ... extra (n): ..." for two multisets, at most `limit`
/// rows of each.
pub fn diff_report(expected: &Multiset, actual: &Multiset, limit: usize) -> String {
    use std::fmt::Write as _;
    let missing = minus(expected, actual);
    let extra = minus(actual, expected);
    let mut s = String::new();
    let _ = writeln!(s, "  missing ({}):", missing.len());
    for r in missing.iter().take(limit) {
        let _ = writeln!(s, "    - {r}");
    }
    let _ = writeln!(s, "  extra ({}):", extra.len());
    for r in extra.iter().take(limit) {
        let _ = writeln!(s, "    + {r}");
    }
    s
}

/// Why an MV's rows (`actual`, from ebbflow) differ from PostgreSQL's view
/// of the same definition (`expected`), or `None` if they are the same
/// multiset. `when` says at which point of the test, e.g. `after round 3`.
pub fn mv_mismatch(
    name: &str,
    def: &str,
    when: &str,
    expected: &[Row],
    actual: &[Row],
) -> Option<String> {
    let (exp, act) = (multiset(expected), multiset(actual));
    if exp == act {
        return None;
    }
    Some(format!(
        "MV {name} differs {when}\n  definition: {def}\n  PostgreSQL {} rows, ebbflow {} \
         rows\n(PostgreSQL = expected, ebbflow = actual)\n{}",
        expected.len(),
        actual.len(),
        diff_report(&exp, &act, 20)
    ))
}
