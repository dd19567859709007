//! Meta's `Meta` service: compute processes register and beat here.

use std::net::SocketAddr;
use std::sync::Arc;

use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use super::exchange::ExchangeSender;
use super::pb::meta_server::{Meta as MetaRpc, MetaServer};
use super::pb::{HeartbeatRequest, HeartbeatResponse, RegisterRequest, RegisterResponse};
use super::remote::{MetaLink, RemoteCompute};
use super::ClusterSecret;
use ebbflow_meta::Meta;
use ebbflow_storage::lsm::Version;
use ebbflow_stream::compute_node::{ComputeClient, HEARTBEAT_INTERVAL};

struct MetaService {
    meta: Arc<Meta>,
    link: MetaLink,
}

#[tonic::async_trait]
impl MetaRpc for MetaService {
    async fn register(
        &self,
        request: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        let r = request.into_inner();
        if r.address.parse::<SocketAddr>().is_err() && !r.address.contains(':') {
            return Err(Status::invalid_argument(format!(
                "bad compute address {:?}: expected host:port",
                r.address
            )));
        }
        let link = self.link.clone();
        let address = r.address.clone();
        let (worker_id, units) = self
            .meta
            .join_remote(&r.address, r.parallel_units, move |id| {
                RemoteCompute::connect(id, &address, link).map(|c| c as Arc<dyn ComputeClient>)
            })
            .await
            .map_err(|e| Status::failed_precondition(e.to_string()))?;
        Ok(Response::new(RegisterResponse {
            worker_id,
            parallel_unit_ids: units,
            heartbeat_interval_ms: HEARTBEAT_INTERVAL.as_millis() as u32,
            generation: self
                .meta
                .generation
                .load(std::sync::atomic::Ordering::SeqCst),
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let id = request.into_inner().worker_id;
        let known = self.meta.worker_heartbeat(id);
        let removed = !known && self.meta.worker_removed(id);
        Ok(Response::new(HeartbeatResponse { known, removed }))
    }
}

/// Listen on `listen` for compute processes and serve meta's RPC there:
/// returns the address bound (the port chosen, for port 0) and the server
/// task. `versions` follows the store's committed versions, sent on to
/// every compute process.
pub fn listen_meta(
    meta: Arc<Meta>,
    secret: ClusterSecret,
    listen: SocketAddr,
    versions: tokio::sync::watch::Receiver<Arc<Version>>,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let incoming = tonic::transport::server::TcpIncoming::bind(listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let addr = incoming
        .local_addr()
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let exchange = ExchangeSender::new(secret.clone());
    exchange.reset(meta.generation.load(std::sync::atomic::Ordering::SeqCst));
    let link = MetaLink {
        secret,
        exchange,
        events: meta.events_sender(),
        versions,
        generation: meta.generation.clone(),
    };
    Ok((addr, serve_meta(meta, link, incoming)))
}

/// Serve meta's RPC on `incoming`; returns the server task.
pub fn serve_meta(
    meta: Arc<Meta>,
    link: MetaLink,
    incoming: tonic::transport::server::TcpIncoming,
) -> tokio::task::JoinHandle<()> {
    let secret = link.secret.clone();
    let service = InterceptedService::new(MetaServer::new(MetaService { meta, link }), move |r| {
        secret.check(r)
    });
    tokio::spawn(async move {
        let served = super::server()
            .add_service(service)
            .serve_with_incoming(incoming)
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "meta's RPC server stopped");
        }
    })
}
