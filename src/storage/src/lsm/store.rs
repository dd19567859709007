//! A compute process's state store on object storage.
//!
//! Actors' writes are staged in memory per epoch ([`StateStore::ingest`]),
//! as sorted runs ([`super::epoch`]).
//! `sync(e)` seals every staged epoch `<= e` into one sorted file (cut in
//! several past [`StoreOptions::max_file_size`]) and uploads it; the data
//! stays readable from memory until meta installs the version that commits
//! it, so a reader always finds a write in memory or in the files of the
//! version it pinned — the swap happens under one lock.
//!
//! Uploads retry transient faults with backoff for as long as it takes:
//! while the object store is away, the epoch does not commit (a FLUSH
//! waits) and actors go on buffering the next epoch.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::RwLock;

use super::cache::SstStore;
use super::epoch::{EpochWrites, Run};
use super::read::{self, MergeScan};
use super::sst::{SstBuilder, SstMeta, SstOptions};
use super::version::Version;
use crate::{KeyRange, KeyedWrite, ReadSnapshot, SstInfo, StateStore, StorageError, StorageResult};

#[derive(Clone, Debug)]
pub struct StoreOptions {
    pub sst: SstOptions,
    /// An epoch's writes are cut into files of about this size.
    pub max_file_size: usize,
    /// How long an upload retries an unreachable object store before the
    /// sync (and so the barrier) fails.
    pub retry_for: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            sst: SstOptions::default(),
            max_file_size: 64 << 20,
            retry_for: Duration::from_secs(30),
        }
    }
}

#[derive(Default)]
struct Layers {
    /// The newest committed version installed here.
    version: Arc<Version>,
    /// epoch → writes not synced yet.
    staged: BTreeMap<u64, EpochWrites>,
    /// Highest synced epoch → its writes (and those of the epochs synced
    /// with it), uploaded but not committed yet.
    synced: BTreeMap<u64, Arc<EpochWrites>>,
}

impl Layers {
    /// In-memory layers newest first.
    fn newest_first(&self) -> impl Iterator<Item = &EpochWrites> {
        self.staged
            .values()
            .rev()
            .chain(self.synced.values().rev().map(|w| &**w))
    }

    fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        self.newest_first().find_map(|w| w.get(key))
    }

    fn range_layers(&self, range: &KeyRange) -> Vec<Vec<(Bytes, Option<Bytes>)>> {
        self.newest_first()
            .flat_map(|w| w.range_layers(range))
            .collect()
    }
}

pub struct LsmStateStore {
    sst: Arc<SstStore>,
    layers: RwLock<Layers>,
    options: StoreOptions,
    /// Which compute process wrote a file (part of nothing but logs).
    name: String,
}

impl LsmStateStore {
    pub fn new(
        sst: Arc<SstStore>,
        version: Arc<Version>,
        options: StoreOptions,
        name: &str,
    ) -> LsmStateStore {
        LsmStateStore {
            sst,
            layers: RwLock::new(Layers {
                version,
                ..Default::default()
            }),
            options,
            name: name.to_string(),
        }
    }

    /// Installs a newly committed version: its epochs leave memory in the
    /// same step, so no read misses them.
    pub fn install_version(&self, version: Arc<Version>) {
        let mut layers = self.layers.write();
        if version.id <= layers.version.id {
            return;
        }
        let after = version.committed_epoch.saturating_add(1);
        let synced = layers.synced.split_off(&after);
        let synced = std::mem::replace(&mut layers.synced, synced);
        let staged = layers.staged.split_off(&after);
        let staged = std::mem::replace(&mut layers.staged, staged);
        let old = std::mem::replace(&mut layers.version, version.clone());
        drop(layers);
        // A few buffers per epoch (see `epoch`): freed outside the lock.
        drop((synced, staged));
        let live: std::collections::HashSet<u64> = version.files().map(|f| f.id).collect();
        let gone: Vec<u64> = old
            .files()
            .map(|f| f.id)
            .filter(|id| !live.contains(id))
            .collect();
        if !gone.is_empty() {
            self.sst.forget(&gone);
        }
        ebbflow_metrics::store_cache_bytes(self.sst.cached_bytes());
    }

