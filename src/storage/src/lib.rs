//! The state store shared by all compute nodes, and the per-actor state
//! tables built on it.
//!
//! Contract (docs/design.md §3, §9): actors hand their writes of an epoch to their
//! compute node's store with [`StateStore::ingest`] when the barrier
//! closing that epoch passes them. Once every actor of the node has done
//! so, [`StateStore::sync`] makes the node's writes of that epoch durable
//! (uploaded as immutable files) and returns what it wrote; meta commits
//! the epoch with [`EpochCommitter::commit_epoch`] once every node has
//! synced, which makes all writes of that epoch (and earlier ones) visible
//! to batch reads atomically. Batch reads see only committed data; an
//! actor may read its node's staged writes (`uncommitted = true`), and an
//! actor that takes over vnodes first waits until the epoch that closed
//! their previous owner's writes is committed.
//!
//! The crate owns keys, files and versions, and knows rows only as bytes
//! and `common` values: not the catalog, the executors, meta or SQL
//! (`ci/layers`). Meta keeps the versions in its meta store and commits
//! epochs through [`EpochCommitter`].

/// The [`StateStore`] contract as executable checks (for the tests of
/// every store, here and in the crates above: feature `testing`).
#[cfg(any(test, feature = "testing"))]
pub mod contract;
/// State on object storage: epoch files, versions, block cache,
/// compaction.
pub mod lsm;
pub mod memory;
pub mod state_table;

use std::ops::Bound;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

pub use memory::MemoryStateStore;
pub use state_table::StateTable;

use ebbflow_common::TableId;
use ebbflow_common::VirtualNode;

#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    #[error("state store I/O error: {0}")]
    Io(String),
    #[error("{0}")]
    Decode(#[from] ebbflow_common::encoding::DecodeError),
    #[error("injected state store fault")]
    InjectedFault,
    /// The process is stopping (its runtime cancelled the I/O): retrying
    /// cannot help.
    #[error("the state store is shutting down")]
    ShuttingDown,
    /// A version of the store breaks its invariants (sorted levels, files
    /// where they say they are).
    #[error("the version is inconsistent: {0}")]
    Inconsistent(String),
}

pub type StorageResult<T> = Result<T, StorageError>;

/// One write: a key and its new value, or `None` to delete it.
pub type KeyedWrite = (Bytes, Option<Bytes>);

/// Sort writes by key (stably: later writes stay later) and keep the last
/// of each key.
pub fn last_per_key<K: Ord, V>(mut writes: Vec<(K, V)>) -> Vec<(K, V)> {
    writes.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(K, V)> = Vec::with_capacity(writes.len());
    for w in writes {
        match out.last_mut() {
            Some(last) if last.0 == w.0 => *last = w,
            _ => out.push(w),
        }
    }
    out
}

pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// One immutable sorted file of the store, as a version lists it. The keys
/// are `table_id | vnode | pk` (hex in JSON).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SstInfo {
    /// Unique id; the object's name is derived from it.
    pub id: u64,
    /// 0 for epoch files (they overlap; newer wins), 1.. for the sorted
    /// runs compaction writes.
    pub level: u32,
    /// The newest epoch whose writes the file holds.
    pub epoch: u64,
    pub size: u64,
    /// Where the index, filter and footer start (one ranged read fetches
    /// them).
    pub meta_offset: u64,
    #[serde(with = "hex_bytes")]
    pub first_key: Bytes,
    #[serde(with = "hex_bytes")]
    pub last_key: Bytes,
    pub key_count: u64,
    pub tombstones: u64,
}

mod hex_bytes {
    use bytes::Bytes;

    pub fn serialize<S: serde::Serializer>(b: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        let mut out = String::with_capacity(b.len() * 2);
        for x in b.iter() {
            out.push_str(&format!("{x:02x}"));
        }
        s.serialize_str(&out)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let s: String = serde::Deserialize::deserialize(d)?;
        if !s.len().is_multiple_of(2) {
            return Err(serde::de::Error::custom("odd hex length"));
        }
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map(Bytes::from)
            .map_err(serde::de::Error::custom)
    }
}

