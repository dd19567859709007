//! A local ebbflow cluster of real processes: `ebbflow meta` (pgwire and
//! RPC on free loopback ports) and `ebbflow compute` processes, sharing a
//! state store and a cluster secret. Processes can be killed (`kill -9`)
//! and started again on the same ports.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::{ebbflow_bin, free_port, EbbflowServer, TempDir};

#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// `--state-store` of every process (default: a directory of the
    /// cluster's own).
    pub state_store: Option<String>,
    /// `--meta-store` of meta (default: SQLite in meta's data dir).
    pub meta_store: Option<String>,
    /// Environment of every process (the S3 variables).
    pub env: Vec<(String, String)>,
    pub computes: usize,
    pub parallel_units: usize,
    pub barrier_interval_ms: u64,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            state_store: None,
            meta_store: None,
            env: Vec::new(),
            computes: 3,
            parallel_units: 2,
            barrier_interval_ms: 100,
        }
    }
}

pub struct Cluster {
    opts: ClusterOptions,
    dir: TempDir,
    state_store: String,
    secret: PathBuf,
    pub meta: Option<EbbflowServer>,
    pub pg_port: u16,
    pub rpc_port: u16,
    /// Compute processes by RPC port (stopped ones are absent).
    pub computes: BTreeMap<u16, EbbflowServer>,
}

impl Cluster {
    /// Meta and `opts.computes` compute processes, each ready.
    pub fn start(opts: ClusterOptions) -> Result<Cluster, String> {
        let dir = TempDir::new("ebbflow-cluster").map_err(|e| format!("temp dir: {e}"))?;
        let secret = dir.path().join("cluster-secret");
        std::fs::write(&secret, "test-cluster-secret-0123456789\n")
            .map_err(|e| format!("secret file: {e}"))?;
        let state_store = opts
            .state_store
            .clone()
            .unwrap_or_else(|| format!("file://{}/state", dir.path().display()));
        let mut c = Cluster {
            opts: opts.clone(),
            dir,
            state_store,
            secret,
            meta: None,
            pg_port: free_port(),
            rpc_port: free_port(),
            computes: BTreeMap::new(),
        };
        c.start_meta()?;
        for _ in 0..opts.computes {
            c.start_compute(None)?;
        }
        Ok(c)
    }

    fn command(&self, role: &str, secret: &std::path::Path) -> Command {
        let mut cmd = Command::new(ebbflow_bin());
        cmd.arg(role)
            .arg("--state-store")
            .arg(&self.state_store)
            .arg("--cluster-secret-file")
            .arg(secret)
            .env(
                "RUST_LOG",
                std::env::var("EBBFLOW_LOG").unwrap_or_else(|_| "info,sqlx=warn".into()),
            )
            .env("RUST_LIB_BACKTRACE", "0")
            .envs(self.opts.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Starts meta (again) on its ports.
    pub fn start_meta(&mut self) -> Result<(), String> {
        let data = self.dir.path().join("meta");
        let mut cmd = self.command("meta", &self.secret);
        cmd.arg("--listen")
            .arg(format!("127.0.0.1:{}", self.pg_port))
            .arg("--rpc-listen")
            .arg(format!("127.0.0.1:{}", self.rpc_port))
            .arg("--data-dir")
            .arg(&data)
            .arg("--barrier-interval-ms")
            .arg(self.opts.barrier_interval_ms.to_string());
        if let Some(m) = &self.opts.meta_store {
            cmd.arg("--meta-store").arg(m);
        }
        let meta =
            EbbflowServer::spawn_ready(cmd, self.pg_port, data, None, Duration::from_secs(60))
                .map_err(|(_, e)| format!("meta: {e}"))?;
        self.meta = Some(meta);
        Ok(())
    }

    /// `kill -9` of meta.
    pub fn kill_meta(&mut self) {
        if let Some(mut m) = self.meta.take() {
            m.kill9();
        }
    }

    /// Starts a compute process on `port` (a fresh one when `None`);
    /// returns its RPC port.
    pub fn start_compute(&mut self, port: Option<u16>) -> Result<u16, String> {
        self.start_compute_with(port, None)
    }

    /// [`Self::start_compute`] with another cluster secret than the
    /// cluster's (`Some(text)`).
    pub fn start_compute_with(
        &mut self,
        port: Option<u16>,
        secret: Option<&str>,
    ) -> Result<u16, String> {
        let port = port.unwrap_or_else(free_port);
        let path = match secret {
            Some(text) => {
                let path = self.dir.path().join(format!("secret-{port}"));
                std::fs::write(&path, text).map_err(|e| format!("secret file: {e}"))?;
                path
            }
            None => self.secret.clone(),
        };
        let mut cmd = self.command("compute", &path);
        cmd.arg("--meta")
            .arg(format!("127.0.0.1:{}", self.rpc_port))
            .arg("--rpc-listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--parallel-units")
            .arg(self.opts.parallel_units.to_string());
        let c = EbbflowServer::spawn_ready(
            cmd,
            port,
            self.dir.path().to_path_buf(),
            None,
            Duration::from_secs(60),
        )
        .map_err(|(_, e)| format!("compute on port {port}: {e}"))?;
        self.computes.insert(port, c);
        Ok(port)
    }

    /// `kill -9` of the compute process on `port`.
    pub fn kill_compute(&mut self, port: u16) {
        if let Some(mut c) = self.computes.remove(&port) {
            c.kill9();
        }
    }

    /// Whether the compute process on `port` is still running (it exits
    /// once removed from the cluster).
    pub fn compute_running(&mut self, port: u16) -> bool {
        self.computes.get_mut(&port).is_some_and(|c| c.is_running())
    }

    /// Forgets a compute process that exited.
    pub fn reap_compute(&mut self, port: u16) {
        self.computes.remove(&port);
    }

    pub fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=root dbname=dev connect_timeout=10",
            self.pg_port
        )
    }

    /// The last log lines of meta and of every compute process.
    pub fn logs(&self, n: usize) -> String {
        let mut out = String::new();
        if let Some(m) = &self.meta {
            out.push_str(&format!("--- meta ---\n{}\n", m.log.tail(n)));
        }
        for (port, c) in &self.computes {
            out.push_str(&format!("--- compute :{port} ---\n{}\n", c.log.tail(n)));
        }
        out
    }
}
