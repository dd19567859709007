//! Reading state files through memory caches: the meta section (index and
//! filter) of each file, and its data blocks. Both are immutable, so a
//! cached copy is never stale; a file that leaves the version (compacted
//! away) is dropped from the caches when that version is installed, so
//! they hold live data rather than the inputs of past compactions.
//!
//! The caches are `quick_cache` (the S3-FIFO cache fjall uses), weighted
//! by bytes. Concurrent misses on one entry fetch it once. There is no
//! disk tier: with `file://` the object store is the local disk already.

use std::sync::Arc;

use bytes::Bytes;
use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::object::ObjectStorage;
use super::sst::{Block, SstIndex};
use crate::storage::{SstInfo, StorageError, StorageResult};

/// Cache sizes; the defaults suit the playground, tests shrink them.
#[derive(Clone, Debug)]
pub struct CacheOptions {
    pub block_cache_bytes: u64,
    pub index_cache_bytes: u64,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            block_cache_bytes: 256 << 20,
            index_cache_bytes: 64 << 20,
        }
    }
}

#[derive(Clone)]
struct IndexWeight;

impl Weighter<u64, Arc<SstIndex>> for IndexWeight {
    fn weight(&self, _: &u64, v: &Arc<SstIndex>) -> u64 {
        v.approx_memory() as u64 + 64
    }
}

#[derive(Clone)]
struct BlockWeight;

impl Weighter<(u64, u32), Arc<Block>> for BlockWeight {
    fn weight(&self, _: &(u64, u32), v: &Arc<Block>) -> u64 {
        v.approx_memory() as u64 + 64
    }
}

/// The object store plus the caches in front of it.
pub struct SstStore {
    objects: ObjectStorage,
    indexes: Cache<u64, Arc<SstIndex>, IndexWeight>,
    blocks: Cache<(u64, u32), Arc<Block>, BlockWeight>,
}

fn corrupt(f: &SstInfo, e: impl std::fmt::Display) -> StorageError {
    StorageError::Io(format!("state file {:016x} is corrupt: {e}", f.id))
}

impl SstStore {
    pub fn new(objects: ObjectStorage, options: &CacheOptions) -> SstStore {
        SstStore {
            objects,
            indexes: Cache::with_weighter(
                (options.index_cache_bytes / 4096).max(16) as usize,
                options.index_cache_bytes,
                IndexWeight,
            ),
            blocks: Cache::with_weighter(
                (options.block_cache_bytes / 16384).max(16) as usize,
                options.block_cache_bytes,
                BlockWeight,
            ),
        }
    }

    pub fn objects(&self) -> &ObjectStorage {
        &self.objects
    }

    /// The index and filter of `f`.
    pub async fn index(&self, f: &SstInfo) -> StorageResult<Arc<SstIndex>> {
        self.indexes
            .get_or_insert_async(&f.id, async {
                let meta = self.objects.get_range(f.id, f.meta_offset..f.size).await?;
                SstIndex::decode(meta)
                    .map(Arc::new)
                    .map_err(|e| corrupt(f, e))
            })
            .await
    }

    /// Data block `i` of `f`.
    pub async fn block(
        &self,
        f: &SstInfo,
        index: &SstIndex,
        i: usize,
    ) -> StorageResult<Arc<Block>> {
        let key = (f.id, i as u32);
        self.blocks
            .get_or_insert_async(&key, async {
                let (offset, len) = index.block_handle(i);
                let data = self
                    .objects
                    .get_range(f.id, offset..offset + len as u64)
                    .await?;
                index
                    .decode_block(i, data)
                    .map(Arc::new)
                    .map_err(|e| corrupt(f, e))
            })
            .await
    }

    /// Seeds the caches with a file just written (its blocks are likely
    /// to be read soon: the epoch's own writes).
    pub fn warm(&self, f: &SstInfo, data: &Bytes) {
        let Some(meta) = data.get(f.meta_offset as usize..) else {
            return;
        };
        let Ok(index) = SstIndex::decode(data.slice_ref(meta)) else {
            return;
        };
        let index = Arc::new(index);
        for i in 0..index.block_count() {
            let (offset, len) = index.block_handle(i);
            let Some(bytes) = data.get(offset as usize..offset as usize + len as usize) else {
                return;
            };
            if let Ok(block) = index.decode_block(i, data.slice_ref(bytes)) {
                self.blocks.insert((f.id, i as u32), Arc::new(block));
            }
        }
        self.indexes.insert(f.id, index);
    }

    /// Point read of `key` in file `f`: `Some(None)` is a tombstone.
    pub async fn get(&self, f: &SstInfo, key: &[u8]) -> StorageResult<Option<Option<Bytes>>> {
        let index = self.index(f).await?;
        if !index.may_contain(key) {
            return Ok(None);
        }
        let Some(i) = index.find_block(key) else {
            return Ok(None);
        };
        let block = self.block(f, &index, i).await?;
        Ok(block.get(key))
    }

    /// Drops the cached index and blocks of files `ids` (they left the
    /// version; a reader of an older snapshot fetches them again).
    pub fn forget(&self, ids: &[u64]) {
        let mut unindexed = std::collections::HashSet::new();
        for &id in ids {
            match self.indexes.remove(&id) {
                Some((_, index)) => {
                    for i in 0..index.block_count() {
                        self.blocks.remove(&(id, i as u32));
                    }
                }
                None => {
                    unindexed.insert(id);
                }
            }
        }
        // Blocks may outlive their file's index in the cache: one pass.
        if !unindexed.is_empty() {
            self.blocks.retain(|(id, _), _| !unindexed.contains(id));
        }
    }

    /// The files that have an index or a block in the caches.
    #[cfg(test)]
    pub fn cached_files(&self) -> std::collections::BTreeSet<u64> {
        let indexes = self.indexes.iter().map(|(id, _)| id);
        indexes
            .chain(self.blocks.iter().map(|((id, _), _)| id))
            .collect()
    }

    /// Memory held by the caches, in bytes.
    pub fn cached_bytes(&self) -> u64 {
        self.indexes.weight() + self.blocks.weight()
    }
}
