//! The per-file key filter and the key hash it is built over.
//!
//! # Why `BinaryFuse16` rather than `Xor16`
//!
//! Both answer with a false-positive rate of about 2^-16 (~0.0015%) and have
//! no false negatives. Measured with xorf 0.13 in release mode on 1M keys,
//! `BinaryFuse16` builds in ~65 ms against ~300 ms for `Xor16` (builds happen
//! on every flush and compaction, so this is the cost that matters), uses
//! ~18.1 instead of ~19.7 bits per key (filters are cached with the index for
//! every live file) and probes a little faster (its three probes fall into
//! neighbouring segments). Its construction can in principle fail (xorf gives
//! up after 1000 seeds; we never saw it happen); then the file simply carries
//! no filter, which is always correct, merely slower.
//!
//! # Stability
//!
//! The filter is persisted, so the key hash must never change: it is XXH64
//! with seed 0, implemented here (a few lines, checked against the reference
//! test vectors) so that no dependency upgrade can change it. The filter's
//! own internal hashing is part of xorf's `BinaryFuse16` and is fixed by the
//! persisted `seed` and segment parameters; an xorf release that changed its
//! probe function would need a new filter `kind`.

use super::codec::{read_u32, read_u64};
use super::{corrupt, SstError};
use xorf::{BinaryFuse16, Descriptor, Filter};

/// Filter section kind byte: no filter stored.
pub(super) const FILTER_NONE: u8 = 0;
/// Filter section kind byte: an `xorf::BinaryFuse16` follows.
pub(super) const FILTER_BINARY_FUSE16: u8 = 1;
/// Fixed bytes of a BinaryFuse16 filter section before the fingerprints.
pub(super) const FILTER_HEADER_LEN: usize = 1 + 8 + 4 * 4;
/// Files with fewer distinct keys store no filter: with one key the index's
/// first/last-key check is already exact.
pub(super) const MIN_FILTER_KEYS: usize = 2;

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

#[inline]
fn xxh_round(acc: u64, lane: u64) -> u64 {
    acc.wrapping_add(lane.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

#[inline]
fn xxh_merge(acc: u64, v: u64) -> u64 {
    (acc ^ xxh_round(0, v)).wrapping_mul(P1).wrapping_add(P4)
}

#[inline]
fn lane64(chunk: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&chunk[..8]);
    u64::from_le_bytes(b)
}

/// The persisted key hash: XXH64 of `key` with seed 0.
///
/// Fixed forever for format version 1 (filters are built from it).
pub fn key_hash(key: &[u8]) -> u64 {
    let len = key.len() as u64;
    let mut rest = key;
    let mut h = if key.len() >= 32 {
        let mut v = [P1.wrapping_add(P2), P2, 0, 0u64.wrapping_sub(P1)];
        let mut stripes = rest.chunks_exact(32);
        for stripe in &mut stripes {
            for (i, acc) in v.iter_mut().enumerate() {
                *acc = xxh_round(*acc, lane64(&stripe[i * 8..]));
            }
        }
        rest = stripes.remainder();
        let mut h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for lane in v {
            h = xxh_merge(h, lane);
        }
        h
    } else {
        P5
    };
    h = h.wrapping_add(len);
    let mut words = rest.chunks_exact(8);
    for w in &mut words {
        h ^= xxh_round(0, lane64(w));
        h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
    }
    rest = words.remainder();
    if rest.len() >= 4 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&rest[..4]);
        h ^= (u32::from_le_bytes(b) as u64).wrapping_mul(P1);
        h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
        rest = &rest[4..];
    }
    for &byte in rest {
        h ^= (byte as u64).wrapping_mul(P5);
        h = h.rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}

