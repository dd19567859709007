//! Unit tests of the meta store on SQLite (in memory and on files): the
//! backend-independent checks of `checks` (also run against PostgreSQL by
//! `tests/meta_store.rs`) plus what is specific to SQLite and to URLs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::checks::{self, connect_message, file, fresh, update};
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

async fn memory() -> MetaStore {
    MetaStore::connect("sqlite::memory:")
        .await
        .expect("connect sqlite::memory:")
}

#[tokio::test]
async fn fresh_store_loads_version_zero() {
    checks::fresh_store_loads_version_zero("sqlite::memory:").await;
    let dir = TempDir::new();
    checks::fresh_store_loads_version_zero(&dir.sqlite_url("meta.db")).await;
}

#[tokio::test]
async fn separate_memory_stores_do_not_share_data() {
    let a = memory().await;
    let b = memory().await;
    a.commit(&update(0, 1, 10, &[file("a", 0, 10)], &[]))
        .await
        .expect("commit");
    assert_eq!(b.load().await.expect("load"), fresh());
}

#[tokio::test]
async fn commit_sequence_tracks_the_live_files() {
    checks::commit_sequence_tracks_the_live_files("sqlite::memory:").await;
}

#[tokio::test]
async fn catalog_and_extra_are_kept_when_none() {
    checks::catalog_and_extra_are_kept_when_none("sqlite::memory:").await;
}

#[tokio::test]
async fn second_meta_on_the_same_file_is_fenced() {
    let dir = TempDir::new();
    checks::second_meta_on_the_same_store_is_fenced(&dir.sqlite_url("meta.db")).await;
}

#[tokio::test]
async fn racing_commits_have_exactly_one_winner() {
    let dir = TempDir::new();
    checks::racing_commits_have_exactly_one_winner(&dir.sqlite_url("meta.db")).await;
}

#[tokio::test]
async fn retry_of_a_landed_commit_is_ok_for_the_same_instance_only() {
    let dir = TempDir::new();
    checks::retry_of_a_landed_commit_is_ok_for_the_same_instance_only(&dir.sqlite_url("meta.db"))
        .await;
}

#[tokio::test]
async fn reopened_store_loads_what_was_committed() {
    let dir = TempDir::new();
    // Parent directories are created.
    let url = dir.sqlite_url("nested/deeper/meta.db");
    let expected = checks::reopened_store_loads_what_was_committed(&url).await;
    assert!(dir.path().join("nested/deeper/meta.db").exists());
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
    checks::newer_schema_is_refused(&dir.sqlite_url("meta.db"), async |store, sql| {
        let Backend::Sqlite(pool) = &store.backend else {
            panic!("not sqlite");
        };
        sqlx::query(sql)
            .execute(pool)
            .await
            .expect("bump schema version");
    })
    .await;
}

#[tokio::test]
async fn invalid_updates_are_refused_without_writing() {
    let m = checks::invalid_updates_are_refused_without_writing("sqlite::memory:").await;
    assert!(
        m.starts_with("meta store sqlite::memory:: commit failed: "),
        "{m}"
    );
}

#[tokio::test]
async fn large_batches_are_chunked() {
    checks::large_batches_are_chunked("sqlite::memory:").await;
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
