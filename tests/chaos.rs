//! Chaos test against PostgreSQL 15 (issue 5): compute nodes join, drain,
//! leave, die and come back while DML and a datagen feed run.
//!
//! For each fixed seed: a throwaway PostgreSQL database and a fresh
//! `ebbflow playground` (2 compute nodes × 2 parallel units, adaptive
//! policy ticking every 200 ms) get the differential test's tables and MVs
//! (`common::workload`), two MVs with a fixed parallelism (2 and 3), and a
//! bounded `datagen` table feeding an MV that counts its rows and distinct
//! ids. One task runs random INSERT/UPDATE/DELETE on ebbflow, FLUSHing now
//! and then; `Mirror` keeps in PostgreSQL what ebbflow acknowledged. The
//! main task applies a random sequence of operations, each with the
//! outcome it must have: `ADD WORKER [WITH (parallel_units = n)]`, `DRAIN
//! WORKER [DRY RUN]`, `REMOVE WORKER`, `debug_kill_worker`,
//! `debug_panic_worker`, `RESTART WORKER`, `SET PARALLELISM`, manual
//! `RESCHEDULE` plans and their DRY RUNs, turning the adaptive policy off
//! and on, and requests that must be refused with a given SQLSTATE (the
//! last running node, a node that is down, a fixed job that would not
//! fit, a busy node, a unit of a node that is not running, unknown ids)
//! and then change nothing. A running node always remains; at most
//! `MAX_NODES` nodes exist.
//!
//! After every operation the catalogs must show no actor on a node that
//! is not running, every fragment's actors on distinct units of their own
//! nodes and owning all vnodes, the layout the operation asked for, and,
//! with the adaptive policy on, adaptive jobs on every running unit
//! within `SETTLE_WAIT`. A kill or panic (of one node; of two, one after
//! the other; or of one while a drain, reschedule or SET PARALLELISM runs)
//! must mark the node down, record a `fail-over` in `rw_scale_history`
//! when the node held actors, and recover (a FLUSH succeeds) within
//! `RECOVERY_WAIT`; the fail-over keeps each fragment's actor count as far
//! as the running units allow and moves only the failed nodes' actors.
//!
//! Acknowledgements: a FLUSH that succeeds vouches for every statement
//! its session wrote before it, faults or not (the product makes a FLUSH
//! that cannot vouch for them fail instead), so they are all acknowledged:
//! losing one is a failure of the test. After a FLUSH or a statement that
//! failed, the statements since the last acknowledgement are uncertain
//! (each may or may not have survived) and, once the cluster has
//! recovered, `Mirror::reconcile` finds which did: none applied twice or
//! in part.
//!
//! Every `CHECK_EVERY` operations the DML task is paused, ebbflow
//! FLUSHes, and the tables and every MV are compared with PostgreSQL; the
//! datagen MV must have `count(*) = count(DISTINCT id)` and not exceed the
//! table. At the end the datagen table must be complete.
//!
//! A failure reports the seed, the operations since the last good check,
//! the cluster, and writes the full log (both tasks, stamped with the
//! time to match the server's log) to `target/chaos-seed-<seed>.log`.
//!
//! With SeaweedFS installed (required under `CI=true`) each seed's server
//! keeps its state on S3 (`s3://ebbflow/chaos/<seed>`) and its meta store
//! in a database of the test's PostgreSQL (`chaos_meta_<seed>`); otherwise
//! both in its data dir (the defaults), said in one line.
//!
//! Environment: `CHAOS_SEEDS=1,2`, `CHAOS_OPS=n` (operations per seed),
//! `CHAOS_SEED_TIMEOUT_SECS` (120). Without PostgreSQL 15 the test is
//! skipped, except under `CI=true`.

mod common;
// In a directory of their own: a file in tests/ would be a test target.
#[path = "chaos/cluster.rs"]
mod cluster;
#[path = "chaos/ops.rs"]
mod ops;
#[path = "chaos/step.rs"]
mod step;
#[path = "chaos/workload.rs"]
mod workload;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use tokio_postgres::Client;

use cluster::Snapshot;
use common::driver::{env_or, env_secs, env_seeds, run_seeds, save_log, say, tail};
use common::rows::{cell, run_within, Row};
use common::stores::Stores;
use common::{EbbflowServer, Postgres, ServerOptions};
use ops::Chaos;
use step::{apply, checked, policy_history};
use workload::{compare_all, dml_task, Log, Shared, Workload};

