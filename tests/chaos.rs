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
//! within `SETTLE_WAIT`. A kill or panic must mark the node down, record
//! a `fail-over` in `rw_scale_history` when the node held actors, and
//! recover (a FLUSH succeeds) within `RECOVERY_WAIT`.
//!
//! Acknowledgements: a FLUSH that returns covers every DML statement sent
//! before it — unless a fault was injected since the last
//! acknowledgement, in which case the statements since are uncertain
//! (they may or may not have survived) and `Mirror::reconcile` finds
//! which did: no acknowledged row may be lost, no row applied twice.
//!
//! Every `CHECK_EVERY` operations the DML task is paused, ebbflow
//! FLUSHes, and the tables and every MV are compared with PostgreSQL; the
//! datagen MV must have `count(*) = count(DISTINCT id)` and not exceed the
//! table. At the end the datagen table must be complete.
//!
//! A failure reports the seed, the operations since the last good check,
//! the cluster, and writes the full log to `target/chaos-seed-<seed>.log`.
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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::Client;

use cluster::{Par, Snapshot, State};
use common::driver::{env_or, env_secs, env_seeds, run_seeds, save_log, say, tail};
use common::rows::{cell, diff_report, first_cell, multiset, mv_mismatch, run, run_raw_within};
use common::rows::{run_within, Row};
use common::workload::{Gen, Mirror, MVS, TABLES};
use common::{describe_pg_error, EbbflowServer, Postgres, ServerOptions};
use ops::{Chaos, Kind, Op, DEFAULT_UNITS};

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

/// Everything that happened, from both tasks, for failure reports.
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

/// What the two tasks share.
struct Shared {
    log: Log,
    /// Bumped before a fault is injected and again once the cluster has
    /// recovered from it: odd while a fault is in progress. A FLUSH
    /// acknowledges what was sent before it only if this did not move
    /// since the last acknowledgement.
    faults: AtomicU64,
    /// Held while the mirror is reconciled and while a fault is injected:
    /// no fault lands in the middle of a reconciliation.
    quiet: tokio::sync::Mutex<()>,
    stop: AtomicBool,
}

