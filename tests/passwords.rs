//! Passwords: SCRAM-SHA-256 logins for users with a password, trust for
//! the others only on loopback, verifiers (never plaintext) persisted
//! across a restart, and a non-loopback listener refused without any
//! password.

mod common;

use std::process::Command;

use tokio_postgres::{Client, NoTls};

use common::{ebbflow_bin, free_port, EbbflowServer, ServerOptions, TempDir};

async fn login(
    port: u16,
    user: &str,
    password: Option<&str>,
) -> Result<Client, tokio_postgres::Error> {
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(port).user(user).dbname("dev");
    if let Some(p) = password {
        config.password(p);
    }
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

fn code(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| d.code().code().to_owned())
        .unwrap_or_else(|| e.to_string())
}

/// Every file under `dir`, read as bytes, searched for `needle`.
fn found_in_dir(dir: &std::path::Path, needle: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            found_in_dir(&p, needle)
        } else {
            std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
        }
    })
}

#[test]
fn scram_logins_and_persisted_verifiers() {
    let dir = TempDir::new("ebbflow-passwords").expect("temp dir");
    let opts = ServerOptions::default();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut server = EbbflowServer::start_in(&opts, dir.path()).expect("server starts");
    rt.block_on(async {
        let root = login(server.port, "root", None)
            .await
            .expect("root trusted on loopback");
        root.batch_execute("create user alice with password 'Wonder-land 1'; create user bob")
            .await
            .expect("create users");
        let err = root
            .batch_execute("create user alice with password 'x'")
            .await
            .expect_err("duplicate");
        assert_eq!(code(&err), "42710");
        root.batch_execute("create user if not exists alice")
            .await
            .expect("if not exists");

        let roles: Vec<String> = root
            .query("select rolname::varchar from pg_roles order by oid", &[])
            .await
            .expect("pg_roles")
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(roles, ["root", "alice", "bob"]);

        let alice = login(server.port, "alice", Some("Wonder-land 1"))
            .await
            .expect("alice logs in");
        let rows = alice
            .query("select current_user::varchar", &[])
            .await
            .expect("query");
        assert_eq!(rows[0].get::<_, String>(0), "alice");
        let err = login(server.port, "alice", Some("wrong"))
            .await
            .map(drop)
            .expect_err("wrong password");
        assert_eq!(code(&err), "28P01");
        // bob has no password: trusted, as root is, on loopback.
        login(server.port, "bob", None)
            .await
            .expect("bob trusted on loopback");

        root.batch_execute("alter user alice with password 'second'")
            .await
            .expect("alter");
        assert!(login(server.port, "alice", Some("Wonder-land 1"))
            .await
            .is_err());
        login(server.port, "alice", Some("second"))
            .await
            .expect("new password");
        let err = root
            .batch_execute("drop user carol")
            .await
            .expect_err("unknown");
        assert_eq!(code(&err), "42704");
        root.batch_execute("drop user bob; drop user if exists carol")
            .await
            .expect("drop");
        root.batch_execute("flush").await.expect("flush");
    });
    server.stop();
    assert!(
        !found_in_dir(dir.path(), b"Wonder-land 1") && !found_in_dir(dir.path(), b"second"),
        "a plaintext password was written to the data dir"
    );
    assert!(
        found_in_dir(dir.path(), b"SCRAM-SHA-256$4096:"),
        "no verifier persisted"
    );

    let server = EbbflowServer::start_in(&opts, dir.path()).expect("server restarts");
    rt.block_on(async {
        login(server.port, "alice", Some("second"))
            .await
            .expect("alice after restart");
        assert_eq!(
            code(
                &login(server.port, "alice", Some("x"))
                    .await
                    .map(drop)
                    .expect_err("wrong")
            ),
            "28P01"
        );
    });
}

#[test]
fn non_loopback_listener_needs_a_password() {
    let dir = TempDir::new("ebbflow-open").expect("temp dir");
    let out = Command::new(ebbflow_bin())
        .arg("playground")
        .arg("--listen")
        .arg(format!("0.0.0.0:{}", free_port()))
        .arg("--data-dir")
        .arg(dir.path())
        .env("RUST_LIB_BACKTRACE", "0")
        .output()
        .expect("run ebbflow");
    assert!(
        !out.status.success(),
        "the server started on 0.0.0.0 without a password"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no user has a password"), "{stderr}");
}
