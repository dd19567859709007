//! Prometheus metrics, served as text on `GET /metrics` of the
//! `--metrics-listen` address (default `127.0.0.1:1250`, RisingWave's
//! port).
//!
//! Two kinds of metric are served:
//! - recorded as things happen, by every layer, through the
//!   `ebbflow-metrics` crate (re-exported here);
//! - read from meta's catalog at each scrape: actors per compute node,
//!   scale operations and their pause (from `rw_scale_history`), and the
//!   allocator's own counts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::meta::Meta;
pub use ebbflow_metrics::*;

/// The default of `--metrics-listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:1250";

/// The metrics read from meta at scrape time, in the text format.
fn catalog_metrics(meta: &Meta) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let actors = meta.actors_per_worker();
    let (scales, pause_ms) = meta.scale_totals();
    let _ = writeln!(out, "# HELP ebbflow_actors Actors placed on a compute node");
    let _ = writeln!(out, "# TYPE ebbflow_actors gauge");
    for (w, n) in actors {
        let _ = writeln!(out, "ebbflow_actors{{worker=\"{w}\"}} {n}");
    }
    let _ = writeln!(
        out,
        "# HELP ebbflow_scale_operations_total Scale and reschedule operations, by outcome"
    );
    let _ = writeln!(out, "# TYPE ebbflow_scale_operations_total counter");
    for (status, n) in scales {
        let status = status.replace(['\\', '"', '\n'], "_");
        let _ = writeln!(
            out,
            "ebbflow_scale_operations_total{{status=\"{status}\"}} {n}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP ebbflow_scale_pause_seconds_total Time streaming was paused by scale operations"
    );
    let _ = writeln!(out, "# TYPE ebbflow_scale_pause_seconds_total counter");
    let _ = writeln!(
        out,
        "ebbflow_scale_pause_seconds_total {}",
        pause_ms / 1000.0
    );
    out
}

/// The whole `/metrics` body.
pub fn render(meta: &Meta) -> String {
    let mut text = ebbflow_metrics::recorded_text();
    text.push_str(&catalog_metrics(meta));
    text.push_str(&allocator_metrics());
    text
}

/// jemalloc's own counts at scrape time: bytes the process has allocated,
/// and bytes of pages jemalloc holds resident (allocated, free but not yet
/// returned, and its metadata). Empty when they cannot be read.
fn allocator_metrics() -> String {
    use std::fmt::Write;
    use tikv_jemalloc_ctl::{epoch, stats};
    let read = || -> tikv_jemalloc_ctl::Result<(usize, usize)> {
        epoch::advance()?;
        Ok((stats::allocated::read()?, stats::resident::read()?))
    };
    let Ok((allocated, resident)) = read() else {
        return String::new();
    };
    let mut out = String::new();
    for (name, help, v) in [
        (
            "ebbflow_memory_allocated_bytes",
            "Bytes the process has allocated through jemalloc",
            allocated,
        ),
        (
            "ebbflow_memory_resident_bytes",
            "Bytes of pages jemalloc holds resident: allocations, freed pages not returned yet, metadata",
            resident,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        let _ = writeln!(out, "{name} {v}");
    }
    out
}

/// Serve `/metrics` on `addr`, or on [`DEFAULT_LISTEN`] when `None`
/// (skipped with a warning if that port is taken, as when several servers
/// run on one machine). Returns the bound address, if any.
pub async fn start(
    addr: Option<SocketAddr>,
    meta: Arc<Meta>,
) -> anyhow::Result<Option<SocketAddr>> {
    match addr {
        Some(a) => {
            let local = spawn(a, meta).await?;
            tracing::info!(%local, "metrics at http://{local}/metrics");
            Ok(Some(local))
        }
        None => {
            let default: SocketAddr = DEFAULT_LISTEN
                .parse()
                .map_err(|e| anyhow::anyhow!("bad default metrics address: {e}"))?;
            match spawn(default, meta).await {
                Ok(local) => {
                    tracing::info!(%local, "metrics at http://{local}/metrics");
                    Ok(Some(local))
                }
                Err(e) => {
                    tracing::warn!(error = %e, "no metrics endpoint (pass --metrics-listen)");
                    Ok(None)
                }
            }
        }
    }
}

/// Bind `addr` and serve `/metrics` until the process ends.
pub async fn spawn(addr: SocketAddr, meta: Arc<Meta>) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen for metrics on {addr}: {e}"))?;
    let local = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((socket, _)) => {
                    let meta = meta.clone();
                    tokio::spawn(async move {
                        if let Err(e) = answer(socket, &meta).await {
                            tracing::debug!(error = %e, "metrics request failed");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a metrics connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    Ok(local)
}

/// One HTTP/1.x request: `GET /metrics` gets the text format, anything
/// else 404; the connection closes after the answer.
async fn answer(mut socket: TcpStream, meta: &Meta) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            let n = socket.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "slow request"))??;
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, ctype, body) =
        if method == "GET" && (path == "/metrics" || path.starts_with("/metrics?")) {
            (
                "200 OK",
                "text/plain; version=0.0.4; charset=utf-8",
                render(meta),
            )
        } else {
            (
                "404 Not Found",
                "text/plain",
                "try GET /metrics\n".to_owned(),
            )
        };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await
}
