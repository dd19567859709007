//! The state store on an object store, with its versions in the meta store,
//! under faults: crashes between an upload and the commit that references
//! it, crashes during compaction, outages of the object store and of the
//! meta store, and bad configuration.
//!
//! It runs on SeaweedFS (S3) + PostgreSQL when both are installed (required
//! under `CI=true`; see `common::stores`), else on the defaults (state and
//! meta store in the data dir), where only the crashes and the
//! configuration checks that need no S3 run. The workload (`model`): a
//! table with a primary key and a small dimension table, an aggregate MV and
//! a join MV; random DML from one session with FLUSH points; what a FLUSH
//! acknowledged is kept in memory, and after a fault the statements not yet
//! acknowledged are reconciled (each kept or lost as a whole, none twice).
//!
//! For each seed:
//!
//! 1. *Crashes.* `ALTER SYSTEM SET debug_crash_at` = `upload` or
//!    `compaction` (alternating), then writes until the process aborts
//!    there (bounded), then a restart — on S3 + PostgreSQL now and then on
//!    a fresh, empty data dir, so the state comes back from the two stores
//!    alone. After each: every acknowledged row is there once, the MVs
//!    equal their queries re-run as batch SELECTs and the model, the
//!    committed epoch did not go back. At the end a restart with
//!    `--gc-grace-ms 0 --gc-interval-ms 200` must leave exactly the live
//!    files (`rw_state_files`) on the store — the crashes' garbage
//!    collected, nothing live deleted — and reads still match; so must a
//!    few seconds of writes under that collector (it must spare the files
//!    of epochs about to commit), also after a restart that reads every
//!    live file back (with the collector every 20 ms there).
//! 2. *Object store outage* (S3 only; `outage`): under steady DML with FLUSH
//!    acknowledgements SeaweedFS is stopped for a short while (shorter than
//!    the 30 s retry window) and once for longer (the cluster fails and
//!    recovers), then started again. FLUSHes meanwhile may wait or fail,
//!    never succeed while rows were lost; after each outage a FLUSH must
//!    succeed within 60 s with no help, and at the end every
//!    acknowledged row is there once and the MVs match.
//! 3. *Meta store outage*: the same with the PostgreSQL meta store stopped
//!    (`immediate`) and started again on the same port.
//! 4. *Bad configuration* (`bad_config`): unreachable S3 endpoint, missing
//!    bucket, unreachable or missing meta store, malformed URLs: a quick
//!    non-zero exit with one `Error: …` line.
//!
//! A failure names the scenario, saves the statement log to
//! `target/state-store-<scenario>-seed-<seed>.log` and shows the servers'
//! last log lines. The closing line is `state_store: N passed, N failed`.
//!
//! Environment: `STATE_STORE_SEEDS=1,2`, `STATE_STORE_CRASHES=n` (crashes
//! per seed, 20), `STATE_STORE_SHORT_OUTAGE_SECS` (5),
//! `STATE_STORE_LONG_OUTAGE_SECS` (40), `STATE_STORE_SEED_TIMEOUT_SECS`
//! (400) bounds one seed.

mod common;
// In a directory of their own: a file in tests/ would be a test target.
#[path = "state_store/bad_config.rs"]
mod bad_config;
#[path = "state_store/model.rs"]
mod model;
#[path = "state_store/outage.rs"]
mod outage;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use tokio_postgres::Client;

use common::describe_pg_error;
use common::driver::{env_or, env_secs, env_seeds, run_seeds, save_log, say};
use common::stores::Stores;
use common::{EbbflowServer, Postgres, ServerOptions, TempDir};
use model::{must, Stats, Writer, MVS, TABLES};
use outage::{outage, Outage};

const DEFAULT_SEEDS: &[u64] = &[61];
const DEFAULT_CRASHES: usize = 20;
/// Bound of a statement when no store is away.
const STMT_TIMEOUT: Duration = Duration::from_secs(20);
/// Bound of a (re)start until `listening on`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long after `debug_crash_at` is armed the process must have aborted
/// under writes.
const CRASH_WAIT: Duration = Duration::from_secs(20);
/// How long the collector (every 200 ms, no grace) may take to leave
/// exactly the live files.
const GC_WAIT: Duration = Duration::from_secs(20);
/// Writes while the collector runs without grace, every
/// `GC_UNDER_LOAD_INTERVAL_MS`.
const GC_UNDER_LOAD: Duration = Duration::from_secs(4);
const GC_UNDER_LOAD_INTERVAL_MS: u64 = 20;

