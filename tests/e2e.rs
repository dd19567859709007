//! End-to-end sqllogictest runner.
//!
//! Globs `e2e_test/**/*.slt`; for each file starts its own `ebbflow
//! playground` on a free loopback port with a temp data dir (stopped at the
//! end of the file, also on failure), runs the file through the real pgwire
//! server with the simple query protocol, two files at a time, and prints
//! one line per file and a closing `N passed, N failed` line.
//!
//! Environment:
//! - `SLT_FILTER=agg,join/` runs only files whose path contains one of the
//!   comma-separated words.
//! - `SLT_JOBS=N` files in parallel (default 2).
//! - `SLT_TARGET=postgres` runs the files against a throwaway PostgreSQL 15
//!   instead (`SLT_TARGET=postgres://user@host:port/db` uses an existing
//!   one); each file gets a fresh database. ebbflow-only statements are
//!   translated (`CREATE MATERIALIZED VIEW` → `CREATE VIEW`, `FLUSH` → no-op)
//!   or skipped (`skipif postgres`, or a whole file with a
//!   `# engine: ebbflow-only` line). This checks the expected results of
//!   PostgreSQL-compatible files against the reference.
//! - `SLT_COMPLETE=1` rewrites the expected results of the files with what
//!   the target returns (review the diff!).
//! - `SLT_FILE_TIMEOUT_SECS` per-file timeout (default 120) and
//!   `SLT_TOTAL_TIMEOUT_SECS` for the whole suite (default 1200): files not
//!   started by then fail without running, so a hanging server cannot stall
//!   CI.
//! - `EBBFLOW_BARRIER_MS` barrier interval of the servers (default 100),
//!   `EBBFLOW_LOG` their `RUST_LOG` (default `info`), `EBBFLOW_BIN` another
//!   binary.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};
use tokio_postgres::SimpleQueryMessage;

use common::driver::{env_secs, say};
use common::{describe_pg_error, EbbflowServer, Postgres, ServerOptions};

/// A failed statement: the server's message and SQLSTATE, so that
/// `statement error <regex>` and `statement error (SQLSTATE)` can match.
#[derive(Debug)]
struct SqlError {
    message: String,
    sqlstate: Option<String>,
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "db error: {}", self.message)
    }
}

impl std::error::Error for SqlError {}

impl From<tokio_postgres::Error> for SqlError {
    fn from(e: tokio_postgres::Error) -> Self {
        SqlError {
            message: describe_pg_error(&e),
            sqlstate: e.code().map(|c| c.code().to_string()),
        }
    }
}

/// Which server a file runs against.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Engine {
    Ebbflow,
    Postgres,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Ebbflow => "ebbflow",
            Engine::Postgres => "postgres",
        }
    }
}

/// One pgwire session, simple query protocol.
struct Session {
    client: tokio_postgres::Client,
    engine: Engine,
}

/// Rewrites ebbflow-only statements into their PostgreSQL equivalent
/// (`None`: nothing to run). Only used when the target is PostgreSQL.
fn to_postgres(sql: &str) -> Option<String> {
    let trimmed = sql.trim_start();
    let upper = trimmed.to_ascii_uppercase();
    let words: Vec<&str> = upper.split_whitespace().collect();
    match words.as_slice() {
        ["FLUSH", ..] | ["FLUSH;", ..] => None,
        ["SET", var, ..] if var.starts_with("RW_") || var.starts_with("STREAMING_PARALLELISM") => {
            None
        }
        ["CREATE", "MATERIALIZED", "VIEW", ..] | ["DROP", "MATERIALIZED", "VIEW", ..] => {
            let at = upper.find("MATERIALIZED").expect("word present");
            let rest = &trimmed[at + "MATERIALIZED".len()..];
            Some(format!("{}{}", &trimmed[..at], rest.trim_start()))
        }
        _ => Some(sql.to_string()),
    }
}

