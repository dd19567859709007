//! The durable state store: [`StateStore`] on fjall, an LSM tree, under a
//! directory. Same semantics as [`MemoryStateStore`](super::MemoryStateStore)
//! (the contract tests run against both), plus: a commit is durable before
//! it returns, and reopening the directory after a crash at any instant
//! gives exactly the state of the last commit that returned.
//!
//! # Layout
//!
//! Two fjall keyspaces: `state` holds the state keys
//! (`table_id | vnode | pk`) as they are; `meta` holds the committed epoch
//! and the format version. The directory around them is described in
//! [`layout`].
//!
//! # Commit
//!
//! Staged writes live in memory, per epoch, with the latest write of each
//! key. `commit(e)` moves the epochs `<= e` to a `committing` slot, writes
//! them (later epochs win) and the new committed epoch number as **one**
//! fjall write batch with `PersistMode::SyncAll`, then empties the slot.
//!
//! What fjall 3.1 guarantees, as read in its source (`batch/mod.rs`,
//! `journal/`, `snapshot_tracker.rs`):
//! - *Atomic on disk.* A batch is one journal record: a start marker with
//!   the item count and seqno, the items, an end marker with an xxh3
//!   checksum. Recovery replays only complete records and truncates an
//!   incomplete last one ("tolerate corrupt tail"), so after a crash a
//!   batch is there entirely or not at all.
//! - *Durable.* With `SyncAll` the journal is written and `fsync`ed before
//!   `commit` returns (journal rotation fsyncs the directory too).
//! - *Atomic to readers — almost.* All items of a batch get one seqno and
//!   are applied to the memtables under the journal lock; only then is
//!   the visible seqno raised past it, and a [`fjall::Snapshot`] reads at
//!   the visible seqno of its creation. Plain `Keyspace::get`/`range` read
//!   at `SeqNo::MAX` and see half a batch while it is being applied, so
//!   every read here goes through a snapshot. But a background flush or
//!   compaction installs its new tree version with a fresh seqno from the
//!   same counter and raises the visible seqno past it
//!   (`lsm-tree` `SuperVersions::upgrade_version`), which can expose a
//!   batch that is still being applied: `tests::reads_during_commit_see_whole_epochs`
//!   caught scans mixing two epochs when memtables were being flushed. So
//!   the store holds `applying` exclusively while its batch commits and
//!   shares it while it takes a snapshot: a snapshot is never taken while
//!   one of our batches is half applied, and every batch below its seqno
//!   is complete. The lock also covers the fsync; rather than wait for
//!   it, a reader that finds it taken reads from a snapshot taken just
//!   before the batch (the old committed state, which is allowed).
//!
//! Reads that include staged data take the staging lock, then the
//! snapshot; the `committing` slot is emptied (under the write lock) only
//! after the batch is visible, so such a read sees a commit's writes
//! either in the slot or in the snapshot, never in neither.
//!
//! # Keeping restarts fast and the disk bounded
//!
//! After every commit that brings the bytes written since the last
//! rotation over [`DurableOptions::rotate_bytes`], both keyspaces rotate
//! their memtable and fjall flushes it to a table file in the background,
//! so a restart never re-inserts more than about that much into
//! memtables, and memory stays bounded.
//!
//! What fjall 3.1 does not let us bound further: it rotates the journal
//! file only once 64 MB were written to it (hard-coded in its flush
//! worker), and on open it decodes the whole active journal, looking up
//! each item's keyspace, even items already flushed. So a restart reads
//! up to ~1M journal items (~1.4 s measured for 1M 48-byte writes on a
//! loaded 2-core machine, whether flushed or not). A sealed journal is
//! deleted once every memtable it covers is flushed, which the rotation
//! above makes prompt. Disk is therefore live tables (compaction, fjall's
//! default leveled strategy, drops overwritten versions and tombstones)
//! plus one journal of at most ~64 MB (a sparse preallocated file);
//! `tests::disk_stays_bounded` checks both parts.

mod layout;

