//! The random workload of the differential and crash tests: three tables
//! (two with a primary key, one without), a fixed set of MVs over them,
//! a generator of random DML, and [`Mirror`], the acknowledged state of a
//! workload kept in PostgreSQL for tests that crash ebbflow.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rust_decimal::Decimal;
use tokio_postgres::Client;

use super::rows::{diff_report, minus, multiset, run, Multiset};

pub const TABLES: &[&str] = &[
    "CREATE TABLE t1 (id int PRIMARY KEY, k int, v bigint, s varchar, n numeric, b boolean)",
    "CREATE TABLE t2 (k int, w int, name varchar)",
    "CREATE TABLE t3 (id int PRIMARY KEY, k int, x int)",
];

/// The MVs under test, in creation order (later ones may read earlier ones).
pub const MVS: &[(&str, &str)] = &[
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
        "mv_agg_filter",
        "SELECT k, count(*) FILTER (WHERE b) AS cb, sum(v) FILTER (WHERE s IS NOT NULL) AS ss, max(n) FILTER (WHERE v > 0) AS mn, count(DISTINCT s) FILTER (WHERE NOT b) AS cds FROM t1 GROUP BY k",
    ),
    (
        "mv_bool_bit",
        "SELECT k, bool_and(b) AS ba, bool_or(b) AS bo, bit_and(v) AS av, bit_or(v) AS ov, bit_xor(v) AS xv, bit_xor(DISTINCT id) AS xd FROM t1 GROUP BY k",
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
        "mv_string_agg",
        "SELECT k, string_agg(s, ',' ORDER BY id) AS sa, string_agg(DISTINCT s, '|' ORDER BY s DESC) FILTER (WHERE b) AS sd, string_agg(split_part(s, 'a', 1), k::varchar ORDER BY v DESC, id) AS sp FROM t1 GROUP BY k",
    ),
    (
        "mv_array_agg",
        "SELECT k, array_agg(v ORDER BY id) AS av, array_agg(DISTINCT s ORDER BY s) FILTER (WHERE b) AS sd, array_agg(n ORDER BY n DESC, id) AS an FROM t1 GROUP BY k",
    ),
    (
        "mv_regexp",
        "SELECT id, (regexp_match(s, '([aeiou])(.)'))[2] AS m2, regexp_match(s, 'r+', 'i') AS rm, ARRAY[k, id] AS pair, (ARRAY[s, 'x'])[1:1] AS s1 FROM t1 WHERE s ~ 'e' OR k > 5",
    ),
    (
        "mv_array_key",
        "SELECT regexp_match(s, '^(.)(.?)') AS head, count(*) AS c, array_agg(id ORDER BY id) AS ids FROM t1 GROUP BY regexp_match(s, '^(.)(.?)')",
    ),
    (
        "mv_unnest",
        "SELECT id, unnest(regexp_match(s, '(.)(.)?')) AS ch, v FROM t1 WHERE k IS NOT NULL",
    ),
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
        "mv_hop",
        "SELECT window_start, window_end, count(*) AS c, sum(v) AS sv, max(s) AS ms FROM HOP(t1, TIMESTAMP '2023-01-01 00:00:00' + v * INTERVAL '1' SECOND, INTERVAL '2' SECOND, INTERVAL '6' SECOND) GROUP BY window_start, window_end",
    ),
    (
        "mv_tumble_join",
        "SELECT w.id, w.window_start, t3.x FROM TUMBLE(t1, TIMESTAMP '2023-01-01 00:00:00' + k * INTERVAL '1' MINUTE, INTERVAL '5' MINUTE) w JOIN t3 ON w.id = t3.k WHERE w.window_end > TIMESTAMP '2023-01-01 00:00:00'",
    ),
    (
        "mv_over",
        "SELECT id, k, v, row_number() OVER (PARTITION BY k ORDER BY v, id) AS rn, rank() OVER (PARTITION BY k ORDER BY v) AS rk, dense_rank() OVER (PARTITION BY k ORDER BY s DESC) AS dr, lag(v) OVER (PARTITION BY k ORDER BY id) AS lg, lead(s, 2, 'end') OVER (PARTITION BY k ORDER BY id) AS ld, sum(v) OVER (PARTITION BY k ORDER BY v) AS running, count(*) OVER (PARTITION BY b) AS cb, max(n) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS mx, first_value(id) OVER (PARTITION BY k ORDER BY v DESC, id) AS fv FROM t1",
    ),
    (
        "mv_group_top2",
        "SELECT k, id, v FROM (SELECT k, id, v, row_number() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn FROM t1) x WHERE rn <= 2",
    ),
    (
        "mv_distinct_on",
        "SELECT DISTINCT ON (k) k, id, v, s FROM t1 ORDER BY k, v DESC NULLS LAST, id",
    ),
    (
        "mv_over_global",
        "SELECT id, x, row_number() OVER (ORDER BY x, id) AS rn, sum(x) OVER (ORDER BY id ROWS 2 PRECEDING) AS s3 FROM t3",
    ),
    (
        "mv_topn",
        "SELECT id, v, s FROM t1 ORDER BY v DESC, id LIMIT 5",
    ),
    (
        "mv_topn_asc",
        "SELECT id, x FROM t3 ORDER BY x, id LIMIT 3",
    ),
    (
        "mv_exists",
        "SELECT id, k, v FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.k = t1.k AND t2.w > 30)",
    ),
    (
        "mv_not_exists",
        "SELECT id, x FROM t3 WHERE NOT EXISTS (SELECT 1 FROM t1 WHERE t1.id = t3.k AND t1.v > 0)",
    ),
    (
        "mv_in",
        "SELECT k, w, name FROM t2 WHERE w IN (SELECT x FROM t3 WHERE x < 20)",
    ),
    (
        "mv_not_in",
        "SELECT id, k, x FROM t3 WHERE x NOT IN (SELECT w FROM t2 WHERE t2.k = t3.k % 6)",
    ),
    (
        "mv_not_in_uncorr",
        "SELECT id, v FROM t1 WHERE k NOT IN (SELECT k FROM t2 WHERE w > 45)",
    ),
    (
        "mv_ineq_join",
        "SELECT t3.id, t3.x, t2.w, t2.name FROM t3 JOIN t2 ON t3.x > t2.w + 35",
    ),
    (
        "mv_left_ineq",
        "SELECT t3.id, t3.x, t1.id AS id1 FROM t3 LEFT JOIN t1 ON t1.v > 990 - t3.x",
    ),
    (
        "mv_dyn_filter",
        "SELECT t1.id, t1.v FROM t1, (SELECT max(x) AS m FROM t3) s WHERE t1.v > s.m * 15",
    ),
    (
        "mv_dyn_filter_subquery",
        "SELECT id, k, x FROM t3 WHERE x <= (SELECT avg(w) FROM t2 WHERE w > 10) AND id % 2 = 0",
    ),
    (
        "mv_having_subquery",
        "SELECT k, count(*) AS n, sum(v) AS s FROM t1 GROUP BY k \
         HAVING count(*) >= (SELECT count(*) / (count(DISTINCT k) + 1) FROM t1)",
    ),
];

