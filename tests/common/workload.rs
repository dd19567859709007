//! The random workload of the differential, scale, chaos, crash and
//! cluster tests: six tables (two with a primary key, one without, an
//! append-only one with a watermark, one with `ON CONFLICT DO UPDATE IF NOT
//! NULL`, one keyed by a numeric), a fixed set of MVs over them, a
//! generator of random DML, and [`pg_sql`], PostgreSQL's text of a
//! statement where ebbflow's differs.
//!
//! Numeric key columns (`t2.m`, `t3.m`, `t6.m`) take few values, each
//! written in several ways (`1`, `1.0`, `1.00`; `0`, `-0.00`), and MVs
//! group, join, deduplicate and key on them and on their products and
//! quotients: equal values written differently are one key (issue 34).
//!
//! `t3.tz` holds instants around the night of a DST change in New York,
//! written with different offsets; MVs group, join and filter on it in
//! an explicit zone (the sessions of both databases are in UTC).
//!
//! `t7.doc` holds JSON documents (some keys missing, numbers written as
//! `2` or `2.0`, some documents NULL); MVs group, join and filter on their
//! fields.

use std::collections::BTreeSet;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rust_decimal::Decimal;
use tokio_postgres::Client;

use super::rows::run;

pub const TABLES: &[&str] = &[
    "CREATE TABLE t1 (id int PRIMARY KEY, k int, v bigint, s varchar, n numeric, b boolean)",
    "CREATE TABLE t2 (k int, w int, name varchar, m numeric)",
    "CREATE TABLE t3 (id int PRIMARY KEY, k int, x int, m numeric, tz timestamptz)",
    T4,
    T5,
    "CREATE TABLE t6 (m numeric PRIMARY KEY, v int, w int)",
    "CREATE TABLE t7 (id int, doc jsonb)",
];

/// Append-only with a watermark: only inserted, with `ts` never falling
/// from one row to the next (the generator sends one statement at a time),
/// so no row is ever below the watermark (ebbflow drops late rows;
/// PostgreSQL has nothing to compare that with), while its 10 s windows
/// close, and their state goes, every few inserts.
const T4: &str = "CREATE TABLE t4 (id int, ts timestamp, v int, \
                  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) APPEND ONLY";

/// The most `t4.ts` rises from one row to the next.
const T4_MAX_STEP_SECS: i64 = 3;

/// An insert on an existing key keeps the old value of each column the
/// new row has NULL in; PostgreSQL does it with `INSERT … ON CONFLICT`.
const T5: &str =
    "CREATE TABLE t5 (id int PRIMARY KEY, v int, w varchar) ON CONFLICT DO UPDATE IF NOT NULL";

/// PostgreSQL's text of the tables ebbflow declares with what PostgreSQL
/// has not.
const PG_TABLES: &[(&str, &str)] = &[
    (T4, "CREATE TABLE t4 (id int, ts timestamp, v int)"),
    (T5, "CREATE TABLE t5 (id int PRIMARY KEY, v int, w varchar)"),
];

/// What makes PostgreSQL's insert into `t5` do what ebbflow's does.
const T5_PG_UPSERT: &str = "ON CONFLICT (id) DO UPDATE SET v = COALESCE(excluded.v, t5.v), \
                            w = COALESCE(excluded.w, t5.w)";

/// An insert into `t6` on an existing key overwrites the row (ebbflow's
/// default for a table with a primary key); PostgreSQL keeps the key as
/// first written, equal to the new one.
const T6_PG_UPSERT: &str = "ON CONFLICT (m) DO UPDATE SET v = excluded.v, w = excluded.w";

/// PostgreSQL's text of a workload statement (table DDL or DML) that
/// ebbflow runs as `sql`.
pub fn pg_sql(sql: &str) -> String {
    if let Some((_, pg)) = PG_TABLES.iter().find(|(eb, _)| *eb == sql) {
        return pg.to_string();
    }
    if sql.starts_with("INSERT INTO t5 ") {
        return format!("{sql} {T5_PG_UPSERT}");
    }
    if sql.starts_with("INSERT INTO t6 ") {
        return format!("{sql} {T6_PG_UPSERT}");
    }
    sql.to_string()
}

mod mvs;
pub use mvs::{pg_def, MVS};

/// Random data and statements, tracking the live keys of t1 and t3 so
/// inserts never hit an existing key there (ebbflow overwrites, PostgreSQL
/// would refuse); inserts into t5 hit existing keys on purpose.
pub struct Gen {
    pub rng: StdRng,
    pub t1_ids: BTreeSet<i32>,
    pub t3_ids: BTreeSet<i32>,
    /// Seconds after 2024-01-01 of the last `t4.ts` generated: it only rises.
    t4_clock: i64,
}

/// The values of the numeric key columns, each in the ways it is written.
pub const NUMERIC_KEYS: &[&[&str]] = &[
    &["0", "0.0", "-0.00", "0.000"],
    &["1", "1.0", "1.00"],
    &["-1", "-1.0", "-1.000"],
    &["2.5", "2.50", "2.500"],
    &["10", "10.0", "1e1"],
];