#[cfg(test)]
pub(crate) mod contract;
#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode, Readable};
use parking_lot::{Mutex, RwLock};

pub use layout::FORMAT_VERSION;
use layout::{err, DirState, LockedDir};

use super::{
    prefix_range, range_is_empty, table_prefix, KeyRange, KeyedWrite, StateStore, StorageError,
    StorageResult,
};
use crate::meta::catalog::TableId;

const STATE_KEYSPACE: &str = "state";
const META_KEYSPACE: &str = "meta";
const META_EPOCH: &[u8] = b"committed_epoch";
const META_FORMAT: &[u8] = b"format_version";

/// Tuning knobs; the defaults suit production, tests shrink them.
#[derive(Debug, Clone)]
pub struct DurableOptions {
    /// Rotate the memtables (and so let fjall flush them and drop the
    /// journal) once this many key+value bytes were committed since the
    /// last rotation. Bounds the journal replayed on restart.
    pub rotate_bytes: u64,
    /// fjall block cache size.
    pub cache_bytes: u64,
}

impl Default for DurableOptions {
    fn default() -> Self {
        DurableOptions {
            rotate_bytes: 8 << 20,
            cache_bytes: 64 << 20,
        }
    }
}

/// Latest write of each key staged for one epoch (`None`: delete).
type EpochWrites = BTreeMap<Bytes, Option<Bytes>>;

#[derive(Default)]
struct Staged {
    /// epoch → writes staged for it and not yet picked up by a commit.
    epochs: BTreeMap<u64, EpochWrites>,
    /// Epochs a running commit is writing; still served to uncommitted
    /// reads until the batch is visible in fjall.
    committing: Option<Arc<BTreeMap<u64, EpochWrites>>>,
}

impl Staged {
    fn is_empty(&self) -> bool {
        self.epochs.is_empty() && self.committing.is_none()
    }

    /// Epoch maps from oldest to newest precedence: a commit in flight is
    /// logically committed already, so everything in `epochs` overrides
    /// it (even an epoch ingested late with a smaller number, as in the
    /// memory store).
    fn layers(&self) -> impl DoubleEndedIterator<Item = &EpochWrites> {
        self.committing
            .iter()
            .flat_map(|c| c.values())
            .chain(self.epochs.values())
    }

    fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        self.layers().rev().find_map(|w| w.get(key).cloned())
    }
}

pub struct DurableStateStore {
    db: Database,
    /// State keys (`table_id | vnode | pk`) → values, committed only.
    state: Keyspace,
    /// The committed epoch and the format version.
    meta: Keyspace,
    staged: RwLock<Staged>,
    /// Held exclusively while one of our batches is applied, shared while
    /// a read snapshot is taken: see "Atomic to readers" above.
    applying: RwLock<()>,
    /// A snapshot taken just before the batch now being applied (set only
    /// while `applying` is held exclusively): readers use it instead of
    /// waiting for the commit's fsync, and see the old committed state.
    before_batch: Mutex<Option<fjall::Snapshot>>,
    /// Serializes commits and table deletions (fjall batches of ours), so
    /// the epoch written is always the max and rotation accounting is
    /// exact.
    commit_lock: Mutex<CommitState>,
    committed_epoch: AtomicU64,
    options: DurableOptions,
    path: PathBuf,
    /// Declared last: dropped after fjall has closed its files.
    _dir: LockedDir,
}

struct CommitState {
    /// Key+value bytes committed since the memtables were last rotated.
    bytes_since_rotate: u64,
}

fn io(path: &Path, what: &str, e: fjall::Error) -> StorageError {
    err(path, format_args!("{what}: {e}"))
}

impl DurableStateStore {
    /// Opens the store in `dir`, creating it if `dir` does not exist or is
    /// empty.
    pub fn open(dir: &Path) -> Result<Self, StorageError> {
        Self::open_with(dir, DurableOptions::default())
    }

