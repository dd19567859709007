//! Meta's client of a compute process: [`ComputeClient`] over gRPC.
//!
//! Besides the calls, it keeps two streams with the process: its events
//! (collected barriers, failed actors), forwarded to the barrier manager
//! when they belong to the current recovery generation, and the versions
//! meta commits, pushed as they come. DML and barriers reach the
//! process's source actors over meta's remote exchange, on the same
//! ordered channel per actor as in process.
//!
//! A process that stops answering, or whose event or exchange stream
//! breaks, is no longer alive: the failure detector marks it down and the
//! recovery moves its actors.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::compute::MAX_MESSAGE;
use super::convert::{event_from_pb, locations_to_pb, sst_from_pb, version_to_pb};
use super::exchange::{ExchangeSender, INJECT};
use super::pb;
use super::pb::compute_client::ComputeClient as PbClient;
use super::ClusterSecret;
use ebbflow_plan::ActorDesc;
use ebbflow_storage::lsm::Version;
use ebbflow_storage::{SstInfo, StorageError, StorageResult};
use ebbflow_stream::actor::ComputeEvent;
use ebbflow_stream::compute_node::{
    ActorLocations, ComputeClient, NodeError, NodeResult, WorkerId,
};
use ebbflow_stream::message::ActorId;

type Client = PbClient<InterceptedService<Channel, ClusterSecret>>;

/// What a remote compute client needs of meta.
#[derive(Clone)]
pub struct MetaLink {
    pub secret: ClusterSecret,
    /// Meta's sending side of the exchange (DML, barriers).
    pub exchange: Arc<ExchangeSender>,
    pub events: mpsc::UnboundedSender<ComputeEvent>,
    pub versions: watch::Receiver<Arc<Version>>,
    pub generation: Arc<AtomicU64>,
}

pub struct RemoteCompute {
    id: WorkerId,
    address: String,
    client: Client,
    link: MetaLink,
    last_beat: Mutex<Instant>,
    /// A stream with the process broke, or a call found it gone.
    broken: Arc<AtomicBool>,
    killed: AtomicBool,
    /// Source actors' channels, made at first use.
    senders: Mutex<HashMap<ActorId, ebbflow_stream::channel::Sender>>,
    /// Actors built there and not forgotten.
    actors: Mutex<std::collections::HashSet<ActorId>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// The last version the process acknowledged: its files stay
    /// referenced here so compaction's clean-up does not delete them
    /// under the process's reads.
    acked: Arc<Mutex<Option<Arc<Version>>>>,
}

impl RemoteCompute {
    /// Connect to the process at `address` (lazily) and start following
    /// its events and pushing versions to it.
    pub fn connect(id: WorkerId, address: &str, link: MetaLink) -> NodeResult<Arc<RemoteCompute>> {
        let channel = super::channel(address).map_err(|e| NodeError::Unreachable {
            worker: id,
            message: e.to_string(),
        })?;
        let client = PbClient::with_interceptor(channel, link.secret.clone())
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let rc = Arc::new(RemoteCompute {
            id,
            address: address.to_string(),
            client,
            link,
            last_beat: Mutex::new(Instant::now()),
            broken: Arc::new(AtomicBool::new(false)),
            killed: AtomicBool::new(false),
            senders: Mutex::new(HashMap::new()),
            actors: Mutex::new(Default::default()),
            tasks: Mutex::new(Vec::new()),
            acked: Arc::new(Mutex::new(None)),
        });
        let events = tokio::spawn(follow_events(
            id,
            rc.client.clone(),
            rc.link.clone(),
            rc.broken.clone(),
        ));
        let versions = tokio::spawn(push_versions(
            rc.client.clone(),
            rc.link.versions.clone(),
            rc.acked.clone(),
        ));
        rc.tasks.lock().extend([events, versions]);
        Ok(rc)
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Runs `call` while the process is alive; an error once it is not.
    async fn while_alive<T>(
        &self,
        what: &'static str,
        call: impl std::future::Future<Output = Result<T, tonic::Status>>,
    ) -> NodeResult<T> {
        tokio::pin!(call);
        loop {
            tokio::select! {
                r = &mut call => {
                    return r.map_err(|s| {
                        if matches!(s.code(), tonic::Code::Unavailable | tonic::Code::Unknown) {
                            self.broken.store(true, Ordering::SeqCst);
                        }
                        NodeError::Call {
                            worker: self.id,
                            address: self.address.clone(),
                            what,
                            message: s.message().to_string(),
                        }
                    });
                }
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    if !self.is_alive(ebbflow_meta::workers::HEARTBEAT_TIMEOUT) {
                        return Err(NodeError::Down(self.id));
                    }
                }
            }
        }
    }
}

impl Drop for RemoteCompute {
    fn drop(&mut self) {
        for t in self.tasks.lock().iter() {
            t.abort();
        }
    }
}