    pub fn version(&self) -> Arc<Version> {
        self.layers.read().version.clone()
    }

    fn range_is_empty(range: &KeyRange) -> bool {
        crate::range_is_empty(range)
    }

    /// Builds the files of `writes` (sorted) and uploads them.
    async fn upload(&self, epoch: u64, writes: Arc<EpochWrites>) -> StorageResult<Vec<SstInfo>> {
        let options = self.options.clone();
        let started = std::time::Instant::now();
        let built = tokio::task::spawn_blocking(move || build_files(&writes, &options))
            .await
            .map_err(|e| StorageError::Io(format!("building state files failed: {e}")))?;
        let build = started.elapsed();
        let mut warm = std::time::Duration::ZERO;
        let bytes: usize = built.iter().map(|(d, _)| d.len()).sum();
        let mut infos = Vec::with_capacity(built.len());
        for (data, mut info) in built {
            info.epoch = epoch;
            info.level = 0;
            info.id = upload_new(
                self.sst.objects(),
                &data,
                &self.name,
                self.options.retry_for,
            )
            .await?;
            let w = std::time::Instant::now();
            self.sst.warm(&info, &data);
            warm += w.elapsed();
            infos.push(info);
        }
        tracing::debug!(
            epoch,
            files = infos.len(),
            bytes,
            build_ms = build.as_secs_f64() * 1000.0,
            upload_ms = (started.elapsed() - build - warm).as_secs_f64() * 1000.0,
            warm_ms = warm.as_secs_f64() * 1000.0,
            "epoch uploaded"
        );
        Ok(infos)
    }
}