/// PostgreSQL's text of the MVs whose ebbflow text PostgreSQL cannot run
/// (the `TUMBLE`/`HOP` windows: `date_bin` from an origin aligned with the
/// epoch, and one row per window from `generate_series`).
const PG_DEFS: &[(&str, &str)] = &[
    (
        "mv_hop",
        "SELECT window_start, window_start + INTERVAL '6 seconds' AS window_end, count(*) AS c, sum(v) AS sv, max(s) AS ms FROM (SELECT t1.*, date_bin(INTERVAL '2 seconds', TIMESTAMP '2023-01-01 00:00:00' + v * INTERVAL '1 second', TIMESTAMP '1900-01-01') - g * INTERVAL '2 seconds' AS window_start FROM t1 CROSS JOIN generate_series(0, 2) g WHERE v IS NOT NULL) h GROUP BY window_start",
    ),
    (
        "mv_tumble_join",
        "SELECT w.id, w.window_start, t3.x FROM (SELECT t1.*, date_bin(INTERVAL '5 minutes', TIMESTAMP '2023-01-01 00:00:00' + k * INTERVAL '1 minute', TIMESTAMP '1900-01-01') AS window_start FROM t1) w JOIN t3 ON w.id = t3.k WHERE w.window_start + INTERVAL '5 minutes' > TIMESTAMP '2023-01-01 00:00:00'",
    ),
];

