//! The object-storage store end to end, in one process: the state store
//! contract, compaction against a `BTreeMap` model under random writes,
//! deletes and restarts, garbage collection and fencing. Files go to a
//! local directory and versions to a SQLite file.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::store::MetaStore;
use crate::versions::{VersionManager, VersionOptions};
use ebbflow_storage::lsm::compactor::CompactionOptions;
use ebbflow_storage::lsm::sst::{Compression, SstOptions};
use ebbflow_storage::lsm::{CacheOptions, LsmStateStore, ObjectStorage, SstStore, StoreOptions};
use ebbflow_storage::{prefix_range, EpochCommitter, StateStore};

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!(
            "ebbflow-lsm-{name}-{}-{:x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&p).expect("temp dir");
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Small files, small blocks and eager compaction, so every path runs.
fn tiny_options() -> (StoreOptions, VersionOptions) {
    let sst = SstOptions {
        block_size: 256,
        bloom: true,
        compression: Compression::Lz4,
    };
    let store = StoreOptions {
        sst: sst.clone(),
        max_file_size: 4096,
        retry_for: Duration::from_secs(5),
    };
    let versions = VersionOptions {
        compaction: CompactionOptions {
            l0_trigger: 3,
            l0_stop_sublevels: 64,
            base_level_bytes: 16 << 10,
            level_ratio: 4,
            l0_ratio: 4,
            target_file_size: 4096,
            sst,
        },
        compaction_interval: Duration::from_secs(3600),
        gc_interval: Duration::from_secs(3600),
        gc_grace: Duration::ZERO,
        retry_for: Duration::from_secs(5),
    };
    (store, versions)
}

struct Opened {
    sst: Arc<SstStore>,
    store: Arc<LsmStateStore>,
    versions: Arc<VersionManager>,
}

async fn open(dir: &Dir, store_options: &StoreOptions, options: &VersionOptions) -> Opened {
    let objects =
        ObjectStorage::open(&format!("file://{}/state", dir.0.display())).expect("object store");
    objects.check().await.expect("object store check");
    let meta = MetaStore::connect(&format!("sqlite://{}/meta.db", dir.0.display()))
        .await
        .expect("meta store");
    let sst = Arc::new(SstStore::new(objects, &CacheOptions::default()));
    let versions = VersionManager::open(meta, sst.clone(), options.clone())
        .await
        .expect("load version");
    let store = Arc::new(LsmStateStore::new(
        sst.clone(),
        versions.current(),
        store_options.clone(),
        "test",
    ));
    versions.register_store(&store);
    Opened {
        sst,
        store,
        versions,
    }
}

#[tokio::test]
async fn contract() {
    let dir = Dir::new("contract");
    let (s, v) = tiny_options();
    let o = open(&dir, &s, &v).await;
    ebbflow_storage::contract::check_state_store(&*o.store, &*o.versions).await;
}

fn key(table: u32, k: u32) -> Bytes {
    let mut v = ebbflow_storage::vnode_prefix(table, (k % 256) as u16);
    v.extend_from_slice(&k.to_be_bytes());
    Bytes::from(v)
}

type Model = BTreeMap<Bytes, Bytes>;

/// Writes `writes` as epoch `epoch`, uploads and commits it.
async fn commit_writes(o: &Opened, epoch: u64, writes: Vec<ebbflow_storage::KeyedWrite>) {
    o.store.ingest(epoch, writes).expect("ingest");
    let files = o.store.sync(epoch).await.expect("sync");
    o.versions
        .commit_epoch(epoch, files, None)
        .await
        .expect("commit");
}

async fn check_model(o: &Opened, model: &Model, rng: &mut StdRng) {
    let all = o.store.scan(prefix_range(b""), false).await.expect("scan");
    let want: Vec<(Bytes, Bytes)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all.len(), want.len(), "row count");
    assert!(all == want, "full scan differs from the model");
    for _ in 0..50 {
        let k = key(rng.gen_range(1..=3), rng.gen_range(0..600));
        let got = o.store.get(&k, false).await.expect("get");
        assert_eq!(got.as_ref(), model.get(&k), "get {k:?}");
    }
    // A limited scan from a random start.
    let start = key(rng.gen_range(1..=3), rng.gen_range(0..600));
    let got = o
        .store
        .scan_committed_limit((Bound::Included(start.to_vec()), Bound::Unbounded), 7)
        .await
        .expect("limited scan");
    let want: Vec<(Bytes, Bytes)> = model
        .range(start..)
        .take(7)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(got == want, "limited scan differs from the model");
}

