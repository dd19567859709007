//! [`SstBuilder`]: writes one SST into a single in-memory buffer.

use super::block::{encode_entry, entry_len, BLOCK_TRAILER_LEN};
use super::codec::{put_varint, Footer, FOOTER_LEN};
use super::filter::{encode_filter, estimated_filter_len, key_hash};
use bytes::Bytes;
use std::ops::Range;

/// Options for building one SST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstOptions {
    /// Target size of a data block in bytes. A block is closed as soon as it
    /// reaches this size, so blocks are at most one entry larger.
    pub block_size: usize,
    /// Whether to store a key filter (an xor-family filter, see
    /// `filter.rs`; the name is historical).
    pub bloom: bool,
}

impl Default for SstOptions {
    fn default() -> Self {
        SstOptions {
            block_size: 16 * 1024,
            bloom: true,
        }
    }
}

/// Summary of a finished SST; what the manifest stores about a file.
///
/// `first_key`/`last_key` are fresh copies, so keeping an `SstMeta` does not
/// keep the file's buffer alive. For an empty file both are empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstMeta {
    /// Total file size in bytes.
    pub size: u64,
    /// Start of the meta section: `meta_offset..size` is everything
    /// `SstIndex::decode` needs, in one ranged read.
    pub meta_offset: u64,
    pub first_key: Bytes,
    pub last_key: Bytes,
    /// Entries in the file, tombstones included.
    pub key_count: u64,
    pub tombstone_count: u64,
    pub block_count: u32,
}

/// Builds one SST from strictly increasing keys.
///
/// Entries are encoded straight into the output buffer (no per-entry
/// allocation); the first and last keys of the current block are tracked as
/// positions in that buffer, which is append-only.
pub struct SstBuilder {
    options: SstOptions,
    /// Data blocks written so far followed by the open block's entries.
    buf: Vec<u8>,
    /// Encoded block index records of the closed blocks.
    index: Vec<u8>,
    /// `key_hash` of every key, for the filter.
    hashes: Vec<u64>,
    block_start: usize,
    /// Entry offsets of the open block, relative to `block_start`.
    block_offsets: Vec<u32>,
    block_first_key: Range<usize>,
    /// Position in `buf` of the most recently added key.
    last_key: Range<usize>,
    /// Position in `buf` of the file's first key.
    first_key: Range<usize>,
    key_count: u64,
    tombstone_count: u64,
    block_count: u32,
}

impl SstBuilder {
    pub fn new(options: SstOptions) -> Self {
        Self::with_capacity(options, 0)
    }

    /// Like [`SstBuilder::new`], reserving `bytes` for the output up front
    /// (e.g. the compaction target size) to avoid regrowing the buffer.
    pub fn with_capacity(options: SstOptions, bytes: usize) -> Self {
        SstBuilder {
            options,
            buf: Vec::with_capacity(bytes),
            index: Vec::new(),
            hashes: Vec::new(),
            block_start: 0,
            block_offsets: Vec::new(),
            block_first_key: 0..0,
            last_key: 0..0,
            first_key: 0..0,
            key_count: 0,
            tombstone_count: 0,
            block_count: 0,
        }
    }

    /// Appends an entry; `None` is a tombstone. Keys must be strictly
    /// increasing (checked in debug builds). Panics if the key or value is
    /// 4 GiB or larger, which the format cannot represent.
    pub fn add(&mut self, key: &[u8], value: Option<&[u8]>) {
        debug_assert!(
            self.key_count == 0 || &self.buf[self.last_key.clone()] < key,
            "SstBuilder keys must be strictly increasing"
        );
        let in_block = self.buf.len() - self.block_start;
        // Offsets and the block length are u32: the block, trailer included,
        // must stay addressable after this entry.
        let block_len_after = in_block as u64
            + entry_len(key, value) as u64
            + 4 * (self.block_offsets.len() as u64 + 1)
            + BLOCK_TRAILER_LEN as u64;
        assert!(
            block_len_after <= u32::MAX as u64,
            "sst entry too large ({} byte key, {:?} byte value)",
            key.len(),
            value.map(<[u8]>::len)
        );
        self.block_offsets.push(in_block as u32);
        let key_range = encode_entry(&mut self.buf, key, value);
        if self.block_offsets.len() == 1 {
            self.block_first_key = key_range.clone();
        }
        if self.key_count == 0 {
            self.first_key = key_range.clone();
        }
        self.last_key = key_range;
        if self.options.bloom {
            self.hashes.push(key_hash(key));
        }
        self.key_count += 1;
        self.tombstone_count += u64::from(value.is_none());
        if self.open_block_len() >= self.options.block_size {
            self.finish_block();
        }
    }

