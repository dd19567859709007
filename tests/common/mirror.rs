//! [`Mirror`]: the acknowledged state of a [`super::workload`] run kept in
//! PostgreSQL, for tests where ebbflow may lose what it had not
//! acknowledged (a crash, an actor failure), and the reconciliation of
//! what it recovered.

use std::fmt::Write as _;

use tokio_postgres::Client;

use super::rows::{diff_report, minus, multiset, run, Multiset};
use super::workload::{pg_def, pg_sql, target_table, Gen, MVS, TABLES};

/// The acknowledged state of a workload against an ebbflow that may lose
/// what it had not acknowledged (a `kill -9`, an actor failure).
///
/// PostgreSQL holds the tables as of the last acknowledgement, with views
/// of the same definitions as the MVs. DML sent to ebbflow since then is
/// *uncertain*: each statement may or may not be in ebbflow's committed
/// state. [`Mirror::reconcile`] finds, per table, which uncertain
/// statements (kept in order, any subset) explain what ebbflow recovered;
/// acknowledged rows lost or rows applied twice match no subset.
pub struct Mirror {
    pg: Client,
    /// DML sent to ebbflow since the last acknowledgement, in order.
    uncertain: Vec<String>,
    /// Everything sent to ebbflow and every event, for failure reports.
    pub log: Vec<String>,
}

/// Per table, at most this many uncertain statements are reconciled
/// (2^n candidate states); the workload must acknowledge more often.
pub const MAX_UNCERTAIN_PER_TABLE: usize = 10;

impl Mirror {
    pub fn new(pg: Client) -> Mirror {
        Mirror {
            pg,
            uncertain: Vec::new(),
            log: Vec::new(),
        }
    }

    pub fn pg(&self) -> &Client {
        &self.pg
    }

    /// Creates [`TABLES`] in both, fills them with a few acknowledged
    /// rows, then creates [`MVS`] (views in PostgreSQL), so that MV
    /// creation backfills.
    pub async fn create_schema(&mut self, eb: &Client, gen: &mut Gen) -> Result<(), String> {
        for ddl in TABLES {
            self.both_ddl(eb, &pg_sql(ddl), ddl).await?;
        }
        for s in &gen.initial_rows() {
            self.sent(s);
            run(eb, s)
                .await
                .map_err(|e| format!("ebbflow `{s}`: {e}"))?;
        }
        self.note("FLUSH");
        run(eb, "FLUSH")
            .await
            .map_err(|e| format!("ebbflow FLUSH: {e}"))?;
        self.acknowledge().await?;
        for (name, def) in MVS {
            let pg_sql = format!("CREATE VIEW {name} AS {}", pg_def(name, def));
            let eb_sql = format!("CREATE MATERIALIZED VIEW {name} AS {def}");
            self.both_ddl(eb, &pg_sql, &eb_sql).await?;
        }
        Ok(())
    }

    async fn both_ddl(&mut self, eb: &Client, pg_sql: &str, eb_sql: &str) -> Result<(), String> {
        self.log.push(eb_sql.to_string());
        run(&self.pg, pg_sql)
            .await
            .map_err(|e| format!("PostgreSQL `{pg_sql}`: {e}"))?;
        run(eb, eb_sql)
            .await
            .map_err(|e| format!("ebbflow `{eb_sql}`: {e}"))?;
        Ok(())
    }

    /// Records a DML statement about to be sent to ebbflow: uncertain
    /// until acknowledged.
    pub fn sent(&mut self, sql: &str) {
        self.log.push(sql.to_string());
        self.uncertain.push(sql.to_string());
    }

    /// Records an event (FLUSH, a kill, a fault) in the log.
    pub fn note(&mut self, what: &str) {
        self.log.push(what.to_string());
    }

    pub fn uncertain(&self) -> &[String] {
        &self.uncertain
    }

    /// Per table, the number of uncertain statements.
    pub fn uncertain_max_per_table(&self) -> usize {
        TABLES
            .iter()
            .map(|t| table_name(t))
            .map(|t| {
                self.uncertain
                    .iter()
                    .filter(|s| target_table(s) == Some(t))
                    .count()
            })
            .max()
            .unwrap_or(0)
    }

