//! How a seeded integration test runs: knobs from the environment, the
//! runtime, the loop over seeds each under a time budget, progress lines
//! on stderr and statement logs for failure reports.

use std::future::Future;
use std::io::Write as _;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use super::{pg_bin_dir, postgres_available};

/// A progress line on stderr, flushed at once (the tests run long; a line
/// per seed shows where a slow run is).
pub fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// The environment variable `name` parsed, else `default`.
pub fn env_or<T: FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A duration in seconds from the environment variable `name`.
pub fn env_secs(name: &str, default: u64) -> Duration {
    Duration::from_secs(env_or(name, default))
}

/// Comma-separated seeds from the environment variable `name`.
pub fn env_seeds(name: &str, default: &[u64]) -> Vec<u64> {
    match std::env::var(name) {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => default.to_vec(),
    }
}

/// Whether `test` skips itself because PostgreSQL 15 is not installed;
/// under `CI=true` that is a failure instead.
pub fn skip_without_postgres(test: &str) -> bool {
    if postgres_available() {
        return false;
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !in_ci,
        "PostgreSQL 15 is not installed ({}) but CI=true",
        pg_bin_dir().display()
    );
    say(&format!("{test}: skipped, PostgreSQL 15 is not installed"));
    true
}

/// The runtime of a test: two workers, as on the CI machines.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The outcome of [`run_seeds`].
pub struct SeedsReport<T> {
    /// The results of the seeds that passed.
    pub passed: Vec<T>,
    /// The seeds that failed.
    pub failed: Vec<u64>,
    pub elapsed: Duration,
}

impl<T> SeedsReport<T> {
    /// The closing line: `<test>: N passed, N failed (<detail>) in Ns`.
    pub fn summary(&self, test: &str, detail: &str) -> String {
        format!(
            "{test}: {} passed, {} failed ({detail}) in {:.1}s",
            self.passed.len(),
            self.failed.len(),
            self.elapsed.as_secs_f64()
        )
    }
}

/// Runs `run_seed` for every seed on a fresh [`runtime`], each within
/// `budget`; `hangs` names what may hang when a seed does not finish (for
/// the message). A failing seed is reported at once as `<test>: seed
/// <seed> FAILED`.
pub fn run_seeds<T, F>(
    test: &str,
    seeds: &[u64],
    budget: Duration,
    hangs: &str,
    mut run_seed: impl FnMut(u64) -> F,
) -> SeedsReport<T>
where
    F: Future<Output = Result<T, String>>,
{
    let rt = runtime();
    let started = Instant::now();
    let mut report = SeedsReport {
        passed: Vec::new(),
        failed: Vec::new(),
        elapsed: Duration::ZERO,
    };
    for &seed in seeds {
        let outcome = rt.block_on(async {
            match tokio::time::timeout(budget, run_seed(seed)).await {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "seed {seed}: timed out after {} s ({hangs} hangs?)",
                    budget.as_secs()
                )),
            }
        });
        match outcome {
            Ok(t) => report.passed.push(t),
            Err(e) => {
                say(&format!("{test}: seed {seed} FAILED\n{e}\n"));
                report.failed.push(seed);
            }
        }
    }
    report.elapsed = started.elapsed();
    report
}

/// Writes a statement log to `target/<name>.log`, one statement a line;
/// returns the path.
pub fn save_log(name: &str, statements: &[String]) -> PathBuf {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(format!("{name}.log"));
    let _ = std::fs::write(&path, statements.join(";\n") + ";\n");
    path
}

/// The last `n` statements, one a line, newest last.
pub fn tail(statements: &[String], n: usize) -> String {
    let skip = statements.len().saturating_sub(n);
    statements[skip..]
        .iter()
        .map(|s| format!("{s};"))
        .collect::<Vec<_>>()
        .join("\n")
}
