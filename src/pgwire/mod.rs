//! (stub until the pgwire layer lands)
use std::sync::Arc;

pub async fn serve(
    _listener: tokio::net::TcpListener,
    _factory: Arc<dyn crate::frontend::SessionFactory>,
    _shutdown: tokio::sync::watch::Receiver<bool>,
) {
}
