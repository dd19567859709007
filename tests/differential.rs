//! Differential test against PostgreSQL 15.
//!
//! For each seed of a fixed list: a throwaway PostgreSQL and a fresh
//! `ebbflow playground` get the same random tables; ebbflow maintains a
//! fixed set of materialized views (filters, projections, every aggregate
//! grouped and global, every join kind and a 3-way join, DISTINCT, UNION
//! ALL, HAVING, MV on MV, top-N), PostgreSQL gets plain views with the same
//! definitions. Rounds of random INSERT/UPDATE/DELETE batches run in both;
//! after each round ebbflow FLUSHes and every MV is compared, as a multiset
//! of rows in text format (numbers compared by value), with the view.
//!
//! A mismatch fails with the seed, the MV, the missing/extra rows and the
//! statement log (also written to `target/differential-seed-<seed>.log`).
//!
//! Environment: `DIFF_SEEDS=1,2,3` overrides the seeds, `DIFF_ROUNDS=n` the
//! rounds per seed, `DIFF_SEED_TIMEOUT_SECS` (150) bounds one seed and
//! `DIFF_STMT_TIMEOUT_SECS` (30) one ebbflow statement,
//! `DIFF_VERBOSE=1` prints the size of every MV, and
//! `DIFF_SELF_CHECK=1` checks the harness against a second PostgreSQL
//! database instead of ebbflow. Without PostgreSQL 15 the test is skipped, except under
//! `CI=true` where that is a failure.

mod common;

use std::fmt::Write as _;

use tokio_postgres::Client;

use common::driver::{env_or, env_secs, env_seeds, run_seeds, save_log, say, tail};
use common::rows::{canonical, minus, multiset, mv_mismatch, run, run_within, Row};
use common::workload::{pg_def, pg_sql, Gen, MVS, TABLES};
use common::{EbbflowServer, Postgres, ServerOptions};

const DEFAULT_SEEDS: &[u64] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const DEFAULT_ROUNDS: usize = 12;

/// The system under test: ebbflow, or (`DIFF_SELF_CHECK=1`, to check the
/// harness itself) a second PostgreSQL database where MVs become views and
/// FLUSH is a no-op.
struct Eb {
    client: Client,
    self_check: bool,
}

impl Eb {
    async fn run(&self, sql: &str) -> Result<Vec<Row>, String> {
        if !self.self_check {
            // A hang is reported at the statement that hangs, with the log.
            let limit = env_secs("DIFF_STMT_TIMEOUT_SECS", 30);
            return run_within(&self.client, sql, limit).await;
        }
        if sql == "FLUSH" {
            return Ok(Vec::new());
        }
        let sql = sql.replace("CREATE MATERIALIZED VIEW", "CREATE VIEW");
        run(&self.client, &sql).await
    }
}

struct SeedRun {
    seed: u64,
    log: Vec<String>,
}

impl SeedRun {
    fn fail(&self, what: &str) -> String {
        let path = save_log(&format!("differential-seed-{}", self.seed), &self.log);
        let mut msg = format!(
            "seed {}: {what}\n--- last statements (newest last) ---\n{}\n",
            self.seed,
            tail(&self.log, 60)
        );
        let _ = writeln!(msg, "--- full statement log: {} ---", path.display());
        msg
    }

    /// Runs a DML statement in both; both must succeed.
    async fn both(&mut self, pg: &Client, eb: &Eb, sql: &str) -> Result<(), String> {
        self.log.push(sql.to_string());
        let p = run(pg, &pg_sql(sql)).await;
        let e = eb.run(sql).await;
        match (p, e) {
            (Ok(_), Ok(_)) => Ok(()),
            (Err(pe), Ok(_)) => Err(self.fail(&format!(
                "PostgreSQL failed but ebbflow succeeded on `{sql}`: {pe}"
            ))),
            (Ok(_), Err(ee)) => Err(self.fail(&format!("ebbflow failed on `{sql}`: {ee}"))),
            (Err(pe), Err(ee)) => Err(self.fail(&format!(
                "both failed on `{sql}` (the generator is wrong): PostgreSQL: {pe}; ebbflow: {ee}"
            ))),
        }
    }

    async fn compare_all(&mut self, pg: &Client, eb: &Eb, round: usize) -> Result<(), String> {
        self.log.push("FLUSH".into());
        eb.run("FLUSH")
            .await
            .map_err(|e| self.fail(&format!("FLUSH failed: {e}")))?;
        for (name, def) in MVS {
            let sql = format!("SELECT * FROM {name}");
            let expected = run(pg, &sql)
                .await
                .map_err(|e| self.fail(&format!("PostgreSQL view {name}: {e}")))?;
            let actual = eb
                .run(&sql)
                .await
                .map_err(|e| self.fail(&format!("ebbflow `{sql}`: {e}")))?;
            if std::env::var("DIFF_VERBOSE").is_ok_and(|v| v == "1") {
                say(&format!(
                    "  seed {} round {round}: {name} {} rows",
                    self.seed,
                    expected.len()
                ));
            }
            let when = format!("after round {round}");
            if let Some(what) = mv_mismatch(name, def, &when, &expected, &actual) {
                return Err(self.fail(&what));
            }
        }
        Ok(())
    }
}

