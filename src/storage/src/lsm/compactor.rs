//! Compaction: what to merge next ([`pick`]) and the merge itself ([`run`]).
//!
//! Leveled, as in RocksDB and Hummock, with one twist for our small epoch
//! files:
//! - Files that hold only dropped tables leave the version without a merge.
//! - L0 is size-tiered: the newest files, as long as each is no larger
//!   than all newer ones together, form a run; a run of
//!   [`CompactionOptions::l0_trigger`] files is merged into one L0 file
//!   ("intra-L0"). Each byte is so rewritten about log2(L0 / epoch file)
//!   times within L0, instead of once per few epochs — our epoch files are
//!   small, and merging every few of them into L1 would rewrite all of L1
//!   each time.
//! - L0 goes to L1 (with the L1 files it overlaps) once it holds
//!   `1 / l0_ratio` of L1's bytes, or has `4 * l0_trigger` files.
//! - Of the merges due, the one furthest past its trigger runs first
//!   (score = files or bytes over the trigger, as in RocksDB).
//! - Files hold one table each, so an L0 file of an append-only table
//!   overlaps only the end of that table in L1.
//! - A level `i >= 1` over its target size (`base_level_bytes *
//!   level_ratio^(i-1)`) pushes one file, chosen round robin by key, into
//!   level `i + 1` with the files it overlaps there.
//!
//! Tombstones are dropped when nothing older than the output can hold the
//! key: no file below the output level overlaps the merged range. Keys of
//! dropped tables are dropped always.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use super::cache::SstStore;
use super::object::ObjectStorage;
use super::sst::{
    compact_into, BlockIter, CompactOptions, EntryResult, SstError, SstIndex, SstOptions,
};
use super::store::{finish_meta, upload_new};
use super::version::{table_of, Version};
use crate::{SstInfo, StorageError, StorageResult};
use ebbflow_common::TableId;

#[derive(Clone, Debug)]
pub struct CompactionOptions {
    pub l0_trigger: usize,
    /// Epoch commits wait while L0 has this many sub-levels (RocksDB's
    /// write stop): a write load faster than compaction would otherwise
    /// deepen L0, and every read with it, without bound.
    pub l0_stop_sublevels: usize,
    pub base_level_bytes: u64,
    pub level_ratio: u64,
    /// L0 goes to L1 once it holds `1 / l0_ratio` of L1's bytes. Below
    /// `level_ratio`: under updates of random keys every L0 -> L1 merge
    /// rewrites all of L1, so letting L0 grow larger divides that work.
    pub l0_ratio: u64,
    pub target_file_size: usize,
    pub sst: SstOptions,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions {
            l0_trigger: 4,
            l0_stop_sublevels: 64,
            base_level_bytes: 64 << 20,
            level_ratio: 10,
            l0_ratio: 3,
            target_file_size: 16 << 20,
            sst: SstOptions::default(),
        }
    }
}

/// One merge: its inputs and where the output goes.
#[derive(Clone, Debug)]
pub struct CompactionTask {
    /// Input groups newest first; a group is one L0 file or a level's files
    /// in key order.
    pub inputs: Vec<Vec<Arc<SstInfo>>>,
    pub output_level: u32,
    pub drop_tombstones: bool,
}

impl CompactionTask {
    pub fn input_ids(&self) -> Vec<u64> {
        self.inputs.iter().flatten().map(|f| f.id).collect()
    }

    fn output_epoch(&self) -> u64 {
        self.inputs
            .iter()
            .flatten()
            .map(|f| f.epoch)
            .max()
            .unwrap_or(0)
    }

    pub fn input_bytes(&self) -> u64 {
        self.inputs.iter().flatten().map(|f| f.size).sum()
    }
}

/// What compaction should do next, if anything.
pub enum Pick {
    /// Files holding only dropped tables: remove them.
    Trivial(Vec<u64>),
    Merge(CompactionTask),
}

fn only_dropped(f: &SstInfo, dropped: &BTreeSet<TableId>) -> bool {
    match (table_of(&f.first_key), table_of(&f.last_key)) {
        (Some(a), Some(b)) => a == b && dropped.contains(&a),
        _ => false,
    }
}

fn key_range(files: &[Arc<SstInfo>]) -> Option<(Bytes, Bytes)> {
    let first = files.iter().map(|f| &f.first_key).min()?.clone();
    let last = files.iter().map(|f| &f.last_key).max()?.clone();
    Some((first, last))
}

fn overlapping(level: &[Arc<SstInfo>], first: &[u8], last: &[u8]) -> Vec<Arc<SstInfo>> {
    level
        .iter()
        .filter(|f| f.first_key.as_ref() <= last && f.last_key.as_ref() >= first)
        .cloned()
        .collect()
}