/// Random writes and deletes over many epochs; compaction after some
/// commits; restarts (a crash) at random points, sometimes between an
/// epoch's upload and its commit. The store must always equal the model
/// of what was committed, and every level must keep its invariants.
#[tokio::test]
async fn compaction_matches_a_model_under_writes_deletes_and_crashes() {
    let dir = Dir::new("model");
    let (s, v) = tiny_options();
    let mut rng = StdRng::seed_from_u64(7);
    let mut model = Model::new();
    let mut o = open(&dir, &s, &v).await;
    let mut epoch = 0u64;
    let mut compactions = 0;
    for round in 0..120 {
        epoch += 1;
        let mut pending = model.clone();
        let mut writes = Vec::new();
        for _ in 0..rng.gen_range(0..60) {
            let k = key(rng.gen_range(1..=3), rng.gen_range(0..600));
            if rng.gen_bool(0.3) {
                writes.push((k.clone(), None));
                pending.remove(&k);
            } else {
                let val = Bytes::from(format!("{round}-{}", rng.gen::<u16>()));
                writes.push((k.clone(), Some(val.clone())));
                pending.insert(k, val);
            }
        }
        // Later writes of a key win, as within an epoch.
        o.store.ingest(epoch, writes).expect("ingest");
        let files = o.store.sync(epoch).await.expect("sync");
        if rng.gen_bool(0.08) {
            // Crash after the upload, before the version commit: the
            // files are garbage and never read.
            drop(o);
            o = open(&dir, &s, &v).await;
            epoch = o.versions.committed_epoch();
            check_model(&o, &model, &mut rng).await;
            continue;
        }
        o.versions
            .commit_epoch(epoch, files, None)
            .await
            .expect("commit");
        model = pending;
        while rng.gen_bool(0.5) && o.versions.compact_once().await.expect("compact") {
            compactions += 1;
        }
        o.versions.current().check().expect("version invariants");
        if round % 10 == 0 {
            check_model(&o, &model, &mut rng).await;
        }
        if rng.gen_bool(0.05) {
            drop(o);
            o = open(&dir, &s, &v).await;
            assert_eq!(o.versions.committed_epoch(), epoch);
        }
    }
    while o.versions.compact_once().await.expect("compact") {
        compactions += 1;
    }
    check_model(&o, &model, &mut rng).await;
    assert!(compactions > 10, "compaction ran {compactions} times");
    let version = o.versions.current();
    assert!(
        version.l0_sublevels().len() < 3,
        "L0 is bounded after compaction: {:?}",
        version.level_stats()
    );
    assert!(
        version.levels.len() >= 2,
        "data reached deeper levels: {:?}",
        version.level_stats()
    );
    // Tombstones reached the bottom and were dropped: the files hold no
    // more keys than the model plus the shadowed ones above the bottom.
    let bottom_tombstones: u64 = version
        .levels
        .last()
        .map(|l| l.iter().map(|f| f.tombstones).sum())
        .unwrap_or(0);
    assert_eq!(bottom_tombstones, 0, "the bottom level holds no tombstone");

    // Garbage collection: every object not in the version goes (grace 0).
    let objects = || async {
        let listed = o.versions.sst_store().objects().list_ssts().await;
        listed.expect("list").len()
    };
    let live = version.files().count();
    assert!(
        objects().await > live,
        "crashes and compactions left garbage"
    );
    o.versions.collect_garbage().await.expect("gc");
    assert_eq!(objects().await, live, "only the live files remain");
    check_model(&o, &model, &mut rng).await;
}

/// Dropped tables vanish from reads at the commit and from the files at
/// the next compactions.
#[tokio::test]
async fn dropped_tables_leave_the_files() {
    let dir = Dir::new("drop");
    let (s, v) = tiny_options();
    let o = open(&dir, &s, &v).await;
    for epoch in 1..=6u64 {
        let writes = (0..200)
            .map(|i| {
                (
                    key(if i % 2 == 0 { 5 } else { 6 }, i),
                    Some(Bytes::from("x")),
                )
            })
            .collect();
        commit_writes(&o, epoch, writes).await;
    }
    o.versions.drop_table(5);
    let files = o.store.sync(7).await.expect("sync");
    o.versions
        .commit_epoch(7, files, None)
        .await
        .expect("commit");
    let t5 = prefix_range(&ebbflow_storage::table_prefix(5));
    assert!(o
        .store
        .scan(t5.clone(), false)
        .await
        .expect("scan")
        .is_empty());
    while o.versions.compact_once().await.expect("compact") {}
    let keys: u64 = o.versions.current().files().map(|f| f.key_count).sum();
    assert_eq!(keys, 100, "only table 6's keys are left in the files");
    // The drop survives a restart.
    drop(o);
    let o = open(&dir, &s, &v).await;
    assert!(o.store.scan(t5, false).await.expect("scan").is_empty());
}

