//! Bad configuration: `ebbflow playground` run directly with a store it
//! cannot use must exit quickly with a non-zero status and say why in one
//! line (the last line of stderr, `Error: …`), without listening.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::common::driver::say;
use super::common::{ebbflow_bin, free_port, sigkill, TempDir};
use super::Ctx;

/// How long a server given a bad configuration may take to exit.
const EXIT_WAIT: Duration = Duration::from_secs(20);

/// One bad configuration and what its error line must name.
struct Case {
    what: &'static str,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Each must appear in the error line.
    expect: Vec<String>,
}

/// How a run ended.
struct Outcome {
    /// `None`: still running after [`EXIT_WAIT`] (then killed).
    status: Option<std::process::ExitStatus>,
    listened: bool,
    stderr: Vec<String>,
    took: Duration,
}

fn case(what: &'static str, args: &[&str], expect: &[&str]) -> Case {
    Case {
        what,
        args: args.iter().map(|s| s.to_string()).collect(),
        env: Vec::new(),
        expect: expect.iter().map(|s| s.to_string()).collect(),
    }
}

/// Runs `ebbflow playground` with the case's arguments on a fresh data
/// dir until it exits or [`EXIT_WAIT`] passes.
fn run(c: &Case) -> Result<Outcome, String> {
    let dir = TempDir::new("ebbflow-bad-config").map_err(|e| format!("temp dir: {e}"))?;
    let mut cmd = Command::new(ebbflow_bin());
    cmd.arg("playground")
        .args(&c.args)
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", free_port()))
        .arg("--data-dir")
        .arg(dir.path());
    // The test's environment must not pick the endpoint or add a
    // backtrace after the error line.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("AWS_") {
            cmd.env_remove(&key);
        }
    }
    let mut child = cmd
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .env("RUST_LOG", "info")
        .envs(c.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", ebbflow_bin().display()))?;
    let started = Instant::now();
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let (listening_tx, listening_rx) = mpsc::channel::<()>();
    let pipes: Vec<(Box<dyn Read + Send>, bool)> = match (child.stdout.take(), child.stderr.take())
    {
        (Some(o), Some(e)) => vec![(Box::new(o), false), (Box::new(e), true)],
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            return Err("ebbflow: no stdout/stderr pipe".into());
        }
    };
    let mut readers = Vec::new();
    for (pipe, is_err) in pipes {
        let stderr = stderr.clone();
        let listening_tx = listening_tx.clone();
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if line.contains("listening on") {
                    let _ = listening_tx.send(());
                }
                if is_err {
                    stderr.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                }
            }
        }));
    }
    drop(listening_tx);
    let mut listened = false;
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if listening_rx.try_recv().is_ok() {
            listened = true;
        }
        if listened || started.elapsed() > EXIT_WAIT {
            sigkill(child.id());
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    for r in readers {
        let _ = r.join();
    }
    let stderr = stderr.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(Outcome {
        status,
        listened,
        stderr,
        took,
    })
}

/// Checks one case; `Ok(false)` when the server started (for the
/// missing-bucket case, which the caller then looks at).
fn check(c: &Case) -> Result<bool, String> {
    let o = run(c)?;
    let tail = o
        .stderr
        .iter()
        .skip(o.stderr.len().saturating_sub(8))
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    if o.listened {
        return Ok(false);
    }
    let what = format!("{} (`ebbflow playground {}`)", c.what, c.args.join(" "));
    let Some(status) = o.status else {
        return Err(format!(
            "{what}: still running after {} s, not listening\n--- stderr ---\n{tail}",
            EXIT_WAIT.as_secs()
        ));
    };
    if status.success() {
        return Err(format!(
            "{what}: exited with success\n--- stderr ---\n{tail}"
        ));
    }
    let last = o
        .stderr
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .cloned()
        .unwrap_or_default();
    let missing: Vec<&String> = c.expect.iter().filter(|e| !last.contains(*e)).collect();
    if !last.starts_with("Error: ") || !missing.is_empty() {
        return Err(format!(
            "{what}: exited ({status}) in {} ms, but the last line of stderr is not one \
             `Error: …` line naming {:?}\n--- last line ---\n{last}\n--- stderr (last 8 \
             lines) ---\n{tail}",
            o.took.as_millis(),
            c.expect
        ));
    }
    say(&format!(
        "state_store: bad config {}: exit {} in {} ms: {last}",
        c.what,
        status
            .code()
            .map(|c| c.to_string())
            .unwrap_or("signal".into()),
        o.took.as_millis()
    ));
    Ok(true)
}

/// Every case; returns how many ran.
pub fn bad_configs(ctx: &Ctx) -> Result<usize, String> {
    let closed = free_port();
    let mut cases = vec![
        case(
            "malformed state store URL",
            &["--state-store", "not-a-url"],
            &["invalid state store URL", "not-a-url"],
        ),
        case(
            "state store URL without bucket",
            &["--state-store", "s3://"],
            &["invalid state store URL"],
        ),
        case(
            "relative file:// state store",
            &["--state-store", "file://relative/dir"],
            &["invalid state store URL", "file://relative/dir"],
        ),
        case(
            "unknown meta store scheme",
            &["--meta-store", "mysql://root@127.0.0.1/ebbflow"],
            &["meta store", "mysql://"],
        ),
        case(
            "malformed meta store URL",
            &["--meta-store", "postgres://bad url"],
            &["meta store"],
        ),
    ];
    let meta_closed = format!("postgres://postgres@127.0.0.1:{closed}/ebbflow");
    cases.push(case(
        "unreachable meta store (closed port)",
        &["--meta-store", &meta_closed],
        &["meta store", &format!("127.0.0.1:{closed}")],
    ));
    if let Some(pg) = &ctx.pg {
        let url = pg.db_url("no_such_database");
        cases.push(case(
            "meta store database that does not exist",
            &["--meta-store", &url],
            &["meta store", "no_such_database"],
        ));
    }
    let mut missing_bucket = None;
    match ctx.stores.weed() {
        Some(weed) => {
            let mut env = weed.env();
            for (k, v) in env.iter_mut() {
                if k == "AWS_ENDPOINT" {
                    *v = format!("http://127.0.0.1:{closed}");
                }
            }
            let mut c = case(
                "unreachable S3 endpoint (closed port)",
                &["--state-store", "s3://ebbflow/bad-config"],
                &["s3://ebbflow/bad-config"],
            );
            c.env = env;
            cases.push(c);
            let bucket = "ebbflow-no-such-bucket";
            let url = format!("s3://{bucket}/bad-config");
            let mut c = case("missing bucket", &["--state-store", &url], &[&url]);
            c.env = weed.env();
            missing_bucket = Some((cases.len(), bucket));
            cases.push(c);
        }
        None => say("state_store: no SeaweedFS: the S3 bad configuration cases are skipped"),
    }
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        match check(c) {
            Ok(true) => {}
            Ok(false) => match (missing_bucket, ctx.stores.weed()) {
                (Some((at, bucket)), Some(weed)) if at == i => {
                    if weed.bucket_exists(bucket)? {
                        say(&format!(
                            "state_store: bad config missing bucket: skipped, SeaweedFS \
                             created bucket {bucket} on the first write"
                        ));
                    } else {
                        failures.push(format!(
                            "missing bucket: the server started on s3://{bucket}, which does \
                             not exist"
                        ));
                    }
                }
                _ => failures.push(format!("{}: the server started and listened", c.what)),
            },
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        Ok(cases.len())
    } else {
        Err(failures.join("\n\n"))
    }
}
