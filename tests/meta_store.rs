//! The meta store (`ebbflow::meta::store`) against a real PostgreSQL 15:
//! the backend-independent checks its SQLite unit tests also run
//! (`ebbflow::meta::store::checks`: fresh load, commit sequence,
//! catalog/extra kept, fencing, racing commits, lost-reply retry, reopen,
//! rollback of a failed commit, large batches, newer schema refused) plus
//! what only a server shows: connect errors, concurrent schema creation,
//! and commits while the server is down (bounded `Io`, no panic, no hang)
//! and after it is back (the pool reconnects).
//!
//! Starts its own throwaway PostgreSQL servers; without PostgreSQL 15 the
//! tests print a skip message and pass, except under `CI=true`.

mod common;

use std::time::{Duration, Instant};

use ebbflow::meta::store::checks::{self, connect, connect_message, file, ids, update};
use ebbflow::meta::store::{MetaStore, MetaStoreError};

/// Longest a failing operation may take before we call it a hang (the
/// store's own bound is 30 s; refused connections fail after ~5 s).
const HANG: Duration = Duration::from_secs(45);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Skips (returns `None`) when PostgreSQL cannot be started, unless in CI.
fn start_postgres() -> Option<common::Postgres> {
    match common::Postgres::start() {
        Ok(pg) => Some(pg),
        Err(e) if in_ci() => panic!("CI=true but PostgreSQL 15 cannot be started: {e}"),
        Err(e) => {
            eprintln!("skipping the meta store PostgreSQL tests: {e}");
            None
        }
    }
}

/// A fresh database `db` on `pg` and its URL.
async fn fresh_db(pg: &common::Postgres, db: &str) -> String {
    pg.create_database(db)
        .await
        .unwrap_or_else(|e| panic!("create database {db}: {e}"));
    pg.db_url(db)
}

#[test]
fn meta_store_on_postgres() {
    let Some(pg) = start_postgres() else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        checks::fresh_store_loads_version_zero(&fresh_db(&pg, "meta_fresh").await).await;
        checks::commit_sequence_tracks_the_live_files(&fresh_db(&pg, "meta_sequence").await).await;
        checks::catalog_and_extra_are_kept_when_none(&fresh_db(&pg, "meta_catalog").await).await;
        checks::second_meta_on_the_same_store_is_fenced(&fresh_db(&pg, "meta_fencing").await).await;
        checks::racing_commits_have_exactly_one_winner(&fresh_db(&pg, "meta_racing").await).await;
        checks::retry_of_a_landed_commit_is_ok_for_the_same_instance_only(
            &fresh_db(&pg, "meta_retry").await,
        )
        .await;
        checks::reopened_store_loads_what_was_committed(&fresh_db(&pg, "meta_reopen").await).await;
        failed_commit_rolls_back(&pg).await;
        checks::large_batches_are_chunked(&fresh_db(&pg, "meta_batches").await).await;
        concurrent_schema_creation(&pg).await;
        newer_schema_refused(&pg).await;
        connect_errors(&pg).await;
    });
}

/// The shared check, plus the SQLSTATE of the duplicate file failure.
async fn failed_commit_rolls_back(pg: &common::Postgres) {
    let m =
        checks::invalid_updates_are_refused_without_writing(&fresh_db(pg, "meta_rollback").await)
            .await;
    assert!(m.contains("23505"), "unique violation expected: {m}");
}

async fn concurrent_schema_creation(pg: &common::Postgres) {
    let url = fresh_db(pg, "meta_concurrent_schema").await;
    let connects: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { MetaStore::connect(&url).await })
        })
        .collect();
    for c in connects {
        let store = c
            .await
            .expect("join")
            .expect("concurrent connect on a fresh database");
        assert_eq!(store.load().await.expect("load").version_id, 0);
    }
}

