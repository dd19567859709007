//! The in-memory state store: a committed ordered map plus the staged
//! writes of epochs not yet committed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::RwLock;

use super::{
    prefix_range, range_is_empty, table_prefix, KeyRange, KeyedWrite, StateStore, StorageResult,
};
use crate::meta::catalog::TableId;

#[derive(Default)]
pub struct MemoryStateStore {
    committed: RwLock<BTreeMap<Bytes, Bytes>>,
    /// epoch → writes staged for it, applied in order on commit.
    staged: RwLock<BTreeMap<u64, Vec<KeyedWrite>>>,
    committed_epoch: AtomicU64,
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

impl StateStore for MemoryStateStore {
    fn ingest(&self, epoch: u64, writes: Vec<KeyedWrite>) -> StorageResult<()> {
        if writes.is_empty() {
            return Ok(());
        }
        self.staged.write().entry(epoch).or_default().extend(writes);
        Ok(())
    }

    fn commit(&self, epoch: u64) -> StorageResult<()> {
        let mut staged = self.staged.write();
        let later = staged.split_off(&(epoch + 1));
        let ready = std::mem::replace(&mut *staged, later);
        let mut committed = self.committed.write();
        for (_, writes) in ready {
            for (k, v) in writes {
                match v {
                    Some(v) => {
                        committed.insert(k, v);
                    }
                    None => {
                        committed.remove(&k);
                    }
                }
            }
        }
        self.committed_epoch.fetch_max(epoch, Ordering::SeqCst);
        Ok(())
    }

    fn abort_uncommitted(&self) {
        self.staged.write().clear();
    }

    fn committed_epoch(&self) -> u64 {
        self.committed_epoch.load(Ordering::SeqCst)
    }

    fn get(&self, key: &[u8], uncommitted: bool) -> StorageResult<Option<Bytes>> {
        if uncommitted {
            if let Some(v) = self.staged_get(key) {
                return Ok(v);
            }
        }
        Ok(self.committed.read().get(key).cloned())
    }

    fn scan(&self, range: KeyRange, uncommitted: bool) -> StorageResult<Vec<(Bytes, Bytes)>> {
        if range_is_empty(&range) {
            return Ok(Vec::new());
        }
        let committed = self.committed.read();
        let base = committed.range::<[u8], _>((
            range.0.as_ref().map(|v| v.as_slice()),
            range.1.as_ref().map(|v| v.as_slice()),
        ));
        if !uncommitted {
            return Ok(base.map(|(k, v)| (k.clone(), v.clone())).collect());
        }
        let staged = self.staged.read();
        if staged.is_empty() {
            return Ok(base.map(|(k, v)| (k.clone(), v.clone())).collect());
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
            .collect())
    }

    fn scan_committed_limit(
        &self,
        range: KeyRange,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        if range_is_empty(&range) {
            return Ok(Vec::new());
        }
        let committed = self.committed.read();
        Ok(committed
            .range::<[u8], _>((
                range.0.as_ref().map(|v| v.as_slice()),
                range.1.as_ref().map(|v| v.as_slice()),
            ))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    fn delete_table(&self, table_id: TableId) -> StorageResult<()> {
        let range = prefix_range(&table_prefix(table_id));
        let mut committed = self.committed.write();
        let keys: Vec<Bytes> = committed
            .range::<[u8], _>((
                range.0.as_ref().map(|v| v.as_slice()),
                range.1.as_ref().map(|v| v.as_slice()),
            ))
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            committed.remove(&k);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_invisible_until_commit() {
        let s = MemoryStateStore::new();
        s.ingest(
            1,
            vec![(Bytes::from_static(b"a"), Some(Bytes::from_static(b"1")))],
        )
        .unwrap();
        assert_eq!(s.get(b"a", false).unwrap(), None);
        assert_eq!(s.get(b"a", true).unwrap(), Some(Bytes::from_static(b"1")));
        s.ingest(2, vec![(Bytes::from_static(b"a"), None)]).unwrap();
        s.commit(1).unwrap();
        assert_eq!(s.get(b"a", false).unwrap(), Some(Bytes::from_static(b"1")));
        assert_eq!(s.get(b"a", true).unwrap(), None);
        let all = s.scan(prefix_range(b""), true).unwrap();
        assert!(all.is_empty());
        s.commit(2).unwrap();
        assert_eq!(s.get(b"a", false).unwrap(), None);
        assert_eq!(s.committed_epoch(), 2);
    }
}
