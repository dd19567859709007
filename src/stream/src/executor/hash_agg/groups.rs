//! The in-memory groups of a hash aggregation, packed.
//!
//! Group `g` is a number: its key is slot `g` of [`Keys`], its row count
//! and flags are `row_counts[g]` and `flags[g]`, and each call's state is
//! slot `g` of that call's [`AggStates`]. A hash index maps keys to group
//! numbers (4 bytes a slot). A lookup hashes the key columns of the input
//! row in place, so a row that finds its group allocates nothing. Removing a
//! group moves the last group into its number.
//!
//! A key of one `int`/`bigint` column is kept as plain numbers (4 or 8
//! bytes a group instead of a 24-byte datum) until a NULL or a value of
//! another type comes, which turns the keys into datums.

use std::hash::{BuildHasher, Hash, Hasher};

use arrow_array::Array;
use hashbrown::HashTable;

use ebbflow_common::{datum_ref, Column, Datum, DatumRef, Row, ScalarRef, ScalarValue};
use ebbflow_expr::{AggCall, AggStates};

/// The group's result is downstream and its state in the store.
pub const STORED: u8 = 1;
/// The group changed in the current epoch.
pub const DIRTY: u8 = 2;

/// The groups' keys, by group number.
enum Keys {
    /// One `int` column, no NULL.
    Int32(Vec<i32>),
    /// One `bigint` column, no NULL.
    Int64(Vec<i64>),
    /// `width` datums a group.
    Datums(Vec<Datum>),
}

impl Keys {
    /// Keys for groups of `width` columns whose first key is `first`.
    fn for_key(width: usize, first: &[Datum]) -> Keys {
        match (width, first) {
            (1, [Some(ScalarValue::Int32(_))]) => Keys::Int32(Vec::new()),
            (1, [Some(ScalarValue::Int64(_))]) => Keys::Int64(Vec::new()),
            _ => Keys::Datums(Vec::new()),
        }
    }

    /// Appends `key`; `false` (and nothing changed) if it does not fit.
    fn push(&mut self, key: &mut Row) -> bool {
        match (self, key.as_slice()) {
            (Keys::Int32(v), [Some(ScalarValue::Int32(x))]) => v.push(*x),
            (Keys::Int64(v), [Some(ScalarValue::Int64(x))]) => v.push(*x),
            (Keys::Datums(v), _) => v.append(key),
            _ => return false,
        }
        true
    }

    /// The keys as datums.
    fn into_datums(self) -> Vec<Datum> {
        match self {
            Keys::Int32(v) => v.into_iter().map(|x| Some(ScalarValue::Int32(x))).collect(),
            Keys::Int64(v) => v.into_iter().map(|x| Some(ScalarValue::Int64(x))).collect(),
            Keys::Datums(v) => v,
        }
    }

    fn swap_remove(&mut self, g: usize, width: usize) {
        match self {
            Keys::Int32(v) => {
                v.swap_remove(g);
            }
            Keys::Int64(v) => {
                v.swap_remove(g);
            }
            Keys::Datums(v) => {
                let last = v.len() / width.max(1) - 1;
                for i in 0..width {
                    v.swap(g * width + i, last * width + i);
                }
                v.truncate(last * width);
            }
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            Keys::Int32(v) => v.shrink_to_fit(),
            Keys::Int64(v) => v.shrink_to_fit(),
            Keys::Datums(v) => v.shrink_to_fit(),
        }
    }

    fn allocated_bytes(&self) -> usize {
        match self {
            Keys::Int32(v) => v.capacity() * 4,
            Keys::Int64(v) => v.capacity() * 8,
            Keys::Datums(v) => v.capacity() * std::mem::size_of::<Datum>(),
        }
    }
}

/// A group's key as datums, made on the spot for keys kept as numbers.
pub enum Key<'a> {
    One([Datum; 1]),
    Slice(&'a [Datum]),
}

impl std::ops::Deref for Key<'_> {
    type Target = [Datum];

    fn deref(&self) -> &[Datum] {
        match self {
            Key::One(k) => k,
            Key::Slice(k) => k,
        }
    }
}

/// The hash of group `g`'s key: the same as of its datums.
fn hash_key(hasher: &foldhash::fast::RandomState, keys: &Keys, width: usize, g: usize) -> u64 {
    match keys {
        Keys::Int32(v) => hash_of(hasher, std::iter::once(Some(ScalarRef::Int32(v[g])))),
        Keys::Int64(v) => hash_of(hasher, std::iter::once(Some(ScalarRef::Int64(v[g])))),
        Keys::Datums(v) => hash_of(hasher, v[g * width..(g + 1) * width].iter().map(datum_ref)),
    }
}

