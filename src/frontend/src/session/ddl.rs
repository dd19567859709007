//! CREATE, DROP, ALTER … SET PARALLELISM and ALTER SYSTEM RESCHEDULE.

use ebbflow_common::ErrorKind;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{command, fields, int, rows_result, text, FResult, LocalSession};
use crate::{FrontendError, StatementResult};
use ebbflow_common::DataType;
use ebbflow_meta::catalog::{ColumnDesc, RelationKind, TableId};
use ebbflow_meta::graph::{PlanGraph, UpstreamSnapshot};
use ebbflow_meta::reschedule::{ScaleSummary, ScaleTarget};
use ebbflow_meta::service::{relation_desc, table_columns, Parallelism};
use ebbflow_meta::Meta;
use ebbflow_plan::source::{connector_from_options, Connector, SplitSourceDesc};
use ebbflow_plan::{OnConflict, WatermarkDesc};
use ebbflow_planner::logical::LogicalPlan;
use ebbflow_planner::stream::{plan_table, Emit, StreamPlanner};
use ebbflow_sql::bound::ParallelismTarget;

/// The existing relations' layout, copied so planning holds no lock.
pub(super) fn upstream_snapshot(meta: &Meta) -> UpstreamSnapshot {
    meta.upstream_snapshot()
}

/// The stream graph of an MV, with table ids from meta.
fn plan_mv(
    meta: &Arc<Meta>,
    plan: &LogicalPlan,
    names: &[String],
    id: u32,
    emit: Emit,
) -> FResult<PlanGraph> {
    let upstream = upstream_snapshot(meta);
    let meta = meta.clone();
    let mut alloc = move || meta.alloc_table_id();
    let planner = StreamPlanner::new(&upstream, &mut alloc).with_emit(emit);
    Ok(planner.plan_mv(plan, names, id)?)
}

/// Creates a table (and its `datagen` source, if `WITH (connector =
/// 'datagen')`) as a streaming job. Runtime tests create tables with it too.
#[allow(clippy::too_many_arguments)]
pub async fn create_table_job(
    meta: &Meta,
    name: String,
    columns: Vec<ColumnDesc>,
    pk: Vec<usize>,
    with_options: BTreeMap<String, String>,
    parallelism: Parallelism,
    append_only: bool,
    watermark: Option<WatermarkDesc>,
    on_conflict: OnConflict,
) -> FResult<()> {
    let (columns, pk, user_pk) = table_columns(columns, pk);
    let id = meta.alloc_table_id();
    let mut with_options = with_options;
    let connector = connector_of(id, &columns, &pk, user_pk, &mut with_options)?.map(|mut c| {
        // A table's connector feeds its rows in stream order (a gapless
        // prefix of a sequence at every commit) unless more splits are
        // asked for.
        let asked = with_options.keys().any(|k| k.ends_with(".split.num"));
        if !asked {
            c.splits = 1;
        }
        (c, meta.alloc_table_id())
    });
    let graph = plan_table(id, &columns, &pk, user_pk, on_conflict, connector);
    let mut desc = relation_desc(
        id,
        name,
        RelationKind::Table,
        columns,
        pk,
        user_pk,
        None,
        with_options,
    );
    desc.append_only = append_only;
    desc.watermark = watermark;
    desc.on_conflict = on_conflict;
    meta.create_job(desc, graph, parallelism).await?;
    Ok(())
}

/// The connector of a table or source with these columns and options,
/// checked; nexmark's base time is fixed into the options (so every job
/// reading the source sees the same events).
fn connector_of(
    id: TableId,
    columns: &[ColumnDesc],
    pk: &[usize],
    user_pk: bool,
    with_options: &mut BTreeMap<String, String>,
) -> FResult<Option<SplitSourceDesc>> {
    let cols: Vec<(String, DataType, bool)> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.clone(), c.data_type, !user_pk && pk == [i]))
        .collect();
    let now_ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
    let connector = connector_from_options(with_options, &cols, id, now_ms)
        .map_err(|e| FrontendError::new(e.kind, e.message))?;
    if let Some(SplitSourceDesc {
        connector: Connector::Nexmark(n),
        ..
    }) = &connector
    {
        with_options
            .entry("nexmark.base.time".into())
            .or_insert_with(|| n.base_time_ms.to_string());
    }
    Ok(connector)
}

