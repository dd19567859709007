//! Opening the SQLite or PostgreSQL pool, and the small dialect layer the
//! store's statements run through (placeholders, transactions, rows,
//! one-line causes with passwords redacted).

use super::*;

/// Opens the pool for `url` and creates the schema; the error is a cause.
pub(super) async fn open(url: &str, shown: &str) -> Result<MetaStore, String> {
    let writer: Arc<str> = format!("{}-{:016x}", std::process::id(), rand::random::<u64>()).into();
    let backend = if url.starts_with("sqlite:") {
        open_sqlite(url).await?
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        open_postgres(url).await?
    } else {
        return Err("unsupported url scheme, expected sqlite:// or postgres://".into());
    };
    let (backend, probe) = backend;
    let store = MetaStore {
        backend,
        writer,
        shown_url: shown.into(),
    };
    let init = store.init_schema().await;
    // The probe connection kept an in-memory SQLite database alive until the
    // pool had its own connection; it is not needed any more.
    probe.close().await;
    match init {
        Ok(()) => Ok(store),
        Err(Failure::Db(cause)) => Err(format!("schema setup: {cause}")),
        Err(Failure::Fenced { .. }) => Err("schema setup: unexpected fencing".into()),
    }
}

/// A first connection opened directly (not through the pool), so that its
/// error is the real cause (the pool would retry a refused connection until
/// its timeout and then only say it timed out).
pub(super) enum Probe {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl Probe {
    pub(super) async fn close(self) {
        let result = match self {
            Probe::Sqlite(c) => c.close().await,
            Probe::Postgres(c) => c.close().await,
        };
        if let Err(e) = result {
            tracing::debug!(error = %e, "meta store: closing the probe connection failed");
        }
    }
}

pub(super) async fn open_sqlite(url: &str) -> Result<(Backend, Probe), String> {
    let rest = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:");
    let (database, params) = match rest.split_once('?') {
        Some((d, p)) => (d, p),
        None => (rest, ""),
    };
    let in_memory = database == ":memory:"
        || database.is_empty()
        || params.split('&').any(|p| p == "mode=memory");
    let mut options = SqliteConnectOptions::from_str(url)
        .map_err(|e| format!("bad sqlite url: {}", cause(&e)))?
        .busy_timeout(SQLITE_BUSY_TIMEOUT);
    if !in_memory {
        if let Some(dir) = options.get_filename().parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create directory {}: {e}", dir.display()))?;
            }
        }
        options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full);
    }
    let mut probe = options.connect().await.map_err(|e| cause(&e))?;
    if !in_memory {
        let mode: String = sqlx::query("PRAGMA journal_mode")
            .fetch_one(&mut probe)
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|e| cause(&e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(
                journal_mode = %mode,
                "meta store: sqlite file is not in WAL mode (filesystem without shared memory?); \
                 commits stay durable but readers block writers"
            );
        }
    }
    let pool_options = SqlitePoolOptions::new().acquire_timeout(ACQUIRE_TIMEOUT);
    let pool_options = if in_memory {
        // An in-memory database lives as long as one connection to it: keep
        // exactly one, forever (one also avoids shared-cache table locks).
        pool_options
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
    } else {
        pool_options.max_connections(4)
    };
    let pool = pool_options.connect_lazy_with(options);
    Ok((Backend::Sqlite(pool), Probe::Sqlite(probe)))
}

