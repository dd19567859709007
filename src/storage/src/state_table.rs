//! A state table: one actor's view of one logical table in the state store.
//!
//! Rows are keyed `table_id | vnode | memcomparable(pk)` where the vnode is
//! the hash of the row's distribution key. Writes of the current epoch are
//! buffered and handed to the store by [`StateTable::commit`] when the
//! barrier closing the epoch arrives, or earlier, once [`SPILL_WRITES`] are
//! buffered (so the barrier finds little left to hand over). Reads see the
//! buffer, then the actor's staged epochs, then committed data.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use super::{prefix_end, vnode_prefix, ReadSnapshot, StateStore, StorageResult};
use ebbflow_common::encoding::{
    decode_row, decode_row_tagged, encode_key_ordered, encode_row_tagged, encode_value_row,
    vnode_of,
};
use ebbflow_common::TableId;
use ebbflow_common::{Bitmap, DataType, Datum, Row, VirtualNode};

/// How stored rows are encoded.
#[derive(Clone, Debug)]
pub enum ValueCodec {
    /// Rows of a known schema.
    Schema(Vec<DataType>),
    /// Self-describing rows (aggregate states).
    Tagged,
}

/// Proof that an executor's state tables handed the epoch a barrier closes
/// to the store: the stream side's `process_barrier` returns one, and only
/// [`StateTable::commit`] makes one (or [`Committed::nothing`], for an
/// executor without state), so an executor cannot let its barrier go on
/// without committing its tables.
#[must_use = "a barrier may be forwarded only after the state is committed"]
#[derive(Debug)]
pub struct Committed {
    _private: (),
}

impl Committed {
    /// An executor that keeps no state commits nothing.
    pub fn nothing() -> Self {
        Committed { _private: () }
    }

    /// Both tables committed (an executor with several).
    pub fn and(self, other: Committed) -> Self {
        let _ = other;
        self
    }
}

pub struct StateTable {
    table_id: TableId,
    store: Arc<dyn StateStore>,
    /// Types of the pk columns, in pk order.
    pk_types: Vec<DataType>,
    /// Sort direction of each pk column (descending for top-N keys).
    pk_desc: Vec<bool>,
    /// Positions of the distribution key inside the pk.
    dist_in_pk: Vec<usize>,
    codec: ValueCodec,
    /// Vnodes this actor owns; every key touched must hash into it.
    vnodes: Bitmap,
    /// Writes of the current epoch.
    buffer: WriteBuffer,
    /// The epoch the buffered writes belong to, once a commit named it
    /// (before the first barrier the buffer is not spilled).
    open_epoch: Option<u64>,
    /// A failed early hand-over, reported by the next commit (the writes
    /// it took are gone, so the epoch must not commit).
    spill_failed: Option<super::StorageError>,
}

type Write = (Vec<u8>, Option<Vec<u8>>);

/// Buffered writes that are handed to the store before the barrier: staged
/// under the open epoch, they read the same and commit with it.
pub const SPILL_WRITES: usize = 4096;

/// The writes of one epoch: a sorted map, or, for executors that write at
/// most once per key in an epoch and hardly read their own writes back
/// ([`StateTable::log_writes`]), a log sorted once at commit.
#[derive(Default)]
struct WriteBuffer {
    map: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    log: Vec<Write>,
    logged: bool,
}

impl WriteBuffer {
    fn insert(&mut self, k: Vec<u8>, v: Option<Vec<u8>>) {
        if self.logged {
            self.log.push((k, v));
        } else {
            self.map.insert(k, v);
        }
    }

    fn is_empty(&self) -> bool {
        self.map.is_empty() && self.log.is_empty()
    }

    fn len(&self) -> usize {
        self.map.len() + self.log.len()
    }

    fn get(&self, k: &[u8]) -> Option<&Option<Vec<u8>>> {
        match self.log.iter().rev().find(|(lk, _)| lk.as_slice() == k) {
            Some((_, v)) => Some(v),
            None => self.map.get(k),
        }
    }

