//! Helpers shared by the integration tests: free ports, temp dirs, an
//! ebbflow server child process and a throwaway PostgreSQL 15 server.
//! `seaweed` is a throwaway S3 server; `stores` gives each ebbflow server
//! of a test its state and meta store (S3 + PostgreSQL when available).
//! `rows` runs statements and compares query results; `workload` is the
//! random SQL workload (tables, MVs, DML generator); `mirror` its
//! acknowledged state in PostgreSQL for tests that crash ebbflow; `driver` is how a seeded test runs (knobs, runtime, per-seed
//! loop, progress lines, statement logs).
//!
//! Every process started here is stopped when its guard is dropped, also
//! when the test panics, so a failing test never leaves servers behind.

#![allow(dead_code)]

pub mod cluster;
pub mod driver;
pub mod mirror;
pub mod rows;
pub mod seaweed;
pub mod stores;
pub mod workload;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A directory under the system temp dir, removed on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(prefix: &str) -> std::io::Result<TempDir> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path =
            std::env::temp_dir().join(format!("{prefix}-{}-{n}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(TempDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The last lines a child process printed, kept for failure reports.
#[derive(Clone, Default)]
pub struct LogTail {
    /// (lines printed so far, the last `KEEP` of them).
    lines: Arc<Mutex<(usize, VecDeque<String>)>>,
}

impl LogTail {
    // Enough for the actor-failure cascade of a recovery (a line per
    // actor of every job) to leave the line that caused it in view.
    const KEEP: usize = 5000;

    fn push(&self, line: String) {
        let mut guard = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let (seen, lines) = &mut *guard;
        if lines.len() == Self::KEEP {
            lines.pop_front();
        }
        lines.push_back(line);
        *seen += 1;
    }

    /// A position in the log, for [`LogTail::since`].
    pub fn mark(&self) -> usize {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// The lines printed after `mark` (of those still kept).
    pub fn since(&self, mark: usize) -> Vec<String> {
        let guard = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let (seen, lines) = &*guard;
        let new = seen.saturating_sub(mark).min(lines.len());
        lines.iter().skip(lines.len() - new).cloned().collect()
    }

    /// The last `n` lines, joined. A panic's backtrace frames count as
    /// one line, so the panic message stays in view.
    pub fn tail(&self, n: usize) -> String {
        let guard = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<String> = Vec::new();
        let mut frames = 0;
        for line in guard.1.iter().rev() {
            if is_backtrace_frame(line) {
                frames += 1;
                continue;
            }
            if frames > 0 {
                out.push(format!("  [{frames} backtrace lines]"));
                frames = 0;
            }
            out.push(line.clone());
        }
        if frames > 0 {
            out.push(format!("  [{frames} backtrace lines]"));
        }
        out.truncate(n);
        out.reverse();
        out.join("\n")
    }
}

/// `  12: some::function` or `             at src/file.rs:1:2`.
fn is_backtrace_frame(line: &str) -> bool {
    let t = line.trim_start();
    if t.len() == line.len() {
        return false;
    }
    t.starts_with("at ")
        || t.split_once(": ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Sends `signal` (`TERM`, `KILL`) to `pid` (no libc dependency: the
/// `kill` utility).
fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Sends SIGTERM to `pid`.
fn sigterm(pid: u32) {
    signal(pid, "TERM");
}

/// Sends SIGKILL to `pid`. For a kill from another thread or task while
/// the owner of the `Child` keeps it: the pid cannot be reused before the
/// owner reaps the child, so this never hits another process.
pub fn sigkill(pid: u32) {
    signal(pid, "KILL");
}

/// Waits up to `timeout` for the child to exit.
fn wait_timeout(child: &mut Child, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => return false,
        }
    }
    false
}

/// Path of the ebbflow binary: `EBBFLOW_BIN` or the one cargo built for us.
pub fn ebbflow_bin() -> PathBuf {
    match std::env::var_os("EBBFLOW_BIN") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_BIN_EXE_ebbflow")),
    }
}

/// Options of `ebbflow playground`.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    pub compute_nodes: usize,
    pub parallel_units: usize,
    pub barrier_interval_ms: u64,
    /// How long to wait for the `listening on` line.
    pub ready_timeout: Duration,
    /// `--state-store` URL (e.g. [`seaweed::SeaweedFs::url`]).
    pub state_store: Option<String>,
    /// `--meta-store` URL.
    pub meta_store: Option<String>,
    /// Extra environment of the server (e.g. [`seaweed::SeaweedFs::env`]).
    pub env: Vec<(String, String)>,
    /// Extra `playground` arguments (e.g. `--gc-grace-ms 0`).
    pub args: Vec<String>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        let barrier_interval_ms = std::env::var("EBBFLOW_BARRIER_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(100);
        ServerOptions {
            compute_nodes: 2,
            parallel_units: 2,
            barrier_interval_ms,
            ready_timeout: Duration::from_secs(60),
            state_store: None,
            meta_store: None,
            env: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// An `ebbflow playground` child process on a free loopback port.
pub struct EbbflowServer {
    child: Option<Child>,
    pub port: u16,
    pub log: LogTail,
    data_dir: PathBuf,
    /// The data dir when the server made its own (removed on drop);
    /// `None` for [`EbbflowServer::start_in`], whose dir outlives it.
    _own_dir: Option<TempDir>,
}

impl EbbflowServer {
    /// Starts a server on a fresh data dir and waits (up to 60 s) for its
    /// `listening on` line.
    pub fn start(opts: &ServerOptions) -> Result<EbbflowServer, String> {
        Self::start_with_retries(opts, None)
    }

    /// Starts a server on `data_dir`, which may hold the state of an
    /// earlier server (a restart), and waits for its `listening on` line.
    pub fn start_in(opts: &ServerOptions, data_dir: &Path) -> Result<EbbflowServer, String> {
        Self::start_with_retries(opts, Some(data_dir))
    }

    fn start_with_retries(
        opts: &ServerOptions,
        data_dir: Option<&Path>,
    ) -> Result<EbbflowServer, String> {
        let mut last_err = String::new();
        // A port found free can be taken before the server binds it: retry.
        // A server that hangs is not retried: the wait is bounded once.
        for _ in 0..3 {
            match Self::try_start(opts, data_dir) {
                Ok(s) => return Ok(s),
                Err((true, e)) => last_err = e,
                Err((false, e)) => return Err(e),
            }
        }
        Err(last_err)
    }

    /// Err((retry, message)).
    fn try_start(
        opts: &ServerOptions,
        dir: Option<&Path>,
    ) -> Result<EbbflowServer, (bool, String)> {
        let (data_dir, own_dir) = match dir {
            Some(d) => (d.to_path_buf(), None),
            None => {
                let t =
                    TempDir::new("ebbflow-test").map_err(|e| (true, format!("temp dir: {e}")))?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let port = free_port();
        let mut cmd = Command::new(ebbflow_bin());
        cmd.arg("playground");
        if let Some(url) = &opts.state_store {
            cmd.arg("--state-store").arg(url);
        }
        if let Some(url) = &opts.meta_store {
            cmd.arg("--meta-store").arg(url);
        }
        cmd.args(&opts.args);
        cmd.arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(&data_dir)
            .arg("--compute-nodes")
            .arg(opts.compute_nodes.to_string())
            .arg("--parallel-units")
            .arg(opts.parallel_units.to_string())
            .arg("--barrier-interval-ms")
            .arg(opts.barrier_interval_ms.to_string())
            .env(
                "RUST_LOG",
                std::env::var("EBBFLOW_LOG").unwrap_or_else(|_| "info".into()),
            )
            // Under RUST_BACKTRACE=1 the error a server exits with at start
            // would be followed by its capture backtrace, which pushes the
            // `Error:` line out of the log tail a failure shows. Panics
            // keep their backtraces.
            .env("RUST_LIB_BACKTRACE", "0")
            .envs(opts.env.iter().map(|(k, v)| (k, v)));
        Self::spawn_ready(cmd, port, data_dir, own_dir, opts.ready_timeout)
    }

    /// Runs `cmd` (an `ebbflow` command line) and waits up to `timeout`
    /// for its `listening on` line; `port` is its pgwire port (or, for a
    /// process without one, its RPC port). Err((retry, message)).
    pub fn spawn_ready(
        mut cmd: Command,
        port: u16,
        data_dir: PathBuf,
        own_dir: Option<TempDir>,
        timeout: Duration,
    ) -> Result<EbbflowServer, (bool, String)> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| (false, format!("spawn {}: {e}", ebbflow_bin().display())))?;

        let log = LogTail::default();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let pipes: Vec<Box<dyn std::io::Read + Send>> = vec![
            Box::new(child.stdout.take().expect("piped stdout")),
            Box::new(child.stderr.take().expect("piped stderr")),
        ];
        for pipe in pipes {
            let log = log.clone();
            let ready_tx = ready_tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    let ready = line.contains("listening on");
                    log.push(line);
                    if ready {
                        let _ = ready_tx.send(());
                    }
                }
            });
        }
        drop(ready_tx);

        let mut server = EbbflowServer {
            child: Some(child),
            port,
            log,
            data_dir,
            _own_dir: own_dir,
        };
        let deadline = Instant::now() + timeout;
        loop {
            match ready_rx.recv_timeout(Duration::from_millis(100)) {
                Ok(()) => return Ok(server),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // Both pipes closed without the line: the process exited.
                    std::thread::sleep(Duration::from_millis(50));
                    return Err((
                        true,
                        format!("ebbflow exited before listening:\n{}", server.log.tail(40)),
                    ));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(Ok(Some(status))) = server.child.as_mut().map(|c| c.try_wait()) {
                        std::thread::sleep(Duration::from_millis(50));
                        return Err((
                            true,
                            format!(
                                "ebbflow exited ({status}) before listening:\n{}",
                                server.log.tail(40)
                            ),
                        ));
                    }
                    if Instant::now() > deadline {
                        server.stop();
                        return Err((
                            false,
                            format!(
                                "ebbflow did not print `listening on` within {} s:\n{}",
                                timeout.as_secs(),
                                server.log.tail(40)
                            ),
                        ));
                    }
                }
            }
        }
    }

    /// [`EbbflowServer::start`], or [`EbbflowServer::start_in`] `data_dir`,
    /// from async code: the wait for the server runs on a blocking thread.
    pub async fn spawn(
        opts: ServerOptions,
        data_dir: Option<PathBuf>,
    ) -> Result<EbbflowServer, String> {
        tokio::task::spawn_blocking(move || match data_dir {
            Some(dir) => Self::start_in(&opts, &dir),
            None => Self::start(&opts),
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// [`EbbflowServer::stop`] from async code.
    pub async fn shut_down(mut self) {
        let _ = tokio::task::spawn_blocking(move || self.stop()).await;
    }

    /// tokio-postgres connection string.
    pub fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=root dbname=dev connect_timeout=10",
            self.port
        )
    }

    /// The data dir the server runs on.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The process id, while the child has not been reaped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// `kill -9` and reap: the process gets no chance to clean up.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// SIGTERM and wait up to `timeout` for the exit status (`None`: still
    /// running, then killed).
    pub fn terminate(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        sigterm(child.id());
        if wait_timeout(&mut child, timeout) {
            child.try_wait().ok().flatten()
        } else {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    }

    /// SIGTERM, then SIGKILL after 10 s.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(None) = child.try_wait() {
                sigterm(child.id());
                if !wait_timeout(&mut child, Duration::from_secs(10)) {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
    }
}

impl Drop for EbbflowServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Directory of the PostgreSQL 15 binaries (`PG_BIN` overrides).
pub fn pg_bin_dir() -> PathBuf {
    std::env::var_os("PG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin"))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Runs a PostgreSQL tool, as the `postgres` user when we are root
/// (`initdb` refuses to run as root).
fn pg_command(tool: &str) -> Command {
    let path = pg_bin_dir().join(tool);
    if is_root() {
        let mut c = Command::new("runuser");
        c.arg("-u").arg("postgres").arg("--").arg(path);
        c
    } else {
        Command::new(path)
    }
}

/// A throwaway PostgreSQL 15 cluster on a free loopback port. It can be
/// stopped and started again on the same port and data ([`Postgres::stop`],
/// [`Postgres::restart`]): an outage of a meta store.
pub struct Postgres {
    pub port: u16,
    dir: TempDir,
    running: bool,
    /// Whether a commit reaches the OS before it returns
    /// (`synchronous_commit = on`), so that a stop in `immediate` mode (as
    /// a crash) loses no committed transaction. Off for [`Postgres::start`]
    /// (faster; it is never stopped while in use).
    durable: bool,
}

/// Runs a command, with its output in the error.
fn run_tool(mut c: Command, what: &str) -> Result<(), String> {
    let out = c.output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

impl Postgres {
    /// A server for reference queries and meta stores that is not stopped
    /// while in use (commits are asynchronous).
    pub fn start() -> Result<Postgres, String> {
        Self::init(false)
    }

    /// A server that can be stopped abruptly and started again without
    /// losing a committed transaction (an outage of a meta store).
    pub fn start_durable() -> Result<Postgres, String> {
        Self::init(true)
    }

    fn init(durable: bool) -> Result<Postgres, String> {
        if !postgres_available() {
            return Err(format!(
                "PostgreSQL 15 is not installed in {}",
                pg_bin_dir().display()
            ));
        }
        let dir = TempDir::new("ebbflow-pg").map_err(|e| format!("temp dir: {e}"))?;
        if is_root() {
            let mut chown = Command::new("chown");
            chown.arg("-R").arg("postgres:postgres").arg(dir.path());
            run_tool(chown, "chown of the PostgreSQL temp dir")?;
        }
        let mut initdb = pg_command("initdb");
        initdb
            .arg("-D")
            .arg(dir.path().join("data"))
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
            .arg("--locale=C");
        run_tool(initdb, "initdb")?;
        let mut pg = Postgres {
            port: 0,
            dir,
            running: false,
            durable,
        };
        let mut last_err = String::new();
        // A port found free can be taken before the server binds it.
        for _ in 0..3 {
            pg.port = free_port();
            match pg.launch() {
                Ok(()) => return Ok(pg),
                Err(e) => last_err = e,
            }
        }
        Err(last_err)
    }

    /// `pg_ctl start` on `self.port`, waiting until it accepts connections.
    fn launch(&mut self) -> Result<(), String> {
        let mut conf = format!(
            // UTC, ebbflow's default zone, whatever the host's.
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c timezone=UTC",
            self.port,
            self.dir.path().display()
        );
        if !self.durable {
            conf.push_str(" -c synchronous_commit=off -c full_page_writes=off");
        }
        let log = self.dir.path().join("log");
        let mut c = pg_command("pg_ctl");
        c.arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-w", "-t", "60", "-l"])
            .arg(&log)
            .arg("-o")
            .arg(conf)
            .arg("start");
        run_tool(c, "pg_ctl start")
            .map_err(|e| format!("{e}\n{}", std::fs::read_to_string(&log).unwrap_or_default()))?;
        self.running = true;
        Ok(())
    }

    pub fn conn_str(&self, dbname: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname={dbname} connect_timeout=10",
            self.port
        )
    }

    /// Creates database `db` afresh (dropping what an earlier run left)
    /// and returns an admin session, to drop it with
    /// [`Postgres::drop_database`] at the end.
    pub async fn create_database(&self, db: &str) -> Result<tokio_postgres::Client, String> {
        let admin = open(&self.conn_str("postgres")).await?;
        rows::run(&admin, &format!("DROP DATABASE IF EXISTS {db}")).await?;
        rows::run(&admin, &format!("CREATE DATABASE {db}")).await?;
        Ok(admin)
    }

    /// Drops database `db`, ending its sessions. Best effort: cleanup.
    pub async fn drop_database(admin: &tokio_postgres::Client, db: &str) {
        let _ = rows::run(admin, &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
    }

    pub fn url(&self) -> String {
        self.db_url("postgres")
    }

    /// `postgres://postgres@127.0.0.1:<port>/<db>`: a `--meta-store` URL.
    pub fn db_url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Stops the server as a crash would (`immediate`: no checkpoint,
    /// sessions cut).
    pub fn stop(&mut self) {
        self.stop_with("immediate");
    }

    /// Stops the server; `mode` is `fast` (clean shutdown) or `immediate`.
    pub fn stop_with(&mut self, mode: &str) {
        if self.running {
            self.running = false;
            let _ = pg_command("pg_ctl")
                .arg("-D")
                .arg(self.dir.path().join("data"))
                .args(["-m", mode, "-w", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Starts a stopped server again on the same port and data.
    pub fn restart(&mut self) -> Result<(), String> {
        if self.running {
            return Ok(());
        }
        self.launch()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether the PostgreSQL 15 server binaries are installed.
pub fn postgres_available() -> bool {
    pg_bin_dir().join("postgres").exists()
}

/// Spawns the connection task of a tokio-postgres client.
pub async fn connect(conn_str: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(conn_str, tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// [`connect`] with the error as [`describe_pg_error`] tells it.
pub async fn open(conn_str: &str) -> Result<tokio_postgres::Client, String> {
    connect(conn_str).await.map_err(|e| describe_pg_error(&e))
}

/// A tokio-postgres error with the server's message, SQLSTATE, detail and hint.
pub fn describe_pg_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!(
                "{}: {} (SQLSTATE {})",
                db.severity(),
                db.message(),
                db.code().code()
            );
            if let Some(d) = db.detail() {
                s.push_str(&format!("\nDETAIL: {d}"));
            }
            if let Some(h) = db.hint() {
                s.push_str(&format!("\nHINT: {h}"));
            }
            s
        }
        None => {
            // Walk the source chain: tokio-postgres' own Display is terse.
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                s.push_str(&format!(": {inner}"));
                src = inner.source();
            }
            s
        }
    }
}
