//! Differential test against PostgreSQL 15.
//!
//! For each seed of a fixed list: a throwaway PostgreSQL and a fresh
//! `ebbflow playground` get the same random tables; ebbflow maintains a
//! fixed set of materialized views (filters, projections, every aggregate
//! grouped and global, every join kind and a 3-way join, DISTINCT, UNION
//! ALL, HAVING, MV on MV, top-N), PostgreSQL gets plain views with the same
//! definitions. Rounds of random INSERT/UPDATE/DELETE batches run in both;
//! after each round ebbflow FLUSHes and every MV is compared, as a multiset
//! of rows in text format (numbers compared by value), with the view.
//!
//! A mismatch fails with the seed, the MV, the missing/extra rows and the
//! statement log (also written to `target/differential-seed-<seed>.log`).
//!
//! Environment: `DIFF_SEEDS=1,2,3` overrides the seeds, `DIFF_ROUNDS=n` the
//! rounds per seed, `DIFF_SEED_TIMEOUT_SECS` (150) bounds one seed and
//! `DIFF_STMT_TIMEOUT_SECS` (30) one ebbflow statement,
//! `DIFF_VERBOSE=1` prints the size of every MV, and
//! `DIFF_SELF_CHECK=1` checks the harness against a second PostgreSQL
//! database instead of ebbflow. Without PostgreSQL 15 the test is skipped, except under
//! `CI=true` where that is a failure.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::str::FromStr;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rust_decimal::Decimal;
use tokio_postgres::{Client, SimpleQueryMessage};

use common::{describe_pg_error, EbbflowServer, Postgres, ServerOptions};

const DEFAULT_SEEDS: &[u64] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const DEFAULT_ROUNDS: usize = 12;

fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

const TABLES: &[&str] = &[
    "CREATE TABLE t1 (id int PRIMARY KEY, k int, v bigint, s varchar, n numeric, b boolean)",
    "CREATE TABLE t2 (k int, w int, name varchar)",
    "CREATE TABLE t3 (id int PRIMARY KEY, k int, x int)",
];

/// The MVs under test, in creation order (later ones may read earlier ones).
const MVS: &[(&str, &str)] = &[
    (
        "mv_filter",
        "SELECT id, k, v, s FROM t1 WHERE v > 0 AND (b OR s IS NULL)",
    ),
    (
        "mv_proj",
        "SELECT id, v * 2 + 1 AS e, CASE WHEN n > 0 THEN 'pos' WHEN n < 0 THEN 'neg' ELSE 'zero' END AS sign, \
         COALESCE(s, 'none') AS s2, upper(s) AS up, length(s) AS len, k IS NULL AS k_null, NOT b AS nb, \
         abs(v) AS av, round(n, 1) AS rn FROM t1",
    ),
    (
        "mv_count",
        "SELECT k, count(*) AS c, count(s) AS cs FROM t1 GROUP BY k",
    ),
    (
        "mv_sum",
        "SELECT k, sum(v) AS sv, sum(n) AS sn FROM t1 GROUP BY k",
    ),
    (
        "mv_minmax",
        "SELECT k, min(v) AS mn, max(v) AS mx, min(s) AS mns, max(s) AS mxs FROM t1 GROUP BY k",
    ),
    (
        "mv_avg",
        "SELECT k, avg(v) AS av, avg(n) AS an FROM t1 GROUP BY k",
    ),
    (
        "mv_global",
        "SELECT count(*) AS c, count(n) AS cn, sum(v) AS sv, min(v) AS mn, max(v) AS mx, avg(n) AS an FROM t1",
    ),
    (
        "mv_global2",
        "SELECT count(*) AS c, sum(w) AS sw, min(name) AS mn, max(w) AS mx, avg(w) AS aw FROM t2",
    ),
    (
        "mv_having",
        "SELECT k, count(*) AS c, sum(w) AS sw FROM t2 GROUP BY k HAVING count(*) > 2",
    ),
    (
        "mv_inner",
        "SELECT t1.id, t1.k, t2.w, t2.name FROM t1 JOIN t2 ON t1.k = t2.k",
    ),
    (
        "mv_left",
        "SELECT t3.id, t3.x, t1.v, t1.s FROM t3 LEFT JOIN t1 ON t3.k = t1.id",
    ),
    (
        "mv_right",
        "SELECT t2.k, t2.w, t3.id, t3.x FROM t3 RIGHT JOIN t2 ON t3.x = t2.w",
    ),
    (
        "mv_full",
        "SELECT t1.id, t1.k, t3.id AS id3, t3.x FROM t1 FULL JOIN t3 ON t1.id = t3.k",
    ),
    (
        "mv_3way",
        "SELECT t1.id, t2.name, t3.x FROM t1 JOIN t2 ON t1.k = t2.k LEFT JOIN t3 ON t3.k = t1.id WHERE t2.w < 25",
    ),
    (
        "mv_agg_join",
        "SELECT t1.k, count(*) AS c, sum(t3.x) AS sx, max(t1.v) AS mv FROM t1 JOIN t3 ON t1.id = t3.k GROUP BY t1.k",
    ),
    ("mv_distinct", "SELECT DISTINCT k, s FROM t1"),
    (
        "mv_union",
        "SELECT k, id AS val FROM t1 WHERE v < 0 UNION ALL SELECT k, w AS val FROM t2",
    ),
    (
        "mv_on_mv",
        "SELECT s.k, s.sv, c.c FROM mv_sum s JOIN mv_count c ON s.k = c.k WHERE c.c > 1",
    ),
    (
        "mv_on_mv_agg",
        "SELECT count(*) AS groups, sum(c) AS rows FROM mv_count",
    ),
    (
        "mv_topn",
        "SELECT id, v, s FROM t1 ORDER BY v DESC, id LIMIT 5",
    ),
    (
        "mv_topn_asc",
        "SELECT id, x FROM t3 ORDER BY x, id LIMIT 3",
    ),
];