    pub fn open_with(dir: &Path, options: DurableOptions) -> Result<Self, StorageError> {
        let locked = layout::open_dir(dir)?;
        let fjall_path = locked.fjall_path();
        let db = Database::builder(&fjall_path)
            .cache_size(options.cache_bytes)
            .open()
            .map_err(|e| {
                io(
                    &fjall_path,
                    "cannot open fjall database (a table or journal file is damaged, \
                     truncated or missing)",
                    e,
                )
            })?;
        let (state, meta, epoch) = match locked.state {
            DirState::New => {
                let (state, meta) = Self::create_keyspaces(&db, &fjall_path)?;
                let mut batch = db.batch().durability(Some(PersistMode::SyncAll));
                batch.insert(&meta, META_FORMAT, FORMAT_VERSION.to_be_bytes());
                batch.insert(&meta, META_EPOCH, 0u64.to_be_bytes());
                batch
                    .commit()
                    .map_err(|e| io(&fjall_path, "cannot initialize", e))?;
                layout::write_version(&locked.root)?;
                (state, meta, 0)
            }
            DirState::Existing => {
                for name in [STATE_KEYSPACE, META_KEYSPACE] {
                    if !db.keyspace_exists(name) {
                        return Err(err(
                            &fjall_path,
                            format_args!("keyspace {name:?} is missing: the store is corrupt"),
                        ));
                    }
                }
                let (state, meta) = Self::create_keyspaces(&db, &fjall_path)?;
                let epoch = Self::check_meta(&db, &meta, &fjall_path)?;
                (state, meta, epoch)
            }
        };
        Ok(DurableStateStore {
            db,
            state,
            meta,
            staged: RwLock::new(Staged::default()),
            applying: RwLock::new(()),
            before_batch: Mutex::new(None),
            commit_lock: Mutex::new(CommitState {
                bytes_since_rotate: 0,
            }),
            committed_epoch: AtomicU64::new(epoch),
            options,
            path: dir.to_path_buf(),
            _dir: locked,
        })
    }

    fn create_keyspaces(db: &Database, path: &Path) -> StorageResult<(Keyspace, Keyspace)> {
        let open = |name: &str| {
            db.keyspace(name, KeyspaceCreateOptions::default)
                .map_err(|e| io(path, &format!("cannot open keyspace {name:?}"), e))
        };
        Ok((open(STATE_KEYSPACE)?, open(META_KEYSPACE)?))
    }

    /// Reads and checks the `meta` keyspace of an existing store.
    fn check_meta(db: &Database, meta: &Keyspace, path: &Path) -> StorageResult<u64> {
        let snapshot = db.snapshot();
        let read = |key: &[u8]| {
            snapshot
                .get(meta, key)
                .map_err(|e| io(path, "cannot read metadata", e))
        };
        match read(META_FORMAT)? {
            Some(v) if *v == FORMAT_VERSION.to_be_bytes() => {}
            Some(v) => {
                return Err(err(
                    path,
                    format_args!(
                        "format version in metadata is {:?}, expected {FORMAT_VERSION}: \
                         the store is corrupt",
                        &*v
                    ),
                ))
            }
            None => {
                return Err(err(
                    path,
                    "format version missing from metadata: the store is corrupt",
                ))
            }
        }
        match read(META_EPOCH)? {
            Some(v) => match <[u8; 8]>::try_from(&*v) {
                Ok(b) => Ok(u64::from_be_bytes(b)),
                Err(_) => Err(err(
                    path,
                    "committed epoch is not 8 bytes: the store is corrupt",
                )),
            },
            None => Err(err(
                path,
                "committed epoch missing from metadata: the store is corrupt",
            )),
        }
    }

    /// The directory this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes on disk under the store's directory (journals and tables).
    pub fn disk_space(&self) -> StorageResult<u64> {
        self.db
            .disk_space()
            .map_err(|e| io(&self.path, "cannot measure disk space", e))
    }

