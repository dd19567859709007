//! The workload of the state store test and its model: one table with a
//! primary key (`acc`), a small dimension table (`dim`), an aggregate MV and
//! a join MV over them; random DML on `acc` from one session with FLUSH
//! points; the acknowledged contents of `acc` kept in memory.
//!
//! A FLUSH that succeeds with no statement failed since the last
//! acknowledgement vouches for every statement sent before it (the product
//! makes a FLUSH that cannot vouch for them fail instead). The statements
//! since the last acknowledgement are *uncertain*: after a crash or a
//! failed statement or FLUSH, [`Writer::reconcile`] finds which of them (in
//! order, any subset; a prefix first) explain what ebbflow has, and makes
//! that the acknowledged state. An acknowledged row lost, a row twice or a
//! statement applied in part matches no subset.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::Client;

use super::common::describe_pg_error;
use super::common::rows::{cell, diff_report, first_cell, multiset, run_raw_within, Row};

pub const TABLES: &[&str] = &[
    "CREATE TABLE acc (id int PRIMARY KEY, g int, v bigint)",
    "CREATE TABLE dim (g int PRIMARY KEY, name varchar)",
];

/// `acc.g` is in `0..GROUPS`; `dim` has the groups `0..DIM_GROUPS` (the
/// others find no partner in the join).
const GROUPS: i32 = 10;
const DIM_GROUPS: i32 = 8;

/// Name, definition, and the columns read from the MV.
pub const MVS: &[(&str, &str, &str)] = &[
    (
        "mv_agg",
        "SELECT g, count(*) AS c, sum(v) AS s, min(v) AS mn, max(v) AS mx FROM acc GROUP BY g",
        "g, c, s, mn, mx",
    ),
    (
        "mv_join",
        "SELECT acc.id, acc.v, dim.name FROM acc JOIN dim ON acc.g = dim.g",
        "id, v, name",
    ),
];

/// Above this many rows in `acc` the workload deletes more.
const MAX_ROWS: usize = 1500;
/// At most this many uncertain statements are reconciled (2^n candidates).
pub const MAX_UNCERTAIN: usize = 14;

/// The contents of `acc`: id → (g, v).
pub type Model = BTreeMap<i32, (i32, i64)>;

/// One DML statement on `acc`, as SQL and as its effect on the model.
#[derive(Clone, Debug)]
pub enum Op {
    /// Rows with ids never used before.
    Insert(Vec<(i32, i32, i64)>),
    AddV {
        m: i32,
        r: i32,
        d: i64,
    },
    SetG {
        m: i32,
        r: i32,
        g: i32,
    },
    Delete {
        m: i32,
        r: i32,
        below: i64,
    },
}

impl Op {
    pub fn sql(&self) -> String {
        match self {
            Op::Insert(rows) => {
                let values: Vec<String> = rows
                    .iter()
                    .map(|(id, g, v)| format!("({id}, {g}, {v})"))
                    .collect();
                format!("INSERT INTO acc VALUES {}", values.join(", "))
            }
            Op::AddV { m, r, d } if *d < 0 => {
                format!("UPDATE acc SET v = v - {} WHERE id % {m} = {r}", -d)
            }
            Op::AddV { m, r, d } => format!("UPDATE acc SET v = v + {d} WHERE id % {m} = {r}"),
            Op::SetG { m, r, g } => format!("UPDATE acc SET g = {g} WHERE id % {m} = {r}"),
            Op::Delete { m, r, below } => {
                format!("DELETE FROM acc WHERE id % {m} = {r} AND v < {below}")
            }
        }
    }

    pub fn apply(&self, model: &mut Model) {
        match self {
            Op::Insert(rows) => {
                for (id, g, v) in rows {
                    model.insert(*id, (*g, *v));
                }
            }
            Op::AddV { m, r, d } => {
                for (id, (_, v)) in model.iter_mut() {
                    if id % m == *r {
                        *v += d;
                    }
                }
            }
            Op::SetG { m, r, g } => {
                for (id, (gr, _)) in model.iter_mut() {
                    if id % m == *r {
                        *gr = *g;
                    }
                }
            }
            Op::Delete { m, r, below } => model.retain(|id, (_, v)| !(id % m == *r && *v < *below)),
        }
    }
}

fn dim_name(g: i32) -> String {
    format!("grp{g}")
}

/// The rows `dim` always holds.
pub fn dim_insert() -> String {
    let rows: Vec<String> = (0..DIM_GROUPS)
        .map(|g| format!("({g}, '{}')", dim_name(g)))
        .collect();
    format!("INSERT INTO dim VALUES {}", rows.join(", "))
}

