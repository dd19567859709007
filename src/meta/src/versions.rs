//! The version manager: meta's side of the state store.
//!
//! It commits each epoch by writing, in one meta-store transaction, the new
//! version (committed epoch + the files every compute node synced for it)
//! with the catalog when it changed; the write is a compare-and-set on the
//! previous version, so a second meta on the same meta store cannot commit
//! (it is fenced). Only then is the version installed in the stores and
//! visible to reads. In the background it compacts files (committing each
//! compaction as a version that swaps inputs for outputs, between epochs)
//! and deletes files no version references.
//!
//! While the meta store is unreachable, a commit retries with backoff for
//! [`VersionOptions::retry_for`]: the epoch does not commit (FLUSH waits).
//! Past that the commit fails, which fails the barrier; the recovery that
//! follows first [`resync`](EpochCommitter::resync)s with the meta store
//! (a commit whose reply was lost may have landed) and retries until the
//! store is back. Nothing acknowledged is lost either way. A fenced commit
//! is final.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

use super::catalog::TableId;
use super::store::{FileRow, MetaStore, MetaStoreError, VersionUpdate};
use ebbflow_storage::lsm::compactor::{self, CompactionOptions, Pick};
use ebbflow_storage::lsm::{LsmStateStore, SstStore, Version, VersionDelta};
use ebbflow_storage::{EpochCommitter, SstInfo, StorageError, StorageResult, WRITE_STALL_MAX};

/// Background work knobs; tests shrink them.
#[derive(Clone, Debug)]
pub struct VersionOptions {
    pub compaction: CompactionOptions,
    /// How often the compactor looks for work when not woken by a commit.
    pub compaction_interval: Duration,
    /// How often the collector lists the object store for files no
    /// version references (left by crashes and failed epochs).
    pub gc_interval: Duration,
    /// Such a file is deleted only once it is this much older than the
    /// last epoch commit (an upload in flight may still commit). Files a
    /// compaction replaced go as soon as no reader holds a version that
    /// lists them.
    pub gc_grace: Duration,
    /// How long a commit retries an unreachable meta store before failing.
    pub retry_for: Duration,
}

