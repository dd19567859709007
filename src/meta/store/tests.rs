//! Unit tests of the meta store on SQLite (in memory and on files). The same
//! checks against PostgreSQL are in `tests/meta_store.rs`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::*;

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "ebbflow-metastore-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// A `sqlite://` URL for `name` inside this directory.
    fn sqlite_url(&self, name: &str) -> String {
        format!("sqlite://{}", self.0.join(name).display())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
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

async fn memory() -> MetaStore {
    MetaStore::connect("sqlite::memory:")
        .await
        .expect("connect sqlite::memory:")
}

fn fresh() -> Loaded {
    Loaded {
        version_id: 0,
        committed_epoch: 0,
        files: vec![],
        extra: String::new(),
        catalog: None,
    }
}

/// Asserts `e` is a one-line `Connect` error and returns its message.
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

#[tokio::test]
async fn fresh_store_loads_version_zero() {
    let store = memory().await;
    assert_eq!(store.load().await.expect("load"), fresh());
    assert_eq!(store.describe(), "sqlite::memory:");

    let dir = TempDir::new();
    let store = MetaStore::connect(&dir.sqlite_url("meta.db"))
        .await
        .expect("connect file");
    assert_eq!(store.load().await.expect("load"), fresh());
}

#[tokio::test]
async fn separate_memory_stores_do_not_share_data() {
    let a = memory().await;
    let b = memory().await;
    a.commit(&update(0, 1, 10, &[file("a", 0, 10)], &[]))
        .await
        .expect("commit");
    assert_eq!(b.load().await.expect("load").version_id, 0);
}

#[tokio::test]
async fn commit_sequence_tracks_the_live_files() {
    let store = memory().await;
    let v1 = [file("a", 0, 10), file("b", 0, 10), file("c", 1, 9)];
    store.commit(&update(0, 1, 10, &v1, &[])).await.expect("v1");
    let loaded = store.load().await.expect("load v1");
    assert_eq!((loaded.version_id, loaded.committed_epoch), (1, 10));
    assert_eq!(loaded.files, v1.to_vec());

    let v2_add = [file("d", 1, 20)];
    let v2_remove = strings(&["a"]);
    store
        .commit(&update(1, 2, 20, &v2_add, &v2_remove))
        .await
        .expect("v2");
    let loaded = store.load().await.expect("load v2");
    assert_eq!((loaded.version_id, loaded.committed_epoch), (2, 20));
    assert_eq!(ids(&loaded), ["b", "c", "d"]);
    assert_eq!(loaded.files[2], v2_add[0]);

    // Compaction: b and c into e at level 2; version ids may skip.
    let v3_add = [file("e", 2, 20)];
    let v3_remove = strings(&["b", "c"]);
    store
        .commit(&update(2, 5, 30, &v3_add, &v3_remove))
        .await
        .expect("v3");
    let loaded = store.load().await.expect("load v3");
    assert_eq!((loaded.version_id, loaded.committed_epoch), (5, 30));
    assert_eq!(loaded.files, vec![file("d", 1, 20), file("e", 2, 20)]);

    // An empty delta still moves the version and the epoch.
    store.commit(&update(5, 6, 40, &[], &[])).await.expect("v4");
    let loaded = store.load().await.expect("load v4");
    assert_eq!((loaded.version_id, loaded.committed_epoch), (6, 40));
    assert_eq!(ids(&loaded), ["d", "e"]);

    // Removing a file that is not live is tolerated.
    let gone = strings(&["a", "d"]);
    store
        .commit(&update(6, 7, 50, &[], &gone))
        .await
        .expect("v5");
    assert_eq!(ids(&store.load().await.expect("load v5")), ["e"]);
}

#[tokio::test]
async fn catalog_and_extra_are_kept_when_none() {
    let store = memory().await;
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

    let mut u = update(2, 3, 30, &[], &[]);
    u.extra = Some("");
    u.catalog = Some(&[]);
    store.commit(&u).await.expect("v3");
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.extra, "");
    assert_eq!(loaded.catalog, Some(vec![]));

    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut u = update(3, 4, 40, &[], &[]);
    u.catalog = Some(&big);
    store.commit(&u).await.expect("v4");
    assert_eq!(store.load().await.expect("load").catalog, Some(big));
}

#[tokio::test]
async fn second_meta_on_the_same_file_is_fenced() {
    let dir = TempDir::new();
    let url = dir.sqlite_url("meta.db");
    let first = MetaStore::connect(&url).await.expect("connect first");
    let base = [file("a", 0, 10)];
    let mut u = update(0, 1, 10, &base, &[]);
    u.catalog = Some(b"catalog-1");
    u.extra = Some("extra-1");
    first.commit(&u).await.expect("v1");

    let second = MetaStore::connect(&url).await.expect("connect second");
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
            assert_eq!((expected, found), (n, n + 1));
        }
        other => panic!("expected fenced, got {other:?}"),
    }
    let err = second.commit(&u).await.expect_err("still fenced");
    assert_eq!(
        err.to_string(),
        "meta store fenced: expected version 1 but the store has version 2"
    );

    // Nothing of the fenced commit is visible, from either instance.
    for store in [&first, &second] {
        let loaded = store.load().await.expect("load");
        assert_eq!(loaded.version_id, n + 1);
        assert_eq!(loaded.committed_epoch, 20);
        assert_eq!(ids(&loaded), ["a", "b"]);
        assert_eq!(loaded.extra, "extra-1");
        assert_eq!(loaded.catalog.as_deref(), Some(&b"catalog-1"[..]));
    }
}

