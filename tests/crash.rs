//! Crash test (issue 3): `kill -9` at random moments, restart on the same
//! data dir, check that nothing acknowledged is lost and nothing appears
//! twice.
//!
//! For each seed of a fixed list: an `ebbflow playground` child process on
//! a temp data dir gets the differential test's tables and MVs (aggregates,
//! joins, top-N, MVs on MVs; see `common::workload`) plus two `datagen`
//! tables (an unbounded and a bounded sequence) with MVs over them. Each
//! kill cycle runs random INSERT/UPDATE/DELETE with FLUSH points (and, in
//! some cycles, `rw_implicit_flush`) and kills the server in one of three
//! ways: at a random moment from another task, in the middle of a
//! statement, or right after a FLUSH returned. Then it restarts the server
//! on the same dir and checks:
//!
//! - the tables are the acknowledged state (kept in PostgreSQL by
//!   `common::workload::Mirror`) plus, per table, some subset of the
//!   statements not yet acknowledged — so every acknowledged row is there
//!   and no row appears twice (tables without primary key are compared as
//!   multisets);
//! - every MV equals its query re-run as a batch SELECT, and PostgreSQL's
//!   view over the same rows;
//! - each datagen table holds every id of `1..max` exactly once, no fewer
//!   than a committed read saw before the kill, and keeps growing after
//!   the restart; its MVs equal their queries.
//!
//! With SeaweedFS installed (required under `CI=true`) each seed's server
//! keeps its state on S3 (`s3://ebbflow/crash/<seed>`) and its meta store
//! in a database of the test's PostgreSQL (`crash_meta_<seed>`), and some
//! restarts (at least the first of each seed) are on a fresh, empty data
//! dir: the state comes back from the two stores alone. Otherwise the
//! defaults (both in the data dir), said in one line.
//!
//! Every wait is bounded (a hung server fails the seed with a message).
//! The closing line is `crash: N passed, N failed`.
//!
//! Environment: `CRASH_SEEDS=1,2` overrides the seeds, `CRASH_KILLS=n` the
//! kills per seed, `CRASH_SEED_TIMEOUT_SECS` (120) bounds one seed. Without
//! PostgreSQL 15 the test is skipped, except under `CI=true`.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::Client;

use common::driver::{env_or, env_secs, env_seeds, run_seeds, save_log, say};
use common::mirror::Mirror;
use common::rows::{cell, first_cell, multiset, run, run_raw_within, Row};
use common::stores::Stores;
use common::workload::Gen;
use common::{describe_pg_error, EbbflowServer, Postgres, ServerOptions, TempDir};

const DEFAULT_SEEDS: &[u64] = &[101, 202, 303, 404];
const DEFAULT_KILLS: usize = 7;
/// Bound of one statement; a server that does not answer fails the seed.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(20);
/// Bound of a restart (until `listening on`).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

const DATAGEN: &[&str] = &[
    "CREATE TABLE gen_seq (id bigint, k int) WITH (connector = 'datagen', \
     rows_per_second = '200', fields.id.kind = 'sequence', fields.id.start = '1', \
     fields.k.kind = 'random', fields.k.min = '0', fields.k.max = '9')",
    "CREATE TABLE gen_bounded (id int, v int) WITH (connector = 'datagen', \
     rows_per_second = '300', fields.id.kind = 'sequence', fields.id.start = '1', \
     fields.id.end = '1500', fields.v.kind = 'random', fields.v.min = '1', fields.v.max = '100')",
];
/// Above this many rows in t2 the workload deletes from it.
const T2_MAX_ROWS: i64 = 400;
/// Rows of `gen_bounded`.
const BOUNDED_ROWS: i64 = 1500;

/// MVs over the datagen tables (they grow while checked: compared with
/// their query until both are read at one epoch).
const DATAGEN_MVS: &[(&str, &str)] = &[
    (
        "gen_count",
        "SELECT count(*) AS n, max(id) AS mx, sum(id) AS s FROM gen_seq",
    ),
    (
        "gen_by_k",
        "SELECT k, count(*) AS n, min(id) AS mn FROM gen_seq GROUP BY k",
    ),
    (
        "gen_bounded_stats",
        "SELECT count(*) AS n, count(DISTINCT v) AS dv, sum(id) AS s FROM gen_bounded",
    ),
];