#[async_trait]
impl AsyncDB for Session {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<Self::ColumnType>, Self::Error> {
        let sql = match self.engine {
            Engine::Ebbflow => sql.to_string(),
            Engine::Postgres => match to_postgres(sql) {
                Some(s) => s,
                None => return Ok(DBOutput::StatementComplete(0)),
            },
        };
        let messages = self.client.simple_query(&sql).await?;
        let mut columns: Option<usize> = None;
        let mut rows = Vec::new();
        let mut count = 0;
        for m in messages {
            match m {
                SimpleQueryMessage::RowDescription(desc) => {
                    // A new result set: keep only the last one.
                    columns = Some(desc.len());
                    rows.clear();
                }
                SimpleQueryMessage::Row(row) => {
                    if columns.is_none() {
                        columns = Some(row.len());
                    }
                    let values = (0..row.len())
                        .map(|i| match row.get(i) {
                            None => "NULL".to_string(),
                            Some("") => "(empty)".to_string(),
                            Some(v) => v.to_string(),
                        })
                        .collect();
                    rows.push(values);
                }
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        match columns {
            Some(n) => Ok(DBOutput::Rows {
                types: vec![DefaultColumnType::Any; n],
                rows,
            }),
            None => Ok(DBOutput::StatementComplete(count)),
        }
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        self.engine.name()
    }

    async fn sleep(dur: Duration) {
        tokio::time::sleep(dur).await
    }

    async fn run_command(
        mut command: std::process::Command,
    ) -> std::io::Result<std::process::Output> {
        tokio::task::spawn_blocking(move || command.output())
            .await
            .map_err(std::io::Error::other)?
    }

    fn error_sql_state(err: &Self::Error) -> Option<String> {
        err.sqlstate.clone()
    }
}

/// Where the sessions of one file connect.
enum Target {
    Ebbflow,
    /// An existing PostgreSQL (admin connection string).
    Postgres(Box<tokio_postgres::Config>),
}

fn find_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if p.is_dir() {
            find_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "slt") {
            out.push(p);
        }
    }
}

