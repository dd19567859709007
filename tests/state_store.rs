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
//!    collected, nothing live deleted — and reads still match.
//! 2. *Object store outage* (S3 only): under steady DML with FLUSH
//!    acknowledgements SeaweedFS is stopped for a short while (shorter than
//!    the 30 s retry window) and once for longer (the cluster fails and
//!    recovers), then started again. FLUSHes meanwhile may wait or fail,
//!    never succeed while rows were lost; after each outage a FLUSH must
//!    succeed within `COMMIT_AGAIN_WAIT` with no help, and at the end every
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
//! per seed, 12), `STATE_STORE_SHORT_OUTAGE_SECS` (5),
//! `STATE_STORE_LONG_OUTAGE_SECS` (40), `STATE_STORE_SEED_TIMEOUT_SECS`
//! (400) bounds one seed.

mod common;
// In a directory of their own: a file in tests/ would be a test target.
#[path = "state_store/bad_config.rs"]
mod bad_config;
#[path = "state_store/model.rs"]
mod model;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use tokio_postgres::Client;

use common::describe_pg_error;
use common::driver::{env_or, env_secs, env_seeds, run_seeds, save_log, say};
use common::stores::Stores;
use common::{EbbflowServer, Postgres, ServerOptions, TempDir};
use model::{must, Stats, Writer, MVS, TABLES};

const DEFAULT_SEEDS: &[u64] = &[61];
const DEFAULT_CRASHES: usize = 12;
/// Bound of a statement when no store is away.
const STMT_TIMEOUT: Duration = Duration::from_secs(20);
/// Bound of a statement or FLUSH while a store is away: the retry window
/// (30 s), the recovery after it, the store's return.
const OUTAGE_STMT_TIMEOUT: Duration = Duration::from_secs(100);
/// Bound of a (re)start until `listening on`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long after `debug_crash_at` is armed the process must have aborted
/// under writes.
const CRASH_WAIT: Duration = Duration::from_secs(20);
/// How long after a store is back a FLUSH must have succeeded.
const COMMIT_AGAIN_WAIT: Duration = Duration::from_secs(60);
/// How long the collector (every 200 ms, no grace) may take to leave
/// exactly the live files.
const GC_WAIT: Duration = Duration::from_secs(20);
/// Steady writes before and after each outage.
const STEADY: Duration = Duration::from_secs(2);

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
    let eb = node.start(ctx.stores.remote()).await?;
    let live_files = collect_garbage(ctx, node, &eb).await?;
    w.check(&eb, STMT_TIMEOUT).await?;
    say(&format!(
        "state_store: garbage collected: {objects_before_gc} state file objects before, \
         {live_files} (the live files) after"
    ));
    Ok(CrashReport {
        crashes: n,
        fresh_dirs: node.fresh_dirs,
        slowest_start_ms: node.start_ms.iter().max().copied().unwrap_or(0),
        objects_before_gc,
        live_files,
        stats: w.stats.clone(),
    })
}

/// Waits until the state file objects are exactly the live files (twice
/// in a row: a compaction may commit between the two reads). Returns how
/// many are live.
async fn collect_garbage(ctx: &Ctx, node: &Node, eb: &Client) -> Result<usize, String> {
    let deadline = Instant::now() + GC_WAIT;
    let mut agreed = 0;
    // Live files missing from the store, per consecutive round.
    let mut missing_rounds = 0;
    loop {
        let objects = ctx.stores.sst_objects(&node.name, node.dir.path())?;
        let live: BTreeSet<String> = must(eb, "SELECT id FROM rw_state_files", STMT_TIMEOUT)
            .await?
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect();
        let garbage: Vec<&String> = objects.difference(&live).collect();
        let missing: Vec<&String> = live.difference(&objects).collect();
        if garbage.is_empty() && missing.is_empty() {
            agreed += 1;
            if agreed == 2 {
                return Ok(live.len());
            }
        } else {
            agreed = 0;
        }
        missing_rounds = if missing.is_empty() {
            0
        } else {
            missing_rounds + 1
        };
        if missing_rounds >= 3 {
            return Err(format!(
                "live state files are not on the store (deleted?): {missing:?} ({} live, {} \
                 objects)",
                live.len(),
                objects.len()
            ));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{} s after a restart with --gc-grace-ms 0 --gc-interval-ms 200 the store \
                 holds {} state file objects for {} live files: garbage {:?}, missing {:?}",
                GC_WAIT.as_secs(),
                objects.len(),
                live.len(),
                garbage.iter().take(10).collect::<Vec<_>>(),
                missing.iter().take(10).collect::<Vec<_>>()
            ));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Which store goes away.
#[derive(Clone, Copy, Debug)]
enum Outage {
    ObjectStore,
    MetaStore,
}

impl Outage {
    fn label(self) -> &'static str {
        match self {
            Outage::ObjectStore => "object store",
            Outage::MetaStore => "meta store",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Outage::ObjectStore => "s3out",
            Outage::MetaStore => "metaout",
        }
    }
}

