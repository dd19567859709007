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
use std::io::Write as _;
use std::time::Instant;

use tokio_postgres::Client;

use common::rows::{canonical, minus, multiset, run, Row};
use common::workload::{live_ids, Gen, MVS, TABLES};
use common::{describe_pg_error, EbbflowServer, Postgres, ServerOptions};

const DEFAULT_SEEDS: &[u64] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const DEFAULT_ROUNDS: usize = 12;

fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

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
            let limit = std::time::Duration::from_secs(
                std::env::var("DIFF_STMT_TIMEOUT_SECS")
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(30),
            );
            return match tokio::time::timeout(limit, run(&self.client, sql)).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {} s", limit.as_secs())),
            };
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
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("differential-seed-{}.log", self.seed));
        let _ = std::fs::write(&path, self.log.join(";\n") + ";\n");
        let tail: Vec<&String> = self.log.iter().rev().take(60).collect();
        let mut msg = format!(
            "seed {}: {what}\n--- last statements (newest last) ---\n",
            self.seed
        );
        for s in tail.into_iter().rev() {
            let _ = writeln!(msg, "{s};");
        }
        let _ = writeln!(msg, "--- full statement log: {} ---", path.display());
        msg
    }

    /// Runs a DML statement in both; both must succeed.
    async fn both(&mut self, pg: &Client, eb: &Eb, sql: &str) -> Result<(), String> {
        self.log.push(sql.to_string());
        let p = run(pg, sql).await;
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
            let (exp, act) = (multiset(&expected), multiset(&actual));
            if exp != act {
                let missing = minus(&exp, &act);
                let extra = minus(&act, &exp);
                let mut what = format!(
                    "MV {name} differs after round {round}\n  definition: {def}\n  \
                     PostgreSQL {} rows, ebbflow {} rows\n",
                    expected.len(),
                    actual.len()
                );
                let _ = writeln!(what, "  missing in ebbflow ({}):", missing.len());
                for r in missing.iter().take(20) {
                    let _ = writeln!(what, "    - {r}");
                }
                let _ = writeln!(what, "  extra in ebbflow ({}):", extra.len());
                for r in extra.iter().take(20) {
                    let _ = writeln!(what, "    + {r}");
                }
                return Err(self.fail(&what));
            }
        }
        Ok(())
    }
}

async fn run_seed(pg: &Postgres, seed: u64, rounds: usize) -> Result<(), String> {
    let db = format!("diff_{seed}");
    let admin = common::connect(&pg.conn_str("postgres"))
        .await
        .map_err(|e| describe_pg_error(&e))?;
    run(&admin, &format!("DROP DATABASE IF EXISTS {db}")).await?;
    run(&admin, &format!("CREATE DATABASE {db}")).await?;
    let pgc = common::connect(&pg.conn_str(&db))
        .await
        .map_err(|e| describe_pg_error(&e))?;

    let self_check = std::env::var("DIFF_SELF_CHECK").is_ok_and(|v| v == "1");
    let mut server = if self_check {
        run(&admin, &format!("DROP DATABASE IF EXISTS {db}_b")).await?;
        run(&admin, &format!("CREATE DATABASE {db}_b")).await?;
        None
    } else {
        let opts = ServerOptions::default();
        Some(
            tokio::task::spawn_blocking(move || EbbflowServer::start(&opts))
                .await
                .map_err(|e| e.to_string())??,
        )
    };
    let eb_conn = match &server {
        Some(s) => s.conn_str(),
        None => pg.conn_str(&format!("{db}_b")),
    };
    let result = async {
        let client = common::connect(&eb_conn)
            .await
            .map_err(|e| format!("connect to ebbflow: {}", describe_pg_error(&e)))?;
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
        let mut initial = Vec::new();
        initial.extend(gen.insert_t1(40));
        initial.push(gen.insert_t2(30));
        initial.extend(gen.insert_t3(30));
        for s in &initial {
            state.both(&pgc, &eb, s).await?;
        }
        for (name, def) in MVS {
            let pg_sql = format!("CREATE VIEW {name} AS {def}");
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
            gen.t1_ids = live_ids(&pgc, "t1").await?;
            gen.t3_ids = live_ids(&pgc, "t3").await?;
            state.compare_all(&pgc, &eb, round).await?;
        }
        Ok::<_, String>(state.log.len())
    }
    .await;
    let alive = server.as_mut().is_none_or(|s| s.is_running());
    let log_tail = server.as_ref().map(|s| s.log.tail(30)).unwrap_or_default();
    if let Some(mut server) = server.take() {
        tokio::task::spawn_blocking(move || server.stop())
            .await
            .ok();
    }
    drop(pgc);
    for d in [db.clone(), format!("{db}_b")] {
        let _ = run(&admin, &format!("DROP DATABASE IF EXISTS {d} WITH (FORCE)")).await;
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
    if !common::postgres_available() {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !in_ci,
            "PostgreSQL 15 is not installed ({}) but CI=true",
            common::pg_bin_dir().display()
        );
        say("differential: skipped, PostgreSQL 15 is not installed");
        return;
    }
    let seeds: Vec<u64> = match std::env::var("DIFF_SEEDS") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => DEFAULT_SEEDS.to_vec(),
    };
    let rounds = std::env::var("DIFF_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_ROUNDS);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let started = Instant::now();
    let pg = Postgres::start().expect("start a throwaway PostgreSQL 15");
    let mut failures = Vec::new();
    for &seed in &seeds {
        let budget = std::time::Duration::from_secs(
            std::env::var("DIFF_SEED_TIMEOUT_SECS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(150),
        );
        let outcome = rt.block_on(async {
            match tokio::time::timeout(budget, run_seed(&pg, seed, rounds)).await {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "seed {seed}: timed out after {} s (a statement or FLUSH hangs?)",
                    budget.as_secs()
                )),
            }
        });
        if let Err(e) = outcome {
            say(&format!("differential: seed {seed} FAILED\n{e}\n"));
            failures.push(seed);
        }
    }
    drop(pg);
    say(&format!(
        "differential: {} passed, {} failed ({} MVs, {rounds} rounds per seed) in {:.1}s",
        seeds.len() - failures.len(),
        failures.len(),
        MVS.len(),
        started.elapsed().as_secs_f64()
    ));
    assert!(
        failures.is_empty(),
        "differential failed for seeds {failures:?}"
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
