//! Reads over a version's files plus in-memory layers: point gets and
//! ordered range scans with a merge of cursors.
//!
//! Sources are ordered by precedence (newest first): staged epochs, synced
//! epochs, each L0 file, then each level. A point get stops at the first
//! source holding the key (a tombstone too). A scan merges cursors that
//! fetch blocks lazily, so a scan with a small limit reads only the first
//! blocks of each file, however large the range.

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use super::cache::SstStore;
use super::sst::{Block, SstIndex};
use super::version::Version;
use crate::{KeyRange, SstInfo, StorageResult};

/// Point read of `key` in the files of `version` (no in-memory layers).
pub async fn get(sst: &SstStore, version: &Version, key: &[u8]) -> StorageResult<Option<Bytes>> {
    if version.is_dropped(key) {
        return Ok(None);
    }
    for f in version.files_for_key(key) {
        if let Some(v) = sst.get(f, key).await? {
            return Ok(v);
        }
    }
    Ok(None)
}

fn below_end(key: &[u8], end: &Bound<Vec<u8>>) -> bool {
    match end {
        Bound::Included(e) => key <= e.as_slice(),
        Bound::Excluded(e) => key < e.as_slice(),
        Bound::Unbounded => true,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(|v| v.as_slice())
}

/// Entries of a group of disjoint files in key order (one L0 file, or the
/// overlapping part of one level), read block by block.
struct FilesCursor {
    files: Vec<Arc<SstInfo>>,
    next_file: usize,
    /// The file being read, its index, and its blocks still to read.
    current: Option<(Arc<SstInfo>, Arc<SstIndex>, std::ops::Range<usize>)>,
    block: Option<Arc<Block>>,
    pos: usize,
    done: bool,
}

/// An in-memory layer: sorted entries.
struct MemCursor {
    entries: Vec<(Bytes, Option<Bytes>)>,
    pos: usize,
}

enum Cursor {
    Files(FilesCursor),
    Mem(MemCursor),
}

impl Cursor {
    /// Makes `peek` valid: loads blocks until an entry in range is found or
    /// the cursor is exhausted.
    async fn ensure(&mut self, sst: &SstStore, range: &KeyRange) -> StorageResult<()> {
        let Cursor::Files(c) = self else {
            return Ok(());
        };
        loop {
            if c.done {
                return Ok(());
            }
            if let Some(b) = &c.block {
                if c.pos < b.len() {
                    if !below_end(b.key_at(c.pos), &range.1) {
                        c.done = true;
                    }
                    return Ok(());
                }
                c.block = None;
            }
            if let Some((f, index, blocks)) = &mut c.current {
                if let Some(i) = blocks.next() {
                    let b = sst.block(f, index, i).await?;
                    c.pos = b.seek_bound(as_ref(&range.0));
                    c.block = Some(b);
                    continue;
                }
                c.current = None;
            }
            let Some(f) = c.files.get(c.next_file).cloned() else {
                c.done = true;
                return Ok(());
            };
            c.next_file += 1;
            let index = sst.index(&f).await?;
            let blocks = index.blocks_overlapping(as_ref(&range.0), as_ref(&range.1));
            c.current = Some((f, index, blocks));
        }
    }

    fn peek_key(&self) -> Option<&[u8]> {
        match self {
            Cursor::Files(c) if !c.done => c.block.as_ref().map(|b| b.key_at(c.pos)),
            Cursor::Files(_) => None,
            Cursor::Mem(m) => m.entries.get(m.pos).map(|(k, _)| k.as_ref()),
        }
    }

    fn take(&self) -> Option<(Bytes, Option<Bytes>)> {
        match self {
            Cursor::Files(c) if !c.done => c.block.as_ref().map(|b| b.entry(c.pos)),
            Cursor::Files(_) => None,
            Cursor::Mem(m) => m.entries.get(m.pos).cloned(),
        }
    }

    fn advance(&mut self) {
        match self {
            Cursor::Files(c) => c.pos += 1,
            Cursor::Mem(m) => m.pos += 1,
        }
    }
}

/// A scan's sources, newest first.
pub struct MergeScan {
    cursors: Vec<Cursor>,
    version: Arc<Version>,
}

impl MergeScan {
    /// `layers` are in-memory entries newest first (each sorted, one entry
    /// per key), all newer than the version's files.
    pub fn new(
        version: Arc<Version>,
        layers: Vec<Vec<(Bytes, Option<Bytes>)>>,
        range: &KeyRange,
    ) -> MergeScan {
        let mut cursors: Vec<Cursor> = layers
            .into_iter()
            .filter(|l| !l.is_empty())
            .map(|entries| Cursor::Mem(MemCursor { entries, pos: 0 }))
            .collect();
        for files in version.sources_for_range(range) {
            cursors.push(Cursor::Files(FilesCursor {
                files,
                next_file: 0,
                current: None,
                block: None,
                pos: 0,
                done: false,
            }));
        }
        MergeScan { cursors, version }
    }

    /// The first `limit` live pairs of `range` in key order.
    pub async fn collect(
        mut self,
        sst: &SstStore,
        range: &KeyRange,
        limit: usize,
    ) -> StorageResult<Vec<(Bytes, Bytes)>> {
        let mut out = Vec::new();
        if crate::range_is_empty(range) || limit == 0 {
            return Ok(out);
        }
        for c in &mut self.cursors {
            c.ensure(sst, range).await?;
        }
        loop {
            // The smallest key; on a tie the first (newest) source wins.
            let mut best: Option<usize> = None;
            for (i, c) in self.cursors.iter().enumerate() {
                if let Some(k) = c.peek_key() {
                    if best.is_none_or(|b| Some(k) < self.cursors[b].peek_key()) {
                        best = Some(i);
                    }
                }
            }
            let Some(b) = best else {
                return Ok(out);
            };
            let Some((key, value)) = self.cursors[b].take() else {
                return Ok(out);
            };
            for c in &mut self.cursors {
                if c.peek_key() == Some(key.as_ref()) {
                    c.advance();
                    c.ensure(sst, range).await?;
                }
            }
            if let Some(v) = value {
                if !self.version.is_dropped(&key) {
                    out.push((key, v));
                    if out.len() >= limit {
                        return Ok(out);
                    }
                }
            }
        }
    }
}