/// Stops or starts the store. Blocking (a restart waits until it serves).
fn set_store(ctx: &mut Ctx, which: Outage, up: bool) -> Result<(), String> {
    tokio::task::block_in_place(|| match which {
        Outage::ObjectStore => {
            let weed = ctx
                .stores
                .weed_mut()
                .ok_or_else(|| "no SeaweedFS".to_string())?;
            if up {
                weed.restart()
            } else {
                weed.stop();
                Ok(())
            }
        }
        Outage::MetaStore => {
            let pg = ctx.pg.as_mut().ok_or_else(|| "no PostgreSQL".to_string())?;
            if up {
                pg.restart()
            } else {
                pg.stop();
                Ok(())
            }
        }
    })
}

/// What the writing task and the outages share.
#[derive(Default)]
struct Shared {
    /// Bumped when a store is stopped and again when it is back: odd
    /// during an outage. A statement or FLUSH may fail only if it moved
    /// since the last acknowledgement.
    faults: AtomicU64,
    stop: AtomicBool,
    /// When a FLUSH last succeeded.
    last_ok_flush: Mutex<Option<Instant>>,
    /// FLUSHes that succeeded while a store was away.
    ok_during_outage: AtomicU64,
    /// Events of the main task, merged into the log at the end.
    events: Mutex<Vec<String>>,
}

impl Shared {
    fn calm_since(&self, since: u64) -> bool {
        let now = self.faults.load(Ordering::SeqCst);
        now == since && now.is_multiple_of(2)
    }

    fn event(&self, what: &str) {
        let line = format!(
            "/* {} */ -- {what}",
            chrono::Utc::now().format("%H:%M:%S%.3f")
        );
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }
}

