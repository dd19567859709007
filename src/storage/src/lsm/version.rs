//! Versions: which state files make up the committed state.
//!
//! A version is immutable; meta derives the next one by applying a
//! [`VersionDelta`] (an epoch's new files, or a compaction's swap of
//! inputs for outputs) and commits it in the meta store. Readers pin a
//! version (an `Arc`) and read only its files, so a compaction or a newer
//! epoch never changes what a running read sees.
//!
//! Shape (an LSM tree):
//! - **L0**: sub-levels, newest first: the files of one epoch (or of one
//!   merge of whole sub-levels) are disjoint, one table each. Sub-levels
//!   overlap; for a key the newest sub-level holding it wins.
//! - **L1..Ln**: sorted runs written by compaction, each a list of files
//!   with disjoint key ranges in key order. Every file of level `i` is
//!   newer than every file of level `i + 1` and older than every L0 file:
//!   compaction moves data down only, and an L0 compaction takes *all* L0
//!   files present when it starts (later ones have higher epochs).
//! - **Dropped tables**: a dropped table's keys are hidden from reads at
//!   once and removed by compaction (table ids are never reused).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::{SstInfo, StorageError, StorageResult};
use ebbflow_common::TableId;

#[derive(Clone, Debug, Default)]
pub struct Version {
    /// Increases by one with each committed change.
    pub id: u64,
    pub committed_epoch: u64,
    /// Epoch files, newest epoch first; within an epoch (a sub-level) in
    /// key order, disjoint.
    pub l0: Vec<Arc<SstInfo>>,
    /// `levels[i]` is level `i + 1`: disjoint files in key order.
    pub levels: Vec<Vec<Arc<SstInfo>>>,
    pub dropped_tables: BTreeSet<TableId>,
}

/// A change from one version to the next.
#[derive(Clone, Debug, Default)]
pub struct VersionDelta {
    /// The new committed epoch (unchanged by a compaction).
    pub committed_epoch: u64,
    pub add: Vec<SstInfo>,
    /// Ids of files that leave the version.
    pub remove: Vec<u64>,
    pub drop_tables: Vec<TableId>,
}