fn text<T: ToString>(v: T) -> Option<String> {
    Some(v.to_string())
}

fn acc_rows(m: &Model) -> Vec<Row> {
    m.iter()
        .map(|(id, (g, v))| vec![text(id), text(g), text(v)])
        .collect()
}

/// What an MV must hold over `acc` = `m`.
fn mv_rows(name: &str, m: &Model) -> Vec<Row> {
    match name {
        "mv_agg" => {
            let mut groups: BTreeMap<i32, (i64, i64, i64, i64)> = BTreeMap::new();
            for (g, v) in m.values() {
                let e = groups.entry(*g).or_insert((0, 0, i64::MAX, i64::MIN));
                e.0 += 1;
                e.1 += v;
                e.2 = e.2.min(*v);
                e.3 = e.3.max(*v);
            }
            groups
                .iter()
                .map(|(g, (c, s, mn, mx))| vec![text(g), text(c), text(s), text(mn), text(mx)])
                .collect()
        }
        _ => m
            .iter()
            .filter(|(_, (g, _))| (0..DIM_GROUPS).contains(g))
            .map(|(id, (g, v))| vec![text(id), text(v), Some(dim_name(*g))])
            .collect(),
    }
}

/// What the writing session saw, for the closing lines.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub statements: usize,
    pub acks: usize,
    pub failed_statements: usize,
    pub failed_flushes: usize,
    pub reconciles: usize,
    /// Uncertain statements that reconciliations found kept, and lost.
    pub kept: usize,
    pub lost: usize,
    /// Distinct errors of statements and FLUSHes (SQLSTATE: message).
    pub errors: BTreeSet<String>,
    /// The longest FLUSH that succeeded.
    pub slowest_flush: Duration,
}

/// The writing session's side: the generator, the acknowledged state and
/// the uncertain statements.
pub struct Writer {
    pub rng: StdRng,
    next_id: i32,
    pub acked: Model,
    pub uncertain: Vec<Op>,
    /// A statement or FLUSH failed since the last acknowledgement: no
    /// FLUSH vouches for what was sent, [`Writer::reconcile`] must run.
    pub failed: bool,
    /// The highest committed epoch a check saw: it never goes back.
    epoch_seen: u64,
    /// Everything sent and every event, for failure reports.
    pub log: Vec<String>,
    pub stats: Stats,
}