impl Default for VersionOptions {
    fn default() -> Self {
        VersionOptions {
            compaction: CompactionOptions::default(),
            compaction_interval: Duration::from_secs(1),
            gc_interval: Duration::from_secs(30),
            gc_grace: Duration::from_secs(60),
            retry_for: Duration::from_secs(30),
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Extra {
    dropped_tables: BTreeSet<TableId>,
}

pub struct VersionManager {
    meta_store: MetaStore,
    sst: Arc<SstStore>,
    current: RwLock<Arc<Version>>,
    /// The catalog committed last.
    catalog: Mutex<Option<Bytes>>,
    /// Tables dropped since the last commit; they go with the next one.
    pending_drops: Mutex<BTreeSet<TableId>>,
    /// Stores to install each new version in.
    stores: Mutex<Vec<Weak<LsmStateStore>>>,
    /// Serializes version commits (epochs and compactions).
    commit_lock: tokio::sync::Mutex<()>,
    options: VersionOptions,
    /// When an epoch last committed. Each epoch's files are uploaded after
    /// the previous epoch committed, so the collector keeps every file
    /// written less than the grace period before it: the upload of an
    /// epoch that has not committed yet (while the meta store is away, for
    /// as long as it is).
    last_epoch_commit: Mutex<Instant>,
    /// A compaction is writing outputs that no version references yet.
    compacting: AtomicBool,
    /// Compactions started so far: a collector that saw it change while it
    /// worked stops (outputs it listed may have been committed since).
    compactions_started: std::sync::atomic::AtomicU64,
    /// Files compaction took out of the version, until deleted: each is
    /// deleted once no version that lists it is held anywhere (its
    /// `SstInfo` is shared by those versions only).
    retired: Mutex<Vec<(u64, Weak<SstInfo>)>>,
    wake_compactor: tokio::sync::Notify,
    /// Signalled whenever a new version is installed.
    installed: tokio::sync::Notify,
    /// The current version, for compute processes to follow.
    latest: tokio::sync::watch::Sender<Arc<Version>>,
    /// Round-robin positions of compaction per level.
    cursor: Mutex<Vec<Bytes>>,
    /// A commit failed without an answer: it may have landed, so the
    /// version is read back from the meta store before the next commit.
    uncertain: AtomicBool,
}

fn to_row(f: &SstInfo) -> FileRow {
    FileRow {
        object_id: format!("{:016x}", f.id),
        level: f.level,
        epoch: f.epoch,
        size: f.size,
        info: serde_json::to_string(f).unwrap_or_default(),
    }
}

fn meta_err(e: MetaStoreError) -> StorageError {
    StorageError::Io(e.to_string())
}

impl VersionManager {
    /// Loads the committed version and catalog from `meta_store`.
    pub async fn open(
        meta_store: MetaStore,
        sst: Arc<SstStore>,
        options: VersionOptions,
    ) -> StorageResult<Arc<VersionManager>> {
        let loaded = meta_store.load().await.map_err(meta_err)?;
        let version = Arc::new(Self::version_of(&loaded)?);
        Ok(Arc::new(VersionManager {
            latest: tokio::sync::watch::Sender::new(version.clone()),
            meta_store,
            sst,
            current: RwLock::new(version),
            catalog: Mutex::new(loaded.catalog.map(Bytes::from)),
            pending_drops: Mutex::new(BTreeSet::new()),
            stores: Mutex::new(Vec::new()),
            commit_lock: tokio::sync::Mutex::new(()),
            options,
            last_epoch_commit: Mutex::new(Instant::now()),
            compacting: AtomicBool::new(false),
            compactions_started: std::sync::atomic::AtomicU64::new(0),
            retired: Mutex::new(Vec::new()),
            wake_compactor: tokio::sync::Notify::new(),
            installed: tokio::sync::Notify::new(),
            cursor: Mutex::new(Vec::new()),
            uncertain: AtomicBool::new(false),
        }))
    }

    /// The version a meta store's rows describe.
    fn version_of(loaded: &super::store::Loaded) -> StorageResult<Version> {
        let mut files = Vec::with_capacity(loaded.files.len());
        for row in &loaded.files {
            let info: SstInfo = serde_json::from_str(&row.info).map_err(|e| {
                StorageError::Io(format!(
                    "the meta store lists state file {} with an unreadable description: {e}",
                    row.object_id
                ))
            })?;
            files.push(info);
        }
        let extra: Extra = if loaded.extra.is_empty() {
            Extra::default()
        } else {
            serde_json::from_str(&loaded.extra).map_err(|e| {
                StorageError::Io(format!(
                    "the meta store's version record is unreadable: {e}"
                ))
            })?
        };
        let version = Version::from_files(
            loaded.version_id,
            loaded.committed_epoch,
            files,
            extra.dropped_tables,
        );
        version.check()?;
        Ok(version)
    }

    pub fn current(&self) -> Arc<Version> {
        self.current.read().clone()
    }

    pub fn sst_store(&self) -> &Arc<SstStore> {
        &self.sst
    }

    pub fn meta_store(&self) -> &MetaStore {
        &self.meta_store
    }

    /// Installs every future version in `store` too.
    pub fn register_store(&self, store: &Arc<LsmStateStore>) {
        store.install_version(self.current());
        self.stores.lock().push(Arc::downgrade(store));
    }

    /// Commits `delta` (and `catalog`) on top of the current version.
    /// Caller holds `commit_lock`. Retries while the meta store is away.
    async fn commit(
        &self,
        delta: &VersionDelta,
        catalog: Option<&Bytes>,
        drops_changed: bool,
    ) -> StorageResult<Arc<Version>> {
        let current = self.current();
        let next = Arc::new(current.apply(delta));
        let add: Vec<FileRow> = delta.add.iter().map(to_row).collect();
        let remove: Vec<String> = delta.remove.iter().map(|id| format!("{id:016x}")).collect();
        let extra = drops_changed.then(|| {
            serde_json::to_string(&Extra {
                dropped_tables: next.dropped_tables.clone(),
            })
            .unwrap_or_default()
        });
        let update = VersionUpdate {
            prev_version_id: current.id,
            version_id: next.id,
            committed_epoch: next.committed_epoch,
            add_files: &add,
            remove_files: &remove,
            extra: extra.as_deref(),
            catalog: catalog.map(|c| c.as_ref()),
        };
        if self.uncertain.load(Ordering::SeqCst) {
            return Err(StorageError::Io(
                "an earlier commit may have landed unseen: waiting for the recovery to \
                 read the meta store again"
                    .into(),
            ));
        }
        let mut delay = Duration::from_millis(50);
        let mut attempts = 0u32;
        let started = Instant::now();
        loop {
            match self.meta_store.commit(&update).await {
                Ok(()) => break,
                Err(e @ MetaStoreError::Fenced { .. }) => {
                    tracing::error!(error = %e, "this meta is fenced: another one commits now");
                    return Err(meta_err(e));
                }
                Err(e) if started.elapsed() >= self.options.retry_for => {
                    self.uncertain.store(true, Ordering::SeqCst);
                    tracing::error!(
                        attempts,
                        epoch = next.committed_epoch,
                        error = %e,
                        "version commit failed; giving up on this epoch"
                    );
                    return Err(meta_err(e));
                }
                Err(e) => {
                    attempts += 1;
                    if attempts == 1 || attempts.is_multiple_of(10) {
                        tracing::warn!(
                            attempts,
                            epoch = next.committed_epoch,
                            error = %e,
                            "version commit failed; retrying"
                        );
                    }
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
        if attempts > 0 {
            tracing::info!(
                epoch = next.committed_epoch,
                "the meta store is back; committed"
            );
        }
        *self.current.write() = next.clone();
        if !delta.remove.is_empty() {
            let mut retired = self.retired.lock();
            for f in current.files().filter(|f| delta.remove.contains(&f.id)) {
                retired.push((f.id, Arc::downgrade(f)));
            }
        }
        self.install(&next);
        Ok(next)
    }

    /// Makes `version` the current one in every registered store.
    fn install(&self, version: &Arc<Version>) {
        let stores: Vec<Arc<LsmStateStore>> = self
            .stores
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for s in stores {
            s.install_version(version.clone());
        }
        self.latest.send_replace(version.clone());
        self.installed.notify_waiters();
    }

    /// Follows the current version (compute processes install each one).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Arc<Version>> {
        self.latest.subscribe()
    }

    /// Starts the compactor and the garbage collector.
    pub fn start_background(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(vm) = weak.upgrade() else { return };
                let interval = vm.options.compaction_interval;
                match vm.compact_once().await {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "compaction failed; will retry"),
                }
                let wake = vm.clone();
                drop(vm);
                tokio::select! {
                    _ = wake.wake_compactor.notified() => {}
                    _ = tokio::time::sleep(interval) => {}
                }
            }
        });
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut last_sweep = Instant::now();
            loop {
                let interval = match weak.upgrade() {
                    Some(vm) => vm.options.gc_interval,
                    None => return,
                };
                tokio::time::sleep(interval.min(Duration::from_millis(500))).await;
                let Some(vm) = weak.upgrade() else { return };
                if let Err(e) = vm.delete_retired().await {
                    tracing::warn!(error = %e, "deleting compacted state files failed");
                }
                if last_sweep.elapsed() >= interval {
                    last_sweep = Instant::now();
                    if let Err(e) = vm.collect_garbage().await {
                        tracing::warn!(error = %e, "state file garbage collection failed");
                    }
                }
            }
        });
    }

    /// Runs one compaction if one is due. Returns whether it did.
    pub async fn compact_once(&self) -> StorageResult<bool> {
        let version = self.current();
        let pick = {
            let mut cursor = self.cursor.lock();
            compactor::pick(&version, &self.options.compaction, &mut cursor)
        };
        let Some(pick) = pick else {
            return Ok(false);
        };
        let (add, remove) = match pick {
            Pick::Trivial(remove) => (Vec::new(), remove),
            Pick::Merge(task) => {
                self.compacting.store(true, Ordering::SeqCst);
                self.compactions_started.fetch_add(1, Ordering::SeqCst);
                let started = Instant::now();
                let result = compactor::run(
                    &self.sst,
                    &task,
                    &self.options.compaction,
                    version.dropped_tables.clone(),
                )
                .await;
                let outputs = match result {
                    Ok(o) => {
                        ebbflow_storage::lsm::fault::crash_point(
                            ebbflow_storage::lsm::fault::CrashPoint::InCompaction,
                        );
                        o
                    }
                    Err(e) => {
                        self.compacting.store(false, Ordering::SeqCst);
                        return Err(e);
                    }
                };
                tracing::debug!(
                    inputs = task.input_ids().len(),
                    outputs = outputs.len(),
                    level = task.output_level,
                    bytes = task.input_bytes(),
                    ms = started.elapsed().as_millis() as u64,
                    "compaction merged"
                );
                (outputs, task.input_ids())
            }
        };
        let _commit = self.commit_lock.lock().await;
        // Only the compactor removes files, so the inputs are still live;
        // the epochs committed meanwhile only added newer L0 files.
        let current = self.current();
        let live: BTreeSet<u64> = current.files().map(|f| f.id).collect();
        let result = if remove.iter().all(|id| live.contains(id)) {
            let delta = VersionDelta {
                committed_epoch: current.committed_epoch,
                add,
                remove,
                drop_tables: Vec::new(),
            };
            self.commit(&delta, None, false).await.map(|_| true)
        } else {
            Ok(false)
        };
        self.compacting.store(false, Ordering::SeqCst);
        result
    }

    /// Deletes the files compaction replaced that no reader needs any
    /// more. Returns how many it deleted.
    pub async fn delete_retired(&self) -> StorageResult<usize> {
        let unused: Vec<u64> = {
            let mut retired = self.retired.lock();
            let (gone, held): (Vec<_>, Vec<_>) = std::mem::take(&mut *retired)
                .into_iter()
                .partition(|(_, f)| f.strong_count() == 0);
            *retired = held;
            gone.into_iter().map(|(id, _)| id).collect()
        };
        for (i, id) in unused.iter().enumerate() {
            if let Err(e) = self.sst.objects().delete(*id).await {
                // Put back what is left; the sweep would find them too.
                let mut retired = self.retired.lock();
                retired.extend(unused[i..].iter().map(|id| (*id, Weak::new())));
                return Err(e);
            }
        }
        Ok(unused.len())
    }

    /// Also deletes every other file no version references once it is
    /// past the grace period (see [`VersionOptions::gc_grace`]), and the
    /// retired files no reader holds. Returns how many it deleted.
    pub async fn collect_garbage(&self) -> StorageResult<usize> {
        let mut deleted = self.delete_retired().await?;
        // Taken before the listing: a compaction that starts later uploads
        // outputs the listing may hold, and commits them at any moment.
        let generation = self.compactions_started.load(Ordering::SeqCst);
        if self.compacting.load(Ordering::SeqCst) {
            return Ok(deleted);
        }
        let grace = self.options.gc_grace;
        // Files written after this are kept: an epoch or compaction that
        // wrote them may still commit.
        let horizon = {
            let last = *self.last_epoch_commit.lock();
            // Object stores stamp objects in whole seconds (S3), maybe
            // with another clock: keep a margin on top of the grace.
            let age = last.elapsed() + grace + self.sst.objects().stamp_margin();
            chrono::Utc::now() - chrono::Duration::from_std(age).unwrap_or_default()
        };
        let listed = self.sst.objects().list_ssts().await?;
        for obj in listed {
            if obj.last_modified > horizon {
                continue;
            }
            // Checked against the current version right before each
            // delete, and only while no compaction started since the
            // listing: a file it listed can become live meanwhile.
            if self.compacting.load(Ordering::SeqCst)
                || self.compactions_started.load(Ordering::SeqCst) != generation
            {
                break;
            }
            let live = self.current().files().any(|f| f.id == obj.id);
            let held = self.retired.lock().iter().any(|(id, _)| *id == obj.id);
            if live || held {
                continue;
            }
            self.sst.objects().delete(obj.id).await?;
            deleted += 1;
        }
        if deleted > 0 {
            tracing::debug!(deleted, "garbage state files deleted");
        }
        Ok(deleted)
    }
}