/// The system under test: ebbflow, or (`DIFF_SELF_CHECK=1`, to check the
/// harness itself) a second PostgreSQL database where MVs become views and
/// FLUSH is a no-op.
struct Eb {
    client: Client,
    self_check: bool,
}

impl Eb {
    async fn run(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
        if !self.self_check {
            // A hang is reported at the statement that hangs, with the log.
            let limit = std::time::Duration::from_secs(
                std::env::var("DIFF_STMT_TIMEOUT_SECS")
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(30),
            );
            return match tokio::time::timeout(limit, run(&self.client, sql)).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {} s", limit.as_secs())),
            };
        }
        if sql == "FLUSH" {
            return Ok(Vec::new());
        }
        let sql = sql.replace("CREATE MATERIALIZED VIEW", "CREATE VIEW");
        run(&self.client, &sql).await
    }
}

/// Runs one statement, returning its rows (text, NULL as `None`).
async fn run(client: &Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let msgs = client
        .simple_query(sql)
        .await
        .map_err(|e| describe_pg_error(&e))?;
    let mut rows = Vec::new();
    for m in msgs {
        if let SimpleQueryMessage::Row(r) = m {
            rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
        }
    }
    Ok(rows)
}

/// Text of a value for comparison: numbers by value (so `1.50` = `1.5` and
/// PostgreSQL's 16-digit avg matches a longer one), the rest verbatim.
fn canonical(v: &Option<String>) -> String {
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

fn multiset(rows: &[Vec<Option<String>>]) -> BTreeMap<Vec<String>, i64> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(r.iter().map(canonical).collect()).or_insert(0) += 1;
    }
    m
}

/// Rows in `a` missing from `b` (with multiplicity).
fn minus(a: &BTreeMap<Vec<String>, i64>, b: &BTreeMap<Vec<String>, i64>) -> Vec<String> {
    let mut out = Vec::new();
    for (row, &n) in a {
        let have = b.get(row).copied().unwrap_or(0);
        for _ in 0..(n - have).max(0) {
            out.push(row.join(" | "));
        }
    }
    out
}

/// Random data and statements, tracking the live keys of the keyed tables
/// so inserts never hit an existing key (ebbflow overwrites, PostgreSQL
/// would refuse).
struct Gen {
    rng: StdRng,
    t1_ids: BTreeSet<i32>,
    t3_ids: BTreeSet<i32>,
}

