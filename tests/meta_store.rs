//! The meta store (`ebbflow::meta::store`) against a real PostgreSQL 15:
//! the checks of its SQLite unit tests (fresh load, commit sequence,
//! catalog/extra kept, fencing, racing commits, lost-reply retry, reopen,
//! rollback of a failed commit, connect errors) plus what only a server
//! shows: concurrent schema creation, and commits while the server is down
//! (bounded `Io`, no panic, no hang) and after it is back (the pool
//! reconnects).
//!
//! Starts its own throwaway PostgreSQL servers; without PostgreSQL 15 the
//! tests print a skip message and pass, except under `CI=true`.

mod common;

use std::time::{Duration, Instant};

use ebbflow::meta::store::{FileRow, Loaded, MetaStore, MetaStoreError, VersionUpdate};

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

fn file(id: &str, level: u32, epoch: u64) -> FileRow {
    FileRow {
        object_id: id.to_string(),
        level,
        epoch,
        size: 1000 + epoch,
        info: format!("{{\"id\":\"{id}\"}}"),
    }
}

fn update<'a>(
    prev: u64,
    next: u64,
    epoch: u64,
    add: &'a [FileRow],
    remove: &'a [String],
) -> VersionUpdate<'a> {
    VersionUpdate {
        prev_version_id: prev,
        version_id: next,
        committed_epoch: epoch,
        add_files: add,
        remove_files: remove,
        extra: None,
        catalog: None,
    }
}

fn ids(loaded: &Loaded) -> Vec<&str> {
    loaded.files.iter().map(|f| f.object_id.as_str()).collect()
}

fn strings(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

/// Asserts a one-line `Connect` error and returns its message.
fn connect_message(r: Result<MetaStore, MetaStoreError>) -> String {
    match r {
        Err(MetaStoreError::Connect(m)) => {
            assert!(!m.contains('\n'), "not one line: {m:?}");
            assert!(m.starts_with("cannot connect to meta store "), "{m}");
            eprintln!("connect error: {m}");
            m
        }
        Err(e) => panic!("expected a connect error, got {e:?}"),
        Ok(s) => panic!("expected a connect error, connected to {}", s.describe()),
    }
}

/// A fresh database `db` on `pg` and its URL.
async fn fresh_db(pg: &common::Postgres, db: &str) -> String {
    pg.create_database(db)
        .await
        .unwrap_or_else(|e| panic!("create database {db}: {e}"));
    pg.db_url(db)
}

async fn connect(url: &str) -> MetaStore {
    MetaStore::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

#[test]
fn meta_store_on_postgres() {
    let Some(pg) = start_postgres() else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        fresh_store(&pg).await;
        commit_sequence(&pg).await;
        catalog_and_extra_kept(&pg).await;
        fencing(&pg).await;
        racing_commits(&pg).await;
        lost_reply_retry(&pg).await;
        reopen(&pg).await;
        failed_commit_rolls_back(&pg).await;
        large_batches(&pg).await;
        concurrent_schema_creation(&pg).await;
        newer_schema_refused(&pg).await;
        connect_errors(&pg).await;
    });
}

async fn fresh_store(pg: &common::Postgres) {
    let url = fresh_db(pg, "meta_fresh").await;
    let store = connect(&url).await;
    assert_eq!(store.describe(), url);
    assert_eq!(
        store.load().await.expect("load"),
        Loaded {
            version_id: 0,
            committed_epoch: 0,
            files: vec![],
            extra: String::new(),
            catalog: None,
        }
    );
}

