//! Reading state files through memory caches: the meta section (index and
//! filter) of each file, and its data blocks. Both are immutable, so a
//! cached copy is never stale; a file that leaves the version (compacted
//! away) is dropped from the caches when that version is installed, so
//! they hold live data rather than the inputs of past compactions.
//!
//! The caches are `quick_cache` (the S3-FIFO cache fjall uses), weighted
//! by bytes. Concurrent misses on one entry fetch it once. There is no
//! disk tier: with `file://` the object store is the local disk already.
//!
//! A file just uploaded seeds the caches with its index, and with its
//! blocks of the tables whose blocks were read lately ([`WARM_WINDOW`]):
//! a table whose executor keeps its state in memory, or a materialized
//! view nobody queries, would otherwise fill the block cache with blocks
//! that are compacted away before anyone reads them (Hummock refills its
//! cache on the same grounds: only data that was being read).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::object::ObjectStorage;
use super::sst::{Block, SstIndex};
use super::version::table_of;
use crate::{SstInfo, StorageError, StorageResult};
use ebbflow_common::TableId;

/// A table read from files within this long has the blocks of its fresh
/// files cached as they are uploaded.
pub const WARM_WINDOW: Duration = Duration::from_secs(30);

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
    /// When each table was last read from files.
    read_at: Mutex<HashMap<TableId, Instant>>,
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
            read_at: Mutex::new(HashMap::new()),
        }
    }

    /// Notes a read of a block of the table `key` belongs to.
    fn note_read(&self, key: &[u8]) {
        if let Some(t) = table_of(key) {
            self.read_at.lock().insert(t, Instant::now());
        }
    }

    /// Whether a block of the table was read within [`WARM_WINDOW`].
    fn read_lately(&self, t: TableId, now: Instant) -> bool {
        self.read_at
            .lock()
            .get(&t)
            .is_some_and(|&at| now.saturating_duration_since(at) < WARM_WINDOW)
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
        self.note_read(index.block_first_key(i));
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

    /// Seeds the caches with a file just written: its index, and the
    /// blocks of tables read lately (see the module's doc).
    pub fn warm(&self, f: &SstInfo, data: &Bytes) {
        let Some(meta) = data.get(f.meta_offset as usize..) else {
            return;
        };
        let Ok(index) = SstIndex::decode(data.slice_ref(meta)) else {
            return;
        };
        let index = Arc::new(index);
        let now = Instant::now();
        // A file holds a run of tables in key order: decided once a table.
        let mut last: Option<(TableId, bool)> = None;
        let mut wanted = |key: &[u8]| {
            let Some(t) = table_of(key) else {
                return false;
            };
            match last {
                Some((lt, w)) if lt == t => w,
                _ => {
                    let w = self.read_lately(t, now);
                    last = Some((t, w));
                    w
                }
            }
        };
        for i in 0..index.block_count() {
            // A block spanning tables is kept if either end's table is.
            let first = wanted(index.block_first_key(i));
            if !(wanted(index.block_last_key(i)) || first) {
                continue;
            }
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
    #[cfg(any(test, feature = "testing"))]
    pub fn cached_files(&self) -> std::collections::BTreeSet<u64> {
        let indexes = self.indexes.iter().map(|(id, _)| id);
        indexes
            .chain(self.blocks.iter().map(|((id, _), _)| id))
            .collect()
    }

    /// The tables of the cached blocks, by file.
    #[cfg(any(test, feature = "testing"))]
    pub fn cached_block_tables(&self) -> std::collections::BTreeSet<(u64, TableId)> {
        self.blocks
            .iter()
            .filter_map(|((id, _), b)| Some((id, table_of(b.key_at(0))?)))
            .collect()
    }

    /// Memory held by the caches, in bytes.
    pub fn cached_bytes(&self) -> u64 {
        self.indexes.weight() + self.blocks.weight()
    }
}