const DEFAULT_SEEDS: &[u64] = &[51, 52];
const DEFAULT_OPS: usize = 110;
const CHECK_EVERY: usize = 10;
/// At most this many compute nodes (in any state) at a time.
const MAX_NODES: usize = 6;
/// Bound of one statement.
const STMT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the adaptive policy may take to fit the jobs to the cluster.
const SETTLE_WAIT: Duration = Duration::from_secs(5);
/// How long a fault may take to be noticed, failed over and recovered.
const RECOVERY_WAIT: Duration = Duration::from_secs(20);
/// Above this many rows in t2 the workload deletes from it (joins over
/// t2 stay small enough to compare quickly).
const T2_MAX_ROWS: i64 = 300;
const DATAGEN_ROWS: i64 = 20_000;

const DATAGEN_TABLE: &str = "CREATE TABLE dg (id int, v int) WITH (connector='datagen', \
     rows_per_second='1000', fields.id.kind='sequence', fields.id.start='1', \
     fields.id.end='20000', fields.v.kind='random', fields.v.min='1', fields.v.max='10')";
const DATAGEN_MV: &str =
    "CREATE MATERIALIZED VIEW mv_dg AS SELECT count(*) AS c, count(DISTINCT id) AS d FROM dg";

/// MVs with a fixed parallelism: name, parallelism, definition.
const FIXED_MVS: &[(&str, usize, &str)] = &[
    (
        "mv_fixed2",
        2,
        "SELECT k, count(*) AS c, sum(v) AS sv, max(s) AS mx FROM t1 GROUP BY k",
    ),
    (
        "mv_fixed3",
        3,
        "SELECT t3.x, count(*) AS c, min(t1.v) AS mn FROM t3 JOIN t1 ON t3.k = t1.id GROUP BY t3.x",
    ),
];

/// One ebbflow statement, bounded in time.
async fn eb_run(client: &Client, sql: &str) -> Result<Vec<Row>, String> {
    run_within(client, sql, STMT_TIMEOUT)
        .await
        .map_err(|e| format!("`{sql}`: {e}"))
}

/// The main task's state for one seed.
struct SeedState {
    seed: u64,
    sh: Arc<Shared>,
    since_check: Vec<String>,
    /// Last cluster read, for failure reports.
    cluster: String,
    /// Operation label (with the SQLSTATE of a refusal) → count.
    coverage: BTreeMap<String, usize>,
    /// Per fault: ms until the node was down, ms until a FLUSH succeeded.
    fault_ms: Vec<(u128, u128)>,
    /// Highest `rw_scale_history` id seen.
    history_seen: u32,
    /// `rw_scale_history` rows (statement, status) since the current
    /// operation began.
    op_history: Vec<(String, String)>,
}

