//! Data blocks: encoding of entries and the zero-copy decoded [`Block`].
//!
//! See the module docs of `sst` for the byte layout.

use super::codec::{get_varint, put_varint, read_u32, varint_len};
use super::{corrupt, SstError};
use bytes::Bytes;
use std::ops::{Bound, Range};

/// Bytes after the last entry besides the offsets array: entry count + crc.
pub(super) const BLOCK_TRAILER_LEN: usize = 8;
const FLAG_PUT: u8 = 0;
const FLAG_TOMBSTONE: u8 = 1;

/// Encoded size of one entry (for size estimates).
#[inline]
pub(super) fn entry_len(key: &[u8], value: Option<&[u8]>) -> usize {
    let value_part = value.map_or(0, |v| varint_len(v.len() as u32) + v.len());
    1 + varint_len(key.len() as u32) + key.len() + value_part
}

/// Appends one entry to `buf` and returns the byte range of its key there.
/// The caller guarantees both lengths fit a `u32`.
#[inline]
pub(super) fn encode_entry(buf: &mut Vec<u8>, key: &[u8], value: Option<&[u8]>) -> Range<usize> {
    match value {
        Some(v) => {
            buf.push(FLAG_PUT);
            put_varint(buf, key.len() as u32);
            put_varint(buf, v.len() as u32);
        }
        None => {
            buf.push(FLAG_TOMBSTONE);
            put_varint(buf, key.len() as u32);
        }
    }
    let key_start = buf.len();
    buf.extend_from_slice(key);
    let key_range = key_start..buf.len();
    if let Some(v) = value {
        buf.extend_from_slice(v);
    }
    key_range
}

/// Parses the entry header at `start` within `data[..limit]`. Returns the key
/// range and the value range (`None` for a tombstone); `None` if malformed.
#[inline]
fn parse_entry(
    data: &[u8],
    start: usize,
    limit: usize,
) -> Option<(Range<usize>, Option<Range<usize>>)> {
    let buf = data.get(..limit)?;
    let flags = *buf.get(start)?;
    let mut pos = start + 1;
    let key_len = get_varint(buf, &mut pos)? as usize;
    let value_len = match flags {
        FLAG_PUT => Some(get_varint(buf, &mut pos)? as usize),
        FLAG_TOMBSTONE => None,
        _ => return None,
    };
    let key = pos..pos.checked_add(key_len)?;
    if key.end > limit {
        return None;
    }
    let value = match value_len {
        Some(len) => {
            let value = key.end..key.end.checked_add(len)?;
            if value.end > limit {
                return None;
            }
            Some(value)
        }
        None => None,
    };
    Some((key, value))
}

/// A decoded, checksum-verified data block.
///
/// Holds the block's `Bytes` (no copy); keys and values are handed out as
/// zero-copy slices of it. Cloning is cheap (a reference-count bump).
///
/// Invariants established by [`Block::decode`]: `count >= 1`; the offsets
/// array lies in `data[offsets_start..data.len() - 8]`; entry `i` spans
/// exactly `offset(i)..offset(i + 1)` (the last one ends at `offsets_start`)
/// and parses; keys are strictly increasing.
#[derive(Clone, Debug)]
pub struct Block {
    data: Bytes,
    count: usize,
    offsets_start: usize,
}

