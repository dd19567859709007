//! Scale-under-load differential test against PostgreSQL 15 (issue 4).
//!
//! For each fixed seed: a throwaway PostgreSQL and a fresh `ebbflow
//! playground` (2 compute nodes × 2 parallel units) get the differential
//! test's tables and MVs, plus a `datagen` table feeding an MV that counts
//! its rows. One task keeps running random INSERT/UPDATE/DELETE in both
//! (same statements, same order, one connection each) while another
//! connection applies a random sequence of scale and reschedule operations:
//! `ALTER TABLE/MATERIALIZED VIEW/FRAGMENT … SET PARALLELISM`, `ALTER SYSTEM
//! RESCHEDULE` of hash and singleton fragments (migrations, scale in/out,
//! multi-fragment plans), `DRY RUN`s, invalid requests (which must fail and
//! change nothing) and the squeeze test (every fragment of a job onto one
//! unit, out to all units with ADAPTIVE, back onto one). After each valid
//! operation the layout in `rw_actors` must be the requested one.
//!
//! Every `CHECK_EVERY` operations the DML task is paused, ebbflow FLUSHes,
//! and every MV is compared with PostgreSQL's answer to its definition; the
//! datagen MV must have `count(*) = count(DISTINCT id)` and not exceed the
//! table. At the end the datagen table (bounded sequence) must be complete
//! and its MV exact, and `rw_scale_history` must have one `succeeded` row
//! per applied operation, in order.
//!
//! A failure reports the seed, the operations since the last good check,
//! the diff, and writes the full log to `target/scale-differential-seed-<seed>.log`.
//!
//! Environment: `SCALE_SEEDS=1,2`, `SCALE_OPS=n` (operations per seed),
//! `SCALE_SEED_TIMEOUT_SECS` (110). Without PostgreSQL 15 the test is
//! skipped, except under `CI=true`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tokio_postgres::Client;

use common::driver::{env_or, env_secs, env_seeds, run_seeds, save_log, say, tail};
use common::rows::{cell, mv_mismatch, run, run_within, Row};
use common::workload::{Gen, MVS, TABLES};
use common::{EbbflowServer, Postgres, ServerOptions};

const DEFAULT_SEEDS: &[u64] = &[11, 12];
const DEFAULT_OPS: usize = 200;
const CHECK_EVERY: usize = 20;
const UNITS: u32 = 4;
const DATAGEN_ROWS: i64 = 40_000;
const STMT_TIMEOUT: Duration = Duration::from_secs(30);

const DATAGEN_TABLE: &str = "CREATE TABLE dg (id int, v int) WITH (connector='datagen', \
     rows_per_second='2000', fields.id.kind='sequence', fields.id.start='1', \
     fields.id.end='40000', fields.v.kind='random', fields.v.min='1', fields.v.max='10')";
const DATAGEN_MV: &str =
    "CREATE MATERIALIZED VIEW mv_dg AS SELECT count(*) AS c, count(DISTINCT id) AS d FROM dg";

/// One ebbflow statement, bounded in time.
async fn eb_run(client: &Client, sql: &str) -> Result<Vec<Row>, String> {
    run_within(client, sql, STMT_TIMEOUT)
        .await
        .map_err(|e| format!("`{sql}`: {e}"))
}

/// Everything that happened, shared by both tasks, for failure reports.
#[derive(Clone, Default)]
struct Log {
    lines: Arc<Mutex<Vec<String>>>,
}

