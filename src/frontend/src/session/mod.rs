//! A client session: runs statements against meta and the batch engine.
//!
//! `mod.rs` binds a statement and dispatches it; the statements live by
//! kind: `ddl` (CREATE, DROP, ALTER … PARALLELISM, RESCHEDULE), `dml`
//! (INSERT, UPDATE, DELETE), `show` (SHOW, EXPLAIN) and `vars` (session
//! variables and system parameters).

mod copy;
mod ddl;
mod dml;
mod show;
mod vars;

use ebbflow_common::ErrorKind;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::{CopyIn, FrontendError, Session, SessionFactory, StatementResult};
use ebbflow_batch::{self as batch, BatchError, ScanSource};
use ebbflow_common::{DataType, Datum, Field, Row, ScalarValue};
use ebbflow_meta::catalog::{CatalogReader, RelationDesc, RelationKind, SessionInfo};
use ebbflow_meta::pg_catalog::{self, pg_relation};
use ebbflow_meta::system::system_relation;
use ebbflow_meta::Meta;
use ebbflow_planner::logical::LogicalPlan;
use ebbflow_planner::stream::Emit;
use ebbflow_sql::{BoundStatement, ParamContext, Statement};

#[cfg(test)]
pub use ddl::{create_mv_job, create_table_job};
use vars::Vars;

type FResult<T> = crate::FrontendResult<T>;

/// The catalog as the binder sees it: user relations, then `rw_catalog`
/// and `pg_catalog` (always on the search path, as in PostgreSQL);
/// `information_schema` only when named.
pub struct MetaCatalog<'a> {
    pub meta: &'a Meta,
    pub session: SessionInfo,
}

impl CatalogReader for MetaCatalog<'_> {
    fn relation(&self, schema: Option<&str>, name: &str) -> Option<Arc<RelationDesc>> {
        match schema {
            None | Some("public") | Some("dev") => {
                if let Some(r) = self.meta.relation_by_name(name) {
                    return Some(r);
                }
                if schema.is_none() {
                    return system_relation(name).or_else(|| pg_relation("pg_catalog", name));
                }
                None
            }
            Some("rw_catalog") => system_relation(name),
            Some("pg_catalog") => pg_relation("pg_catalog", name).or_else(|| system_relation(name)),
            Some("information_schema") => pg_relation("information_schema", name),
            _ => None,
        }
    }

    fn relations(&self) -> Vec<(String, Arc<RelationDesc>)> {
        self.meta
            .catalog_relations()
            .into_iter()
            .map(|(s, r)| (s.to_string(), r))
            .collect()
    }

    fn session(&self) -> SessionInfo {
        self.session.clone()
    }
}

/// Batch reads at the last committed epoch: every relation a query scans
/// is read from one pinned snapshot before the (synchronous) batch engine
/// runs, so two tables of one query are consistent with each other.
pub struct MetaScan<'a> {
    meta: &'a Meta,
    /// What `pg_settings` and `pg_database` show.
    session: SessionInfo,
    /// Rows of each scanned relation, with how many scans still want them
    /// (the last one takes them, earlier ones copy).
    rows: Mutex<std::collections::HashMap<ebbflow_meta::catalog::TableId, (usize, Vec<Row>)>>,
}

impl<'a> MetaScan<'a> {
    pub async fn prefetch(
        meta: &'a Meta,
        session: impl FnOnce() -> SessionInfo,
        plan: &LogicalPlan,
    ) -> FResult<MetaScan<'a>> {
        let mut scans: Vec<Arc<RelationDesc>> = Vec::new();
        let mut reads_system = false;
        let mut progress = None;
        let mut stack = vec![plan];
        while let Some(p) = stack.pop() {
            if let LogicalPlan::Scan { relation } = p {
                match relation.kind {
                    RelationKind::Source => {
                        return Err(FrontendError::new(
                            ErrorKind::FeatureNotSupported,
                            format!(
                                "cannot read source \"{}\" in a query: its rows are not stored",
                                relation.name
                            ),
                        )
                        .with_hint(
                            "Create a materialized view over the source, or a table with the same connector.",
                        ));
                    }
                    RelationKind::System => reads_system = true,
                    _ => scans.push(relation.clone()),
                }
                if relation.name == "rw_source_progress" && relation.kind == RelationKind::System {
                    progress = Some(relation.id);
                }
            }
            stack.extend(p.children());
        }
        // Only the catalogs need the session's settings: spare DML the copy.
        let session = if reads_system {
            session()
        } else {
            SessionInfo::default()
        };
        let mut rows = std::collections::HashMap::new();
        if !scans.is_empty() {
            let snapshot = meta.store.snapshot();
            for r in scans {
                match rows.entry(r.id) {
                    std::collections::hash_map::Entry::Occupied(mut e) => {
                        let (n, _): &mut (usize, Vec<Row>) = e.get_mut();
                        *n += 1;
                    }
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert((1, meta.scan_at(&*snapshot, &r).await?));
                    }
                }
            }
        }
        if let Some(id) = progress {
            let snapshot = meta.store.snapshot();
            let fragments = meta.source_fragment_list();
            let got = ebbflow_meta::system::source_progress_rows(fragments, &*snapshot)
                .await
                .map_err(ebbflow_meta::MetaError::from)?;
            rows.insert(id, (usize::MAX, got));
        }
        Ok(MetaScan {
            meta,
            session,
            rows: Mutex::new(rows),
        })
    }
}