impl Writer {
    pub fn new(seed: u64) -> Writer {
        Writer {
            rng: StdRng::seed_from_u64(seed),
            next_id: 0,
            acked: Model::new(),
            uncertain: Vec::new(),
            failed: false,
            epoch_seen: 0,
            log: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Records an event in the log, stamped with the wall-clock time (UTC)
    /// to match the server's log.
    pub fn note(&mut self, what: &str) {
        self.log.push(format!(
            "/* {} */ {what}",
            chrono::Utc::now().format("%H:%M:%S%.3f")
        ));
    }

    /// `n` rows with fresh ids.
    pub fn insert(&mut self, n: usize) -> Op {
        let rows = (0..n)
            .map(|_| {
                let id = self.next_id;
                self.next_id += 1;
                (
                    id,
                    self.rng.gen_range(0..GROUPS),
                    self.rng.gen_range(-1000..1000),
                )
            })
            .collect();
        Op::Insert(rows)
    }

    /// A random statement; more deletes once the table is big.
    pub fn next_op(&mut self) -> Op {
        let mut rows = self.acked.clone();
        for op in &self.uncertain {
            op.apply(&mut rows);
        }
        let roll = self.rng.gen_range(0..10);
        if rows.len() > MAX_ROWS && roll < 5 {
            return Op::Delete {
                m: 3,
                r: self.rng.gen_range(0..3),
                below: i64::MAX,
            };
        }
        let (m, r) = {
            let m = self.rng.gen_range(5..14);
            (m, self.rng.gen_range(0..m))
        };
        match roll {
            0..=3 => {
                let n = self.rng.gen_range(5..40);
                self.insert(n)
            }
            4..=5 => Op::AddV {
                m,
                r,
                d: self.rng.gen_range(-50..50),
            },
            6..=7 => Op::SetG {
                m,
                r,
                g: self.rng.gen_range(0..GROUPS),
            },
            _ => Op::Delete {
                m,
                r,
                below: self.rng.gen_range(-800..800),
            },
        }
    }

    /// Sends a statement (uncertain from now on). The outer error is one
    /// that does not answer within `limit`; the inner one is its failure.
    pub async fn send(
        &mut self,
        eb: &Client,
        op: Op,
        limit: Duration,
    ) -> Result<Option<tokio_postgres::Error>, String> {
        let sql = op.sql();
        self.note(&sql);
        self.uncertain.push(op);
        self.stats.statements += 1;
        let outcome = run_raw_within(eb, &sql, limit)
            .await
            .map_err(|e| format!("`{sql}`: {e}"))?;
        match outcome {
            Ok(_) => Ok(None),
            Err(e) => {
                self.failed = true;
                self.stats.failed_statements += 1;
                self.error(&e);
                Ok(Some(e))
            }
        }
    }

    /// FLUSH; when it succeeds with no failure since the last
    /// acknowledgement, everything sent is acknowledged. Returns the error
    /// of a FLUSH that failed.
    pub async fn flush(
        &mut self,
        eb: &Client,
        limit: Duration,
    ) -> Result<Option<tokio_postgres::Error>, String> {
        self.note("FLUSH");
        let started = std::time::Instant::now();
        let outcome = run_raw_within(eb, "FLUSH", limit)
            .await
            .map_err(|e| format!("FLUSH: {e}"))?;
        match outcome {
            Ok(_) => {
                let took = started.elapsed();
                self.stats.slowest_flush = self.stats.slowest_flush.max(took);
                if took > Duration::from_secs(1) {
                    self.note(&format!("-- FLUSH took {} ms", took.as_millis()));
                }
                if !self.failed {
                    self.acknowledge();
                }
                Ok(None)
            }
            Err(e) => {
                self.failed = true;
                self.stats.failed_flushes += 1;
                self.error(&e);
                Ok(Some(e))
            }
        }
    }

    fn error(&mut self, e: &tokio_postgres::Error) {
        let what = describe_pg_error(e);
        self.note(&format!("-- failed: {what}"));
        let first = what.lines().next().unwrap_or_default();
        self.stats.errors.insert(first.chars().take(160).collect());
    }

    /// Everything sent is committed: it becomes the acknowledged state.
    pub fn acknowledge(&mut self) {
        for op in std::mem::take(&mut self.uncertain) {
            op.apply(&mut self.acked);
        }
        self.stats.acks += 1;
    }

    /// Finds which uncertain statements ebbflow kept (it must have
    /// committed every statement sent, or lost it for good) and makes
    /// that the acknowledged state. Returns which were kept (1) or lost
    /// (0), in order.
    pub async fn reconcile(&mut self, eb: &Client, limit: Duration) -> Result<String, String> {
        let recovered = read_acc(eb, limit).await?;
        let n = self.uncertain.len();
        if n > MAX_UNCERTAIN {
            return Err(format!(
                "{n} uncertain statements: too many to reconcile (the workload must \
                 acknowledge more often)"
            ));
        }
        let candidate = |mask: u32| {
            let mut m = self.acked.clone();
            for (i, op) in self.uncertain.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    op.apply(&mut m);
                }
            }
            m
        };
        // Prefixes first: the likely outcome, found in n + 1 tries.
        let prefixes = (0..=n).map(|k| (1u32 << k) - 1);
        let others = (0..1u32 << n).filter(|m| (m + 1) & m != 0);
        let Some(mask) = prefixes.chain(others).find(|&m| candidate(m) == recovered) else {
            let all = candidate((1u32 << n) - 1);
            let mut what = format!(
                "acc as recovered ({} rows) is not the acknowledged state plus any subset of \
                 the {n} uncertain statements\ncompared with the acknowledged state alone \
                 (expected = acknowledged):\n{}compared with every uncertain statement \
                 applied:\n{}uncertain statements, oldest first:\n",
                recovered.len(),
                diff_report(
                    &multiset(&acc_rows(&self.acked)),
                    &multiset(&acc_rows(&recovered)),
                    15
                ),
                diff_report(
                    &multiset(&acc_rows(&all)),
                    &multiset(&acc_rows(&recovered)),
                    15
                ),
            );
            for op in &self.uncertain {
                let _ = writeln!(what, "    {};", op.sql());
            }
            return Err(what);
        };
        let bits: String = (0..n)
            .map(|b| if mask & (1 << b) != 0 { '1' } else { '0' })
            .collect();
        self.acked = recovered;
        self.uncertain.clear();
        self.failed = false;
        self.stats.reconciles += 1;
        self.stats.kept += bits.matches('1').count();
        self.stats.lost += bits.matches('0').count();
        self.note(&format!(
            "-- reconciled: uncertain statements kept [{bits}]"
        ));
        Ok(bits)
    }