    /// Writes `batch` durably and rotates the memtables if enough was
    /// written since the last rotation. Caller holds `commit_lock`.
    fn write_durably(
        &self,
        cs: &mut CommitState,
        batch: fjall::OwnedWriteBatch,
        bytes: u64,
        what: &str,
    ) -> StorageResult<()> {
        // No batch of ours is in flight (we hold `commit_lock`), so this
        // snapshot is whole.
        *self.before_batch.lock() = Some(self.db.snapshot());
        let result = {
            let _applying = self.applying.write();
            batch
                .durability(Some(PersistMode::SyncAll))
                .commit()
                .map_err(|e| io(&self.path, what, e))
        };
        // Cleared before the caller publishes the new committed epoch, so
        // a reader that saw the new epoch never gets the old snapshot.
        *self.before_batch.lock() = None;
        result?;
        cs.bytes_since_rotate += bytes;
        if cs.bytes_since_rotate >= self.options.rotate_bytes {
            cs.bytes_since_rotate = 0;
            // The commit is durable already; a failed rotation only makes
            // the next restart replay more journal.
            for ks in [&self.state, &self.meta] {
                if let Err(e) = ks.rotate_memtable() {
                    tracing::warn!(path = %self.path.display(), "memtable rotation failed: {e}");
                }
            }
        }
        Ok(())
    }

    /// A snapshot that contains each of our batches entirely or not at
    /// all.
    fn snapshot(&self) -> fjall::Snapshot {
        if let Some(_applying) = self.applying.try_read() {
            return self.db.snapshot();
        }
        if let Some(before) = self.before_batch.lock().clone() {
            return before;
        }
        let _applying = self.applying.read();
        self.db.snapshot()
    }

    fn committed_scan(
        &self,
        snapshot: &fjall::Snapshot,
        range: KeyRange,
    ) -> impl Iterator<Item = StorageResult<(Bytes, Bytes)>> + '_ {
        snapshot.range(&self.state, range).map(move |guard| {
            guard
                .into_inner()
                .map(|(k, v)| (Bytes::copy_from_slice(&k), Bytes::copy_from_slice(&v)))
                .map_err(|e| io(&self.path, "scan failed", e))
        })
    }
}

fn as_slices(range: &KeyRange) -> (Bound<&[u8]>, Bound<&[u8]>) {
    (
        range.0.as_ref().map(|v| v.as_slice()),
        range.1.as_ref().map(|v| v.as_slice()),
    )
}

impl StateStore for DurableStateStore {
    fn ingest(&self, epoch: u64, writes: Vec<KeyedWrite>) -> StorageResult<()> {
        if writes.is_empty() {
            return Ok(());
        }
        self.staged
            .write()
            .epochs
            .entry(epoch)
            .or_default()
            .extend(writes);
        Ok(())
    }

    fn commit(&self, epoch: u64) -> StorageResult<()> {
        let mut cs = self.commit_lock.lock();
        let ready = {
            let mut staged = self.staged.write();
            debug_assert!(staged.committing.is_none(), "commits are serialized");
            let later = staged.epochs.split_off(&(epoch.saturating_add(1)));
            let ready = Arc::new(std::mem::replace(&mut staged.epochs, later));
            staged.committing = Some(ready.clone());
            ready
        };
        // Later epochs win; one write per key (fjall gives every item of a
        // batch the same seqno, so duplicates would be ambiguous).
        let merged: EpochWrites;
        let writes = match ready.values().next() {
            Some(only) if ready.len() == 1 => only,
            _ => {
                merged = ready
                    .values()
                    .flat_map(|w| w.iter().map(|(k, v)| (k.clone(), v.clone())))
                    .collect();
                &merged
            }
        };
        let new_epoch = self.committed_epoch.load(Ordering::SeqCst).max(epoch);
        let mut batch = fjall::OwnedWriteBatch::with_capacity(self.db.clone(), writes.len() + 1);
        let mut bytes = 0u64;
        for (k, v) in writes {
            bytes += (k.len() + v.as_ref().map_or(0, |v| v.len())) as u64;
            match v {
                Some(v) => batch.insert(&self.state, k.as_ref(), v.as_ref()),
                None => batch.remove(&self.state, k.as_ref()),
            }
        }
        batch.insert(&self.meta, META_EPOCH, new_epoch.to_be_bytes());
        let result = self.write_durably(&mut cs, batch, bytes, "commit failed");
        let mut staged = self.staged.write();
        let committing = staged.committing.take();
        match result {
            Ok(()) => {
                self.committed_epoch.store(new_epoch, Ordering::SeqCst);
                Ok(())
            }
            Err(e) => {
                // Put the epochs back under anything ingested meanwhile.
                if let Some(c) = committing {
                    for (ep, mut w) in Arc::unwrap_or_clone(c) {
                        let slot = staged.epochs.entry(ep).or_default();
                        w.append(slot);
                        *slot = w;
                    }
                }
                Err(e)
            }
        }
    }

