//! Low-level encoding helpers shared by the builder and the decoders:
//! LEB128 varints, bounds-checked little-endian reads and the footer.
//!
//! Every `read_*` / `get_*` function here is total: on short or malformed
//! input it returns `None` / `Err`, never panics, so decode paths can be
//! written with `?` only.

use super::{corrupt, SstError};

/// Magic bytes at the very end of every SST.
pub const MAGIC: [u8; 8] = *b"EBBFLSST";
/// The format version this build writes. It also reads version 1, which is
/// version 2 with every file uncompressed.
pub const FORMAT_VERSION: u32 = 2;
/// Size of the fixed footer at the end of the file (and of the meta section).
pub const FOOTER_LEN: usize = 56;

/// Offset of `meta_crc` within the footer; the crc covers every meta-section
/// byte before it.
const FOOTER_CRC_POS: usize = 44;

/// Appends `v` as unsigned LEB128.
#[inline]
pub(super) fn put_varint(buf: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Encoded length of `v` as a varint.
#[inline]
pub(super) fn varint_len(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        _ => 5,
    }
}

/// Decodes a varint at `*pos`, advancing `*pos`. Rejects truncated input,
/// encodings longer than 5 bytes and values that do not fit a `u32`.
#[inline]
pub(super) fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u32> {
    // Fast path: the overwhelmingly common single-byte case.
    let first = *buf.get(*pos)?;
    if first < 0x80 {
        *pos += 1;
        return Some(first as u32);
    }
    let mut value: u32 = 0;
    for i in 0..5 {
        let byte = *buf.get(*pos + i)?;
        let bits = (byte & 0x7f) as u32;
        if i == 4 && bits > 0x0f {
            return None; // would overflow u32
        }
        value |= bits << (7 * i);
        if byte < 0x80 {
            *pos += i + 1;
            return Some(value);
        }
    }
    None
}

#[inline]
pub(super) fn read_u32(buf: &[u8], pos: usize) -> Option<u32> {
    let bytes = buf.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

#[inline]
pub(super) fn read_u64(buf: &[u8], pos: usize) -> Option<u64> {
    let bytes = buf.get(pos..pos.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads a `varint` length followed by that many bytes at `*pos`; returns the
/// byte range of the payload and advances `*pos` past it.
pub(super) fn get_len_prefixed(buf: &[u8], pos: &mut usize) -> Option<std::ops::Range<usize>> {
    let len = get_varint(buf, pos)? as usize;
    let start = *pos;
    let end = start.checked_add(len)?;
    if end > buf.len() {
        return None;
    }
    *pos = end;
    Some(start..end)
}

/// The decoded fixed footer. See the module docs for the byte layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Footer {
    pub meta_offset: u64,
    pub index_len: u32,
    pub filter_len: u32,
    pub block_count: u32,
    pub compression: Compression,
    pub key_count: u64,
    pub tombstone_count: u64,
}

/// How the data blocks of a file are stored (footer field at offset 20).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// A stored block is the block itself.
    None,
    /// A stored block is `uncompressed_len: u32 | LZ4 block` of the block
    /// (`lz4_flex`'s block format; the block's own crc checks the result).
    #[default]
    Lz4,
}

impl Compression {
    fn code(self) -> u32 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
        }
    }

    fn from_code(code: u32) -> Option<Compression> {
        match code {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            _ => None,
        }
    }
}

impl Footer {
    /// Appends the footer to `buf`, whose bytes from `meta_start` on are the
    /// meta section written so far (index and filter); they are covered by
    /// the crc together with the footer's own leading fields.
    pub fn encode_into(&self, buf: &mut Vec<u8>, meta_start: usize) {
        let footer_start = buf.len();
        buf.extend_from_slice(&self.meta_offset.to_le_bytes());
        buf.extend_from_slice(&self.index_len.to_le_bytes());
        buf.extend_from_slice(&self.filter_len.to_le_bytes());
        buf.extend_from_slice(&self.block_count.to_le_bytes());
        buf.extend_from_slice(&self.compression.code().to_le_bytes());
        buf.extend_from_slice(&self.key_count.to_le_bytes());
        buf.extend_from_slice(&self.tombstone_count.to_le_bytes());
        buf.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        debug_assert_eq!(buf.len() - footer_start, FOOTER_CRC_POS);
        let crc = crc32fast::hash(&buf[meta_start..]);
        buf.extend_from_slice(&crc.to_le_bytes());
        buf.extend_from_slice(&MAGIC);
        debug_assert_eq!(buf.len() - footer_start, FOOTER_LEN);
    }

    /// Parses the last [`FOOTER_LEN`] bytes of `tail`, checking magic,
    /// version and the compression field but *not* the crc (which needs the
    /// whole meta section; see [`Footer::decode_meta_section`]).
    pub fn decode_unchecked(tail: &[u8]) -> Result<Footer, SstError> {
        let start = tail.len().checked_sub(FOOTER_LEN).ok_or_else(|| {
            corrupt(format!(
                "truncated: {} bytes cannot hold the {FOOTER_LEN}-byte footer",
                tail.len()
            ))
        })?;
        let f = &tail[start..];
        if f[48..56] != MAGIC {
            return Err(corrupt("bad magic"));
        }
        let field = |p| read_u32(f, p).ok_or_else(|| corrupt("footer"));
        let field64 = |p| read_u64(f, p).ok_or_else(|| corrupt("footer"));
        let version = field(40)?;
        if version != 1 && version != FORMAT_VERSION {
            return Err(SstError::UnsupportedVersion(version));
        }
        let code = field(20)?;
        let compression = match Compression::from_code(code) {
            // Version 1 had the field reserved (zero): no compression.
            Some(c) if version > 1 || c == Compression::None => c,
            _ => return Err(corrupt(format!("unknown compression {code} in footer"))),
        };
        Ok(Footer {
            compression,
            meta_offset: field64(0)?,
            index_len: field(8)?,
            filter_len: field(12)?,
            block_count: field(16)?,
            key_count: field64(24)?,
            tombstone_count: field64(32)?,
        })
    }

    /// Decodes and fully verifies the footer of a complete meta section:
    /// magic, version, crc and that the section length matches the footer.
    pub fn decode_meta_section(meta: &[u8]) -> Result<Footer, SstError> {
        let footer = Footer::decode_unchecked(meta)?;
        let crc_pos = meta.len() - FOOTER_LEN + FOOTER_CRC_POS;
        let stored = read_u32(meta, crc_pos).ok_or_else(|| corrupt("footer"))?;
        let computed = crc32fast::hash(&meta[..crc_pos]);
        if stored != computed {
            return Err(corrupt(format!(
                "meta section checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            )));
        }
        let described = footer.index_len as u64 + footer.filter_len as u64 + FOOTER_LEN as u64;
        if described != meta.len() as u64 {
            return Err(corrupt(format!(
                "meta section is {} bytes but its footer describes {described}",
                meta.len()
            )));
        }
        Ok(footer)
    }
}