/// What the scenarios share.
pub struct Ctx {
    stores: Stores,
    /// The meta stores' PostgreSQL on S3 + PostgreSQL; durable, so that
    /// stopping it abruptly loses no commit it acknowledged.
    pg: Option<Postgres>,
}

/// One ebbflow server of a scenario, across its restarts.
struct Node {
    name: String,
    opts: ServerOptions,
    dir: TempDir,
    server: Option<EbbflowServer>,
    /// Log tails of the servers that ended, oldest first.
    logs: Vec<String>,
    start_ms: Vec<u128>,
    fresh_dirs: usize,
}

fn temp_dir() -> Result<TempDir, String> {
    TempDir::new("ebbflow-state-store").map_err(|e| format!("temp dir: {e}"))
}

impl Node {
    async fn new(ctx: &Ctx, name: &str) -> Result<Node, String> {
        let base = ServerOptions {
            ready_timeout: READY_TIMEOUT,
            ..ServerOptions::default()
        };
        let opts = match &ctx.pg {
            Some(pg) => ctx.stores.options(pg, name, base).await?,
            None => base,
        };
        Ok(Node {
            name: name.to_string(),
            opts,
            dir: temp_dir()?,
            server: None,
            logs: Vec::new(),
            start_ms: Vec::new(),
            fresh_dirs: 0,
        })
    }

    /// Starts the server, on a fresh, empty data dir if `fresh`, and
    /// connects.
    async fn start(&mut self, fresh: bool) -> Result<Client, String> {
        if fresh {
            self.dir = temp_dir()?;
            self.fresh_dirs += 1;
        }
        let started = Instant::now();
        let server =
            EbbflowServer::spawn(self.opts.clone(), Some(self.dir.path().to_path_buf())).await?;
        self.start_ms.push(started.elapsed().as_millis());
        let conn = server.conn_str();
        self.server = Some(server);
        tokio::time::timeout(STMT_TIMEOUT, common::open(&conn))
            .await
            .map_err(|_| "connecting to ebbflow timed out".to_string())?
            .map_err(|e| format!("connect to ebbflow: {e}"))
    }