/// Creates a source: a catalog entry that jobs reading it turn into
/// source fragments of their own.
pub async fn create_source(
    meta: &Meta,
    name: String,
    columns: Vec<ColumnDesc>,
    with_options: BTreeMap<String, String>,
    watermark: Option<WatermarkDesc>,
) -> FResult<()> {
    let (columns, pk, _) = table_columns(columns, vec![]);
    let mut with_options = with_options;
    // The id is only for the check; the source gets its own.
    if connector_of(0, &columns, &pk, false, &mut with_options)?.is_none() {
        return Err(FrontendError::new(
            ErrorKind::SyntaxError,
            "CREATE SOURCE needs WITH (connector = 'datagen' | 'nexmark', …)",
        ));
    }
    meta.create_source(name, columns, pk, with_options, watermark)
        .await?;
    Ok(())
}

/// Creates a materialized view of `plan` as a streaming job. Runtime tests
/// create MVs of hand-made plans with it too. `views` are the plain views
/// the query named (inlined into `plan`), which the MV depends on.
#[allow(clippy::too_many_arguments)]
pub async fn create_mv_job(
    meta: &Arc<Meta>,
    name: String,
    plan: &LogicalPlan,
    column_names: &[String],
    definition: String,
    with_options: BTreeMap<String, String>,
    parallelism: Parallelism,
    views: Vec<TableId>,
    emit: Emit,
) -> FResult<()> {
    let id = meta.alloc_table_id();
    let mut graph = plan_mv(meta, plan, column_names, id, emit)?;
    graph.views = views;
    let desc = relation_desc(
        id,
        name,
        RelationKind::MaterializedView,
        graph.columns.clone(),
        graph.pk.clone(),
        false,
        Some(definition),
        with_options,
    );
    meta.create_job(desc, graph, parallelism).await?;
    Ok(())
}

