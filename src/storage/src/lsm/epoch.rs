//! The writes of uncommitted epochs in memory: sorted runs, each with its
//! keys and values in one buffer.
//!
//! A state table hands the store its epoch's writes once, sorted, at its
//! barrier. Each hand-over becomes a [`Run`]: one copy into a buffer plus
//! an index of offsets, instead of a map node and two allocations per key.
//! Runs are kept in the order they came; where two hold the same key, the
//! later wins. A read binary-searches the runs newest first; building an
//! epoch's file merges them; freeing a committed epoch frees a few buffers.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::ops::Bound;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::{last_per_key, KeyRange, KeyedWrite};

/// Offsets of one write in its run's buffer: the key is `key..value`, the
/// value `value..end`.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u32,
    value: u32,
    end: u32,
    delete: bool,
}

/// Writes sorted by key, each key once.
#[derive(Debug)]
pub struct Run {
    data: Bytes,
    entries: Vec<Entry>,
}

/// A run's buffer stays addressable by `u32` offsets.
const MAX_RUN_BYTES: usize = 1 << 31;

impl Run {
    /// The runs holding `writes`: sorted here unless they come sorted, and
    /// of equal keys the later is kept.
    pub fn build(mut writes: Vec<KeyedWrite>) -> Vec<Run> {
        if !writes.windows(2).all(|w| w[0].0 < w[1].0) {
            writes = last_per_key(writes);
        }
        let total: usize = writes
            .iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, Bytes::len))
            .sum();
        let mut runs = Vec::new();
        let mut buf = BytesMut::with_capacity(total.min(MAX_RUN_BYTES));
        let mut entries = Vec::with_capacity(writes.len());
        for (k, v) in &writes {
            let size = k.len() + v.as_ref().map_or(0, Bytes::len);
            if !entries.is_empty() && buf.len() + size > MAX_RUN_BYTES {
                runs.push(Run {
                    data: buf.split().freeze(),
                    entries: std::mem::take(&mut entries),
                });
            }
            let key = buf.len() as u32;
            buf.extend_from_slice(k);
            let value = buf.len() as u32;
            if let Some(v) = v {
                buf.extend_from_slice(v);
            }
            entries.push(Entry {
                key,
                value,
                end: buf.len() as u32,
                delete: v.is_none(),
            });
        }
        if !entries.is_empty() {
            runs.push(Run {
                data: buf.freeze(),
                entries,
            });
        }
        for r in &runs {
            ebbflow_metrics::store_write_bytes(r.bytes() as i64);
        }
        runs
    }

    /// Bytes this run holds: its buffer and its index.
    fn bytes(&self) -> usize {
        self.data.len() + self.entries.capacity() * std::mem::size_of::<Entry>()
    }

    fn key(&self, i: usize) -> &[u8] {
        let e = self.entries[i];
        &self.data[e.key as usize..e.value as usize]
    }

    fn value(&self, i: usize) -> Option<&[u8]> {
        let e = self.entries[i];
        (!e.delete).then(|| &self.data[e.value as usize..e.end as usize])
    }

    /// The value of entry `i` (`None`: a delete), sharing the buffer.
    fn owned_value(&self, i: usize) -> Option<Bytes> {
        let e = self.entries[i];
        (!e.delete).then(|| self.data.slice(e.value as usize..e.end as usize))
    }

    fn owned(&self, i: usize) -> (Bytes, Option<Bytes>) {
        let e = self.entries[i];
        (
            self.data.slice(e.key as usize..e.value as usize),
            self.owned_value(i),
        )
    }

    /// The write of `key`: `Some(None)` is a delete.
    fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        let i = self.find(key).ok()?;
        Some(self.owned_value(i))
    }

    fn find(&self, key: &[u8]) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.entries.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key(mid).cmp(key) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// The index of the first entry at or after the start bound.
    fn lower(&self, start: Bound<&[u8]>) -> usize {
        match start {
            Bound::Unbounded => 0,
            Bound::Included(k) => self.find(k).unwrap_or_else(|i| i),
            Bound::Excluded(k) => match self.find(k) {
                Ok(i) => i + 1,
                Err(i) => i,
            },
        }
    }

    /// The index past the last entry within the end bound.
    fn upper(&self, end: Bound<&[u8]>) -> usize {
        match end {
            Bound::Unbounded => self.entries.len(),
            Bound::Included(k) => match self.find(k) {
                Ok(i) => i + 1,
                Err(i) => i,
            },
            Bound::Excluded(k) => self.find(k).unwrap_or_else(|i| i),
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        ebbflow_metrics::store_write_bytes(-(self.bytes() as i64));
    }
}

/// The writes of one or more epochs, as runs oldest first.
#[derive(Debug, Default)]
pub struct EpochWrites {
    runs: Vec<Arc<Run>>,
}

impl EpochWrites {
    pub fn push(&mut self, runs: Vec<Run>) {
        self.runs.extend(runs.into_iter().map(Arc::new));
    }

