//! The durable meta store: meta's state in a SQL database (SQLite or
//! PostgreSQL) through `sqlx`.
//!
//! # What is stored
//!
//! Meta commits each checkpoint epoch by writing, in **one** SQL
//! transaction, the new state-store version (its id, the committed epoch and
//! the live state files on the object store) together with the catalog
//! snapshot. Because it is one transaction, a crash leaves either the old
//! version and catalog or the new ones, never a mix: the catalog never names
//! a table whose state files are not in the version, and vice versa.
//!
//! # Fencing
//!
//! Every commit is a compare-and-set on the version id: the transaction
//! starts with `UPDATE ebbflow_version ... WHERE version_id = <prev>` and
//! only goes on when exactly one row was updated. A second meta (a stale
//! leader that lost its lease, or a copy started by mistake on the same
//! store) still believes in an older version, so its update matches no row
//! and its commit is rolled back whole with [`MetaStoreError::Fenced`]: it
//! can never overwrite or interleave with the live meta's versions, and
//! should stop. On PostgreSQL the CAS runs under `READ COMMITTED`, where a
//! concurrent `UPDATE` of the same row waits for the other transaction and
//! then re-checks the `WHERE` clause against the committed row, so exactly
//! one of two racing commits wins and the loser sees 0 rows (no
//! serialization failures to retry). On SQLite the transaction starts with
//! `BEGIN IMMEDIATE`, which takes the single write lock before reading, so
//! the check and the write cannot interleave with another writer.
//!
//! # Lost replies
//!
//! A commit can land on the server while its reply is lost (connection cut
//! after `COMMIT` was sent, timeout). The caller cannot tell, so it retries
//! the same update. Each [`MetaStore`] has a random writer id that is stored
//! with the version; when a retry's CAS fails but the stored version is
//! exactly the one this update writes, written by this same instance with
//! the same committed epoch, the earlier attempt landed and the retry
//! returns `Ok(())` instead of a spurious [`MetaStoreError::Fenced`].
//!
//! # Durability
//!
//! SQLite files are opened in WAL mode with `synchronous = FULL`: every
//! commit fsyncs the WAL before it returns, so a commit that returned
//! survives power loss (`NORMAL`, the usual WAL setting, may lose the last
//! commits). PostgreSQL sessions force `synchronous_commit = on`, so a
//! server configured with it off for speed still flushes meta's commits to
//! its WAL before acknowledging them.
//!
//! # Why an enum over the pools and not `sqlx::Any`
//!
//! ebbflow builds sqlx without its `any` feature, so `sqlx::Any` is not
//! there to use. It would not help much anyway: the SQLite durability and
//! locking knobs (WAL, `synchronous = FULL`, busy timeout, creating the
//! file, `BEGIN IMMEDIATE`) and PostgreSQL's session options are set
//! through each driver's typed connect options, and there is no runtime
//! driver registry (`install_default_drivers`) to forget. So [`MetaStore`]
//! holds either a `SqlitePool` or a `PgPool`, and a small private adapter
//! (`Tx`, `Val`, `DbRow`) runs the same SQL text on either. The SQL and the
//! CAS logic exist once: both backends accept `$1, $2, ...` placeholders
//! (sqlx's SQLite driver binds `$N` by number), `BIGINT`, `TEXT`,
//! `COALESCE` and `ON CONFLICT DO NOTHING`. What differs is a `Dialect`:
//! the `BEGIN` statements, the blob type of the catalog column and a schema
//! lock.
//!
//! # Schema (DDL)
//!
//! ```text
//! CREATE TABLE ebbflow_schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL);
//! CREATE TABLE ebbflow_version (id INTEGER PRIMARY KEY CHECK (id = 1), version_id BIGINT NOT NULL,
//!     committed_epoch BIGINT NOT NULL, writer TEXT NOT NULL, extra TEXT NOT NULL, updated_at BIGINT NOT NULL);
//! CREATE TABLE ebbflow_state_files (object_id TEXT PRIMARY KEY, level BIGINT NOT NULL,
//!     epoch BIGINT NOT NULL, size BIGINT NOT NULL, info TEXT NOT NULL);
//! CREATE TABLE ebbflow_catalog (id INTEGER PRIMARY KEY CHECK (id = 1), snapshot BLOB /* BYTEA on PostgreSQL */);
//! ```
//!
//! `u64` values are stored as `BIGINT` (`i64`); a value above `i64::MAX` is
//! refused rather than wrapped, so ordering and equality in SQL stay right.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, PgPool, Row, SqlitePool, Transaction};