pub const WORDS: &[&str] = &[
    "apple", "Berry", "cherry", "date", "Elder", "fig", "", "grape",
];

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen {
            rng: StdRng::seed_from_u64(seed),
            t1_ids: BTreeSet::new(),
            t3_ids: BTreeSet::new(),
            t4_clock: 0,
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
        out.push(self.insert_t4(12));
        out.push(self.insert_t5(12));
        out.push(self.insert_t6(4));
        out.push(self.insert_t7(20));
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

    /// A numeric key: one of few values, each written in several ways
    /// (`1`, `1.0`, `1.00`; `0`, `-0.00`), or NULL.
    pub fn numeric_key(&mut self) -> String {
        if self.null(0.08) {
            return "NULL".into();
        }
        let forms = NUMERIC_KEYS[self.rng.gen_range(0..NUMERIC_KEYS.len())];
        forms[self.rng.gen_range(0..forms.len())].into()
    }

    /// A `timestamptz` literal (or NULL) in the hours around the end of
    /// DST in New York (2024-11-03 05:00 to 07:00 UTC) or a day later,
    /// written in UTC, with an offset or with the zone's name.
    pub fn instant(&mut self) -> String {
        if self.null(0.1) {
            return "NULL".into();
        }
        // Minutes after 2024-11-03 00:00 UTC.
        let utc: u32 = self.rng.gen_range(300..540) + 1440 * self.rng.gen_range(0..2u32);
        let at = |mins: u32| (3 + mins / 1440, mins / 60 % 24, mins % 60);
        let (text, zone) = match self.rng.gen_range(0..3) {
            0 => (at(utc), "+00"),
            1 => (at(utc + 330), "+05:30"),
            // Read in New York: in the fold hour, the later instant.
            _ => (at(utc - 300), " America/New_York"),
        };
        let (d, h, m) = text;
        format!("TIMESTAMPTZ '2024-11-{d:02} {h:02}:{m:02}:00{zone}'")
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
                let (k, w, name, m) = (
                    self.k(),
                    self.int_or_null(0, 50, 0.1),
                    self.word(),
                    self.numeric_key(),
                );
                format!("({k}, {w}, {name}, {m})")
            })
            .collect();
        format!("INSERT INTO t2 VALUES {}", rows.join(", "))
    }

    pub fn insert_t3(&mut self, n: usize) -> Option<String> {
        let mut rows = Vec::new();
        for _ in 0..n {
            let Some(id) = self.fresh_id(3) else { break };
            self.t3_ids.insert(id);
            let (k, x, m, tz) = (
                self.int_or_null(0, 250, 0.1),
                self.int_or_null(0, 50, 0.1),
                self.numeric_key(),
                self.instant(),
            );
            rows.push(format!("({id}, {k}, {x}, {m}, {tz})"));
        }
        (!rows.is_empty()).then(|| format!("INSERT INTO t3 VALUES {}", rows.join(", ")))
    }

    /// Rows of t4, their `ts` rising from one to the next and from the
    /// last statement's.
    pub fn insert_t4(&mut self, n: usize) -> String {
        let base = chrono::NaiveDate::from_ymd_opt(2024, 1, 1)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .expect("a valid date");
        let rows: Vec<String> = (0..n)
            .map(|_| {
                self.t4_clock += self.rng.gen_range(0..=T4_MAX_STEP_SECS);
                let ts = base + chrono::Duration::seconds(self.t4_clock);
                let (id, v) = (self.rng.gen_range(0..100), self.int_or_null(-100, 100, 0.1));
                format!(
                    "({id}, TIMESTAMP '{}', {v})",
                    ts.format("%Y-%m-%d %H:%M:%S")
                )
            })
            .collect();
        format!("INSERT INTO t4 VALUES {}", rows.join(", "))
    }

    /// Rows of t5 with distinct keys, some of them already there
    /// (PostgreSQL refuses one statement touching a key twice).
    pub fn insert_t5(&mut self, n: usize) -> String {
        let mut ids = BTreeSet::new();
        let rows: Vec<String> = (0..n)
            .filter_map(|_| {
                let id = self.rng.gen_range(0..60);
                let (v, w) = (self.int_or_null(-100, 100, 0.3), self.word());
                ids.insert(id).then(|| format!("({id}, {v}, {w})"))
            })
            .collect();
        format!("INSERT INTO t5 VALUES {}", rows.join(", "))
    }

    /// Rows of t6 with keys distinct in value (PostgreSQL refuses one
    /// statement touching a key twice), each written in a random way, some
    /// of them already there.
    /// Rows of `t7`: an id and a random document (or NULL).
    pub fn insert_t7(&mut self, n: usize) -> String {
        let rows: Vec<String> = (0..n)
            .map(|_| {
                let id = self.rng.gen_range(0..40);
                if self.null(0.1) {
                    return format!("({id}, NULL)");
                }
                let mut fields = Vec::new();
                if !self.null(0.1) {
                    let kind = WORDS[self.rng.gen_range(0..4)];
                    fields.push(format!("\"kind\": \"{kind}\""));
                }
                if !self.null(0.1) {
                    let v = self.rng.gen_range(-5..20);
                    let dot = if self.rng.gen_bool(0.3) { ".0" } else { "" };
                    fields.push(format!("\"v\": {v}{dot}"));
                }
                fields.push(format!("\"ref\": {}", self.rng.gen_range(0..60)));
                fields.push(format!("\"flag\": {}", self.rng.gen_bool(0.5)));
                let tags: Vec<String> = (0..self.rng.gen_range(0..3))
                    .map(|_| format!("\"{}\"", ["x", "y", "z"][self.rng.gen_range(0..3)]))
                    .collect();
                fields.push(format!("\"tags\": [{}]", tags.join(", ")));
                format!("({id}, '{{{}}}')", fields.join(", "))
            })
            .collect();
        format!("INSERT INTO t7 VALUES {}", rows.join(", "))
    }

    pub fn insert_t6(&mut self, n: usize) -> String {
        let mut taken = BTreeSet::new();
        let rows: Vec<String> = (0..n)
            .filter_map(|_| {
                let which = self.rng.gen_range(0..NUMERIC_KEYS.len());
                let forms = NUMERIC_KEYS[which];
                let m = forms[self.rng.gen_range(0..forms.len())];
                let (v, w) = (
                    self.int_or_null(-100, 100, 0.1),
                    self.int_or_null(0, 50, 0.1),
                );
                taken.insert(which).then(|| format!("({m}, {v}, {w})"))
            })
            .collect();
        format!("INSERT INTO t6 VALUES {}", rows.join(", "))
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
            ("t5", 0) => format!("v > {}", self.rng.gen_range(60..100)),
            ("t5", 1) => "v IS NULL OR w IS NULL".into(),
            ("t6", 0) => format!("v > {}", self.rng.gen_range(0..100)),
            ("t6", 1) => format!("m = {}", self.numeric_key()),
            ("t6", _) => "w IS NULL OR w % 3 = 0".into(),
            (_, _) => format!("id % 9 = {}", self.rng.gen_range(0..9)),
        }
    }

    pub fn update(&mut self) -> String {
        match self.rng.gen_range(0..11) {
            8 => {
                // Only the way the key is written changes.
                let p = self.pred("t6");
                let f =
                    ["m * 1.0", "m / 1.00", "m * 10 / 10", "m + 0.000"][self.rng.gen_range(0..4)];
                format!("UPDATE t6 SET m = {f}, v = v + 1 WHERE {p}")
            }
            9 => {
                let (m, p) = (self.numeric_key(), self.pred("t2"));
                format!("UPDATE t2 SET m = {m} WHERE {p}")
            }
            10 => {
                let (m, p) = (self.numeric_key(), self.pred("t3"));
                if self.rng.gen_bool(0.5) {
                    format!("UPDATE t3 SET m = {m}, x = x + 1 WHERE {p}")
                } else {
                    format!("UPDATE t3 SET tz = tz + INTERVAL '50 minutes' WHERE {p}")
                }
            }
            6 => {
                let p = self.pred("t5");
                format!(
                    "UPDATE t5 SET v = v - {} WHERE {p}",
                    self.rng.gen_range(1..20)
                )
            }
            7 => {
                let (w, p) = (self.word(), self.pred("t5"));
                format!("UPDATE t5 SET w = {w} WHERE {p}")
            }
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
        let table = ["t1", "t2", "t3", "t5", "t6", "t7"][self.rng.gen_range(0..6)];
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
        match self.rng.gen_range(0..14) {
            13 => {
                if self.rng.gen_bool(0.5) {
                    let n = self.rng.gen_range(1..6);
                    Some(self.insert_t7(n))
                } else {
                    let p = self.pred("t7");
                    Some(match self.rng.gen_range(0..3) {
                        0 => format!(
                            "UPDATE t7 SET doc = doc || '{{\"v\": {}}}' WHERE {p}",
                            self.rng.gen_range(0..9)
                        ),
                        1 => format!(
                            "UPDATE t7 SET doc = jsonb_set(doc, '{{flag}}', '{}') WHERE {p}",
                            self.rng.gen_bool(0.5)
                        ),
                        _ => format!("UPDATE t7 SET doc = doc - 'kind' WHERE {p}"),
                    })
                }
            }
            12 => {
                let n = self.rng.gen_range(1..5);
                Some(self.insert_t6(n))
            }
            10 => {
                let n = self.rng.gen_range(1..15);
                Some(self.insert_t4(n))
            }
            11 => {
                let n = self.rng.gen_range(1..8);
                Some(self.insert_t5(n))
            }
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