#[async_trait]
impl EpochCommitter for VersionManager {
    fn committed_epoch(&self) -> u64 {
        self.current.read().committed_epoch
    }

    fn committed_catalog(&self) -> Option<Bytes> {
        self.catalog.lock().clone()
    }

    async fn commit_epoch(
        &self,
        epoch: u64,
        files: Vec<SstInfo>,
        catalog: Option<Bytes>,
    ) -> StorageResult<()> {
        let _commit = self.commit_lock.lock().await;
        let committed = self.current().committed_epoch;
        if epoch <= committed {
            // Files of an epoch already committed could not be ordered
            // against that epoch's committed files.
            return Err(StorageError::Io(format!(
                "epoch {epoch} is not after the committed epoch {committed}"
            )));
        }
        let drops: Vec<TableId> = std::mem::take(&mut *self.pending_drops.lock())
            .into_iter()
            .collect();
        let had_files = !files.is_empty();
        let delta = VersionDelta {
            committed_epoch: epoch,
            add: files,
            remove: Vec::new(),
            drop_tables: drops.clone(),
        };
        match self
            .commit(&delta, catalog.as_ref(), !drops.is_empty())
            .await
        {
            Ok(_) => {
                *self.last_epoch_commit.lock() = Instant::now();
                if catalog.is_some() {
                    *self.catalog.lock() = catalog;
                }
                if had_files || !drops.is_empty() {
                    self.wake_compactor.notify_one();
                }
                Ok(())
            }
            Err(e) => {
                self.pending_drops.lock().extend(drops);
                Err(e)
            }
        }
    }