enum Outcome {
    Passed,
    Skipped(&'static str),
    Failed(String),
}

async fn run_file(file: PathBuf, target: Arc<Target>, index: usize, complete: bool) -> Outcome {
    let timeout = env_secs("SLT_FILE_TIMEOUT_SECS", 120);
    match &*target {
        Target::Ebbflow => {
            let opts = ServerOptions::default();
            let started = tokio::task::spawn_blocking(move || EbbflowServer::start(&opts)).await;
            let mut server = match started {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return Outcome::Failed(format!("server did not start: {e}")),
                Err(e) => return Outcome::Failed(format!("server start panicked: {e}")),
            };
            let conn_str = server.conn_str();
            let config: tokio_postgres::Config = match conn_str.parse() {
                Ok(c) => c,
                Err(e) => return Outcome::Failed(format!("bad connection string: {e}")),
            };
            let result = run_slt(&file, config, Engine::Ebbflow, complete, timeout).await;
            let alive = server.is_running();
            let outcome = match result {
                Ok(()) if alive => Outcome::Passed,
                Ok(()) => Outcome::Failed(format!(
                    "the server exited during the file:\n{}",
                    server.log.tail(40)
                )),
                Err(e) => Outcome::Failed(format!(
                    "{e}\n--- last server log lines ---\n{}",
                    server.log.tail(30)
                )),
            };
            server.shut_down().await;
            outcome
        }
        Target::Postgres(admin) => {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            if text.lines().any(|l| l.trim() == "# engine: ebbflow-only") {
                // Not run here, but at least it must parse.
                return match sqllogictest::parse_file::<DefaultColumnType>(&file) {
                    Ok(_) => Outcome::Skipped("ebbflow-only"),
                    Err(e) => Outcome::Failed(format!("parse error: {e}")),
                };
            }
            let db = format!("slt_{}_{index}", std::process::id());
            let admin_client = match connect_config(admin).await {
                Ok(c) => c,
                Err(e) => return Outcome::Failed(format!("connect to PostgreSQL: {e}")),
            };
            for sql in [
                format!("DROP DATABASE IF EXISTS {db}"),
                format!("CREATE DATABASE {db}"),
            ] {
                if let Err(e) = admin_client.simple_query(&sql).await {
                    return Outcome::Failed(format!("{sql}: {}", describe_pg_error(&e)));
                }
            }
            let mut config = (**admin).clone();
            config.dbname(&db);
            let result = run_slt(&file, config, Engine::Postgres, complete, timeout).await;
            let _ = admin_client
                .simple_query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                .await;
            match result {
                Ok(()) => Outcome::Passed,
                Err(e) => Outcome::Failed(e),
            }
        }
    }
}

async fn connect_config(config: &tokio_postgres::Config) -> Result<tokio_postgres::Client, String> {
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| describe_pg_error(&e))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

async fn run_slt(
    file: &Path,
    config: tokio_postgres::Config,
    engine: Engine,
    complete: bool,
    timeout: Duration,
) -> Result<(), String> {
    let make = move || {
        let config = config.clone();
        async move {
            let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok::<_, SqlError>(Session { client, engine })
        }
    };
    let mut runner = sqllogictest::Runner::new(make);
    runner.add_label(engine.name());
    let work = async {
        if complete {
            runner
                .update_test_file(
                    file,
                    " ",
                    sqllogictest::default_validator,
                    sqllogictest::default_normalizer,
                    sqllogictest::default_column_validator,
                )
                .await
                .map_err(|e| e.to_string())
        } else {
            runner
                .run_file_async(file)
                .await
                .map_err(|e| e.display(false).to_string())
        }
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(format!("timed out after {} s", timeout.as_secs())),
    }
}

#[test]
fn e2e_slt() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    find_files(&root.join("e2e_test"), &mut files);
    files.sort();
    if let Ok(filter) = std::env::var("SLT_FILTER") {
        let words: Vec<&str> = filter.split(',').filter(|w| !w.is_empty()).collect();
        if !words.is_empty() {
            files.retain(|f| {
                let rel = f.strip_prefix(&root).unwrap_or(f).to_string_lossy();
                words.iter().any(|w| rel.contains(w))
            });
        }
    }
    let jobs: usize = std::env::var("SLT_JOBS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(2);
    let complete = std::env::var("SLT_COMPLETE").is_ok_and(|v| v == "1");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");

    // Keep a throwaway PostgreSQL alive for the whole run when asked for one.
    let mut throwaway_pg: Option<Postgres> = None;
    let target = match std::env::var("SLT_TARGET").ok().as_deref() {
        None | Some("") | Some("ebbflow") => Target::Ebbflow,
        Some("postgres") => {
            let pg = Postgres::start().expect("start a throwaway PostgreSQL 15");
            let config = pg.conn_str("postgres").parse().expect("pg config");
            throwaway_pg = Some(pg);
            Target::Postgres(Box::new(config))
        }
        Some(other) => Target::Postgres(Box::new(
            other.parse().expect("SLT_TARGET: a PostgreSQL URL"),
        )),
    };
    let target = Arc::new(target);
    let engine = match *target {
        Target::Ebbflow => "ebbflow",
        Target::Postgres(_) => "postgres",
    };
    say(&format!(
        "e2e: {} file(s) against {engine}, {jobs} at a time",
        files.len()
    ));

    let started = Instant::now();
    let budget = Duration::from_secs(
        std::env::var("SLT_TOTAL_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1200),
    );
    let results = rt.block_on(async {
        let queue = Arc::new(tokio::sync::Mutex::new(
            files
                .iter()
                .cloned()
                .enumerate()
                .collect::<Vec<_>>()
                .into_iter(),
        ));
        let mut workers = Vec::new();
        for _ in 0..jobs {
            let queue = queue.clone();
            let target = target.clone();
            let root = root.clone();
            workers.push(tokio::spawn(async move {
                let mut done = Vec::new();
                loop {
                    let next = queue.lock().await.next();
                    let Some((index, file)) = next else { break };
                    let rel = file
                        .strip_prefix(&root)
                        .unwrap_or(&file)
                        .display()
                        .to_string();
                    let t = Instant::now();
                    let outcome = if started.elapsed() > budget {
                        Outcome::Failed(format!(
                            "not run: the suite exceeded its {} s budget",
                            budget.as_secs()
                        ))
                    } else {
                        run_file(file.clone(), target.clone(), index, complete).await
                    };
                    let secs = t.elapsed().as_secs_f64();
                    match &outcome {
                        Outcome::Passed => say(&format!("PASS {rel} ({secs:.1}s)")),
                        Outcome::Skipped(why) => say(&format!("SKIP {rel} ({why})")),
                        Outcome::Failed(e) => {
                            say(&format!("FAIL {rel} ({secs:.1}s)\n{e}\n"));
                        }
                    }
                    done.push((rel, outcome));
                }
                done
            }));
        }
        let mut all = Vec::new();
        for w in workers {
            match w.await {
                Ok(done) => all.extend(done),
                Err(e) => all.push(("<worker>".to_string(), Outcome::Failed(e.to_string()))),
            }
        }
        all
    });
    drop(throwaway_pg);

    let passed = results
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Passed))
        .count();
    let skipped = results
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Skipped(_)))
        .count();
    let failed: Vec<&String> = results
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
        .map(|(f, _)| f)
        .collect();
    if !failed.is_empty() {
        say("failed files:");
        for f in &failed {
            say(&format!("  {f}"));
        }
    }
    let skipped_note = if skipped > 0 {
        format!(", {skipped} skipped")
    } else {
        String::new()
    };
    say(&format!(
        "e2e: {passed} passed, {} failed{skipped_note} in {:.1}s",
        failed.len(),
        started.elapsed().as_secs_f64()
    ));
    assert!(failed.is_empty(), "{} e2e file(s) failed", failed.len());
}