    fn abort_uncommitted(&self) {
        // A commit in flight is past the point of no return; like in the
        // memory store it is ordered before this abort.
        self.staged.write().epochs.clear();
    }

    fn committed_epoch(&self) -> u64 {
        self.committed_epoch.load(Ordering::SeqCst)
    }

    fn get(&self, key: &[u8], uncommitted: bool) -> StorageResult<Option<Bytes>> {
        let snapshot = if uncommitted {
            let staged = self.staged.read();
            if let Some(v) = staged.get(key) {
                return Ok(v);
            }
            // Taken under the lock: see the module doc.
            self.snapshot()
        } else {
            self.snapshot()
        };
        snapshot
            .get(&self.state, key)
            .map(|v| v.map(|v| Bytes::copy_from_slice(&v)))
            .map_err(|e| io(&self.path, "get failed", e))
    }

    fn scan(&self, range: KeyRange, uncommitted: bool) -> StorageResult<Vec<(Bytes, Bytes)>> {
        if range_is_empty(&range) {
            return Ok(Vec::new());
        }
        let (snapshot, overlay) = {
            let staged = self.staged.read();
            let overlay = if uncommitted && !staged.is_empty() {
                let mut overlay = EpochWrites::new();
                for layer in staged.layers() {
                    for (k, v) in layer.range::<[u8], _>(as_slices(&range)) {
                        overlay.insert(k.clone(), v.clone());
                    }
                }
                overlay
            } else {
                EpochWrites::new()
            };
            (self.snapshot(), overlay)
        };
        let base = self.committed_scan(&snapshot, range);
        if overlay.is_empty() {
            return base.collect();
        }
        // Merge two sorted streams; the overlay wins on equal keys.
        let mut out = Vec::new();
        let mut over = overlay.into_iter().peekable();
        for item in base {
            let (k, v) = item?;
            while let Some((ok, ov)) = over.next_if(|(ok, _)| *ok < k) {
                out.extend(ov.map(|ov| (ok, ov)));
            }
            match over.next_if(|(ok, _)| *ok == k) {
                Some((ok, ov)) => out.extend(ov.map(|ov| (ok, ov))),
                None => out.push((k, v)),
            }
        }
        out.extend(over.filter_map(|(k, v)| v.map(|v| (k, v))));
        Ok(out)
    }

    fn scan_committed_limit(
        &self,
        range: KeyRange,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        if range_is_empty(&range) {
            return Ok(Vec::new());
        }
        let snapshot = self.snapshot();
        self.committed_scan(&snapshot, range).take(limit).collect()
    }

    fn delete_table(&self, table_id: TableId) -> StorageResult<()> {
        let mut cs = self.commit_lock.lock();
        let snapshot = self.snapshot();
        let mut batch = self.db.batch();
        let mut bytes = 0u64;
        for item in self.committed_scan(&snapshot, prefix_range(&table_prefix(table_id))) {
            let (k, _) = item?;
            bytes += k.len() as u64;
            batch.remove(&self.state, k.as_ref());
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.write_durably(&mut cs, batch, bytes, "delete of table state failed")
    }
}