    /// Append the writes of a later epoch (they win over these).
    pub fn extend(&mut self, later: EpochWrites) {
        self.runs.extend(later.runs);
    }

    /// The latest write of `key`: `Some(None)` is a delete.
    pub fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        self.runs.iter().rev().find_map(|r| r.get(key))
    }

    /// The writes within `range`, one sorted list per run, newest first.
    pub fn range_layers<'a>(
        &'a self,
        range: &'a KeyRange,
    ) -> impl Iterator<Item = Vec<(Bytes, Option<Bytes>)>> + 'a {
        let start = range.0.as_ref().map(|v| v.as_slice());
        let end = range.1.as_ref().map(|v| v.as_slice());
        self.runs.iter().rev().map(move |r| {
            let (lo, hi) = (r.lower(start), r.upper(end));
            (lo..hi.max(lo)).map(|i| r.owned(i)).collect()
        })
    }

    /// Every written key once, with its latest write, in key order.
    pub fn merged(&self) -> Merged<'_> {
        let mut heap = BinaryHeap::with_capacity(self.runs.len());
        for (n, r) in self.runs.iter().enumerate() {
            if !r.entries.is_empty() {
                heap.push(Reverse(Head { run: r, n, i: 0 }));
            }
        }
        Merged { heap }
    }
}

/// The next entry of one run in a merge.
struct Head<'a> {
    run: &'a Run,
    /// The run's place: a higher one is newer.
    n: usize,
    i: usize,
}

impl Head<'_> {
    fn key(&self) -> &[u8] {
        self.run.key(self.i)
    }
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head<'_> {}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head<'_> {
    /// By key, then newest run first.
    fn cmp(&self, other: &Self) -> Ordering {
        self.key()
            .cmp(other.key())
            .then_with(|| other.n.cmp(&self.n))
    }
}

/// See [`EpochWrites::merged`].
pub struct Merged<'a> {
    heap: BinaryHeap<Reverse<Head<'a>>>,
}

impl<'a> Iterator for Merged<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        let Reverse(head) = self.heap.pop()?;
        let (run, i) = (head.run, head.i);
        let key = run.key(i);
        // Older writes of the same key are shadowed.
        while let Some(next) = self.heap.peek() {
            if next.0.key() != key {
                break;
            }
            if let Some(Reverse(mut older)) = self.heap.pop() {
                older.i += 1;
                if older.i < older.run.entries.len() {
                    self.heap.push(Reverse(older));
                }
            }
        }
        if i + 1 < run.entries.len() {
            self.heap.push(Reverse(Head {
                run,
                n: head.n,
                i: i + 1,
            }));
        }
        Some((key, run.value(i)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn w(k: &str, v: Option<&str>) -> KeyedWrite {
        (
            Bytes::copy_from_slice(k.as_bytes()),
            v.map(|v| Bytes::copy_from_slice(v.as_bytes())),
        )
    }

    /// Runs agree with a map that applies the same writes in order.
    #[test]
    fn runs_read_and_merge_like_a_map() {
        let batches = vec![
            vec![w("a", Some("1")), w("c", Some("1")), w("e", None)],
            // unsorted, with a repeated key: the later wins
            vec![w("d", Some("2")), w("b", Some("2")), w("d", Some("2'"))],
            vec![w("a", None), w("c", Some("3")), w("f", Some("3"))],
            vec![],
        ];
        let mut model: BTreeMap<Bytes, Option<Bytes>> = BTreeMap::new();
        let mut writes = EpochWrites::default();
        for b in batches {
            for (k, v) in &b {
                model.insert(k.clone(), v.clone());
            }
            writes.push(Run::build(b));
        }
        for k in ["a", "b", "c", "d", "e", "f", "g", ""] {
            assert_eq!(writes.get(k.as_bytes()), model.get(k.as_bytes()).cloned());
        }
        let merged: Vec<(Vec<u8>, Option<Vec<u8>>)> = writes
            .merged()
            .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
            .collect();
        let expected: Vec<(Vec<u8>, Option<Vec<u8>>)> = model
            .iter()
            .map(|(k, v)| (k.to_vec(), v.as_ref().map(|v| v.to_vec())))
            .collect();
        assert_eq!(merged, expected);
        // A range: per run, newest first, bounds honoured.
        let range: KeyRange = (
            Bound::Excluded(b"a".to_vec()),
            Bound::Included(b"d".to_vec()),
        );
        let layers: Vec<Vec<(Bytes, Option<Bytes>)>> = writes.range_layers(&range).collect();
        assert_eq!(layers.len(), 3);
        assert_eq!(layers[0], vec![w("c", Some("3"))]);
        assert_eq!(layers[1], vec![w("b", Some("2")), w("d", Some("2'"))]);
        assert_eq!(layers[2], vec![w("c", Some("1"))]);
    }
}