    /// The writes in `[start, end)`, in key order, the last per key.
    fn range(&self, start: Vec<u8>, end: Bound<Vec<u8>>) -> Vec<Write> {
        if self.log.is_empty() {
            return self
                .map
                .range::<Vec<u8>, _>((Bound::Included(start), end))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        let inside = |k: &Vec<u8>| {
            *k >= start
                && match &end {
                    Bound::Excluded(e) => k < e,
                    Bound::Included(e) => k <= e,
                    Bound::Unbounded => true,
                }
        };
        super::last_per_key(
            self.log
                .iter()
                .filter(|(k, _)| inside(k))
                .cloned()
                .collect(),
        )
    }

    /// Every write, in key order, the last per key; empties the buffer.
    fn take_sorted(&mut self) -> Vec<Write> {
        let map = std::mem::take(&mut self.map);
        let log = std::mem::take(&mut self.log);
        if log.is_empty() {
            return map.into_iter().collect();
        }
        let mut all: Vec<Write> = map.into_iter().collect();
        all.extend(log);
        super::last_per_key(all)
    }
}

impl StateTable {
    /// `pk_types`/`pk_desc` describe the key; the vnode of a key is the hash
    /// of the pk columns at `dist_in_pk` (empty: everything in vnode 0, for
    /// singleton fragments).
    pub fn new(
        table_id: TableId,
        store: Arc<dyn StateStore>,
        pk_types: Vec<DataType>,
        pk_desc: Vec<bool>,
        dist_in_pk: Vec<usize>,
        codec: ValueCodec,
        vnodes: Bitmap,
    ) -> Self {
        StateTable {
            table_id,
            store,
            pk_desc: if pk_desc.is_empty() {
                vec![false; pk_types.len()]
            } else {
                pk_desc
            },
            pk_types,
            dist_in_pk,
            codec,
            vnodes,
            buffer: WriteBuffer::default(),
            open_epoch: None,
            spill_failed: None,
        }
    }

    /// Buffer this table's writes as a log sorted at commit, for an
    /// executor that writes a key about once per epoch and does not read
    /// its own writes back (a hash aggregate's groups at the barrier, an
    /// MV's changes). Reads stay correct, but each one that meets a logged
    /// epoch walks the log.
    pub fn log_writes(mut self) -> Self {
        self.buffer.logged = true;
        self
    }

    pub fn table_id(&self) -> TableId {
        self.table_id
    }

    pub fn vnodes(&self) -> &Bitmap {
        &self.vnodes
    }

    pub fn vnode_of_pk(&self, pk: &[Datum]) -> VirtualNode {
        vnode_of(pk, &self.dist_in_pk)
    }

    fn key(&self, pk: &[Datum]) -> Vec<u8> {
        self.key_at(self.vnode_of_pk(pk), pk)
    }

    fn encode_value(&self, value: &[Datum]) -> Vec<u8> {
        let mut v = Vec::with_capacity(32);
        match &self.codec {
            ValueCodec::Schema(_) => encode_value_row(&mut v, value),
            ValueCodec::Tagged => encode_row_tagged(&mut v, value),
        }
        v
    }

    fn decode_value(&self, data: &[u8]) -> StorageResult<Row> {
        Ok(match &self.codec {
            ValueCodec::Schema(types) => decode_row(data, types, &[])?,
            ValueCodec::Tagged => decode_row_tagged(data)?,
        })
    }

    /// Write `value` under `pk` (insert or overwrite).
    pub fn put(&mut self, pk: &[Datum], value: &[Datum]) {
        let k = self.key(pk);
        let v = self.encode_value(value);
        self.buffer.insert(k, Some(v));
        self.spill_if_full();
    }

    pub fn delete(&mut self, pk: &[Datum]) {
        let k = self.key(pk);
        self.buffer.insert(k, None);
        self.spill_if_full();
    }

