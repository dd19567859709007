//! Actor failure test (issue 3): an actor that fails makes ebbflow rebuild
//! every actor from the last committed epoch, in process, with its
//! sessions still connected.
//!
//! One session creates the differential test's tables and MVs (see
//! `common::workload`), writes and FLUSHes; a second session is opened
//! before any fault. Each round writes, FLUSHes, then, from the second
//! session, `ALTER SYSTEM SET debug_inject_actor_failure = <fragment>`
//! while the first keeps writing — into the MV fragment of an aggregate,
//! then the fragment of a table, then the fragment of a join. Statements
//! of the failed window may fail with SQLSTATE XX000 or 57P03 and their rows count
//! as unacknowledged. The round then checks:
//!
//! - the server log shows the failure and a recovery, and a FLUSH
//!   succeeds within a bounded time;
//! - the tables are the acknowledged state plus some subset of the
//!   statements sent since (kept in PostgreSQL by `Mirror`);
//! - the same first session and the second session still run DML, FLUSH
//!   and queries;
//! - every MV equals its query re-run as a batch SELECT and PostgreSQL's
//!   view over the same rows.
//!
//! The closing line is `actor_failure: N passed, N failed`. Without
//! PostgreSQL 15 the test is skipped, except under `CI=true`.

mod common;

use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

use common::driver::{runtime, say, skip_without_postgres};
use common::mirror::Mirror;
use common::rows::{cell, run_raw_within, Row};
use common::workload::Gen;
use common::{describe_pg_error, EbbflowServer, Postgres, ServerOptions};

const SEED: u64 = 7;
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(20);
/// Bound of the recovery after a fault (log line, then a FLUSH that
/// succeeds).
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(20);
const TEST_TIMEOUT: Duration = Duration::from_secs(150);

/// Which fragment a round fails (each is a fragment of that kind).
#[derive(Clone, Copy, Debug)]
enum Target {
    /// The last fragment of `mv_count` (aggregate and materialize).
    Mv,
    /// The fragment of table `t1` (its DML and materialize).
    Table,
    /// The fragment of `mv_inner` with two inputs (the hash join).
    Join,
}

async fn must(client: &Client, sql: &str) -> Result<Vec<Row>, String> {
    common::rows::must(client, sql, STATEMENT_TIMEOUT).await
}

/// Runs a statement in the failure window: the failure's own error (an
/// actor failed: XX000) or the recovery's (try again: 57P03) is tolerated
/// and reported as `false`; any other error fails the test.
async fn tolerant(client: &Client, sql: &str) -> Result<bool, String> {
    let outcome = run_raw_within(client, sql, STATEMENT_TIMEOUT)
        .await
        .map_err(|e| format!("ebbflow `{sql}` during an actor failure: {e}"))?;
    match outcome {
        Ok(_) => Ok(true),
        Err(e)
            if e.code() == Some(&SqlState::INTERNAL_ERROR)
                || e.code() == Some(&SqlState::CANNOT_CONNECT_NOW) =>
        {
            Ok(false)
        }
        Err(e) => Err(format!(
            "ebbflow `{sql}` during an actor failure: {} (only XX000 and 57P03 are allowed)",
            describe_pg_error(&e)
        )),
    }
}

fn int(c: &Option<String>) -> i64 {
    cell(c).unwrap_or(-1)
}

/// The id of a relation by name.
async fn relation_id(client: &Client, name: &str) -> Result<i64, String> {
    for sys in ["rw_tables", "rw_materialized_views"] {
        let rows = must(client, &format!("SELECT id, name FROM {sys}")).await?;
        if let Some(r) = rows.iter().find(|r| r[1].as_deref() == Some(name)) {
            return Ok(int(&r[0]));
        }
    }
    Err(format!(
        "no relation {name} in rw_tables/rw_materialized_views"
    ))
}

/// The fragment a round injects the failure into.
async fn fragment_of(client: &Client, target: Target) -> Result<i64, String> {
    let relation = match target {
        Target::Mv => "mv_count",
        Target::Table => "t1",
        Target::Join => "mv_inner",
    };
    let id = relation_id(client, relation).await?;
    let rows = must(
        client,
        "SELECT fragment_id, table_id, upstream_fragment_ids FROM rw_fragments",
    )
    .await?;
    let frags: Vec<(i64, String)> = rows
        .iter()
        .filter(|r| int(&r[1]) == id)
        .map(|r| (int(&r[0]), r[2].clone().unwrap_or_default()))
        .collect();
    let pick = match target {
        // Downstream-most: the one that materializes.
        Target::Mv => frags.iter().map(|f| f.0).max(),
        Target::Table => frags.iter().find(|f| f.1.is_empty()).map(|f| f.0),
        Target::Join => frags.iter().find(|f| f.1.contains(',')).map(|f| f.0),
    };
    pick.ok_or_else(|| format!("no {target:?} among the fragments of {relation}: {frags:?}"))
}

struct Test {
    server: EbbflowServer,
    mirror: Mirror,
    gen: Gen,
    a: Client,
    b: Client,
    /// Statements generated so far.
    statements: usize,
}

impl Test {
    /// Session `a`, or `b`.
    fn session(&self, b: bool) -> &Client {
        if b {
            &self.b
        } else {
            &self.a
        }
    }

