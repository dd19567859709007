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
//! With SeaweedFS installed (required under `CI=true`) each seed's server
//! keeps its state on S3 (`s3://ebbflow/scale/<seed>`) and its meta store
//! in a database of the test's PostgreSQL (`scale_meta_<seed>`); otherwise
//! both in its data dir (the defaults), said in one line.
//!
//! Environment: `SCALE_SEEDS=1,2`, `SCALE_OPS=n` (operations per seed),
//! `SCALE_SEED_TIMEOUT_SECS` (110). Without PostgreSQL 15 the test is
//! skipped, except under `CI=true`.

mod common;
// In a directory of its own: a file in tests/ would be a test target.
#[path = "scale_differential/ops.rs"]
mod ops;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::Client;

use common::driver::{env_or, env_secs, env_seeds, run_seeds, save_log, say, tail};
use common::rows::{cell, mv_mismatch, run, run_within, Row};
use common::stores::Stores;
use common::workload::{pg_def, pg_sql, Gen, MVS, TABLES};
use common::{EbbflowServer, Postgres, ServerOptions};
use ops::{fragments, int, layout, list, squeeze_item, units, Op, Scaler};

const DEFAULT_SEEDS: &[u64] = &[11, 12];
const DEFAULT_OPS: usize = 220;
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
            let p = run(&pg, &pg_sql(&sql)).await;
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

async fn run_seed(
    pg: &Postgres,
    stores: &Stores,
    seed: u64,
    ops: usize,
) -> Result<(usize, usize), String> {
    let db = format!("scale_{seed}");
    let admin = pg.create_database(&db).await?;
    let opts = stores
        .options(pg, &seed.to_string(), ServerOptions::default())
        .await?;
    let mut server = EbbflowServer::spawn(opts, None).await?;
    let result = seed_body(pg, &db, &server, seed, ops).await;
    let alive = server.is_running();
    let tail = server.log.tail(30);
    server.shut_down().await;
    Postgres::drop_database(&admin, &db).await;
    stores.drop_meta(pg, &seed.to_string()).await;
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
            run(pgc, &pg_sql(&sql))
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
        run(
            &pg_dml,
            &format!("CREATE VIEW {name} AS {}", pg_def(name, def)),
        )
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
fn scale_under_load_against_postgres() {
    if common::driver::skip_without_postgres("scale") {
        return;
    }
    let seeds = env_seeds("SCALE_SEEDS", DEFAULT_SEEDS);
    let ops = env_or("SCALE_OPS", DEFAULT_OPS);
    let budget = env_secs("SCALE_SEED_TIMEOUT_SECS", 110);
    let pg = Postgres::start().expect("start a throwaway PostgreSQL 15");
    let stores = Stores::start("scale").expect("the state and meta stores of the scale test");
    let report = run_seeds(
        "scale",
        &seeds,
        budget,
        "a statement, FLUSH or reschedule",
        |seed| run_seed(&pg, &stores, seed, ops),
    );
    drop(stores);
    drop(pg);
    let total_ops: usize = report.passed.iter().map(|(n, _)| n).sum();
    say(&report.summary("scale", &format!("{total_ops} operations")));
    assert!(
        report.failed.is_empty(),
        "scale differential failed for seeds {:?}",
        report.failed
    );
}
