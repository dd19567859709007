//! The real `psql` against the real server: the `\d` family of
//! meta-commands, whose catalog queries (`pg_catalog.pg_class`, …) must
//! all bind and run, compared with `e2e_test/psql/meta_commands.expected`.
//!
//! The schema is `e2e_test/psql/schema.sql`. `UPDATE_EXPECT=1` rewrites
//! the expected file with what psql printed (review the diff). `PSQL`
//! names another psql binary.

mod common;

use std::path::Path;
use std::process::Command;

use common::{EbbflowServer, ServerOptions};

/// The meta-commands checked, in order.
const COMMANDS: &[&str] = &[
    r"\d",
    r"\dt",
    r"\dm",
    r"\dv",
    r"\dn",
    r"\l",
    r"\du",
    r"\df",
    r"\d orders",
    r"\d events",
    r"\d+ orders",
    r"\dt+",
    r"\d+ revenue",
];

/// Run one psql invocation; stdout then stderr, as a user would read them.
fn psql(port: u16, args: &[&str]) -> String {
    let bin = std::env::var("PSQL").unwrap_or_else(|_| "psql".into());
    let port = port.to_string();
    let out = Command::new(&bin)
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-d",
            "dev",
            "-U",
            "root",
        ])
        .args(["-P", "pager=off", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .env_remove("PGPASSWORD")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e} (install postgresql-client)"));
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn psql_meta_commands() {
    let server = EbbflowServer::start(&ServerOptions::default()).expect("server starts");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e_test/psql");
    let schema = dir.join("schema.sql");
    let setup = psql(server.port, &["-q", "-f", &schema.to_string_lossy()]);
    assert!(setup.trim().is_empty(), "schema.sql failed:\n{setup}");

    let mut actual = String::new();
    for cmd in COMMANDS {
        actual.push_str(&format!("=== {cmd}\n"));
        actual.push_str(&psql(server.port, &["-c", cmd]));
        actual.push('\n');
    }

    let expected_path = dir.join("meta_commands.expected");
    if std::env::var("UPDATE_EXPECT").is_ok_and(|v| v == "1") {
        std::fs::write(&expected_path, &actual).expect("write expected file");
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (e, a))| e != a)
            .take(10)
            .map(|(i, (e, a))| format!("line {}:\n- {e}\n+ {a}", i + 1))
            .collect();
        panic!(
            "psql output differs from {} (UPDATE_EXPECT=1 rewrites it):\n{}\n\
             --- actual ---\n{actual}",
            expected_path.display(),
            diff.join("\n")
        );
    }
}
