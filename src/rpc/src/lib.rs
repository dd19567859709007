//! gRPC between the processes of a cluster: the generated code of
//! `proto/ebbflow/cluster.proto` (tonic + prost, compiled by `protox` in
//! `build.rs`, so no `protoc` is needed) and the cluster secret every call
//! carries; [`compute`] is the compute process, [`remote`] meta's client of
//! it, [`meta_service`] where compute processes register, [`exchange`] the
//! remote exchange between processes, [`convert`] between the contract's
//! messages and ebbflow's types.
//!
//! The secret is a shared token: each call sends it in the
//! [`SECRET_HEADER`] metadata entry and a server refuses any call without
//! the right one. Over plain TCP it keeps out processes that were not given
//! the secret (a wrongly configured node, another cluster on the same
//! machine), not someone who can read the traffic; that needs TLS.
//!
//! It carries the calls meta and compute nodes already make in process
//! (`ComputeClient`, the exchange) between processes; it must not know SQL,
//! the planner, sessions or the wire protocol (`ci/layers`).

use std::path::Path;

use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

/// The generated messages, clients and servers.
pub mod pb {
    tonic::include_proto!("ebbflow.cluster");
}

pub mod compute;
pub mod convert;
pub mod exchange;
pub mod meta_service;
pub mod remote;

/// The metadata entry that carries the cluster secret.
pub const SECRET_HEADER: &str = "x-ebbflow-secret";

/// Shortest secret accepted: a short one is easy to guess.
pub const MIN_SECRET_LEN: usize = 16;

/// Errors of the cluster's RPC layer.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// A cluster secret that is too weak or not printable.
    #[error("{0}")]
    BadSecret(String),
    /// The secret file could not be read.
    #[error("cannot read the cluster secret file {path}: {source}")]
    SecretFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A process address that is not `host:port`.
    #[error("bad address {address}: {message}")]
    BadAddress { address: String, message: String },
}

pub type RpcResult<T> = Result<T, RpcError>;

/// The cluster secret: every process of a cluster has the same one.
#[derive(Clone)]
pub struct ClusterSecret(MetadataValue<tonic::metadata::Ascii>);

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterSecret(..)")
    }
}

impl ClusterSecret {
    /// A secret from its text: printable ASCII without spaces, at least
    /// [`MIN_SECRET_LEN`] characters.
    pub fn new(text: &str) -> RpcResult<ClusterSecret> {
        let text = text.trim();
        if text.len() < MIN_SECRET_LEN {
            return Err(RpcError::BadSecret(format!(
                "the cluster secret must be at least {MIN_SECRET_LEN} characters"
            )));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(RpcError::BadSecret(
                "the cluster secret must be printable ASCII without spaces".into(),
            ));
        }
        MetadataValue::try_from(text)
            .map(ClusterSecret)
            .map_err(|e| RpcError::BadSecret(format!("bad cluster secret: {e}")))
    }

    /// Reads the secret from a file (surrounding whitespace ignored).
    pub fn from_file(path: &Path) -> RpcResult<ClusterSecret> {
        let text = std::fs::read_to_string(path).map_err(|source| RpcError::SecretFile {
            path: path.display().to_string(),
            source,
        })?;
        ClusterSecret::new(&text)
            .map_err(|e| RpcError::BadSecret(format!("{e} ({})", path.display())))
    }

    /// Adds the secret to an outgoing request (a client interceptor).
    pub fn attach<T>(&self, mut request: Request<T>) -> Result<Request<T>, Status> {
        request.metadata_mut().insert(SECRET_HEADER, self.0.clone());
        Ok(request)
    }

    /// Lets a request through only with the right secret (a server
    /// interceptor). A refusal is logged once per call, with the peer.
    pub fn check<T>(&self, request: Request<T>) -> Result<Request<T>, Status> {
        let given = request.metadata().get(SECRET_HEADER);
        let ok = given.is_some_and(|g| constant_time_eq(g.as_bytes(), self.0.as_bytes()));
        if ok {
            return Ok(request);
        }
        let peer = request
            .remote_addr()
            .map_or_else(|| "unknown peer".to_owned(), |a| a.to_string());
        let why = if given.is_some() {
            "a wrong cluster secret"
        } else {
            "no cluster secret"
        };
        if should_log_refusal(request.remote_addr().map(|a| a.ip())) {
            tracing::warn!(%peer, "refused an internal call with {why}");
        }
        Err(Status::unauthenticated(format!(
            "refused: {why} (every process of a cluster needs the same --cluster-secret-file)"
        )))
    }
}

impl tonic::service::Interceptor for ClusterSecret {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        self.attach(request)
    }
}

/// HTTP/2 windows of every connection. What waits for an actor is bounded
/// by the exchange's credits, and a receiver always reads its streams, so
/// HTTP/2 flow control only has to keep out of the way: its default 64 KiB
/// window would stall a busy exchange stream every few chunks.
pub const STREAM_WINDOW: u32 = 8 << 20;
pub const CONNECTION_WINDOW: u32 = 32 << 20;

/// A server with the cluster's connection settings.
pub fn server() -> tonic::transport::Server {
    tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
}

/// Opens a channel to another process of the cluster (`host:port`); the
/// connection is made at the first call.
pub fn channel(address: &str) -> RpcResult<tonic::transport::Channel> {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .map_err(|e| RpcError::BadAddress {
            address: address.to_string(),
            message: e.to_string(),
        })?
        .connect_timeout(std::time::Duration::from_secs(2))
        .tcp_nodelay(true)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .http2_keep_alive_interval(std::time::Duration::from_secs(1))
        .keep_alive_timeout(std::time::Duration::from_secs(3));
    Ok(endpoint.connect_lazy())
}

/// A process with a wrong secret retries: its refusals are logged once a
/// minute per peer address.
fn should_log_refusal(ip: Option<std::net::IpAddr>) -> bool {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    use std::time::{Duration, Instant};
    static LAST: OnceLock<Mutex<HashMap<Option<std::net::IpAddr>, Instant>>> = OnceLock::new();
    let mut last = LAST
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let now = Instant::now();
    match last.get(&ip) {
        Some(t) if now.duration_since(*t) < Duration::from_secs(60) => false,
        _ => {
            last.insert(ip, now);
            true
        }
    }
}

/// Compares without an early exit, so the time taken does not tell how
/// much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests;
