//! A compute process (`ebbflow compute`): one compute node with its own
//! state store, serving the `Compute` and `Exchange` services and keeping
//! its membership with meta (register, heartbeat, register again when meta
//! forgot it or restarted).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, watch};
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use super::convert::{event_to_pb, locations_from_pb, sst_to_pb, version_from_pb};
use super::exchange::{ExchangeSender, ExchangeService, Inbound, INJECT};
use super::pb::compute_server::{Compute, ComputeServer};
use super::pb::exchange_server::ExchangeServer;
use super::pb::meta_client::MetaClient;
use super::pb::{self, Ack};
use super::ClusterSecret;
use ebbflow_plan::ActorDesc;
use ebbflow_storage::lsm::{
    CacheOptions, LsmStateStore, ObjectStorage, SstStore, StoreOptions, Version,
};
use ebbflow_storage::StateStore;
use ebbflow_stream::compute_node::{
    ActorLocations, ComputeClient, ComputeNode, NodeServices, WorkerId,
};
use ebbflow_stream::exchange::{ExchangeRegistry, RemoteOutputs};
use ebbflow_stream::message::ActorId;

/// The largest message a process accepts (a big plan, a big batch).
pub const MAX_MESSAGE: usize = 256 << 20;

/// How a compute process is started.
#[derive(Clone, Debug)]
pub struct ComputeConfig {
    /// Meta's RPC address (`host:port`).
    pub meta: String,
    pub rpc_listen: SocketAddr,
    /// The address other processes dial; default: the bound listen address.
    pub advertise: Option<String>,
    pub parallel_units: u32,
    pub state_store: String,
    pub secret: ClusterSecret,
}

/// The process's node, store and exchange, shared by its services.
struct Shared {
    address: String,
    node: Arc<ComputeNode>,
    store: Arc<LsmStateStore>,
    registry: Arc<ExchangeRegistry>,
    exchange: Arc<ExchangeSender>,
    locations: RwLock<ActorLocations>,
    worker_id: AtomicU32,
    committed: watch::Sender<u64>,
    /// Meta's event stream (the newest `Events` call).
    subscriber: Mutex<Option<mpsc::UnboundedSender<Result<pb::Event, Status>>>>,
    /// One reset at a time.
    reset_lock: tokio::sync::Mutex<()>,
    /// Set when meta removed the process from the cluster.
    removed: watch::Sender<bool>,
}

impl Inbound for Shared {
    fn generation(&self) -> u64 {
        self.registry.generation()
    }

    fn channel(
        &self,
        generation: u64,
        up: ActorId,
        down: ActorId,
    ) -> Option<ebbflow_stream::channel::Sender> {
        if up == INJECT {
            if generation != self.registry.generation() {
                return None;
            }
            self.node.local_sender(down)
        } else {
            self.registry.take_sender_in(generation, up, down)
        }
    }
}

impl RemoteOutputs for Shared {
    fn sender(&self, up: ActorId, down: ActorId) -> Option<ebbflow_stream::channel::Sender> {
        let me = self.worker_id.load(Ordering::SeqCst);
        let address = {
            let loc = self.locations.read();
            let worker = *loc.actors.get(&down)?;
            if worker == me {
                return None;
            }
            match loc.addresses.get(&worker) {
                Some(a) => a.clone(),
                None => {
                    tracing::error!(down, worker, "no address for the worker of an actor");
                    return None;
                }
            }
        };
        Some(self.exchange.sender(&address, up, down, None))
    }
}

impl Shared {
    fn install(&self, version: Arc<Version>) {
        let epoch = version.committed_epoch;
        self.store.install_version(version);
        self.committed.send_if_modified(|c| {
            let newer = epoch > *c;
            if newer {
                *c = epoch;
            }
            newer
        });
    }

    /// A process that registered takes meta's generation from the first
    /// message that carries it (the registration's answer, or the
    /// locations meta sends before it builds anything there). Nothing runs
    /// yet to be reset: the process reset itself before registering.
    fn adopt_generation(&self, generation: u64) {
        if generation > self.registry.generation() {
            self.registry.reset(generation);
            self.exchange.reset(generation);
        }
    }

    /// Stop every actor, drop what was not committed and move to
    /// `generation` (never back).
    async fn reset(&self, generation: u64) {
        let _one = self.reset_lock.lock().await;
        if generation < self.registry.generation() {
            return;
        }
        self.exchange.reset(generation);
        let _ = self.node.reset(generation).await;
        self.registry.reset(generation);
        self.store.abort_uncommitted();
    }
}

fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(e.to_string())
}

struct ComputeService(Arc<Shared>);

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send>>;

#[tonic::async_trait]
impl Compute for ComputeService {
    type EventsStream = EventStream;

    async fn update_locations(&self, r: Request<pb::Locations>) -> Result<Response<Ack>, Status> {
        let r = r.into_inner();
        self.0.adopt_generation(r.generation);
        *self.0.locations.write() = locations_from_pb(&r);
        Ok(Response::new(Ack {}))
    }

    async fn build_actors(
        &self,
        r: Request<pb::BuildActorsRequest>,
    ) -> Result<Response<Ack>, Status> {
        let mut descs = Vec::new();
        for bytes in r.into_inner().actors {
            let d: ActorDesc = serde_json::from_slice(&bytes)
                .map_err(|e| Status::invalid_argument(format!("bad actor description: {e}")))?;
            descs.push(d);
        }
        self.0.node.build_actors(descs).await.map_err(internal)?;
        Ok(Response::new(Ack {}))
    }

    async fn drop_actors(
        &self,
        r: Request<pb::DropActorsRequest>,
    ) -> Result<Response<Ack>, Status> {
        self.0.node.forget_actors(&r.into_inner().actor_ids);
        Ok(Response::new(Ack {}))
    }

    async fn reset(&self, r: Request<pb::ResetRequest>) -> Result<Response<Ack>, Status> {
        let r = r.into_inner();
        self.0.reset(r.generation).await;
        if let Some(v) = r.version {
            self.0.install(version_from_pb(v));
        }
        Ok(Response::new(Ack {}))
    }

    async fn sync(
        &self,
        r: Request<pb::SyncRequest>,
    ) -> Result<Response<pb::SyncResponse>, Status> {
        let files = self
            .0
            .store
            .sync(r.into_inner().epoch)
            .await
            .map_err(internal)?;
        Ok(Response::new(pb::SyncResponse {
            files: files.iter().map(sst_to_pb).collect(),
        }))
    }

    async fn install_version(&self, r: Request<pb::Version>) -> Result<Response<Ack>, Status> {
        self.0.install(version_from_pb(r.into_inner()));
        Ok(Response::new(Ack {}))
    }

    async fn events(
        &self,
        _r: Request<pb::EventsRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        *self.0.subscriber.lock() = Some(tx);
        let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
        Ok(Response::new(Box::pin(stream)))
    }
}