/// How a cycle ends.
#[derive(Clone, Copy, Debug)]
enum KillMode {
    /// Another task kills the server after a random delay while the
    /// workload runs.
    Random,
    /// The kill lands a few milliseconds into a statement (a big INSERT,
    /// an UPDATE, a DELETE or a FLUSH).
    MidStatement,
    /// The kill follows a FLUSH that returned.
    AfterFlush,
    /// As `Random`, and the restarted server is killed again while it
    /// recovers (within 150 ms of `listening on`).
    DuringRestart,
}

/// Outcome of a statement sent to ebbflow during a cycle.
enum Sent {
    Ok(Vec<Row>),
    /// Failed after the kill was fired: expected.
    Killed,
}

/// One seed: a server on its data dir, the workload and its mirror.
struct SeedRun {
    seed: u64,
    rng: StdRng,
    gen: Gen,
    mirror: Mirror,
    opts: ServerOptions,
    /// The data dir; replaced by a fresh one for a restart on a fresh dir.
    dir: TempDir,
    /// Whether the state and meta store are outside the data dir (S3 +
    /// PostgreSQL), so that a restart on a fresh data dir must recover.
    remote: bool,
    server: Option<EbbflowServer>,
    /// Log tail of the server killed last, for failure reports.
    previous_log: String,
    /// Largest `gen_seq` id seen by a committed read: must survive.
    gen_seq_seen: i64,
    /// Whether `rw_implicit_flush` is on in the current session.
    implicit_flush: bool,
    /// Rows of t2 at the last acknowledgement.
    t2_rows: i64,
    kills: usize,
    restart_ms: Vec<u128>,
    /// Restarts on a fresh, empty data dir.
    fresh_restarts: usize,
}

impl SeedRun {
    fn server(&self) -> &EbbflowServer {
        self.server.as_ref().expect("server running")
    }

    /// Starts the server on its data dir, or on a fresh, empty one.
    async fn start_server(&mut self, fresh: bool) -> Result<Client, String> {
        if fresh {
            self.dir = TempDir::new("ebbflow-crash").map_err(|e| format!("temp dir: {e}"))?;
            self.fresh_restarts += 1;
            self.mirror.note("-- restart on a fresh, empty data dir");
        }
        let (opts, dir) = (self.opts.clone(), self.dir.path().to_path_buf());
        let started = Instant::now();
        let server = EbbflowServer::spawn(opts, Some(dir)).await?;
        self.restart_ms.push(started.elapsed().as_millis());
        let conn = server.conn_str();
        self.server = Some(server);
        let client = tokio::time::timeout(STATEMENT_TIMEOUT, common::open(&conn))
            .await
            .map_err(|_| "connecting to ebbflow timed out".to_string())?
            .map_err(|e| format!("connect to ebbflow: {e}"))?;
        self.implicit_flush = false;
        Ok(client)
    }

    /// Sends a statement during a cycle. An error is expected once the
    /// kill has been fired, and a failure of ebbflow before.
    async fn send(&mut self, eb: &Client, sql: &str, killed: &AtomicBool) -> Result<Sent, String> {
        let is_dml = common::workload::target_table(sql).is_some();
        if is_dml {
            self.mirror.sent(sql);
        } else {
            self.mirror.note(sql);
        }
        let outcome = run_raw_within(eb, sql, STATEMENT_TIMEOUT)
            .await
            .map_err(|e| format!("ebbflow `{sql}`: {e}"))?;
        match outcome {
            Ok(rows) => {
                if sql == "FLUSH" || (is_dml && self.implicit_flush) {
                    self.mirror.acknowledge().await?;
                }
                Ok(Sent::Ok(rows))
            }
            Err(_) if killed.load(Ordering::SeqCst) => Ok(Sent::Killed),
            Err(e) => Err(format!(
                "ebbflow `{sql}` failed with no kill pending: {}",
                describe_pg_error(&e)
            )),
        }
    }