    fn key_at(&self, vnode: VirtualNode, pk: &[Datum]) -> Vec<u8> {
        debug_assert!(
            self.vnodes.contains(vnode),
            "table {} touched vnode {vnode} it does not own",
            self.table_id
        );
        let mut k = vnode_prefix(self.table_id, vnode);
        encode_key_ordered(&mut k, pk, &self.pk_desc);
        k
    }

    /// Write under an explicit vnode, for tables whose distribution key is
    /// not part of the pk (the vnode comes from the whole row).
    pub fn put_at(&mut self, vnode: VirtualNode, pk: &[Datum], value: &[Datum]) {
        let k = self.key_at(vnode, pk);
        let v = self.encode_value(value);
        self.buffer.insert(k, Some(v));
        self.spill_if_full();
    }

    pub fn delete_at(&mut self, vnode: VirtualNode, pk: &[Datum]) {
        let k = self.key_at(vnode, pk);
        self.buffer.insert(k, None);
        self.spill_if_full();
    }

    /// Stage the buffer in the store under the open epoch once it holds
    /// [`SPILL_WRITES`]. If staging fails, the next commit fails with it.
    fn spill_if_full(&mut self) {
        let Some(epoch) = self.open_epoch else {
            return;
        };
        if self.buffer.len() < SPILL_WRITES || self.spill_failed.is_some() {
            return;
        }
        if let Err(e) = self.hand_over(epoch) {
            self.spill_failed = Some(e);
        }
    }

    /// Hand the buffered writes to the store under `epoch`.
    fn hand_over(&mut self, epoch: u64) -> StorageResult<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let writes: Vec<_> = self
            .buffer
            .take_sorted()
            .into_iter()
            .map(|(k, v)| (Bytes::from(k), v.map(Bytes::from)))
            .collect();
        self.store.ingest(epoch, writes)
    }

    pub async fn get_at(&self, vnode: VirtualNode, pk: &[Datum]) -> StorageResult<Option<Row>> {
        let k = self.key_at(vnode, pk);
        if let Some(v) = self.buffer.get(&k) {
            return v.as_ref().map(|v| self.decode_value(v)).transpose();
        }
        match self.store.get(&k, true).await? {
            Some(v) => Ok(Some(self.decode_value(&v)?)),
            None => Ok(None),
        }
    }

    /// Point read of the value under `pk`.
    pub async fn get(&self, pk: &[Datum]) -> StorageResult<Option<Row>> {
        let k = self.key(pk);
        if let Some(v) = self.buffer.get(&k) {
            return v.as_ref().map(|v| self.decode_value(v)).transpose();
        }
        match self.store.get(&k, true).await? {
            Some(v) => Ok(Some(self.decode_value(&v)?)),
            None => Ok(None),
        }
    }

    /// All `(pk, value)` pairs whose pk starts with `prefix`, in key order.
    /// The prefix must cover the distribution key (so it names one vnode),
    /// unless the table is a singleton.
    pub async fn scan_prefix(&self, prefix: &[Datum]) -> StorageResult<Vec<(Row, Row)>> {
        let vnode = if self.dist_in_pk.iter().all(|&i| i < prefix.len()) {
            vnode_of(prefix, &self.dist_in_pk)
        } else {
            debug_assert!(false, "prefix does not determine the vnode");
            0
        };
        debug_assert!(self.vnodes.contains(vnode));
        let mut start = vnode_prefix(self.table_id, vnode);
        encode_key_ordered(&mut start, prefix, &self.pk_desc);
        self.scan_range_raw(start).await
    }

    /// Every row of every vnode, owned or not, as the store has them (a
    /// vnode another actor owns shows what that actor last handed to the
    /// store).
    pub async fn scan_all_vnodes(&self) -> StorageResult<Vec<(Row, Row)>> {
        self.scan_range_raw(super::table_prefix(self.table_id))
            .await
    }