mod backend;
use backend::*;

/// The schema version this code writes and understands.
const SCHEMA_VERSION: i64 = 1;
/// Upper bound for [`MetaStore::connect`], schema creation included.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an operation waits for a pooled connection (while the server is
/// down the pool keeps retrying to connect until this expires).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// Upper bound for one [`MetaStore::load`] or [`MetaStore::commit`], so a
/// server that stops answering (no reset, just silence) cannot hang meta.
const OP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long SQLite waits for another connection's write lock.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Rows per multi-row `INSERT` (5 parameters each; far below the
/// parameter limits of SQLite, 32766, and PostgreSQL, 65535).
const INSERT_CHUNK: usize = 200;
/// Ids per `DELETE ... WHERE object_id IN (...)`.
const DELETE_CHUNK: usize = 500;
/// Key of the PostgreSQL advisory lock that serializes schema creation by
/// metas connecting at the same time (`CREATE TABLE IF NOT EXISTS` alone
/// races on PostgreSQL's catalogs).
const PG_SCHEMA_LOCK_KEY: i64 = 0x0065_6262_666c_6f77; // "ebbflow" in ASCII

/// Errors of the meta store.
///
/// Every message is one line and names the store by its URL with any
/// password redacted.
#[derive(Debug, thiserror::Error)]
pub enum MetaStoreError {
    /// The store could not be opened: bad URL, unsupported scheme,
    /// unreachable server, authentication failure, a SQLite file or its
    /// directory that cannot be created, a schema newer than this binary
    /// understands, or connecting took longer than 10 s.
    #[error("{0}")]
    Connect(String),
    /// The compare-and-set of a commit failed: the stored version is not the
    /// one this meta expected, so another meta has committed since. Nothing
    /// of the rejected commit was written; the meta that gets this has been
    /// fenced off and must stop writing.
    #[error("meta store fenced: expected version {expected} but the store has version {found}")]
    Fenced {
        /// The version id this meta based its update on.
        expected: u64,
        /// The version id actually stored.
        found: u64,
    },
    /// Any other error while running: the server went away or did not answer
    /// within the time bound, disk full, constraint violation (such as adding
    /// a state file that is already live), a corrupt row, or an update whose
    /// values cannot be stored (a `u64` above `i64::MAX`, a version id that
    /// does not grow). A commit that returned `Io` may or may not have landed;
    /// retrying the same update with the same [`MetaStore`] is safe.
    #[error("{0}")]
    Io(String),
}

/// One live state file of the state-store version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRow {
    /// The file's id on the object store; unique among live files.
    pub object_id: String,
    /// The LSM level of the file.
    pub level: u32,
    /// The epoch the file was written for.
    pub epoch: u64,
    /// The file's size in bytes.
    pub size: u64,
    /// Opaque JSON owned by the state store (key range, stats...).
    pub info: String,
}

/// Everything committed, as [`MetaStore::load`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The id of the stored version; 0 on a fresh store.
    pub version_id: u64,
    /// The last committed checkpoint epoch; 0 on a fresh store.
    pub committed_epoch: u64,
    /// The live state files, ordered by `object_id`.
    pub files: Vec<FileRow>,
    /// Opaque JSON owned by the state store; `""` on a fresh store.
    pub extra: String,
    /// The catalog snapshot; `None` until a commit sets one.
    pub catalog: Option<Vec<u8>>,
}