/// The caches hold files of the current version only: the epoch files
/// that an upload warmed leave them when compaction replaces them.
#[tokio::test]
async fn compacted_files_leave_the_caches() {
    let dir = Dir::new("cache");
    let (s, v) = tiny_options();
    let o = open(&dir, &s, &v).await;
    let mut model = Model::new();
    for epoch in 1..=8u64 {
        let writes: Vec<_> = (0..150)
            .map(|i| {
                let k = key(1, (i * 7 + epoch as u32 * 13) % 600);
                (k, Some(Bytes::from(format!("v{epoch}"))))
            })
            .collect();
        for (k, v) in &writes {
            model.insert(k.clone(), v.clone().expect("value"));
        }
        commit_writes(&o, epoch, writes).await;
    }
    let live = |o: &Opened| -> std::collections::BTreeSet<u64> {
        o.versions.current().files().map(|f| f.id).collect()
    };
    assert!(!o.sst.cached_files().is_empty(), "uploads warm the caches");
    assert!(o.sst.cached_files().is_subset(&live(&o)));
    while o.versions.compact_once().await.expect("compact") {}
    assert!(
        o.sst.cached_files().is_subset(&live(&o)),
        "cached {:?}, live {:?}",
        o.sst.cached_files(),
        live(&o)
    );
    // Reads fill the caches again, from the live files.
    check_model(&o, &model, &mut StdRng::seed_from_u64(7)).await;
    assert!(!o.sst.cached_files().is_empty());
    assert!(o.sst.cached_files().is_subset(&live(&o)));
}

/// An upload caches its blocks of the tables whose blocks were read
/// lately, and only its index for the others.
#[tokio::test]
async fn uploads_cache_blocks_of_tables_being_read() {
    let dir = Dir::new("warm");
    let (s, v) = tiny_options();
    let o = open(&dir, &s, &v).await;
    let both = |epoch: u64| -> Vec<ebbflow_storage::KeyedWrite> {
        (0..40)
            .flat_map(|i| [key(1, i), key(2, i)])
            .map(|k| (k, Some(Bytes::from(format!("v{epoch}")))))
            .collect()
    };
    commit_writes(&o, 1, both(1)).await;
    assert!(o.sst.cached_block_tables().is_empty(), "nothing was read");
    assert!(!o.sst.cached_files().is_empty(), "the index is cached");
    // A read of table 1 from its file.
    let got = o.store.get(&key(1, 3), false).await.expect("get");
    assert_eq!(got, Some(Bytes::from("v1")));
    let before: std::collections::BTreeSet<u64> =
        o.versions.current().files().map(|f| f.id).collect();
    commit_writes(&o, 2, both(2)).await;
    let fresh: Vec<(u64, u32)> = o
        .sst
        .cached_block_tables()
        .into_iter()
        .filter(|(id, _)| !before.contains(id))
        .collect();
    assert!(fresh.iter().any(|&(_, t)| t == 1), "{fresh:?}");
    assert!(fresh.iter().all(|&(_, t)| t == 1), "{fresh:?}");
    // Table 2's fresh data is read from the object store, then cached.
    let got = o.store.get(&key(2, 5), false).await.expect("get");
    assert_eq!(got, Some(Bytes::from("v2")));
    assert!(o
        .sst
        .cached_block_tables()
        .iter()
        .any(|&(id, t)| t == 2 && !before.contains(&id)));
}

/// A snapshot read a page at a time gives the whole scan, in order.
#[tokio::test]
async fn snapshot_pages_make_the_whole_scan() {
    let dir = Dir::new("pages");
    let (s, v) = tiny_options();
    let o = open(&dir, &s, &v).await;
    for epoch in 1..=3u64 {
        let writes = (0..300)
            .map(|i| {
                (
                    key(1, i * 3 + epoch as u32),
                    Some(Bytes::from(format!("v{i}"))),
                )
            })
            .collect();
        commit_writes(&o, epoch, writes).await;
    }
    let snapshot = o.store.snapshot();
    let range = prefix_range(&1u32.to_be_bytes());
    let all = snapshot.scan(range.clone()).await.expect("scan");
    assert_eq!(all.len(), 900);
    let (mut start, end) = range;
    let mut paged = Vec::new();
    loop {
        let page = snapshot
            .scan_limit((start, end.clone()), 128)
            .await
            .expect("page");
        let Some((last, _)) = page.last() else { break };
        start = Bound::Excluded(last.to_vec());
        paged.extend(page);
    }
    assert_eq!(paged, all);
}