pub struct Groups {
    width: usize,
    keys: Keys,
    pub row_counts: Vec<i64>,
    pub flags: Vec<u8>,
    /// One per aggregate call.
    pub states: Vec<AggStates>,
    index: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

fn hash_of<'a>(
    hasher: &foldhash::fast::RandomState,
    key: impl Iterator<Item = DatumRef<'a>>,
) -> u64 {
    let mut h = hasher.build_hasher();
    for d in key {
        hash_datum(&mut h, d);
    }
    h.finish()
}

/// Feed one key datum to `h`: an integer as one word whatever its width
/// (keys are compared exactly after the hash, so `1::int4` and `1::int8`
/// may share one), anything else by its `Hash`. The same for a stored key
/// and for a column value, which is all the index needs.
fn hash_datum<H: Hasher>(h: &mut H, d: DatumRef<'_>) {
    match d {
        Some(ScalarRef::Int16(v)) => h.write_u64(v as i64 as u64),
        Some(ScalarRef::Int32(v)) => h.write_u64(v as i64 as u64),
        Some(ScalarRef::Int64(v)) => h.write_u64(v as u64),
        other => other.hash(h),
    }
}

fn hash_each<H: Hasher>(hashers: &mut [H], rows: &[usize], f: impl Fn(usize, &mut H)) {
    for (h, &i) in hashers.iter_mut().zip(rows) {
        f(i, h);
    }
}

impl Groups {
    /// Empty groups of `calls`; `append_only`: the input only inserts.
    pub fn new(width: usize, calls: &[AggCall], append_only: bool) -> Groups {
        Groups {
            width,
            keys: Keys::Datums(Vec::new()),
            row_counts: Vec::new(),
            flags: Vec::new(),
            states: calls
                .iter()
                .map(|c| AggStates::new(c, append_only))
                .collect(),
            index: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.row_counts.len()
    }

    pub fn key(&self, g: usize) -> Key<'_> {
        match &self.keys {
            Keys::Int32(v) => Key::One([Some(ScalarValue::Int32(v[g]))]),
            Keys::Int64(v) => Key::One([Some(ScalarValue::Int64(v[g]))]),
            Keys::Datums(v) => Key::Slice(&v[g * self.width..(g + 1) * self.width]),
        }
    }

    /// The hash of the key formed by columns `cols` of `row`.
    pub fn hash_row(&self, row: &[Datum], cols: &[usize]) -> u64 {
        hash_of(&self.hasher, cols.iter().map(|&i| datum_ref(&row[i])))
    }

    /// The hash of the key formed by columns `cols` at row `i`.
    #[cfg(test)]
    pub fn hash_at(&self, columns: &[Column], cols: &[usize], i: usize) -> u64 {
        hash_of(&self.hasher, cols.iter().map(|&c| columns[c].get(i)))
    }

    /// The hashes of the keys formed by columns `cols` at `rows`: a column
    /// at a time, the same as [`Self::hash_row`] of each row.
    pub fn hash_rows(&self, columns: &[Column], cols: &[usize], rows: &[usize]) -> Vec<u64> {
        let mut hashers: Vec<_> = rows.iter().map(|_| self.hasher.build_hasher()).collect();
        for &c in cols {
            let column = &columns[c];
            let h = &mut hashers;
            match column {
                Column::Int32(a) if a.null_count() == 0 => {
                    let v = a.values();
                    hash_each(h, rows, |i, h| h.write_u64(v[i] as i64 as u64))
                }
                Column::Int64(a) if a.null_count() == 0 => {
                    let v = a.values();
                    hash_each(h, rows, |i, h| h.write_u64(v[i] as u64))
                }
                _ => hash_each(h, rows, |i, h| hash_datum(h, column.get(i))),
            }
        }
        hashers.into_iter().map(|h| h.finish()).collect()
    }