    /// Waits for the process to have aborted at crash point `point`.
    async fn wait_crash(&mut self, point: &str) -> Result<(), String> {
        let want = match point {
            "upload" => "crashing at AfterUpload",
            _ => "crashing at InCompaction",
        };
        let mut s = self
            .server
            .take()
            .ok_or_else(|| "no server running".to_string())?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.is_running() {
            if Instant::now() > deadline {
                self.logs.push(s.log.tail(40));
                s.kill9();
                return Err(format!(
                    "a statement failed after debug_crash_at = {point}, but the server still \
                     runs 10 s later"
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Its last line may still be in the pipe.
        let deadline = Instant::now() + Duration::from_secs(2);
        while !s.log.tail(20).contains(want) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let tail = s.log.tail(40);
        self.logs.push(tail.clone());
        s.kill9();
        if tail.contains(want) {
            Ok(())
        } else {
            Err(format!(
                "the server died after debug_crash_at = {point}, but not at `{want}`"
            ))
        }
    }

    /// SIGTERM (bounded), keeping its log tail.
    async fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            self.logs.push(s.log.tail(40));
            s.shut_down().await;
        }
    }

    /// A failure report: `what`, the statement log (saved in full), the
    /// last servers' logs.
    fn fail(&self, w: &Writer, scenario: &str, seed: u64, what: &str) -> String {
        let path = save_log(&format!("state-store-{scenario}-seed-{seed}"), &w.log);
        let current = self
            .server
            .as_ref()
            .map(|s| s.log.tail(30))
            .unwrap_or_default();
        let mut earlier = String::new();
        for log in self.logs.iter().rev().take(2).rev() {
            earlier.push_str(&format!("--- log of an earlier server ---\n{log}\n"));
        }
        format!(
            "{scenario} (seed {seed}, server {}): {what}\n--- last statements (newest last) \
             ---\n{}\n--- full statement log: {} ---\n{earlier}--- log of the current server \
             ---\n{current}",
            self.name,
            w.log_tail(30),
            path.display(),
        )
    }
}

/// The tables with acknowledged rows, then the MVs (they backfill).
async fn setup(eb: &Client, w: &mut Writer) -> Result<(), String> {
    for ddl in TABLES {
        w.note(ddl);
        must(eb, ddl, STMT_TIMEOUT).await?;
    }
    let dim = model::dim_insert();
    w.note(&dim);
    must(eb, &dim, STMT_TIMEOUT).await?;
    let rows = w.insert(300);
    if let Some(e) = w.send(eb, rows, STMT_TIMEOUT).await? {
        return Err(format!("setup INSERT: {}", describe_pg_error(&e)));
    }
    if let Some(e) = w.flush(eb, STMT_TIMEOUT).await? {
        return Err(format!("setup FLUSH: {}", describe_pg_error(&e)));
    }
    for (name, def, _) in MVS {
        let sql = format!("CREATE MATERIALIZED VIEW {name} AS {def}");
        w.note(&sql);
        must(eb, &sql, STMT_TIMEOUT).await?;
    }
    must(eb, "FLUSH", STMT_TIMEOUT).await?;
    w.check(eb, STMT_TIMEOUT).await.map(|_| ())
}

/// What the crash scenario did.
struct CrashReport {
    crashes: usize,
    fresh_dirs: usize,
    slowest_start_ms: u128,
    /// State file objects before the collector ran without grace, and the
    /// live files it left.
    objects_before_gc: usize,
    live_files: usize,
    stats: Stats,
}

async fn crashes(ctx: &Ctx, seed: u64, n: usize) -> Result<CrashReport, String> {
    let name = format!("crash{seed}");
    let mut node = Node::new(ctx, &name).await?;
    let mut w = Writer::new(seed);
    let result = crash_body(ctx, &mut node, &mut w, n).await;
    node.stop().await;
    if let Some(pg) = &ctx.pg {
        ctx.stores.drop_meta(pg, &name).await;
    }
    result.map_err(|e| node.fail(&w, "crashes", seed, &e))
}

async fn crash_body(
    ctx: &Ctx,
    node: &mut Node,
    w: &mut Writer,
    n: usize,
) -> Result<CrashReport, String> {
    let mut eb = node.start(false).await?;
    setup(&eb, w).await?;
    for i in 0..n {
        let point = if i % 2 == 0 { "upload" } else { "compaction" };
        // Once unquoted: both spellings are accepted.
        let sql = if i == 0 {
            format!("ALTER SYSTEM SET debug_crash_at = {point}")
        } else {
            format!("ALTER SYSTEM SET debug_crash_at = '{point}'")
        };
        w.note(&sql);
        must(&eb, &sql, STMT_TIMEOUT).await?;
        let armed = Instant::now();
        let mut flush_after = w.rng.gen_range(1..6);
        loop {
            if armed.elapsed() > CRASH_WAIT {
                return Err(format!(
                    "the server still runs {} s after `{sql}` under writes",
                    CRASH_WAIT.as_secs()
                ));
            }
            let op = w.next_op();
            if w.send(&eb, op, STMT_TIMEOUT).await?.is_some() {
                break;
            }
            if w.uncertain.len() >= flush_after {
                if w.flush(&eb, STMT_TIMEOUT).await?.is_some() {
                    break;
                }
                flush_after = w.rng.gen_range(1..6);
            }
        }
        node.wait_crash(point).await?;
        let died_ms = armed.elapsed().as_millis();
        let fresh = ctx.stores.remote() && (i % 4 == 1 || w.rng.gen_bool(0.25));
        let on = if fresh { "a fresh" } else { "the same" };
        w.note(&format!(
            "-- crashed at {point} {died_ms} ms after arming; restart on {on} data dir"
        ));
        drop(eb);
        eb = node.start(fresh).await?;
        let kept = w.check(&eb, STMT_TIMEOUT).await?;
        say(&format!(
            "state_store: crash {} at {point} ok: {died_ms} ms after arming; restarted on {on} \
             data dir in {} ms; uncertain statements kept [{kept}]",
            i + 1,
            node.start_ms.last().copied().unwrap_or(0),
        ));
    }

    // The garbage of the crashes goes, the live files stay.
    let objects_before_gc = ctx.stores.sst_objects(&node.name, node.dir.path())?.len();
    node.stop().await;
    node.opts.args.extend(
        ["--gc-grace-ms", "0", "--gc-interval-ms", "200"]
            .iter()
            .map(|s| s.to_string()),
    );
    w.note("-- restart with --gc-grace-ms 0 --gc-interval-ms 200");
    let mut eb = node.start(ctx.stores.remote()).await?;
    let live_files = collect_garbage(ctx, node, &eb).await?;
    w.check(&eb, STMT_TIMEOUT).await?;
    say(&format!(
        "state_store: garbage collected: {objects_before_gc} state file objects before, \
         {live_files} (the live files) after"
    ));

    // The collector must spare the files of epochs not committed yet:
    // write under it (running often), then read everything back cold after
    // a restart.
    node.stop().await;
    for arg in node.opts.args.iter_mut() {
        if arg == "200" {
            *arg = GC_UNDER_LOAD_INTERVAL_MS.to_string();
        }
    }
    w.note(&format!(
        "-- restart with --gc-grace-ms 0 --gc-interval-ms {GC_UNDER_LOAD_INTERVAL_MS}; writes"
    ));
    eb = node.start(ctx.stores.remote()).await?;
    let until = Instant::now() + GC_UNDER_LOAD;
    while Instant::now() < until {
        let op = w.next_op();
        if let Some(e) = w.send(&eb, op, STMT_TIMEOUT).await? {
            return Err(format!(
                "a statement failed under the collector, with no fault: {}",
                describe_pg_error(&e)
            ));
        }
        if w.uncertain.len() >= 3 {
            if let Some(e) = w.flush(&eb, STMT_TIMEOUT).await? {
                return Err(format!(
                    "FLUSH failed under the collector, with no fault: {}",
                    describe_pg_error(&e)
                ));
            }
        }
    }
    if let Some(e) = w.flush(&eb, STMT_TIMEOUT).await? {
        return Err(format!("FLUSH: {}", describe_pg_error(&e)));
    }
    collect_garbage(ctx, node, &eb)
        .await
        .map_err(|e| format!("after writes under the collector (grace 0): {e}"))?;
    w.check(&eb, STMT_TIMEOUT).await?;
    node.stop().await;
    w.note("-- restart: every live file is read from the store");
    eb = node.start(ctx.stores.remote()).await?;
    w.check(&eb, STMT_TIMEOUT)
        .await
        .map_err(|e| format!("after writes under the collector (grace 0) and a restart: {e}"))?;
    Ok(CrashReport {
        crashes: n,
        fresh_dirs: node.fresh_dirs,
        slowest_start_ms: node.start_ms.iter().max().copied().unwrap_or(0),
        objects_before_gc,
        live_files,
        stats: w.stats.clone(),
    })
}

/// The ids of the live state files (`rw_state_files`).
async fn live_files(eb: &Client) -> Result<BTreeSet<String>, String> {
    Ok(must(eb, "SELECT id FROM rw_state_files", STMT_TIMEOUT)
        .await?
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect())
}

/// Waits until the state file objects are exactly the live files (twice
/// in a row: a compaction may commit between the reads). Returns how many
/// are live. A file live in two reads of the version and missing from a
/// listing taken between them was deleted while live: a failure at once.
async fn collect_garbage(ctx: &Ctx, node: &Node, eb: &Client) -> Result<usize, String> {
    let deadline = Instant::now() + GC_WAIT;
    let mut agreed = 0;
    loop {
        let before = live_files(eb).await?;
        let objects = ctx.stores.sst_objects(&node.name, node.dir.path())?;
        let live = live_files(eb).await?;
        let deleted: Vec<&String> = before
            .intersection(&live)
            .filter(|id| !objects.contains(*id))
            .collect();
        if !deleted.is_empty() {
            return Err(format!(
                "live state files were deleted from the store: {deleted:?} (live in the \
                 version read before and after a listing of {} objects that lacks them; {} \
                 live files)",
                objects.len(),
                live.len()
            ));
        }
        let garbage: Vec<&String> = objects.difference(&live).collect();
        if garbage.is_empty() && before == live && objects == live {
            agreed += 1;
            if agreed == 2 {
                return Ok(live.len());
            }
        } else {
            agreed = 0;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{} s after a restart with --gc-grace-ms 0 the store holds {} state file \
                 objects for {} live files: garbage {:?}",
                GC_WAIT.as_secs(),
                objects.len(),
                live.len(),
                garbage.iter().take(10).collect::<Vec<_>>(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Knobs of a run.
#[derive(Clone)]
struct Knobs {
    crashes: usize,
    outages: Vec<Duration>,
}

/// What a seed did.
struct SeedReport {
    crashes: usize,
    outages: usize,
    bad_configs: usize,
}

fn stats_line(s: &Stats) -> String {
    let errors: Vec<&str> = s.errors.iter().map(String::as_str).take(4).collect();
    format!(
        "{} statements, {} acknowledgements, {} failed statements, {} failed FLUSHes, {} \
         reconciliations keeping {} and losing {} uncertain statements, slowest FLUSH {} ms; \
         errors seen: {errors:?}",
        s.statements,
        s.acks,
        s.failed_statements,
        s.failed_flushes,
        s.reconciles,
        s.kept,
        s.lost,
        s.slowest_flush.as_millis()
    )
}

async fn run_seed(ctx: &mut Ctx, seed: u64, knobs: &Knobs) -> Result<SeedReport, String> {
    let mut errors = Vec::new();
    let mut report = SeedReport {
        crashes: 0,
        outages: 0,
        bad_configs: 0,
    };
    let started = Instant::now();
    match crashes(ctx, seed, knobs.crashes).await {
        Ok(r) => {
            say(&format!(
                "state_store: seed {seed} crashes ok in {:.1}s: {} crashes ({} restarts on a fresh data \
                 dir, slowest start {} ms), {} state file objects before the collector, {} \
                 live after; {}",
                started.elapsed().as_secs_f64(),
                r.crashes,
                r.fresh_dirs,
                r.slowest_start_ms,
                r.objects_before_gc,
                r.live_files,
                stats_line(&r.stats)
            ));
            report.crashes = r.crashes;
        }
        Err(e) => errors.push(e),
    }
    if ctx.stores.remote() {
        for which in [Outage::ObjectStore, Outage::MetaStore] {
            let started = Instant::now();
            match outage(ctx, seed, which, &knobs.outages).await {
                Ok(r) => {
                    let each: Vec<String> = r
                        .outages
                        .iter()
                        .map(|(away, again)| {
                            format!("away {away} ms, commits again {again} ms later")
                        })
                        .collect();
                    say(&format!(
                        "state_store: seed {seed} {} outages ok in {:.1}s: {}; {} FLUSHes \
                         succeeded while it was away; {}",
                        r.which.label(),
                        started.elapsed().as_secs_f64(),
                        each.join("; "),
                        r.ok_during_outage,
                        stats_line(&r.stats)
                    ));
                    report.outages += r.outages.len();
                }
                Err(e) => errors.push(e),
            }
        }
    } else {
        say("state_store: no S3 + PostgreSQL: the outage scenarios are skipped");
    }
    match tokio::task::block_in_place(|| bad_config::bad_configs(ctx)) {
        Ok(n) => report.bad_configs = n,
        Err(e) => errors.push(format!("bad configuration:\n{e}")),
    }
    if errors.is_empty() {
        Ok(report)
    } else {
        Err(errors.join("\n\n"))
    }
}

#[test]
fn state_store_under_faults() {
    let seeds = env_seeds("STATE_STORE_SEEDS", DEFAULT_SEEDS);
    let knobs = Knobs {
        crashes: env_or("STATE_STORE_CRASHES", DEFAULT_CRASHES),
        outages: vec![
            env_secs("STATE_STORE_SHORT_OUTAGE_SECS", 5),
            env_secs("STATE_STORE_LONG_OUTAGE_SECS", 40),
        ],
    };
    let budget = env_secs("STATE_STORE_SEED_TIMEOUT_SECS", 400);
    let stores = Stores::start("state_store").expect("the stores of the state store test");
    let pg = stores.remote().then(|| {
        Postgres::start_durable().expect("start a throwaway PostgreSQL 15 for the meta stores")
    });
    let ctx = Arc::new(tokio::sync::Mutex::new(Ctx { stores, pg }));
    let report = run_seeds(
        "state_store",
        &seeds,
        budget,
        "a statement, FLUSH, restart or store",
        |seed| {
            let (ctx, knobs) = (ctx.clone(), knobs.clone());
            async move { run_seed(&mut *ctx.lock().await, seed, &knobs).await }
        },
    );
    let crashes: usize = report.passed.iter().map(|r| r.crashes).sum();
    let outages: usize = report.passed.iter().map(|r| r.outages).sum();
    let bad: usize = report.passed.iter().map(|r| r.bad_configs).sum();
    say(&report.summary(
        "state_store",
        &format!("{crashes} crashes, {outages} outages, {bad} bad configurations"),
    ));
    assert!(
        report.failed.is_empty(),
        "state_store failed for seeds {:?}",
        report.failed
    );
}