/// Files of an epoch that is already committed are refused: reads could
/// not order them against that epoch's committed files.
#[tokio::test]
async fn an_epoch_commits_once() {
    let dir = Dir::new("epoch-once");
    let (s, v) = tiny_options();
    let o = open(&dir, &s, &v).await;
    for value in ["a", "b"] {
        o.store
            .ingest(3, vec![(key(1, 1), Some(Bytes::from(value)))])
            .expect("ingest");
        let files = o.store.sync(3).await.expect("sync");
        let r = o.versions.commit_epoch(3, files, None).await;
        if value == "a" {
            r.expect("the first commit of epoch 3");
        } else {
            let err = r.expect_err("a second commit of epoch 3");
            assert!(err.to_string().contains("not after"), "{err}");
        }
    }
    o.store.abort_uncommitted();
    assert_eq!(
        o.store.get(&key(1, 1), false).await.expect("get"),
        Some(Bytes::from("a"))
    );
}

/// A second meta on the same meta store that loaded an older version
/// cannot commit.
#[tokio::test]
async fn a_stale_meta_is_fenced() {
    let dir = Dir::new("fence");
    let (s, v) = tiny_options();
    let a = open(&dir, &s, &v).await;
    let b = open(&dir, &s, &v).await;
    a.store
        .ingest(1, vec![(key(1, 1), Some(Bytes::from("a")))])
        .expect("ingest");
    let files = a.store.sync(1).await.expect("sync");
    a.versions
        .commit_epoch(1, files, None)
        .await
        .expect("first meta commits");
    b.store
        .ingest(1, vec![(key(1, 1), Some(Bytes::from("b")))])
        .expect("ingest");
    let files = b.store.sync(1).await.expect("sync");
    let err = b
        .versions
        .commit_epoch(1, files, None)
        .await
        .expect_err("the stale meta is fenced");
    assert!(err.to_string().contains("fenced"), "{err}");
    drop((a, b));
    let c = open(&dir, &s, &v).await;
    assert_eq!(
        c.store.get(&key(1, 1), false).await.expect("get"),
        Some(Bytes::from("a"))
    );
}

/// Two compute processes write the same epochs, each its own vnodes (odd
/// and even), so their files of an epoch overlap in key range but never
/// in keys: reads and compaction must treat them as separate sorted runs.
#[tokio::test]
async fn files_of_two_writers_in_one_epoch() {
    let dir = Dir::new("two-writers");
    let (s, v) = tiny_options();
    let mut rng = StdRng::seed_from_u64(11);
    let o = open(&dir, &s, &v).await;
    let other = Arc::new(LsmStateStore::new(
        o.versions.sst_store().clone(),
        o.versions.current(),
        s.clone(),
        "other",
    ));
    o.versions.register_store(&other);
    let mut model = Model::new();
    for epoch in 1..=40u64 {
        let (mut mine, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..rng.gen_range(1..80) {
            let k = key(rng.gen_range(1..=2), rng.gen_range(0..600));
            let writes = if k[5].is_multiple_of(2) {
                &mut mine
            } else {
                &mut theirs
            };
            if rng.gen_bool(0.2) {
                writes.push((k.clone(), None));
                model.remove(&k);
            } else {
                let val = Bytes::from(format!("{epoch}-{}", rng.gen::<u16>()));
                writes.push((k.clone(), Some(val.clone())));
                model.insert(k, val);
            }
        }
        o.store.ingest(epoch, mine).expect("ingest");
        other.ingest(epoch, theirs).expect("ingest");
        let mut files = o.store.sync(epoch).await.expect("sync");
        files.extend(other.sync(epoch).await.expect("sync"));
        o.versions
            .commit_epoch(epoch, files, None)
            .await
            .expect("commit");
        o.versions.current().check().expect("version invariants");
        if epoch % 7 == 0 {
            check_model(&o, &model, &mut rng).await;
        }
        if rng.gen_bool(0.3) {
            while o.versions.compact_once().await.expect("compact") {}
        }
    }
    check_model(&o, &model, &mut rng).await;
    while o.versions.compact_once().await.expect("compact") {}
    check_model(&o, &model, &mut rng).await;
}