impl Block {
    /// Decodes and validates a block (crc, offsets, every entry header, key
    /// order). O(block size), done once when a block enters the cache; all
    /// lookups afterwards are allocation-free binary searches.
    ///
    /// The block keeps `data` alive; pass a buffer holding just this block
    /// (not a slice of a larger file) if the block is cached long-term.
    pub fn decode(data: Bytes) -> Result<Block, SstError> {
        let len = data.len();
        if len < BLOCK_TRAILER_LEN {
            return Err(corrupt(format!("truncated block of {len} bytes")));
        }
        let crc_pos = len - 4;
        let stored = read_u32(&data, crc_pos).ok_or_else(|| corrupt("truncated block"))?;
        let computed = crc32fast::hash(&data[..crc_pos]);
        if stored != computed {
            return Err(corrupt(format!(
                "block checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            )));
        }
        let count = read_u32(&data, len - 8).ok_or_else(|| corrupt("truncated block"))? as usize;
        let offsets_start = count
            .checked_mul(4)
            .and_then(|n| (len - BLOCK_TRAILER_LEN).checked_sub(n))
            .ok_or_else(|| corrupt(format!("block of {len} bytes claims {count} entries")))?;
        if count == 0 {
            return Err(corrupt("block has no entries"));
        }
        let block = Block {
            data,
            count,
            offsets_start,
        };
        block.validate()?;
        Ok(block)
    }

    fn validate(&self) -> Result<(), SstError> {
        let data = &self.data[..];
        let mut expected_start = 0usize;
        let mut prev_key: Option<Range<usize>> = None;
        for i in 0..self.count {
            let bad = |what: &str| corrupt(format!("block entry {i}: {what}"));
            let start = read_u32(data, self.offsets_start + 4 * i).ok_or_else(|| bad("offset"))?;
            if start as usize != expected_start {
                return Err(bad("offset does not follow the previous entry"));
            }
            let (key, value) = parse_entry(data, expected_start, self.offsets_start)
                .ok_or_else(|| bad("malformed or truncated entry"))?;
            let end = value.map_or(key.end, |v| v.end);
            let next_start = if i + 1 < self.count {
                read_u32(data, self.offsets_start + 4 * (i + 1)).ok_or_else(|| bad("offset"))?
                    as usize
            } else {
                self.offsets_start
            };
            if end != next_start {
                return Err(bad("entry length disagrees with the offsets array"));
            }
            if let Some(prev) = prev_key {
                if data[prev] >= data[key.clone()] {
                    return Err(bad("keys out of order"));
                }
            }
            prev_key = Some(key);
            expected_start = end;
        }
        Ok(())
    }

    /// Start of entry `i`. `i < count` and the offsets array were validated.
    #[inline]
    fn offset(&self, i: usize) -> usize {
        let p = self.offsets_start + 4 * i;
        let b = &self.data[p..p + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
    }

    #[inline]
    fn locate(&self, i: usize) -> (Range<usize>, Option<Range<usize>>) {
        assert!(i < self.count, "block entry {i} out of range");
        parse_entry(&self.data, self.offset(i), self.offsets_start)
            .expect("entries are validated by Block::decode")
    }

    /// Key of entry `i` as a borrowed slice (no reference-count traffic).
    #[inline]
    pub fn key_at(&self, i: usize) -> &[u8] {
        let (key, _) = self.locate(i);
        &self.data[key]
    }

    /// Number of entries (always >= 1).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Always false: a valid block has at least one entry.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Entry `i` as zero-copy slices; `None` value = tombstone. Panics if
    /// `i >= len()`.
    pub fn entry(&self, i: usize) -> (Bytes, Option<Bytes>) {
        let (key, value) = self.locate(i);
        (self.data.slice(key), value.map(|v| self.data.slice(v)))
    }

    /// Borrowed form of [`Block::entry`].
    pub fn entry_ref(&self, i: usize) -> (&[u8], Option<&[u8]>) {
        let (key, value) = self.locate(i);
        (&self.data[key], value.map(|v| &self.data[v]))
    }

    /// Index of the first entry whose key is `>= key` (`len()` if none).
    /// Binary search over the offsets array; decodes O(log n) headers.
    pub fn seek(&self, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key_at(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Index of the first entry satisfying the range start bound `start`.
    pub fn seek_bound(&self, start: Bound<&[u8]>) -> usize {
        match start {
            Bound::Unbounded => 0,
            Bound::Included(k) => self.seek(k),
            Bound::Excluded(k) => {
                let i = self.seek(k);
                if i < self.count && self.key_at(i) == k {
                    i + 1
                } else {
                    i
                }
            }
        }
    }

    /// Point lookup: `None` = key absent, `Some(None)` = tombstone,
    /// `Some(Some(v))` = value (a zero-copy slice). No allocation.
    pub fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        let i = self.seek(key);
        if i < self.count && self.key_at(i) == key {
            Some(self.entry(i).1)
        } else {
            None
        }
    }

    /// Borrowed form of [`Block::get`].
    pub fn get_ref(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        let i = self.seek(key);
        let (k, v) = if i < self.count {
            self.entry_ref(i)
        } else {
            return None;
        };
        (k == key).then_some(v)
    }

    /// Iterator over all entries.
    pub fn iter(&self) -> BlockIter {
        self.iter_from(0)
    }

    /// Iterator over entries `pos..` (e.g. `iter_from(seek(k))`).
    pub fn iter_from(&self, pos: usize) -> BlockIter {
        BlockIter {
            block: self.clone(),
            pos: pos.min(self.count),
        }
    }

    /// Bytes held by this block: the buffer it references (which may be a
    /// slice of a larger allocation the caller passed in) plus the struct.
    pub fn approx_memory(&self) -> usize {
        self.data.len() + std::mem::size_of::<Self>()
    }
}

/// Owning iterator over a block's entries (zero-copy slices).
#[derive(Clone, Debug)]
pub struct BlockIter {
    block: Block,
    pos: usize,
}

impl BlockIter {
    /// Key of the entry the next call to `next` returns, if any.
    pub fn peek_key(&self) -> Option<&[u8]> {
        (self.pos < self.block.count).then(|| self.block.key_at(self.pos))
    }
}

impl Iterator for BlockIter {
    type Item = (Bytes, Option<Bytes>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.block.count {
            return None;
        }
        let entry = self.block.entry(self.pos);
        self.pos += 1;
        Some(entry)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.block.count - self.pos;
        (n, Some(n))
    }
}

impl ExactSizeIterator for BlockIter {}
