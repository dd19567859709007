//! A client session: runs statements against meta and the batch engine.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::{FrontendError, Session, SessionFactory, StatementResult};
use crate::batch::{self, BatchError, ScanSource};
use crate::common::{DataType, Datum, Field, Op, Row, ScalarValue, StreamChunk};
use crate::meta::catalog::{CatalogReader, ColumnDesc, RelationDesc, RelationKind};
use crate::meta::graph::UpstreamSnapshot;
use crate::meta::service::{relation_desc, table_columns, Parallelism};
use crate::meta::system::{system_relation, system_rows};
use crate::meta::{Meta, MetaError};
use crate::planner::logical::LogicalPlan;
use crate::planner::stream::{plan_table, StreamPlanner};
use crate::planner::PlanError;
use crate::sql::{BoundStatement, ParallelismSpec, ParamContext, Statement};
use crate::stream::datagen::DatagenDesc;

impl From<MetaError> for FrontendError {
    fn from(e: MetaError) -> Self {
        FrontendError {
            code: e.code,
            message: e.message,
            detail: None,
            hint: e.hint,
        }
    }
}

impl From<PlanError> for FrontendError {
    fn from(e: PlanError) -> Self {
        FrontendError::new(e.code, e.message)
    }
}

impl From<BatchError> for FrontendError {
    fn from(e: BatchError) -> Self {
        FrontendError::new(e.code, e.message)
    }
}

type FResult<T> = Result<T, FrontendError>;

/// The catalog as the binder sees it: user relations, then `rw_catalog`.
pub struct MetaCatalog<'a>(pub &'a Meta);

impl CatalogReader for MetaCatalog<'_> {
    fn relation(&self, schema: Option<&str>, name: &str) -> Option<Arc<RelationDesc>> {
        match schema {
            None | Some("public") | Some("dev") => {
                if let Some(r) = self.0.relation_by_name(name) {
                    return Some(r);
                }
                if schema.is_none() {
                    return system_relation(name);
                }
                None
            }
            Some("rw_catalog") | Some("pg_catalog") => system_relation(name),
            _ => None,
        }
    }
}

/// Batch reads at the last committed epoch.
pub struct MetaScan<'a>(pub &'a Meta);

impl ScanSource for MetaScan<'_> {
    fn scan(&self, relation: &RelationDesc) -> Result<Vec<Row>, BatchError> {
        if relation.kind == RelationKind::System {
            return Ok(self.0.with_state(|st| system_rows(st, &relation.name)));
        }
        self.0.scan(relation).map_err(|e| BatchError {
            code: e.code,
            message: e.message,
        })
    }
}

/// Session variables.
#[derive(Clone, Debug)]
struct Vars {
    implicit_flush: bool,
    streaming_parallelism: Parallelism,
    other: BTreeMap<String, String>,
}

impl Default for Vars {
    fn default() -> Self {
        let mut other = BTreeMap::new();
        for (k, v) in [
            ("application_name", ""),
            ("client_encoding", "UTF8"),
            ("datestyle", "ISO, MDY"),
            ("extra_float_digits", "1"),
            ("intervalstyle", "postgres"),
            ("search_path", "public"),
            ("server_encoding", "UTF8"),
            ("server_version", "15.0"),
            ("standard_conforming_strings", "on"),
            ("timezone", "UTC"),
            ("transaction_isolation", "read committed"),
        ] {
            other.insert(k.to_string(), v.to_string());
        }
        Vars {
            implicit_flush: false,
            streaming_parallelism: Parallelism::Adaptive,
            other,
        }
    }
}

pub struct LocalSession {
    meta: Arc<Meta>,
    vars: Mutex<Vars>,
}

pub struct LocalSessionFactory {
    pub meta: Arc<Meta>,
}

impl SessionFactory for LocalSessionFactory {
    fn new_session(&self, _user: &str, _database: &str) -> Arc<dyn Session> {
        Arc::new(LocalSession {
            meta: self.meta.clone(),
            vars: Mutex::new(Vars::default()),
        })
    }
}

fn command(tag: impl Into<String>) -> StatementResult {
    StatementResult::Command { tag: tag.into() }
}

fn text(s: impl Into<Arc<str>>) -> Datum {
    Some(ScalarValue::Varchar(s.into()))
}