pub(super) async fn open_postgres(url: &str) -> Result<(Backend, Probe), String> {
    let options = PgConnectOptions::from_str(url)
        .map_err(|e| format!("bad postgres url: {}", cause(&e)))?
        .application_name("ebbflow-meta")
        // Durability must not depend on the server's default; notices such
        // as "relation already exists, skipping" are noise.
        .options([
            ("synchronous_commit", "on"),
            ("client_min_messages", "warning"),
        ]);
    let mut backoff = Duration::from_millis(50);
    let probe = loop {
        match options.connect().await {
            Ok(conn) => break conn,
            // The server is starting up or has too many connections: these
            // pass; the caller's 10 s bound ends the wait.
            Err(sqlx::Error::Database(e)) if e.is_transient_in_connect_phase() => {
                tracing::debug!(error = %e, "meta store: postgres not ready, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
            Err(e) => return Err(cause(&e)),
        }
    };
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .idle_timeout(Duration::from_secs(300))
        .connect_lazy_with(options);
    Ok((Backend::Postgres(pool), Probe::Postgres(probe)))
}

/// What differs between the backends; everything else is shared SQL.
pub(super) struct Dialect {
    /// Starts a read-write transaction whose CAS cannot interleave with
    /// another writer.
    pub(super) begin_write: &'static str,
    /// Starts a read-only transaction that reads one snapshot.
    pub(super) begin_read: &'static str,
    /// Creates the catalog table (blob type).
    pub(super) create_catalog: &'static str,
    /// Serializes schema creation (`$1` is the lock key), where needed.
    pub(super) schema_lock: Option<&'static str>,
}

/// SQLite: `BEGIN IMMEDIATE` takes the write lock up front (waiting up to
/// the busy timeout), so a read-then-write transaction cannot fail with
/// `SQLITE_BUSY_SNAPSHOT`; a deferred `BEGIN` reads one WAL snapshot.
pub(super) static SQLITE: Dialect = Dialect {
    begin_write: "BEGIN IMMEDIATE",
    begin_read: "BEGIN",
    create_catalog: "CREATE TABLE IF NOT EXISTS ebbflow_catalog (\
                     id INTEGER PRIMARY KEY CHECK (id = 1), snapshot BLOB)",
    schema_lock: None,
};

/// PostgreSQL: `READ COMMITTED` for writes, explicitly, so a server whose
/// default is `SERIALIZABLE` does not turn a lost CAS race into a
/// serialization failure; `REPEATABLE READ` read-only for a consistent load
/// (read-only transactions never fail to serialize).
pub(super) static POSTGRES: Dialect = Dialect {
    begin_write: "BEGIN ISOLATION LEVEL READ COMMITTED",
    begin_read: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    create_catalog: "CREATE TABLE IF NOT EXISTS ebbflow_catalog (\
                     id INTEGER PRIMARY KEY CHECK (id = 1), snapshot BYTEA)",
    schema_lock: Some("SELECT pg_advisory_xact_lock($1)"),
};

/// A bind value; the same list binds to either backend.
#[derive(Clone, Copy)]
pub(super) enum Val<'a> {
    I64(i64),
    Text(&'a str),
    OptText(Option<&'a str>),
    Blob(&'a [u8]),
}

/// SQL text: constant (prepared once and cached per connection) or built
/// for a batch size (run unprepared, so batch sizes do not fill the cache).
pub(super) enum Sql {
    Static(&'static str),
    Dynamic(String),
}

/// An open transaction on either backend.
pub(super) enum Tx {
    Sqlite(Transaction<'static, sqlx::Sqlite>),
    Postgres(Transaction<'static, sqlx::Postgres>),
}

/// A result row from either backend.
pub(super) enum DbRow {
    Sqlite(SqliteRow),
    Postgres(PgRow),
}

/// Builds a `sqlx::query` for `$sql` with `$args` bound in order; a macro
/// because the query type differs per backend while the code does not.
macro_rules! query_with_args {
    ($sql:expr, $args:expr) => {{
        let query = match $sql {
            Sql::Static(s) => sqlx::query(s),
            Sql::Dynamic(s) => sqlx::query(AssertSqlSafe(s)).persistent(false),
        };
        $args.iter().fold(query, |q, v| match *v {
            Val::I64(x) => q.bind(x),
            Val::Text(s) => q.bind(s),
            Val::OptText(s) => q.bind(s),
            Val::Blob(b) => q.bind(b),
        })
    }};
}

impl Tx {
    /// Runs a statement; returns the number of rows it changed.
    pub(super) async fn execute(&mut self, sql: Sql, args: &[Val<'_>]) -> Result<u64, sqlx::Error> {
        Ok(match self {
            Tx::Sqlite(tx) => query_with_args!(sql, args)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
            Tx::Postgres(tx) => query_with_args!(sql, args)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
        })
    }

    pub(super) async fn fetch_all(
        &mut self,
        sql: Sql,
        args: &[Val<'_>],
    ) -> Result<Vec<DbRow>, sqlx::Error> {
        Ok(match self {
            Tx::Sqlite(tx) => query_with_args!(sql, args)
                .fetch_all(&mut **tx)
                .await?
                .into_iter()
                .map(DbRow::Sqlite)
                .collect(),
            Tx::Postgres(tx) => query_with_args!(sql, args)
                .fetch_all(&mut **tx)
                .await?
                .into_iter()
                .map(DbRow::Postgres)
                .collect(),
        })
    }

    pub(super) async fn fetch_optional(
        &mut self,
        sql: Sql,
        args: &[Val<'_>],
    ) -> Result<Option<DbRow>, sqlx::Error> {
        Ok(match self {
            Tx::Sqlite(tx) => query_with_args!(sql, args)
                .fetch_optional(&mut **tx)
                .await?
                .map(DbRow::Sqlite),
            Tx::Postgres(tx) => query_with_args!(sql, args)
                .fetch_optional(&mut **tx)
                .await?
                .map(DbRow::Postgres),
        })
    }

    pub(super) async fn commit(self) -> Result<(), Failure> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await?,
            Tx::Postgres(tx) => tx.commit().await?,
        }
        Ok(())
    }

    pub(super) async fn rollback(self) -> Result<(), Failure> {
        match self {
            Tx::Sqlite(tx) => tx.rollback().await?,
            Tx::Postgres(tx) => tx.rollback().await?,
        }
        Ok(())
    }
}

impl DbRow {
    pub(super) fn i64(&self, index: usize) -> Result<i64, Failure> {
        Ok(match self {
            DbRow::Sqlite(row) => row.try_get(index)?,
            DbRow::Postgres(row) => row.try_get(index)?,
        })
    }

    pub(super) fn text(&self, index: usize) -> Result<String, Failure> {
        Ok(match self {
            DbRow::Sqlite(row) => row.try_get(index)?,
            DbRow::Postgres(row) => row.try_get(index)?,
        })
    }

    pub(super) fn opt_blob(&self, index: usize) -> Result<Option<Vec<u8>>, Failure> {
        Ok(match self {
            DbRow::Sqlite(row) => row.try_get(index)?,
            DbRow::Postgres(row) => row.try_get(index)?,
        })
    }
}

/// `$first, $first+1, ...` (`n` placeholders).
pub(super) fn placeholders(n: usize, first: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn to_i64(v: u64, what: &str) -> Result<i64, Failure> {
    i64::try_from(v).map_err(|_| Failure::Db(format!("{what} {v} is above the storable maximum")))
}

pub(super) fn to_u64(v: i64, what: &str) -> Result<u64, Failure> {
    u64::try_from(v).map_err(|_| Failure::Db(format!("corrupt {what} {v}")))
}

/// A sqlx error as one line, with PostgreSQL's SQLSTATE or SQLite's result
/// code when there is one.
pub(super) fn cause(e: &sqlx::Error) -> String {
    let text = match e {
        sqlx::Error::Database(db) => {
            let kind = if db
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .is_some()
            {
                "sqlstate"
            } else {
                "sqlite code"
            };
            match db.code() {
                Some(code) => format!("{} ({kind} {code})", db.message()),
                None => db.message().to_string(),
            }
        }
        sqlx::Error::PoolTimedOut => format!(
            "no database connection within {}s (server down or unreachable?)",
            ACQUIRE_TIMEOUT.as_secs()
        ),
        other => other.to_string(),
    };
    one_line(&text)
}

/// Joins the lines of `s` with spaces so that every message is one line.
pub(super) fn one_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `url` with the password of its user info and any `password=` query
/// parameter replaced by `***`.
pub(super) fn redact_url(url: &str) -> String {
    let (head, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => return redact_query(url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let mut out = String::from(head);
    match authority.rfind('@') {
        Some(at) => {
            let (userinfo, host) = authority.split_at(at);
            match userinfo.split_once(':') {
                Some((user, _password)) => {
                    out.push_str(user);
                    out.push_str(":***");
                }
                None => out.push_str(userinfo),
            }
            out.push_str(host);
        }
        None => out.push_str(authority),
    }
    out.push_str(&redact_query(tail));
    out
}

/// Redacts the values of query parameters whose name contains `password`.
pub(super) fn redact_query(s: &str) -> String {
    let Some((before, query)) = s.split_once('?') else {
        return s.to_string();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if k.to_ascii_lowercase().contains("password") => format!("{k}=***"),
            _ => p.to_string(),
        })
        .collect();
    let mut out = format!("{before}?{}", params.join("&"));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}