    /// Everything sent so far is committed in ebbflow (a FLUSH returned,
    /// or a statement under `rw_implicit_flush`): apply it to PostgreSQL.
    pub async fn acknowledge(&mut self) -> Result<(), String> {
        if self.uncertain.is_empty() {
            return Ok(());
        }
        let stmts: Vec<&str> = self.uncertain.iter().map(String::as_str).collect();
        self.apply(&stmts).await?;
        self.uncertain.clear();
        Ok(())
    }

    /// Applies statements to PostgreSQL in one transaction.
    async fn apply(&self, stmts: &[&str]) -> Result<(), String> {
        if stmts.is_empty() {
            return Ok(());
        }
        let pg: Vec<String> = stmts.iter().map(|s| pg_sql(s)).collect();
        let sql = format!("BEGIN; {}; COMMIT", pg.join("; "));
        if let Err(e) = run(&self.pg, &sql).await {
            let _ = run(&self.pg, "ROLLBACK").await;
            return Err(format!(
                "PostgreSQL refused acknowledged statements (the generator is wrong): {e}\n{}",
                stmts.join(";\n")
            ));
        }
        Ok(())
    }

    /// The contents of `table` in PostgreSQL after applying `stmts` to
    /// the acknowledged state (then rolled back); `None` if PostgreSQL
    /// refuses them.
    async fn candidate(&self, table: &str, stmts: &[&str]) -> Result<Option<Multiset>, String> {
        let mut sql = String::from("BEGIN; ");
        for s in stmts {
            let _ = write!(sql, "{}; ", pg_sql(s));
        }
        let _ = write!(sql, "SELECT * FROM {table}; ROLLBACK");
        match run(&self.pg, &sql).await {
            Ok(rows) => Ok(Some(multiset(&rows))),
            Err(_) => {
                run(&self.pg, "ROLLBACK").await?;
                Ok(None)
            }
        }
    }

    /// After ebbflow lost what it had not committed: for each table, find
    /// the subset of uncertain statements (in order) that yields exactly
    /// the rows ebbflow has, and make it the acknowledged state. Fails if
    /// no subset does: an acknowledged row is missing, a row appears
    /// twice, or a statement was applied in part. Returns a one-line
    /// summary of what was kept (per table, 1 for a statement kept, in
    /// order).
    pub async fn reconcile(&mut self, eb: &Client) -> Result<String, String> {
        let mut kept_all: Vec<usize> = Vec::new();
        let mut summary = Vec::new();
        for t in TABLES.iter().map(|t| table_name(t)) {
            let recovered = multiset(
                &run(eb, &format!("SELECT * FROM {t}"))
                    .await
                    .map_err(|e| format!("ebbflow SELECT * FROM {t}: {e}"))?,
            );
            let idx: Vec<usize> = (0..self.uncertain.len())
                .filter(|&i| target_table(&self.uncertain[i]) == Some(t))
                .collect();
            let n = idx.len();
            if n > MAX_UNCERTAIN_PER_TABLE {
                return Err(format!(
                    "{n} uncertain statements on {t}: too many to reconcile (the workload \
                     must acknowledge more often)"
                ));
            }
            // Prefixes first: the likely outcome, found in n + 1 tries.
            let prefixes = (0..=n).map(|k| (1u32 << k) - 1);
            let others = (0..1u32 << n).filter(|m| (m + 1) & m != 0);
            let mut found = None;
            for mask in prefixes.chain(others) {
                let stmts: Vec<&str> = (0..n)
                    .filter(|b| mask & (1 << b) != 0)
                    .map(|b| self.uncertain[idx[b]].as_str())
                    .collect();
                if self.candidate(t, &stmts).await? == Some(recovered.clone()) {
                    found = Some(mask);
                    break;
                }
            }
            let Some(mask) = found else {
                let base = self.candidate(t, &[]).await?.unwrap_or_default();
                let all: Vec<&str> = idx.iter().map(|&i| self.uncertain[i].as_str()).collect();
                let mut what = format!(
                    "table {t} as recovered ({} rows) is not the acknowledged state plus any \
                     subset of the {n} uncertain statements on it\n\
                     compared with the acknowledged state alone:\n{}",
                    recovered.values().sum::<i64>(),
                    diff_report(&base, &recovered, 15)
                );
                if let Some(full) = self.candidate(t, &all).await? {
                    let _ = write!(
                        what,
                        "compared with every uncertain statement applied:\n{}",
                        diff_report(&full, &recovered, 15)
                    );
                }
                let _ = writeln!(
                    what,
                    "uncertain statements on {t} (with how much of each is in the recovered \
                     table; a statement partly there was applied in part):"
                );
                for s in &all {
                    let _ = writeln!(
                        what,
                        "    {s};\n      -> {}",
                        self.presence(t, s, &base, &recovered).await?
                    );
                }
                return Err(what);
            };
            let bits: String = (0..n)
                .map(|b| if mask & (1 << b) != 0 { '1' } else { '0' })
                .collect();
            summary.push(format!("{t} [{bits}]"));
            kept_all.extend((0..n).filter(|b| mask & (1 << b) != 0).map(|b| idx[b]));
        }
        kept_all.sort_unstable();
        let kept: Vec<&str> = kept_all
            .iter()
            .map(|&i| self.uncertain[i].as_str())
            .collect();
        self.apply(&kept).await?;
        self.uncertain.clear();
        Ok(summary.join(", "))
    }