#[tokio::test]
async fn racing_commits_have_exactly_one_winner() {
    let dir = TempDir::new();
    let url = dir.sqlite_url("meta.db");
    let a = MetaStore::connect(&url).await.expect("connect a");
    let b = MetaStore::connect(&url).await.expect("connect b");
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
        let loaded = a.load().await.expect("load");
        assert_eq!(loaded.version_id, base + 1);
        let live = format!("{winner}{round}");
        assert!(ids(&loaded).contains(&live.as_str()));
        assert_eq!(loaded.files.len() as u64, round + 1);
    }
}

#[tokio::test]
async fn retry_of_a_landed_commit_is_ok_for_the_same_instance_only() {
    let dir = TempDir::new();
    let url = dir.sqlite_url("meta.db");
    let store = MetaStore::connect(&url).await.expect("connect");
    let add = [file("a", 0, 10), file("b", 0, 10)];
    let u = update(0, 1, 10, &add, &[]);
    store.commit(&u).await.expect("first attempt");
    // The reply was "lost": the same instance (or a clone) retries.
    store.commit(&u).await.expect("retry");
    store.clone().commit(&u).await.expect("retry from a clone");
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.version_id, 1);
    assert_eq!(ids(&loaded), ["a", "b"]);

    // Another instance with the very same update did not write version 1.
    let other = MetaStore::connect(&url).await.expect("connect other");
    assert!(matches!(
        other.commit(&u).await,
        Err(MetaStoreError::Fenced {
            expected: 0,
            found: 1
        })
    ));
    // Same instance, same version id, other epoch: not the landed update.
    let mut different = u;
    different.committed_epoch = 11;
    assert!(matches!(
        store.commit(&different).await,
        Err(MetaStoreError::Fenced {
            expected: 0,
            found: 1
        })
    ));
    // Once the store has moved past it, the old update is fenced too.
    store.commit(&update(1, 2, 20, &[], &[])).await.expect("v2");
    assert!(matches!(
        store.commit(&u).await,
        Err(MetaStoreError::Fenced {
            expected: 0,
            found: 2
        })
    ));
}

#[tokio::test]
async fn reopened_store_loads_what_was_committed() {
    let dir = TempDir::new();
    // Parent directories are created.
    let url = dir.sqlite_url("nested/deeper/meta.db");
    let catalog = b"the catalog".to_vec();
    let add = [file("a", 0, 10), file("b", 3, 7)];
    {
        let store = MetaStore::connect(&url).await.expect("connect");
        let mut u = update(0, 4, 10, &add, &[]);
        u.extra = Some("{}");
        u.catalog = Some(&catalog);
        store.commit(&u).await.expect("commit");
    }
    assert!(dir.path().join("nested/deeper/meta.db").exists());
    let expected = Loaded {
        version_id: 4,
        committed_epoch: 10,
        files: add.to_vec(),
        extra: "{}".into(),
        catalog: Some(catalog),
    };
    let store = MetaStore::connect(&url).await.expect("reconnect");
    assert_eq!(store.load().await.expect("load"), expected);
    // Schema creation again on a third connect is a no-op.
    let again = MetaStore::connect(&url).await.expect("third connect");
    assert_eq!(again.load().await.expect("load"), expected);
    // `sqlite:` without slashes names the same file.
    let plain = format!(
        "sqlite:{}",
        dir.path().join("nested/deeper/meta.db").display()
    );
    let plain = MetaStore::connect(&plain).await.expect("sqlite: url");
    assert_eq!(plain.load().await.expect("load"), expected);
}

#[tokio::test]
async fn sqlite_file_is_in_wal_mode_with_full_sync() {
    let dir = TempDir::new();
    let store = MetaStore::connect(&dir.sqlite_url("meta.db"))
        .await
        .expect("connect");
    let Backend::Sqlite(pool) = &store.backend else {
        panic!("not sqlite");
    };
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(pool)
        .await
        .expect("journal_mode");
    assert_eq!(mode, "wal");
    let sync: i64 = sqlx::query_scalar("PRAGMA synchronous")
        .fetch_one(pool)
        .await
        .expect("synchronous");
    assert_eq!(sync, 2, "synchronous = FULL");
}