    /// After a recovery (or at any quiet point): `acc` is the acknowledged
    /// state plus a subset of the uncertain statements, `dim` is intact,
    /// each MV equals its query re-run as a batch SELECT and the model,
    /// the committed epoch did not go back and the version's levels count
    /// its files. Returns the reconciliation's bits.
    pub async fn check(&mut self, eb: &Client, limit: Duration) -> Result<String, String> {
        let kept = self.reconcile(eb, limit).await?;
        let dim = must(eb, "SELECT g, name FROM dim", limit).await?;
        let want: Vec<Row> = (0..DIM_GROUPS)
            .map(|g| vec![text(g), Some(dim_name(g))])
            .collect();
        if multiset(&dim) != multiset(&want) {
            return Err(format!(
                "dim differs from its rows (never changed since they were acknowledged)\n{}",
                diff_report(&multiset(&want), &multiset(&dim), 10)
            ));
        }
        for (name, def, cols) in MVS {
            let mv = multiset(&must(eb, &format!("SELECT {cols} FROM {name}"), limit).await?);
            let batch = multiset(&must(eb, def, limit).await?);
            if mv != batch {
                return Err(format!(
                    "MV {name} differs from its query re-run as a batch SELECT\n  definition: \
                     {def}\n(batch = expected, MV = actual)\n{}",
                    diff_report(&batch, &mv, 15)
                ));
            }
            let model = multiset(&mv_rows(name, &self.acked));
            if mv != model {
                return Err(format!(
                    "MV {name} differs from the acknowledged rows\n  definition: {def}\n\
                     (acknowledged = expected, MV = actual)\n{}",
                    diff_report(&model, &mv, 15)
                ));
            }
        }
        self.check_version(eb, limit).await?;
        Ok(kept)
    }

    async fn check_version(&mut self, eb: &Client, limit: Duration) -> Result<(), String> {
        // Two statements: read until a compaction did not commit between.
        for _ in 0..10 {
            let levels = must(
                eb,
                "SELECT max(committed_epoch), sum(file_count), count(*) FROM rw_hummock_version",
                limit,
            )
            .await?;
            let files = must(eb, "SELECT count(*) FROM rw_state_files", limit).await?;
            let again = must(
                eb,
                "SELECT max(committed_epoch), sum(file_count), count(*) FROM rw_hummock_version",
                limit,
            )
            .await?;
            if levels != again {
                continue;
            }
            let row = levels.first().cloned().unwrap_or_default();
            let epoch: u64 = row.first().and_then(cell).unwrap_or(0);
            let in_levels: i64 = row.get(1).and_then(cell).unwrap_or(-1);
            let n_files: i64 = first_cell(&files).unwrap_or(-1);
            if in_levels != n_files {
                return Err(format!(
                    "rw_hummock_version counts {in_levels} files, rw_state_files lists {n_files}"
                ));
            }
            if epoch < self.epoch_seen {
                return Err(format!(
                    "the committed epoch went back from {} to {epoch}",
                    self.epoch_seen
                ));
            }
            self.epoch_seen = epoch;
            return Ok(());
        }
        Err("rw_hummock_version changed under ten reads in a row".into())
    }

    /// The last `n` log lines, newest last.
    pub fn log_tail(&self, n: usize) -> String {
        let skip = self.log.len().saturating_sub(n);
        self.log[skip..].join("\n")
    }
}

/// A statement that must succeed.
pub async fn must(eb: &Client, sql: &str, limit: Duration) -> Result<Vec<Row>, String> {
    super::common::rows::must(eb, sql, limit).await
}

/// `acc` as ebbflow has it; an id twice is an error.
async fn read_acc(eb: &Client, limit: Duration) -> Result<Model, String> {
    let rows = must(eb, "SELECT id, g, v FROM acc", limit).await?;
    let mut m = Model::new();
    for r in &rows {
        let (Some(id), Some(g), Some(v)) = (
            r.first().and_then(cell::<i32>),
            r.get(1).and_then(cell::<i32>),
            r.get(2).and_then(cell::<i64>),
        ) else {
            return Err(format!("acc: unexpected row {r:?}"));
        };
        if m.insert(id, (g, v)).is_some() {
            return Err(format!("acc holds primary key {id} twice"));
        }
    }
    Ok(m)
}