impl SeedState {
    fn fail(&self, what: &str) -> String {
        let all = self.sh.log.all();
        let path = save_log(&format!("chaos-seed-{}", self.seed), &all);
        let mut msg = format!(
            "seed {}: {what}\n--- cluster: {} ---\n--- operations since the last good check ---\n",
            self.seed, self.cluster
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

    fn note(&self, s: String) {
        self.sh.log.push(s);
    }

    /// New `rw_scale_history` rows (statement, status) since the last call.
    async fn new_history(&mut self, eb: &Client) -> Result<Vec<(String, String)>, String> {
        let rows = eb_run(
            eb,
            &format!(
                "SELECT id, statement, status FROM rw_scale_history WHERE id > {} ORDER BY id",
                self.history_seen
            ),
        )
        .await?;
        let mut out = Vec::new();
        for r in rows {
            self.history_seen = self.history_seen.max(cell(&r[0]).unwrap_or(0));
            let (stmt, status) = (
                r[1].clone().unwrap_or_default(),
                r[2].clone().unwrap_or_default(),
            );
            self.note(format!("-- rw_scale_history: {stmt} {status}"));
            out.push((stmt, status));
        }
        self.op_history.extend(out.iter().cloned());
        Ok(out)
    }
}

/// What a seed reports: operations, checks, faults.
struct SeedReport {
    ops: usize,
    faults: usize,
}

/// One seed within `budget`: a seed that does not finish in time fails
/// with its log saved (a bit before `run_seeds` would give up on it).
async fn run_seed(
    pg: &Postgres,
    stores: &Stores,
    seed: u64,
    ops: usize,
    budget: Duration,
) -> Result<SeedReport, String> {
    let db = format!("chaos_{seed}");
    let admin = pg.create_database(&db).await?;
    let opts = stores
        .options(pg, &seed.to_string(), ServerOptions::default())
        .await?;
    let mut server = EbbflowServer::spawn(opts, None).await?;
    let sh = Arc::new(Shared {
        log: Log::default(),
        faults: AtomicU64::new(0),
        quiet: tokio::sync::Mutex::new(()),
        stop: AtomicBool::new(false),
    });
    let limit = budget.saturating_sub(Duration::from_secs(10));
    let result = tokio::time::timeout(limit, seed_body(pg, &db, &server, seed, ops, sh.clone()))
        .await
        .unwrap_or_else(|_| {
            sh.stop.store(true, Ordering::SeqCst);
            let all = sh.log.all();
            let path = save_log(&format!("chaos-seed-{seed}"), &all);
            Err(format!(
                "seed {seed}: not done within {} s (a statement, FLUSH, drain or recovery \
                 hangs?)\n--- last statements of both tasks (newest last) ---\n{}\n--- full \
                 log: {} ---",
                limit.as_secs(),
                tail(&all, 40),
                path.display()
            ))
        });
    let alive = server.is_running();
    let tail = server.log.tail(30);
    server.shut_down().await;
    Postgres::drop_database(&admin, &db).await;
    stores.drop_meta(pg, &seed.to_string()).await;
    match result {
        Ok(r) if alive => Ok(r),
        Ok(_) => Err(format!(
            "seed {seed}: the ebbflow server died; last log lines:\n{tail}"
        )),
        Err(e) if alive => Err(format!("{e}\n--- last server log lines ---\n{tail}")),
        Err(e) => Err(format!(
            "{e}\nthe ebbflow server died; last log lines:\n{tail}"
        )),
    }
}

async fn seed_body(
    pg: &Postgres,
    db: &str,
    server: &EbbflowServer,
    seed: u64,
    ops: usize,
    sh: Arc<Shared>,
) -> Result<SeedReport, String> {
    let started = Instant::now();
    let pg_mirror = common::open(&pg.conn_str(db)).await?;
    let eb_dml = common::open(&server.conn_str()).await?;
    let eb = common::open(&server.conn_str()).await?;
    let aux = common::open(&server.conn_str()).await?;
    let mut st = SeedState {
        seed,
        sh: sh.clone(),
        since_check: Vec::new(),
        cluster: String::new(),
        coverage: BTreeMap::new(),
        fault_ms: Vec::new(),
        history_seen: 0,
        op_history: Vec::new(),
    };
    let mut w = Workload::new(eb_dml, pg_mirror, seed);
    let setup = w.create_schema(&eb);
    setup.await.map_err(|e| st.fail(&format!("setup: {e}")))?;
    for line in &w.mirror.log {
        st.note(line.clone());
    }
    let work = Arc::new(tokio::sync::Mutex::new(w));
    compare_all(&st, &work, &eb, 0)
        .await
        .map_err(|e| st.fail(&e))?;

    let mut names = BTreeMap::new();
    for (rel, is_table) in [("rw_tables", true), ("rw_materialized_views", false)] {
        for r in eb_run(&eb, &format!("SELECT id, name FROM {rel}"))
            .await
            .map_err(|e| st.fail(&e))?
        {
            names.insert(
                cell::<u32>(&r[0]).unwrap_or(0),
                (r[1].clone().unwrap_or_default(), is_table),
            );
        }
    }
    let first = Snapshot::read(&eb).await.map_err(|e| st.fail(&e))?;
    let mut chaos = Chaos {
        rng: StdRng::seed_from_u64(seed ^ 0xc4a05),
        fixed: names
            .iter()
            .filter(|(_, (n, _))| FIXED_MVS.iter().any(|f| f.0 == n))
            .map(|(id, _)| *id)
            .collect(),
        names,
        max_node: first.workers.keys().max().copied().unwrap_or(0),
        max_unit: first
            .workers
            .values()
            .flat_map(|w| w.units.iter().copied())
            .max()
            .unwrap_or(0),
        adaptive: true,
    };
    st.new_history(&eb).await.map_err(|e| st.fail(&e))?;

    let dml = tokio::spawn(dml_task(work.clone(), sh.clone()));
    let mut checks = 0;
    let outcome: Result<(), String> = async {
        let mut snap = checked(&eb, first, true).await.map_err(|e| st.fail(&e))?;
        for i in 0..ops {
            let before = Snapshot::read(&eb).await.map_err(|e| st.fail(&e))?;
            if before != snap {
                return Err(st.fail(&format!(
                    "the cluster changed between operations\nafter the last: {}\nnow: {}",
                    snap.describe(),
                    before.describe()
                )));
            }
            st.cluster = before.describe();
            if dml.is_finished() {
                // It stopped on an error: reported below.
                break;
            }
            let op = chaos.next(&before);
            st.since_check.push(op.sql.clone());
            match op.refusal {
                Some(code) => st.note(format!(
                    "/* chaos {i} */ {} /* refused with {code}: {} */",
                    op.sql, op.why
                )),
                None => st.note(format!("/* chaos {i} */ {}", op.sql)),
            }
            st.op_history.clear();
            let after = apply(&mut st, &eb, &aux, &mut chaos, &op, &before)
                .await
                .map_err(|e| st.fail(&e))?;
            snap = checked(&eb, after, chaos.adaptive)
                .await
                .map_err(|e| st.fail(&format!("after `{}`: {e}", op.sql)))?;
            policy_history(&mut st, &eb, &op, &before, &snap)
                .await
                .map_err(|e| st.fail(&e))?;
            st.cluster = snap.describe();
            *st.coverage.entry(op.label.clone()).or_default() += 1;
            if (i + 1) % CHECK_EVERY == 0 || i + 1 == ops {
                checks += 1;
                compare_all(&st, &work, &eb, checks)
                    .await
                    .map_err(|e| st.fail(&e))?;
                st.since_check.clear();
                snap = Snapshot::read(&eb).await.map_err(|e| st.fail(&e))?;
            }
        }
        Ok(())
    }
    .await;
    sh.stop.store(true, Ordering::SeqCst);
    let dml_res = tokio::time::timeout(STMT_TIMEOUT * 3, dml).await;
    outcome?;
    match dml_res {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => return Err(st.fail(&format!("DML task: {e}"))),
        Ok(Err(e)) => return Err(st.fail(&format!("DML task panicked: {e}"))),
        Err(_) => return Err(st.fail("the DML task did not stop within 60 s")),
    }
    checks += 1;
    compare_all(&st, &work, &eb, checks)
        .await
        .map_err(|e| st.fail(&e))?;

    // The datagen sequence is bounded: wait (bounded) until it is complete.
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        eb_run(&eb, "FLUSH").await.map_err(|e| st.fail(&e))?;
        let rows = eb_run(&eb, "SELECT c, d FROM mv_dg")
            .await
            .map_err(|e| st.fail(&e))?;
        let c: i64 = rows.first().and_then(|r| cell(&r[0])).unwrap_or(-1);
        let d: i64 = rows.first().and_then(|r| cell(&r[1])).unwrap_or(-1);
        if c != d {
            return Err(st.fail(&format!("datagen at end: mv_dg count={c} distinct={d}")));
        }
        if c == DATAGEN_ROWS {
            break;
        }
        if Instant::now() > deadline {
            return Err(st.fail(&format!("datagen MV stuck at {c} of {DATAGEN_ROWS} rows")));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let w = work.lock().await;
    let s = &w.stats;
    let coverage: Vec<String> = st
        .coverage
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let worst = |i: usize| {
        st.fault_ms
            .iter()
            .map(|t| if i == 0 { t.0 } else { t.1 })
            .max()
            .unwrap_or(0)
    };
    say(&format!(
        "chaos: seed {seed} ok in {:.1}s: {ops} operations ({}), {checks} checks, {} DML \
         statements ({} failed in faults; {} acknowledgements, {} reconciliations keeping {} and \
         losing {} uncertain statements), {} faults (down within {} ms, recovered within {} ms)",
        started.elapsed().as_secs_f64(),
        coverage.join(", "),
        s.ok + s.failed,
        s.failed,
        s.acks,
        s.reconciles,
        s.kept,
        s.lost,
        st.fault_ms.len(),
        worst(0),
        worst(1),
    ));
    Ok(SeedReport {
        ops,
        faults: st.fault_ms.len(),
    })
}

#[test]
fn chaos_against_postgres() {
    if common::driver::skip_without_postgres("chaos") {
        return;
    }
    let seeds = env_seeds("CHAOS_SEEDS", DEFAULT_SEEDS);
    let ops = env_or("CHAOS_OPS", DEFAULT_OPS);
    let budget = env_secs("CHAOS_SEED_TIMEOUT_SECS", 120);
    let pg = Postgres::start().expect("start a throwaway PostgreSQL 15");
    let stores = Stores::start("chaos").expect("the state and meta stores of the chaos test");
    let report = run_seeds(
        "chaos",
        &seeds,
        budget,
        "a statement, FLUSH, drain or recovery",
        |seed| run_seed(&pg, &stores, seed, ops, budget),
    );
    drop(stores);
    drop(pg);
    let total_ops: usize = report.passed.iter().map(|r| r.ops).sum();
    let faults: usize = report.passed.iter().map(|r| r.faults).sum();
    say(&report.summary("chaos", &format!("{total_ops} operations, {faults} faults")));
    assert!(
        report.failed.is_empty(),
        "chaos failed for seeds {:?}",
        report.failed
    );
}