async fn commit_sequence(pg: &common::Postgres) {
    let store = connect(&fresh_db(pg, "meta_sequence").await).await;
    let v1 = [file("a", 0, 10), file("b", 0, 10), file("c", 1, 9)];
    store.commit(&update(0, 1, 10, &v1, &[])).await.expect("v1");
    let loaded = store.load().await.expect("load");
    assert_eq!((loaded.version_id, loaded.committed_epoch), (1, 10));
    assert_eq!(loaded.files, v1.to_vec());

    let add = [file("d", 1, 20)];
    let remove = strings(&["a"]);
    store
        .commit(&update(1, 2, 20, &add, &remove))
        .await
        .expect("v2");
    let loaded = store.load().await.expect("load");
    assert_eq!((loaded.version_id, loaded.committed_epoch), (2, 20));
    assert_eq!(ids(&loaded), ["b", "c", "d"]);

    let add = [file("e", 2, 20)];
    let remove = strings(&["b", "c"]);
    store
        .commit(&update(2, 5, 30, &add, &remove))
        .await
        .expect("v3");
    let loaded = store.load().await.expect("load");
    assert_eq!((loaded.version_id, loaded.committed_epoch), (5, 30));
    assert_eq!(loaded.files, vec![file("d", 1, 20), file("e", 2, 20)]);

    let gone = strings(&["a", "d"]);
    store
        .commit(&update(5, 6, 40, &[], &gone))
        .await
        .expect("v4");
    let loaded = store.load().await.expect("load");
    assert_eq!((loaded.version_id, loaded.committed_epoch), (6, 40));
    assert_eq!(ids(&loaded), ["e"]);
}

async fn catalog_and_extra_kept(pg: &common::Postgres) {
    let store = connect(&fresh_db(pg, "meta_catalog").await).await;
    let catalog = vec![0u8, 1, 2, 255, 0, 7];
    let mut u = update(0, 1, 10, &[], &[]);
    u.extra = Some(r#"{"next_object":3}"#);
    u.catalog = Some(&catalog);
    store.commit(&u).await.expect("v1");
    store.commit(&update(1, 2, 20, &[], &[])).await.expect("v2");
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.version_id, 2);
    assert_eq!(loaded.extra, r#"{"next_object":3}"#);
    assert_eq!(loaded.catalog.as_deref(), Some(&catalog[..]));

    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut u = update(2, 3, 30, &[], &[]);
    u.extra = Some("");
    u.catalog = Some(&big);
    store.commit(&u).await.expect("v3");
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.extra, "");
    assert_eq!(loaded.catalog, Some(big));
}

async fn fencing(pg: &common::Postgres) {
    let url = fresh_db(pg, "meta_fencing").await;
    let first = connect(&url).await;
    let base = [file("a", 0, 10)];
    let mut u = update(0, 1, 10, &base, &[]);
    u.catalog = Some(b"catalog-1");
    u.extra = Some("extra-1");
    first.commit(&u).await.expect("v1");

    let second = connect(&url).await;
    let n = first.load().await.expect("load").version_id;
    assert_eq!(second.load().await.expect("load").version_id, n);
    let add1 = [file("b", 0, 20)];
    first
        .commit(&update(n, n + 1, 20, &add1, &[]))
        .await
        .expect("first commits N+1");

    let add2 = [file("z", 0, 20)];
    let remove2 = strings(&["a"]);
    let mut u = update(n, n + 1, 21, &add2, &remove2);
    u.catalog = Some(b"catalog-2");
    u.extra = Some("extra-2");
    match second.commit(&u).await {
        Err(MetaStoreError::Fenced { expected, found }) => {
            assert_eq!((expected, found), (n, n + 1))
        }
        other => panic!("expected fenced, got {other:?}"),
    }
    for store in [&first, &second] {
        let loaded = store.load().await.expect("load");
        assert_eq!(loaded.version_id, n + 1);
        assert_eq!(loaded.committed_epoch, 20);
        assert_eq!(ids(&loaded), ["a", "b"]);
        assert_eq!(loaded.extra, "extra-1");
        assert_eq!(loaded.catalog.as_deref(), Some(&b"catalog-1"[..]));
    }
}

async fn racing_commits(pg: &common::Postgres) {
    let url = fresh_db(pg, "meta_racing").await;
    let a = connect(&url).await;
    let b = connect(&url).await;
    for round in 0..20u64 {
        let base = a.load().await.expect("load").version_id;
        let fa = [file(&format!("a{round}"), 0, round)];
        let fb = [file(&format!("b{round}"), 0, round)];
        let ua = update(base, base + 1, round, &fa, &[]);
        let ub = update(base, base + 1, round, &fb, &[]);
        let (ra, rb) = tokio::join!(a.commit(&ua), b.commit(&ub));
        let winner = match (&ra, &rb) {
            (Ok(()), Err(MetaStoreError::Fenced { .. })) => "a",
            (Err(MetaStoreError::Fenced { .. }), Ok(())) => "b",
            other => panic!("round {round}: expected one winner, got {other:?}"),
        };
        let loaded = b.load().await.expect("load");
        assert_eq!(loaded.version_id, base + 1);
        let live = format!("{winner}{round}");
        assert!(ids(&loaded).contains(&live.as_str()));
        assert_eq!(loaded.files.len() as u64, round + 1);
    }
}