    /// Re-reads what the generator needs from the acknowledged state.
    async fn refresh(&mut self) -> Result<(), String> {
        self.gen.refresh_ids(self.mirror.pg()).await?;
        self.t2_rows = cell_i64(&run(self.mirror.pg(), "SELECT count(*) FROM t2").await?);
        Ok(())
    }

    /// A random DML statement; sometimes a big INSERT into the table
    /// without primary key (many rows spread over every table actor).
    fn next_dml(&mut self) -> String {
        if self.t2_rows > T2_MAX_ROWS {
            // Keep the joins over t2 small enough to check quickly.
            return format!(
                "DELETE FROM t2 WHERE k = {} OR k IS NULL",
                self.rng.gen_range(0..6)
            );
        }
        loop {
            let stmt = match self.rng.gen_range(0..15) {
                14 => {
                    let n = self.rng.gen_range(1..5);
                    Some(self.gen.insert_t6(n))
                }
                12 => {
                    let n = self.rng.gen_range(1..15);
                    Some(self.gen.insert_t4(n))
                }
                13 => {
                    let n = self.rng.gen_range(1..8);
                    Some(self.gen.insert_t5(n))
                }
                0..=1 => {
                    let n = self.rng.gen_range(1..15);
                    self.gen.insert_t1(n)
                }
                2..=3 => {
                    let n = self.rng.gen_range(1..10);
                    Some(self.gen.insert_t2(n))
                }
                4 => {
                    let n = self.rng.gen_range(50..200);
                    Some(self.gen.insert_t2(n))
                }
                5 => {
                    let n = self.rng.gen_range(1..10);
                    self.gen.insert_t3(n)
                }
                6..=8 => Some(self.gen.update()),
                _ => Some(self.gen.delete()),
            };
            if let Some(s) = stmt {
                return s;
            }
        }
    }

    /// One step of the workload: DML, FLUSH, or a committed read of
    /// `gen_seq`. Returns false once the server is gone.
    async fn step(&mut self, eb: &Client, killed: &AtomicBool) -> Result<bool, String> {
        let flush_due =
            self.mirror.uncertain_max_per_table() >= 7 || self.mirror.uncertain().len() >= 15;
        let roll = self.rng.gen_range(0..100);
        let sql = if flush_due || roll < 10 {
            "FLUSH".to_string()
        } else if roll < 14 {
            "SELECT max(id) FROM gen_seq".to_string()
        } else {
            self.next_dml()
        };
        match self.send(eb, &sql, killed).await? {
            Sent::Killed => Ok(false),
            Sent::Ok(rows) => {
                if sql.starts_with("SELECT max(id)") {
                    let seen = cell_i64(&rows);
                    self.gen_seq_seen = self.gen_seq_seen.max(seen);
                }
                if sql == "FLUSH" {
                    self.refresh().await?;
                }
                Ok(true)
            }
        }
    }