/// One commit: the delta from version `prev_version_id` to `version_id`.
#[derive(Debug, Clone, Copy)]
pub struct VersionUpdate<'a> {
    /// The version this update is based on (the CAS's expected value).
    pub prev_version_id: u64,
    /// The version this update creates; must be greater than
    /// `prev_version_id`.
    pub version_id: u64,
    /// The checkpoint epoch this version commits.
    pub committed_epoch: u64,
    /// State files that become live. An id that is already live fails the
    /// commit with [`MetaStoreError::Io`].
    pub add_files: &'a [FileRow],
    /// Ids of state files that stop being live. Removals are applied before
    /// additions; an id that is not live is ignored (with a warning).
    pub remove_files: &'a [String],
    /// Replaces the stored extra JSON when `Some`; kept when `None`.
    pub extra: Option<&'a str>,
    /// Replaces the stored catalog snapshot when `Some`; kept when `None`.
    pub catalog: Option<&'a [u8]>,
}

/// The meta store: a pool of connections to SQLite or PostgreSQL.
///
/// Cheap to clone; clones share the pool and the writer id, so they count as
/// the same writer for the lost-reply check of [`MetaStore::commit`].
#[derive(Clone)]
pub struct MetaStore {
    backend: Backend,
    /// Random id of this instance, stored with each version it writes.
    writer: Arc<str>,
    /// The URL with any password redacted.
    shown_url: Arc<str>,
}

#[derive(Clone)]
enum Backend {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl fmt::Debug for MetaStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetaStore")
            .field("url", &self.shown_url)
            .field("writer", &self.writer)
            .finish()
    }
}

/// Why an internal step failed; the public methods turn it into a
/// [`MetaStoreError`] with the store's URL and the operation.
enum Failure {
    /// A one-line cause.
    Db(String),
    Fenced {
        expected: u64,
        found: u64,
    },
}

impl From<sqlx::Error> for Failure {
    fn from(e: sqlx::Error) -> Self {
        Failure::Db(cause(&e))
    }
}

impl MetaStore {
    /// Opens the store at `url` and creates its schema if absent.
    ///
    /// - `sqlite://path` (relative) or `sqlite:///abs/path`: the file and its
    ///   parent directories are created if missing. The file is put in WAL
    ///   mode and every connection uses `synchronous = FULL`, so a commit
    ///   that returned survives power loss.
    /// - `sqlite::memory:`: a private in-memory database, for tests.
    /// - `postgres://user[:password]@host:port/db` (or `postgresql://`).
    ///
    /// Schema creation is idempotent and serialized between metas connecting
    /// at the same time; a store whose schema version is newer than this
    /// binary's is refused. The whole call is bounded by 10 s. Every failure
    /// is [`MetaStoreError::Connect`] with a one-line message naming the URL
    /// (password redacted) and the cause.
    pub async fn connect(url: &str) -> Result<MetaStore, MetaStoreError> {
        let shown = redact_url(url);
        let fail = |cause: &str| {
            MetaStoreError::Connect(format!(
                "cannot connect to meta store {shown}: {}",
                one_line(cause)
            ))
        };
        let started = Instant::now();
        let store = match tokio::time::timeout(CONNECT_TIMEOUT, open(url, &shown)).await {
            Ok(Ok(store)) => store,
            Ok(Err(cause)) => return Err(fail(&cause)),
            Err(_) => {
                return Err(fail(&format!(
                    "timed out after {}s",
                    CONNECT_TIMEOUT.as_secs()
                )))
            }
        };
        tracing::info!(
            url = %store.shown_url,
            writer = %store.writer,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "meta store connected"
        );
        Ok(store)
    }