    /// Every committed row of every vnode, owned or not: what the last
    /// epoch the cluster committed holds, without this epoch's writes of
    /// any actor (this one's included). An actor reads there what its peers
    /// wrote at a barrier it has itself passed, never what a peer ahead of
    /// it wrote at a later one.
    pub async fn scan_all_vnodes_committed(&self) -> StorageResult<Vec<(Row, Row)>> {
        let start = super::table_prefix(self.table_id);
        let end = prefix_end(&start);
        let stored = self
            .store
            .scan((Bound::Included(start), end), false)
            .await?;
        let mut out = Vec::with_capacity(stored.len());
        for (k, v) in stored {
            let pk = decode_row(&k[6..], &self.pk_types, &self.pk_desc)?;
            out.push((pk, self.decode_value(&v)?));
        }
        Ok(out)
    }

    /// Every row of one vnode.
    pub async fn scan_vnode(&self, vnode: VirtualNode) -> StorageResult<Vec<(Row, Row)>> {
        self.scan_range_raw(vnode_prefix(self.table_id, vnode))
            .await
    }

    async fn scan_range_raw(&self, start: Vec<u8>) -> StorageResult<Vec<(Row, Row)>> {
        let end = prefix_end(&start);
        let stored = self
            .store
            .scan((Bound::Included(start.clone()), end.clone()), true)
            .await?;
        let buffered = self.buffer.range(start, end);
        if buffered.is_empty() {
            let mut out = Vec::with_capacity(stored.len());
            for (k, v) in stored {
                let pk = decode_row(&k[6..], &self.pk_types, &self.pk_desc)?;
                out.push((pk, self.decode_value(&v)?));
            }
            return Ok(out);
        }
        let mut merged: BTreeMap<Vec<u8>, Option<Vec<u8>>> = stored
            .into_iter()
            .map(|(k, v)| (k.to_vec(), Some(v.to_vec())))
            .collect();
        for (k, v) in buffered {
            merged.insert(k, v);
        }
        let mut out = Vec::new();
        for (k, v) in merged {
            if let Some(v) = v {
                let pk = decode_row(&k[6..], &self.pk_types, &self.pk_desc)?;
                out.push((pk, self.decode_value(&v)?));
            }
        }
        Ok(out)
    }

    /// Whether the table holds no row at all, in any vnode (this epoch's
    /// writes and staged epochs included): an executor that finds its table
    /// empty when it starts knows every group it meets is new.
    pub async fn is_empty(&self) -> StorageResult<bool> {
        if !self.buffer.is_empty() {
            return Ok(false);
        }
        let range = super::prefix_range(&super::table_prefix(self.table_id));
        Ok(self.store.scan_limit(range, true, 1).await?.is_empty())
    }

    /// The memcomparable encoding of `pk` as it follows the vnode in a key
    /// (the order of keys within a vnode).
    pub fn encode_pk(&self, pk: &[Datum]) -> Vec<u8> {
        let mut k = Vec::with_capacity(16);
        encode_key_ordered(&mut k, pk, &self.pk_desc);
        k
    }

    /// Up to `limit` committed rows of `vnode` whose encoded pk is above
    /// `after` (from the start when `None`), in key order, with their
    /// encoded pks. Ignores vnode ownership (backfill reads another
    /// job's table).
    pub async fn scan_vnode_committed_after(
        &self,
        vnode: VirtualNode,
        after: Option<&[u8]>,
        limit: usize,
    ) -> StorageResult<Vec<(Vec<u8>, Row)>> {
        let prefix = vnode_prefix(self.table_id, vnode);
        let start = match after {
            Some(pk) => {
                let mut k = prefix.clone();
                k.extend_from_slice(pk);
                Bound::Excluded(k)
            }
            None => Bound::Included(prefix.clone()),
        };
        let pairs = self
            .store
            .scan_committed_limit((start, prefix_end(&prefix)), limit)
            .await?;
        pairs
            .into_iter()
            .map(|(k, v)| Ok((k[prefix.len()..].to_vec(), self.decode_value(&v)?)))
            .collect()
    }