const WORDS: &[&str] = &[
    "apple", "Berry", "cherry", "date", "Elder", "fig", "", "grape",
];

impl Gen {
    fn null(&mut self, p: f64) -> bool {
        self.rng.gen_bool(p)
    }

    fn k(&mut self) -> String {
        if self.null(0.08) {
            "NULL".into()
        } else {
            self.rng.gen_range(0..6).to_string()
        }
    }

    fn word(&mut self) -> String {
        if self.null(0.15) {
            "NULL".into()
        } else {
            format!("'{}'", WORDS[self.rng.gen_range(0..WORDS.len())])
        }
    }

    fn numeric(&mut self) -> String {
        if self.null(0.15) {
            return "NULL".into();
        }
        let cents: i64 = self.rng.gen_range(-100_000..100_000);
        let scale = self.rng.gen_range(0..4);
        let d = Decimal::new(cents, 2).round_dp(scale);
        d.to_string()
    }

    fn bool(&mut self) -> String {
        match self.rng.gen_range(0..5) {
            0 => "NULL".into(),
            1 | 2 => "true".into(),
            _ => "false".into(),
        }
    }

    fn int_or_null(&mut self, lo: i64, hi: i64, p_null: f64) -> String {
        if self.null(p_null) {
            "NULL".into()
        } else {
            self.rng.gen_range(lo..hi).to_string()
        }
    }

    fn fresh_id(&mut self, which: u8) -> Option<i32> {
        let set = if which == 1 {
            &self.t1_ids
        } else {
            &self.t3_ids
        };
        if set.len() >= 240 {
            return None;
        }
        loop {
            let id = self.rng.gen_range(0..250);
            if !set.contains(&id) {
                return Some(id);
            }
        }
    }

    fn insert_t1(&mut self, n: usize) -> Option<String> {
        let mut rows = Vec::new();
        for _ in 0..n {
            let Some(id) = self.fresh_id(1) else { break };
            self.t1_ids.insert(id);
            let (k, v, s, num, b) = (
                self.k(),
                self.int_or_null(-1000, 1000, 0.1),
                self.word(),
                self.numeric(),
                self.bool(),
            );
            rows.push(format!("({id}, {k}, {v}, {s}, {num}, {b})"));
        }
        (!rows.is_empty()).then(|| format!("INSERT INTO t1 VALUES {}", rows.join(", ")))
    }

    fn insert_t2(&mut self, n: usize) -> String {
        let rows: Vec<String> = (0..n)
            .map(|_| {
                let (k, w, name) = (self.k(), self.int_or_null(0, 50, 0.1), self.word());
                format!("({k}, {w}, {name})")
            })
            .collect();
        format!("INSERT INTO t2 VALUES {}", rows.join(", "))
    }

    fn insert_t3(&mut self, n: usize) -> Option<String> {
        let mut rows = Vec::new();
        for _ in 0..n {
            let Some(id) = self.fresh_id(3) else { break };
            self.t3_ids.insert(id);
            let (k, x) = (self.int_or_null(0, 250, 0.1), self.int_or_null(0, 50, 0.1));
            rows.push(format!("({id}, {k}, {x})"));
        }
        (!rows.is_empty()).then(|| format!("INSERT INTO t3 VALUES {}", rows.join(", ")))
    }

    /// A predicate selecting a small random subset of a table's rows.
    fn pred(&mut self, table: &str) -> String {
        match (table, self.rng.gen_range(0..4)) {
            ("t2", 0) => format!("k = {}", self.rng.gen_range(0..6)),
            ("t2", 1) => format!("w % 7 = {}", self.rng.gen_range(0..7)),
            ("t2", 2) => "k IS NULL OR w IS NULL".into(),
            ("t2", _) => format!("name = '{}'", WORDS[self.rng.gen_range(0..WORDS.len())]),
            ("t1", 0) => format!("k = {}", self.rng.gen_range(0..6)),
            ("t1", 1) => format!("v > {}", self.rng.gen_range(600..1000)),
            ("t1", 2) => format!("s = '{}' AND b", WORDS[self.rng.gen_range(0..WORDS.len())]),
            (_, _) => format!("id % 9 = {}", self.rng.gen_range(0..9)),
        }
    }