impl ScanSource for MetaScan<'_> {
    fn scan(&self, relation: &RelationDesc) -> Result<Vec<Row>, BatchError> {
        if relation.kind == RelationKind::System && relation.name == "rw_source_progress" {
            let rows = self.rows.lock();
            return Ok(rows
                .get(&relation.id)
                .map(|(_, r)| r.clone())
                .unwrap_or_default());
        }
        if relation.kind == RelationKind::System {
            if ebbflow_meta::system::is_state_relation(&relation.name) {
                let snapshot = self.meta.store.snapshot();
                let (version, files) = snapshot.files();
                return Ok(ebbflow_meta::system::state_rows(
                    &relation.name,
                    version,
                    snapshot.epoch(),
                    &files,
                ));
            }
            if pg_catalog::is_pg_relation(relation.id) {
                return Ok(self
                    .meta
                    .pg_catalog_rows(&relation.name, relation.id, &self.session));
            }
            return Ok(self.meta.system_rows(&relation.name));
        }
        let mut rows = self.rows.lock();
        match rows.get_mut(&relation.id) {
            Some((n, _)) if *n > 1 => {
                *n -= 1;
                Ok(rows[&relation.id].1.clone())
            }
            Some(_) => Ok(rows
                .remove(&relation.id)
                .map(|(_, r)| r)
                .unwrap_or_default()),
            None => Err(BatchError::internal(format!(
                "relation \"{}\" was not read before the query ran",
                relation.name
            ))),
        }
    }
}

pub struct LocalSession {
    meta: Arc<Meta>,
    /// The user and database the client connected as.
    user: String,
    database: String,
    /// `pg_backend_pid()`.
    backend_pid: i32,
    vars: Mutex<Vars>,
    /// The failure generation of the first change this session wrote
    /// since its last FLUSH: a FLUSH after a failure cannot vouch for it.
    unflushed: Mutex<Option<u64>>,
}

pub struct LocalSessionFactory {
    pub meta: Arc<Meta>,
}

impl SessionFactory for LocalSessionFactory {
    fn new_session(&self, user: &str, database: &str) -> Arc<dyn Session> {
        static NEXT_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);
        Arc::new(LocalSession {
            meta: self.meta.clone(),
            user: if user.is_empty() { "root" } else { user }.to_string(),
            database: if database.is_empty() { "dev" } else { database }.to_string(),
            backend_pid: NEXT_PID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            vars: Mutex::new(Vars::default()),
            unflushed: Mutex::new(None),
        })
    }

    fn password_verifier(&self, user: &str) -> Option<String> {
        let user = if user.is_empty() { "root" } else { user };
        self.meta.user_verifier(user)
    }
}

fn command(tag: impl Into<String>) -> StatementResult {
    StatementResult::Command { tag: tag.into() }
}

fn text(s: impl Into<Arc<str>>) -> Datum {
    Some(ScalarValue::Varchar(s.into()))
}

fn int(v: i32) -> Datum {
    Some(ScalarValue::Int32(v))
}

/// Result columns from `(name, type)` pairs.
fn fields(columns: &[(&str, DataType)]) -> Vec<Field> {
    columns.iter().map(|(n, t)| Field::new(*n, *t)).collect()
}

fn rows_result(fields: Vec<Field>, rows: Vec<Row>) -> StatementResult {
    let tag = format!("SELECT {}", rows.len());
    StatementResult::Rows { fields, rows, tag }
}

/// The result columns of a query: the plan's types under the bound names.
fn query_fields(plan: &LogicalPlan, names: Vec<String>) -> Vec<Field> {
    plan.fields()
        .into_iter()
        .zip(names)
        .map(|(f, n)| Field::new(n, f.data_type))
        .collect()
}