/// The table id of a state key (`None` for a key too short to have one).
pub fn table_of(key: &[u8]) -> Option<TableId> {
    key.get(..4)
        .map(|b| TableId::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

impl Version {
    /// Rebuilds a version from its files as the meta store lists them.
    pub fn from_files(
        id: u64,
        committed_epoch: u64,
        files: Vec<SstInfo>,
        dropped_tables: BTreeSet<TableId>,
    ) -> Version {
        let mut v = Version {
            id,
            committed_epoch,
            dropped_tables,
            ..Default::default()
        };
        v.insert_files(files.into_iter().map(Arc::new));
        v
    }

    fn insert_files(&mut self, files: impl Iterator<Item = Arc<SstInfo>>) {
        for f in files {
            match f.level {
                0 => self.l0.push(f),
                l => {
                    let i = l as usize - 1;
                    if self.levels.len() <= i {
                        self.levels.resize(i + 1, Vec::new());
                    }
                    self.levels[i].push(f);
                }
            }
        }
        self.l0.sort_by(|a, b| {
            b.epoch
                .cmp(&a.epoch)
                .then_with(|| a.first_key.cmp(&b.first_key))
        });
        self.l0 = into_runs(std::mem::take(&mut self.l0));
        for level in &mut self.levels {
            level.sort_by(|a, b| a.first_key.cmp(&b.first_key));
        }
    }

    /// The next version: `delta` applied.
    pub fn apply(&self, delta: &VersionDelta) -> Version {
        let remove: BTreeSet<u64> = delta.remove.iter().copied().collect();
        let keep = |f: &&Arc<SstInfo>| !remove.contains(&f.id);
        let mut v = Version {
            id: self.id + 1,
            committed_epoch: self.committed_epoch.max(delta.committed_epoch),
            l0: self.l0.iter().filter(keep).cloned().collect(),
            levels: self
                .levels
                .iter()
                .map(|l| l.iter().filter(keep).cloned().collect())
                .collect(),
            dropped_tables: self.dropped_tables.clone(),
        };
        v.dropped_tables.extend(delta.drop_tables.iter().copied());
        v.insert_files(delta.add.iter().cloned().map(Arc::new));
        while v.levels.last().is_some_and(|l| l.is_empty()) {
            v.levels.pop();
        }
        debug_assert!(v.check().is_ok(), "{:?}", v.check());
        v
    }

    /// L0's sub-levels, newest first: runs of disjoint files of one epoch
    /// (one per compute process that wrote the epoch, at most).
    pub fn l0_sublevels(&self) -> Vec<&[Arc<SstInfo>]> {
        self.l0
            .chunk_by(|a, b| a.epoch == b.epoch && a.last_key < b.first_key)
            .collect()
    }

    /// Every file, L0 first.
    pub fn files(&self) -> impl Iterator<Item = &Arc<SstInfo>> {
        self.l0.iter().chain(self.levels.iter().flatten())
    }

    pub fn is_dropped(&self, key: &[u8]) -> bool {
        !self.dropped_tables.is_empty()
            && table_of(key).is_some_and(|t| self.dropped_tables.contains(&t))
    }

    /// Files that may hold `key`, in precedence order (newest first).
    pub fn files_for_key<'a>(&'a self, key: &'a [u8]) -> impl Iterator<Item = &'a Arc<SstInfo>> {
        let l0 = self
            .l0
            .iter()
            .filter(move |f| f.first_key.as_ref() <= key && key <= f.last_key.as_ref());
        let levels = self.levels.iter().filter_map(move |level| {
            let i = level.partition_point(|f| f.last_key.as_ref() < key);
            level.get(i).filter(|f| f.first_key.as_ref() <= key)
        });
        l0.chain(levels)
    }

    /// Files overlapping `[start, end]` (bounds as in a key range), in
    /// precedence order: each L0 sub-level, then each level, as groups of
    /// disjoint files in key order.
    pub fn sources_for_range(&self, range: &crate::KeyRange) -> Vec<Vec<Arc<SstInfo>>> {
        let overlaps = |f: &SstInfo| overlaps(f, range);
        let mut out: Vec<Vec<Arc<SstInfo>>> = Vec::new();
        for sub in self.l0_sublevels() {
            let files: Vec<_> = sub.iter().filter(|f| overlaps(f)).cloned().collect();
            if !files.is_empty() {
                out.push(files);
            }
        }
        for level in &self.levels {
            let files: Vec<_> = level.iter().filter(|f| overlaps(f)).cloned().collect();
            if !files.is_empty() {
                out.push(files);
            }
        }
        out
    }

    /// Checks the invariants above.
    pub fn check(&self) -> StorageResult<()> {
        for w in self.l0.windows(2) {
            if w[0].epoch < w[1].epoch {
                return Err(StorageError::Inconsistent("L0 not newest first".into()));
            }
        }
        for (i, level) in self.levels.iter().enumerate() {
            for f in level {
                if f.level as usize != i + 1 {
                    return Err(StorageError::Inconsistent(format!(
                        "file {} in level {} says {}",
                        f.id,
                        i + 1,
                        f.level
                    )));
                }
            }
            for w in level.windows(2) {
                if w[0].last_key >= w[1].first_key {
                    return Err(StorageError::Inconsistent(format!(
                        "level {} files {} and {} overlap",
                        i + 1,
                        w[0].id,
                        w[1].id
                    )));
                }
            }
        }
        Ok(())
    }

    /// Number of files and bytes per level (L0 first).
    #[allow(dead_code)]
    pub fn level_stats(&self) -> Vec<(u32, usize, u64)> {
        let mut out = vec![(0, self.l0.len(), self.l0.iter().map(|f| f.size).sum())];
        for (i, level) in self.levels.iter().enumerate() {
            out.push((
                i as u32 + 1,
                level.len(),
                level.iter().map(|f| f.size).sum(),
            ));
        }
        out
    }
}

/// Whether file `f` may hold a key of `range`.
/// Orders the files of each epoch (given newest epoch first, then by first
/// key) into runs of disjoint files: each compute process writes its own
/// files for an epoch, and the files of two processes may overlap in key
/// range (never in keys). A file goes to the first run it extends; runs
/// follow each other, so a run ends where the next file starts before the
/// previous one ends (see [`Version::l0_sublevels`]).
fn into_runs(files: Vec<Arc<SstInfo>>) -> Vec<Arc<SstInfo>> {
    let mut out = Vec::with_capacity(files.len());
    for epoch in files.chunk_by(|a, b| a.epoch == b.epoch) {
        let mut runs: Vec<Vec<Arc<SstInfo>>> = Vec::new();
        for f in epoch {
            match runs
                .iter_mut()
                .find(|r| r.last().is_some_and(|l| l.last_key < f.first_key))
            {
                Some(r) => r.push(f.clone()),
                None => runs.push(vec![f.clone()]),
            }
        }
        out.extend(runs.into_iter().flatten());
    }
    out
}

pub fn overlaps(f: &SstInfo, range: &crate::KeyRange) -> bool {
    use std::ops::Bound::*;
    let first = f.first_key.as_ref();
    let last = f.last_key.as_ref();
    let below_end = match &range.1 {
        Included(e) => first <= e.as_slice(),
        Excluded(e) => first < e.as_slice(),
        Unbounded => true,
    };
    let above_start = match &range.0 {
        Included(s) => last >= s.as_slice(),
        Excluded(s) => last > s.as_slice(),
        Unbounded => true,
    };
    below_end && above_start
}