    /// The group whose key is columns `cols` at row `i`, given its hash.
    pub fn find_at(
        &self,
        hash: u64,
        columns: &[Column],
        cols: &[usize],
        i: usize,
    ) -> Option<usize> {
        // One integer key column without NULLs: compared as plain values.
        if let [c] = cols {
            match (&columns[*c], &self.keys) {
                (Column::Int32(a), Keys::Int32(keys)) if a.is_valid(i) => {
                    let v = a.value(i);
                    return self.find_by(hash, |g| keys[g] == v);
                }
                (Column::Int64(a), Keys::Int64(keys)) if a.is_valid(i) => {
                    let v = a.value(i);
                    return self.find_by(hash, |g| keys[g] == v);
                }
                (Column::Int32(a), Keys::Datums(keys)) if a.is_valid(i) => {
                    let v = a.value(i);
                    return self.find_by(
                        hash,
                        |g| matches!(keys[g], Some(ScalarValue::Int32(x)) if x == v),
                    );
                }
                (Column::Int64(a), Keys::Datums(keys)) if a.is_valid(i) => {
                    let v = a.value(i);
                    return self.find_by(
                        hash,
                        |g| matches!(keys[g], Some(ScalarValue::Int64(x)) if x == v),
                    );
                }
                _ => {}
            }
        }
        self.find_by(hash, |g| {
            let key = self.key(g);
            cols.iter()
                .zip(key.iter())
                .all(|(&c, k)| columns[c].get(i) == datum_ref(k))
        })
    }

    /// The group whose key is `key`, given its hash.
    pub fn find_row(&self, hash: u64, key: &[Datum]) -> Option<usize> {
        self.find_by(hash, |g| {
            self.key(g)
                .iter()
                .zip(key)
                .all(|(a, b)| datum_ref(a) == datum_ref(b))
        })
    }

    /// The group of `hash` whose number passes `is_key`.
    fn find_by(&self, hash: u64, is_key: impl Fn(usize) -> bool) -> Option<usize> {
        self.index
            .find(hash, |&g| is_key(g as usize))
            .map(|&g| g as usize)
    }

    /// Add an empty group with this key (of `hash`); its number.
    pub fn insert(&mut self, hash: u64, mut key: Row) -> usize {
        debug_assert_eq!(key.len(), self.width);
        let g = self.len();
        if g == 0 {
            self.keys = Keys::for_key(self.width, &key);
        }
        if !self.keys.push(&mut key) {
            let keys = std::mem::replace(&mut self.keys, Keys::Datums(Vec::new()));
            let mut datums = keys.into_datums();
            datums.append(&mut key);
            self.keys = Keys::Datums(datums);
        }
        self.row_counts.push(0);
        self.flags.push(0);
        for s in &mut self.states {
            s.push();
        }
        let (keys, w, hasher) = (&self.keys, self.width, &self.hasher);
        self.index
            .insert_unique(hash, g as u32, |&x| hash_key(hasher, keys, w, x as usize));
        g
    }

    /// Remove group `g`; the last group takes its number.
    pub fn remove(&mut self, g: usize) {
        let last = self.len() - 1;
        let hash = hash_key(&self.hasher, &self.keys, self.width, g);
        if let Ok(entry) = self.index.find_entry(hash, |&x| x as usize == g) {
            entry.remove();
        }
        if g != last {
            let hash = hash_key(&self.hasher, &self.keys, self.width, last);
            if let Some(x) = self.index.find_mut(hash, |&x| x as usize == last) {
                *x = g as u32;
            }
        }
        self.keys.swap_remove(g, self.width);
        self.row_counts.swap_remove(g);
        self.flags.swap_remove(g);
        for s in &mut self.states {
            s.swap_remove(g);
        }
    }

    /// Keep only those of the groups numbered `below - n .. below` whose
    /// key passes `keep`; returns where the next call continues (0 when
    /// every group was looked at). Start at `len()`: groups are looked at
    /// downwards, so the group a removal moves into a freed number was
    /// already kept.
    pub fn retain_below(
        &mut self,
        below: usize,
        n: usize,
        mut keep: impl FnMut(&[Datum]) -> bool,
    ) -> usize {
        let from = below.saturating_sub(n);
        for g in (from..below.min(self.len())).rev() {
            if !keep(&self.key(g)) {
                self.remove(g);
            }
        }
        from
    }

    /// Give memory back once at most a quarter of it is used.
    pub fn shrink_if_sparse(&mut self) {
        if self.len() < self.row_counts.capacity() / 4 {
            self.shrink_to_fit();
        }
    }

    fn shrink_to_fit(&mut self) {
        self.keys.shrink_to_fit();
        self.row_counts.shrink_to_fit();
        self.flags.shrink_to_fit();
        for s in &mut self.states {
            s.shrink_to_fit();
        }
        let (keys, w, hasher) = (&self.keys, self.width, &self.hasher);
        self.index
            .shrink_to_fit(|&x| hash_key(hasher, keys, w, x as usize));
    }