async fn newer_schema_refused(pg: &common::Postgres) {
    let db = "meta_newer_schema";
    let url = fresh_db(pg, db).await;
    let conn_str = pg.conn_str(db);
    checks::newer_schema_is_refused(&url, async |_store, sql| {
        let client = common::open(&conn_str).await.expect("open");
        common::rows::run(&client, sql)
            .await
            .expect("bump schema version");
    })
    .await;
}

async fn connect_errors(pg: &common::Postgres) {
    let t = Instant::now();
    let m = connect_message(
        MetaStore::connect(&format!(
            "postgres://postgres:secret@127.0.0.1:{}/no_such_db",
            pg.port
        ))
        .await,
    );
    assert!(m.contains("no_such_db"), "{m}");
    assert!(!m.contains("secret"), "{m}");
    assert!(m.contains("postgres:***@"), "{m}");
    let m = connect_message(
        MetaStore::connect(&format!(
            "postgres://no_such_role@127.0.0.1:{}/postgres",
            pg.port
        ))
        .await,
    );
    assert!(m.contains("no_such_role"), "{m}");
    let closed = common::free_port();
    connect_message(
        MetaStore::connect(&format!("postgres://postgres@127.0.0.1:{closed}/postgres")).await,
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

/// Commits while the server is down fail with `Io` within a bound; once the
/// server is back the same `MetaStore` commits again (the pool reconnects),
/// and retrying the failed update succeeds.
#[test]
fn meta_store_survives_postgres_restarts() {
    // Durable: stopped abruptly, it must keep every commit it acknowledged.
    let mut pg = match common::Postgres::start_durable() {
        Ok(pg) => pg,
        Err(e) if in_ci() => panic!("CI=true but PostgreSQL 15 cannot be started: {e}"),
        Err(e) => {
            eprintln!("skipping the meta store PostgreSQL restart test: {e}");
            return;
        }
    };
    let rt = runtime();
    rt.block_on(async {
        let store = connect(&pg.url()).await;
        let mut version = 0u64;
        let mut live = Vec::new();
        for (round, mode) in ["fast", "immediate"].into_iter().enumerate() {
            let round = round as u64;
            let added = [file(&format!("r{round}"), 0, round)];
            let u = update(version, version + 1, 10 * (round + 1), &added, &[]);
            store.commit(&u).await.expect("commit while up");
            version += 1;
            live.push(added[0].object_id.clone());

            pg.stop_with(mode);
            let added = [file(&format!("down{round}"), 0, round)];
            let down = update(version, version + 1, 10 * (round + 1) + 5, &added, &[]);
            let t = Instant::now();
            match tokio::time::timeout(HANG, store.commit(&down)).await {
                Ok(Err(MetaStoreError::Io(m))) => {
                    assert!(!m.contains('\n'), "{m}");
                    eprintln!("commit while stopped ({mode}) after {:?}: {m}", t.elapsed());
                }
                Ok(other) => panic!("expected io while the server is down, got {other:?}"),
                Err(_) => panic!("commit hung for {HANG:?} while the server was down"),
            }
            match tokio::time::timeout(HANG, store.load()).await {
                Ok(Err(MetaStoreError::Io(_))) => {}
                Ok(other) => panic!("expected io while the server is down, got {other:?}"),
                Err(_) => panic!("load hung for {HANG:?} while the server was down"),
            }

            pg.restart().expect("restart postgres");
            // Retrying the failed update once the server is back succeeds.
            store.commit(&down).await.expect("retry after restart");
            version += 1;
            live.push(added[0].object_id.clone());
            let loaded = store.load().await.expect("load after restart");
            assert_eq!(loaded.version_id, version);
            live.sort();
            assert_eq!(
                ids(&loaded),
                live.iter().map(String::as_str).collect::<Vec<_>>()
            );
        }

        // A restart between two commits is invisible: idle connections are
        // checked before use and replaced.
        pg.stop_with("fast");
        pg.restart().expect("restart postgres");
        store
            .commit(&update(version, version + 1, 100, &[], &[]))
            .await
            .expect("commit after a quiet restart");
        assert_eq!(store.load().await.expect("load").version_id, version + 1);
    });
}