async fn run_seed(pg: &Postgres, seed: u64, rounds: usize) -> Result<(), String> {
    let db = format!("diff_{seed}");
    let admin = pg.create_database(&db).await?;
    let pgc = common::open(&pg.conn_str(&db)).await?;

    let self_check = std::env::var("DIFF_SELF_CHECK").is_ok_and(|v| v == "1");
    let mut server = if self_check {
        pg.create_database(&format!("{db}_b")).await?;
        None
    } else {
        Some(EbbflowServer::spawn(ServerOptions::default(), None).await?)
    };
    let eb_conn = match &server {
        Some(s) => s.conn_str(),
        None => pg.conn_str(&format!("{db}_b")),
    };
    let result = async {
        let client = common::open(&eb_conn)
            .await
            .map_err(|e| format!("connect to ebbflow: {e}"))?;
        let eb = Eb { client, self_check };
        let mut state = SeedRun {
            seed,
            log: Vec::new(),
        };
        let mut gen = Gen::new(seed);
        for ddl in TABLES {
            state.both(&pgc, &eb, ddl).await?;
        }
        // Rows before the MVs exist: their creation must backfill them.
        for s in &gen.initial_rows() {
            state.both(&pgc, &eb, s).await?;
        }
        for (name, def) in MVS {
            let pg_sql = format!("CREATE VIEW {name} AS {}", pg_def(name, def));
            let eb_sql = format!("CREATE MATERIALIZED VIEW {name} AS {def}");
            state.log.push(eb_sql.clone());
            run(&pgc, &pg_sql)
                .await
                .map_err(|e| state.fail(&format!("PostgreSQL `{pg_sql}`: {e}")))?;
            eb.run(&eb_sql)
                .await
                .map_err(|e| state.fail(&format!("ebbflow `{eb_sql}`: {e}")))?;
        }
        state.compare_all(&pgc, &eb, 0).await?;
        for round in 1..=rounds {
            for s in gen.round() {
                state.both(&pgc, &eb, &s).await?;
            }
            gen.refresh_ids(&pgc).await?;
            state.compare_all(&pgc, &eb, round).await?;
        }
        Ok::<_, String>(state.log.len())
    }
    .await;
    let alive = server.as_mut().is_none_or(|s| s.is_running());
    let log_tail = server.as_ref().map(|s| s.log.tail(30)).unwrap_or_default();
    if let Some(server) = server.take() {
        server.shut_down().await;
    }
    drop(pgc);
    for d in [db.clone(), format!("{db}_b")] {
        Postgres::drop_database(&admin, &d).await;
    }
    match result {
        Ok(n) => {
            say(&format!("differential: seed {seed} ok ({n} statements)"));
            Ok(())
        }
        Err(e) if !alive => Err(format!(
            "{e}\nthe ebbflow server died; last log lines:\n{log_tail}"
        )),
        Err(e) => Err(format!("{e}\n--- last server log lines ---\n{log_tail}")),
    }
}

#[test]
fn differential_against_postgres() {
    if common::driver::skip_without_postgres("differential") {
        return;
    }
    let seeds = env_seeds("DIFF_SEEDS", DEFAULT_SEEDS);
    let rounds = env_or("DIFF_ROUNDS", DEFAULT_ROUNDS);
    let budget = env_secs("DIFF_SEED_TIMEOUT_SECS", 150);
    let pg = Postgres::start().expect("start a throwaway PostgreSQL 15");
    let report = run_seeds(
        "differential",
        &seeds,
        budget,
        "a statement or FLUSH",
        |seed| run_seed(&pg, seed, rounds),
    );
    drop(pg);
    say(&report.summary(
        "differential",
        &format!("{} MVs, {rounds} rounds per seed", MVS.len()),
    ));
    assert!(
        report.failed.is_empty(),
        "differential failed for seeds {:?}",
        report.failed
    );
}

#[test]
fn comparison_is_by_value() {
    let s = |v: &str| Some(v.to_string());
    assert_eq!(canonical(&s("1.50")), canonical(&s("1.5")));
    assert_eq!(
        canonical(&s("23.3333333333333333")),
        canonical(&s("23.333333333333333333333333333"))
    );
    assert_eq!(canonical(&s("-0")), canonical(&s("0.00")));
    assert_ne!(canonical(&s("1.5")), canonical(&s("1.6")));
    assert_ne!(
        canonical(&None),
        canonical(&s("NULL")).replace("NULL", "null")
    );
    assert_eq!(canonical(&s("apple")), "apple");
    let a = multiset(&[vec![s("1"), None], vec![s("1"), None], vec![s("2"), s("x")]]);
    let b = multiset(&[
        vec![s("1.0"), None],
        vec![s("2"), s("x")],
        vec![s("3"), s("y")],
    ]);
    assert_eq!(minus(&a, &b), vec!["1 | NULL".to_string()]);
    assert_eq!(minus(&b, &a), vec!["3 | y".to_string()]);
}
