//! Reading a whole table: the decoded meta section ([`SstIndex`]) and a
//! reader over a file held in memory ([`SstReader`]).

use super::block::Block;
use super::codec::{get_len_prefixed, read_u32, read_u64, Compression, Footer, FOOTER_LEN};
use super::filter::{decode_filter, filter_may_contain};
use super::{corrupt, SstError, SstMeta};
use bytes::Bytes;
use std::ops::{Bound, Range};
use std::sync::Arc;
use xorf::{BinaryFuse16, Filter};

/// Smallest possible encoded block: one tombstone with an empty key (3
/// bytes), one offset, count and crc.
const MIN_BLOCK_LEN: u32 = 3 + 4 + 8;

/// Reads `meta_offset` from the last [`FOOTER_LEN`] bytes of a file (e.g.
/// after fetching just the tail of an object whose meta is unknown). Checks
/// magic and version; the crc is verified later by [`SstIndex::decode`].
pub fn footer_meta_offset(tail: &[u8]) -> Result<u64, SstError> {
    Ok(Footer::decode_unchecked(tail)?.meta_offset)
}

/// One block index record; keys are ranges into `SstIndex::keys`.
#[derive(Clone, Debug)]
struct BlockHandle {
    offset: u64,
    len: u32,
    first_key: (u32, u32),
    last_key: (u32, u32),
}

/// The decoded meta section of one SST: block index, key filter, counts.
///
/// Owns a private copy of the index bytes, so it does not keep the fetched
/// meta buffer (or a whole file) alive; the filter is decoded into its own
/// array. Invariants from [`SstIndex::decode`]: blocks are contiguous from
/// offset 0 to `meta_offset`, each block's `first_key <= last_key`, and
/// block key ranges are strictly increasing and disjoint.
#[derive(Clone, Debug)]
pub struct SstIndex {
    keys: Bytes,
    blocks: Vec<BlockHandle>,
    filter: Option<BinaryFuse16>,
    meta_offset: u64,
    meta_len: u64,
    key_count: u64,
    tombstone_count: u64,
    compression: Compression,
}

impl SstIndex {
    /// Decodes the meta section (`file[meta_offset..size]`), verifying magic,
    /// version, checksum and the structure of index and filter.
    pub fn decode(meta: Bytes) -> Result<SstIndex, SstError> {
        let footer = Footer::decode_meta_section(&meta)?;
        let index_len = footer.index_len as usize;
        let index = &meta[..index_len];
        let filter_section = &meta[index_len..index_len + footer.filter_len as usize];

        let block_count = footer.block_count as usize;
        let min_block_len = match footer.compression {
            Compression::None => MIN_BLOCK_LEN,
            // The length prefix and one LZ4 token.
            Compression::Lz4 => 5,
        };
        // Each record takes at least 14 bytes; bound the allocation by what
        // the bytes can actually hold.
        let mut blocks = Vec::with_capacity(block_count.min(index_len / 14));
        let mut pos = 0usize;
        let mut next_offset = 0u64;
        for i in 0..block_count {
            let bad = |what: &str| corrupt(format!("block index record {i}: {what}"));
            let offset = read_u64(index, pos).ok_or_else(|| bad("truncated"))?;
            let len = read_u32(index, pos + 8).ok_or_else(|| bad("truncated"))?;
            pos += 12;
            let first = get_len_prefixed(index, &mut pos).ok_or_else(|| bad("truncated key"))?;
            let last = get_len_prefixed(index, &mut pos).ok_or_else(|| bad("truncated key"))?;
            if offset != next_offset {
                return Err(bad("blocks are not contiguous"));
            }
            if len < min_block_len {
                return Err(bad("block too short"));
            }
            if index[first.clone()] > index[last.clone()] {
                return Err(bad("first key is after last key"));
            }
            if let Some(prev) = blocks.last() {
                let prev: &BlockHandle = prev;
                if index[range(prev.last_key)] >= index[first.clone()] {
                    return Err(bad("block key ranges overlap or are out of order"));
                }
            }
            next_offset = offset + len as u64;
            blocks.push(BlockHandle {
                offset,
                len,
                first_key: (first.start as u32, first.end as u32),
                last_key: (last.start as u32, last.end as u32),
            });
        }
        if pos != index_len {
            return Err(corrupt(format!(
                "block index is {index_len} bytes but its {block_count} records use {pos}"
            )));
        }
        if next_offset != footer.meta_offset {
            return Err(corrupt(format!(
                "data blocks end at {next_offset} but the meta section starts at {}",
                footer.meta_offset
            )));
        }
        if footer.key_count < block_count as u64
            || (footer.key_count == 0) != (block_count == 0)
            || footer.tombstone_count > footer.key_count
        {
            return Err(corrupt("inconsistent key counts in footer"));
        }
        let filter = decode_filter(filter_section)?;
        Ok(SstIndex {
            keys: Bytes::copy_from_slice(index),
            blocks,
            filter,
            meta_offset: footer.meta_offset,
            meta_len: meta.len() as u64,
            key_count: footer.key_count,
            tombstone_count: footer.tombstone_count,
            compression: footer.compression,
        })
    }