    /// Runs the workload until the server is killed in `mode`.
    async fn cycle(&mut self, eb: &Client, mode: KillMode) -> Result<(), String> {
        let pid = self
            .server()
            .pid()
            .ok_or_else(|| "server not running".to_string())?;
        let killed = Arc::new(AtomicBool::new(false));
        let kill_after = |delay: Duration| {
            let killed = killed.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                killed.store(true, Ordering::SeqCst);
                tokio::task::spawn_blocking(move || common::sigkill(pid)).await
            })
        };
        if self.rng.gen_bool(0.3) {
            must(eb, "SET rw_implicit_flush = true").await?;
            self.implicit_flush = true;
        }
        let warmup = self.rng.gen_range(3..25);
        let mut killer = None;
        if let KillMode::Random | KillMode::DuringRestart = mode {
            let ms = self.rng.gen_range(100..2000);
            self.mirror.note(&format!("-- kill -9 in {ms} ms"));
            killer = Some(kill_after(Duration::from_millis(ms)));
        }
        let mut steps = 0;
        loop {
            steps += 1;
            if steps > 2000 {
                return Err("the cycle ran 2000 steps without the kill landing".into());
            }
            if killer.is_some() && steps > 300 {
                // A timed kill is pending and the statements ran faster
                // than it: pace them so the kill lands within the cap.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            match mode {
                KillMode::MidStatement if steps > warmup => {
                    let sql = match self.rng.gen_range(0..4) {
                        0 => "FLUSH".to_string(),
                        1 => {
                            let n = self.rng.gen_range(100..300);
                            self.gen.insert_t2(n)
                        }
                        2 => self.gen.update(),
                        _ => self.gen.delete(),
                    };
                    let us = self.rng.gen_range(0..6000);
                    self.mirror
                        .note(&format!("-- kill -9 {us} us into the next statement"));
                    killer = Some(kill_after(Duration::from_micros(us)));
                    self.send(eb, &sql, &killed).await?;
                    break;
                }
                KillMode::AfterFlush if steps > warmup => {
                    if let Sent::Ok(_) = self.send(eb, "FLUSH", &killed).await? {
                        self.mirror.note("-- kill -9 right after FLUSH returned");
                        killed.store(true, Ordering::SeqCst);
                        if let Some(s) = self.server.as_mut() {
                            s.kill9();
                        }
                        break;
                    }
                    return Err("FLUSH failed with no kill pending".into());
                }
                _ => {
                    if !self.step(eb, &killed).await? {
                        break;
                    }
                }
            }
        }
        if let Some(k) = killer {
            tokio::time::timeout(Duration::from_secs(10), k)
                .await
                .map_err(|_| "the kill did not happen within 10 s".to_string())?
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
        }
        if let Some(mut s) = self.server.take() {
            // Reap the killed process; a server still running here means
            // the kill went wrong.
            let deadline = Instant::now() + Duration::from_secs(5);
            while s.is_running() {
                if Instant::now() > deadline {
                    s.kill9();
                    return Err("the server survived kill -9 for 5 s".into());
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            self.previous_log = s.log.tail(40);
            s.kill9();
        }
        self.kills += 1;
        Ok(())
    }

    /// Checks after a restart; makes the mirror the recovered state.
    async fn check(&mut self, eb: &Client) -> Result<String, String> {
        let kept = self.mirror.reconcile(eb).await?;
        self.refresh().await?;
        for t in ["t1", "t3"] {
            let rows = must(eb, &format!("SELECT count(*), count(DISTINCT id) FROM {t}")).await?;
            if rows.first().map(|r| &r[0]) != rows.first().map(|r| &r[1]) {
                return Err(format!("{t} holds a primary key twice: {rows:?}"));
            }
        }
        self.mirror.check_mvs(eb).await?;
        self.check_datagen(eb).await?;
        Ok(kept)
    }

    async fn check_datagen(&mut self, eb: &Client) -> Result<(), String> {
        for (table, bound) in [("gen_seq", None), ("gen_bounded", Some(BOUNDED_ROWS))] {
            let sql = format!("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM {table}");
            let rows = must(eb, &sql).await?;
            let r: Vec<i64> = rows
                .first()
                .map(|r| r.iter().map(|c| cell(c).unwrap_or(0)).collect())
                .unwrap_or_default();
            let [n, distinct, min, max] = r[..] else {
                return Err(format!("{sql} returned {rows:?}"));
            };
            if n != distinct {
                return Err(format!(
                    "{table}: {n} rows but {distinct} distinct ids: a generated row was \
                     emitted twice"
                ));
            }
            if n > 0 && (min != 1 || max != n) {
                return Err(format!(
                    "{table}: ids are not the gapless prefix 1..{n} (min {min}, max {max}): a \
                     generated row was lost"
                ));
            }
            if let Some(b) = bound {
                if n > b {
                    return Err(format!("{table}: {n} rows, more than its {b}"));
                }
            }
            if table == "gen_seq" && max < self.gen_seq_seen {
                return Err(format!(
                    "gen_seq: max id {max} after the restart, but a committed read saw {} \
                     before the kill",
                    self.gen_seq_seen
                ));
            }
        }
        // The unbounded source resumed: it grows beyond what it had at
        // the restart, and FLUSH makes it visible.
        let before = cell_i64(&must(eb, "SELECT max(id) FROM gen_seq").await?);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            must(eb, "FLUSH").await?;
            let now = cell_i64(&must(eb, "SELECT max(id) FROM gen_seq").await?);
            self.gen_seq_seen = self.gen_seq_seen.max(now);
            if now > before {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "gen_seq did not grow within 10 s of the restart although FLUSH returns \
                     (max id {now}): the restarted server commits epochs but its sources \
                     produce nothing"
                ));
            }
        }
        for (name, def) in DATAGEN_MVS {
            check_growing_mv(eb, name, def).await?;
        }
        Ok(())
    }

    fn fail(&self, what: &str) -> String {
        let path = save_log(&format!("crash-seed-{}", self.seed), &self.mirror.log);
        let current = self
            .server
            .as_ref()
            .map(|s| s.log.tail(30))
            .unwrap_or_default();
        format!(
            "seed {} after {} kills: {what}\n--- last statements (newest last) ---\n{}\n\
             --- full statement log: {} ---\n--- log of the killed server ---\n{}\n\
             --- log of the current server ---\n{current}",
            self.seed,
            self.kills,
            self.mirror.log_tail(40),
            path.display(),
            self.previous_log,
        )
    }
}