    fn update(&mut self) -> String {
        match self.rng.gen_range(0..6) {
            0 => {
                let p = self.pred("t1");
                format!(
                    "UPDATE t1 SET v = v + {} WHERE {p}",
                    self.rng.gen_range(-50..50)
                )
            }
            1 => {
                let (s, b, p) = (self.word(), self.bool(), self.pred("t1"));
                format!("UPDATE t1 SET s = {s}, b = {b} WHERE {p}")
            }
            2 => {
                let (k, n, p) = (self.k(), self.numeric(), self.pred("t1"));
                format!("UPDATE t1 SET k = {k}, n = {n} WHERE {p}")
            }
            3 => {
                let (w, p) = (self.int_or_null(0, 50, 0.1), self.pred("t2"));
                format!("UPDATE t2 SET w = {w} WHERE {p}")
            }
            4 => {
                let (k, p) = (self.k(), self.pred("t2"));
                format!("UPDATE t2 SET k = {k}, name = upper(name) WHERE {p}")
            }
            _ => {
                let (x, k, p) = (
                    self.int_or_null(0, 50, 0.1),
                    self.int_or_null(0, 250, 0.1),
                    self.pred("t3"),
                );
                format!("UPDATE t3 SET x = {x}, k = {k} WHERE {p}")
            }
        }
    }

    fn delete(&mut self) -> String {
        let table = ["t1", "t2", "t3"][self.rng.gen_range(0..3)];
        let p = self.pred(table);
        format!("DELETE FROM {table} WHERE {p}")
    }

    /// One round: a few random DML statements.
    fn round(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..self.rng.gen_range(3..8) {
            let stmt = match self.rng.gen_range(0..10) {
                0..=1 => {
                    let n = self.rng.gen_range(1..15);
                    self.insert_t1(n)
                }
                2..=3 => {
                    let n = self.rng.gen_range(1..10);
                    Some(self.insert_t2(n))
                }
                4 => {
                    let n = self.rng.gen_range(1..10);
                    self.insert_t3(n)
                }
                5..=7 => Some(self.update()),
                _ => Some(self.delete()),
            };
            out.extend(stmt);
        }
        out
    }
}

struct SeedRun {
    seed: u64,
    log: Vec<String>,
}

impl SeedRun {
    fn fail(&self, what: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("differential-seed-{}.log", self.seed));
        let _ = std::fs::write(&path, self.log.join(";\n") + ";\n");
        let tail: Vec<&String> = self.log.iter().rev().take(60).collect();
        let mut msg = format!(
            "seed {}: {what}\n--- last statements (newest last) ---\n",
            self.seed
        );
        for s in tail.into_iter().rev() {
            let _ = writeln!(msg, "{s};");
        }
        let _ = writeln!(msg, "--- full statement log: {} ---", path.display());
        msg
    }

    /// Runs a DML statement in both; both must succeed.
    async fn both(&mut self, pg: &Client, eb: &Eb, sql: &str) -> Result<(), String> {
        self.log.push(sql.to_string());
        let p = run(pg, sql).await;
        let e = eb.run(sql).await;
        match (p, e) {
            (Ok(_), Ok(_)) => Ok(()),
            (Err(pe), Ok(_)) => Err(self.fail(&format!(
                "PostgreSQL failed but ebbflow succeeded on `{sql}`: {pe}"
            ))),
            (Ok(_), Err(ee)) => Err(self.fail(&format!("ebbflow failed on `{sql}`: {ee}"))),
            (Err(pe), Err(ee)) => Err(self.fail(&format!(
                "both failed on `{sql}` (the generator is wrong): PostgreSQL: {pe}; ebbflow: {ee}"
            ))),
        }
    }

    async fn compare_all(&mut self, pg: &Client, eb: &Eb, round: usize) -> Result<(), String> {
        self.log.push("FLUSH".into());
        eb.run("FLUSH")
            .await
            .map_err(|e| self.fail(&format!("FLUSH failed: {e}")))?;
        for (name, def) in MVS {
            let sql = format!("SELECT * FROM {name}");
            let expected = run(pg, &sql)
                .await
                .map_err(|e| self.fail(&format!("PostgreSQL view {name}: {e}")))?;
            let actual = eb
                .run(&sql)
                .await
                .map_err(|e| self.fail(&format!("ebbflow `{sql}`: {e}")))?;
            if std::env::var("DIFF_VERBOSE").is_ok_and(|v| v == "1") {
                say(&format!(
                    "  seed {} round {round}: {name} {} rows",
                    self.seed,
                    expected.len()
                ));
            }
            let (exp, act) = (multiset(&expected), multiset(&actual));
            if exp != act {
                let missing = minus(&exp, &act);
                let extra = minus(&act, &exp);
                let mut what = format!(
                    "MV {name} differs after round {round}\n  definition: {def}\n  \
                     PostgreSQL {} rows, ebbflow {} rows\n",
                    expected.len(),
                    actual.len()
                );
                let _ = writeln!(what, "  missing in ebbflow ({}):", missing.len());
                for r in missing.iter().take(20) {
                    let _ = writeln!(what, "    - {r}");
                }
                let _ = writeln!(what, "  extra in ebbflow ({}):", extra.len());
                for r in extra.iter().take(20) {
                    let _ = writeln!(what, "    + {r}");
                }
                return Err(self.fail(&what));
            }
        }
        Ok(())
    }
}