    /// Bytes held for the groups: the vectors and index by capacity, keys'
    /// own heap (strings) not counted.
    pub fn allocated_bytes(&self) -> usize {
        self.keys.allocated_bytes()
            + self.row_counts.capacity() * 8
            + self.flags.capacity()
            + self.index.allocation_size()
            + self
                .states
                .iter()
                .map(AggStates::allocated_bytes)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebbflow_common::{DataType, ScalarValue};
    use ebbflow_expr::AggKind;

    fn int(v: i64) -> Datum {
        Some(ScalarValue::Int64(v))
    }

    fn count_sum() -> Vec<AggCall> {
        vec![
            AggCall {
                kind: AggKind::CountStar,
                arg: None,
                arg_type: None,
                return_type: DataType::Int64,
                distinct: false,
            },
            AggCall {
                kind: AggKind::Sum,
                arg: Some(1),
                arg_type: Some(DataType::Int64),
                return_type: DataType::Decimal,
                distinct: false,
            },
        ]
    }

    fn lookup(groups: &Groups, k: i64) -> Option<usize> {
        let chunk = ebbflow_common::StreamChunk::inserts(vec![vec![int(k)]]);
        let hash = groups.hash_at(chunk.columns(), &[0], 0);
        assert_eq!(hash, groups.hash_row(&chunk.row(0), &[0]));
        assert_eq!(hash, groups.hash_rows(chunk.columns(), &[0], &[0])[0]);
        groups.find_at(hash, chunk.columns(), &[0], 0)
    }

    #[test]
    fn find_insert_remove_retain() {
        let mut groups = Groups::new(1, &count_sum(), false);
        for k in 0..100 {
            assert_eq!(lookup(&groups, k), None);
            let row = vec![int(k)];
            let g = groups.insert(groups.hash_row(&row, &[0]), row);
            groups.row_counts[g] = k;
        }
        groups.remove(lookup(&groups, 10).expect("group 10"));
        assert_eq!(lookup(&groups, 10), None);
        assert_eq!(groups.len(), 99);
        // In slices of 7, as a scale does.
        let mut below = groups.len();
        while below > 0 {
            below = groups.retain_below(below, 7, |key| {
                key[0].as_ref().and_then(|v| v.as_i64()) < Some(50)
            });
        }
        groups.shrink_if_sparse();
        assert_eq!(groups.len(), 49);
        for k in 0..100 {
            let found = lookup(&groups, k);
            assert_eq!(found.is_some(), k < 50 && k != 10, "key {k}");
            if let Some(g) = found {
                assert_eq!(&*groups.key(g), &[int(k)][..]);
                assert_eq!(groups.row_counts[g], k);
            }
        }
    }

    /// Integer keys kept as numbers turn into datums at the first NULL
    /// key (or key of another type), and every group is still found.
    #[test]
    fn integer_keys_turn_into_datums_at_a_null() {
        for make in [
            |k: i64| Some(ScalarValue::Int32(k as i32)),
            |k: i64| Some(ScalarValue::Int64(k)),
        ] {
            let mut groups = Groups::new(1, &count_sum(), false);
            let find = |groups: &Groups, d: Datum| {
                let chunk = ebbflow_common::StreamChunk::inserts(vec![vec![d]]);
                let hash = groups.hash_rows(chunk.columns(), &[0], &[0])[0];
                groups.find_at(hash, chunk.columns(), &[0], 0)
            };
            for k in 0..50 {
                let row = vec![make(k)];
                groups.insert(groups.hash_row(&row, &[0]), row);
            }
            let small = groups.allocated_bytes();
            let row = vec![None];
            let null = groups.insert(groups.hash_row(&row, &[0]), row);
            assert!(groups.allocated_bytes() > small, "datums take more room");
            assert_eq!(find(&groups, None), Some(null));
            for k in 0..50 {
                let g = find(&groups, make(k)).expect("group");
                assert_eq!(&*groups.key(g), &[make(k)][..]);
            }
            groups.remove(0);
            assert_eq!(find(&groups, make(0)), None);
            assert_eq!(find(&groups, None), Some(0), "the last group moved down");
        }
    }

    /// The layout target of the issue: `GROUP BY k` with `count(*)` and
    /// `sum(v)` keeps at most 100 bytes per group in memory.
    #[test]
    fn a_count_sum_group_takes_under_100_bytes() {
        let mut groups = Groups::new(1, &count_sum(), false);
        let n = 200_000;
        for k in 0..n {
            let row = vec![int(k)];
            groups.insert(groups.hash_row(&row, &[0]), row);
        }
        let per_group = groups.allocated_bytes() / n as usize;
        assert!(per_group <= 100, "{per_group} bytes per group");
    }
}