#[tokio::test]
async fn bad_urls_fail_fast_with_one_line_connect_errors() {
    let started = Instant::now();
    let m = connect_message(MetaStore::connect("mysql://root@localhost/db").await);
    assert!(m.contains("unsupported url scheme"), "{m}");
    let m = connect_message(MetaStore::connect("nonsense").await);
    assert!(m.contains("unsupported url scheme"), "{m}");

    // A SQLite path whose parent is a regular file (root cannot create it
    // either).
    let dir = TempDir::new();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").expect("write blocker");
    let url = format!("sqlite://{}/sub/meta.db", blocker.display());
    let m = connect_message(MetaStore::connect(&url).await);
    assert!(m.contains(&url), "{m}");
    assert!(m.contains("cannot create directory"), "{m}");
    let url = format!("sqlite://{}/meta.db", blocker.display());
    let m = connect_message(MetaStore::connect(&url).await);
    assert!(m.contains(&url), "{m}");
    // A directory where the file should be.
    let url = format!("sqlite://{}", dir.path().display());
    connect_message(MetaStore::connect(&url).await);
    // An unknown sqlite URL parameter.
    let url = format!("{}?bogus=1", dir.sqlite_url("meta.db"));
    let m = connect_message(MetaStore::connect(&url).await);
    assert!(m.contains("bad sqlite url"), "{m}");

    // Nothing listens on this port: refused at once, password redacted.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("postgres://meta:s3cret@127.0.0.1:{port}/ebbflow");
    let t = Instant::now();
    let m = connect_message(MetaStore::connect(&url).await);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "slow: {:?}",
        t.elapsed()
    );
    assert!(!m.contains("s3cret"), "{m}");
    assert!(
        m.contains(&format!("postgres://meta:***@127.0.0.1:{port}/ebbflow")),
        "{m}"
    );
    let m = connect_message(MetaStore::connect("postgres://u:pw@127.0.0.1:notaport/db").await);
    assert!(m.contains("bad postgres url"), "{m}");
    assert!(!m.contains(":pw@"), "{m}");

    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn newer_schema_is_refused() {
    let dir = TempDir::new();
    let url = dir.sqlite_url("meta.db");
    let store = MetaStore::connect(&url).await.expect("connect");
    let Backend::Sqlite(pool) = &store.backend else {
        panic!("not sqlite");
    };
    sqlx::query("UPDATE ebbflow_schema_version SET version = 99 WHERE id = 1")
        .execute(pool)
        .await
        .expect("bump schema version");
    let m = connect_message(MetaStore::connect(&url).await);
    assert!(m.contains("schema version 99"), "{m}");
    assert!(m.contains("upgrade ebbflow"), "{m}");
}

#[tokio::test]
async fn invalid_updates_are_refused_without_writing() {
    let store = memory().await;
    let add = [file("a", 0, 10)];
    store
        .commit(&update(0, 1, 10, &add, &[]))
        .await
        .expect("v1");
    let before = store.load().await.expect("load");

    // The version id must grow.
    let err = store
        .commit(&update(1, 1, 11, &[], &[]))
        .await
        .expect_err("same id");
    assert!(matches!(&err, MetaStoreError::Io(m) if m.contains("does not follow")));
    // Values must fit in BIGINT.
    let err = store
        .commit(&update(1, 2, u64::MAX, &[], &[]))
        .await
        .expect_err("epoch too big");
    assert!(matches!(&err, MetaStoreError::Io(m) if m.contains("above the storable maximum")));
    // A file that is already live: constraint violation, all rolled back.
    let dup = [file("b", 0, 20), file("a", 0, 20)];
    let mut u = update(1, 2, 20, &dup, &[]);
    u.catalog = Some(b"nope");
    let err = store.commit(&u).await.expect_err("duplicate file");
    match &err {
        MetaStoreError::Io(m) => {
            assert!(
                m.starts_with("meta store sqlite::memory:: commit failed: "),
                "{m}"
            );
            assert!(!m.contains('\n'), "{m}");
        }
        other => panic!("expected io, got {other:?}"),
    }
    assert_eq!(store.load().await.expect("load"), before);
    // The store is still usable afterwards.
    store
        .commit(&update(1, 2, 20, &dup[..1], &[]))
        .await
        .expect("v2");
    assert_eq!(ids(&store.load().await.expect("load")), ["a", "b"]);
}

#[tokio::test]
async fn large_batches_are_chunked() {
    let store = memory().await;
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

#[test]
fn urls_are_redacted() {
    for (url, shown) in [
        ("postgres://u:pw@h:5432/db", "postgres://u:***@h:5432/db"),
        ("postgres://u@h/db", "postgres://u@h/db"),
        ("postgresql://u:p%40ss@h", "postgresql://u:***@h"),
        (
            "postgres://h/db?user=u&password=x&sslmode=disable",
            "postgres://h/db?user=u&password=***&sslmode=disable",
        ),
        ("sqlite:///var/lib/meta.db", "sqlite:///var/lib/meta.db"),
        ("sqlite::memory:", "sqlite::memory:"),
        ("sqlite:meta.db?password=x", "sqlite:meta.db?password=***"),
    ] {
        assert_eq!(redact_url(url), shown, "{url}");
    }
}

#[test]
fn messages_are_one_line() {
    assert_eq!(one_line("a\nb\r\n  c\n"), "a b c");
    assert_eq!(placeholders(3, 4), "$4, $5, $6");
}