/// Builds and encodes the filter section for the given key hashes (which
/// may be reordered). Appends to `out`; the section is a single
/// `FILTER_NONE` byte when there is no filter.
pub(super) fn encode_filter(hashes: &mut Vec<u64>, out: &mut Vec<u8>) {
    // xorf debug-asserts distinct inputs (release builds tolerate
    // duplicates). A 64-bit collision between distinct keys is astronomically
    // rare, but debug builds must not trip over it.
    if cfg!(debug_assertions) {
        hashes.sort_unstable();
        hashes.dedup();
    }
    let filter = if hashes.len() >= MIN_FILTER_KEYS {
        BinaryFuse16::try_from(hashes.as_slice()).ok()
    } else {
        None
    };
    // Never write a filter our own decoder would reject.
    let Some(filter) = filter.filter(|f| validate(&f.descriptor, f.fingerprints.len()).is_ok())
    else {
        out.push(FILTER_NONE);
        return;
    };
    let d = &filter.descriptor;
    out.reserve(FILTER_HEADER_LEN + filter.fingerprints.len() * 2);
    out.push(FILTER_BINARY_FUSE16);
    out.extend_from_slice(&d.seed.to_le_bytes());
    out.extend_from_slice(&d.segment_length.to_le_bytes());
    out.extend_from_slice(&d.segment_length_mask.to_le_bytes());
    out.extend_from_slice(&d.segment_count_length.to_le_bytes());
    out.extend_from_slice(&(filter.fingerprints.len() as u32).to_le_bytes());
    for fp in filter.fingerprints.iter() {
        out.extend_from_slice(&fp.to_le_bytes());
    }
}

/// Upper estimate of the encoded filter size for `keys` keys (for
/// `SstBuilder::estimated_size`); ~18-22 bits per key in practice.
pub(super) fn estimated_filter_len(keys: usize) -> usize {
    if keys < MIN_FILTER_KEYS {
        1
    } else {
        FILTER_HEADER_LEN + keys * 5 / 2 + 64
    }
}

/// Checks that `contains` can never index out of bounds. xorf computes the
/// probes as `h0 < segment_count_length`, `h1` in the `segment_length`-aligned
/// segment after `h0`, `h2` in the one after that; with a power-of-two segment
/// length, `segment_count_length` a multiple of it and exactly
/// `segment_count_length + 2 * segment_length` fingerprints, every probe
/// lands in `0..fingerprint_count` and no u32 addition overflows.
fn validate(d: &Descriptor, fingerprint_count: usize) -> Result<(), SstError> {
    let sl = d.segment_length as u64;
    let ok = d.segment_length.is_power_of_two()
        && d.segment_length_mask as u64 == sl - 1
        && (d.segment_count_length as u64).is_multiple_of(sl)
        && d.segment_count_length as u64 + 2 * sl == fingerprint_count as u64
        && fingerprint_count as u64 <= u32::MAX as u64;
    if ok {
        Ok(())
    } else {
        Err(corrupt(format!(
            "inconsistent filter parameters {d:?} for {fingerprint_count} fingerprints"
        )))
    }
}

/// Decodes a filter section. `Ok(None)` means the file has no filter.
pub(super) fn decode_filter(section: &[u8]) -> Result<Option<BinaryFuse16>, SstError> {
    let truncated = || corrupt("truncated filter section");
    match section.first().copied() {
        Some(FILTER_NONE) if section.len() == 1 => return Ok(None),
        Some(FILTER_BINARY_FUSE16) => {}
        Some(kind) => {
            return Err(corrupt(format!(
                "unknown filter kind {kind} or bad filter length {}",
                section.len()
            )))
        }
        None => return Err(truncated()),
    }
    let descriptor = Descriptor {
        seed: read_u64(section, 1).ok_or_else(truncated)?,
        segment_length: read_u32(section, 9).ok_or_else(truncated)?,
        segment_length_mask: read_u32(section, 13).ok_or_else(truncated)?,
        segment_count_length: read_u32(section, 17).ok_or_else(truncated)?,
    };
    let count = read_u32(section, 21).ok_or_else(truncated)? as usize;
    let fp_bytes = section.get(FILTER_HEADER_LEN..).ok_or_else(truncated)?;
    if fp_bytes.len() as u64 != count as u64 * 2 {
        return Err(corrupt(format!(
            "filter has {} fingerprint bytes, header says {count} fingerprints",
            fp_bytes.len()
        )));
    }
    validate(&descriptor, count)?;
    let fingerprints = fp_bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    Ok(Some(BinaryFuse16 {
        descriptor,
        fingerprints,
    }))
}

/// Filter lookup for a key (no false negatives).
#[inline]
pub(super) fn filter_may_contain(filter: &BinaryFuse16, key: &[u8]) -> bool {
    filter.contains(&key_hash(key))
}