/// Runs a statement that must succeed (no kill pending).
async fn must(eb: &Client, sql: &str) -> Result<Vec<Row>, String> {
    common::rows::must(eb, sql, STATEMENT_TIMEOUT).await
}

fn cell_i64(rows: &[Row]) -> i64 {
    first_cell(rows).unwrap_or(0)
}

/// An MV over a table that keeps growing equals its query when both are
/// read at one epoch: read MV, query, MV until the two MV reads agree.
async fn check_growing_mv(eb: &Client, name: &str, def: &str) -> Result<(), String> {
    let sql = format!("SELECT * FROM {name}");
    let mut last = String::new();
    for _ in 0..60 {
        let a = multiset(&run(eb, &sql).await?);
        let q = multiset(&run(eb, def).await?);
        let b = multiset(&run(eb, &sql).await?);
        if a == q && q == b {
            return Ok(());
        }
        if a == b {
            last = format!(
                "MV {name} differs from its query at one epoch\n  definition: {def}\n{}",
                common::rows::diff_report(&q, &a, 10)
            );
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    if last.is_empty() {
        last = format!("MV {name}: no two reads at one epoch in 60 tries");
    }
    Err(last)
}

/// What a seed did: kills, restart times, restarts on a fresh data dir.
struct SeedReport {
    kills: usize,
    restart_ms: Vec<u128>,
    fresh_restarts: usize,
}

async fn run_seed(
    pg: &Postgres,
    stores: &Stores,
    seed: u64,
    kills: usize,
) -> Result<SeedReport, String> {
    let db = format!("crash_{seed}");
    let admin = pg.create_database(&db).await?;
    let pgc = common::open(&pg.conn_str(&db)).await?;
    let dir = TempDir::new("ebbflow-crash").map_err(|e| format!("temp dir: {e}"))?;
    let base = ServerOptions {
        ready_timeout: READY_TIMEOUT,
        ..ServerOptions::default()
    };
    let opts = stores.options(pg, &seed.to_string(), base).await?;
    let mut st = SeedRun {
        seed,
        rng: StdRng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9)),
        gen: Gen::new(seed),
        mirror: Mirror::new(pgc),
        opts,
        dir,
        remote: stores.remote(),
        server: None,
        previous_log: String::new(),
        gen_seq_seen: 0,
        implicit_flush: false,
        t2_rows: 0,
        kills: 0,
        restart_ms: Vec::new(),
        fresh_restarts: 0,
    };
    let result = async {
        let mut eb = st.start_server(false).await?;
        st.restart_ms.clear();
        st.mirror.create_schema(&eb, &mut st.gen).await?;
        for ddl in DATAGEN {
            st.mirror.note(ddl);
            must(&eb, ddl).await?;
        }
        for (name, def) in DATAGEN_MVS {
            let sql = format!("CREATE MATERIALIZED VIEW {name} AS {def}");
            st.mirror.note(&sql);
            must(&eb, &sql).await?;
        }
        must(&eb, "FLUSH").await?;
        st.mirror.check_mvs(&eb).await?;
        let modes = [
            KillMode::Random,
            KillMode::MidStatement,
            KillMode::AfterFlush,
            KillMode::DuringRestart,
        ];
        let mut k = 0;
        while st.kills < kills {
            let mode = modes[(k + seed as usize) % modes.len()];
            k += 1;
            st.cycle(&eb, mode).await?;
            drop(eb);
            // On S3 + PostgreSQL the first restart, and some others, on a
            // fresh data dir: nothing in the old one is needed.
            let fresh = st.remote && (k == 1 || st.rng.gen_bool(0.25));
            eb = st.start_server(fresh).await?;
            if let KillMode::DuringRestart = mode {
                let ms = st.rng.gen_range(0..150);
                st.mirror
                    .note(&format!("-- kill -9 {ms} ms after the restart"));
                tokio::time::sleep(Duration::from_millis(ms)).await;
                if let Some(mut s) = st.server.take() {
                    st.previous_log = s.log.tail(40);
                    s.kill9();
                }
                st.kills += 1;
                drop(eb);
                let fresh = st.remote && st.rng.gen_bool(0.25);
                eb = st.start_server(fresh).await?;
            }
            let kept = st.check(&eb).await?;
            say(&format!(
                "crash: seed {seed} kill {} ({mode:?}) ok: uncertain statements kept {kept}; \
                 gen_seq at {}{}",
                st.kills,
                st.gen_seq_seen,
                if fresh {
                    "; restarted on a fresh data dir"
                } else {
                    ""
                }
            ));
        }
        // The bounded source ends with exactly its rows.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            must(&eb, "FLUSH").await?;
            let rows = must(&eb, "SELECT count(*) FROM gen_bounded").await?;
            let n = cell_i64(&rows);
            if n == BOUNDED_ROWS {
                break;
            }
            if Instant::now() > deadline {
                let seq = must(&eb, "SELECT max(id) FROM gen_seq").await?;
                return Err(format!(
                    "gen_bounded has {n} rows 20 s after the last restart, not {BOUNDED_ROWS} \
                     (FLUSH returns; gen_seq max id {})",
                    cell_i64(&seq)
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A last round without a kill, then a clean stop.
        for _ in 0..5 {
            let sql = st.next_dml();
            st.mirror.sent(&sql);
            must(&eb, &sql).await?;
        }
        must(&eb, "FLUSH").await?;
        st.mirror.acknowledge().await?;
        st.check(&eb).await?;
        Ok::<_, String>(())
    }
    .await
    .map_err(|e| st.fail(&e));
    if let Some(server) = st.server.take() {
        server.shut_down().await;
    }
    drop(st.mirror);
    Postgres::drop_database(&admin, &db).await;
    stores.drop_meta(pg, &seed.to_string()).await;
    result?;
    say(&format!(
        "crash: seed {seed} ok ({} kills, {} restarts on a fresh data dir)",
        st.kills, st.fresh_restarts
    ));
    Ok(SeedReport {
        kills: st.kills,
        restart_ms: st.restart_ms,
        fresh_restarts: st.fresh_restarts,
    })
}

#[test]
fn crash_recovery() {
    if common::driver::skip_without_postgres("crash") {
        return;
    }
    let seeds = env_seeds("CRASH_SEEDS", DEFAULT_SEEDS);
    let kills = env_or("CRASH_KILLS", DEFAULT_KILLS);
    let budget = env_secs("CRASH_SEED_TIMEOUT_SECS", 120);
    let pg = Postgres::start().expect("start a throwaway PostgreSQL 15");
    let stores = Stores::start("crash").expect("the state and meta stores of the crash test");
    let report = run_seeds(
        "crash",
        &seeds,
        budget,
        "a statement, FLUSH or restart",
        |seed| run_seed(&pg, &stores, seed, kills),
    );
    drop(stores);
    drop(pg);
    let total_kills: usize = report.passed.iter().map(|r| r.kills).sum();
    let fresh: usize = report.passed.iter().map(|r| r.fresh_restarts).sum();
    let max_restart = report
        .passed
        .iter()
        .flat_map(|r| &r.restart_ms)
        .max()
        .copied()
        .unwrap_or(0);
    say(&report.summary(
        "crash",
        &format!(
            "{total_kills} kills, {fresh} restarts on a fresh data dir, slowest restart \
             {max_restart} ms"
        ),
    ));
    assert!(
        report.failed.is_empty(),
        "crash failed for seeds {:?}",
        report.failed
    );
}
