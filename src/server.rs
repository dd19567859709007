//! Starting and stopping a process that serves SQL: meta with its store,
//! its compute nodes (the playground) or the RPC compute processes join
//! (a cluster's meta), and the pgwire listener. It assembles the layers,
//! so it lives in the binary's crate, above them all.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::frontend::session::LocalSessionFactory;
use crate::lsm::{CacheOptions, LsmStateStore, ObjectStorage, SstStore, StoreOptions};
use crate::meta::store::MetaStore;
use crate::meta::versions::{VersionManager, VersionOptions};
use crate::meta::{Meta, MetaConfig};

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// Where state files live (`file:///dir`, `s3://bucket/prefix`);
    /// default `file://<data_dir>/state`.
    pub state_store: Option<String>,
    /// Where meta commits (`sqlite://path`, `postgres://…`); default
    /// `sqlite://<data_dir>/meta.db`.
    pub meta_store: Option<String>,
    /// How long an unreferenced state file is kept before it is deleted,
    /// and how often the collector runs.
    pub gc_grace: Duration,
    pub gc_interval: Duration,
    pub compute_nodes: u32,
    pub parallel_units: u32,
    pub barrier_interval_ms: u64,
    /// A cluster's meta: compute nodes are processes that register on this
    /// RPC listener (none in process).
    pub cluster: Option<ClusterRpc>,
}

/// Meta's RPC listener in a cluster.
#[derive(Clone, Debug)]
pub struct ClusterRpc {
    pub rpc_listen: SocketAddr,
    pub secret: crate::rpc::ClusterSecret,
}

/// A running server.
pub struct ServerHandle {
    pub addr: SocketAddr,
    /// Meta's RPC address (a cluster's meta).
    pub rpc_addr: Option<SocketAddr>,
    pub meta: Arc<Meta>,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    rpc_task: Option<tokio::task::JoinHandle<()>>,
}

impl ServerHandle {
    /// Stop accepting, stop every actor, wait for the listener to close.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
        if let Some(t) = self.rpc_task {
            t.abort();
        }
        self.meta.shutdown();
    }
}

/// Start everything; returns once the listener is bound.
pub async fn start(config: ServerConfig) -> anyhow::Result<ServerHandle> {
    let options = VersionOptions {
        gc_grace: config.gc_grace,
        gc_interval: config.gc_interval,
        ..Default::default()
    };
    let (store, versions) = open_state(&config, options).await?;
    let remote = config.cluster.is_some();
    let meta = Meta::start_with_store(
        MetaConfig {
            compute_nodes: if remote {
                0
            } else {
                config.compute_nodes.max(1)
            },
            remote_workers: remote,
            parallel_units: config.parallel_units.max(1),
            barrier_interval: Duration::from_millis(config.barrier_interval_ms.max(1)),
        },
        store,
        versions.clone(),
    );
    let (rpc_addr, rpc_task) = match &config.cluster {
        Some(c) => {
            let (addr, task) = crate::rpc::meta_service::listen_meta(
                meta.clone(),
                c.secret.clone(),
                c.rpc_listen,
                versions.subscribe(),
            )?;
            tracing::info!(%addr, "meta RPC listening");
            (Some(addr), Some(task))
        }
        None => (None, None),
    };
    let started = std::time::Instant::now();
    if remote {
        // The compute processes register in their own time: the jobs are
        // rebuilt by a recovery once they have (or were declared down).
        meta.recover_in_background("meta started");
    } else {
        meta.resume()
            .await
            .map_err(|e| anyhow::anyhow!("cannot resume the streaming jobs: {e}"))?;
    }
    tracing::info!(
        epoch = meta.committed_epoch(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "state loaded"
    );
    crate::pgwire::auth::check_listen(config.listen, meta.any_password())?;
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr()?;
    let factory = Arc::new(LocalSessionFactory { meta: meta.clone() });
    let (tx, rx) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut rx = rx;
        crate::pgwire::serve(listener, factory, async move {
            let _ = rx.wait_for(|stop| *stop).await;
        })
        .await;
    });
    Ok(ServerHandle {
        addr,
        rpc_addr,
        rpc_task,
        meta,
        shutdown: tx,
        task,
    })
}

/// Opens the object store and the meta store the configuration names (the
/// embedded defaults under the data directory), loads the committed
/// version and starts compaction and garbage collection.
pub async fn open_state(
    config: &ServerConfig,
    options: VersionOptions,
) -> anyhow::Result<(Arc<LsmStateStore>, Arc<VersionManager>)> {
    let needs_dir = config.state_store.is_none() || config.meta_store.is_none();
    let data_dir = if needs_dir {
        std::fs::create_dir_all(&config.data_dir).map_err(|e| {
            anyhow::anyhow!(
                "cannot create the data directory {}: {e}",
                config.data_dir.display()
            )
        })?;
        std::fs::canonicalize(&config.data_dir).map_err(|e| {
            anyhow::anyhow!(
                "cannot open the data directory {}: {e}",
                config.data_dir.display()
            )
        })?
    } else {
        config.data_dir.clone()
    };
    let state_url = config
        .state_store
        .clone()
        .unwrap_or_else(|| format!("file://{}/state", data_dir.display()));
    let meta_url = config
        .meta_store
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}/meta.db", data_dir.display()));
    let objects = ObjectStorage::open(&state_url).map_err(|e| anyhow::anyhow!("{e}"))?;
    objects.check().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let meta_store = MetaStore::connect(&meta_url)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let sst = Arc::new(SstStore::new(objects, &CacheOptions::default()));
    let versions = VersionManager::open(meta_store, sst.clone(), options)
        .await
        .map_err(|e| anyhow::anyhow!("cannot load the committed state: {e}"))?;
    let store = Arc::new(LsmStateStore::new(
        sst,
        versions.current(),
        StoreOptions::default(),
        "playground",
    ));
    versions.register_store(&store);
    versions.start_background();
    Ok((store, versions))
}