impl LocalSession {
    /// Whether a CREATE finds `name` taken: `Ok(true)` under `IF NOT
    /// EXISTS` (nothing to do), an error without.
    pub(super) fn name_taken(&self, name: &str, if_not_exists: bool) -> FResult<bool> {
        if !self.meta.name_exists(name) {
            return Ok(false);
        }
        if if_not_exists {
            return Ok(true);
        }
        Err(FrontendError::new(
            ErrorKind::DuplicateTable,
            format!("relation \"{name}\" already exists"),
        ))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn create_table(
        &self,
        name: String,
        columns: Vec<ColumnDesc>,
        pk: Vec<usize>,
        with_options: BTreeMap<String, String>,
        append_only: bool,
        watermark: Option<WatermarkDesc>,
        on_conflict: OnConflict,
    ) -> FResult<()> {
        let parallelism = self.parallelism_for(&with_options)?;
        create_table_job(
            &self.meta,
            name,
            columns,
            pk,
            with_options,
            parallelism,
            append_only,
            watermark,
            on_conflict,
        )
        .await
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn create_mv(
        &self,
        name: String,
        plan: &LogicalPlan,
        column_names: &[String],
        definition: String,
        with_options: BTreeMap<String, String>,
        views: Vec<TableId>,
        emit: Emit,
    ) -> FResult<()> {
        let parallelism = self.parallelism_for(&with_options)?;
        create_mv_job(
            &self.meta,
            name,
            plan,
            column_names,
            definition,
            with_options,
            parallelism,
            views,
            emit,
        )
        .await
    }

    pub(super) async fn drop(
        &self,
        kind: RelationKind,
        name: &str,
        if_exists: bool,
        cascade: bool,
    ) -> FResult<StatementResult> {
        let tag = match kind {
            RelationKind::Table => "DROP TABLE",
            RelationKind::View => "DROP VIEW",
            RelationKind::Source => "DROP SOURCE",
            _ => "DROP MATERIALIZED VIEW",
        };
        match self.meta.relation_by_name(name) {
            None if if_exists => Ok(command(tag)),
            None => Err(FrontendError::new(
                ErrorKind::UndefinedTable,
                format!("{} \"{name}\" does not exist", kind.name()),
            )),
            Some(r) if r.kind != kind => Err(FrontendError::new(
                ErrorKind::WrongObjectType,
                format!("\"{name}\" is not a {}", kind.name()),
            )),
            Some(r) => {
                self.meta.drop_relation(r.id, cascade).await?;
                Ok(command(tag))
            }
        }
    }

    pub(super) async fn alter_parallelism(
        &self,
        target: ParallelismTarget,
        p: Parallelism,
    ) -> FResult<StatementResult> {
        let scale_target = match &target {
            ParallelismTarget::Relation(r) => ScaleTarget::Relation(r),
            ParallelismTarget::Fragment(f) => ScaleTarget::Fragment(*f),
        };
        self.meta.alter_parallelism(scale_target, p).await?;
        Ok(command(match target {
            ParallelismTarget::Relation(r) => match r.kind {
                RelationKind::Table => "ALTER TABLE",
                RelationKind::Source => "ALTER SOURCE",
                _ => "ALTER MATERIALIZED VIEW",
            },
            ParallelismTarget::Fragment(_) => "ALTER FRAGMENT",
        }))
    }

    /// `ALTER SYSTEM RESCHEDULE '<plan>' [DRY RUN]`: a dry run returns
    /// what would change, one row per fragment.
    pub(super) async fn reschedule(&self, plan: &str, dry_run: bool) -> FResult<StatementResult> {
        let summary = self.meta.reschedule_text(plan, dry_run).await?;
        if !dry_run {
            return Ok(command("ALTER SYSTEM"));
        }
        Ok(plan_rows(&summary))
    }

    /// `ALTER SYSTEM RESCHEDULE DRAIN WORKER id [DRY RUN]`.
    pub(super) async fn drain_worker(&self, id: u32, dry_run: bool) -> FResult<StatementResult> {
        let summary = self.meta.drain_worker(id, dry_run).await?;
        if dry_run {
            Ok(plan_rows(&summary))
        } else {
            Ok(command("ALTER SYSTEM"))
        }
    }

    /// `ALTER SYSTEM ADD WORKER`: one row, the new node's id.
    pub(super) async fn add_worker(&self, parallel_units: Option<u32>) -> FResult<StatementResult> {
        let id = self.meta.add_worker(parallel_units).await?;
        Ok(rows_result(
            fields(&[("worker_id", DataType::Int32)]),
            vec![vec![int(id as i32)]],
        ))
    }
}

/// A reschedule plan, one row per fragment (DRY RUN output).
fn plan_rows(summary: &ScaleSummary) -> StatementResult {
    let rows = summary
        .fragments
        .iter()
        .map(|f| {
            vec![
                int(f.fragment as i32),
                int(f.actors_added as i32),
                int(f.actors_removed as i32),
                int(f.vnodes_moved as i32),
                int(f.vnodes_moved_across_workers as i32),
                text(f.units.as_str()),
            ]
        })
        .collect();
    rows_result(
        fields(&[
            ("fragment_id", DataType::Int32),
            ("actors_added", DataType::Int32),
            ("actors_removed", DataType::Int32),
            ("vnodes_moved", DataType::Int32),
            ("vnodes_moved_across_workers", DataType::Int32),
            ("units", DataType::Varchar),
        ]),
        rows,
    )
}