/// Whether no level below `level` (1-based levels; 0 is L0) overlaps.
fn nothing_below(version: &Version, level: u32, first: &[u8], last: &[u8]) -> bool {
    version
        .levels
        .iter()
        .skip(level as usize)
        .all(|l| overlapping(l, first, last).is_empty())
}

/// The next compaction of `version`. `cursor[i]` is where level `i + 1`
/// last pushed a file down (round robin).
pub fn pick(
    version: &Version,
    options: &CompactionOptions,
    cursor: &mut Vec<Bytes>,
) -> Option<Pick> {
    let dead: Vec<u64> = version
        .files()
        .filter(|f| only_dropped(f, &version.dropped_tables))
        .map(|f| f.id)
        .collect();
    if !dead.is_empty() {
        return Some(Pick::Trivial(dead));
    }
    // Every due merge gets a score (how far past its trigger it is) and the
    // highest runs, as RocksDB picks: under a write load that keeps L0 busy,
    // L1 must still drain into L2, or every L0 -> L1 merge rewrites an
    // ever larger L1 and falls further behind.
    let mut best: Option<(f64, CompactionTask)> = None;
    let mut offer = |score: f64, task: CompactionTask| {
        if score >= 1.0 && best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, task));
        }
    };
    let subs = version.l0_sublevels();
    if subs.len() >= options.l0_trigger {
        let size = |s: &[Arc<SstInfo>]| s.iter().map(|f| f.size).sum::<u64>();
        // The newest run of similar sizes (see the module doc).
        let mut run = 1;
        let mut newer: u64 = size(subs[0]);
        while run < subs.len() && size(subs[run]) <= newer {
            newer += size(subs[run]);
            run += 1;
        }
        let l0_bytes: u64 = version.l0.iter().map(|f| f.size).sum();
        let l1: &[Arc<SstInfo>] = version.levels.first().map_or(&[], |l| l.as_slice());
        let l1_bytes: u64 = l1.iter().map(|f| f.size).sum();
        let inputs: Vec<Vec<Arc<SstInfo>>> = subs.iter().map(|s| s.to_vec()).collect();
        let to_l1 = (subs.len() as f64 / (options.l0_trigger * 4) as f64)
            .max(l0_bytes.saturating_mul(options.l0_ratio) as f64 / l1_bytes.max(1) as f64);
        if to_l1 >= 1.0 {
            offer(to_l1, l0_to_l1(version, inputs.clone(), l1));
        }
        if run >= options.l0_trigger {
            offer(
                run as f64 / options.l0_trigger as f64,
                CompactionTask {
                    inputs: inputs[..run].to_vec(),
                    output_level: 0,
                    drop_tombstones: false,
                },
            );
        }
    }
    let mut target = options.base_level_bytes;
    let mut down: Option<(f64, usize)> = None;
    for (i, level) in version.levels.iter().enumerate() {
        let bytes: u64 = level.iter().map(|f| f.size).sum();
        let score = bytes as f64 / target.max(1) as f64;
        if !level.is_empty() && score >= 1.0 && down.is_none_or(|(d, _)| score > d) {
            down = Some((score, i));
        }
        target = target.saturating_mul(options.level_ratio);
    }
    if let Some((score, i)) = down {
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            return Some(Pick::Merge(push_down(version, i, cursor)));
        }
    }
    best.map(|(_, task)| Pick::Merge(task))
}

/// All of L0 (`inputs`, its sub-levels newest first) into L1.
fn l0_to_l1(
    version: &Version,
    mut inputs: Vec<Vec<Arc<SstInfo>>>,
    l1: &[Arc<SstInfo>],
) -> CompactionTask {
    // Per table, the L1 files overlapping the span of that table's L0
    // files (outputs hold one table each, so a table's outputs stay within
    // that span widened to these files, where no other L1 file lies).
    let mut spans: BTreeMap<Option<TableId>, (Bytes, Bytes)> = BTreeMap::new();
    for f in &version.l0 {
        let span = spans
            .entry(table_of(&f.first_key))
            .or_insert_with(|| (f.first_key.clone(), f.last_key.clone()));
        span.0 = span.0.clone().min(f.first_key.clone());
        span.1 = span.1.clone().max(f.last_key.clone());
    }
    let mut under: Vec<Arc<SstInfo>> = Vec::new();
    let mut drop_tombstones = true;
    for (first, last) in spans.values() {
        let here = overlapping(l1, first, last);
        let (lo, hi) = match key_range(&here) {
            Some((a, b)) => (a.min(first.clone()), b.max(last.clone())),
            None => (first.clone(), last.clone()),
        };
        drop_tombstones &= nothing_below(version, 1, &lo, &hi);
        under.extend(here);
    }
    under.sort_by(|a, b| a.first_key.cmp(&b.first_key));
    under.dedup_by_key(|f| f.id);
    if !under.is_empty() {
        inputs.push(under);
    }
    CompactionTask {
        inputs,
        output_level: 1,
        drop_tombstones,
    }
}