/// Uploads `data` under a fresh random id with a conditional put, retrying
/// transient faults with backoff for `retry_for`. Returns the id.
pub async fn upload_new(
    objects: &super::object::ObjectStorage,
    data: &Bytes,
    who: &str,
    retry_for: Duration,
) -> StorageResult<u64> {
    let mut delay = Duration::from_millis(50);
    let mut attempts = 0u32;
    let started = std::time::Instant::now();
    loop {
        let id = rand::random::<u64>() >> 1;
        match objects.put_new(id, data.clone()).await {
            Ok(true) => return Ok(id),
            // Somebody has that name: pick another.
            Ok(false) => continue,
            Err(e @ StorageError::ShuttingDown) => return Err(e),
            Err(e) if started.elapsed() >= retry_for => {
                tracing::error!(%who, attempts, error = %e, "state file upload failed; giving up");
                return Err(e);
            }
            Err(e) => {
                attempts += 1;
                if attempts == 1 || attempts.is_multiple_of(10) {
                    tracing::warn!(%who, attempts, error = %e, "state file upload failed; retrying");
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// Cuts sorted writes into files.
pub fn build_files(writes: &EpochWrites, options: &StoreOptions) -> Vec<(Bytes, SstInfo)> {
    let mut out = Vec::new();
    let mut builder = SstBuilder::new(options.sst.clone());
    for (k, v) in writes.merged() {
        // One table per file: a file overlaps only the files of its table.
        if builder
            .last_key()
            .is_some_and(|last| last.get(..4) != k.get(..4))
        {
            let full = std::mem::replace(&mut builder, SstBuilder::new(options.sst.clone()));
            out.push(finish(full));
        }
        builder.add(k, v);
        if builder.estimated_size() >= options.max_file_size {
            let full = std::mem::replace(&mut builder, SstBuilder::new(options.sst.clone()));
            out.push(finish(full));
        }
    }
    if !builder.is_empty() {
        out.push(finish(builder));
    }
    out
}

/// A finished file and its description (id, level and epoch to fill in).
pub fn finish(builder: SstBuilder) -> (Bytes, SstInfo) {
    let (data, meta) = builder.finish();
    (data, finish_meta(meta))
}

/// The description of a built file (id, level and epoch to fill in).
pub fn finish_meta(meta: SstMeta) -> SstInfo {
    SstInfo {
        id: 0,
        level: 0,
        epoch: 0,
        size: meta.size,
        meta_offset: meta.meta_offset,
        first_key: meta.first_key,
        last_key: meta.last_key,
        key_count: meta.key_count,
        tombstones: meta.tombstone_count,
    }
}

/// A pinned committed version.
pub struct LsmSnapshot {
    sst: Arc<SstStore>,
    version: Arc<Version>,
}

impl LsmSnapshot {
    pub fn new(sst: Arc<SstStore>, version: Arc<Version>) -> LsmSnapshot {
        LsmSnapshot { sst, version }
    }
}

#[async_trait]
impl ReadSnapshot for LsmSnapshot {
    fn epoch(&self) -> u64 {
        self.version.committed_epoch
    }

    fn files(&self) -> (u64, Vec<SstInfo>) {
        let files = self.version.files().map(|f| (**f).clone()).collect();
        (self.version.id, files)
    }

    async fn scan_limit(
        &self,
        range: KeyRange,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        MergeScan::new(self.version.clone(), Vec::new(), &range)
            .collect(&self.sst, &range, limit)
            .await
    }
}

#[async_trait]
impl StateStore for LsmStateStore {
    fn ingest(&self, epoch: u64, writes: Vec<KeyedWrite>) -> StorageResult<()> {
        if writes.is_empty() {
            return Ok(());
        }
        // Copied into a run outside the lock.
        let runs = Run::build(writes);
        self.layers
            .write()
            .staged
            .entry(epoch)
            .or_default()
            .push(runs);
        Ok(())
    }

    async fn sync(&self, epoch: u64) -> StorageResult<Vec<SstInfo>> {
        // Move the epochs to `synced` first: they stay readable while they
        // upload, and later epochs keep staging meanwhile.
        let writes = {
            let mut layers = self.layers.write();
            let later = layers.staged.split_off(&(epoch.saturating_add(1)));
            let ready = std::mem::replace(&mut layers.staged, later);
            if ready.is_empty() {
                return Ok(Vec::new());
            }
            let mut epochs = ready.into_values();
            let mut merged = epochs.next().unwrap_or_default();
            for later in epochs {
                merged.extend(later);
            }
            let merged = Arc::new(merged);
            layers.synced.insert(epoch, merged.clone());
            merged
        };
        let files = self.upload(epoch, writes).await?;
        super::fault::crash_point(super::fault::CrashPoint::AfterUpload);
        Ok(files)
    }

    fn abort_uncommitted(&self) {
        let mut layers = self.layers.write();
        layers.staged.clear();
        layers.synced.clear();
    }

    fn committed_epoch(&self) -> u64 {
        self.layers.read().version.committed_epoch
    }

    async fn get(&self, key: &[u8], uncommitted: bool) -> StorageResult<Option<Bytes>> {
        let version = {
            let layers = self.layers.read();
            if uncommitted {
                if let Some(v) = layers.get(key) {
                    return Ok(v.filter(|_| !layers.version.is_dropped(key)));
                }
            }
            layers.version.clone()
        };
        read::get(&self.sst, &version, key).await
    }

    async fn scan_limit(
        &self,
        range: KeyRange,
        uncommitted: bool,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        if Self::range_is_empty(&range) {
            return Ok(Vec::new());
        }
        let (version, layers) = {
            let layers = self.layers.read();
            let mem = if uncommitted {
                layers.range_layers(&range)
            } else {
                Vec::new()
            };
            (layers.version.clone(), mem)
        };
        MergeScan::new(version, layers, &range)
            .collect(&self.sst, &range, limit)
            .await
    }

    async fn scan_committed_limit(
        &self,
        range: KeyRange,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        let version = self.version();
        MergeScan::new(version, Vec::new(), &range)
            .collect(&self.sst, &range, limit)
            .await
    }

    fn snapshot(&self) -> Arc<dyn ReadSnapshot> {
        Arc::new(LsmSnapshot::new(self.sst.clone(), self.version()))
    }
}