/// Re-reads the live keys from PostgreSQL after a round of deletes.
async fn live_ids(pg: &Client, table: &str) -> Result<BTreeSet<i32>, String> {
    let rows = run(pg, &format!("SELECT id FROM {table}")).await?;
    Ok(rows
        .iter()
        .filter_map(|r| r[0].as_deref().and_then(|s| s.parse().ok()))
        .collect())
}

async fn run_seed(pg: &Postgres, seed: u64, rounds: usize) -> Result<(), String> {
    let db = format!("diff_{seed}");
    let admin = common::connect(&pg.conn_str("postgres"))
        .await
        .map_err(|e| describe_pg_error(&e))?;
    run(&admin, &format!("DROP DATABASE IF EXISTS {db}")).await?;
    run(&admin, &format!("CREATE DATABASE {db}")).await?;
    let pgc = common::connect(&pg.conn_str(&db))
        .await
        .map_err(|e| describe_pg_error(&e))?;

    let self_check = std::env::var("DIFF_SELF_CHECK").is_ok_and(|v| v == "1");
    let mut server = if self_check {
        run(&admin, &format!("DROP DATABASE IF EXISTS {db}_b")).await?;
        run(&admin, &format!("CREATE DATABASE {db}_b")).await?;
        None
    } else {
        let opts = ServerOptions::default();
        Some(
            tokio::task::spawn_blocking(move || EbbflowServer::start(&opts))
                .await
                .map_err(|e| e.to_string())??,
        )
    };
    let eb_conn = match &server {
        Some(s) => s.conn_str(),
        None => pg.conn_str(&format!("{db}_b")),
    };
    let result = async {
        let client = common::connect(&eb_conn)
            .await
            .map_err(|e| format!("connect to ebbflow: {}", describe_pg_error(&e)))?;
        let eb = Eb { client, self_check };
        let mut state = SeedRun {
            seed,
            log: Vec::new(),
        };
        let mut gen = Gen {
            rng: StdRng::seed_from_u64(seed),
            t1_ids: BTreeSet::new(),
            t3_ids: BTreeSet::new(),
        };
        for ddl in TABLES {
            state.both(&pgc, &eb, ddl).await?;
        }
        // Rows before the MVs exist: their creation must backfill them.
        let mut initial = Vec::new();
        initial.extend(gen.insert_t1(40));
        initial.push(gen.insert_t2(30));
        initial.extend(gen.insert_t3(30));
        for s in &initial {
            state.both(&pgc, &eb, s).await?;
        }
        for (name, def) in MVS {
            let pg_sql = format!("CREATE VIEW {name} AS {def}");
            let eb_sql = format!("CREATE MATERIALIZED VIEW {name} AS {def}");
            state.log.push(eb_sql.clone());
            run(&pgc, &pg_sql)
                .await
                .map_err(|e| state.fail(&format!("PostgreSQL `{pg_sql}`: {e}")))?;
            eb.run(&eb_sql)
                .await
                .map_err(|e| state.fail(&format!("ebbflow `{eb_sql}`: {e}")))?;
        }
        state.compare_all(&pgc, &eb, 0).await?;
        for round in 1..=rounds {
            for s in gen.round() {
                state.both(&pgc, &eb, &s).await?;
            }
            gen.t1_ids = live_ids(&pgc, "t1").await?;
            gen.t3_ids = live_ids(&pgc, "t3").await?;
            state.compare_all(&pgc, &eb, round).await?;
        }
        Ok::<_, String>(state.log.len())
    }
    .await;
    let alive = server.as_mut().is_none_or(|s| s.is_running());
    let log_tail = server.as_ref().map(|s| s.log.tail(30)).unwrap_or_default();
    if let Some(mut server) = server.take() {
        tokio::task::spawn_blocking(move || server.stop())
            .await
            .ok();
    }
    drop(pgc);
    for d in [db.clone(), format!("{db}_b")] {
        let _ = run(&admin, &format!("DROP DATABASE IF EXISTS {d} WITH (FORCE)")).await;
    }
    match result {
        Ok(n) => {
            say(&format!("differential: seed {seed} ok ({n} statements)"));
            Ok(())
        }
        Err(e) if !alive => Err(format!(
            "{e}\nthe ebbflow server died; last log lines:\n{log_tail}"
        )),
        Err(e) => Err(format!("{e}\n--- last server log lines ---\n{log_tail}")),
    }
}