    /// Hand epoch `epoch`'s writes to the store; the writes that follow
    /// belong to `next` (the barrier's `prev` and `curr`).
    pub fn commit(&mut self, epoch: u64, next: u64) -> StorageResult<Committed> {
        if let Some(e) = self.spill_failed.take() {
            return Err(e);
        }
        self.hand_over(epoch)?;
        self.open_epoch = Some(next);
        Ok(Committed { _private: () })
    }

    /// Take a new vnode set (after a scale barrier was committed and
    /// forwarded). Returns the vnodes gained.
    pub fn update_vnodes(&mut self, vnodes: Bitmap) -> Bitmap {
        debug_assert!(
            self.buffer.is_empty(),
            "vnodes swapped with uncommitted writes"
        );
        let gained = Bitmap::from_vnodes(vnodes.iter().filter(|v| !self.vnodes.contains(*v)));
        self.vnodes = vnodes;
        gained
    }
}

/// Read every committed row of a table in key order from `snapshot`,
/// regardless of vnode ownership (batch scans). Values are decoded with
/// `types`.
pub async fn scan_table_committed(
    snapshot: &dyn ReadSnapshot,
    table_id: TableId,
    types: &[DataType],
    vnodes: Option<&Bitmap>,
) -> StorageResult<Vec<Row>> {
    let prefix = super::table_prefix(table_id);
    let (mut start, end) = super::prefix_range(&prefix);
    let mut out = Vec::new();
    // A page at a time, decoded as it comes: the encoded pairs of a large
    // table are never all in memory beside its rows.
    loop {
        let pairs = snapshot.scan_limit((start, end.clone()), SCAN_PAGE).await?;
        let full = pairs.len() == SCAN_PAGE;
        let mut last = None;
        for (k, v) in pairs {
            let keep = match (vnodes, k.get(4..6)) {
                (Some(bm), Some(vnode)) => bm.contains(u16::from_be_bytes([vnode[0], vnode[1]])),
                _ => true,
            };
            if keep {
                out.push(decode_row(&v, types, &[])?);
            }
            last = Some(k);
        }
        match last {
            Some(k) if full => start = Bound::Excluded(k.to_vec()),
            _ => return Ok(out),
        }
    }
}