/// The definition of MV `name` for PostgreSQL: `def` itself, unless it
/// uses what only ebbflow has.
pub fn pg_def(name: &str, def: &'static str) -> &'static str {
    PG_DEFS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(def, |(_, d)| d)
}

/// Random data and statements, tracking the live keys of the keyed tables
/// so inserts never hit an existing key (ebbflow overwrites, PostgreSQL
/// would refuse).
pub struct Gen {
    pub rng: StdRng,
    pub t1_ids: BTreeSet<i32>,
    pub t3_ids: BTreeSet<i32>,
}

pub const WORDS: &[&str] = &[
    "apple", "Berry", "cherry", "date", "Elder", "fig", "", "grape",
];

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen {
            rng: StdRng::seed_from_u64(seed),
            t1_ids: BTreeSet::new(),
            t3_ids: BTreeSet::new(),
        }
    }

    /// Re-reads the live keys from PostgreSQL (after deletes, or after
    /// the mirror was reconciled with a recovered ebbflow).
    pub async fn refresh_ids(&mut self, pg: &Client) -> Result<(), String> {
        self.t1_ids = live_ids(pg, "t1").await?;
        self.t3_ids = live_ids(pg, "t3").await?;
        Ok(())
    }

    /// INSERTs of a few rows into each table, for before the MVs exist
    /// (so that their creation backfills).
    pub fn initial_rows(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.insert_t1(40));
        out.push(self.insert_t2(30));
        out.extend(self.insert_t3(30));
        out
    }

    pub fn null(&mut self, p: f64) -> bool {
        self.rng.gen_bool(p)
    }

    pub fn k(&mut self) -> String {
        if self.null(0.08) {
            "NULL".into()
        } else {
            self.rng.gen_range(0..6).to_string()
        }
    }

    pub fn word(&mut self) -> String {
        if self.null(0.15) {
            "NULL".into()
        } else {
            format!("'{}'", WORDS[self.rng.gen_range(0..WORDS.len())])
        }
    }

    pub fn numeric(&mut self) -> String {
        if self.null(0.15) {
            return "NULL".into();
        }
        if self.null(0.04) {
            let special = ["'NaN'", "'Infinity'", "'-Infinity'"];
            return special[self.rng.gen_range(0..special.len())].into();
        }
        let cents: i64 = self.rng.gen_range(-100_000..100_000);
        let scale = self.rng.gen_range(0..4);
        let d = Decimal::new(cents, 2).round_dp(scale);
        d.to_string()
    }

    pub fn bool(&mut self) -> String {
        match self.rng.gen_range(0..5) {
            0 => "NULL".into(),
            1 | 2 => "true".into(),
            _ => "false".into(),
        }
    }

    pub fn int_or_null(&mut self, lo: i64, hi: i64, p_null: f64) -> String {
        if self.null(p_null) {
            "NULL".into()
        } else {
            self.rng.gen_range(lo..hi).to_string()
        }
    }

    pub fn fresh_id(&mut self, which: u8) -> Option<i32> {
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

    pub fn insert_t1(&mut self, n: usize) -> Option<String> {
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

    pub fn insert_t2(&mut self, n: usize) -> String {
        let rows: Vec<String> = (0..n)
            .map(|_| {
                let (k, w, name) = (self.k(), self.int_or_null(0, 50, 0.1), self.word());
                format!("({k}, {w}, {name})")
            })
            .collect();
        format!("INSERT INTO t2 VALUES {}", rows.join(", "))
    }

    pub fn insert_t3(&mut self, n: usize) -> Option<String> {
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
    pub fn pred(&mut self, table: &str) -> String {
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

    pub fn update(&mut self) -> String {
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

    pub fn delete(&mut self) -> String {
        let table = ["t1", "t2", "t3"][self.rng.gen_range(0..3)];
        let p = self.pred(table);
        format!("DELETE FROM {table} WHERE {p}")
    }

    /// One round: a few random DML statements.
    pub fn round(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..self.rng.gen_range(3..8) {
            out.extend(self.maybe_statement());
        }
        out
    }

    /// One random DML statement.
    pub fn statement(&mut self) -> String {
        loop {
            if let Some(s) = self.maybe_statement() {
                return s;
            }
        }
    }

    /// One random DML statement, `None` if t1 or t3 has no free key.
    fn maybe_statement(&mut self) -> Option<String> {
        match self.rng.gen_range(0..10) {
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
        }
    }
}

/// Re-reads the live keys from PostgreSQL after a round of deletes.
pub async fn live_ids(pg: &Client, table: &str) -> Result<BTreeSet<i32>, String> {
    let rows = run(pg, &format!("SELECT id FROM {table}")).await?;
    Ok(rows
        .iter()
        .filter_map(|r| r[0].as_deref().and_then(|s| s.parse().ok()))
        .collect())
}

/// The table a generated DML statement writes (`INSERT INTO t`,
/// `UPDATE t`, `DELETE FROM t`).
pub fn target_table(sql: &str) -> Option<&str> {
    let mut words = sql.split_whitespace();
    match words.next()?.to_ascii_uppercase().as_str() {
        "INSERT" | "DELETE" => words.nth(1),
        "UPDATE" => words.next(),
        _ => None,
    }
}

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
            self.both_ddl(eb, ddl, ddl).await?;
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
        let sql = format!("BEGIN; {}; COMMIT", stmts.join("; "));
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
            let _ = write!(sql, "{s}; ");
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