    /// Decodes data block `i` from its stored bytes (`block_handle(i)`),
    /// decompressing it if the file is compressed.
    pub fn decode_block(&self, i: usize, stored: Bytes) -> Result<Block, SstError> {
        let block = match self.compression {
            Compression::None => Block::decode(stored),
            Compression::Lz4 => decompress_lz4(&stored).and_then(Block::decode),
        };
        block.map_err(|e| e.context(format!("block {i}")))
    }

    #[inline]
    fn key(&self, r: (u32, u32)) -> &[u8] {
        &self.keys[range(r)]
    }

    /// Filter check: `false` means `key` is definitely not in the file
    /// (neither as a value nor as a tombstone). Files without a filter
    /// answer `true`.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| filter_may_contain(f, key))
    }

    /// Whether the file carries a key filter.
    pub fn has_filter(&self) -> bool {
        self.filter.is_some()
    }

    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// `(offset, len)` of block `i` in the file. Panics if `i` is out of range.
    pub fn block_handle(&self, i: usize) -> (u64, u32) {
        let b = &self.blocks[i];
        (b.offset, b.len)
    }

    /// First key of block `i`. Panics if `i` is out of range.
    pub fn block_first_key(&self, i: usize) -> &[u8] {
        self.key(self.blocks[i].first_key)
    }

    /// Last key of block `i`. Panics if `i` is out of range.
    pub fn block_last_key(&self, i: usize) -> &[u8] {
        self.key(self.blocks[i].last_key)
    }

    /// The only block that can hold `key`, or `None` if `key` falls outside
    /// every block's `[first_key, last_key]`. Does not consult the filter.
    pub fn find_block(&self, key: &[u8]) -> Option<usize> {
        let i = self.blocks.partition_point(|b| self.key(b.last_key) < key);
        (i < self.blocks.len() && self.key(self.blocks[i].first_key) <= key).then_some(i)
    }

    /// The blocks that may hold keys in `(start, end)`, as an index range
    /// (empty if none).
    pub fn blocks_overlapping(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Range<usize> {
        let lo = match start {
            Bound::Unbounded => 0,
            Bound::Included(s) => self.blocks.partition_point(|b| self.key(b.last_key) < s),
            Bound::Excluded(s) => self.blocks.partition_point(|b| self.key(b.last_key) <= s),
        };
        let hi = match end {
            Bound::Unbounded => self.blocks.len(),
            Bound::Included(e) => self.blocks.partition_point(|b| self.key(b.first_key) <= e),
            Bound::Excluded(e) => self.blocks.partition_point(|b| self.key(b.first_key) < e),
        };
        lo..hi.max(lo)
    }

    /// Smallest key in the file (empty for an empty file).
    pub fn first_key(&self) -> &[u8] {
        self.blocks.first().map_or(&[], |b| self.key(b.first_key))
    }

    /// Largest key in the file (empty for an empty file).
    pub fn last_key(&self) -> &[u8] {
        self.blocks.last().map_or(&[], |b| self.key(b.last_key))
    }

    pub fn key_count(&self) -> u64 {
        self.key_count
    }

    pub fn tombstone_count(&self) -> u64 {
        self.tombstone_count
    }

    /// Start of the meta section in the file (= total data block bytes).
    pub fn meta_offset(&self) -> u64 {
        self.meta_offset
    }

    /// Total file size.
    pub fn file_size(&self) -> u64 {
        self.meta_offset + self.meta_len
    }

    /// Reconstructs the [`SstMeta`] that `SstBuilder::finish` returned for
    /// this file (e.g. to cross-check a manifest entry).
    pub fn to_meta(&self) -> SstMeta {
        SstMeta {
            size: self.file_size(),
            meta_offset: self.meta_offset,
            first_key: Bytes::copy_from_slice(self.first_key()),
            last_key: Bytes::copy_from_slice(self.last_key()),
            key_count: self.key_count,
            tombstone_count: self.tombstone_count,
            block_count: self.blocks.len() as u32,
        }
    }

    /// Heap and inline bytes held by this index (for cache weighing).
    pub fn approx_memory(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.keys.len()
            + self.blocks.capacity() * std::mem::size_of::<BlockHandle>()
            + self.filter.as_ref().map_or(0, |f| f.len() * 2)
    }
}

/// Largest data block a reader accepts: far above what any writer makes
/// (blocks close at `block_size`, 16 KiB by default), low enough that a
/// corrupt length prefix cannot make a reader allocate gigabytes.
const MAX_BLOCK_LEN: usize = 64 << 20;

