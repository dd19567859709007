//! Starting and stopping the playground: meta with its compute nodes, and
//! the pgwire listener.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::session::LocalSessionFactory;
use crate::meta::{Meta, MetaConfig};
use crate::storage::DurableStateStore;

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub compute_nodes: u32,
    pub parallel_units: u32,
    pub barrier_interval_ms: u64,
}

/// A running server.
pub struct ServerHandle {
    pub addr: SocketAddr,
    pub meta: Arc<Meta>,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl ServerHandle {
    /// Stop accepting, stop every actor, wait for the listener to close.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
        self.meta.shutdown();
    }
}

/// Start everything; returns once the listener is bound.
pub async fn start(config: ServerConfig) -> anyhow::Result<ServerHandle> {
    let dir = config.data_dir.clone();
    let store = tokio::task::spawn_blocking(move || DurableStateStore::open(&dir))
        .await?
        .map_err(|e| anyhow::anyhow!("cannot open the data directory: {e}"))?;
    let meta = Meta::start_with_store(
        MetaConfig {
            compute_nodes: config.compute_nodes.max(1),
            parallel_units: config.parallel_units.max(1),
            barrier_interval: Duration::from_millis(config.barrier_interval_ms.max(1)),
        },
        Arc::new(store),
    );
    let started = std::time::Instant::now();
    meta.resume()
        .await
        .map_err(|e| anyhow::anyhow!("cannot resume the streaming jobs: {e}"))?;
    tracing::info!(
        epoch = meta.committed_epoch(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "state loaded"
    );
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
        meta,
        shutdown: tx,
        task,
    })
}
