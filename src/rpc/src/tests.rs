//! The generated service over real loopback gRPC, with the secret check.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Server};
use tonic::{Code, Request, Response, Status};

use super::pb::meta_client::MetaClient;
use super::pb::meta_server::{Meta, MetaServer};
use super::pb::{HeartbeatRequest, HeartbeatResponse, RegisterRequest, RegisterResponse};
use super::ClusterSecret;

/// Hands out worker ids; knows the ids it handed out.
#[derive(Default)]
struct Registry {
    next: AtomicU32,
}

#[tonic::async_trait]
impl Meta for Arc<Registry> {
    async fn register(
        &self,
        request: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        let r = request.into_inner();
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Response::new(RegisterResponse {
            worker_id: id,
            parallel_unit_ids: (0..r.parallel_units).map(|u| id * 100 + u).collect(),
            heartbeat_interval_ms: 100,
            generation: 1,
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let id = request.into_inner().worker_id;
        Ok(Response::new(HeartbeatResponse {
            known: id >= 1 && id <= self.next.load(Ordering::SeqCst),
            removed: false,
        }))
    }
}

async fn serve(secret: ClusterSecret) -> std::net::SocketAddr {
    let incoming = TcpIncoming::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let addr = incoming.local_addr().expect("addr");
    let service =
        MetaServer::with_interceptor(Arc::new(Registry::default()), move |r| secret.check(r));
    tokio::spawn(
        Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    addr
}

type Attach = Box<dyn FnMut(Request<()>) -> Result<Request<()>, Status> + Send>;
type Client = MetaClient<tonic::service::interceptor::InterceptedService<Channel, Attach>>;

async fn client(addr: std::net::SocketAddr, secret: Option<ClusterSecret>) -> Client {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    let attach: Attach = match secret {
        Some(s) => Box::new(move |r| s.attach(r)),
        None => Box::new(Ok),
    };
    MetaClient::with_interceptor(channel, attach)
}

fn register() -> RegisterRequest {
    RegisterRequest {
        address: "127.0.0.1:1".into(),
        parallel_units: 2,
        previous_worker_id: None,
    }
}

#[tokio::test]
async fn calls_with_the_secret_pass_and_others_are_refused() {
    let secret = ClusterSecret::new("correct-horse-battery-staple").expect("secret");
    let addr = serve(secret.clone()).await;

    let mut good = client(addr, Some(secret)).await;
    let joined = good
        .register(register())
        .await
        .expect("register")
        .into_inner();
    assert_eq!(joined.worker_id, 1);
    assert_eq!(joined.parallel_unit_ids, vec![100, 101]);
    let beat = good
        .heartbeat(HeartbeatRequest { worker_id: 1 })
        .await
        .expect("heartbeat");
    assert!(beat.into_inner().known);

    let wrong = ClusterSecret::new("another-cluster-secret").expect("secret");
    for mut bad in [client(addr, Some(wrong)).await, client(addr, None).await] {
        let err = bad.register(register()).await.expect_err("refused");
        assert_eq!(err.code(), Code::Unauthenticated);
        assert!(
            err.message().contains("cluster secret"),
            "{}",
            err.message()
        );
    }
    // The refusals changed nothing.
    let again = good.register(register()).await.expect("register");
    assert_eq!(again.into_inner().worker_id, 2);
}

#[test]
fn weak_or_unreadable_secrets_are_refused() {
    assert!(ClusterSecret::new("short").is_err());
    assert!(ClusterSecret::new("has a space inside it").is_err());
    assert!(ClusterSecret::new("  sixteen-chars-ok\n").is_ok());
    let err = ClusterSecret::from_file(std::path::Path::new("/nonexistent/secret"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/nonexistent/secret"), "{err}");
}