/// One file of level `i + 1` (round robin by key) into level `i + 2`, with
/// the files it overlaps there.
fn push_down(version: &Version, i: usize, cursor: &mut Vec<Bytes>) -> CompactionTask {
    let level = &version.levels[i];
    if cursor.len() <= i {
        cursor.resize(i + 1, Bytes::new());
    }
    let pos = level.partition_point(|f| f.first_key <= cursor[i]);
    let file = level.get(pos).unwrap_or(&level[0]).clone();
    cursor[i] = file.first_key.clone();
    let next: &[Arc<SstInfo>] = version.levels.get(i + 1).map_or(&[], |l| l.as_slice());
    let under = overlapping(next, &file.first_key, &file.last_key);
    let (lo, hi) = match key_range(&under) {
        Some((a, b)) => (a.min(file.first_key.clone()), b.max(file.last_key.clone())),
        None => (file.first_key.clone(), file.last_key.clone()),
    };
    let output_level = i as u32 + 2;
    let mut inputs = vec![vec![file]];
    if !under.is_empty() {
        inputs.push(under);
    }
    CompactionTask {
        inputs,
        output_level,
        drop_tombstones: nothing_below(version, output_level, &lo, &hi),
    }
}

/// An input file is read this many bytes of blocks at a time (a few
/// blocks of the tiny test files, so their merges cross chunks).
const READ_CHUNK: u64 = if cfg!(test) { 1000 } else { 1 << 20 };

/// The entries of one input file in key order, read a few blocks at a
/// time ([`READ_CHUNK`] bytes) by ranged reads, so a merge holds a chunk
/// per input rather than whole files. Yields an error (then stops) if a
/// read or a block fails.
struct FileEntries {
    handle: tokio::runtime::Handle,
    objects: ObjectStorage,
    file: Arc<SstInfo>,
    index: Option<SstIndex>,
    next_block: usize,
    /// Blocks read ahead, from `chunk_start` in the file.
    chunk: Bytes,
    chunk_start: u64,
    cur: Option<BlockIter>,
    done: bool,
    /// Its index and chunk, on the gauge.
    counted: CompactionBytes,
}

/// Bytes a merge holds, on the `ebbflow_store_compaction_bytes` gauge
/// while this lasts.
#[derive(Default)]
struct CompactionBytes(i64);

impl CompactionBytes {
    fn set(&mut self, bytes: usize) {
        let n = i64::try_from(bytes).unwrap_or(i64::MAX);
        ebbflow_metrics::store_compaction_bytes(n - self.0);
        self.0 = n;
    }
}

impl Drop for CompactionBytes {
    fn drop(&mut self) {
        ebbflow_metrics::store_compaction_bytes(-self.0);
    }
}

fn external(e: StorageError) -> SstError {
    SstError::External(Box::new(e))
}

impl FileEntries {
    fn new(handle: tokio::runtime::Handle, objects: ObjectStorage, file: Arc<SstInfo>) -> Self {
        FileEntries {
            handle,
            objects,
            file,
            index: None,
            next_block: 0,
            chunk: Bytes::new(),
            chunk_start: 0,
            cur: None,
            done: false,
            counted: CompactionBytes::default(),
        }
    }

    fn read(&self, range: std::ops::Range<u64>) -> Result<Bytes, SstError> {
        self.handle
            .block_on(self.objects.get_range(self.file.id, range))
            .map_err(external)
    }