/// Once no store is away: FLUSH until one succeeds (each bounded; all
/// within `deadline`), then find which uncertain statements ebbflow kept.
/// Reads need the object store, so this waits for it.
async fn settle(w: &mut Writer, eb: &Client, sh: &Shared, deadline: Instant) -> Result<(), String> {
    loop {
        while !sh.faults.load(Ordering::SeqCst).is_multiple_of(2) {
            if Instant::now() > deadline {
                return Err("a store was still away at the deadline".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match w.flush(eb, OUTAGE_STMT_TIMEOUT).await? {
            None => break,
            Some(e) if Instant::now() > deadline => {
                return Err(format!(
                    "FLUSH still fails: {} (the cluster does not commit again)",
                    describe_pg_error(&e)
                ))
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    if w.failed {
        w.reconcile(eb, OUTAGE_STMT_TIMEOUT).await?;
    }
    Ok(())
}

/// Steady DML with FLUSH points until told to stop. After a failure no
/// new statement is sent until a FLUSH succeeded and the uncertain ones
/// are reconciled.
async fn write_steadily(
    mut w: Writer,
    eb: Client,
    sh: Arc<Shared>,
) -> (Writer, Client, Result<(), String>) {
    let mut ack_faults = 0;
    let result = async {
        while !sh.stop.load(Ordering::SeqCst) {
            let mut failure = None;
            for _ in 0..w.rng.gen_range(1..=5) {
                let op = w.next_op();
                if let Some(e) = w.send(&eb, op, OUTAGE_STMT_TIMEOUT).await? {
                    failure = Some(format!("a statement failed: {}", describe_pg_error(&e)));
                    break;
                }
            }
            if failure.is_none() {
                if let Some(e) = w.flush(&eb, OUTAGE_STMT_TIMEOUT).await? {
                    if e.as_db_error().is_none() {
                        return Err(format!(
                            "FLUSH failed without an error from the server: {}",
                            describe_pg_error(&e)
                        ));
                    }
                    failure = Some(format!("FLUSH failed: {}", describe_pg_error(&e)));
                }
            }
            if let Some(what) = failure {
                if sh.calm_since(ack_faults) {
                    return Err(format!(
                        "{what}, with no outage since the last acknowledgement"
                    ));
                }
                settle(&mut w, &eb, &sh, Instant::now() + OUTAGE_STMT_TIMEOUT * 2).await?;
            }
            let faults = sh.faults.load(Ordering::SeqCst);
            if !faults.is_multiple_of(2) {
                sh.ok_during_outage.fetch_add(1, Ordering::SeqCst);
            }
            ack_faults = faults;
            *sh.last_ok_flush.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
    .await;
    (w, eb, result)
}

/// What an outage scenario did.
struct OutageReport {
    which: Outage,
    /// Per outage: how long the store was away and how long after its
    /// return a FLUSH succeeded.
    outages: Vec<(u128, u128)>,
    ok_during_outage: u64,
    stats: Stats,
}

async fn outage(
    ctx: &mut Ctx,
    seed: u64,
    which: Outage,
    lengths: &[Duration],
) -> Result<OutageReport, String> {
    let name = format!("{}{seed}", which.tag());
    let mut node = Node::new(ctx, &name).await?;
    let mut w = Writer::new(seed ^ 0x5eed);
    let result = outage_body(ctx, &mut node, &mut w, which, lengths).await;
    // The store is back even after a failure, for the next scenario.
    let restored = set_store(ctx, which, true);
    node.stop().await;
    if let Some(pg) = &ctx.pg {
        ctx.stores.drop_meta(pg, &name).await;
    }
    let scenario = format!("{}-outage", which.tag());
    result
        .and_then(|r| restored.map(|()| r))
        .map_err(|e| node.fail(&w, &scenario, seed, &e))
}

async fn outage_body(
    ctx: &mut Ctx,
    node: &mut Node,
    w: &mut Writer,
    which: Outage,
    lengths: &[Duration],
) -> Result<OutageReport, String> {
    let eb = node.start(false).await?;
    setup(&eb, w).await?;
    let sh = Arc::new(Shared::default());
    let writer = std::mem::replace(w, Writer::new(0));
    let task = tokio::spawn(write_steadily(writer, eb, sh.clone()));
    let mut outages = Vec::new();
    let store = which.label();
    let timeline: Result<(), String> = async {
        tokio::time::sleep(STEADY).await;
        for len in lengths {
            if task.is_finished() {
                break;
            }
            sh.faults.fetch_add(1, Ordering::SeqCst);
            sh.event(&format!("{store} stopped for {} s", len.as_secs()));
            let down = Instant::now();
            set_store(ctx, which, false)?;
            tokio::time::sleep(*len).await;
            set_store(ctx, which, true)?;
            let back = Instant::now();
            sh.faults.fetch_add(1, Ordering::SeqCst);
            sh.event(&format!("{store} back"));
            let deadline = back + COMMIT_AGAIN_WAIT;
            loop {
                let last = *sh.last_ok_flush.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(t) = last.filter(|t| *t > back) {
                    let again = t.duration_since(back).as_millis();
                    sh.event(&format!(
                        "a FLUSH succeeded {again} ms after the {store} came back"
                    ));
                    say(&format!(
                        "state_store: {store} away {} ms: a FLUSH succeeded {again} ms after \
                         it came back",
                        back.duration_since(down).as_millis()
                    ));
                    outages.push((back.duration_since(down).as_millis(), again));
                    break;
                }
                if task.is_finished() {
                    // Its error is reported below.
                    return Ok(());
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "no FLUSH succeeded within {} s of the {store} coming back after {} s \
                         away: the cluster does not commit again by itself",
                        COMMIT_AGAIN_WAIT.as_secs(),
                        len.as_secs()
                    ));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            tokio::time::sleep(STEADY).await;
        }
        Ok(())
    }
    .await;
    sh.stop.store(true, Ordering::SeqCst);
    let joined = tokio::time::timeout(OUTAGE_STMT_TIMEOUT * 3, task).await;
    let (writer, eb, written) = match joined {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return Err(format!("the writing task panicked: {e}")),
        Err(_) => return Err("the writing task did not stop within 300 s".into()),
    };
    *w = writer;
    // The main task's events into the log, in time order.
    w.log.extend(
        sh.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..),
    );
    w.log.sort_by(|a, b| a.get(..18).cmp(&b.get(..18)));
    timeline?;
    written?;
    settle(w, &eb, &sh, Instant::now() + COMMIT_AGAIN_WAIT).await?;
    w.check(&eb, STMT_TIMEOUT).await?;
    Ok(OutageReport {
        which,
        outages,
        ok_during_outage: sh.ok_during_outage.load(Ordering::SeqCst),
        stats: w.stats.clone(),
    })
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
