use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::contract::{check_state_store, key, put};
use super::*;
use crate::storage::MemoryStateStore;

/// A fresh directory under the system temp dir, removed on drop.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "ebbflow-durable-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn small() -> DurableOptions {
    DurableOptions {
        rotate_bytes: 64 << 10,
        cache_bytes: 4 << 20,
    }
}

pub(super) fn all(s: &dyn StateStore, uncommitted: bool) -> Vec<(Bytes, Bytes)> {
    s.scan(prefix_range(b""), uncommitted).unwrap()
}

/// Every file under `dir` with its contents, to show that a failed open
/// changed nothing.
pub(super) fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Bytes allocated on disk under `dir` (what `du` reports: fjall
/// preallocates each journal as a 64 MiB sparse file).
pub(super) fn dir_size(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    files(dir)
        .keys()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.blocks() * 512))
        .sum()
}

fn open_err(dir: &Path) -> String {
    match DurableStateStore::open(dir) {
        Ok(_) => panic!("open of {} should fail", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn contract_memory() {
    check_state_store(&MemoryStateStore::new());
}

#[test]
fn contract_durable_and_reopen() {
    let dir = TempDir::new("contract");
    let s = DurableStateStore::open_with(&dir.0, small()).unwrap();
    check_state_store(&s);
    let before = all(&s, false);
    let epoch = s.committed_epoch();
    s.ingest(epoch + 1, vec![put(1, 0, "x", "staged")]).unwrap();
    drop(s);
    let s = DurableStateStore::open_with(&dir.0, small()).unwrap();
    assert_eq!(s.committed_epoch(), epoch);
    assert_eq!(all(&s, false), before);
    assert_eq!(all(&s, true), before, "staged writes do not survive");
}

/// Random operations against the memory store and the durable store
/// side by side; every read must agree. A "crash" (drop and reopen the
/// durable store) corresponds to `abort_uncommitted` in memory.
#[test]
fn differential_against_memory() {
    let dir = TempDir::new("diff");
    let opts = DurableOptions {
        rotate_bytes: 4 << 10,
        cache_bytes: 1 << 20,
    };
    let mut d = DurableStateStore::open_with(&dir.0, opts.clone()).unwrap();
    let m = MemoryStateStore::new();
    let mut rng = SmallRng::seed_from_u64(7);
    let rand_key = |rng: &mut SmallRng| {
        key(
            rng.gen_range(1..4),
            rng.gen_range(0..3),
            &format!("{:02}", rng.gen_range(0..30)),
        )
    };
    let mut epoch = 1u64;
    for step in 0..1500 {
        match rng.gen_range(0..100) {
            0..=39 => {
                let writes: Vec<KeyedWrite> = (0..rng.gen_range(0..8))
                    .map(|_| {
                        let k = rand_key(&mut rng);
                        let v = (rng.gen_range(0..4) > 0).then(|| Bytes::from(format!("v{step}")));
                        (k, v)
                    })
                    .collect();
                let e = epoch + rng.gen_range(0..3);
                m.ingest(e, writes.clone()).unwrap();
                d.ingest(e, writes).unwrap();
            }
            40..=54 => {
                let e = epoch + rng.gen_range(0..2);
                m.commit(e).unwrap();
                d.commit(e).unwrap();
                epoch = e + 1;
            }
            55..=57 => {
                m.abort_uncommitted();
                d.abort_uncommitted();
            }
            58..=59 => {
                let t = rng.gen_range(1..4);
                m.delete_table(t).unwrap();
                d.delete_table(t).unwrap();
            }
            60..=61 => {
                m.abort_uncommitted();
                drop(d);
                d = DurableStateStore::open_with(&dir.0, opts.clone())
                    .unwrap_or_else(|e| panic!("reopen at step {step}: {e}"));
            }
            62..=80 => {
                let k = rand_key(&mut rng);
                let u = rng.gen_bool(0.5);
                assert_eq!(m.get(&k, u).unwrap(), d.get(&k, u).unwrap(), "step {step}");
            }
            _ => {
                let (a, b) = (rand_key(&mut rng), rand_key(&mut rng));
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let bound = |k: Bytes, rng: &mut SmallRng| match rng.gen_range(0..3) {
                    0 => Bound::Included(k.to_vec()),
                    1 => Bound::Excluded(k.to_vec()),
                    _ => Bound::Unbounded,
                };
                let mut range = (bound(lo, &mut rng), bound(hi, &mut rng));
                if let (Bound::Excluded(l), Bound::Excluded(h)) = &range {
                    if l == h {
                        range.1 = Bound::Unbounded;
                    }
                }
                let u = rng.gen_bool(0.5);
                assert_eq!(
                    m.scan(range.clone(), u).unwrap(),
                    d.scan(range, u).unwrap(),
                    "step {step}"
                );
            }
        }
        assert_eq!(m.committed_epoch(), d.committed_epoch(), "step {step}");
    }
    assert_eq!(all(&m, true), all(&d, true));
    assert_eq!(all(&m, false), all(&d, false));
}

#[test]
fn reopen_keeps_committed_and_loses_uncommitted_epoch() {
    let dir = TempDir::new("reopen");
    let s = DurableStateStore::open_with(&dir.0, small()).unwrap();
    s.ingest(1, vec![put(1, 0, "a", "1"), put(1, 0, "b", "1")])
        .unwrap();
    s.commit(1).unwrap();
    s.ingest(2, vec![put(1, 0, "a", "2")]).unwrap();
    s.commit(2).unwrap();
    // A crash between ingest and commit: epoch 3 was handed to the store
    // but never committed.
    s.ingest(3, vec![put(1, 0, "a", "3"), put(1, 0, "c", "3")])
        .unwrap();
    drop(s);
    let s = DurableStateStore::open_with(&dir.0, small()).unwrap();
    assert_eq!(s.committed_epoch(), 2);
    assert_eq!(
        s.get(&key(1, 0, "a"), true).unwrap().as_deref(),
        Some(&b"2"[..])
    );
    assert_eq!(
        s.get(&key(1, 0, "b"), true).unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(s.get(&key(1, 0, "c"), true).unwrap(), None);
    // And the store carries on from there.
    s.ingest(3, vec![put(1, 0, "c", "3'")]).unwrap();
    s.commit(3).unwrap();
    drop(s);
    let s = DurableStateStore::open(&dir.0).unwrap();
    assert_eq!(s.committed_epoch(), 3);
    assert_eq!(all(&s, false).len(), 3);
}

#[test]
fn inverted_range_is_empty() {
    let dir = TempDir::new("inverted");
    let s = DurableStateStore::open_with(&dir.0, small()).unwrap();
    s.ingest(1, vec![put(1, 0, "a", "1")]).unwrap();
    let hi = key(1, 0, "z").to_vec();
    let lo = key(1, 0, "a").to_vec();
    for u in [false, true] {
        assert!(s
            .scan(
                (Bound::Included(hi.clone()), Bound::Included(lo.clone())),
                u
            )
            .unwrap()
            .is_empty());
        assert!(s
            .scan(
                (Bound::Excluded(lo.clone()), Bound::Excluded(lo.clone())),
                u
            )
            .unwrap()
            .is_empty());
    }
}

#[test]
fn version_mismatch_and_bad_dirs_are_clear_errors_and_change_nothing() {
    let dir = TempDir::new("version");
    let s = DurableStateStore::open_with(&dir.0, small()).unwrap();
    s.ingest(1, vec![put(1, 0, "a", "1")]).unwrap();
    s.commit(1).unwrap();
    drop(s);
    let version = dir.0.join("FORMAT_VERSION");
    assert_eq!(
        std::fs::read_to_string(&version).unwrap(),
        format!("ebbflow state store format {FORMAT_VERSION}\n")
    );

    std::fs::write(&version, "ebbflow state store format 999\n").unwrap();
    let before = files(&dir.0);
    let e = open_err(&dir.0);
    println!("{e}");
    assert!(e.contains(&version.display().to_string()), "{e}");
    assert!(e.contains("format version 999"), "{e}");
    assert_eq!(files(&dir.0), before, "a failed open changes no file");

    std::fs::write(&version, "garbage").unwrap();
    let before = files(&dir.0);
    let e = open_err(&dir.0);
    println!("{e}");
    assert!(e.contains("corrupt format version file"), "{e}");
    assert_eq!(files(&dir.0), before);

    // Truncated (empty) version file.
    std::fs::write(&version, "").unwrap();
    assert!(open_err(&dir.0).contains("corrupt format version file"));

    // A directory that is not a store.
    std::fs::remove_file(&version).unwrap();
    let before = files(&dir.0);
    let e = open_err(&dir.0);
    println!("{e}");
    assert!(e.contains("not an ebbflow state store"), "{e}");
    assert_eq!(files(&dir.0), before);

    // A store whose fjall database is gone.
    std::fs::write(
        &version,
        format!("ebbflow state store format {FORMAT_VERSION}\n"),
    )
    .unwrap();
    let fjall = dir.0.join("fjall");
    std::fs::rename(&fjall, dir.0.join("elsewhere")).unwrap();
    let before = files(&dir.0);
    let e = open_err(&dir.0);
    println!("{e}");
    assert!(
        e.contains(&fjall.display().to_string()) && e.contains("corrupt"),
        "{e}"
    );
    assert_eq!(files(&dir.0), before);
    std::fs::rename(dir.0.join("elsewhere"), &fjall).unwrap();

    // fjall's own version marker damaged.
    let marker = fjall.join("version");
    let good = std::fs::read(&marker).unwrap();
    std::fs::write(&marker, b"xx").unwrap();
    let before = files(&dir.0);
    let e = open_err(&dir.0);
    println!("{e}");
    assert!(e.contains(&marker.display().to_string()), "{e}");
    assert_eq!(files(&dir.0), before);
    std::fs::write(&marker, good).unwrap();

    // A plain file where the directory should be.
    let file = dir.0.join("FORMAT_VERSION");
    assert!(open_err(&file).contains("not a directory"));

    // Repaired, it opens with its data.
    let s = DurableStateStore::open(&dir.0).unwrap();
    assert_eq!(s.committed_epoch(), 1);
    assert_eq!(
        s.get(&key(1, 0, "a"), false).unwrap().as_deref(),
        Some(&b"1"[..])
    );
}

#[test]
fn corrupt_table_file_is_reported() {
    let dir = TempDir::new("corrupt");
    let opts = DurableOptions {
        rotate_bytes: 1,
        cache_bytes: 1 << 20,
    };
    let s = DurableStateStore::open_with(&dir.0, opts.clone()).unwrap();
    let writes = (0..2000)
        .map(|i| put(1, 0, &format!("{i:06}"), &"v".repeat(40)))
        .collect();
    s.ingest(1, writes).unwrap();
    s.commit(1).unwrap();
    s.state.rotate_memtable_and_wait().unwrap();
    drop(s);
    let tables: Vec<PathBuf> = files(&dir.0)
        .into_iter()
        .filter(|(p, c)| p.to_string_lossy().contains("/tables/") && c.len() > 20_000)
        .map(|(p, _)| p)
        .collect();
    assert!(!tables.is_empty(), "expected a flushed table file");
    let t = &tables[0];
    let len = std::fs::metadata(t).unwrap().len();
    // Flip bytes in the middle of the table's data blocks.
    let mut bytes = std::fs::read(t).unwrap();
    for b in &mut bytes[(len / 4) as usize..(len / 4) as usize + 64] {
        *b ^= 0x5a;
    }
    std::fs::write(t, &bytes).unwrap();
    // fjall checks block checksums when it reads a block: open succeeds
    // (it reads table metadata only), reads of the damaged block fail
    // with an error naming the store, they never return wrong data.
    match DurableStateStore::open_with(&dir.0, opts.clone()) {
        Err(e) => println!("open failed: {e}"),
        Ok(s) => {
            let r = s.scan(prefix_range(b""), false);
            println!("scan of corrupt table: {:?}", r.as_ref().map(|v| v.len()));
            let e = r
                .expect_err("a corrupt block must not read as data")
                .to_string();
            assert!(e.contains(&dir.0.display().to_string()), "{e}");
        }
    }
    // A truncated table file.
    std::fs::write(t, &bytes[..(len / 2) as usize]).unwrap();
    let before = files(&dir.0);
    match DurableStateStore::open_with(&dir.0, opts) {
        Err(e) => {
            println!("open of truncated table failed: {e}");
            assert!(e.to_string().contains(&dir.0.display().to_string()));
            let after = files(&dir.0);
            let changed: Vec<_> = before
                .keys()
                .chain(after.keys())
                .filter(|p| before.get(*p) != after.get(*p))
                .collect();
            println!("changed by the failed open: {changed:?}");
            // fjall may garbage-collect superseded manifest versions
            // (`keyspaces/<id>/v<n>`, older than `current`) of the
            // keyspaces it recovered before meeting the damaged table;
            // nothing else, and no data, may change.
            for p in changed {
                let name = p.file_name().unwrap().to_string_lossy();
                assert!(
                    name.starts_with('v') && !after.contains_key(p),
                    "failed open changed {}",
                    p.display()
                );
            }
        }
        Ok(s) => {
            let r = s.scan(prefix_range(b""), false);
            println!("scan of truncated table: {:?}", r.as_ref().map(|v| v.len()));
            assert!(r.is_err());
        }
    }
}

#[test]
fn lock_held_is_a_clear_error() {
    let dir = TempDir::new("lock");
    let a = DurableStateStore::open_with(&dir.0, small()).unwrap();
    let before = files(&dir.0);
    let e = open_err(&dir.0);
    println!("{e}");
    assert!(e.contains(&dir.0.join("LOCK").display().to_string()), "{e}");
    assert!(e.contains("locked by another process"), "{e}");
    assert_eq!(files(&dir.0), before);
    drop(a);
    DurableStateStore::open_with(&dir.0, small()).unwrap();
}

/// Committed reads racing with commits see whole epochs: every commit
/// rewrites all keys with its epoch number.
#[test]
fn reads_during_commit_see_whole_epochs() {
    let dir = TempDir::new("race");
    // Small memtables: flushes run while batches commit, which is what
    // broke fjall snapshots before the `applying` lock.
    let s = Arc::new(DurableStateStore::open_with(&dir.0, small()).unwrap());
    const KEYS: usize = 300;
    let write = |e: u64| -> Vec<KeyedWrite> {
        (0..KEYS)
            .map(|i| put(1, (i % 4) as u16, &format!("{i:04}"), &format!("{e:08}")))
            .collect()
    };
    s.ingest(1, write(1)).unwrap();
    s.commit(1).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (s, done) = (s.clone(), done.clone());
            std::thread::spawn(move || {
                let mut checks = 0;
                while !done.load(Ordering::SeqCst) {
                    let before = s.committed_epoch();
                    let rows = s.scan(prefix_range(&table_prefix(1)), r == 1).unwrap();
                    assert_eq!(rows.len(), KEYS);
                    let first = rows[0].1.clone();
                    let epochs: std::collections::BTreeSet<_> =
                        rows.iter().map(|(_, v)| v.clone()).collect();
                    assert!(
                        epochs.len() == 1,
                        "reader {r}: half an epoch seen: {epochs:?}"
                    );
                    let seen: u64 = std::str::from_utf8(&first).unwrap().parse().unwrap();
                    if r == 0 {
                        assert!(seen >= before, "saw epoch {seen} after {before} committed");
                    }
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for e in 2..40 {
        s.ingest(e, write(e)).unwrap();
        s.commit(e).unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        let checks = r.join().unwrap();
        assert!(checks > 0);
    }
}

/// Rewrites (and deletes) the same 10,000 keys in many commits: the
/// directory must not grow with the number of commits.
///
/// Two parts make up the disk: table files, which compaction keeps near
/// the live data, and the journal, which fjall preallocates as a 64 MiB
/// sparse file and rotates (hard-coded) once 64 MB were written to it;
/// a sealed journal is deleted once every memtable it covers is flushed,
/// which our memtable rotation makes prompt. So the store stays below
/// live data × small factor + ~64 MB + one rotation's worth, whatever
/// the number of commits.
#[test]
fn disk_stays_bounded() {
    let dir = TempDir::new("bounded");
    let opts = DurableOptions {
        rotate_bytes: 1 << 20,
        cache_bytes: 4 << 20,
    };
    let s = DurableStateStore::open_with(&dir.0, opts).unwrap();
    let key = |i: usize| Bytes::from(format!("\0\0\0\x01{i:012}"));
    let size = |ext_jnl: bool| -> u64 {
        use std::os::unix::fs::MetadataExt;
        files(&dir.0)
            .keys()
            .filter(|p| p.extension().is_some_and(|e| e == "jnl") == ext_jnl)
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.blocks() * 512))
            .sum()
    };
    let mut sizes = Vec::new();
    const COMMITS: u64 = 200;
    for e in 1..=COMMITS {
        let writes = (0..10_000)
            .map(|i| {
                // Every third commit deletes half the keys.
                let v = (e % 3 != 0 || i % 2 == 0).then(|| Bytes::from(format!("{e:032}")));
                (key(i), v)
            })
            .collect();
        s.ingest(e, writes).unwrap();
        s.commit(e).unwrap();
        if e % 20 == 0 {
            sizes.push((e, size(false), size(true)));
        }
    }
    let written = COMMITS * 10_000 * 48;
    println!(
        "wrote {written} B of key+value to 10,000 keys (480 kB live); \
         (epoch, table bytes, journal bytes allocated): {sizes:?}"
    );
    let max_tables = sizes.iter().map(|s| s.1).max().unwrap_or(0);
    let max_journal = sizes.iter().map(|s| s.2).max().unwrap_or(0);
    assert!(max_tables < 8 << 20, "tables grew to {max_tables} B");
    assert!(max_journal < 80 << 20, "journals grew to {max_journal} B");
    // The journal was rotated and the old one deleted at least once.
    let (_, _, last_journal) = sizes[sizes.len() - 1];
    assert!(
        last_journal < max_journal,
        "journal never recycled: {sizes:?}"
    );
    assert_eq!(all(&s, false).len(), 10_000);
}