    /// The entries of the next block; `None` after the last.
    fn next_block(&mut self) -> Result<Option<BlockIter>, SstError> {
        if self.index.is_none() {
            let meta = self.read(self.file.meta_offset..self.file.size)?;
            let index = SstIndex::decode(meta)?;
            self.counted.set(index.approx_memory());
            self.index = Some(index);
        }
        let Some(index) = &self.index else {
            return Ok(None);
        };
        let i = self.next_block;
        if i >= index.block_count() {
            return Ok(None);
        }
        let (offset, len) = index.block_handle(i);
        let end = offset + len as u64;
        if offset < self.chunk_start || end > self.chunk_start + self.chunk.len() as u64 {
            // This block and those after it, up to a chunk.
            let mut last = end;
            for j in i + 1..index.block_count() {
                let (o, l) = index.block_handle(j);
                if o < last || o + l as u64 - offset > READ_CHUNK {
                    break;
                }
                last = o + l as u64;
            }
            let chunk = self.read(offset..last)?;
            if chunk.len() as u64 != last - offset {
                return Err(SstError::Corrupt(format!(
                    "file {:016x}: read {} bytes of blocks at {offset}, expected {}",
                    self.file.id,
                    chunk.len(),
                    last - offset
                )));
            }
            self.chunk = chunk;
            self.chunk_start = offset;
            self.counted.set(self.chunk.len() + index.approx_memory());
        }
        let from = (offset - self.chunk_start) as usize;
        let block = index.decode_block(i, self.chunk.slice(from..from + len as usize))?;
        self.next_block += 1;
        Ok(Some(block.iter_from(block.seek_bound(Bound::Unbounded))))
    }
}

impl Iterator for FileEntries {
    type Item = EntryResult;

    fn next(&mut self) -> Option<EntryResult> {
        loop {
            if self.done {
                return None;
            }
            if let Some(entry) = self.cur.as_mut().and_then(Iterator::next) {
                return Some(Ok(entry));
            }
            match self.next_block() {
                Ok(Some(block)) => self.cur = Some(block),
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// Runs `f` on a thread of its own at a lower CPU priority (nice 10 on
/// Linux, where a thread has its own), so that on a busy machine a merge
/// takes the time the actors leave rather than a core of theirs.
async fn in_background<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("ebbflow-compactor".into())
        .spawn(move || {
            if let Err(e) = rustix::process::setpriority_process(None, 10) {
                tracing::debug!(error = %e, "could not lower the compactor's priority");
            }
            let _ = tx.send(f());
        })
        .map_err(|e| e.to_string())?;
    rx.await
        .map_err(|_| "the compaction thread stopped".to_string())
}

/// Runs `task`: reads its inputs, merges them, uploads the outputs.
/// Returns the output files (not yet in any version).
///
/// Memory stays at a chunk of blocks per input group plus one output
/// file: the merge (on a thread of its own, see [`in_background`]) reads
/// each input file, a chunk at a time, when it reaches it and uploads
/// each output as soon as it is cut.
pub async fn run(
    sst: &SstStore,
    task: &CompactionTask,
    options: &CompactionOptions,
    dropped: BTreeSet<TableId>,
) -> StorageResult<Vec<SstInfo>> {
    let compact_options = CompactOptions {
        sst: options.sst.clone(),
        target_file_size: options.target_file_size,
        drop_tombstones: task.drop_tombstones,
        split_prefix_len: 4,
    };
    let handle = tokio::runtime::Handle::current();
    let objects = sst.objects().clone();
    let inputs = task.inputs.clone();
    let outputs = in_background(move || -> Result<Vec<_>, SstError> {
        let mut sources = Vec::with_capacity(inputs.len());
        for group in inputs {
            // A group's files are disjoint and in key order: one source.
            let (handle, objects) = (handle.clone(), objects.clone());
            let iter = group
                .into_iter()
                .flat_map(move |f| FileEntries::new(handle.clone(), objects.clone(), f));
            sources.push(iter);
        }
        let drop_key = |k: &[u8]| table_of(k).is_some_and(|t| dropped.contains(&t));
        // The output file's buffer, as `compact_into` reserves it.
        let mut output = CompactionBytes::default();
        output.set(
            compact_options
                .target_file_size
                .saturating_add(compact_options.sst.block_size),
        );
        let mut uploaded = Vec::new();
        compact_into(sources, &compact_options, &drop_key, |data, meta| {
            let id = handle
                .block_on(upload_new(
                    &objects,
                    &data,
                    "compactor",
                    std::time::Duration::from_secs(30),
                ))
                .map_err(external)?;
            uploaded.push((id, meta));
            Ok(())
        })?;
        Ok(uploaded)
    })
    .await
    .map_err(|e| StorageError::Io(format!("compaction task failed: {e}")))?
    .map_err(|e| match e {
        SstError::External(inner) => match inner.downcast::<StorageError>() {
            Ok(storage) => *storage,
            Err(other) => StorageError::Io(format!("compaction failed: {other}")),
        },
        e => StorageError::Io(format!("compaction failed: {e}")),
    })?;
    let epoch = task.output_epoch();
    Ok(outputs
        .into_iter()
        .map(|(id, meta)| {
            let mut info = finish_meta(meta);
            info.level = task.output_level;
            info.epoch = epoch;
            info.id = id;
            info
        })
        .collect())
}