impl LocalSession {
    fn catalog(&self) -> MetaCatalog<'_> {
        MetaCatalog {
            meta: &self.meta,
            session: self.session_info(false),
        }
    }

    /// The session as statements see it; `now()` is the time of this call.
    /// The binder needs only `search_path` of the settings; `all` lists
    /// every one (for `pg_settings`).
    fn session_info(&self, all: bool) -> SessionInfo {
        SessionInfo {
            user: self.user.clone(),
            database: self.database.clone(),
            settings: if all {
                self.all_vars()
            } else {
                vec![("search_path".into(), self.vars.lock().search_path())]
            },
            statement_time: chrono::Utc::now().naive_utc(),
            backend_pid: self.backend_pid,
        }
    }

    async fn execute(&self, stmt: &Statement, params: &ParamContext) -> FResult<StatementResult> {
        let zone = self.vars.lock().time_zone();
        let bound = ebbflow_expr::zoned::with_session_zone(&zone, || {
            ebbflow_sql::bind(stmt, &self.catalog(), params)
        })?;
        self.execute_bound(bound).await
    }

    async fn execute_bound(&self, bound: BoundStatement) -> FResult<StatementResult> {
        match bound {
            BoundStatement::Query { plan, names } => {
                let scan =
                    MetaScan::prefetch(&self.meta, || self.session_info(true), &plan).await?;
                let rows = batch::execute(&plan, &scan)?;
                Ok(rows_result(query_fields(&plan, names), rows))
            }
            BoundStatement::CopyFrom {
                table,
                columns,
                options,
            } => Ok(Self::copy_from(table, columns, options)),
            BoundStatement::CopyTo {
                plan,
                names,
                options,
            } => self.copy_to(&plan, names, &options).await,
            BoundStatement::CreateTable {
                name,
                columns,
                pk,
                with_options,
                if_not_exists,
                append_only,
                watermark,
                on_conflict,
            } => {
                if !self.name_taken(&name, if_not_exists)? {
                    self.create_table(
                        name,
                        columns,
                        pk,
                        with_options,
                        append_only,
                        watermark,
                        on_conflict,
                    )
                    .await?;
                }
                Ok(command("CREATE TABLE"))
            }
            BoundStatement::CreateSource {
                name,
                columns,
                with_options,
                if_not_exists,
                watermark,
            } => {
                if !self.name_taken(&name, if_not_exists)? {
                    ddl::create_source(&self.meta, name, columns, with_options, watermark).await?;
                }
                Ok(command("CREATE SOURCE"))
            }
            BoundStatement::CreateMaterializedView {
                name,
                plan,
                column_names,
                definition,
                with_options,
                if_not_exists,
                views,
                emit_on_window_close,
            } => {
                if !self.name_taken(&name, if_not_exists)? {
                    let emit = if emit_on_window_close {
                        Emit::OnWindowClose
                    } else {
                        Emit::OnUpdate
                    };
                    self.create_mv(
                        name,
                        &plan,
                        &column_names,
                        definition,
                        with_options,
                        views,
                        emit,
                    )
                    .await?;
                }
                Ok(command("CREATE MATERIALIZED VIEW"))
            }
            BoundStatement::CreateView {
                name,
                columns,
                definition,
                upstreams,
                if_not_exists,
                or_replace,
            } => {
                if or_replace || !self.name_taken(&name, if_not_exists)? {
                    self.meta
                        .create_view(name, columns, definition, upstreams, or_replace)
                        .await?;
                }
                Ok(command("CREATE VIEW"))
            }
            BoundStatement::Drop {
                kind,
                name,
                if_exists,
                cascade,
            } => self.drop(kind, &name, if_exists, cascade).await,
            BoundStatement::Insert { table, source } => self.insert(&table, &source).await,
            BoundStatement::Update {
                table,
                filter,
                assignments,
            } => self.update(&table, filter.as_ref(), &assignments).await,
            BoundStatement::Delete { table, filter } => self.delete(&table, filter.as_ref()).await,
            BoundStatement::Flush => {
                let since = self.unflushed.lock().take();
                match since {
                    Some(g) => self.meta.flush_since(g).await?,
                    None => self.meta.flush().await?,
                };
                Ok(command("FLUSH"))
            }
            BoundStatement::SetVariable { name, value } => {
                self.set_var(&name, value)?;
                Ok(command("SET"))
            }
            BoundStatement::ShowVariable { name } => self.show_var(name),
            BoundStatement::ShowAll => Ok(self.show_all()),
            BoundStatement::ShowCluster => Ok(self.show_cluster()),
            BoundStatement::CreateUser {
                name,
                password,
                if_not_exists,
            } => {
                let exists = self.meta.user_names().contains(&name);
                if !(exists && if_not_exists) {
                    self.meta.create_user(&name, password.as_deref()).await?;
                }
                Ok(command("CREATE ROLE"))
            }
            BoundStatement::AlterUserPassword { name, password } => {
                self.meta
                    .set_user_password(&name, password.as_deref())
                    .await?;
                Ok(command("ALTER ROLE"))
            }
            BoundStatement::DropUser { name, if_exists } => {
                self.meta.drop_user(&name, if_exists).await?;
                Ok(command("DROP ROLE"))
            }
            BoundStatement::ShowCreate { name, sql } => Ok(rows_result(
                fields(&[
                    ("Name", DataType::Varchar),
                    ("Create Sql", DataType::Varchar),
                ]),
                vec![vec![text(name), text(sql)]],
            )),
            BoundStatement::ShowFragments { name } => self.show_fragments(name),
            BoundStatement::ShowActors { name } => self.show_actors(name),
            BoundStatement::Explain { inner } => self.explain(*inner),
            BoundStatement::TransactionControl { tag } => Ok(command(tag)),
            BoundStatement::Deallocate { all } => {
                Ok(command(if all { "DEALLOCATE ALL" } else { "DEALLOCATE" }))
            }
            BoundStatement::ResetAll { tag } => {
                *self.vars.lock() = Vars::default();
                Ok(command(tag))
            }
            BoundStatement::AlterSystemSet { name, value } => {
                self.alter_system_set(&name, &value)?;
                Ok(command("ALTER SYSTEM"))
            }
            BoundStatement::AlterParallelism {
                target,
                parallelism,
            } => self.alter_parallelism(target, parallelism.into()).await,
            BoundStatement::Reschedule { plan, dry_run } => self.reschedule(&plan, dry_run).await,
            BoundStatement::DrainWorker { worker_id, dry_run } => {
                self.drain_worker(worker_id, dry_run).await
            }
            BoundStatement::AddWorker { parallel_units } => self.add_worker(parallel_units).await,
            BoundStatement::RemoveWorker { worker_id } => {
                self.meta.remove_worker(worker_id).await?;
                Ok(command("ALTER SYSTEM"))
            }
            BoundStatement::RestartWorker { worker_id } => {
                self.meta.restart_worker(worker_id).await?;
                Ok(command("ALTER SYSTEM"))
            }
        }
    }
}