    async fn write_stall(&self) {
        let limit = self.options.compaction.l0_stop_sublevels;
        let depth = || self.current().l0_sublevels().len();
        if depth() < limit {
            return;
        }
        let started = Instant::now();
        tracing::info!(
            sub_levels = depth(),
            limit,
            "L0 is too deep: epoch commits wait for compaction"
        );
        while started.elapsed() < WRITE_STALL_MAX {
            let installed = self.installed.notified();
            if depth() < limit {
                break;
            }
            self.wake_compactor.notify_one();
            let _ = tokio::time::timeout(Duration::from_millis(100), installed).await;
        }
        let ms = started.elapsed().as_millis() as u64;
        if depth() < limit {
            tracing::info!(ms, "epoch commits resume");
        } else {
            tracing::warn!(
                ms,
                sub_levels = depth(),
                "compaction is not catching up; committing anyway"
            );
        }
    }

    fn drop_table(&self, table_id: TableId) {
        self.pending_drops.lock().insert(table_id);
    }

    async fn resync(&self) -> StorageResult<()> {
        if !self.uncertain.load(Ordering::SeqCst) {
            return Ok(());
        }
        let _commit = self.commit_lock.lock().await;
        let loaded = self.meta_store.load().await.map_err(meta_err)?;
        let version = Arc::new(Self::version_of(&loaded)?);
        let current = self.current();
        if version.id != current.id {
            tracing::warn!(
                version = version.id,
                epoch = version.committed_epoch,
                "a commit whose answer was lost had landed; continuing from it"
            );
            if let Some(c) = loaded.catalog {
                *self.catalog.lock() = Some(Bytes::from(c));
            }
            *self.current.write() = version.clone();
            self.install(&version);
        }
        self.uncertain.store(false, Ordering::SeqCst);
        Ok(())
    }
}