    /// Reads everything committed, as one consistent snapshot (a read
    /// transaction; `REPEATABLE READ` on PostgreSQL, so a commit landing
    /// meanwhile is seen whole or not at all). A fresh store has version 0,
    /// epoch 0, no files, extra `""` and no catalog.
    pub async fn load(&self) -> Result<Loaded, MetaStoreError> {
        self.bounded("load", self.load_inner()).await
    }

    /// Commits one version update in one transaction, with compare-and-set
    /// on `prev_version_id` (see the module docs for why):
    ///
    /// 1. `UPDATE` the version row to `version_id` / `committed_epoch` /
    ///    this instance's writer id (and `extra` when `Some`) where the
    ///    stored version id is `prev_version_id`; unless exactly one row
    ///    changed, roll back and return [`MetaStoreError::Fenced`], or
    ///    `Ok(())` when the stored version is this very update written
    ///    earlier by this instance (a retry after a lost reply);
    /// 2. delete the rows of `remove_files`, insert the rows of `add_files`;
    /// 3. replace the catalog snapshot when `catalog` is `Some`;
    /// 4. `COMMIT` (durable when it returns, see the module docs).
    ///
    /// Bounded by 30 s; on [`MetaStoreError::Io`] the commit may or may not
    /// have landed, and retrying the same update with this instance is safe.
    pub async fn commit(&self, u: &VersionUpdate<'_>) -> Result<(), MetaStoreError> {
        let started = Instant::now();
        self.bounded("commit", self.commit_inner(u)).await?;
        tracing::debug!(
            version_id = u.version_id,
            committed_epoch = u.committed_epoch,
            added = u.add_files.len(),
            removed = u.remove_files.len(),
            catalog = u.catalog.is_some(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "meta store commit"
        );
        Ok(())
    }

    /// The store's URL with any password redacted, for logs.
    pub fn describe(&self) -> String {
        self.shown_url.to_string()
    }

    /// Runs `fut` within [`OP_TIMEOUT`] and names the store and the
    /// operation in its error.
    async fn bounded<T>(
        &self,
        op: &str,
        fut: impl std::future::Future<Output = Result<T, Failure>>,
    ) -> Result<T, MetaStoreError> {
        let result = match tokio::time::timeout(OP_TIMEOUT, fut).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Db(format!(
                "no answer within {}s",
                OP_TIMEOUT.as_secs()
            ))),
        };
        result.map_err(|f| match f {
            Failure::Fenced { expected, found } => {
                tracing::warn!(
                    url = %self.shown_url,
                    expected,
                    found,
                    "meta store commit fenced: another meta committed"
                );
                MetaStoreError::Fenced { expected, found }
            }
            Failure::Db(cause) => MetaStoreError::Io(format!(
                "meta store {}: {op} failed: {}",
                self.shown_url,
                one_line(&cause)
            )),
        })
    }

    fn dialect(&self) -> &'static Dialect {
        match self.backend {
            Backend::Sqlite(_) => &SQLITE,
            Backend::Postgres(_) => &POSTGRES,
        }
    }

    async fn begin(&self, statement: &'static str) -> Result<Tx, Failure> {
        Ok(match &self.backend {
            Backend::Sqlite(pool) => Tx::Sqlite(pool.begin_with(statement).await?),
            Backend::Postgres(pool) => Tx::Postgres(pool.begin_with(statement).await?),
        })
    }

    /// Creates the schema if absent, in one transaction.
    async fn init_schema(&self) -> Result<(), Failure> {
        let dialect = self.dialect();
        let mut tx = self.begin(dialect.begin_write).await?;
        if let Some(lock) = dialect.schema_lock {
            tx.execute(Sql::Static(lock), &[Val::I64(PG_SCHEMA_LOCK_KEY)])
                .await?;
        }
        tx.execute(
            Sql::Static(
                "CREATE TABLE IF NOT EXISTS ebbflow_schema_version (\
                 id INTEGER PRIMARY KEY CHECK (id = 1), \
                 version BIGINT NOT NULL)",
            ),
            &[],
        )
        .await?;
        let stored = tx
            .fetch_optional(
                Sql::Static("SELECT version FROM ebbflow_schema_version WHERE id = 1"),
                &[],
            )
            .await?;
        if let Some(row) = stored {
            let version = row.i64(0)?;
            if version > SCHEMA_VERSION {
                return Err(Failure::Db(format!(
                    "the store has schema version {version} but this ebbflow understands \
                     only up to {SCHEMA_VERSION}; upgrade ebbflow"
                )));
            }
            if version < 1 {
                return Err(Failure::Db(format!(
                    "the store has invalid schema version {version}"
                )));
            }
        }
        for ddl in [
            "CREATE TABLE IF NOT EXISTS ebbflow_version (\
             id INTEGER PRIMARY KEY CHECK (id = 1), \
             version_id BIGINT NOT NULL, \
             committed_epoch BIGINT NOT NULL, \
             writer TEXT NOT NULL, \
             extra TEXT NOT NULL, \
             updated_at BIGINT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS ebbflow_state_files (\
             object_id TEXT PRIMARY KEY, \
             level BIGINT NOT NULL, \
             epoch BIGINT NOT NULL, \
             size BIGINT NOT NULL, \
             info TEXT NOT NULL)",
            dialect.create_catalog,
            "INSERT INTO ebbflow_version \
             (id, version_id, committed_epoch, writer, extra, updated_at) \
             VALUES (1, 0, 0, '', '', 0) ON CONFLICT (id) DO NOTHING",
            "INSERT INTO ebbflow_catalog (id, snapshot) VALUES (1, NULL) \
             ON CONFLICT (id) DO NOTHING",
        ] {
            tx.execute(Sql::Static(ddl), &[]).await?;
        }
        tx.execute(
            Sql::Static(
                "INSERT INTO ebbflow_schema_version (id, version) VALUES (1, $1) \
                 ON CONFLICT (id) DO NOTHING",
            ),
            &[Val::I64(SCHEMA_VERSION)],
        )
        .await?;
        tx.commit().await
    }

    async fn load_inner(&self) -> Result<Loaded, Failure> {
        let mut tx = self.begin(self.dialect().begin_read).await?;
        let version = tx
            .fetch_optional(
                Sql::Static(
                    "SELECT version_id, committed_epoch, extra FROM ebbflow_version WHERE id = 1",
                ),
                &[],
            )
            .await?
            .ok_or_else(|| Failure::Db("the version row is missing".into()))?;
        let version_id = to_u64(version.i64(0)?, "version_id")?;
        let committed_epoch = to_u64(version.i64(1)?, "committed_epoch")?;
        let extra = version.text(2)?;
        let rows = tx
            .fetch_all(
                Sql::Static(
                    "SELECT object_id, level, epoch, size, info FROM ebbflow_state_files \
                     ORDER BY object_id",
                ),
                &[],
            )
            .await?;
        let mut files = Vec::with_capacity(rows.len());
        for row in &rows {
            let level = row.i64(1)?;
            files.push(FileRow {
                object_id: row.text(0)?,
                level: u32::try_from(level)
                    .map_err(|_| Failure::Db(format!("corrupt state file level {level}")))?,
                epoch: to_u64(row.i64(2)?, "state file epoch")?,
                size: to_u64(row.i64(3)?, "state file size")?,
                info: row.text(4)?,
            });
        }
        let catalog = match tx
            .fetch_optional(
                Sql::Static("SELECT snapshot FROM ebbflow_catalog WHERE id = 1"),
                &[],
            )
            .await?
        {
            Some(row) => row.opt_blob(0)?,
            None => None,
        };
        tx.rollback().await?;
        Ok(Loaded {
            version_id,
            committed_epoch,
            files,
            extra,
            catalog,
        })
    }

    async fn commit_inner(&self, u: &VersionUpdate<'_>) -> Result<(), Failure> {
        if u.version_id <= u.prev_version_id {
            return Err(Failure::Db(format!(
                "invalid update: version id {} does not follow {}",
                u.version_id, u.prev_version_id
            )));
        }
        let version_id = to_i64(u.version_id, "version id")?;
        let prev_version_id = to_i64(u.prev_version_id, "previous version id")?;
        let committed_epoch = to_i64(u.committed_epoch, "committed epoch")?;
        let mut add = Vec::with_capacity(u.add_files.len());
        for f in u.add_files {
            add.push([
                Val::Text(&f.object_id),
                Val::I64(i64::from(f.level)),
                Val::I64(to_i64(f.epoch, "state file epoch")?),
                Val::I64(to_i64(f.size, "state file size")?),
                Val::Text(&f.info),
            ]);
        }
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);

        let mut tx = self.begin(self.dialect().begin_write).await?;
        let updated = tx
            .execute(
                Sql::Static(
                    "UPDATE ebbflow_version SET version_id = $1, committed_epoch = $2, \
                     writer = $3, extra = COALESCE($4, extra), updated_at = $5 \
                     WHERE id = 1 AND version_id = $6",
                ),
                &[
                    Val::I64(version_id),
                    Val::I64(committed_epoch),
                    Val::Text(&self.writer),
                    Val::OptText(u.extra),
                    Val::I64(now_ms),
                    Val::I64(prev_version_id),
                ],
            )
            .await?;
        if updated != 1 {
            let row = tx
                .fetch_optional(
                    Sql::Static(
                        "SELECT version_id, committed_epoch, writer FROM ebbflow_version \
                         WHERE id = 1",
                    ),
                    &[],
                )
                .await?
                .ok_or_else(|| Failure::Db("the version row is missing".into()))?;
            tx.rollback().await?;
            let found = row.i64(0)?;
            if found == version_id
                && row.i64(1)? == committed_epoch
                && *row.text(2)? == *self.writer
            {
                tracing::info!(
                    version_id = u.version_id,
                    "meta store commit already landed (retry after a lost reply)"
                );
                return Ok(());
            }
            return Err(Failure::Fenced {
                expected: u.prev_version_id,
                found: to_u64(found, "version_id")?,
            });
        }

        let mut removed = 0u64;
        for chunk in u.remove_files.chunks(DELETE_CHUNK) {
            let sql = format!(
                "DELETE FROM ebbflow_state_files WHERE object_id IN ({})",
                placeholders(chunk.len(), 1)
            );
            let args: Vec<Val<'_>> = chunk.iter().map(|id| Val::Text(id)).collect();
            removed += tx.execute(Sql::Dynamic(sql), &args).await?;
        }
        if removed != u.remove_files.len() as u64 {
            tracing::warn!(
                version_id = u.version_id,
                requested = u.remove_files.len(),
                removed,
                "meta store commit removed fewer state files than requested: some were not live"
            );
        }
        for chunk in add.chunks(INSERT_CHUNK) {
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| format!("({})", placeholders(5, 5 * i + 1)))
                .collect();
            let sql = format!(
                "INSERT INTO ebbflow_state_files (object_id, level, epoch, size, info) VALUES {}",
                rows.join(", ")
            );
            let args: Vec<Val<'_>> = chunk.iter().flatten().copied().collect();
            tx.execute(Sql::Dynamic(sql), &args).await?;
        }
        if let Some(catalog) = u.catalog {
            let n = tx
                .execute(
                    Sql::Static("UPDATE ebbflow_catalog SET snapshot = $1 WHERE id = 1"),
                    &[Val::Blob(catalog)],
                )
                .await?;
            if n != 1 {
                return Err(Failure::Db("the catalog row is missing".into()));
            }
        }
        tx.commit().await
    }
}

/// Backend-independent checks shared by the SQLite unit tests and the
/// PostgreSQL integration tests; public only for the latter.
#[doc(hidden)]
pub mod checks;

#[cfg(test)]
mod tests;