/// A compute node's state store. Keys are `table_id | vnode | memcomparable(pk)`.
#[async_trait]
pub trait StateStore: Send + Sync + 'static {
    /// Stage writes belonging to `epoch`.
    fn ingest(&self, epoch: u64, writes: Vec<KeyedWrite>) -> StorageResult<()>;
    /// Make every staged write of epochs `<= epoch` durable and return the
    /// files holding them, for meta to commit. The writes stay readable
    /// (uncommitted) until the version committing them is installed.
    async fn sync(&self, epoch: u64) -> StorageResult<Vec<SstInfo>>;
    /// Drop every staged or synced write not yet committed (recovery).
    fn abort_uncommitted(&self);
    /// The last committed epoch this store has installed (0 before the
    /// first commit).
    fn committed_epoch(&self) -> u64;
    async fn get(&self, key: &[u8], uncommitted: bool) -> StorageResult<Option<Bytes>>;
    /// The first `limit` live pairs of a key range in key order.
    async fn scan_limit(
        &self,
        range: KeyRange,
        uncommitted: bool,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>>;
    /// All live pairs of a key range in key order.
    async fn scan(&self, range: KeyRange, uncommitted: bool) -> StorageResult<Vec<(Bytes, Bytes)>> {
        self.scan_limit(range, uncommitted, usize::MAX).await
    }
    /// The first `limit` committed pairs of a key range, in key order.
    async fn scan_committed_limit(
        &self,
        range: KeyRange,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>>;
    /// The committed state as of now, pinned: every read of the snapshot
    /// sees the same epoch (a batch query reads all its tables from one).
    fn snapshot(&self) -> Arc<dyn ReadSnapshot>;
}

/// A pinned committed version (see [`StateStore::snapshot`]).
#[async_trait]
pub trait ReadSnapshot: Send + Sync {
    fn epoch(&self) -> u64;
    /// The version's id and files (none for a store without files).
    fn files(&self) -> (u64, Vec<SstInfo>) {
        (0, Vec::new())
    }
    /// The first `limit` pairs of `range`.
    async fn scan_limit(&self, range: KeyRange, limit: usize)
        -> StorageResult<Vec<(Bytes, Bytes)>>;
    async fn scan(&self, range: KeyRange) -> StorageResult<Vec<(Bytes, Bytes)>> {
        self.scan_limit(range, usize::MAX).await
    }
}

/// The longest one epoch waits in [`EpochCommitter::write_stall`]; after it
/// the epoch commits anyway (a compactor that cannot run must not stop the
/// job for good).
pub const WRITE_STALL_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// Meta's side of the store: commits epochs and table drops durably.
#[async_trait]
pub trait EpochCommitter: Send + Sync + 'static {
    /// The last committed epoch.
    fn committed_epoch(&self) -> u64;
    /// The catalog committed with the last epoch that carried one.
    fn committed_catalog(&self) -> Option<Bytes>;
    /// Commit `epoch`: the files every compute node synced for it, and the
    /// catalog when it changed, atomically; then make the new version
    /// visible to every store. Epochs commit in order.
    async fn commit_epoch(
        &self,
        epoch: u64,
        files: Vec<SstInfo>,
        catalog: Option<Bytes>,
    ) -> StorageResult<()>;
    /// Before an epoch commits: waits while the store is too far behind
    /// for reads to stay bounded (too many L0 files), for at most
    /// [`WRITE_STALL_MAX`]. Sources hold back while their last epoch is
    /// uncommitted, so the job slows down to what the store can take.
    async fn write_stall(&self) {}
    /// Delete all state of a table, committed with the next epoch.
    fn drop_table(&self, table_id: TableId);
    /// Before a recovery: read the committed version again if a commit
    /// failed in a way that leaves unknown whether it landed.
    async fn resync(&self) -> StorageResult<()> {
        Ok(())
    }
}

/// The key prefix of a table.
pub fn table_prefix(table_id: TableId) -> Vec<u8> {
    table_id.to_be_bytes().to_vec()
}

/// The key prefix of one vnode of a table.
pub fn vnode_prefix(table_id: TableId, vnode: VirtualNode) -> Vec<u8> {
    let mut k = Vec::with_capacity(6 + 16);
    k.extend_from_slice(&table_id.to_be_bytes());
    k.extend_from_slice(&vnode.to_be_bytes());
    k
}

/// The smallest key greater than every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Bound<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Bound::Excluded(end);
        }
    }
    Bound::Unbounded
}

pub fn prefix_range(prefix: &[u8]) -> KeyRange {
    (Bound::Included(prefix.to_vec()), prefix_end(prefix))
}

/// Whether no key can lie in `range` (a start above the end would make
/// `BTreeMap::range` panic).
pub(crate) fn range_is_empty(range: &KeyRange) -> bool {
    use Bound::*;
    match (&range.0, &range.1) {
        (Included(s), Included(e)) => s > e,
        (Included(s) | Excluded(s), Excluded(e)) | (Excluded(s), Included(e)) => s >= e,
        _ => false,
    }
}
