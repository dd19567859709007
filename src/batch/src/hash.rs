//! The hasher of the batch engine's in-memory hash tables (group keys, join
//! keys).
//!
//! std's default SipHash resists flooding by chosen keys, which matters for
//! long-lived tables fed by clients but costs a large share of a hash join
//! or aggregation over a million rows. These tables live for one query, so a
//! multiply-rotate hash (FxHash's mixing step) with a final avalanche is
//! enough. The avalanche matters: std's `HashMap` picks buckets from the
//! low bits and control bytes from the high ones, and keys that differ only
//! in high bits (timestamps, multiples of a power of two) must still spread.
//!
//! This is not [`hash_key`](ebbflow_common::encoding::hash_key): that one is
//! stable across processes and defines vnodes; this one only has to be fast
//! and agree with `Eq` on [`Datum`](ebbflow_common::Datum).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

#[derive(Default, Clone, Copy)]
pub struct FastHasher {
    hash: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // murmur3's fmix64: every input bit reaches every output bit.
        let mut h = self.hash;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        h
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash_of<T: Hash>(v: &T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(v)
    }

    #[test]
    fn high_bit_keys_spread_over_low_bits() {
        let mut low_bits = std::collections::HashSet::new();
        for i in 0..1024u64 {
            low_bits.insert(hash_of(&(i << 40)) & 0x3ff);
        }
        // A perfect spread would give 1024 distinct values; a broken one 1.
        assert!(low_bits.len() > 500, "{}", low_bits.len());
    }

    #[test]
    fn slices_and_vecs_hash_alike() {
        // Lookups by `&[Datum]` in a map keyed by `Vec<Datum>` rely on this.
        let v: Vec<Option<i32>> = vec![Some(1), None];
        assert_eq!(hash_of(&v), hash_of(&v.as_slice()));
    }
}