/// `uncompressed_len: u32 | LZ4 block` → the block's bytes.
fn decompress_lz4(stored: &[u8]) -> Result<Bytes, SstError> {
    let len = read_u32(stored, 0).ok_or_else(|| corrupt("truncated compressed block"))? as usize;
    if len > MAX_BLOCK_LEN {
        return Err(corrupt(format!("compressed block claims {len} bytes")));
    }
    let mut out = vec![0u8; len];
    match lz4_flex::block::decompress_into(&stored[4..], &mut out) {
        Ok(n) if n == len => Ok(Bytes::from(out)),
        Ok(n) => Err(corrupt(format!(
            "compressed block holds {n} bytes, its header says {len}"
        ))),
        Err(e) => Err(corrupt(format!("compressed block: {e}"))),
    }
}

#[inline]
fn range((start, end): (u32, u32)) -> Range<usize> {
    start as usize..end as usize
}

/// An SST held whole in memory (tests; compaction inputs fetched whole).
/// Cloning is cheap.
#[derive(Clone, Debug)]
pub struct SstReader {
    file: Bytes,
    index: Arc<SstIndex>,
}

impl SstReader {
    /// Verifies the footer and meta section; blocks are verified as they are
    /// read.
    pub fn open(file: Bytes) -> Result<SstReader, SstError> {
        let meta_offset = footer_meta_offset(&file)?;
        let max = (file.len() - FOOTER_LEN) as u64;
        if meta_offset > max {
            return Err(corrupt(format!(
                "meta offset {meta_offset} is beyond the end of a {} byte file",
                file.len()
            )));
        }
        let index = SstIndex::decode(file.slice(meta_offset as usize..))?;
        Ok(SstReader {
            file,
            index: Arc::new(index),
        })
    }

    pub fn index(&self) -> &SstIndex {
        &self.index
    }

    pub fn meta(&self) -> SstMeta {
        self.index.to_meta()
    }

    /// Decodes block `i` (a zero-copy slice of the file). Panics if `i` is
    /// out of range.
    pub fn block(&self, i: usize) -> Result<Block, SstError> {
        let (offset, len) = self.index.block_handle(i);
        // In bounds: the index checked the blocks end at `meta_offset`, and
        // `open` checked `meta_offset` lies inside the file.
        let bytes = self
            .file
            .slice(offset as usize..offset as usize + len as usize);
        self.index.decode_block(i, bytes)
    }

    /// Point lookup: `None` = absent, `Some(None)` = tombstone.
    pub fn get(&self, key: &[u8]) -> Result<Option<Option<Bytes>>, SstError> {
        if !self.index.may_contain(key) {
            return Ok(None);
        }
        match self.index.find_block(key) {
            Some(i) => Ok(self.block(i)?.get(key)),
            None => Ok(None),
        }
    }

    /// All entries in key order, tombstones included.
    pub fn iter(&self) -> SstIter {
        self.iter_range(Bound::Unbounded, Bound::Unbounded)
    }

    /// Entries with keys in `(start, end)` in key order, tombstones included.
    /// The iterator owns what it needs (`'static + Send`), so it can feed
    /// [`compact`](super::compact) directly.
    pub fn iter_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> SstIter {
        let blocks = self.index.blocks_overlapping(start, end);
        SstIter {
            reader: self.clone(),
            next_block: blocks.start,
            end_block: blocks.end,
            start: start.map(Bytes::copy_from_slice),
            end: end.map(Bytes::copy_from_slice),
            cur: None,
            done: false,
        }
    }
}

/// Range iterator over an [`SstReader`]; yields an error (then stops) if a
/// block fails to decode.
pub struct SstIter {
    reader: SstReader,
    next_block: usize,
    end_block: usize,
    /// Applied only to the first block: every later block starts after it.
    start: Bound<Bytes>,
    end: Bound<Bytes>,
    cur: Option<super::BlockIter>,
    done: bool,
}

impl SstIter {
    fn before_end(&self, key: &[u8]) -> bool {
        match &self.end {
            Bound::Unbounded => true,
            Bound::Included(e) => key <= &e[..],
            Bound::Excluded(e) => key < &e[..],
        }
    }
}

impl Iterator for SstIter {
    type Item = Result<(Bytes, Option<Bytes>), SstError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if let Some(entry) = self.cur.as_mut().and_then(Iterator::next) {
                if self.before_end(&entry.0) {
                    return Some(Ok(entry));
                }
                self.done = true;
                return None;
            }
            if self.next_block >= self.end_block {
                self.done = true;
                return None;
            }
            let block = match self.reader.block(self.next_block) {
                Ok(block) => block,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            let start = std::mem::replace(&mut self.start, Bound::Unbounded);
            self.cur = Some(block.iter_from(block.seek_bound(start.as_ref().map(|k| &k[..]))));
            self.next_block += 1;
        }
    }
}