    /// DML through session `a` (or `b`) that must succeed, then FLUSH:
    /// acknowledged.
    async fn write_acknowledged(&mut self, b: bool, n: usize) -> Result<(), String> {
        for _ in 0..n {
            let sql = self.dml();
            self.mirror.sent(&sql);
            must(self.session(b), &sql).await?;
        }
        self.mirror
            .note(if b { "-- session b: FLUSH" } else { "FLUSH" });
        must(self.session(b), "FLUSH").await?;
        self.mirror.acknowledge().await?;
        self.gen.refresh_ids(self.mirror.pg()).await
    }

    /// A random statement; every third one inserts into t1 so that the
    /// faulty fragment surely gets chunks (t1 feeds all three).
    fn dml(&mut self) -> String {
        self.statements += 1;
        if self.statements.is_multiple_of(3) {
            if let Some(s) = self.gen.insert_t1(3) {
                return s;
            }
        }
        self.gen.statement()
    }

    async fn round(&mut self, target: Target) -> Result<(), String> {
        self.write_acknowledged(false, 4).await?;
        self.mirror.check_mvs(&self.a).await?;

        let fragment = fragment_of(&self.b, target).await?;
        let mark = self.server.log.mark();
        // Session a writes before, while and after session b injects.
        for i in 0..8 {
            if i == 2 {
                let sql = format!("ALTER SYSTEM SET debug_inject_actor_failure = {fragment}");
                self.mirror.note(&format!("-- session b: {sql}"));
                must(&self.b, &sql).await?;
            }
            let sql = match i {
                3 | 5 => self.gen.insert_t1(4).unwrap_or_else(|| self.gen.delete()),
                _ => self.dml(),
            };
            self.mirror.sent(&sql);
            if !tolerant(&self.a, &sql).await? {
                self.mirror.note("-- failed (XX000 or 57P03)");
            }
        }
        self.mirror.note("FLUSH");
        if !tolerant(&self.a, "FLUSH").await? {
            self.mirror.note("-- failed (XX000 or 57P03)");
        }

        // Recovery shows in the log, and a FLUSH succeeds in bounded time.
        let deadline = Instant::now() + RECOVERY_TIMEOUT;
        loop {
            let lines = self.server.log.since(mark);
            let failed = lines.iter().any(|l| l.contains("injected actor failure"));
            let recovered = lines.iter().any(|l| l.contains("recovery done"));
            if failed && recovered {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "no injected failure and recovery in the log within {} s (failure seen: \
                     {failed}, recovery seen: {recovered})",
                    RECOVERY_TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let deadline = Instant::now() + RECOVERY_TIMEOUT;
        while !tolerant(&self.a, "FLUSH").await? {
            if Instant::now() > deadline {
                return Err(format!(
                    "FLUSH still fails {} s after the recovery",
                    RECOVERY_TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        let kept = self.mirror.reconcile(&self.a).await?;
        self.gen.refresh_ids(self.mirror.pg()).await?;
        self.mirror.check_mvs(&self.a).await?;

        // Both sessions still work: DML, FLUSH, queries.
        self.write_acknowledged(false, 3).await?;
        self.write_acknowledged(true, 1).await?;
        must(&self.b, "SELECT count(*) FROM mv_count").await?;
        self.mirror.check_mvs(&self.b).await?;
        say(&format!(
            "actor_failure: {target:?} (fragment {fragment}) ok: uncertain statements kept {kept}"
        ));
        Ok(())
    }
}

async fn run_test(pg: &Postgres) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let setup = async {
        pg.create_database("actor_failure").await?;
        let pgc = common::open(&pg.conn_str("actor_failure")).await?;
        let server = EbbflowServer::spawn(ServerOptions::default(), None).await?;
        let a = common::open(&server.conn_str()).await?;
        let b = common::open(&server.conn_str()).await?;
        let mut t = Test {
            server,
            mirror: Mirror::new(pgc),
            gen: Gen::new(SEED),
            a,
            b,
            statements: 0,
        };
        t.mirror.create_schema(&t.a, &mut t.gen).await?;
        Ok::<_, String>(t)
    };
    let mut t = match setup.await {
        Ok(t) => t,
        Err(e) => {
            failures.push(format!("setup: {e}"));
            return (0, failures);
        }
    };
    let mut passed = 0;
    for target in [Target::Mv, Target::Table, Target::Join] {
        match t.round(target).await {
            Ok(()) => passed += 1,
            Err(e) => {
                failures.push(format!(
                    "{target:?}: {e}\n--- last statements (newest last) ---\n{}\n\
                     --- server log ---\n{}",
                    t.mirror.log_tail(40),
                    t.server.log.tail(40)
                ));
                break;
            }
        }
    }
    t.server.shut_down().await;
    (passed, failures)
}

#[test]
fn actor_failure_recovery() {
    if skip_without_postgres("actor_failure") {
        return;
    }
    let rt = runtime();
    let started = Instant::now();
    let pg = Postgres::start().expect("start a throwaway PostgreSQL 15");
    let (passed, failures) = rt.block_on(async {
        match tokio::time::timeout(TEST_TIMEOUT, run_test(&pg)).await {
            Ok(r) => r,
            Err(_) => (
                0,
                vec![format!(
                    "timed out after {} s (a statement, FLUSH or recovery hangs?)",
                    TEST_TIMEOUT.as_secs()
                )],
            ),
        }
    });
    drop(pg);
    for f in &failures {
        say(&format!("actor_failure: FAILED {f}\n"));
    }
    say(&format!(
        "actor_failure: {passed} passed, {} failed in {:.1}s",
        3 - passed,
        started.elapsed().as_secs_f64()
    ));
    assert!(failures.is_empty(), "actor failure test failed");
}