    /// How much of one statement's effect on the acknowledged state
    /// `base` is in `recovered`: of the rows it adds, how many are there;
    /// of the rows it removes, how many are gone.
    async fn presence(
        &self,
        table: &str,
        stmt: &str,
        base: &Multiset,
        recovered: &Multiset,
    ) -> Result<String, String> {
        let Some(after) = self.candidate(table, &[stmt]).await? else {
            return Ok("PostgreSQL refuses it on the acknowledged state".into());
        };
        let added = minus(&after, base);
        let removed = minus(base, &after);
        let text = |m: &Multiset| {
            let mut keys = std::collections::BTreeSet::new();
            for (row, n) in m {
                if *n > 0 {
                    keys.insert(row.join(" | "));
                }
            }
            keys
        };
        let rec = text(recovered);
        let added_there = added.iter().filter(|r| rec.contains(*r)).count();
        let removed_gone = removed.iter().filter(|r| !rec.contains(*r)).count();
        Ok(format!(
            "adds {} rows, {added_there} of them recovered; removes {} rows, {removed_gone} of \
             them gone",
            added.len(),
            removed.len()
        ))
    }

    /// Every MV in ebbflow equals its definition re-run as a batch SELECT
    /// in ebbflow and PostgreSQL's view over the acknowledged state.
    pub async fn check_mvs(&self, eb: &Client) -> Result<(), String> {
        for (name, def) in MVS {
            let sql = format!("SELECT * FROM {name}");
            let mv = multiset(
                &run(eb, &sql)
                    .await
                    .map_err(|e| format!("ebbflow `{sql}`: {e}"))?,
            );
            let batch = multiset(
                &run(eb, def)
                    .await
                    .map_err(|e| format!("ebbflow batch `{def}`: {e}"))?,
            );
            if mv != batch {
                return Err(format!(
                    "MV {name} differs from its query re-run as a batch SELECT\n  \
                     definition: {def}\n(batch = expected, MV = actual)\n{}",
                    diff_report(&batch, &mv, 15)
                ));
            }
            let pg = multiset(
                &run(&self.pg, &sql)
                    .await
                    .map_err(|e| format!("PostgreSQL `{sql}`: {e}"))?,
            );
            if mv != pg {
                return Err(format!(
                    "MV {name} differs from PostgreSQL's view over the same data\n  \
                     definition: {def}\n(PostgreSQL = expected, ebbflow = actual)\n{}",
                    diff_report(&pg, &mv, 15)
                ));
            }
        }
        Ok(())
    }

    /// The last `n` log entries, newest last.
    pub fn log_tail(&self, n: usize) -> String {
        super::driver::tail(&self.log, n)
    }
}

/// The name in a `CREATE TABLE name (...)`.
fn table_name(ddl: &str) -> &str {
    ddl.split_whitespace().nth(2).unwrap_or_default()
}
