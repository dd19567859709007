//! State written by an earlier version still loads (issue 34, point 3).
//!
//! `tests/fixtures/legacy_keys_v0/` is a data directory written by
//! ebbflow c6facc8, whose state keys held numerics and intervals as
//! written (`1.0`, `'24 hours'`); `tests/fixtures/legacy_keys_v0.sql` says
//! how it was made. Today's ebbflow starts over a copy of it: meta
//! re-encodes those keys once, and then every MV keeps its rows, shows
//! its groups as before, and takes new rows written another way (`1.00`
//! into the group of `1.0`, `2.000` joining `2.0`, an upsert of `1.00`
//! over the row of `1.0`), also after a scale and a restart, when nothing
//! is re-encoded again.

mod common;

use std::path::Path;
use std::time::Duration;

use common::rows::{must, Row};
use common::{open, EbbflowServer, ServerOptions, TempDir};

const LIMIT: Duration = Duration::from_secs(60);

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn text(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|c| c.clone().unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

async fn query(c: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    text(&must(c, sql, LIMIT).await.unwrap_or_else(|e| panic!("{e}")))
}

/// Whether the server's log says it re-encoded state keys.
fn migrated(server: &EbbflowServer) -> bool {
    server
        .log
        .since(0)
        .iter()
        .any(|l| l.contains("state keys re-encoded"))
}

/// What the MVs hold after the new rows (see [`add_rows`]).
async fn check_after_new_rows(c: &tokio_postgres::Client, when: &str) {
    let checks: &[(&str, &[&str])] = &[
        (
            "SELECT k::text, c, s FROM gm ORDER BY k",
            &[
                "-4.000 2 46",
                "0.00 2 34",
                "1.0 2 11",
                "2.50 2 22",
                "3 1 3",
                "7.5 2 55",
            ],
        ),
        ("SELECT count(*), sum(dk) = 20 FROM d", &["6 t"]),
        (
            "SELECT k::text, v FROM pm ORDER BY k",
            &["0 8", "1.00 9", "3 3"],
        ),
        (
            "SELECT k::text, v FROM p ORDER BY k",
            &["0 8", "1.00 9", "3 3"],
        ),
        (
            "SELECT lid, rid, lk::text, rk::text FROM j ORDER BY lid, rid",
            &[
                "1 1 2.0 2.0",
                "1 4 2.0 2.000",
                "2 2 5.00 5.00",
                "4 2 5 5.00",
            ],
        ),
        (
            "SELECT i::text, c, s FROM ivm ORDER BY s",
            &["24:00:00 2 11", "1 mon 2 22", "1 day 02:00:00 2 33"],
        ),
        (
            "SELECT k::float8, v FROM top ORDER BY k DESC, v",
            &["7.5 5", "7.5 50", "3 3"],
        ),
    ];
    for (sql, want) in checks {
        let got = query(c, sql).await;
        assert_eq!(got, *want, "{when}: {sql}");
    }
}

/// Rows equal to stored keys but written another way.
async fn add_rows(c: &tokio_postgres::Client) {
    for sql in [
        "INSERT INTO g VALUES (1.00, 10), (2.5, 20), (-0.0, 30), (-4, 40), (7.50, 50)",
        "INSERT INTO p VALUES (1.00, 9), (0, 8)",
        "DELETE FROM p WHERE k = 2.5",
        "INSERT INTO r VALUES (4, 2.000)",
        "INSERT INTO l VALUES (4, 5)",
        "DELETE FROM r WHERE id = 3",
        "INSERT INTO iv VALUES ('1 day', 10), ('30 days', 20), ('26 hours', 30)",
        "FLUSH",
    ] {
        must(c, sql, LIMIT).await.unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn state_of_an_earlier_version_loads() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy_keys_v0");
    let dir = TempDir::new("ebbflow-legacy").expect("temp dir");
    copy_dir(&fixture, dir.path()).expect("copy the fixture");
    let opts = ServerOptions::default();

    let mut server = EbbflowServer::start_in(&opts, dir.path())
        .unwrap_or_else(|e| panic!("ebbflow did not start over the old state: {e}"));
    assert!(
        migrated(&server),
        "no migration in the log:\n{}",
        server.log.tail(30)
    );
    rt.block_on(async {
        let c = open(&server.conn_str()).await.expect("connect");
        // The old rows, as they were.
        assert_eq!(
            query(&c, "SELECT k::text, c, s FROM gm ORDER BY k").await,
            [
                "-4.000 1 6",
                "0.00 1 4",
                "1.0 1 1",
                "2.50 1 2",
                "3 1 3",
                "7.5 1 5"
            ]
        );
        assert_eq!(
            query(&c, "SELECT k::text, v FROM p ORDER BY k").await,
            ["0.0 4", "1.0 1", "2.50 2", "3 3"]
        );
        add_rows(&c).await;
        check_after_new_rows(&c, "after the migration").await;
        for sql in [
            "ALTER MATERIALIZED VIEW gm SET PARALLELISM = 3",
            "ALTER MATERIALIZED VIEW j SET PARALLELISM = 1",
            "ALTER MATERIALIZED VIEW ivm SET PARALLELISM = 3",
        ] {
            must(&c, sql, LIMIT).await.unwrap_or_else(|e| panic!("{e}"));
        }
        check_after_new_rows(&c, "after a scale").await;
    });
    server.stop();
    drop(server);

    let server = EbbflowServer::start_in(&opts, dir.path())
        .unwrap_or_else(|e| panic!("ebbflow did not restart: {e}"));
    assert!(
        !migrated(&server),
        "the migration ran twice:\n{}",
        server.log.tail(30)
    );
    rt.block_on(async {
        let c = open(&server.conn_str()).await.expect("connect");
        check_after_new_rows(&c, "after a restart").await;
        must(&c, "INSERT INTO g VALUES (3.0, 100)", LIMIT)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        must(&c, "FLUSH", LIMIT)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            query(&c, "SELECT k::text, c, s FROM gm WHERE k = 3").await,
            ["3 2 103"]
        );
    });
    println!("legacy_state: 1 passed, 0 failed");
}