#[test]
fn differential_against_postgres() {
    if !common::postgres_available() {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !in_ci,
            "PostgreSQL 15 is not installed ({}) but CI=true",
            common::pg_bin_dir().display()
        );
        say("differential: skipped, PostgreSQL 15 is not installed");
        return;
    }
    let seeds: Vec<u64> = match std::env::var("DIFF_SEEDS") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => DEFAULT_SEEDS.to_vec(),
    };
    let rounds = std::env::var("DIFF_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_ROUNDS);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let started = Instant::now();
    let pg = Postgres::start().expect("start a throwaway PostgreSQL 15");
    let mut failures = Vec::new();
    for &seed in &seeds {
        let budget = std::time::Duration::from_secs(
            std::env::var("DIFF_SEED_TIMEOUT_SECS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(150),
        );
        let outcome = rt.block_on(async {
            match tokio::time::timeout(budget, run_seed(&pg, seed, rounds)).await {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "seed {seed}: timed out after {} s (a statement or FLUSH hangs?)",
                    budget.as_secs()
                )),
            }
        });
        if let Err(e) = outcome {
            say(&format!("differential: seed {seed} FAILED\n{e}\n"));
            failures.push(seed);
        }
    }
    drop(pg);
    say(&format!(
        "differential: {} passed, {} failed ({} MVs, {rounds} rounds per seed) in {:.1}s",
        seeds.len() - failures.len(),
        failures.len(),
        MVS.len(),
        started.elapsed().as_secs_f64()
    ));
    assert!(
        failures.is_empty(),
        "differential failed for seeds {failures:?}"
    );
}

#[test]
fn comparison_is_by_value() {
    let s = |v: &str| Some(v.to_string());
    assert_eq!(canonical(&s("1.50")), canonical(&s("1.5")));
    assert_eq!(
        canonical(&s("23.3333333333333333")),
        canonical(&s("23.333333333333333333333333333"))
    );
    assert_eq!(canonical(&s("-0")), canonical(&s("0.00")));
    assert_ne!(canonical(&s("1.5")), canonical(&s("1.6")));
    assert_ne!(
        canonical(&None),
        canonical(&s("NULL")).replace("NULL", "null")
    );
    assert_eq!(canonical(&s("apple")), "apple");
    let a = multiset(&[vec![s("1"), None], vec![s("1"), None], vec![s("2"), s("x")]]);
    let b = multiset(&[
        vec![s("1.0"), None],
        vec![s("2"), s("x")],
        vec![s("3"), s("y")],
    ]);
    assert_eq!(minus(&a, &b), vec!["1 | NULL".to_string()]);
    assert_eq!(minus(&b, &a), vec!["3 | y".to_string()]);
}