async fn lost_reply_retry(pg: &common::Postgres) {
    let url = fresh_db(pg, "meta_retry").await;
    let store = connect(&url).await;
    let add = [file("a", 0, 10), file("b", 0, 10)];
    let u = update(0, 1, 10, &add, &[]);
    store.commit(&u).await.expect("first attempt");
    store.commit(&u).await.expect("retry");
    store.clone().commit(&u).await.expect("retry from a clone");
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.version_id, 1);
    assert_eq!(ids(&loaded), ["a", "b"]);

    let other = connect(&url).await;
    assert!(matches!(
        other.commit(&u).await,
        Err(MetaStoreError::Fenced {
            expected: 0,
            found: 1
        })
    ));
    let mut different = u;
    different.committed_epoch = 11;
    assert!(matches!(
        store.commit(&different).await,
        Err(MetaStoreError::Fenced {
            expected: 0,
            found: 1
        })
    ));
}

async fn reopen(pg: &common::Postgres) {
    let url = fresh_db(pg, "meta_reopen").await;
    let catalog = b"the catalog".to_vec();
    let add = [file("a", 0, 10), file("b", 3, 7)];
    {
        let store = connect(&url).await;
        let mut u = update(0, 4, 10, &add, &[]);
        u.extra = Some("{}");
        u.catalog = Some(&catalog);
        store.commit(&u).await.expect("commit");
    }
    let expected = Loaded {
        version_id: 4,
        committed_epoch: 10,
        files: add.to_vec(),
        extra: "{}".into(),
        catalog: Some(catalog),
    };
    assert_eq!(connect(&url).await.load().await.expect("load"), expected);
    assert_eq!(connect(&url).await.load().await.expect("load"), expected);
}

async fn failed_commit_rolls_back(pg: &common::Postgres) {
    let store = connect(&fresh_db(pg, "meta_rollback").await).await;
    let add = [file("a", 0, 10)];
    store
        .commit(&update(0, 1, 10, &add, &[]))
        .await
        .expect("v1");
    let before = store.load().await.expect("load");
    let dup = [file("b", 0, 20), file("a", 0, 20)];
    let mut u = update(1, 2, 20, &dup, &[]);
    u.catalog = Some(b"nope");
    u.extra = Some("nope");
    match store.commit(&u).await {
        Err(MetaStoreError::Io(m)) => {
            assert!(!m.contains('\n'), "{m}");
            assert!(m.contains("23505"), "unique violation expected: {m}");
            eprintln!("duplicate file: {m}");
        }
        other => panic!("expected io, got {other:?}"),
    }
    assert_eq!(store.load().await.expect("load"), before);
    assert!(matches!(
        store.commit(&update(1, 2, u64::MAX, &[], &[])).await,
        Err(MetaStoreError::Io(_))
    ));
    store
        .commit(&update(1, 2, 20, &dup[..1], &[]))
        .await
        .expect("v2");
    assert_eq!(ids(&store.load().await.expect("load")), ["a", "b"]);
}

async fn large_batches(pg: &common::Postgres) {
    let store = connect(&fresh_db(pg, "meta_batches").await).await;
    let add: Vec<FileRow> = (0..1234u64)
        .map(|i| file(&format!("f{i:05}"), (i % 7) as u32, i))
        .collect();
    store
        .commit(&update(0, 1, 10, &add, &[]))
        .await
        .expect("add");
    assert_eq!(store.load().await.expect("load").files, add);
    let remove: Vec<String> = add.iter().take(1111).map(|f| f.object_id.clone()).collect();
    store
        .commit(&update(1, 2, 20, &[], &remove))
        .await
        .expect("remove");
    assert_eq!(
        store.load().await.expect("load").files,
        add[1111..].to_vec()
    );
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
    connect(&url).await;
    let client = common::open(&pg.conn_str(db)).await.expect("open");
    common::rows::run(
        &client,
        "UPDATE ebbflow_schema_version SET version = 99 WHERE id = 1",
    )
    .await
    .expect("bump schema version");
    let m = connect_message(MetaStore::connect(&url).await);
    assert!(m.contains("schema version 99"), "{m}");
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