fn rows_result(fields: Vec<Field>, rows: Vec<Row>) -> StatementResult {
    let tag = format!("SELECT {}", rows.len());
    StatementResult::Rows { fields, rows, tag }
}

/// `WITH (parallelism = n)` of a CREATE statement.
fn with_parallelism(options: &BTreeMap<String, String>) -> FResult<Option<Parallelism>> {
    match options.get("parallelism") {
        None => Ok(None),
        Some(v) => parse_parallelism(v).map(Some),
    }
}

fn parse_parallelism(v: &str) -> FResult<Parallelism> {
    let v = v.trim().trim_matches('\'');
    if v.eq_ignore_ascii_case("adaptive") || v.eq_ignore_ascii_case("default") {
        return Ok(Parallelism::Adaptive);
    }
    match v.parse::<u32>() {
        Ok(0) => Ok(Parallelism::Adaptive),
        Ok(n) => Ok(Parallelism::Fixed(n)),
        Err(_) => Err(FrontendError::new(
            "22023",
            format!("invalid parallelism \"{v}\": expected a positive integer or ADAPTIVE"),
        )),
    }
}

impl LocalSession {
    fn catalog(&self) -> MetaCatalog<'_> {
        MetaCatalog(&self.meta)
    }

    async fn execute(&self, stmt: &Statement, params: &ParamContext) -> FResult<StatementResult> {
        let bound = crate::sql::bind(stmt, &self.catalog(), params)?;
        self.execute_bound(bound).await
    }

    async fn execute_bound(&self, bound: BoundStatement) -> FResult<StatementResult> {
        match bound {
            BoundStatement::Query { plan, names } => {
                let rows = batch::execute(&plan, &MetaScan(&self.meta))?;
                let fields = plan
                    .fields()
                    .into_iter()
                    .zip(names)
                    .map(|(f, n)| Field::new(n, f.data_type))
                    .collect();
                Ok(rows_result(fields, rows))
            }
            BoundStatement::CreateTable {
                name,
                columns,
                pk,
                with_options,
                if_not_exists,
            } => {
                if self.meta.name_exists(&name) {
                    if if_not_exists {
                        return Ok(command("CREATE TABLE"));
                    }
                    return Err(FrontendError::new(
                        "42P07",
                        format!("relation \"{name}\" already exists"),
                    ));
                }
                self.create_table(name, columns, pk, with_options).await?;
                Ok(command("CREATE TABLE"))
            }
            BoundStatement::CreateMaterializedView {
                name,
                plan,
                column_names,
                definition,
                with_options,
                if_not_exists,
            } => {
                if self.meta.name_exists(&name) {
                    if if_not_exists {
                        return Ok(command("CREATE MATERIALIZED VIEW"));
                    }
                    return Err(FrontendError::new(
                        "42P07",
                        format!("relation \"{name}\" already exists"),
                    ));
                }
                let parallelism = with_parallelism(&with_options)?
                    .unwrap_or(self.vars.lock().streaming_parallelism);
                let id = self.meta.alloc_table_id();
                let graph = self.plan_mv(&plan, &column_names, id)?;
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
                self.meta.create_job(desc, graph, parallelism).await?;
                Ok(command("CREATE MATERIALIZED VIEW"))
            }
            BoundStatement::Drop {
                kind,
                name,
                if_exists,
                cascade,
            } => {
                let tag = match kind {
                    RelationKind::Table => "DROP TABLE",
                    _ => "DROP MATERIALIZED VIEW",
                };
                match self.meta.relation_by_name(&name) {
                    None if if_exists => Ok(command(tag)),
                    None => Err(FrontendError::new(
                        "42P01",
                        format!("{} \"{name}\" does not exist", kind.name()),
                    )),
                    Some(r) if r.kind != kind => Err(FrontendError::new(
                        "42809",
                        format!("\"{name}\" is not a {}", kind.name()),
                    )),
                    Some(r) => {
                        self.meta.drop_relation(r.id, cascade).await?;
                        Ok(command(tag))
                    }
                }
            }
            BoundStatement::Insert { table, source } => {
                let rows = batch::execute(&source, &MetaScan(&self.meta))?;
                let n = rows.len();
                let full: Vec<Row> = rows.into_iter().map(|r| widen(&table, r)).collect();
                self.write(&table, StreamChunk::inserts(full)).await?;
                Ok(command(format!("INSERT 0 {n}")))
            }
            BoundStatement::Update {
                table,
                filter,
                assignments,
            } => {
                self.meta.flush().await?;
                let rows = self.meta.scan(&table)?;
                let mut chunk = StreamChunk::default();
                let mut n = 0;
                for row in rows {
                    if let Some(f) = &filter {
                        if !f.eval_predicate(&row)? {
                            continue;
                        }
                    }
                    let mut new = row.clone();
                    for (col, e) in &assignments {
                        new[*col] = e.eval(&row)?;
                    }
                    n += 1;
                    let same_key = table.pk.iter().all(|&k| new[k] == row[k]);
                    if same_key {
                        chunk.push(Op::UpdateDelete, row);
                        chunk.push(Op::UpdateInsert, new);
                    } else {
                        chunk.push(Op::Delete, row);
                        chunk.push(Op::Insert, new);
                    }
                }
                self.write(&table, chunk).await?;
                Ok(command(format!("UPDATE {n}")))
            }
            BoundStatement::Delete { table, filter } => {
                self.meta.flush().await?;
                let rows = self.meta.scan(&table)?;
                let mut chunk = StreamChunk::default();
                for row in rows {
                    if let Some(f) = &filter {
                        if !f.eval_predicate(&row)? {
                            continue;
                        }
                    }
                    chunk.push(Op::Delete, row);
                }
                let n = chunk.len();
                self.write(&table, chunk).await?;
                Ok(command(format!("DELETE {n}")))
            }
            BoundStatement::Flush => {
                self.meta.flush().await?;
                Ok(command("FLUSH"))
            }
            BoundStatement::SetVariable { name, value } => {
                self.set_var(&name, value)?;
                Ok(command("SET"))
            }
            BoundStatement::ShowVariable { name } => {
                let v = self.get_var(&name)?;
                Ok(rows_result(
                    vec![Field::new(name, DataType::Varchar)],
                    vec![vec![text(v)]],
                ))
            }
            BoundStatement::ShowAll => {
                let rows = self
                    .all_vars()
                    .into_iter()
                    .map(|(k, v)| vec![text(k), text(v), text("")])
                    .collect();
                Ok(rows_result(
                    vec![
                        Field::new("Name", DataType::Varchar),
                        Field::new("Setting", DataType::Varchar),
                        Field::new("Description", DataType::Varchar),
                    ],
                    rows,
                ))
            }
            BoundStatement::ShowCluster => Ok(self.show_cluster()),
            BoundStatement::ShowFragments { name } => self.show_fragments(name),
            BoundStatement::ShowActors { name } => self.show_actors(name),
            BoundStatement::Explain { inner } => self.explain(*inner),
            BoundStatement::TransactionControl { tag } => Ok(command(tag)),
            BoundStatement::AlterSystemSet { name, value } => {
                self.alter_system_set(&name, &value)?;
                Ok(command("ALTER SYSTEM"))
            }
            BoundStatement::AlterParallelism {
                target,
                parallelism,
            } => {
                let p: Parallelism = parallelism.into();
                let (fragments, table, explicit) = match &target {
                    crate::sql::bound::ParallelismTarget::Relation(r) => {
                        let frags = self
                            .meta
                            .with_state(|st| st.relations.get(&r.id).map(|e| e.fragments.clone()))
                            .ok_or_else(|| {
                                FrontendError::new(
                                    "42P01",
                                    format!("relation \"{}\" does not exist", r.name),
                                )
                            })?;
                        (frags, Some(r.id), false)
                    }
                    crate::sql::bound::ParallelismTarget::Fragment(f) => (vec![*f], None, true),
                };
                let plan = self.meta.plan_parallelism(&fragments, p, explicit)?;
                let shown = match p {
                    Parallelism::Adaptive => "ADAPTIVE".to_string(),
                    Parallelism::Fixed(n) => n.to_string(),
                };
                let statement = match &target {
                    crate::sql::bound::ParallelismTarget::Relation(r) => {
                        format!(
                            "ALTER {} {} SET PARALLELISM = {}",
                            r.kind.name().to_uppercase(),
                            r.name,
                            shown
                        )
                    }
                    crate::sql::bound::ParallelismTarget::Fragment(f) => {
                        format!("ALTER FRAGMENT {f} SET PARALLELISM = {shown}")
                    }
                };
                if plan.is_empty() {
                    if let Some(t) = table {
                        self.meta.set_parallelism(t, p);
                    }
                } else {
                    self.meta
                        .apply_reschedule(plan, &statement, table.map(|t| (t, p)))
                        .await?;
                }
                Ok(command(match target {
                    crate::sql::bound::ParallelismTarget::Relation(r) => match r.kind {
                        RelationKind::Table => "ALTER TABLE",
                        _ => "ALTER MATERIALIZED VIEW",
                    },
                    crate::sql::bound::ParallelismTarget::Fragment(_) => "ALTER FRAGMENT",
                }))
            }
            BoundStatement::Reschedule { plan, dry_run } => {
                let parsed = crate::meta::reschedule::parse_plan(&plan)?;
                let summary = if dry_run {
                    self.meta.preview_reschedule(&parsed)?
                } else {
                    self.meta
                        .apply_reschedule(
                            parsed,
                            &format!("ALTER SYSTEM RESCHEDULE '{plan}'"),
                            None,
                        )
                        .await?
                };
                if !dry_run {
                    return Ok(command("ALTER SYSTEM"));
                }
                let rows = summary
                    .fragments
                    .iter()
                    .map(|(f, a, r, m, u)| {
                        vec![
                            Some(ScalarValue::Int32(*f as i32)),
                            Some(ScalarValue::Int32(*a as i32)),
                            Some(ScalarValue::Int32(*r as i32)),
                            Some(ScalarValue::Int32(*m as i32)),
                            text(u.as_str()),
                        ]
                    })
                    .collect();
                Ok(rows_result(
                    vec![
                        Field::new("fragment_id", DataType::Int32),
                        Field::new("actors_added", DataType::Int32),
                        Field::new("actors_removed", DataType::Int32),
                        Field::new("vnodes_moved", DataType::Int32),
                        Field::new("units", DataType::Varchar),
                    ],
                    rows,
                ))
            }
            BoundStatement::DrainWorker { .. }
            | BoundStatement::AddWorker { .. }
            | BoundStatement::RemoveWorker { .. } => Err(FrontendError::new(
                "0A000",
                "online scaling statements are not supported yet",
            )),
        }
    }

    fn plan_mv(
        &self,
        plan: &LogicalPlan,
        names: &[String],
        id: u32,
    ) -> FResult<crate::meta::graph::PlanGraph> {
        let upstream = upstream_snapshot(&self.meta);
        let meta = self.meta.clone();
        let mut alloc = move || meta.alloc_table_id();
        let planner = StreamPlanner::new(&upstream, &mut alloc);
        Ok(planner.plan_mv(plan, names, id)?)
    }

    async fn create_table(
        &self,
        name: String,
        columns: Vec<ColumnDesc>,
        pk: Vec<usize>,
        with_options: BTreeMap<String, String>,
    ) -> FResult<()> {
        let parallelism =
            with_parallelism(&with_options)?.unwrap_or(self.vars.lock().streaming_parallelism);
        let (columns, pk, user_pk) = table_columns(columns, pk);
        let id = self.meta.alloc_table_id();
        let datagen = match with_options
            .get("connector")
            .map(|s| s.to_ascii_lowercase())
        {
            None => None,
            Some(c) if c == "datagen" => {
                let cols: Vec<(String, DataType, bool)> = columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (c.name.clone(), c.data_type, !user_pk && pk == [i]))
                    .collect();
                let desc = DatagenDesc::from_options(&with_options, &cols)
                    .map_err(|e| FrontendError::new("22023", e.0))?;
                Some((desc, self.meta.alloc_table_id()))
            }
            Some(other) => {
                return Err(FrontendError::new(
                    "0A000",
                    format!("connector \"{other}\" is not supported (only \"datagen\")"),
                ))
            }
        };
        let graph = plan_table(id, &columns, &pk, user_pk, datagen);
        let desc = relation_desc(
            id,
            name,
            RelationKind::Table,
            columns,
            pk,
            user_pk,
            None,
            with_options,
        );
        self.meta.create_job(desc, graph, parallelism).await?;
        Ok(())
    }

    async fn write(&self, table: &RelationDesc, chunk: StreamChunk) -> FResult<()> {
        if table.kind != RelationKind::Table {
            return Err(FrontendError::new(
                "42809",
                format!("cannot change materialized view \"{}\"", table.name),
            ));
        }
        self.meta
            .write_dml_statement(table.id, chunk_parts(chunk))
            .await?;
        if self.vars.lock().implicit_flush {
            self.meta.flush().await?;
        }
        Ok(())
    }

    /// System parameters. `debug_inject_actor_failure = <fragment id>` is
    /// a test fault (off unless set): the next chunk an actor of that
    /// fragment processes fails it, and the cluster recovers from the last
    /// committed epoch.
    fn alter_system_set(&self, name: &str, value: &str) -> FResult<()> {
        match name.to_ascii_lowercase().as_str() {
            "debug_inject_actor_failure" => {
                let fragment =
                    value
                        .trim()
                        .trim_matches('\'')
                        .parse::<u32>()
                        .map_err(|_| {
                            FrontendError::new(
                        "22023",
                        format!("invalid fragment id \"{value}\" for debug_inject_actor_failure"),
                    )
                        })?;
                self.meta.inject_actor_failure(fragment);
                Ok(())
            }
            other => Err(FrontendError::new(
                "42704",
                format!("unrecognized system parameter \"{other}\""),
            )),
        }
    }

    fn set_var(&self, name: &str, value: Option<String>) -> FResult<()> {
        let name = name.to_ascii_lowercase();
        let mut vars = self.vars.lock();
        match name.as_str() {
            "rw_implicit_flush" => {
                vars.implicit_flush = match value.as_deref().map(|v| v.to_ascii_lowercase()) {
                    None => false,
                    Some(v) if ["true", "on", "1", "t", "yes"].contains(&v.as_str()) => true,
                    Some(v) if ["false", "off", "0", "f", "no"].contains(&v.as_str()) => false,
                    Some(v) => {
                        return Err(FrontendError::new(
                            "22023",
                            format!(
                            "parameter \"rw_implicit_flush\" requires a Boolean value, got \"{v}\""
                        ),
                        ))
                    }
                }
            }
            "streaming_parallelism" => {
                vars.streaming_parallelism = match value {
                    None => Parallelism::Adaptive,
                    Some(v) => parse_parallelism(&v)?,
                }
            }
            _ => {
                let v = value.unwrap_or_else(|| {
                    Vars::default()
                        .other
                        .get(&name)
                        .cloned()
                        .unwrap_or_default()
                });
                vars.other.insert(name, v);
            }
        }
        Ok(())
    }

    fn get_var(&self, name: &str) -> FResult<String> {
        let name = name.to_ascii_lowercase();
        self.all_vars()
            .into_iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
            .ok_or_else(|| {
                FrontendError::new(
                    "42704",
                    format!("unrecognized configuration parameter \"{name}\""),
                )
            })
    }

    fn all_vars(&self) -> Vec<(String, String)> {
        let vars = self.vars.lock();
        let mut out: Vec<(String, String)> = vars.other.clone().into_iter().collect();
        out.push((
            "rw_implicit_flush".into(),
            if vars.implicit_flush { "true" } else { "false" }.into(),
        ));
        out.push((
            "streaming_parallelism".into(),
            match vars.streaming_parallelism {
                Parallelism::Adaptive => "adaptive".into(),
                Parallelism::Fixed(n) => n.to_string(),
            },
        ));
        out.sort();
        out
    }

    fn show_cluster(&self) -> StatementResult {
        let rows = self.meta.with_state(|st| {
            let mut rows = Vec::new();
            for w in st.workers.values() {
                for u in &w.units {
                    let mut actors = Vec::new();
                    for f in st.fragments.values() {
                        let ids: Vec<String> = f
                            .actors
                            .iter()
                            .filter(|a| a.unit == *u)
                            .map(|a| a.actor_id.to_string())
                            .collect();
                        if !ids.is_empty() {
                            actors.push(format!("fragment {}: [{}]", f.id, ids.join(",")));
                        }
                    }
                    rows.push(vec![
                        Some(ScalarValue::Int32(w.id as i32)),
                        text(w.host.as_str()),
                        text(w.state.name()),
                        Some(ScalarValue::Int32(*u as i32)),
                        text(actors.join("; ")),
                    ]);
                }
            }
            rows
        });
        rows_result(
            vec![
                Field::new("worker_id", DataType::Int32),
                Field::new("host", DataType::Varchar),
                Field::new("state", DataType::Varchar),
                Field::new("parallel_unit_id", DataType::Int32),
                Field::new("actors", DataType::Varchar),
            ],
            rows,
        )
    }

    fn filter_table(&self, name: Option<String>) -> FResult<Option<u32>> {
        match name {
            None => Ok(None),
            Some(n) => self
                .meta
                .relation_by_name(&n)
                .map(|r| Some(r.id))
                .ok_or_else(|| {
                    FrontendError::new("42P01", format!("relation \"{n}\" does not exist"))
                }),
        }
    }

    fn show_fragments(&self, name: Option<String>) -> FResult<StatementResult> {
        let filter = self.filter_table(name)?;
        let rows = self.meta.with_state(|st| {
            st.fragments
                .values()
                .filter(|f| filter.is_none_or(|t| f.table_id == t))
                .map(|f| {
                    let nodes: Vec<&str> = f.nodes.iter().map(|n| n.name()).collect();
                    vec![
                        Some(ScalarValue::Int32(f.id as i32)),
                        Some(ScalarValue::Int32(f.table_id as i32)),
                        text(if f.singleton { "single" } else { "hash" }),
                        text(nodes.join(" -> ")),
                        Some(ScalarValue::Int32(f.actors.len() as i32)),
                    ]
                })
                .collect()
        });
        Ok(rows_result(
            vec![
                Field::new("fragment_id", DataType::Int32),
                Field::new("table_id", DataType::Int32),
                Field::new("distribution_type", DataType::Varchar),
                Field::new("executors", DataType::Varchar),
                Field::new("parallelism", DataType::Int32),
            ],
            rows,
        ))
    }

    fn show_actors(&self, name: Option<String>) -> FResult<StatementResult> {
        let filter = self.filter_table(name)?;
        let rows = self.meta.with_state(|st| {
            st.fragments
                .values()
                .filter(|f| filter.is_none_or(|t| f.table_id == t))
                .flat_map(|f| {
                    f.actors.iter().map(move |a| {
                        vec![
                            Some(ScalarValue::Int32(a.actor_id as i32)),
                            Some(ScalarValue::Int32(f.id as i32)),
                            Some(ScalarValue::Int32(a.worker as i32)),
                            Some(ScalarValue::Int32(a.unit as i32)),
                            Some(ScalarValue::Int32(a.vnodes.count() as i32)),
                        ]
                    })
                })
                .collect()
        });
        Ok(rows_result(
            vec![
                Field::new("actor_id", DataType::Int32),
                Field::new("fragment_id", DataType::Int32),
                Field::new("worker_id", DataType::Int32),
                Field::new("parallel_unit_id", DataType::Int32),
                Field::new("vnode_count", DataType::Int32),
            ],
            rows,
        ))
    }

    fn explain(&self, inner: BoundStatement) -> FResult<StatementResult> {
        let lines: Vec<String> = match inner {
            BoundStatement::CreateMaterializedView {
                plan,
                column_names,
                with_options,
                ..
            } => {
                let parallelism = with_parallelism(&with_options)?
                    .unwrap_or(self.vars.lock().streaming_parallelism);
                let n = match parallelism {
                    Parallelism::Adaptive => self.meta.with_state(|st| st.total_units()),
                    Parallelism::Fixed(n) => n as usize,
                };
                // Plan with throw-away ids: EXPLAIN changes nothing.
                let upstream = upstream_snapshot(&self.meta);
                let mut next = 0u32;
                let mut alloc = || {
                    next += 1;
                    u32::MAX - next
                };
                let graph =
                    StreamPlanner::new(&upstream, &mut alloc).plan_mv(&plan, &column_names, 0)?;
                explain_graph(&graph, n)
            }
            BoundStatement::Query { plan, .. } => {
                plan.to_string().lines().map(String::from).collect()
            }
            other => vec![format!("{other:?}")],
        };
        Ok(rows_result(
            vec![Field::new("QUERY PLAN", DataType::Varchar)],
            lines.into_iter().map(|l| vec![text(l)]).collect(),
        ))
    }
}