impl Log {
    fn push(&self, s: String) {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).push(s);
    }
    fn all(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Fragment id → (is singleton, owning job id).
type Fragments = BTreeMap<u32, (bool, u32)>;
/// Fragment id → sorted (parallel unit, actor id).
type Layout = BTreeMap<u32, Vec<(u32, u32)>>;

fn int(v: &Option<String>) -> u32 {
    cell(v).unwrap_or(u32::MAX)
}

async fn fragments(c: &Client) -> Result<Fragments, String> {
    let rows = eb_run(
        c,
        "SELECT fragment_id, table_id, distribution_type FROM rw_fragments",
    )
    .await?;
    Ok(rows
        .iter()
        .map(|r| (int(&r[0]), (r[2].as_deref() == Some("single"), int(&r[1]))))
        .collect())
}

async fn layout(c: &Client) -> Result<Layout, String> {
    let rows = eb_run(
        c,
        "SELECT fragment_id, parallel_unit_id, actor_id FROM rw_actors",
    )
    .await?;
    let mut out: Layout = BTreeMap::new();
    for r in &rows {
        out.entry(int(&r[0]))
            .or_default()
            .push((int(&r[1]), int(&r[2])));
    }
    for v in out.values_mut() {
        v.sort();
    }
    Ok(out)
}

fn units(l: &Layout, f: u32) -> BTreeSet<u32> {
    l.get(&f)
        .map(|v| v.iter().map(|x| x.0).collect())
        .unwrap_or_default()
}

fn list(s: &BTreeSet<u32>) -> String {
    s.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// What a valid operation must leave: fragment → exact set of units.
type Expect = BTreeMap<u32, BTreeSet<u32>>;

/// A reschedule plan item and its expected result.
fn plan_item(
    f: u32,
    cur: &BTreeSet<u32>,
    remove: &BTreeSet<u32>,
    add: &BTreeSet<u32>,
) -> (String, BTreeSet<u32>) {
    let mut s = f.to_string();
    if !remove.is_empty() {
        let _ = write!(s, "-[{}]", list(remove));
    }
    if !add.is_empty() {
        let _ = write!(s, "+[{}]", list(add));
    }
    let new: BTreeSet<u32> = cur.difference(remove).chain(add.iter()).copied().collect();
    (s, new)
}

/// The plan item moving fragment `f` (currently on `cur`) onto unit `u` alone.
fn squeeze_item(f: u32, cur: &BTreeSet<u32>, u: u32) -> Option<String> {
    let remove: BTreeSet<u32> = cur.iter().copied().filter(|&x| x != u).collect();
    let add: BTreeSet<u32> = if cur.contains(&u) {
        BTreeSet::new()
    } else {
        [u].into()
    };
    if remove.is_empty() && add.is_empty() {
        return None;
    }
    Some(plan_item(f, cur, &remove, &add).0)
}

enum Op {
    /// Must succeed and leave the expected layout (`None`: only for job-level
    /// fixed parallelism, checked by count: job id, n).
    Valid {
        sql: String,
        expect: Expect,
        job_count: Option<(u32, usize)>,
    },
    /// DRY RUN: must succeed, return rows, change nothing.
    Dry(String),
    /// Must fail and change nothing.
    Invalid(String),
}

struct Scaler {
    rng: StdRng,
    jobs: BTreeMap<u32, (String, bool)>, // id → (name, is table)
}

impl Scaler {
    fn par(&mut self) -> (String, usize) {
        if self.rng.gen_bool(0.25) {
            ("ADAPTIVE".into(), UNITS as usize)
        } else {
            let n = self.rng.gen_range(1..=UNITS as usize);
            (n.to_string(), n)
        }
    }

    fn random_reschedule(
        &mut self,
        f: u32,
        single: bool,
        cur: &BTreeSet<u32>,
    ) -> (String, BTreeSet<u32>) {
        let free: Vec<u32> = (0..UNITS).filter(|u| !cur.contains(u)).collect();
        let used: Vec<u32> = cur.iter().copied().collect();
        if single || (self.rng.gen_bool(0.3) && !free.is_empty()) {
            // Migration of one actor.
            let r = *used.choose(&mut self.rng).expect("an actor");
            let a = *free.choose(&mut self.rng).expect("a free unit");
            return plan_item(f, cur, &[r].into(), &[a].into());
        }
        loop {
            let remove: BTreeSet<u32> = used
                .iter()
                .copied()
                .filter(|_| self.rng.gen_bool(0.4))
                .collect();
            let add: BTreeSet<u32> = free
                .iter()
                .copied()
                .filter(|_| self.rng.gen_bool(0.5))
                .collect();
            let left = cur.len() - remove.len() + add.len();
            if left >= 1 && !(remove.is_empty() && add.is_empty()) {
                return plan_item(f, cur, &remove, &add);
            }
        }
    }

    fn next(&mut self, frags: &Fragments, l: &Layout) -> Op {
        let hash: Vec<u32> = frags
            .iter()
            .filter(|(_, v)| !v.0)
            .map(|(k, _)| *k)
            .collect();
        let singles: Vec<u32> = frags.iter().filter(|(_, v)| v.0).map(|(k, _)| *k).collect();
        match self.rng.gen_range(0..100) {
            0..=14 => {
                let jobs: Vec<u32> = self.jobs.keys().copied().collect();
                let job = *jobs.choose(&mut self.rng).expect("jobs");
                let (name, is_table) = self.jobs[&job].clone();
                let (p, n) = self.par();
                let kind = if is_table {
                    "TABLE"
                } else {
                    "MATERIALIZED VIEW"
                };
                Op::Valid {
                    sql: format!("ALTER {kind} {name} SET PARALLELISM = {p}"),
                    expect: Expect::new(),
                    job_count: Some((job, n)),
                }
            }
            15..=34 => {
                let f = *hash.choose(&mut self.rng).expect("hash fragments");
                let (p, n) = self.par();
                let _ = n;
                let all: BTreeSet<u32> = (0..UNITS).collect();
                let mut expect = Expect::new();
                if n == UNITS as usize {
                    expect.insert(f, all);
                }
                let sql = format!("ALTER FRAGMENT {f} SET PARALLELISM = {p}");
                // The count is checked below through a one-fragment "job".
                Op::Valid {
                    sql,
                    expect,
                    job_count: Some((u32::MAX - f, n)),
                }
            }
            roll @ 35..=79 => {
                // A hash fragment, or (from 65) a singleton.
                let single = roll >= 65;
                let (pool, what) = if single {
                    (&singles, "singleton fragments")
                } else {
                    (&hash, "hash fragments")
                };
                let f = *pool.choose(&mut self.rng).expect(what);
                let cur = units(l, f);
                let (item, new) = self.random_reschedule(f, single, &cur);
                Op::Valid {
                    sql: format!("ALTER SYSTEM RESCHEDULE '{item}'"),
                    expect: [(f, new)].into(),
                    job_count: None,
                }
            }
            80..=89 => {
                // Several fragments in one plan.
                let all: Vec<u32> = frags.keys().copied().collect();
                let n = self.rng.gen_range(2..=3);
                let picked: Vec<u32> = all.choose_multiple(&mut self.rng, n).copied().collect();
                let mut items = Vec::new();
                let mut expect = Expect::new();
                for f in picked {
                    let cur = units(l, f);
                    let (item, new) = self.random_reschedule(f, frags[&f].0, &cur);
                    items.push(item);
                    expect.insert(f, new);
                }
                Op::Valid {
                    sql: format!("ALTER SYSTEM RESCHEDULE '{}'", items.join("; ")),
                    expect,
                    job_count: None,
                }
            }
            90..=94 => {
                let f = *frags
                    .keys()
                    .collect::<Vec<_>>()
                    .choose(&mut self.rng)
                    .expect("fragments");
                let cur = units(l, *f);
                let (item, _) = self.random_reschedule(*f, frags[f].0, &cur);
                Op::Dry(format!("ALTER SYSTEM RESCHEDULE '{item}' DRY RUN"))
            }
            _ => {
                let h = *hash.choose(&mut self.rng).expect("hash fragments");
                let s = *singles.choose(&mut self.rng).expect("singleton fragments");
                let hu = units(l, h);
                let unused: Vec<u32> = (0..UNITS).filter(|u| !hu.contains(u)).collect();
                let sql = match self.rng.gen_range(0..7) {
                    0 => format!("ALTER FRAGMENT {h} SET PARALLELISM = {}", UNITS + 1),
                    1 => format!("ALTER FRAGMENT {s} SET PARALLELISM = 2"),
                    2 => format!(
                        "ALTER SYSTEM RESCHEDULE '{h}+[{}]'",
                        hu.iter().next().expect("a unit")
                    ),
                    3 if !unused.is_empty() => {
                        format!("ALTER SYSTEM RESCHEDULE '{h}-[{}]'", unused[0])
                    }
                    3 | 4 => format!("ALTER SYSTEM RESCHEDULE '{h}+[{}]'", UNITS + 3),
                    5 => "ALTER FRAGMENT 9999 SET PARALLELISM = 2".into(),
                    _ => format!("ALTER SYSTEM RESCHEDULE '{h}-[{}]'", list(&hu)),
                };
                Op::Invalid(sql)
            }
        }
    }
}

/// One operation as applied: statement, whether it succeeded, whether the
/// layout changed.
struct Applied {
    sql: String,
    ok: bool,
    changed: bool,
}

struct SeedState {
    seed: u64,
    log: Log,
    since_check: Vec<String>,
}

impl SeedState {
    fn fail(&self, what: &str) -> String {
        let all = self.log.all();
        let path = save_log(&format!("scale-differential-seed-{}", self.seed), &all);
        let mut msg = format!(
            "seed {}: {what}\n--- scale operations since the last good check ---\n",
            self.seed
        );
        for s in &self.since_check {
            let _ = writeln!(msg, "{s};");
        }
        let _ = writeln!(
            msg,
            "--- last statements of both tasks (newest last) ---\n{}",
            tail(&all, 40)
        );
        let _ = writeln!(msg, "--- full log: {} ---", path.display());
        msg
    }
}

/// Compares every MV with PostgreSQL and checks the datagen MV.
async fn compare_all(st: &SeedState, pg: &Client, eb: &Client, check: usize) -> Result<(), String> {
    eb_run(eb, "FLUSH")
        .await
        .map_err(|e| st.fail(&format!("FLUSH: {e}")))?;
    for (name, def) in MVS {
        let sql = format!("SELECT * FROM {name}");
        let expected = run(pg, &sql)
            .await
            .map_err(|e| st.fail(&format!("PostgreSQL {name}: {e}")))?;
        let actual = eb_run(eb, &sql)
            .await
            .map_err(|e| st.fail(&format!("ebbflow {name}: {e}")))?;
        let when = format!("at check {check}");
        if let Some(what) = mv_mismatch(name, def, &when, &expected, &actual) {
            return Err(st.fail(&what));
        }
    }
    let mv = eb_run(eb, "SELECT c, d FROM mv_dg")
        .await
        .map_err(|e| st.fail(&e))?;
    let t = eb_run(eb, "SELECT count(*), count(DISTINCT id) FROM dg")
        .await
        .map_err(|e| st.fail(&e))?;
    let num = |r: &[Row], i: usize| r.first().and_then(|r| cell::<i64>(&r[i]));
    let (c, d, tc, td) = (num(&mv, 0), num(&mv, 1), num(&t, 0), num(&t, 1));
    match (c, d, tc, td) {
        (Some(c), Some(d), Some(tc), Some(td)) if c == d && tc == td && c <= tc && tc <= DATAGEN_ROWS => Ok(()),
        _ => Err(st.fail(&format!(
            "datagen at check {check}: mv_dg count={c:?} distinct={d:?}, table count={tc:?} distinct={td:?} (sequence 1..{DATAGEN_ROWS})"
        ))),
    }
}

/// The DML task: rounds of random statements in both, each round under the gate.
async fn dml_task(
    pg: Client,
    eb: Client,
    mut gen: Gen,
    gate: Arc<tokio::sync::Mutex<()>>,
    stop: Arc<AtomicBool>,
    log: Log,
) -> Result<usize, String> {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let _g = gate.lock().await;
        if stop.load(Ordering::SeqCst) {
            break;
        }
        for sql in gen.round() {
            log.push(format!("/* dml */ {sql}"));
            let p = run(&pg, &sql).await;
            let e = eb_run(&eb, &sql).await;
            match (p, e) {
                (Ok(_), Ok(_)) => n += 1,
                (p, e) => {
                    return Err(format!(
                        "DML `{sql}` disagrees: PostgreSQL {:?}, ebbflow {:?}",
                        p.err(),
                        e.err()
                    ))
                }
            }
        }
        gen.refresh_ids(&pg).await?;
        drop(_g);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(n)
}

async fn run_seed(pg: &Postgres, seed: u64, ops: usize) -> Result<(usize, usize), String> {
    let db = format!("scale_{seed}");
    let admin = pg.create_database(&db).await?;
    let mut server = EbbflowServer::spawn(ServerOptions::default(), None).await?;
    let result = seed_body(pg, &db, &server, seed, ops).await;
    let alive = server.is_running();
    let tail = server.log.tail(30);
    server.shut_down().await;
    Postgres::drop_database(&admin, &db).await;
    result.map_err(|e| {
        if alive {
            format!("{e}\n--- last server log lines ---\n{tail}")
        } else {
            format!("{e}\nthe ebbflow server died; last log lines:\n{tail}")
        }
    })
}

async fn seed_body(
    pg: &Postgres,
    db: &str,
    server: &EbbflowServer,
    seed: u64,
    ops: usize,
) -> Result<(usize, usize), String> {
    let pg_dml = common::open(&pg.conn_str(db)).await?;
    let pg_chk = common::open(&pg.conn_str(db)).await?;
    let eb_dml = common::open(&server.conn_str()).await?;
    let eb = common::open(&server.conn_str()).await?;
    let log = Log::default();
    let mut st = SeedState {
        seed,
        log: log.clone(),
        since_check: Vec::new(),
    };
    let mut gen = Gen::new(seed);

    let both = |sql: String| {
        let (pgc, ebc, log) = (&pg_dml, &eb_dml, log.clone());
        async move {
            log.push(sql.clone());
            run(pgc, &sql)
                .await
                .map_err(|e| format!("PostgreSQL `{sql}`: {e}"))?;
            eb_run(ebc, &sql)
                .await
                .map_err(|e| format!("ebbflow `{sql}`: {e}"))?;
            Ok::<_, String>(())
        }
    };
    for ddl in TABLES {
        both(ddl.to_string()).await.map_err(|e| st.fail(&e))?;
    }
    for s in gen.initial_rows() {
        both(s).await.map_err(|e| st.fail(&e))?;
    }
    for sql in [DATAGEN_TABLE, DATAGEN_MV] {
        log.push(sql.into());
        eb_run(&eb, sql).await.map_err(|e| st.fail(&e))?;
    }
    for (name, def) in MVS {
        run(&pg_dml, &format!("CREATE VIEW {name} AS {def}"))
            .await
            .map_err(|e| st.fail(&e))?;
        let sql = format!("CREATE MATERIALIZED VIEW {name} AS {def}");
        log.push(sql.clone());
        eb_run(&eb, &sql).await.map_err(|e| st.fail(&e))?;
    }
    compare_all(&st, &pg_chk, &eb, 0).await?;

    let mut jobs = BTreeMap::new();
    for (rel, is_table) in [("rw_tables", true), ("rw_materialized_views", false)] {
        for r in eb_run(&eb, &format!("SELECT id, name FROM {rel}"))
            .await
            .map_err(|e| st.fail(&e))?
        {
            jobs.insert(int(&r[0]), (r[1].clone().unwrap_or_default(), is_table));
        }
    }
    let frags = fragments(&eb).await.map_err(|e| st.fail(&e))?;
    let mut scaler = Scaler {
        rng: StdRng::seed_from_u64(seed ^ 0x5ca1e),
        jobs: jobs.clone(),
    };

    let gate = Arc::new(tokio::sync::Mutex::new(()));
    let stop = Arc::new(AtomicBool::new(false));
    let dml = tokio::spawn(dml_task(
        pg_dml,
        eb_dml,
        gen,
        gate.clone(),
        stop.clone(),
        log.clone(),
    ));

    let mut applied: Vec<Applied> = Vec::new();
    let mut checks = 0;
    let squeeze_at = [ops / 4, (3 * ops) / 4];
    let mut i = 0;
    let outcome: Result<(), String> = async {
        while i < ops {
            let before = layout(&eb).await.map_err(|e| st.fail(&e))?;
            // The squeeze test over a whole job, as three operations.
            if squeeze_at.contains(&i) {
                let pick = ["mv_3way", "mv_on_mv", "mv_topn", "mv_agg_join", "mv_dg"];
                let name = pick[scaler.rng.gen_range(0..pick.len())];
                let job = *jobs.iter().find(|(_, v)| v.0 == name).expect("job").0;
                let job_frags: Vec<u32> = frags
                    .iter()
                    .filter(|(_, v)| v.1 == job)
                    .map(|(k, _)| *k)
                    .collect();
                let mut cur = before.clone();
                for phase in 0..3 {
                    let sql = if phase == 1 {
                        format!("ALTER MATERIALIZED VIEW {name} SET PARALLELISM = ADAPTIVE")
                    } else {
                        let u = scaler.rng.gen_range(0..UNITS);
                        let items: Vec<String> = job_frags
                            .iter()
                            .filter_map(|&f| squeeze_item(f, &units(&cur, f), u))
                            .collect();
                        if items.is_empty() {
                            continue;
                        }
                        format!("ALTER SYSTEM RESCHEDULE '{}'", items.join("; "))
                    };
                    st.since_check.push(sql.clone());
                    log.push(format!("/* scale */ {sql}"));
                    eb_run(&eb, &sql)
                        .await
                        .map_err(|e| st.fail(&format!("squeeze `{sql}` failed: {e}")))?;
                    let after = layout(&eb).await.map_err(|e| st.fail(&e))?;
                    for &f in &job_frags {
                        let us = units(&after, f);
                        let ok = if phase == 1 {
                            frags[&f].0 || us.len() == UNITS as usize
                        } else {
                            us.len() == 1
                        };
                        if !ok {
                            return Err(st.fail(&format!(
                                "after `{sql}` fragment {f} is on units [{}]",
                                list(&us)
                            )));
                        }
                    }
                    if phase != 1 {
                        let all: BTreeSet<u32> =
                            job_frags.iter().flat_map(|&f| units(&after, f)).collect();
                        if all.len() != 1 {
                            return Err(st.fail(&format!(
                                "after `{sql}` job {name} spans units [{}]",
                                list(&all)
                            )));
                        }
                    }
                    applied.push(Applied {
                        sql,
                        ok: true,
                        changed: after != cur,
                    });
                    cur = after;
                    i += 1;
                }
                continue;
            }
            let op = scaler.next(&frags, &before);
            let sql = match &op {
                Op::Valid { sql, .. } | Op::Dry(sql) | Op::Invalid(sql) => sql.clone(),
            };
            st.since_check.push(sql.clone());
            log.push(format!("/* scale */ {sql}"));
            let res = eb_run(&eb, &sql).await;
            let after = layout(&eb).await.map_err(|e| st.fail(&e))?;
            match op {
                Op::Valid {
                    expect, job_count, ..
                } => {
                    if let Err(e) = res {
                        return Err(st.fail(&format!("valid operation `{sql}` failed: {e}")));
                    }
                    for (f, want) in &expect {
                        if units(&after, *f) != *want {
                            return Err(st.fail(&format!(
                                "after `{sql}` fragment {f} is on units [{}], expected [{}]",
                                list(&units(&after, *f)),
                                list(want)
                            )));
                        }
                    }
                    if let Some((job, n)) = job_count {
                        let targets: Vec<u32> = if job > u32::MAX / 2 {
                            vec![u32::MAX - job]
                        } else {
                            frags
                                .iter()
                                .filter(|(_, v)| v.1 == job && !v.0)
                                .map(|(k, _)| *k)
                                .collect()
                        };
                        for f in targets {
                            if units(&after, f).len() != n {
                                return Err(st.fail(&format!(
                                    "after `{sql}` fragment {f} has {} actors, expected {n}",
                                    units(&after, f).len()
                                )));
                            }
                        }
                    }
                    applied.push(Applied {
                        sql,
                        ok: true,
                        changed: after != before,
                    });
                }
                Op::Dry(_) => {
                    match res {
                        Ok(rows) if !rows.is_empty() => {}
                        other => return Err(st.fail(&format!("`{sql}` gave {other:?}"))),
                    }
                    if after != before {
                        return Err(st.fail(&format!("`{sql}` changed the layout")));
                    }
                }
                Op::Invalid(_) => {
                    if res.is_ok() {
                        return Err(st.fail(&format!("invalid `{sql}` succeeded")));
                    }
                    if after != before {
                        return Err(st.fail(&format!("failed `{sql}` changed the layout")));
                    }
                    applied.push(Applied {
                        sql,
                        ok: false,
                        changed: false,
                    });
                }
            }
            i += 1;
            if i % CHECK_EVERY == 0 {
                let g = tokio::time::timeout(STMT_TIMEOUT, gate.lock())
                    .await
                    .map_err(|_| st.fail("the DML task did not pause within 30 s"))?;
                checks += 1;
                compare_all(&st, &pg_chk, &eb, checks).await?;
                st.since_check.clear();
                drop(g);
            }
        }
        Ok(())
    }
    .await;
    stop.store(true, Ordering::SeqCst);
    let dml_res = tokio::time::timeout(STMT_TIMEOUT * 2, dml).await;
    outcome?;
    let dml_n = match dml_res {
        Ok(Ok(Ok(n))) => n,
        Ok(Ok(Err(e))) => return Err(st.fail(&e)),
        Ok(Err(e)) => return Err(st.fail(&format!("DML task panicked: {e}"))),
        Err(_) => return Err(st.fail("DML task did not stop within 60 s")),
    };
    checks += 1;
    compare_all(&st, &pg_chk, &eb, checks).await?;

    // The datagen sequence is bounded: wait (bounded) until it is complete.
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        eb_run(&eb, "FLUSH").await.map_err(|e| st.fail(&e))?;
        let rows = eb_run(&eb, "SELECT c, d FROM mv_dg")
            .await
            .map_err(|e| st.fail(&e))?;
        let c = rows.first().and_then(|r| r[0].clone()).unwrap_or_default();
        let d = rows.first().and_then(|r| r[1].clone()).unwrap_or_default();
        if c != d {
            return Err(st.fail(&format!("datagen at end: mv_dg count={c} distinct={d}")));
        }
        if c == DATAGEN_ROWS.to_string() {
            break;
        }
        if Instant::now() > deadline {
            return Err(st.fail(&format!("datagen MV stuck at {c} of {DATAGEN_ROWS} rows")));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // History: one succeeded row per applied operation, in order.
    let hist = eb_run(
        &eb,
        "SELECT id, statement, status FROM rw_scale_history ORDER BY id",
    )
    .await
    .map_err(|e| st.fail(&e))?;
    let succeeded: Vec<String> = hist
        .iter()
        .filter(|r| r[2].as_deref() == Some("succeeded"))
        .map(|r| r[1].clone().unwrap_or_default())
        .collect();
    let mut it = succeeded.iter().peekable();
    for a in &applied {
        let next = it.peek().map(|s| s.as_str());
        if a.ok && next == Some(a.sql.as_str()) {
            it.next();
        } else if a.ok && a.changed {
            return Err(st.fail(&format!(
                "rw_scale_history: no succeeded row for `{}` (next row: {next:?})",
                a.sql
            )));
        }
    }
    if let Some(extra) = it.next() {
        return Err(st.fail(&format!(
            "rw_scale_history: unexpected succeeded row `{extra}`"
        )));
    }
    let n_changed = applied.iter().filter(|a| a.changed).count();
    let n_ok = applied.iter().filter(|a| a.ok).count();
    say(&format!(
        "scale: seed {seed} ok: {} operations ({n_ok} succeeded, {n_changed} changed the layout, {} history rows), {checks} checks, {dml_n} DML statements",
        applied.len(),
        succeeded.len()
    ));
    Ok((applied.len(), checks))
}

#[test]
#[ignore = "known failures under concurrent rescaling (issue 4, see the closing note); run with --ignored"]
fn scale_under_load_against_postgres() {
    if common::driver::skip_without_postgres("scale") {
        return;
    }
    let seeds = env_seeds("SCALE_SEEDS", DEFAULT_SEEDS);
    let ops = env_or("SCALE_OPS", DEFAULT_OPS);
    let budget = env_secs("SCALE_SEED_TIMEOUT_SECS", 110);
    let pg = Postgres::start().expect("start a throwaway PostgreSQL 15");
    let report = run_seeds(
        "scale",
        &seeds,
        budget,
        "a statement, FLUSH or reschedule",
        |seed| run_seed(&pg, seed, ops),
    );
    drop(pg);
    let total_ops: usize = report.passed.iter().map(|(n, _)| n).sum();
    say(&report.summary("scale", &format!("{total_ops} operations")));
    assert!(
        report.failed.is_empty(),
        "scale differential failed for seeds {:?}",
        report.failed
    );
}
