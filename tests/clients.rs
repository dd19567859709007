//! Real client libraries against the real server: psycopg 3
//! (`tests/clients/psycopg_test.py`) and pgJDBC
//! (`tests/clients/JdbcTest.java`). `.ci/run` installs both (psycopg into
//! the CI venv, pgJDBC from Debian's `libpostgresql-jdbc-java`); a test
//! whose client is absent says so loudly and passes, so a bare `cargo
//! test` on a machine without them still runs the rest.
//!
//! `EBBFLOW_PYTHON` names the python with psycopg (default: the CI venv's,
//! else `python3`); `EBBFLOW_PGJDBC` the pgJDBC jar.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{EbbflowServer, ServerOptions};

fn skip(what: &str) {
    eprintln!();
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    eprintln!("!!! SKIPPED: {what}");
    eprintln!("!!! (.ci/run installs it; see tests/clients.rs)");
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
}

fn run(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed:\n{text}");
    eprintln!("{text}");
}

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// A python that can `import psycopg`.
fn python() -> Option<String> {
    let candidates = [
        std::env::var("EBBFLOW_PYTHON").ok(),
        Some("/opt/ebbflow-ci/venv/bin/python".to_owned()),
        Some("python3".to_owned()),
    ];
    candidates.into_iter().flatten().find(|p| {
        Command::new(p)
            .args(["-c", "import psycopg"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn psycopg3() {
    let Some(python) = python() else {
        skip("psycopg 3 test: no python with psycopg (pip install 'psycopg[binary]')");
        return;
    };
    let server = EbbflowServer::start(&ServerOptions::default()).expect("server starts");
    let mut cmd = Command::new(&python);
    cmd.arg(clients_dir().join("psycopg_test.py"))
        .arg(server.port.to_string());
    run(cmd, "psycopg_test.py");
}

#[test]
fn pgjdbc() {
    let jar = std::env::var("EBBFLOW_PGJDBC")
        .unwrap_or_else(|_| "/usr/share/java/postgresql.jar".to_owned());
    let java_ok = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !java_ok || !Path::new(&jar).exists() {
        skip("pgJDBC test: needs java 17 and libpostgresql-jdbc-java");
        return;
    }
    let server = EbbflowServer::start(&ServerOptions::default()).expect("server starts");
    let mut cmd = Command::new("java");
    // Java 11+ runs a single source file directly.
    cmd.arg("-cp")
        .arg(&jar)
        .arg(clients_dir().join("JdbcTest.java"))
        .arg(server.port.to_string());
    run(cmd, "JdbcTest.java");
}
