//! K-way merge of sorted sources and the compaction merge built on it.

use super::{SstBuilder, SstError, SstMeta, SstOptions};
use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::binary_heap::{BinaryHeap, PeekMut};

/// One key-value entry; `None` value = tombstone.
pub type Entry = (Bytes, Option<Bytes>);
/// What merge sources yield.
pub type EntryResult = Result<Entry, SstError>;
/// A type-erased merge source.
pub type BoxedEntryIter = Box<dyn Iterator<Item = EntryResult> + Send>;

/// Heap element: the current head of source `src`.
struct Head {
    key: Bytes,
    value: Option<Bytes>,
    src: usize,
}

impl Ord for Head {
    /// Reversed `(key, src)` order: `BinaryHeap` is a max-heap and we want
    /// the smallest key on top, and among equal keys the lowest source index
    /// (the newest data).
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .key
            .cmp(&self.key)
            .then_with(|| other.src.cmp(&self.src))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

/// Merges sorted sources into one sorted stream with one entry per key.
///
/// Each source must yield strictly increasing keys. On equal keys the source
/// with the lowest index wins (pass sources newest first); the shadowed
/// versions are skipped. Tombstones are yielded like values. After an error
/// (from any source) the iterator yields that error once and then ends.
///
/// Cost per output entry: one in-place heap sift (O(log N) key comparisons)
/// plus one more per shadowed version; no allocation.
pub struct MergeIterator<I = BoxedEntryIter> {
    sources: Vec<I>,
    heap: BinaryHeap<Head>,
    error: Option<SstError>,
    done: bool,
}

impl<I: Iterator<Item = EntryResult>> MergeIterator<I> {
    pub fn new(mut sources: Vec<I>) -> Self {
        let mut heap = BinaryHeap::with_capacity(sources.len());
        let mut error = None;
        for (src, source) in sources.iter_mut().enumerate() {
            match source.next() {
                Some(Ok((key, value))) => heap.push(Head { key, value, src }),
                Some(Err(e)) => {
                    error.get_or_insert(e);
                }
                None => {}
            }
        }
        MergeIterator {
            sources,
            heap,
            error,
            done: false,
        }
    }

    /// Advances the source whose head is on top of the heap, replacing the
    /// top in place (one sift-down) or popping it when the source is
    /// exhausted. Returns the old head.
    #[inline]
    fn advance_top(
        sources: &mut [I],
        mut top: PeekMut<'_, Head>,
    ) -> Result<(Bytes, Option<Bytes>), SstError> {
        match sources[top.src].next() {
            Some(Ok((key, value))) => {
                debug_assert!(key > top.key, "merge source {} is not sorted", top.src);
                let old_key = std::mem::replace(&mut top.key, key);
                let old_value = std::mem::replace(&mut top.value, value);
                Ok((old_key, old_value)) // dropping `top` restores the heap
            }
            Some(Err(e)) => Err(e),
            None => {
                let head = PeekMut::pop(top);
                Ok((head.key, head.value))
            }
        }
    }
}

impl<I: Iterator<Item = EntryResult>> Iterator for MergeIterator<I> {
    type Item = EntryResult;

    fn next(&mut self) -> Option<EntryResult> {
        if self.done {
            return None;
        }
        if let Some(e) = self.error.take() {
            self.done = true;
            return Some(Err(e));
        }
        let Some(top) = self.heap.peek_mut() else {
            self.done = true;
            return None;
        };
        let winner = match Self::advance_top(&mut self.sources, top) {
            Ok(entry) => entry,
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        // Skip older versions of the same key in higher-index sources.
        while let Some(top) = self.heap.peek_mut() {
            if top.key != winner.0 {
                break;
            }
            if let Err(e) = Self::advance_top(&mut self.sources, top) {
                self.done = true;
                return Some(Err(e));
            }
        }
        Some(Ok(winner))
    }
}

/// Options for [`compact`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactOptions {
    /// Options for each output file.
    pub sst: SstOptions,
    /// An output file is closed once its estimated size reaches this, so
    /// outputs exceed it by at most about one entry and one block's
    /// metadata (and the last output may be smaller).
    pub target_file_size: usize,
    /// Drop tombstones instead of writing them. Only correct when no older
    /// data for these keys exists below the output (bottom level).
    pub drop_tombstones: bool,
    /// When non-zero, a new output starts wherever the first this-many key
    /// bytes change (4: one table per file), so a file never spans keys of
    /// unrelated tables and overlaps only what it must.
    pub split_prefix_len: usize,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            sst: SstOptions::default(),
            target_file_size: 32 * 1024 * 1024,
            drop_tombstones: false,
            split_prefix_len: 0,
        }
    }
}

/// Merges `inputs` (newest first) into new SSTs, keeping only the newest
/// version of each key, dropping tombstones if `options.drop_tombstones`,
/// and dropping every key for which `drop_key` returns true (e.g. keys of
/// dropped tables). Returns the outputs in key order; their key ranges are
/// disjoint and increasing because the merged stream is strictly increasing
/// and each output takes a contiguous run of it. No empty output is made.
///
/// Holds all outputs in memory; see [`compact_into`] to stream them.
pub fn compact<I>(
    inputs: Vec<I>,
    options: &CompactOptions,
    drop_key: &dyn Fn(&[u8]) -> bool,
) -> Result<Vec<(Bytes, SstMeta)>, SstError>
where
    I: Iterator<Item = EntryResult>,
{
    let mut outputs = Vec::new();
    compact_into(inputs, options, drop_key, |file, meta| {
        outputs.push((file, meta));
        Ok(())
    })?;
    Ok(outputs)
}

/// Like [`compact`], but hands each output file to `sink` as soon as it is
/// cut (e.g. to upload it), so at most one output is held in memory. Stops
/// at the first error from an input or from `sink`.
pub fn compact_into<I, F>(
    inputs: Vec<I>,
    options: &CompactOptions,
    drop_key: &dyn Fn(&[u8]) -> bool,
    mut sink: F,
) -> Result<(), SstError>
where
    I: Iterator<Item = EntryResult>,
    F: FnMut(Bytes, SstMeta) -> Result<(), SstError>,
{
    // Reserve a little over the target: files overshoot it slightly.
    let capacity = options
        .target_file_size
        .saturating_add(options.sst.block_size)
        .min(256 << 20);
    let new_builder = || SstBuilder::with_capacity(options.sst.clone(), capacity);
    // Created lazily so that no buffer is reserved when nothing follows a cut.
    let mut builder: Option<SstBuilder> = None;
    for entry in MergeIterator::new(inputs) {
        let (key, value) = entry?;
        if (value.is_none() && options.drop_tombstones) || drop_key(&key) {
            continue;
        }
        let split = options.split_prefix_len;
        if split > 0 {
            if let Some(prev) = builder.take_if(|b| {
                b.last_key()
                    .is_some_and(|last| last.get(..split) != key.get(..split))
            }) {
                let (file, meta) = prev.finish();
                sink(file, meta)?;
            }
        }
        let b = builder.get_or_insert_with(new_builder);
        b.add(&key, value.as_deref());
        if let Some(full) = builder.take_if(|b| b.estimated_size() >= options.target_file_size) {
            let (file, meta) = full.finish();
            sink(file, meta)?;
        }
    }
    if let Some(last) = builder {
        let (file, meta) = last.finish();
        sink(file, meta)?;
    }
    Ok(())
}