#[async_trait]
impl ComputeClient for RemoteCompute {
    fn is_alive(&self, timeout: Duration) -> bool {
        !self.killed.load(Ordering::SeqCst)
            && !self.broken.load(Ordering::SeqCst)
            && self.last_beat.lock().elapsed() < timeout
    }

    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.senders.lock().clear();
        for t in self.tasks.lock().iter() {
            t.abort();
        }
    }

    fn inject_panic(&self) {
        // A process cannot be made to panic from here: stop using it.
        self.kill();
    }

    fn heartbeat(&self) -> bool {
        if self.killed.load(Ordering::SeqCst) || self.broken.load(Ordering::SeqCst) {
            return false;
        }
        *self.last_beat.lock() = Instant::now();
        true
    }

    async fn update_locations(&self, locations: Arc<ActorLocations>) -> NodeResult<()> {
        if self.killed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut c = self.client.clone();
        let generation = self.link.generation.load(Ordering::SeqCst);
        self.while_alive(
            "update locations",
            c.update_locations(locations_to_pb(&locations, generation)),
        )
        .await
        .map(|_| ())
    }

    async fn build_actors(&self, descs: Vec<ActorDesc>) -> NodeResult<()> {
        if self.killed.load(Ordering::SeqCst) {
            return Err(NodeError::Down(self.id));
        }
        let mut actors = Vec::with_capacity(descs.len());
        for d in &descs {
            let json = serde_json::to_vec(d).map_err(|e| NodeError::Encode(e.to_string()))?;
            actors.push(bytes::Bytes::from(json));
        }
        let mut c = self.client.clone();
        self.while_alive(
            "build actors",
            c.build_actors(pb::BuildActorsRequest { actors }),
        )
        .await?;
        self.actors.lock().extend(descs.iter().map(|d| d.actor_id));
        Ok(())
    }

    fn local_sender(&self, actor: ActorId) -> Option<ebbflow_stream::channel::Sender> {
        if self.killed.load(Ordering::SeqCst) {
            return None;
        }
        let mut senders = self.senders.lock();
        if let Some(tx) = senders.get(&actor).filter(|tx| !tx.is_closed()) {
            return Some(tx.clone());
        }
        let broken = self.broken.clone();
        let tx = self.link.exchange.sender(
            &self.address,
            INJECT,
            actor,
            Some(Arc::new(move || broken.store(true, Ordering::SeqCst))),
        );
        senders.insert(actor, tx.clone());
        Some(tx)
    }

    fn forget_actors(&self, ids: &[ActorId]) {
        {
            let mut actors = self.actors.lock();
            let mut senders = self.senders.lock();
            for id in ids {
                actors.remove(id);
                senders.remove(id);
            }
        }
        let mut c = self.client.clone();
        let req = pb::DropActorsRequest {
            actor_ids: ids.to_vec(),
        };
        tokio::spawn(async move {
            let _ = c.drop_actors(req).await;
        });
    }

    fn abort_all(&self) {
        self.actors.lock().clear();
        self.senders.lock().clear();
    }

    async fn reset(&self, generation: u64) -> NodeResult<()> {
        self.senders.lock().clear();
        self.actors.lock().clear();
        self.link.exchange.reset(generation);
        if self.killed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let version = self.link.versions.borrow().clone();
        let mut c = self.client.clone();
        self.while_alive(
            "reset",
            c.reset(pb::ResetRequest {
                generation,
                version: Some(version_to_pb(&version)),
            }),
        )
        .await
        .map(|_| ())
    }

    async fn sync(&self, epoch: u64) -> Option<StorageResult<Vec<SstInfo>>> {
        if self.killed.load(Ordering::SeqCst) {
            // Down with actors: their writes are lost, so the epoch must
            // not commit (the recovery rewinds it). After the recovery's
            // reset it has none and no part in epochs.
            return Some(if self.actors.lock().is_empty() {
                Ok(Vec::new())
            } else {
                Err(StorageError::Io(format!(
                    "compute node {} is down",
                    self.id
                )))
            });
        }
        let mut c = self.client.clone();
        let r = self
            .while_alive("sync", c.sync(pb::SyncRequest { epoch }))
            .await
            .map(|r| r.into_inner().files.into_iter().map(sst_from_pb).collect())
            .map_err(|e| StorageError::Io(e.to_string()));
        Some(r)
    }

    fn actor_count(&self) -> usize {
        self.actors.lock().len()
    }
}

/// Forwards the process's events of the current generation to meta; a
/// broken stream marks the process broken.
async fn follow_events(id: WorkerId, mut client: Client, link: MetaLink, broken: Arc<AtomicBool>) {
    let mut stream = match client.events(pb::EventsRequest {}).await {
        Ok(s) => s.into_inner(),
        Err(s) => {
            tracing::warn!(worker = id, error = %s.message(), "cannot follow the events of a compute node");
            broken.store(true, Ordering::SeqCst);
            return;
        }
    };
    loop {
        match stream.message().await {
            Ok(Some(e)) => {
                if e.generation != link.generation.load(Ordering::SeqCst) {
                    continue;
                }
                if let Some(ev) = event_from_pb(e) {
                    let _ = link.events.send(ev);
                }
            }
            Ok(None) | Err(_) => {
                tracing::warn!(worker = id, "lost the event stream of a compute node");
                broken.store(true, Ordering::SeqCst);
                return;
            }
        }
    }
}

/// Pushes every newly committed version (the newest when several came
/// while one was in flight).
async fn push_versions(
    mut client: Client,
    mut versions: watch::Receiver<Arc<Version>>,
    acked: Arc<Mutex<Option<Arc<Version>>>>,
) {
    loop {
        let v = versions.borrow_and_update().clone();
        if client.install_version(version_to_pb(&v)).await.is_ok() {
            *acked.lock() = Some(v);
        }
        if versions.changed().await.is_err() {
            return;
        }
    }
}
