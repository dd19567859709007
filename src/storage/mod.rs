//! The state store shared by all compute nodes, and the per-actor state
//! tables built on it.
//!
//! Contract (DESIGN §3): actors hand their writes of an epoch to the store
//! with [`StateStore::ingest`] when the barrier closing that epoch passes
//! them; meta calls [`StateStore::commit`] once every actor has done so,
//! which makes all writes of that epoch (and earlier ones) visible to batch
//! reads atomically. Batch reads see only committed data; an actor may read
//! its own staged writes (`uncommitted = true`), and an actor that takes
//! over vnodes first waits until the epoch that closed their previous
//! owner's writes is committed.

pub mod durable;
pub mod memory;
pub mod state_table;

use std::ops::Bound;

use bytes::Bytes;

pub use durable::DurableStateStore;
pub use memory::MemoryStateStore;
pub use state_table::StateTable;

use crate::common::VirtualNode;
use crate::meta::catalog::TableId;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("state store I/O error: {0}")]
    Io(String),
    #[error("{0}")]
    Decode(#[from] crate::common::encoding::DecodeError),
    #[error("injected state store fault")]
    InjectedFault,
}

pub type StorageResult<T> = Result<T, StorageError>;

/// One write: a key and its new value, or `None` to delete it.
pub type KeyedWrite = (Bytes, Option<Bytes>);

pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// The state store. Keys are `table_id | vnode | memcomparable(pk)`.
pub trait StateStore: Send + Sync + 'static {
    /// Stage writes belonging to `epoch`.
    fn ingest(&self, epoch: u64, writes: Vec<KeyedWrite>) -> StorageResult<()>;
    /// Atomically make every staged write of epochs `<= epoch` visible (and
    /// durable, for a durable store).
    fn commit(&self, epoch: u64) -> StorageResult<()>;
    /// Drop every staged, uncommitted write (recovery).
    fn abort_uncommitted(&self);
    /// The last committed epoch (0 before the first commit).
    fn committed_epoch(&self) -> u64;
    fn get(&self, key: &[u8], uncommitted: bool) -> StorageResult<Option<Bytes>>;
    /// All live pairs of a key range in key order.
    fn scan(&self, range: KeyRange, uncommitted: bool) -> StorageResult<Vec<(Bytes, Bytes)>>;
    /// The first `limit` committed pairs of a key range, in key order.
    fn scan_committed_limit(
        &self,
        range: KeyRange,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        let mut all = self.scan(range, false)?;
        all.truncate(limit);
        Ok(all)
    }
    /// Delete all state of a table (drop), committed with the next commit.
    fn delete_table(&self, table_id: TableId) -> StorageResult<()>;
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