#[async_trait]
impl Session for LocalSession {
    fn time_zone_setting(&self) -> String {
        self.vars.lock().time_zone()
    }

    fn time_zone(&self) -> ebbflow_common::Zone {
        let setting = self.vars.lock().time_zone();
        ebbflow_common::Zone::for_setting(&setting).map_or(ebbflow_common::Zone::UTC, |(z, _)| z)
    }

    async fn run_simple(&self, sql: &str) -> (Vec<StatementResult>, Option<FrontendError>) {
        let stmts = match ebbflow_sql::parse(sql) {
            Ok(s) => s,
            Err(e) => return (vec![], Some(e.into())),
        };
        if stmts.is_empty() {
            return (vec![StatementResult::Empty], None);
        }
        let mut results = Vec::new();
        for (i, s) in stmts.iter().enumerate() {
            match self.execute(s, &ParamContext::default()).await {
                Ok(StatementResult::CopyIn(_)) if i + 1 < stmts.len() => {
                    let e = FrontendError::new(
                        ErrorKind::FeatureNotSupported,
                        "COPY FROM STDIN must be the last statement of a query string",
                    );
                    return (results, Some(e));
                }
                Ok(r) => results.push(r),
                Err(e) => return (results, Some(e)),
            }
        }
        (results, None)
    }

    async fn copy_in(&self, copy: CopyIn, data: Vec<u8>) -> Result<StatementResult, FrontendError> {
        self.apply_copy(copy, data).await
    }

    async fn describe(
        &self,
        sql: &str,
        param_types: &[Option<DataType>],
    ) -> Result<(Vec<DataType>, Vec<Field>), FrontendError> {
        let stmts = ebbflow_sql::parse(sql)?;
        let Some(stmt) = stmts.first() else {
            return Ok((vec![], vec![]));
        };
        let zone = self.vars.lock().time_zone();
        let (bound, types) = ebbflow_expr::zoned::with_session_zone(&zone, || {
            ebbflow_sql::describe(stmt, &self.catalog(), param_types)
        })?;
        let fields = match bound {
            BoundStatement::Query { plan, names } => query_fields(&plan, names),
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
        let stmts = ebbflow_sql::parse(sql)?;
        match stmts.first() {
            None => Ok(StatementResult::Empty),
            Some(s) => self.execute(s, &params).await,
        }
    }
}