/// Fragment graph as text for EXPLAIN.
fn explain_graph(graph: &crate::meta::graph::PlanGraph, parallelism: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, f) in graph.fragments.iter().enumerate().rev() {
        let par = if f.singleton { 1 } else { parallelism };
        lines.push(format!(
            "Fragment {i} ({}, parallelism {par})",
            if f.singleton { "single" } else { "hash" }
        ));
        for n in f.nodes.iter().rev() {
            lines.push(format!("  {}", n.name()));
        }
        for (up, spec) in &f.inputs {
            let from = match up {
                crate::meta::graph::Upstream::Local(j) => format!("Fragment {j}"),
                crate::meta::graph::Upstream::Existing(t) => format!("table {t}"),
            };
            let key = match spec {
                crate::meta::graph::EdgeSpec::Hash(k) => format!(" by {k:?}"),
                _ => String::new(),
            };
            lines.push(format!("  Exchange ({}{key}) from {from}", spec.name()));
        }
    }
    lines
}

/// A visible-columns row widened to the table's full row (hidden row id
/// left NULL: meta assigns it).
fn widen(table: &RelationDesc, row: Row) -> Row {
    if table.columns.iter().all(|c| !c.hidden) {
        return row;
    }
    let mut vals = row.into_iter();
    table
        .columns
        .iter()
        .map(|c| {
            if c.hidden {
                None
            } else {
                vals.next().flatten()
            }
        })
        .collect()
}

