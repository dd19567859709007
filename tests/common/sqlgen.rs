//! The differential tests' shared pieces: the tables and MVs under test,
//! the random DML generator and comparison of results by value.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use rand::rngs::StdRng;
use rand::Rng;
use rust_decimal::Decimal;
use tokio_postgres::{Client, SimpleQueryMessage};

use super::describe_pg_error;

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

/// Runs one statement, returning its rows (text, NULL as `None`).
pub async fn run(client: &Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
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

pub fn multiset(rows: &[Vec<Option<String>>]) -> BTreeMap<Vec<String>, i64> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(r.iter().map(canonical).collect()).or_insert(0) += 1;
    }
    m
}

/// Rows in `a` missing from `b` (with multiplicity).
pub fn minus(a: &BTreeMap<Vec<String>, i64>, b: &BTreeMap<Vec<String>, i64>) -> Vec<String> {
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
pub struct Gen {
    pub rng: StdRng,
    pub t1_ids: BTreeSet<i32>,
    pub t3_ids: BTreeSet<i32>,
}

pub const WORDS: &[&str] = &[
    "apple", "Berry", "cherry", "date", "Elder", "fig", "", "grape",
];

impl Gen {
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
