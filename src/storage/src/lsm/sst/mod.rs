//! Immutable sorted string tables ("SSTs") for the object-store state store.
//!
//! This module is the *file format* only: pure functions over bytes, no I/O.
//! [`SstBuilder`] turns a strictly increasing stream of `(key, value)` pairs
//! into one file; [`SstIndex`] decodes the meta section (block index, key
//! filter, footer) that a reader fetches with a single ranged read
//! `meta_offset..size`; [`Block`] decodes one data block fetched with another
//! ranged read. [`SstReader`] does both over a file held whole in memory.
//! [`MergeIterator`] and [`compact`] merge several sorted sources (newest
//! first) into new files.
//!
//! Keys are `table_id (4 bytes BE) | vnode (2 bytes BE) | memcomparable pk`
//! and are compared as plain bytes; the format itself treats them as opaque.
//! A value is `Option<bytes>`: `None` is a tombstone, which is stored and
//! returned as such because it must shadow older versions in older files.
//!
//! # File layout, format version 2
//!
//! All fixed-width integers are **little-endian**. `varint` is an unsigned
//! LEB128 encoding of a `u32` (1 to 5 bytes). Keys in a file are strictly
//! increasing (bytewise); every key appears at most once.
//!
//! ```text
//! +--------------+-----+----------------+--------------------------------------------+
//! | data block 0 | ... | data block n-1 | block index | key filter | footer (56 B) |
//! +--------------+-----+----------------+--------------------------------------------+
//! 0                                     meta_offset                                  size
//!                                       \_______________ meta section _______________/
//! ```
//!
//! Data blocks are contiguous: block 0 starts at offset 0, block `i + 1`
//! starts where block `i` ends, and the last block ends at `meta_offset`.
//! The footer's `compression` says how each block is stored: as is (0), or
//! (1) as `uncompressed_len: u32 | LZ4 block` of the data block below
//! (`lz4_flex`'s block format, the one LZ4 itself calls the block format).
//! Offsets and lengths in the block index are those of the stored bytes.
//!
//! ## Data block (`len` bytes, `n >= 1` entries)
//!
//! ```text
//! entry 0 | entry 1 | ... | entry n-1 | offsets: n x u32 | n: u32 | crc: u32
//!
//! entry  = flags: u8 | key_len: varint | [value_len: varint] | key | [value]
//!          flags bit 0 = tombstone (then value_len and value are absent);
//!          bits 1..7 must be zero.
//! offsets[i] = position of entry i relative to the block start
//!              (offsets[0] = 0; entry i ends where entry i + 1 starts, the
//!              last entry ends where the offsets array starts).
//! crc    = CRC-32 (IEEE, as computed by `crc32fast`) of bytes [0, len - 4).
//! ```
//!
//! The offsets array lets a reader binary-search a block by decoding only the
//! O(log n) entry headers it probes. Keys are stored whole (no prefix
//! compression) so that every probe is a plain slice comparison.
//!
//! ## Block index (`index_len` bytes, one record per block, in key order)
//!
//! ```text
//! offset: u64 | len: u32 | first_key_len: varint | first_key | last_key_len: varint | last_key
//! ```
//!
//! `len` is the stored length: the block trailer (offsets, count and crc)
//! included, compressed if the file is.
//!
//! ## Key filter (`filter_len` bytes)
//!
//! ```text
//! kind: u8                        0 = no filter (reader answers "maybe")
//!                                 1 = xorf::BinaryFuse16, followed by:
//! seed: u64 | segment_length: u32 | segment_length_mask: u32 |
//! segment_count_length: u32 | fingerprint_count: u32 | fingerprints: fingerprint_count x u16
//! ```
//!
//! The filter is built over `key_hash(key)` (XXH64 with seed 0, see
//! [`key_hash`]) of every key in the file, tombstones included, because a
//! tombstone answers a point lookup just as a value does. Files with fewer
//! than two keys carry no filter: the index's first/last key check is already
//! exact for them. See `filter.rs` for why BinaryFuse16 rather than Xor16.
//!
//! ## Footer (fixed 56 bytes, at the very end of the file)
//!
//! ```text
//! off  size  field
//!   0     8  meta_offset       file offset of the block index (= data length)
//!   8     4  index_len
//!  12     4  filter_len
//!  16     4  block_count
//!  20     4  compression       0 = none, 1 = LZ4 blocks (version 1: always 0)
//!  24     8  key_count         entries in the file, tombstones included
//!  32     8  tombstone_count
//!  40     4  format_version    2 (version 1 files, uncompressed, are read too)
//!  44     4  meta_crc          CRC-32 of the meta section bytes before this field
//!                              (block index, key filter and footer bytes 0..44)
//!  48     8  magic             b"EBBFLSST"
//! ```
//!
//! A meta section is therefore exactly `index_len + filter_len + 56` bytes.
//!
//! # Robustness
//!
//! Every decode path ([`Block::decode`], [`SstIndex::decode`],
//! [`SstReader::open`]) validates checksums *and* structure and returns
//! [`SstError::Corrupt`] instead of panicking on garbage or truncated input.
//! Once decoded, accessors rely on those validated invariants.

mod block;
mod builder;
mod codec;
mod filter;
mod merge;
mod table;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_merge;

pub use self::block::{Block, BlockIter};
pub use self::builder::{SstBuilder, SstMeta, SstOptions};
pub use self::codec::{Compression, FOOTER_LEN, FORMAT_VERSION, MAGIC};
pub use self::filter::key_hash;
pub use self::merge::{
    compact, compact_into, BoxedEntryIter, CompactOptions, Entry, EntryResult, MergeIterator,
};
pub use self::table::{footer_meta_offset, SstIndex, SstIter, SstReader};

/// Errors from decoding or merging SSTs.
#[derive(Debug, thiserror::Error)]
pub enum SstError {
    /// The bytes are not a valid SST (or part of one). The message says what
    /// is wrong and, where known, where.
    #[error("corrupt sst: {0}")]
    Corrupt(String),
    /// A well-formed footer from a format version this build cannot read.
    #[error(
        "unsupported sst format version {0} (this build reads versions 1 to {FORMAT_VERSION})"
    )]
    UnsupportedVersion(u32),
    /// An error from outside the format, raised by an input iterator or an
    /// output sink (e.g. a failed object-store read during compaction).
    #[error("sst i/o: {0}")]
    External(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl SstError {
    /// Prefixes a `Corrupt` message with where the corruption was found
    /// (e.g. `"block 7"`); other variants are returned unchanged.
    pub fn context(self, what: impl std::fmt::Display) -> SstError {
        match self {
            SstError::Corrupt(msg) => SstError::Corrupt(format!("{what}: {msg}")),
            other => other,
        }
    }
}

/// Shorthand for building a [`SstError::Corrupt`].
fn corrupt(msg: impl Into<String>) -> SstError {
    SstError::Corrupt(msg.into())
}
