//! The in-memory state store (unit tests): a committed ordered map plus the
//! staged writes of epochs not yet committed. It is its own
//! [`EpochCommitter`]: `sync` writes nothing, `commit_epoch` applies the
//! staged epochs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

use super::{
    range_is_empty, EpochCommitter, KeyRange, KeyedWrite, ReadSnapshot, SstInfo, StateStore,
    StorageResult,
};
use ebbflow_common::TableId;

type Map = BTreeMap<Bytes, Bytes>;

#[derive(Default)]
pub struct MemoryStateStore {
    /// Copied on write, so a snapshot is an `Arc` clone.
    committed: RwLock<Arc<Map>>,
    /// epoch → writes staged for it, applied in order on commit.
    staged: RwLock<BTreeMap<u64, Vec<KeyedWrite>>>,
    committed_epoch: AtomicU64,
    catalog: Mutex<Option<Bytes>>,
    dropped: Mutex<BTreeSet<TableId>>,
}

impl MemoryStateStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Latest staged value of `key`: `Some(None)` if staged as deleted.
    fn staged_get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        let staged = self.staged.read();
        for writes in staged.values().rev() {
            if let Some((_, v)) = writes.iter().rev().find(|(k, _)| k.as_ref() == key) {
                return Some(v.clone());
            }
        }
        None
    }

    /// Apply every staged epoch `<= epoch` (and pending table drops).
    pub fn commit(&self, epoch: u64) {
        let mut staged = self.staged.write();
        let later = staged.split_off(&(epoch + 1));
        let ready = std::mem::replace(&mut *staged, later);
        let mut committed = self.committed.write();
        let map = Arc::make_mut(&mut committed);
        for (_, writes) in ready {
            for (k, v) in writes {
                match v {
                    Some(v) => {
                        map.insert(k, v);
                    }
                    None => {
                        map.remove(&k);
                    }
                }
            }
        }
        for t in std::mem::take(&mut *self.dropped.lock()) {
            let range = super::prefix_range(&super::table_prefix(t));
            let keys: Vec<Bytes> = range_of(map, &range).map(|(k, _)| k.clone()).collect();
            for k in keys {
                map.remove(&k);
            }
        }
        self.committed_epoch.fetch_max(epoch, Ordering::SeqCst);
    }
}

fn range_of<'a>(map: &'a Map, range: &KeyRange) -> impl Iterator<Item = (&'a Bytes, &'a Bytes)> {
    let empty = range_is_empty(range);
    let bounds = (
        range.0.as_ref().map(|v| v.as_slice()),
        range.1.as_ref().map(|v| v.as_slice()),
    );
    // `BTreeMap::range` panics on an inverted range.
    (!empty)
        .then(|| map.range::<[u8], _>(bounds))
        .into_iter()
        .flatten()
}

fn in_range(range: &KeyRange, key: &[u8]) -> bool {
    use std::ops::Bound::*;
    let lo = match &range.0 {
        Included(s) => key >= s.as_slice(),
        Excluded(s) => key > s.as_slice(),
        Unbounded => true,
    };
    let hi = match &range.1 {
        Included(e) => key <= e.as_slice(),
        Excluded(e) => key < e.as_slice(),
        Unbounded => true,
    };
    lo && hi
}

struct MemorySnapshot {
    map: Arc<Map>,
    epoch: u64,
}

#[async_trait]
impl ReadSnapshot for MemorySnapshot {
    fn epoch(&self) -> u64 {
        self.epoch
    }

    async fn scan_limit(
        &self,
        range: KeyRange,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        Ok(range_of(&self.map, &range)
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }
}

#[async_trait]
impl StateStore for MemoryStateStore {
    fn ingest(&self, epoch: u64, writes: Vec<KeyedWrite>) -> StorageResult<()> {
        if writes.is_empty() {
            return Ok(());
        }
        self.staged.write().entry(epoch).or_default().extend(writes);
        Ok(())
    }

    async fn sync(&self, _epoch: u64) -> StorageResult<Vec<SstInfo>> {
        Ok(Vec::new())
    }

    fn abort_uncommitted(&self) {
        self.staged.write().clear();
    }

    fn committed_epoch(&self) -> u64 {
        self.committed_epoch.load(Ordering::SeqCst)
    }

    async fn get(&self, key: &[u8], uncommitted: bool) -> StorageResult<Option<Bytes>> {
        if uncommitted {
            if let Some(v) = self.staged_get(key) {
                return Ok(v);
            }
        }
        Ok(self.committed.read().get(key).cloned())
    }

    async fn scan_limit(
        &self,
        range: KeyRange,
        uncommitted: bool,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        let committed = self.committed.read().clone();
        let base = range_of(&committed, &range);
        let staged = self.staged.read();
        if !uncommitted || staged.is_empty() {
            return Ok(base
                .take(limit)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect());
        }
        let mut merged: BTreeMap<Bytes, Option<Bytes>> =
            base.map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
        for writes in staged.values() {
            for (k, v) in writes {
                if in_range(&range, k) {
                    merged.insert(k.clone(), v.clone());
                }
            }
        }
        Ok(merged
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .take(limit)
            .collect())
    }

    async fn scan_committed_limit(
        &self,
        range: KeyRange,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        let committed = self.committed.read().clone();
        Ok(range_of(&committed, &range)
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    fn snapshot(&self) -> Arc<dyn ReadSnapshot> {
        Arc::new(MemorySnapshot {
            map: self.committed.read().clone(),
            epoch: StateStore::committed_epoch(self),
        })
    }
}

#[async_trait]
impl EpochCommitter for MemoryStateStore {
    fn committed_epoch(&self) -> u64 {
        self.committed_epoch.load(Ordering::SeqCst)
    }

    fn committed_catalog(&self) -> Option<Bytes> {
        self.catalog.lock().clone()
    }

    async fn commit_epoch(
        &self,
        epoch: u64,
        _files: Vec<SstInfo>,
        catalog: Option<Bytes>,
    ) -> StorageResult<()> {
        if let Some(c) = catalog {
            *self.catalog.lock() = Some(c);
        }
        self.commit(epoch);
        Ok(())
    }

    fn drop_table(&self, table_id: TableId) {
        self.dropped.lock().insert(table_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn contract() {
        let s = MemoryStateStore::new();
        super::super::contract::check_state_store(&s, &s).await;
    }
}
