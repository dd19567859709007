//! Backend-independent checks of the meta store, shared by its SQLite unit
//! tests (`src/meta/src/store/tests.rs`) and its PostgreSQL integration tests
//! (`tests/meta_store.rs`), plus the small helpers both use.
//!
//! Each check takes the URL of a fresh, empty store (it may connect to it
//! more than once, so it must not be `sqlite::memory:` for checks that open
//! two instances) and panics with a message naming what failed. Not part of
//! the API: public only so that the integration tests can call it.

use super::{FileRow, Loaded, MetaStore, MetaStoreError, VersionUpdate};

/// A state file row `id` at `level` written at `epoch`.
pub fn file(id: &str, level: u32, epoch: u64) -> FileRow {
    FileRow {
        object_id: id.to_string(),
        level,
        epoch,
        size: 1000 + epoch,
        info: format!("{{\"id\":\"{id}\"}}"),
    }
}

/// An update from version `prev` to `next` at `epoch`, without extra or
/// catalog.
pub fn update<'a>(
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

/// The object ids of the live files, in load order.
pub fn ids(loaded: &Loaded) -> Vec<&str> {
    loaded.files.iter().map(|f| f.object_id.as_str()).collect()
}

pub fn strings(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

/// What a fresh store loads.
pub fn fresh() -> Loaded {
    Loaded {
        version_id: 0,
        committed_epoch: 0,
        files: vec![],
        extra: String::new(),
        catalog: None,
    }
}

/// Connects to `url`, panicking with the URL and the error on failure.
pub async fn connect(url: &str) -> MetaStore {
    MetaStore::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

/// Asserts `r` is a one-line `Connect` error and returns its message.
pub fn connect_message(r: Result<MetaStore, MetaStoreError>) -> String {
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

/// A fresh store loads version 0 and describes itself by its URL (which
/// must have no password).
pub async fn fresh_store_loads_version_zero(url: &str) {
    let store = connect(url).await;
    assert_eq!(store.describe(), url);
    assert_eq!(store.load().await.expect("load"), fresh());
}

pub async fn commit_sequence_tracks_the_live_files(url: &str) {
    let store = connect(url).await;
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
    let loaded = store.load().await.expect("load v5");
    assert_eq!((loaded.version_id, loaded.committed_epoch), (7, 50));
    assert_eq!(ids(&loaded), ["e"]);
}

pub async fn catalog_and_extra_are_kept_when_none(url: &str) {
    let store = connect(url).await;
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
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.extra, "");
    assert_eq!(loaded.catalog, Some(big));
}

/// A second instance on the same store that commits from a stale version is
/// fenced, and nothing of its commit is visible.
pub async fn second_meta_on_the_same_store_is_fenced(url: &str) {
    let first = connect(url).await;
    let base = [file("a", 0, 10)];
    let mut u = update(0, 1, 10, &base, &[]);
    u.catalog = Some(b"catalog-1");
    u.extra = Some("extra-1");
    first.commit(&u).await.expect("v1");

    let second = connect(url).await;
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

pub async fn racing_commits_have_exactly_one_winner(url: &str) {
    let a = connect(url).await;
    let b = connect(url).await;
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
        let live = format!("{winner}{round}");
        for store in [&a, &b] {
            let loaded = store.load().await.expect("load");
            assert_eq!(loaded.version_id, base + 1);
            assert!(ids(&loaded).contains(&live.as_str()));
            assert_eq!(loaded.files.len() as u64, round + 1);
        }
    }
}

pub async fn retry_of_a_landed_commit_is_ok_for_the_same_instance_only(url: &str) {
    let store = connect(url).await;
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
    let other = connect(url).await;
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

/// Commits through one instance, drops it, and checks that a second and a
/// third connect (the latter re-running the idempotent schema creation)
/// load it. Returns what was committed, for backend-specific checks.
pub async fn reopened_store_loads_what_was_committed(url: &str) -> Loaded {
    let catalog = b"the catalog".to_vec();
    let add = [file("a", 0, 10), file("b", 3, 7)];
    {
        let store = connect(url).await;
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
    let store = connect(url).await;
    assert_eq!(store.load().await.expect("load"), expected);
    // Schema creation again on a third connect is a no-op.
    let again = connect(url).await;
    assert_eq!(again.load().await.expect("load"), expected);
    expected
}

/// A store whose schema version was raised to 99 by `run_sql` (given a
/// connected store and the statement to run on its database) is refused.
pub async fn newer_schema_is_refused<F>(url: &str, run_sql: F)
where
    F: AsyncFnOnce(&MetaStore, &'static str),
{
    let store = connect(url).await;
    run_sql(
        &store,
        "UPDATE ebbflow_schema_version SET version = 99 WHERE id = 1",
    )
    .await;
    let m = connect_message(MetaStore::connect(url).await);
    assert!(m.contains("schema version 99"), "{m}");
    assert!(m.contains("upgrade ebbflow"), "{m}");
}

/// Invalid updates (version id not growing, values above `i64::MAX`, a
/// file that is already live) fail with one-line `Io` errors and write
/// nothing; the store stays usable. Returns the message of the duplicate
/// file failure, for backend-specific checks.
pub async fn invalid_updates_are_refused_without_writing(url: &str) -> String {
    let store = connect(url).await;
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
    u.extra = Some("nope");
    let message = match store.commit(&u).await {
        Err(MetaStoreError::Io(m)) => {
            let prefix = format!("meta store {}: commit failed: ", store.describe());
            assert!(m.starts_with(&prefix), "{m}");
            assert!(!m.contains('\n'), "{m}");
            eprintln!("duplicate file: {m}");
            m
        }
        other => panic!("expected io, got {other:?}"),
    };
    assert_eq!(store.load().await.expect("load"), before);
    // The store is still usable afterwards.
    store
        .commit(&update(1, 2, 20, &dup[..1], &[]))
        .await
        .expect("v2");
    assert_eq!(ids(&store.load().await.expect("load")), ["a", "b"]);
    message
}

pub async fn large_batches_are_chunked(url: &str) {
    let store = connect(url).await;
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
