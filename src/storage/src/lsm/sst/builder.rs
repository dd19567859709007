//! [`SstBuilder`]: writes one SST into a single in-memory buffer.

use super::block::{encode_entry, entry_len, BLOCK_TRAILER_LEN};
use super::codec::{put_varint, Compression, Footer, FOOTER_LEN};
use super::filter::{encode_filter, estimated_filter_len, key_hash};
use bytes::Bytes;
use std::ops::Range;

/// Options for building one SST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstOptions {
    /// Target size of a data block in bytes, before compression. A block is
    /// closed as soon as it reaches this size, so blocks are at most one
    /// entry larger.
    pub block_size: usize,
    /// Whether to store a key filter (an xor-family filter, see
    /// `filter.rs`; the name is historical).
    pub bloom: bool,
    /// How data blocks are stored.
    pub compression: Compression,
}

impl Default for SstOptions {
    fn default() -> Self {
        SstOptions {
            block_size: 16 * 1024,
            bloom: true,
            compression: Compression::Lz4,
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
/// Entries are encoded straight into the open block's buffer (no per-entry
/// allocation); its first and last keys are tracked as positions in that
/// buffer. A closed block is appended to the output, compressed if asked.
pub struct SstBuilder {
    options: SstOptions,
    /// Stored data blocks written so far.
    buf: Vec<u8>,
    /// The open block's entries.
    block: Vec<u8>,
    /// Encoded block index records of the closed blocks.
    index: Vec<u8>,
    /// `key_hash` of every key, for the filter.
    hashes: Vec<u64>,
    /// Entry offsets of the open block.
    block_offsets: Vec<u32>,
    /// Position in `block` of the open block's first key.
    block_first_key: Range<usize>,
    /// Position in `block` of the most recently added key, if the open
    /// block has entries.
    last_key: Range<usize>,
    /// The last key of the closed blocks.
    closed_last_key: Vec<u8>,
    /// The file's first key.
    first_key: Vec<u8>,
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
        let block = Vec::with_capacity(options.block_size + options.block_size / 4);
        SstBuilder {
            options,
            buf: Vec::with_capacity(bytes),
            block,
            index: Vec::new(),
            hashes: Vec::new(),
            block_offsets: Vec::new(),
            block_first_key: 0..0,
            last_key: 0..0,
            closed_last_key: Vec::new(),
            first_key: Vec::new(),
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
            self.last_key().is_none_or(|last| last < key),
            "SstBuilder keys must be strictly increasing"
        );
        let in_block = self.block.len();
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
        let key_range = encode_entry(&mut self.block, key, value);
        if self.block_offsets.len() == 1 {
            self.block_first_key = key_range.clone();
        }
        if self.key_count == 0 {
            self.first_key = key.to_vec();
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

    /// Encoded size of the open block if it were closed now, before
    /// compression (0 if empty).
    fn open_block_len(&self) -> usize {
        if self.block_offsets.is_empty() {
            0
        } else {
            self.block.len() + 4 * self.block_offsets.len() + BLOCK_TRAILER_LEN
        }
    }

    fn finish_block(&mut self) {
        if self.block_offsets.is_empty() {
            return;
        }
        let block = &mut self.block;
        for off in &self.block_offsets {
            block.extend_from_slice(&off.to_le_bytes());
        }
        let count = self.block_offsets.len() as u32;
        block.extend_from_slice(&count.to_le_bytes());
        let crc = crc32fast::hash(block);
        block.extend_from_slice(&crc.to_le_bytes());

        let start = self.buf.len();
        match self.options.compression {
            Compression::None => self.buf.extend_from_slice(block),
            Compression::Lz4 => {
                // The open block is < 4 GiB (checked in `add`).
                self.buf
                    .extend_from_slice(&(block.len() as u32).to_le_bytes());
                let at = self.buf.len();
                self.buf.resize(
                    at + lz4_flex::block::get_maximum_output_size(block.len()),
                    0,
                );
                let written = lz4_flex::block::compress_into(block, &mut self.buf[at..])
                    .expect("lz4 output sized by get_maximum_output_size");
                self.buf.truncate(at + written);
            }
        }
        let stored_len = self.buf.len() - start;
        self.index.extend_from_slice(&(start as u64).to_le_bytes());
        self.index
            .extend_from_slice(&(stored_len as u32).to_le_bytes());
        for key in [self.block_first_key.clone(), self.last_key.clone()] {
            put_varint(&mut self.index, key.len() as u32);
            self.index.extend_from_slice(&block[key]);
        }
        self.closed_last_key.clear();
        self.closed_last_key
            .extend_from_slice(&block[self.last_key.clone()]);
        self.block_count += 1;
        block.clear();
        self.block_offsets.clear();
    }

    /// Estimated size of the finished file if `finish` were called now
    /// (exact for the closed blocks and the index; the open block counts
    /// uncompressed and the filter at an upper estimate).
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
        self.buf.len()
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

    /// The last key added, if any.
    pub fn last_key(&self) -> Option<&[u8]> {
        if !self.block_offsets.is_empty() {
            Some(&self.block[self.last_key.clone()])
        } else {
            (self.key_count > 0).then_some(&self.closed_last_key[..])
        }
    }

    /// Entries added so far.
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
            compression: self.options.compression,
            key_count: self.key_count,
            tombstone_count: self.tombstone_count,
        };
        footer.encode_into(&mut self.buf, meta_offset);
        let meta = SstMeta {
            size: self.buf.len() as u64,
            meta_offset: meta_offset as u64,
            first_key: Bytes::from(self.first_key),
            last_key: Bytes::from(self.closed_last_key),
            key_count: self.key_count,
            tombstone_count: self.tombstone_count,
            block_count: self.block_count,
        };
        (Bytes::from(self.buf), meta)
    }
}