/// Pairs a batch scan reads at a time.
const SCAN_PAGE: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStateStore;
    use ebbflow_common::ScalarValue;

    fn i(v: i64) -> Datum {
        Some(ScalarValue::Int64(v))
    }

    /// A table of two bigint columns, both in the pk, distributed by the
    /// first.
    fn two_ints(id: TableId, store: &Arc<dyn StateStore>) -> StateTable {
        StateTable::new(
            id,
            store.clone(),
            vec![DataType::Int64, DataType::Int64],
            vec![],
            vec![0],
            ValueCodec::Schema(vec![DataType::Int64, DataType::Int64]),
            Bitmap::full(),
        )
    }

    #[tokio::test]
    async fn put_get_scan_commit() {
        let mem = Arc::new(MemoryStateStore::new());
        let store: Arc<dyn StateStore> = mem.clone();
        let mut t = two_ints(7, &store);
        t.put(&[i(1), i(2)], &[i(1), i(2)]);
        t.put(&[i(1), i(1)], &[i(1), i(1)]);
        t.put(&[i(2), i(1)], &[i(2), i(1)]);
        let rows = t.scan_prefix(&[i(1)]).await.unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].0, vec![i(1), i(1)]);
        let _ = t.commit(1, 2).unwrap();
        assert_eq!(t.get(&[i(2), i(1)]).await.unwrap(), Some(vec![i(2), i(1)]));
        t.delete(&[i(1), i(1)]);
        assert_eq!(t.scan_prefix(&[i(1)]).await.unwrap().len(), 1);
        assert!(
            scan_table_committed(&*store.snapshot(), 7, &[DataType::Int64; 2], None)
                .await
                .unwrap()
                .is_empty()
        );
        mem.commit(1);
        assert_eq!(
            scan_table_committed(&*store.snapshot(), 7, &[DataType::Int64; 2], None)
                .await
                .unwrap()
                .len(),
            3
        );
    }

    #[tokio::test]
    async fn logged_writes_read_and_commit_like_mapped_ones() {
        let mem = Arc::new(MemoryStateStore::new());
        let store: Arc<dyn StateStore> = mem.clone();
        let mut t = two_ints(8, &store).log_writes();
        assert!(t.is_empty().await.unwrap());
        t.put(&[i(1), i(2)], &[i(1), i(2)]);
        t.put(&[i(1), i(1)], &[i(1), i(10)]);
        t.put(&[i(1), i(1)], &[i(1), i(11)]);
        t.put(&[i(2), i(1)], &[i(2), i(1)]);
        t.delete(&[i(2), i(1)]);
        assert!(!t.is_empty().await.unwrap());
        // the last write of a key wins, in reads and in the commit
        assert_eq!(t.get(&[i(1), i(1)]).await.unwrap(), Some(vec![i(1), i(11)]));
        assert_eq!(t.get(&[i(2), i(1)]).await.unwrap(), None);
        let rows = t.scan_prefix(&[i(1)]).await.unwrap();
        assert_eq!(
            rows,
            vec![
                (vec![i(1), i(1)], vec![i(1), i(11)]),
                (vec![i(1), i(2)], vec![i(1), i(2)])
            ]
        );
        let _ = t.commit(1, 2).unwrap();
        mem.commit(1);
        let stored = scan_table_committed(&*store.snapshot(), 8, &[DataType::Int64; 2], None)
            .await
            .unwrap();
        assert_eq!(stored, vec![vec![i(1), i(11)], vec![i(1), i(2)]]);
    }

    #[tokio::test]
    async fn spilled_writes_read_and_commit_like_buffered_ones() {
        let mem = Arc::new(MemoryStateStore::new());
        let store: Arc<dyn StateStore> = mem.clone();
        let mut t = two_ints(9, &store);
        let n = SPILL_WRITES as i64 + 10;
        // Before the first commit the epoch is unknown: nothing is staged.
        for k in 0..n {
            t.put(&[i(0), i(k)], &[i(0), i(k)]);
        }
        let first = t.key(&[i(0), i(0)]);
        assert_eq!(store.get(&first, true).await.unwrap(), None);
        let _ = t.commit(1, 2).unwrap();
        // Epoch 2: the first SPILL_WRITES writes are staged early, under 2.
        for k in 0..n {
            t.put(&[i(1), i(k)], &[i(1), i(k)]);
        }
        let spilled = t.key(&[i(1), i(0)]);
        assert!(store.get(&spilled, true).await.unwrap().is_some());
        // Later writes of the epoch win over the staged ones.
        t.put(&[i(1), i(0)], &[i(1), i(-1)]);
        t.delete(&[i(1), i(1)]);
        assert_eq!(t.get(&[i(1), i(0)]).await.unwrap(), Some(vec![i(1), i(-1)]));
        assert_eq!(t.get(&[i(1), i(1)]).await.unwrap(), None);
        assert_eq!(t.scan_prefix(&[i(1)]).await.unwrap().len(), n as usize - 1);
        let _ = t.commit(2, 3).unwrap();
        mem.commit(2);
        let stored = scan_table_committed(&*store.snapshot(), 9, &[DataType::Int64; 2], None)
            .await
            .unwrap();
        assert_eq!(stored.len(), 2 * n as usize - 1);
        assert!(stored.contains(&vec![i(1), i(-1)]));
        assert!(!stored.contains(&vec![i(1), i(1)]));
    }
}
