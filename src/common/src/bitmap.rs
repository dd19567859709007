//! A set of vnodes.

use std::fmt;

use super::encoding::{VirtualNode, VNODE_COUNT};

/// The vnodes an actor owns.
#[derive(Clone, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct Bitmap {
    words: [u64; VNODE_COUNT / 64],
}

impl Bitmap {
    pub fn empty() -> Self {
        Bitmap::default()
    }

    pub fn full() -> Self {
        Bitmap {
            words: [u64::MAX; VNODE_COUNT / 64],
        }
    }

    pub fn from_vnodes(vnodes: impl IntoIterator<Item = VirtualNode>) -> Self {
        let mut b = Bitmap::empty();
        for v in vnodes {
            b.set(v, true);
        }
        b
    }

    pub fn contains(&self, v: VirtualNode) -> bool {
        let v = v as usize;
        v < VNODE_COUNT && self.words[v / 64] & (1 << (v % 64)) != 0
    }

    pub fn set(&mut self, v: VirtualNode, on: bool) {
        let v = v as usize;
        if on {
            self.words[v / 64] |= 1 << (v % 64);
        } else {
            self.words[v / 64] &= !(1 << (v % 64));
        }
    }

    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn iter(&self) -> impl Iterator<Item = VirtualNode> + '_ {
        (0..VNODE_COUNT as VirtualNode).filter(|v| self.contains(*v))
    }

    /// Whether every vnode of `self` is also in `other`.
    pub fn is_subset_of(&self, other: &Bitmap) -> bool {
        self.words
            .iter()
            .zip(other.words.iter())
            .all(|(a, b)| a & !b == 0)
    }
}

impl fmt::Debug for Bitmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bitmap({} vnodes)", self.count())
    }
}