/// Split a large DML chunk into pieces of a bounded size.
fn chunk_parts(chunk: StreamChunk) -> Vec<StreamChunk> {
    const MAX: usize = 4096;
    if chunk.len() <= MAX {
        return vec![chunk];
    }
    let mut parts = Vec::new();
    let mut cur = StreamChunk::with_capacity(MAX);
    for (op, row) in chunk.into_iter_rows() {
        let split_ok = op != Op::UpdateInsert;
        if cur.len() >= MAX && split_ok {
            parts.push(std::mem::take(&mut cur));
        }
        cur.push(op, row);
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

#[async_trait]
impl Session for LocalSession {
    async fn run_simple(&self, sql: &str) -> (Vec<StatementResult>, Option<FrontendError>) {
        let stmts = match crate::sql::parse(sql) {
            Ok(s) => s,
            Err(e) => return (vec![], Some(e.into())),
        };
        if stmts.is_empty() {
            return (vec![StatementResult::Empty], None);
        }
        let mut results = Vec::new();
        for s in &stmts {
            match self.execute(s, &ParamContext::default()).await {
                Ok(r) => results.push(r),
                Err(e) => return (results, Some(e)),
            }
        }
        (results, None)
    }

    async fn describe(
        &self,
        sql: &str,
        param_types: &[Option<DataType>],
    ) -> Result<(Vec<DataType>, Vec<Field>), FrontendError> {
        let stmts = crate::sql::parse(sql)?;
        let Some(stmt) = stmts.first() else {
            return Ok((vec![], vec![]));
        };
        let (bound, types) = crate::sql::describe(stmt, &self.catalog(), param_types)?;
        let fields = match bound {
            BoundStatement::Query { plan, names } => plan
                .fields()
                .into_iter()
                .zip(names)
                .map(|(f, n)| Field::new(n, f.data_type))
                .collect(),
            BoundStatement::ShowVariable { name } => vec![Field::new(name, DataType::Varchar)],
            _ => vec![],
        };
        Ok((types, fields))
    }

    async fn run_extended(
        &self,
        sql: &str,
        params: ParamContext,
    ) -> Result<StatementResult, FrontendError> {
        let stmts = crate::sql::parse(sql)?;
        match stmts.first() {
            None => Ok(StatementResult::Empty),
            Some(s) => self.execute(s, &params).await,
        }
    }
}

// Parallelism specs from the binder map onto meta's.
impl From<ParallelismSpec> for Parallelism {
    fn from(p: ParallelismSpec) -> Self {
        match p {
            ParallelismSpec::Fixed(n) => Parallelism::Fixed(n),
            ParallelismSpec::Adaptive => Parallelism::Adaptive,
        }
    }
}

/// The existing relations' layout, copied so planning holds no lock.
fn upstream_snapshot(meta: &Meta) -> UpstreamSnapshot {
    meta.with_state(|st| UpstreamSnapshot::of(st, st.relations.keys().copied()))
}