impl Shared {
    fn faults(&self) -> u64 {
        self.faults.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
struct DmlStats {
    ok: usize,
    failed: usize,
    acks: usize,
    reconciles: usize,
    /// Uncertain statements found lost (or kept) by reconciliations.
    lost: usize,
    kept: usize,
}

/// The DML workload and its acknowledged state.
struct Workload {
    gen: Gen,
    mirror: Mirror,
    /// `Shared::faults` when the mirror was last acknowledged or reconciled.
    ack_faults: u64,
    /// Rows of t2 at the last acknowledgement (less the deletes since).
    t2_rows: i64,
    stats: DmlStats,
}

impl Workload {
    fn next_dml(&mut self) -> String {
        if self.t2_rows > T2_MAX_ROWS {
            self.t2_rows -= self.t2_rows / 5;
            let k = self.gen.rng.gen_range(0..6);
            return format!("DELETE FROM t2 WHERE k = {k} OR k IS NULL");
        }
        self.gen.statement()
    }

    /// FLUSH (retrying while a fault is being recovered from), then make
    /// PostgreSQL the acknowledged state: every statement sent, or — when
    /// a fault came in between — the subset ebbflow kept.
    async fn settle(&mut self, eb: &Client, sh: &Shared) -> Result<(), String> {
        let deadline = Instant::now() + RECOVERY_WAIT * 2;
        loop {
            wait_no_fault(sh, deadline).await?;
            flush(eb, sh, self.ack_faults, deadline).await?;
            if sh.faults() == self.ack_faults {
                self.mirror.acknowledge().await?;
                self.stats.acks += 1;
                break;
            }
            // A fault since the last acknowledgement: what was not flushed
            // before it may be lost. Once the cluster has recovered, the
            // committed state is final for every statement sent.
            let _q = sh.quiet.lock().await;
            if sh.faults() % 2 == 1 {
                continue;
            }
            flush(eb, sh, u64::MAX, deadline).await?;
            let kept = self
                .mirror
                .reconcile(eb)
                .await
                .map_err(|e| format!("after a fault: {e}"))?;
            // `t1 [101], t2 [], …`: per table, 1 for a statement kept.
            let bits: String = kept
                .split('[')
                .skip(1)
                .filter_map(|x| x.split(']').next())
                .collect();
            let zeros = bits.matches('0').count();
            let ones = bits.matches('1').count();
            sh.log.push(format!(
                "-- reconciled after a fault: uncertain statements kept {kept}"
            ));
            self.stats.reconciles += 1;
            self.stats.lost += zeros;
            self.stats.kept += ones;
            self.ack_faults = sh.faults();
            break;
        }
        self.gen.refresh_ids(self.mirror.pg()).await?;
        self.t2_rows =
            first_cell(&run(self.mirror.pg(), "SELECT count(*) FROM t2").await?).unwrap_or(0);
        Ok(())
    }
}

/// Waits (until `deadline`) while a fault is in progress.
async fn wait_no_fault(sh: &Shared, deadline: Instant) -> Result<(), String> {
    while sh.faults() % 2 == 1 {
        if Instant::now() > deadline {
            return Err("a fault was still in progress after 40 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// FLUSH until it succeeds (until `deadline`); it may fail only if a fault
/// was injected since `ack_faults`.
async fn flush(eb: &Client, sh: &Shared, ack_faults: u64, deadline: Instant) -> Result<(), String> {
    loop {
        let r = run_raw_within(eb, "FLUSH", STMT_TIMEOUT)
            .await
            .map_err(|e| format!("FLUSH: {e}"))?;
        match r {
            Ok(_) => return Ok(()),
            Err(e) if sh.faults() == ack_faults => {
                return Err(format!(
                    "FLUSH failed with no fault injected: {}",
                    describe_pg_error(&e)
                ))
            }
            Err(e) => {
                if Instant::now() > deadline {
                    return Err(format!(
                        "FLUSH still fails 40 s after a fault: {}",
                        describe_pg_error(&e)
                    ));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The DML task: rounds of one to four statements, each round holding
/// the workload (the checks pause it by taking it), a FLUSH now and then.
async fn dml_task(
    eb: Client,
    work: Arc<tokio::sync::Mutex<Workload>>,
    sh: Arc<Shared>,
) -> Result<(), String> {
    while !sh.stop.load(Ordering::SeqCst) {
        {
            let mut w = work.lock().await;
            if sh.stop.load(Ordering::SeqCst) {
                break;
            }
            let n = w.gen.rng.gen_range(1..=4);
            for _ in 0..n {
                let sql = w.next_dml();
                w.mirror.sent(&sql);
                sh.log.push(format!("/* dml */ {sql}"));
                let r = run_raw_within(&eb, &sql, STMT_TIMEOUT)
                    .await
                    .map_err(|e| format!("DML `{sql}`: {e}"))?;
                match r {
                    Ok(_) => w.stats.ok += 1,
                    Err(e) if sh.faults() == w.ack_faults => {
                        return Err(format!(
                            "DML `{sql}` failed with no fault injected: {}",
                            describe_pg_error(&e)
                        ))
                    }
                    Err(e) => {
                        sh.log
                            .push(format!("-- failed (fault): {}", describe_pg_error(&e)));
                        w.stats.failed += 1;
                    }
                }
            }
            if w.mirror.uncertain_max_per_table() >= 6 || w.gen.rng.gen_bool(0.2) {
                sh.log.push("/* dml */ FLUSH".into());
                w.settle(&eb, &sh).await?;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
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

/// Reads the cluster until `ready` accepts it (tolerating errors: a
/// recovery may be running), until `limit`.
async fn poll<T>(
    eb: &Client,
    limit: Duration,
    what: &str,
    mut ready: impl FnMut(&Snapshot) -> Option<T>,
) -> Result<T, String> {
    let deadline = Instant::now() + limit;
    loop {
        let last = match Snapshot::read(eb).await {
            Ok(s) => match ready(&s) {
                Some(t) => return Ok(t),
                None => s.describe(),
            },
            Err(e) => e,
        };
        if Instant::now() > deadline {
            return Err(format!(
                "{what}: not within {} s (last read: {last})",
                limit.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The invariants; with the adaptive policy on, also waits until the jobs
/// fit the cluster.
async fn checked(eb: &Client, snap: Snapshot, adaptive: bool) -> Result<Snapshot, String> {
    let v = snap.violations();
    if !v.is_empty() {
        return Err(format!("invariant violated: {}", v.join("; ")));
    }
    if !adaptive || snap.unsettled().is_none() {
        return Ok(snap);
    }
    let deadline = Instant::now() + SETTLE_WAIT;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let s = Snapshot::read(eb).await?;
        let v = s.violations();
        if !v.is_empty() {
            return Err(format!("invariant violated: {}", v.join("; ")));
        }
        match s.unsettled() {
            None => return Ok(s),
            Some(why) if Instant::now() > deadline => {
                return Err(format!(
                    "the adaptive policy did not fit the jobs to the running units within {} s: \
                     {why}",
                    SETTLE_WAIT.as_secs()
                ))
            }
            Some(_) => {}
        }
    }
}

/// Injects a fault into node `id` and waits until the cluster has
/// recovered from it; checks the fail-over.
async fn fault(
    st: &mut SeedState,
    eb: &Client,
    op: &Op,
    id: u32,
    before: &Snapshot,
) -> Result<Snapshot, String> {
    let had_actors = before.actors_on(id) > 0;
    st.new_history(eb).await?;
    {
        let _q = st.sh.quiet.lock().await;
        st.sh.faults.fetch_add(1, Ordering::SeqCst);
        eb_run(eb, &op.sql).await?;
    }
    let t0 = Instant::now();
    poll(eb, RECOVERY_WAIT, &format!("node {id} marked down"), |s| {
        (s.state(id) == Some(State::Down)).then_some(())
    })
    .await?;
    let down_ms = t0.elapsed().as_millis();
    if had_actors {
        let deadline = Instant::now() + RECOVERY_WAIT;
        loop {
            if let Ok(rows) = st.new_history(eb).await {
                if rows.iter().any(|(s, _)| s == "fail-over") {
                    break;
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "no fail-over in rw_scale_history within {} s of the fault (node {id} \
                     held {} actors)",
                    RECOVERY_WAIT.as_secs(),
                    before.actors_on(id)
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    flush(eb, &st.sh, u64::MAX, Instant::now() + RECOVERY_WAIT).await?;
    let recovered_ms = t0.elapsed().as_millis();
    st.note(format!(
        "-- node {id} down after {down_ms} ms, recovered after {recovered_ms} ms"
    ));
    st.fault_ms.push((down_ms, recovered_ms));
    st.sh.faults.fetch_add(1, Ordering::SeqCst);
    let after = Snapshot::read(eb).await?;
    // The fail-over keeps each fragment's actor count where the running
    // units allow, and moves only the actors of the failed node.
    let avail = after.running_units().len();
    let moved = before.fragments_on(id);
    for f in before.frags.keys() {
        let want = if before.single(*f) {
            1
        } else {
            before.count(*f).min(avail)
        };
        if after.count(*f) != want {
            return Err(format!(
                "after the fail-over fragment {f} has {} actors, expected {want} (it had {}, \
                 {avail} units run)",
                after.count(*f),
                before.count(*f)
            ));
        }
        if !moved.contains_key(f) && after.units(*f) != before.units(*f) {
            return Err(format!(
                "the fail-over moved fragment {f}, which had no actor on node {id}: units {:?} \
                 → {:?}",
                before.units(*f),
                after.units(*f)
            ));
        }
    }
    Ok(after)
}

/// Runs one operation and checks its outcome; returns the cluster after.
async fn apply(
    st: &mut SeedState,
    eb: &Client,
    chaos: &mut Chaos,
    op: &Op,
    before: &Snapshot,
) -> Result<Snapshot, String> {
    if let (Kind::Fail { id, .. }, None) = (&op.kind, op.refusal) {
        return fault(st, eb, op, *id, before).await;
    }
    let res = run_raw_within(eb, &op.sql, STMT_TIMEOUT)
        .await
        .map_err(|e| format!("`{}`: {e}", op.sql))?;
    let after = Snapshot::read(eb).await?;
    let history = st.new_history(eb).await?;
    let rows = match (op.refusal, res) {
        (Some(code), Ok(_)) => {
            return Err(format!(
                "`{}` succeeded; expected SQLSTATE {code} ({})",
                op.sql, op.why
            ))
        }
        (Some(code), Err(e)) => {
            if e.code().map(|c| c.code()) != Some(code) {
                return Err(format!(
                    "`{}` failed with {}; expected SQLSTATE {code} ({})",
                    op.sql,
                    describe_pg_error(&e),
                    op.why
                ));
            }
            if after != *before {
                return Err(format!(
                    "refused `{}` changed the cluster\nbefore: {}\nafter:  {}",
                    op.sql,
                    before.describe(),
                    after.describe()
                ));
            }
            if history.iter().any(|(s, _)| *s == op.sql) {
                return Err(format!("refused `{}` is in rw_scale_history", op.sql));
            }
            let msg = e.as_db_error().map(|d| d.message()).unwrap_or_default();
            if let Some(m) = op.mention.iter().find(|m| !msg.contains(m.as_str())) {
                return Err(format!(
                    "`{}` was refused with \"{msg}\", which does not name {m} ({})",
                    op.sql, op.why
                ));
            }
            return Ok(after);
        }
        (None, Err(e)) => {
            return Err(format!(
                "valid `{}` failed: {}",
                op.sql,
                describe_pg_error(&e)
            ))
        }
        (None, Ok(rows)) => rows,
    };
    let recorded = |sql: &str| {
        history
            .iter()
            .any(|(s, status)| s == sql && status == "succeeded")
    };
    let same_states = |skip: u32| {
        before
            .workers
            .iter()
            .filter(|(id, _)| **id != skip)
            .all(|(id, w)| after.workers.get(id) == Some(w))
    };
    match &op.kind {
        Kind::Add { units } => {
            let id: u32 = first_cell(&rows).unwrap_or(0);
            let n = units.unwrap_or(DEFAULT_UNITS);
            let want: std::collections::BTreeSet<u32> =
                (chaos.max_unit + 1..=chaos.max_unit + n).collect();
            if id != chaos.max_node + 1 {
                return Err(format!(
                    "`{}` returned node {id}, expected {} (ids are never reused)",
                    op.sql,
                    chaos.max_node + 1
                ));
            }
            let w = after.workers.get(&id);
            if w.map(|w| (w.state, &w.units)) != Some((State::Running, &want)) {
                return Err(format!(
                    "after `{}` node {id} is {w:?}, expected running on units {want:?}",
                    op.sql
                ));
            }
            if !same_states(id) {
                return Err(format!("`{}` changed other nodes", op.sql));
            }
            chaos.max_node = id;
            chaos.max_unit += n;
        }
        Kind::Drain { id, dry: true } => {
            let on = before.fragments_on(*id);
            let got: BTreeMap<u32, usize> = rows
                .iter()
                .map(|r| (cell(&r[0]).unwrap_or(0), cell(&r[2]).unwrap_or(0)))
                .collect();
            if got != on {
                return Err(format!(
                    "`{}` plans to remove (fragment → actors) {got:?}, but node {id} holds {on:?}",
                    op.sql
                ));
            }
            if after != *before {
                return Err(format!("`{}` changed the cluster", op.sql));
            }
        }
        Kind::Drain { id, dry: false } => {
            let avail = after.running_units().len();
            if after.state(*id) != Some(State::Draining) || after.actors_on(*id) != 0 {
                return Err(format!(
                    "after `{}` node {id} is {:?} with {} actors, expected draining with none",
                    op.sql,
                    after.state(*id),
                    after.actors_on(*id)
                ));
            }
            if !same_states(*id) {
                return Err(format!("`{}` changed other nodes", op.sql));
            }
            let on = before.fragments_on(*id);
            for f in before.frags.keys() {
                let want = if before.single(*f) {
                    1
                } else {
                    before.count(*f).min(avail)
                };
                if after.count(*f) != want
                    || (!on.contains_key(f) && after.units(*f) != before.units(*f))
                {
                    return Err(format!(
                        "after `{}` fragment {f} is on units {:?} (before {:?}, {avail} units \
                         run): a drain keeps actor counts and moves only the drained node's \
                         actors",
                        op.sql,
                        after.units(*f),
                        before.units(*f)
                    ));
                }
            }
            if !on.is_empty() && !recorded(&op.sql) {
                return Err(format!("`{}` is not in rw_scale_history", op.sql));
            }
        }
        Kind::Remove { id } => {
            if after.workers.contains_key(id) || !same_states(*id) || after.actors != before.actors
            {
                return Err(format!(
                    "after `{}`: {}, expected node {id} gone and nothing else changed",
                    op.sql,
                    after.describe()
                ));
            }
        }
        Kind::Restart { id } => {
            let (b, a) = (before.workers.get(id), after.workers.get(id));
            if a.map(|w| (w.state, &w.units)) != b.map(|w| (State::Running, &w.units)) {
                return Err(format!(
                    "after `{}` node {id} is {a:?}, expected running on its units (before: {b:?})",
                    op.sql
                ));
            }
        }
        Kind::SetPar { job, n } => {
            let want_par = n.map_or(Par::Adaptive, Par::Fixed);
            if after.jobs.get(job) != Some(&want_par) {
                return Err(format!(
                    "after `{}` job {job} has parallelism {:?}",
                    op.sql,
                    after.jobs.get(job)
                ));
            }
            let running = after.running_units();
            for f in after.job_frags(*job) {
                let ok = match n {
                    _ if after.single(f) => after.count(f) == 1,
                    Some(n) => after.count(f) == *n,
                    None => after.units(f) == running,
                };
                if !ok {
                    return Err(format!(
                        "after `{}` fragment {f} is on units {:?} (running units {running:?})",
                        op.sql,
                        after.units(f)
                    ));
                }
            }
            if after.actors != before.actors && !recorded(&op.sql) {
                return Err(format!("`{}` is not in rw_scale_history", op.sql));
            }
        }
        Kind::Reschedule { dry: true, .. } => {
            if rows.is_empty() || after != *before {
                return Err(format!(
                    "`{}` returned {} rows and {} the cluster",
                    op.sql,
                    rows.len(),
                    if after == *before {
                        "did not change"
                    } else {
                        "changed"
                    }
                ));
            }
        }
        Kind::Reschedule { expect, dry: false } => {
            for (f, want) in expect {
                if after.units(*f) != *want {
                    return Err(format!(
                        "after `{}` fragment {f} is on units {:?}, expected {want:?}",
                        op.sql,
                        after.units(*f)
                    ));
                }
                if want.len() != before.count(*f) && after.par(*f) != Par::Custom {
                    return Err(format!(
                        "`{}` resized fragment {f}, yet its job's parallelism is {:?}, not custom",
                        op.sql,
                        after.par(*f)
                    ));
                }
            }
            if !recorded(&op.sql) {
                return Err(format!("`{}` is not in rw_scale_history", op.sql));
            }
        }
        Kind::Adaptive(on) => chaos.adaptive = *on,
        Kind::Fail { .. } | Kind::Bad => {}
    }
    Ok(after)
}

/// The history of one operation: no scale failed unless a fault was
/// injected; when the adaptive policy changed the layout (a node joined or
/// came back, the policy was turned on), it recorded an `adaptive` row.
async fn policy_history(
    st: &mut SeedState,
    eb: &Client,
    op: &Op,
    before: &Snapshot,
    settled: &Snapshot,
) -> Result<(), String> {
    st.new_history(eb).await?;
    let by_policy = op.refusal.is_none()
        && matches!(
            op.kind,
            Kind::Add { .. } | Kind::Restart { .. } | Kind::Adaptive(true)
        )
        && settled.actors != before.actors;
    let deadline = Instant::now() + SETTLE_WAIT;
    while by_policy
        && !st
            .op_history
            .iter()
            .any(|(s, status)| s == "adaptive" && status == "succeeded")
    {
        if Instant::now() > deadline {
            return Err(format!(
                "after `{}` the adaptive policy changed the layout but rw_scale_history has no                  succeeded `adaptive` row (new rows: {:?})",
                op.sql, st.op_history
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        st.new_history(eb).await?;
    }
    let fault = matches!(op.kind, Kind::Fail { .. }) && op.refusal.is_none();
    if let Some(failed) = st.op_history.iter().find(|(_, s)| s != "succeeded") {
        if !fault {
            return Err(format!(
                "a scale failed with no fault injected: rw_scale_history row {failed:?} (during                  `{}`)",
                op.sql
            ));
        }
    }
    Ok(())
}

/// Pauses DML, settles the mirror and compares the tables and every MV
/// with PostgreSQL; checks the datagen MV.
async fn compare_all(
    st: &SeedState,
    work: &tokio::sync::Mutex<Workload>,
    eb: &Client,
    check: usize,
) -> Result<(), String> {
    let mut w = tokio::time::timeout(STMT_TIMEOUT * 3, work.lock())
        .await
        .map_err(|_| "the DML task did not pause within 60 s".to_string())?;
    st.note(format!("-- check {check}: FLUSH"));
    w.settle(eb, &st.sh).await?;
    let pg = w.mirror.pg();
    let when = format!("at check {check}");
    for t in TABLES.iter().filter_map(|t| t.split_whitespace().nth(2)) {
        let sql = format!("SELECT * FROM {t}");
        let (exp, act) = (
            multiset(&run(pg, &sql).await?),
            multiset(&eb_run(eb, &sql).await?),
        );
        if exp != act {
            return Err(format!(
                "table {t} differs from the acknowledged state {when} (PostgreSQL = expected)\n{}",
                diff_report(&exp, &act, 20)
            ));
        }
    }
    let fixed = FIXED_MVS.iter().map(|(n, _, d)| (*n, *d));
    for (name, def) in MVS.iter().copied().chain(fixed) {
        let sql = format!("SELECT * FROM {name}");
        let expected = run(pg, &sql)
            .await
            .map_err(|e| format!("PostgreSQL {name}: {e}"))?;
        let actual = eb_run(eb, &sql).await?;
        if let Some(what) = mv_mismatch(name, def, &when, &expected, &actual) {
            return Err(what);
        }
    }
    let mv = eb_run(eb, "SELECT c, d FROM mv_dg").await?;
    let t = eb_run(eb, "SELECT count(*), count(DISTINCT id), max(id) FROM dg").await?;
    let num = |r: &[Row], i: usize| r.first().and_then(|r| cell::<i64>(&r[i]));
    let (c, d, tc, td, tmax) = (num(&mv, 0), num(&mv, 1), num(&t, 0), num(&t, 1), num(&t, 2));
    match (c, d, tc, td) {
        (Some(c), Some(d), Some(tc), Some(td))
            if c == d
                && tc == td
                && c <= tc
                && tc <= DATAGEN_ROWS
                && (tc == 0 || tmax == Some(tc)) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "datagen {when}: mv_dg count={c:?} distinct={d:?}, table count={tc:?} \
             distinct={td:?} max={tmax:?} (sequence 1..{DATAGEN_ROWS})"
        )),
    }
}

/// What a seed reports: operations, checks, faults.
struct SeedReport {
    ops: usize,
    faults: usize,
}

async fn run_seed(pg: &Postgres, seed: u64, ops: usize) -> Result<SeedReport, String> {
    let db = format!("chaos_{seed}");
    let admin = pg.create_database(&db).await?;
    let mut server = EbbflowServer::spawn(ServerOptions::default(), None).await?;
    let result = seed_body(pg, &db, &server, seed, ops).await;
    let alive = server.is_running();
    let tail = server.log.tail(30);
    server.shut_down().await;
    Postgres::drop_database(&admin, &db).await;
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
) -> Result<SeedReport, String> {
    let started = Instant::now();
    let pg_mirror = common::open(&pg.conn_str(db)).await?;
    let eb_dml = common::open(&server.conn_str()).await?;
    let eb = common::open(&server.conn_str()).await?;
    let sh = Arc::new(Shared {
        log: Log::default(),
        faults: AtomicU64::new(0),
        quiet: tokio::sync::Mutex::new(()),
        stop: AtomicBool::new(false),
    });
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
    let mut w = Workload {
        gen: Gen::new(seed),
        mirror: Mirror::new(pg_mirror),
        ack_faults: 0,
        t2_rows: 0,
        stats: DmlStats::default(),
    };

    // The schema: tables with acknowledged rows, the workload's MVs, the
    // fixed MVs (views in PostgreSQL) and the datagen feed.
    let setup = async {
        eb_run(&eb, "ALTER SYSTEM SET adaptive_scaling_interval_ms = 200").await?;
        w.mirror.create_schema(&eb, &mut w.gen).await?;
        for (name, n, def) in FIXED_MVS {
            run(w.mirror.pg(), &format!("CREATE VIEW {name} AS {def}")).await?;
            let sql = format!("CREATE MATERIALIZED VIEW {name} WITH (parallelism = {n}) AS {def}");
            w.mirror.note(&sql);
            eb_run(&eb, &sql).await?;
        }
        for sql in [DATAGEN_TABLE, DATAGEN_MV] {
            w.mirror.note(sql);
            eb_run(&eb, sql).await?;
        }
        w.gen.refresh_ids(w.mirror.pg()).await
    };
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

    let dml = tokio::spawn(dml_task(eb_dml, work.clone(), sh.clone()));
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
            let after = apply(&mut st, &eb, &mut chaos, &op, &before)
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
    let report = run_seeds(
        "chaos",
        &seeds,
        budget,
        "a statement, FLUSH, drain or recovery",
        |seed| run_seed(&pg, seed, ops),
    );
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
