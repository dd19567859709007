//! The state key format, and the migration of state written before keys
//! were canonical.
//!
//! Since issue 34 a state key encodes every value as its class's
//! canonical representative under PostgreSQL's equality (`1.0`, `1.00`
//! and `1` are the key of `1`; `'24 hours'` that of `'1 day'`), and the
//! vnode hashes that encoding. Earlier versions wrote the value as given,
//! so equal values could be different keys in different vnodes. Values
//! already written canonically (`1`, `2.5`, `'1 day'`: most) have the same
//! key and vnode in both formats; only the others move.
//!
//! A catalog without the format number is from before: when meta first
//! recovers over it, it re-encodes those rows (once, before any actor
//! starts): each affected row of a state table whose key holds a numeric
//! or an interval is deleted and written again under its canonical key and
//! vnode, in one epoch committed with the catalog that records the new
//! format. An aggregation's row also gets the group key as it was written,
//! so the group keeps showing the value it showed. Where old state held
//! two rows for one canonical key (the wrong results of the bug itself:
//! two groups for `1.0` and `1.00`), one is kept and the job is named in a
//! warning: recreate it to recompute its results.

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;

use super::fragment::Fragment;
use crate::catalog::TableId;
use ebbflow_common::encoding::{
    decode_row, decode_row_tagged, encode_key_ordered, encode_row_tagged, is_canonical, vnode_of,
};
use ebbflow_common::{DataType, ElemType, VirtualNode};
use ebbflow_plan::NodeDesc;
use ebbflow_storage::{
    prefix_range, table_prefix, vnode_prefix, ReadSnapshot, StorageError, StorageResult,
};
use ebbflow_stream::message::FragmentId;

/// The key format this version writes: 1 = canonical keys. A catalog
/// without it (0) is from before.
pub const KEY_FORMAT: u32 = 1;

/// A state table whose keys may change format, and how to re-key it.
pub(super) struct TableKeys {
    pub table_id: TableId,
    /// The job it belongs to (for the warning).
    pub job: TableId,
    pk_types: Vec<DataType>,
    pk_desc: Vec<bool>,
    vnode: VnodeRule,
    /// An aggregation's state: rows get their group key as written.
    agg_state: bool,
}

/// Where a row's vnode comes from.
enum VnodeRule {
    /// From these positions of the pk.
    Pk(Vec<usize>),
    /// From these columns of the stored row (an MV distributed by columns
    /// outside its pk), whose types are given.
    Row(Vec<usize>, Vec<DataType>),
}

/// Whether values of `ty` can be written in more than one way in a key's
/// old format (floats were already canonical).
fn may_move(ty: DataType) -> bool {
    matches!(
        ty,
        DataType::Decimal
            | DataType::Interval
            | DataType::Array(ElemType::Decimal | ElemType::Interval)
    )
}

/// The state tables of `fragments` whose keys or vnodes may differ in the
/// old format. (Tables kept under explicit vnodes, such as progress rows
/// and watermarks, have keys of no such type.)
pub(super) fn tables_to_migrate(fragments: &BTreeMap<FragmentId, Fragment>) -> Vec<TableKeys> {
    let mut out = Vec::new();
    for f in fragments.values() {
        for node in &f.nodes {
            for t in node.state_table_descs() {
                let vnode = match node {
                    NodeDesc::Materialize { pk, dist_key, .. }
                        if !dist_key.iter().all(|d| pk.contains(d)) =>
                    {
                        VnodeRule::Row(dist_key.clone(), t.value_types.clone().unwrap_or_default())
                    }
                    _ => VnodeRule::Pk(t.dist_in_pk.clone()),
                };
                let dist_moves = match &vnode {
                    VnodeRule::Pk(_) => false,
                    VnodeRule::Row(dist, types) => dist
                        .iter()
                        .any(|&i| types.get(i).copied().is_some_and(may_move)),
                };
                if dist_moves || t.pk_types.iter().any(|&ty| may_move(ty)) {
                    out.push(TableKeys {
                        table_id: t.table_id,
                        job: f.table_id,
                        pk_types: t.pk_types.clone(),
                        pk_desc: t.pk_desc.clone(),
                        vnode,
                        agg_state: matches!(node, NodeDesc::HashAgg { .. }),
                    });
                }
            }
        }
    }
    out
}

/// What re-keying one table found.
#[derive(Default)]
pub(super) struct Rekeyed {
    /// Rows written under a new key.
    pub moved: usize,
    /// Rows whose new key another row of the table had too.
    pub collisions: usize,
}

/// Adds to `writes` the deletes and puts that re-key table `t` as read
/// from `snapshot`: puts win over deletes of the same key, so apply the
/// deletes of every table first (see [`into_writes`]).
pub(super) async fn rekey_table(
    snapshot: &dyn ReadSnapshot,
    t: &TableKeys,
    deletes: &mut Vec<Vec<u8>>,
    puts: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) -> StorageResult<Rekeyed> {
    let rows = snapshot
        .scan(prefix_range(&table_prefix(t.table_id)))
        .await?;
    let mut seen: HashSet<Vec<u8>> = HashSet::with_capacity(rows.len());
    let mut found = Rekeyed::default();
    for (k, v) in rows {
        let body = k
            .get(6..)
            .ok_or(StorageError::Io("short state key".into()))?;
        let pk = decode_row(body, &t.pk_types, &t.pk_desc)?;
        let vnode: VirtualNode = match &t.vnode {
            VnodeRule::Pk(dist) => vnode_of(&pk, dist),
            VnodeRule::Row(dist, types) => vnode_of(&decode_row(&v, types, &[])?, dist),
        };
        let mut key = vnode_prefix(t.table_id, vnode);
        encode_key_ordered(&mut key, &pk, &t.pk_desc);
        if !seen.insert(key.clone()) {
            found.collisions += 1;
        }
        if key.as_slice() == k.as_ref() {
            continue;
        }
        let mut value = v.to_vec();
        if t.agg_state && !pk.iter().flatten().all(is_canonical) {
            // The key decodes as `1`: keep `1.0` beside the state, where
            // the aggregation looks for it.
            let mut state = decode_row_tagged(&v)?;
            state.extend(pk);
            value.clear();
            encode_row_tagged(&mut value, &state);
        }
        deletes.push(k.to_vec());
        puts.insert(key, value);
        found.moved += 1;
    }
    Ok(found)
}

/// The writes of a migration, in key order: every delete, then every put
/// (a put on a deleted key wins).
pub(super) fn into_writes(
    deletes: Vec<Vec<u8>>,
    puts: BTreeMap<Vec<u8>, Vec<u8>>,
) -> Vec<(Bytes, Option<Bytes>)> {
    let mut all: BTreeMap<Vec<u8>, Option<Vec<u8>>> =
        deletes.into_iter().map(|k| (k, None)).collect();
    for (k, v) in puts {
        all.insert(k, Some(v));
    }
    all.into_iter()
        .map(|(k, v)| (Bytes::from(k), v.map(Bytes::from)))
        .collect()
}