    /// Encoded size of the open block if it were closed now (0 if empty).
    fn open_block_len(&self) -> usize {
        if self.block_offsets.is_empty() {
            0
        } else {
            self.buf.len() - self.block_start + 4 * self.block_offsets.len() + BLOCK_TRAILER_LEN
        }
    }

    fn finish_block(&mut self) {
        if self.block_offsets.is_empty() {
            return;
        }
        for off in &self.block_offsets {
            self.buf.extend_from_slice(&off.to_le_bytes());
        }
        let count = self.block_offsets.len() as u32;
        self.buf.extend_from_slice(&count.to_le_bytes());
        let crc = crc32fast::hash(&self.buf[self.block_start..]);
        self.buf.extend_from_slice(&crc.to_le_bytes());

        let block_len = self.buf.len() - self.block_start;
        self.index
            .extend_from_slice(&(self.block_start as u64).to_le_bytes());
        self.index
            .extend_from_slice(&(block_len as u32).to_le_bytes());
        for key in [self.block_first_key.clone(), self.last_key.clone()] {
            put_varint(&mut self.index, key.len() as u32);
            self.index.extend_from_slice(&self.buf[key]);
        }
        self.block_count += 1;
        self.block_start = self.buf.len();
        self.block_offsets.clear();
    }

    /// Estimated size of the finished file if `finish` were called now
    /// (exact for data and index, an upper estimate for the filter).
    pub fn estimated_size(&self) -> usize {
        let pending_index = if self.block_offsets.is_empty() {
            0
        } else {
            12 + 10 + self.block_first_key.len() + self.last_key.len()
        };
        let filter_keys = if self.options.bloom {
            self.hashes.len()
        } else {
            0
        };
        self.block_start
            + self.open_block_len()
            + self.index.len()
            + pending_index
            + estimated_filter_len(filter_keys)
            + FOOTER_LEN
    }

    /// True if nothing has been added.
    pub fn is_empty(&self) -> bool {
        self.key_count == 0
    }

    /// Entries added so far.
    /// The last key added, if any.
    pub fn last_key(&self) -> Option<&[u8]> {
        (self.key_count > 0).then(|| &self.buf[self.last_key.clone()])
    }

    pub fn key_count(&self) -> u64 {
        self.key_count
    }

    /// Closes the last block and appends the meta section. An empty builder
    /// yields a valid file with no blocks.
    pub fn finish(mut self) -> (Bytes, SstMeta) {
        self.finish_block();
        let meta_offset = self.buf.len();
        let index_len = u32::try_from(self.index.len()).expect("sst block index exceeds 4 GiB");
        self.buf.extend_from_slice(&self.index);
        let filter_start = self.buf.len();
        encode_filter(&mut self.hashes, &mut self.buf);
        let filter_len =
            u32::try_from(self.buf.len() - filter_start).expect("sst filter exceeds 4 GiB");
        let footer = Footer {
            meta_offset: meta_offset as u64,
            index_len,
            filter_len,
            block_count: self.block_count,
            key_count: self.key_count,
            tombstone_count: self.tombstone_count,
        };
        footer.encode_into(&mut self.buf, meta_offset);
        let meta = SstMeta {
            size: self.buf.len() as u64,
            meta_offset: meta_offset as u64,
            first_key: Bytes::copy_from_slice(&self.buf[self.first_key.clone()]),
            last_key: Bytes::copy_from_slice(&self.buf[self.last_key.clone()]),
            key_count: self.key_count,
            tombstone_count: self.tombstone_count,
            block_count: self.block_count,
        };
        (Bytes::from(self.buf), meta)
    }
}