/// A running compute process.
pub struct ComputeHandle {
    /// The address other processes dial.
    pub address: String,
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl ComputeHandle {
    pub fn worker_id(&self) -> WorkerId {
        self.shared.worker_id.load(Ordering::SeqCst)
    }

    /// Returns once meta removed the process from the cluster.
    pub async fn removed(&self) {
        let mut rx = self.shared.removed.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }

    /// Stop serving and every actor.
    pub fn shutdown(self) {
        for t in &self.tasks {
            t.abort();
        }
        self.shared.node.abort_all();
    }
}

/// Start a compute process: open the state store, serve, register with
/// meta. Returns once the RPC listener is bound.
pub async fn start_compute(config: ComputeConfig) -> anyhow::Result<ComputeHandle> {
    let objects = ObjectStorage::open(&config.state_store).map_err(|e| anyhow::anyhow!("{e}"))?;
    objects.check().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let sst = Arc::new(SstStore::new(objects, &CacheOptions::default()));
    let incoming = tonic::transport::server::TcpIncoming::bind(config.rpc_listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.rpc_listen))?;
    let bound = incoming
        .local_addr()
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.rpc_listen))?;
    let address = config
        .advertise
        .clone()
        .unwrap_or_else(|| bound.to_string());
    let store = Arc::new(LsmStateStore::new(
        sst,
        Arc::new(Version::default()),
        StoreOptions::default(),
        &address,
    ));
    let registry = Arc::new(ExchangeRegistry::default());
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let (committed_tx, committed_rx) = watch::channel(0);
    let services = NodeServices {
        store: store.clone(),
        registry: registry.clone(),
        events: events_tx,
        // Other processes' writes are readable once committed.
        readable: committed_rx.clone(),
        committed: committed_rx,
        fault: Arc::new(AtomicU32::new(0)),
    };
    let node = Arc::new(ComputeNode::new(0, &services));
    let shared = Arc::new(Shared {
        address: address.clone(),
        node,
        store,
        registry: registry.clone(),
        exchange: ExchangeSender::new(config.secret.clone()),
        locations: RwLock::new(ActorLocations::default()),
        worker_id: AtomicU32::new(0),
        committed: committed_tx,
        subscriber: Mutex::new(None),
        reset_lock: tokio::sync::Mutex::new(()),
        removed: watch::Sender::new(false),
    });
    registry.set_remote(shared.clone());
    let mut tasks = Vec::new();
    // events → meta's stream, tagged with the generation
    let s = shared.clone();
    tasks.push(tokio::spawn(async move {
        while let Some(e) = events_rx.recv().await {
            if let Some(pe) = event_to_pb(&e, s.registry.generation()) {
                if let Some(sub) = s.subscriber.lock().as_ref() {
                    let _ = sub.send(Ok(pe));
                }
            }
        }
    }));
    let secret = config.secret.clone();
    let check = |secret: ClusterSecret| move |r| secret.check(r);
    let compute = InterceptedService::new(
        ComputeServer::new(ComputeService(shared.clone())).max_decoding_message_size(MAX_MESSAGE),
        check(secret.clone()),
    );
    let exchange = InterceptedService::new(
        ExchangeServer::new(ExchangeService {
            target: shared.clone(),
        })
        .max_decoding_message_size(MAX_MESSAGE),
        check(secret.clone()),
    );
    tasks.push(tokio::spawn(async move {
        let served = super::server()
            .add_service(compute)
            .add_service(exchange)
            .serve_with_incoming(incoming)
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "the compute RPC server stopped");
        }
    }));
    tasks.push(tokio::spawn(membership(
        shared.clone(),
        config.meta.clone(),
        secret,
        config.parallel_units,
    )));
    tracing::info!(%address, meta = %config.meta, "compute process started");
    Ok(ComputeHandle {
        address,
        shared,
        tasks,
    })
}

/// Register with meta, then beat; register again whenever meta does not
/// know the process (it restarted, or marked the process down).
async fn membership(shared: Arc<Shared>, meta: String, secret: ClusterSecret, units: u32) {
    let mut previous: Option<WorkerId> = None;
    let mut refused_logged = false;
    loop {
        // A new session with meta: nothing of the old one stands.
        shared.reset(shared.registry.generation()).await;
        let channel = match super::channel(&meta) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "bad meta address");
                return;
            }
        };
        let mut client = MetaClient::with_interceptor(channel, secret.clone());
        let registered = client
            .register(pb::RegisterRequest {
                address: shared.address.clone(),
                parallel_units: units,
                previous_worker_id: previous,
            })
            .await;
        let r = match registered {
            Ok(r) => r.into_inner(),
            Err(s) => {
                if s.code() == tonic::Code::Unauthenticated {
                    if !refused_logged {
                        tracing::error!(meta = %meta, "meta refused this process: {}", s.message());
                        refused_logged = true;
                    }
                } else {
                    tracing::debug!(meta = %meta, error = %s.message(), "meta not reachable; retrying");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        refused_logged = false;
        shared.adopt_generation(r.generation);
        shared.worker_id.store(r.worker_id, Ordering::SeqCst);
        previous = Some(r.worker_id);
        tracing::info!(
            worker = r.worker_id,
            units = r.parallel_unit_ids.len(),
            "registered with meta"
        );
        let interval = Duration::from_millis(u64::from(r.heartbeat_interval_ms.max(10)));
        let mut failing_since: Option<std::time::Instant> = None;
        loop {
            tokio::time::sleep(interval).await;
            match client
                .heartbeat(pb::HeartbeatRequest {
                    worker_id: r.worker_id,
                })
                .await
            {
                Ok(resp) if resp.get_ref().known => failing_since = None,
                Ok(resp) if resp.get_ref().removed => {
                    tracing::info!(worker = r.worker_id, "removed from the cluster; exiting");
                    shared.node.abort_all();
                    shared.removed.send_replace(true);
                    return;
                }
                Ok(_) => {
                    tracing::warn!(
                        worker = r.worker_id,
                        "meta no longer knows this process; registering again"
                    );
                    break;
                }
                Err(s) => {
                    let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() > Duration::from_secs(1) {
                        tracing::warn!(error = %s.message(), "meta is not answering heartbeats");
                        failing_since = Some(std::time::Instant::now());
                    }
                }
            }
        }
    }
}
