//! The system catalog (`rw_catalog`, docs/design.md §7): relations computed from
//! meta's state on every read.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::catalog::{ColumnDesc, RelationDesc, RelationKind};
use super::service::MetaState;
use ebbflow_common::{DataType, Datum, Row, ScalarValue};
use ebbflow_storage::SstInfo;

type Col = (&'static str, DataType);

const I: DataType = DataType::Int32;
const V: DataType = DataType::Varchar;
const B: DataType = DataType::Int64;

/// `(id, name, columns)` of every system relation.
pub const SYSTEM_RELATIONS: &[(u32, &str, &[Col])] = &[
    (
        1,
        "rw_worker_nodes",
        &[("id", I), ("host", V), ("state", V), ("parallelism", I)],
    ),
    (2, "rw_parallel_units", &[("id", I), ("worker_id", I)]),
    (3, "rw_tables", &[("id", I), ("name", V)]),
    (
        4,
        "rw_materialized_views",
        &[("id", I), ("name", V), ("definition", V)],
    ),
    (
        5,
        "rw_table_fragments",
        &[("table_id", I), ("parallelism", V)],
    ),
    (
        6,
        "rw_fragments",
        &[
            ("fragment_id", I),
            ("table_id", I),
            ("distribution_type", V),
            ("upstream_fragment_ids", V),
            ("parallelism", I),
        ],
    ),
    (
        7,
        "rw_actors",
        &[
            ("actor_id", I),
            ("fragment_id", I),
            ("worker_id", I),
            ("parallel_unit_id", I),
            ("vnode_count", I),
        ],
    ),
    (
        8,
        "rw_fragment_vnodes",
        &[("fragment_id", I), ("vnode", I), ("actor_id", I)],
    ),
    (
        9,
        "rw_scale_history",
        &[
            ("id", I),
            ("started_at", DataType::Timestamp),
            ("statement", V),
            ("actors_added", I),
            ("actors_removed", I),
            ("vnodes_moved", I),
            ("pause_ms", DataType::Float64),
            ("total_ms", DataType::Float64),
            ("status", V),
            ("vnodes_moved_across_workers", I),
        ],
    ),
    (
        10,
        "rw_hummock_version",
        &[
            ("version_id", B),
            ("committed_epoch", B),
            ("level", I),
            ("file_count", I),
            ("total_bytes", B),
            ("key_count", B),
            ("tombstone_count", B),
        ],
    ),
    (
        11,
        "rw_state_files",
        &[
            ("id", V),
            ("level", I),
            ("epoch", B),
            ("size", B),
            ("key_count", B),
            ("tombstone_count", B),
            ("first_table_id", I),
            ("last_table_id", I),
        ],
    ),
    (
        12,
        "rw_sources",
        &[("id", I), ("name", V), ("connector", V)],
    ),
    (
        13,
        "rw_source_progress",
        &[
            ("job", V),
            ("fragment_id", I),
            ("source", V),
            ("split_id", I),
            ("consumed", B),
            ("done", DataType::Boolean),
        ],
    ),
];

/// System relations computed from the committed version of the state
/// store rather than from meta's catalog.
pub fn is_state_relation(name: &str) -> bool {
    matches!(name, "rw_hummock_version" | "rw_state_files")
}

/// A source fragment, as `rw_source_progress` lists it.
pub struct SourceFragment {
    job: String,
    fragment_id: u32,
    source: String,
    splits: u32,
    progress_table: crate::catalog::TableId,
}

/// Every source fragment (read under meta's lock, before the scans).
pub fn source_fragments(st: &MetaState) -> Vec<SourceFragment> {
    use ebbflow_plan::SourceDesc;
    let name = |id| {
        st.relations
            .get(&id)
            .map(|r| r.desc.name.clone())
            .unwrap_or_default()
    };
    st.fragments
        .values()
        .filter_map(|f| match &f.source {
            SourceDesc::Splits { desc, state } => Some(SourceFragment {
                job: name(f.table_id),
                fragment_id: f.id,
                source: name(desc.relation),
                splits: desc.splits,
                progress_table: state.table_id,
            }),
            _ => None,
        })
        .collect()
}

/// `rw_source_progress`: one row per split of every source fragment (a
/// job reading a source, or a table's connector), from the progress
/// committed with the last epoch; splits not started show 0.
pub async fn source_progress_rows(
    fragments: Vec<SourceFragment>,
    snapshot: &dyn ebbflow_storage::ReadSnapshot,
) -> ebbflow_storage::StorageResult<Vec<Row>> {
    let mut out = Vec::new();
    for f in fragments {
        let stored = ebbflow_storage::state_table::scan_table_committed(
            snapshot,
            f.progress_table,
            &ebbflow_plan::source::progress_types(),
            None,
        )
        .await?;
        let mut by_split: BTreeMap<i64, (Datum, Datum)> = BTreeMap::new();
        for row in stored {
            if let [Some(split), consumed, done, ..] = &row[..] {
                if let Some(s) = split.as_i64() {
                    by_split.insert(s, (consumed.clone(), done.clone()));
                }
            }
        }
        for s in 0..f.splits {
            let (consumed, done) = by_split.remove(&(s as i64)).unwrap_or((
                Some(ScalarValue::Int64(0)),
                Some(ScalarValue::Boolean(false)),
            ));
            out.push(vec![
                text(f.job.as_str()),
                int(f.fragment_id),
                text(f.source.as_str()),
                int(s),
                consumed,
                done,
            ]);
        }
    }
    Ok(out)
}

fn bigint(v: u64) -> Datum {
    i64::try_from(v).ok().map(ScalarValue::Int64)
}

/// Rows of `rw_hummock_version` (one per level, L0 first, levels without
/// files included up to the deepest one) and `rw_state_files`.
pub fn state_rows(name: &str, version_id: u64, epoch: u64, files: &[SstInfo]) -> Vec<Row> {
    let table = |k: &[u8]| ebbflow_storage::lsm::version::table_of(k).and_then(int);
    match name {
        "rw_hummock_version" => {
            let depth = files.iter().map(|f| f.level).max().unwrap_or(0);
            (0..=depth)
                .map(|level| {
                    let at: Vec<&SstInfo> = files.iter().filter(|f| f.level == level).collect();
                    vec![
                        bigint(version_id),
                        bigint(epoch),
                        int(level),
                        int(at.len()),
                        bigint(at.iter().map(|f| f.size).sum()),
                        bigint(at.iter().map(|f| f.key_count).sum()),
                        bigint(at.iter().map(|f| f.tombstones).sum()),
                    ]
                })
                .collect()
        }
        "rw_state_files" => files
            .iter()
            .map(|f| {
                vec![
                    text(format!("{:016x}", f.id)),
                    int(f.level),
                    bigint(f.epoch),
                    bigint(f.size),
                    bigint(f.key_count),
                    bigint(f.tombstones),
                    table(&f.first_key),
                    table(&f.last_key),
                ]
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The descriptor of a system relation by name.
pub fn system_relation(name: &str) -> Option<Arc<RelationDesc>> {
    SYSTEM_RELATIONS
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|(id, n, cols)| system_desc(*id, n, cols))
}

/// The descriptor of a system relation computed on each read.
pub fn system_desc(id: u32, name: &str, cols: &[Col]) -> Arc<RelationDesc> {
    Arc::new(RelationDesc {
        id,
        name: name.to_string(),
        kind: RelationKind::System,
        columns: cols.iter().map(|(c, t)| ColumnDesc::new(*c, *t)).collect(),
        pk: vec![],
        user_pk: false,
        definition: None,
        with_options: BTreeMap::new(),
        append_only: false,
        watermark: None,
        on_conflict: Default::default(),
    })
}

fn int(v: impl TryInto<i32>) -> Datum {
    v.try_into().ok().map(ScalarValue::Int32)
}

fn text(s: impl Into<Arc<str>>) -> Datum {
    Some(ScalarValue::Varchar(s.into()))
}

/// The rows of a system relation.
pub fn system_rows(st: &MetaState, name: &str) -> Vec<Row> {
    match name {
        "rw_worker_nodes" => st
            .workers
            .values()
            .map(|w| {
                vec![
                    int(w.id),
                    text(w.host.as_str()),
                    text(w.state.name()),
                    int(w.units.len()),
                ]
            })
            .collect(),
        "rw_parallel_units" => st
            .workers
            .values()
            .flat_map(|w| w.units.iter().map(move |u| vec![int(*u), int(w.id)]))
            .collect(),
        "rw_sources" => st
            .relations
            .values()
            .filter(|r| r.desc.kind == RelationKind::Source)
            .map(|r| {
                let connector = r.desc.with_options.get("connector").cloned();
                vec![
                    int(r.desc.id),
                    text(r.desc.name.as_str()),
                    connector.map(|c| ScalarValue::Varchar(c.into())),
                ]
            })
            .collect(),
        "rw_tables" => st
            .relations
            .values()
            .filter(|r| r.desc.kind == RelationKind::Table)
            .map(|r| vec![int(r.desc.id), text(r.desc.name.as_str())])
            .collect(),
        "rw_materialized_views" => st
            .relations
            .values()
            .filter(|r| r.desc.kind == RelationKind::MaterializedView)
            .map(|r| {
                vec![
                    int(r.desc.id),
                    text(r.desc.name.as_str()),
                    text(r.desc.definition.clone().unwrap_or_default()),
                ]
            })
            .collect(),
        "rw_table_fragments" => st
            .relations
            .values()
            .map(|r| vec![int(r.desc.id), text(r.parallelism.display())])
            .collect(),
        "rw_fragments" => st
            .fragments
            .values()
            .map(|f| {
                let mut ups: Vec<u32> = st
                    .edges
                    .iter()
                    .filter(|e| e.down == f.id)
                    .map(|e| e.up)
                    .collect();
                ups.sort_unstable();
                ups.dedup();
                let ups = ups
                    .iter()
                    .map(|u| u.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                vec![
                    int(f.id),
                    int(f.table_id),
                    text(if f.singleton { "single" } else { "hash" }),
                    text(ups),
                    int(f.actors.len()),
                ]
            })
            .collect(),
        "rw_actors" => st
            .fragments
            .values()
            .flat_map(|f| {
                f.actors.iter().map(move |a| {
                    vec![
                        int(a.actor_id),
                        int(f.id),
                        int(a.worker),
                        int(a.unit),
                        int(a.vnodes.count()),
                    ]
                })
            })
            .collect(),
        "rw_fragment_vnodes" => st
            .fragments
            .values()
            .filter(|f| !f.singleton)
            .flat_map(|f| {
                f.mapping()
                    .into_iter()
                    .enumerate()
                    .map(move |(v, a)| vec![int(f.id), int(v), int(a)])
            })
            .collect(),
        "rw_scale_history" => st
            .scale_history
            .iter()
            .map(|h| {
                vec![
                    int(h.id),
                    Some(ScalarValue::Timestamp(h.started_at)),
                    text(h.statement.as_str()),
                    int(h.actors_added),
                    int(h.actors_removed),
                    int(h.vnodes_moved),
                    Some(ScalarValue::float64(h.pause_ms)),
                    Some(ScalarValue::float64(h.total_ms)),
                    text(h.status.as_str()),
                    int(h.vnodes_moved_across_workers),
                ]
            })
            .collect(),
        _ => vec![],
    }
}
